//! The OpenTSDB 2.4 query model: what `/api/query` (GET `m=`/`tsuid=` or POST JSON) asks for.

use super::aggregate::Aggregator;
use super::filter::TagFilter;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FillPolicy {
    /// Skip empty buckets (interpolate at aggregation time).
    None,
    Nan,
    Null,
    Zero,
}

impl FillPolicy {
    pub fn parse(s: &str) -> Option<FillPolicy> {
        Some(match s.to_ascii_lowercase().as_str() {
            "none" => FillPolicy::None,
            "nan" => FillPolicy::Nan,
            "null" => FillPolicy::Null,
            "zero" => FillPolicy::Zero,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            FillPolicy::None => "none",
            FillPolicy::Nan => "nan",
            FillPolicy::Null => "null",
            FillPolicy::Zero => "zero",
        }
    }
}

/// A calendar unit for `c` (calendar) downsampling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CalUnit {
    Ms,
    Sec,
    Min,
    Hour,
    Day,
    Week,
    Month,
    Year,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Downsample {
    pub spec: String,
    /// Bucket width; 0 with `all`.
    pub interval_ms: u64,
    /// `0all-…`: one bucket for the whole query range.
    pub all: bool,
    /// Calendar boundaries: (count, unit) and the zone.
    pub calendar: Option<(u64, CalUnit)>,
    /// The interval as (count, unit), for `useCalendar` to switch to calendar boundaries.
    pub step: (u64, CalUnit),
    pub aggregator: Aggregator,
    pub fill: FillPolicy,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RateOptions {
    pub counter: bool,
    pub counter_max: i64,
    pub reset_value: i64,
    pub drop_resets: bool,
}

impl Default for RateOptions {
    fn default() -> Self {
        RateOptions {
            counter: false,
            counter_max: i64::MAX,
            reset_value: 0,
            drop_resets: false,
        }
    }
}

/// How a sub-query may read rollup tables (`rollupUsage`, OpenTSDB 2.4's `ROLLUP_USAGE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RollupUsage {
    /// Raw data only.
    Raw,
    /// The best rollup; an empty answer stays empty (the default).
    #[default]
    NoFallback,
    /// The best rollup; on an empty answer the next best, down to raw.
    Fallback,
    /// The best rollup; on an empty answer raw data.
    FallbackRaw,
}

impl RollupUsage {
    /// `ROLLUP_USAGE.parse`: case-insensitive enum name; anything else is the default.
    pub fn parse(s: &str) -> RollupUsage {
        match s.to_ascii_uppercase().as_str() {
            "ROLLUP_RAW" => RollupUsage::Raw,
            "ROLLUP_FALLBACK" => RollupUsage::Fallback,
            "ROLLUP_FALLBACK_RAW" => RollupUsage::FallbackRaw,
            _ => RollupUsage::NoFallback,
        }
    }
}

#[derive(Debug, Clone)]
pub struct SubQuery {
    pub index: usize,
    pub aggregator: Aggregator,
    pub metric: String,
    /// When set, exactly these series (hex TSUIDs), instead of metric + filters.
    pub tsuids: Vec<String>,
    pub filters: Vec<TagFilter>,
    pub downsample: Option<Downsample>,
    pub rate: bool,
    pub rate_options: Option<RateOptions>,
    /// Only series whose tag keys are exactly the filtered keys.
    pub explicit_tags: bool,
    /// Whether a downsample may read a rollup table (`[rollups]`).
    pub rollup_usage: RollupUsage,
    /// Read the pre-aggregate tables (`preAggregate` / `pre-agg`; see
    /// `reads_pre_aggregates` in the rollup read).
    pub pre_aggregate: bool,
}

#[derive(Debug, Clone, Default)]
pub struct Flags {
    pub ms_resolution: bool,
    pub show_tsuids: bool,
    pub show_query: bool,
    pub show_summary: bool,
    pub show_stats: bool,
    pub no_annotations: bool,
    pub global_annotations: bool,
    pub delete: bool,
    pub arrays: bool,
}

#[derive(Debug, Clone)]
pub struct Query {
    pub start_ms: u64,
    pub end_ms: u64,
    pub queries: Vec<SubQuery>,
    pub flags: Flags,
    /// IANA zone for calendar downsampling (JSON `timezone`); UTC when absent.
    pub timezone: Option<String>,
    pub use_calendar: bool,
}
