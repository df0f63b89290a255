//! OpenTSDB 2.4's rollup and pre-aggregate tables: row keys whose base time is aligned to the
//! interval's row span, and 3-byte qualifiers `[aggregator id][(interval index << 4) | flags]`.
//! Readers also accept the legacy textual form `<agg>:` followed by the 2-byte offset. Pure
//! functions; the messages of the errors are OpenTSDB's own.

use super::column::{decode_value, FLAGS_MASK};
use super::rowkey::{is_ms, seconds};
use super::DataValue;

/// Bits of a rollup qualifier's first byte that hold the aggregator id (bit 7 is reserved).
pub const AGGREGATOR_MASK: u8 = 0x7F;
/// Most intervals one row may hold: 12 bits of index (OpenTSDB's `MAX_INTERVALS`).
pub const MAX_INTERVALS: u32 = 7774;
/// Fewest intervals in a row (`MIN_INTERVALS`).
pub const MIN_INTERVALS: u32 = 12;
/// The tag OpenTSDB puts on pre-aggregated series (`tsd.rollups.agg_tag_key`).
pub const AGG_TAG_KEY: &str = "_aggregate";

/// Aggregators OpenTSDB 2.4 knows (`Aggregators.get`): an `aggregationIds` name must be one.
pub const KNOWN_AGGREGATORS: &[&str] = &[
    "sum",
    "count",
    "min",
    "max",
    "avg",
    "dev",
    "zimsum",
    "mimmin",
    "mimmax",
    "first",
    "last",
    "none",
    "median",
    "squaresum",
    "diff",
    "multiply",
    "p50",
    "p75",
    "p90",
    "p95",
    "p99",
    "p999",
    "ep50r3",
    "ep50r7",
    "ep75r3",
    "ep75r7",
    "ep90r3",
    "ep90r7",
    "ep95r3",
    "ep95r7",
    "ep99r3",
    "ep99r7",
    "ep999r3",
    "ep999r7",
];

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RollupError {
    #[error("{0}")]
    Invalid(String),
    /// `NoSuchRollupForIntervalException`.
    #[error("No rollups configured for the interval: {0}")]
    NoSuchInterval(String),
}

fn invalid(s: impl Into<String>) -> RollupError {
    RollupError::Invalid(s.into())
}

/// How wide a row of an interval is: N hours (N = 1 or even), or a UTC calendar day, month or
/// year.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    Hours(u32),
    Day,
    Month,
    Year,
}

/// A duration in OpenTSDB's grammar (`DateTime.parseDuration`), in seconds; milliseconds are
/// refused (rollups count whole seconds).
pub fn parse_duration_s(text: &str) -> Result<u64, RollupError> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if text.is_empty() {
        return Err(invalid("Cannot parse null or empty duration"));
    }
    if digits >= text.len() {
        return Err(invalid(format!(
            "Invalid duration, must have an integer and unit: {text}"
        )));
    }
    let n: u64 = text[..digits]
        .parse()
        .map_err(|_| invalid(format!("Invalid duration (number): {text}")))?;
    if n == 0 {
        return Err(invalid(format!("Zero or negative duration: {text}")));
    }
    let unit = match text[digits..].to_ascii_lowercase().as_str() {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        "n" => 30 * 86_400,
        "y" => 365 * 86_400,
        "ms" => return Err(invalid("Milliseconds are not supported")),
        _ => return Err(invalid(format!("Invalid duration (suffix): {text}"))),
    };
    n.checked_mul(unit)
        .filter(|&s| s < i32::MAX as u64)
        .ok_or_else(|| invalid(format!("Interval is too big: {text}")))
}

/// One configured interval (`RollupInterval`), validated as OpenTSDB validates it.
#[derive(Debug, Clone, PartialEq)]
pub struct RollupInterval {
    /// The temporal rollup table (`table`).
    pub table: String,
    /// The pre-aggregated table (`preAggregationTable`).
    pub preagg_table: String,
    /// As configured, e.g. `1h`; queries and `POST /api/rollup` name it so.
    pub interval: String,
    pub row_span: String,
    /// The raw resolution, stored in the data table (OpenTSDB's `defaultInterval`).
    pub default: bool,
    pub interval_s: u32,
    pub span: Span,
    /// Intervals in the longest row of the span (`getIntervals`).
    pub intervals: u32,
}

impl RollupInterval {
    pub fn new(
        table: &str,
        preagg_table: &str,
        interval: &str,
        row_span: &str,
        default: bool,
    ) -> Result<RollupInterval, RollupError> {
        let digits = row_span.bytes().take_while(u8::is_ascii_digit).count();
        let units = row_span[digits..].to_ascii_lowercase();
        if units == "ms" {
            return Err(invalid("Milliseconds are not supported"));
        }
        if !["s", "m", "h", "d", "w", "n", "y"].contains(&units.as_str()) {
            return Err(invalid(format!("Invalid units in the duration: {units}")));
        }
        let mult: u32 = row_span[..digits]
            .parse()
            .map_err(|_| invalid(format!("Invalid duration (number): {row_span}")))?;
        if mult == 0 {
            return Err(invalid(format!("Zero or negative duration: {row_span}")));
        }
        if table.is_empty() {
            return Err(invalid("The rollup table cannot be null or empty"));
        }
        if preagg_table.is_empty() {
            return Err(invalid(
                "The pre-aggregate rollup table cannot be null or empty",
            ));
        }
        if units != "h" && mult > 1 {
            return Err(invalid("Multipliers are only usable with the 'h' unit"));
        }
        if units == "h" && mult > 1 && !mult.is_multiple_of(2) {
            return Err(invalid("The multiplier must be 1 or an even value"));
        }
        let interval_s = parse_duration_s(interval)? as u32;
        let (span, max) = match units.as_str() {
            "h" => (Span::Hours(mult), 3600 * mult),
            "d" => (Span::Day, 86_400),
            "n" => (Span::Month, 86_400 * 32),
            "y" => (Span::Year, 86_400 * 366),
            u => return Err(invalid(format!("Unrecogznied span '{u}'"))),
        };
        if interval_s >= max {
            return Err(invalid(format!(
                "Interval [{interval_s}] is too large for the span [{units}]"
            )));
        }
        let intervals = max / interval_s;
        if intervals > MAX_INTERVALS {
            return Err(invalid(format!(
                "Too many intervals [{intervals}] in the span. Must be smaller than [{MAX_INTERVALS}] to fit in 14 bits"
            )));
        }
        if intervals < MIN_INTERVALS {
            return Err(invalid(format!(
                "Not enough intervals [{intervals}] for the span. Must be at least [{MIN_INTERVALS}]"
            )));
        }
        Ok(RollupInterval {
            table: table.into(),
            preagg_table: preagg_table.into(),
            interval: interval.into(),
            row_span: row_span.into(),
            default,
            interval_s,
            span,
            intervals,
        })
    }

    /// The row's base time for a timestamp (seconds, or ms when the upper bits are set)
    /// (`RollupUtils.getRollupBasetime`).
    pub fn base_time(&self, ts: u64) -> u32 {
        let s = seconds(ts);
        match self.span {
            Span::Hours(n) => {
                let m = 3600 * n as u64;
                (s - s % m) as u32
            }
            Span::Day => (s - s % 86_400) as u32,
            Span::Month | Span::Year => {
                let (y, m, _) = civil_from_days((s / 86_400) as i64);
                let m = if self.span == Span::Year { 1 } else { m };
                (days_from_civil(y, m, 1) * 86_400) as u32
            }
        }
    }

    /// The base time of the row after the one starting at `base`.
    pub fn next_base(&self, base: u32) -> u64 {
        match self.span {
            Span::Hours(n) => base as u64 + 3600 * n as u64,
            Span::Day => base as u64 + 86_400,
            Span::Month | Span::Year => {
                let (y, m, _) = civil_from_days(base as i64 / 86_400);
                let (y, m) = match (self.span, m) {
                    (Span::Year, _) => (y + 1, 1),
                    (_, 12) => (y + 1, 1),
                    (_, m) => (y, m + 1),
                };
                (days_from_civil(y, m, 1) * 86_400) as u64
            }
        }
    }

    /// The 3-byte qualifier of a value at `ts` in the row of `base`
    /// (`RollupUtils.buildRollupQualifier`).
    pub fn qualifier(
        &self,
        agg_id: u8,
        ts: u64,
        base: u32,
        flags: u8,
    ) -> Result<[u8; 3], RollupError> {
        let s = if is_ms(ts) { ts / 1000 } else { ts };
        let index = s.checked_sub(base as u64).unwrap_or(u64::MAX) / self.interval_s as u64;
        if index >= self.intervals as u64 {
            return Err(invalid(format!(
                "Offset of {index} was greater than the configured intervals {}",
                self.intervals
            )));
        }
        let off = ((index as u16) << 4) | (flags & FLAGS_MASK) as u16;
        let [a, b] = off.to_be_bytes();
        Ok([agg_id, a, b])
    }

    /// The timestamp (seconds) of interval `index` in the row of `base`.
    pub fn timestamp_s(&self, base: u32, index: u32) -> u64 {
        base as u64 + index as u64 * self.interval_s as u64
    }
}

/// A rollup cell: which aggregator, which interval of the row, the value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RollupCell {
    pub agg_id: Option<u8>,
    pub index: u32,
    pub value: DataValue,
}

/// Decodes one rollup cell: the 3-byte form, or the legacy `<agg>:<2 bytes>` one whose prefix
/// is looked up with `id_of` (None: an aggregator this reader does not map).
pub fn decode_cell(q: &[u8], v: &[u8], id_of: impl Fn(&str) -> Option<u8>) -> Option<RollupCell> {
    let (agg_id, off) = if q.len() == 3 && q[0] & !AGGREGATOR_MASK == 0 {
        (Some(q[0]), &q[1..])
    } else {
        let colon = q.iter().position(|&b| b == b':')?;
        if q.len() != colon + 3 {
            return None;
        }
        let name = std::str::from_utf8(&q[..colon]).ok()?;
        (id_of(&name.to_ascii_lowercase()), &q[colon + 1..])
    };
    let off = u16::from_be_bytes([off[0], off[1]]);
    let value = decode_value(off as u8 & FLAGS_MASK, v, 0).ok()?;
    Some(RollupCell {
        agg_id,
        index: (off >> 4) as u32,
        value,
    })
}

/// The legacy qualifier prefix of an aggregator (`getRollupQualifierPrefix`).
pub fn legacy_prefix(agg: &str) -> Vec<u8> {
    format!("{}:", agg.to_ascii_lowercase()).into_bytes()
}

/// Every interval and the aggregator ids (`RollupConfig`), validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Rollups {
    pub intervals: Vec<RollupInterval>,
    /// Lower-case aggregator name → id (0..=127).
    pub agg_ids: Vec<(String, u8)>,
    /// `tsd.rollups.agg_tag_key`: the tag a pre-aggregated series carries (`_aggregate`).
    pub agg_tag_key: String,
    /// `tsd.rollups.raw_agg_tag_value`: that tag's value on raw data (`RAW`).
    pub raw_agg_tag_value: String,
}

impl Rollups {
    pub fn new(
        intervals: Vec<RollupInterval>,
        agg_ids: Vec<(String, i64)>,
    ) -> Result<Rollups, RollupError> {
        if intervals.is_empty() {
            return Err(invalid("Rollup config given but no intervals were found."));
        }
        if agg_ids.is_empty() {
            return Err(invalid(
                "Rollup config given but no aggegation ID mappings found.",
            ));
        }
        let mut defaults = 0;
        for (i, iv) in intervals.iter().enumerate() {
            if intervals[..i].iter().any(|o| o.interval == iv.interval) {
                return Err(invalid(format!(
                    "Only one interval of each type can be configured: {}",
                    iv.interval
                )));
            }
            if iv.default {
                defaults += 1;
                if defaults > 1 {
                    return Err(invalid(format!(
                        "Multiple default intervals configured. Only one is allowed: {}",
                        iv.interval
                    )));
                }
            }
        }
        let mut ids: Vec<(String, u8)> = Vec::new();
        for (name, id) in agg_ids {
            if !(0..=127).contains(&id) {
                return Err(invalid(format!(
                    "ID for aggregator must be between 0 and 127: {name}={id}"
                )));
            }
            let agg = name.to_ascii_lowercase();
            if ids.iter().any(|(_, i)| *i as i64 == id) {
                return Err(invalid(format!(
                    "Multiple mappings for the ID '{id}' are not allowed."
                )));
            }
            if !KNOWN_AGGREGATORS.contains(&agg.as_str()) {
                return Err(invalid(format!("No such aggregator found for {agg}")));
            }
            ids.push((agg, id as u8));
        }
        Ok(Rollups {
            intervals,
            agg_ids: ids,
            agg_tag_key: AGG_TAG_KEY.into(),
            raw_agg_tag_value: "RAW".into(),
        })
    }

    /// The interval configured as `name` (`getRollupInterval(String)`).
    pub fn interval(&self, name: &str) -> Result<&RollupInterval, RollupError> {
        if name.is_empty() {
            return Err(invalid("Interval cannot be null or empty"));
        }
        self.intervals
            .iter()
            .find(|i| i.interval == name)
            .ok_or_else(|| RollupError::NoSuchInterval(name.into()))
    }

    /// The intervals a downsample of `interval_s` may read, best first: the equal one, then
    /// those dividing it, longest first (`getRollupInterval(long, String)`).
    pub fn best_matches(&self, interval_s: u64) -> Vec<&RollupInterval> {
        let mut m: Vec<&RollupInterval> = self
            .intervals
            .iter()
            .filter(|i| interval_s > 0 && interval_s.is_multiple_of(i.interval_s as u64))
            .collect();
        m.sort_by_key(|i| std::cmp::Reverse(i.interval_s));
        m
    }

    /// The id of an aggregator (`getIdForAggregator`), case-insensitive.
    pub fn id_for(&self, agg: &str) -> Result<u8, RollupError> {
        if agg.is_empty() {
            return Err(invalid("Aggregator cannot be null or empty."));
        }
        let agg = agg.to_ascii_lowercase();
        self.agg_ids
            .iter()
            .find(|(n, _)| *n == agg)
            .map(|(_, i)| *i)
            .ok_or_else(|| invalid(format!("No ID found mapping to aggregator: {agg}")))
    }

    pub fn name_of(&self, id: u8) -> Option<&str> {
        self.agg_ids
            .iter()
            .find(|(_, i)| *i == id)
            .map(|(n, _)| n.as_str())
    }

    pub fn default_interval(&self) -> Option<&RollupInterval> {
        self.intervals.iter().find(|i| i.default)
    }

    /// The tables the intervals name (temporal and pre-aggregate), each once, without `skip`
    /// (the data table, which a default interval names).
    pub fn tables(&self, skip: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for i in &self.intervals {
            for t in [&i.table, &i.preagg_table] {
                if t != skip && !out.contains(t) {
                    out.push(t.clone());
                }
            }
        }
        out
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day number since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(interval: &str, span: &str) -> RollupInterval {
        RollupInterval::new("tsdb-rollup", "tsdb-rollup-agg", interval, span, false).unwrap()
    }

    #[test]
    fn base_times_match_opentsdb_rollup_utils_tests() {
        let hour = iv("1s", "1h");
        for ts in [
            1370530800,
            1370530800154,
            1370532925,
            1370532925154,
            1370534399,
            1370534399999,
        ] {
            assert_eq!(hour.base_time(ts), 1370530800, "{ts}");
        }
        let six = iv("10m", "6h");
        for ts in [1370520000, 1370530800, 1370541599] {
            assert_eq!(six.base_time(ts), 1370520000, "{ts}");
        }
        let two = iv("10m", "2h");
        for ts in [1370520000, 1370523660, 1370527199] {
            assert_eq!(two.base_time(ts), 1370520000, "{ts}");
        }
        let day = iv("10m", "1d");
        for ts in [
            1370476800,
            1370476800154,
            1370532925,
            1370532925154,
            1370563199,
            1370563199999,
        ] {
            assert_eq!(day.base_time(ts), 1370476800, "{ts}");
        }
        let month = iv("1h", "1n");
        for (ts, want) in [
            (1370044800, 1370044800),
            (1370044800154, 1370044800),
            (1370532925, 1370044800),
            (1372636799, 1370044800),
            (1372636799999, 1370044800),
            (1375315199, 1372636800),
            (1362095999, 1359676800),
            (1330559999, 1328054400),
            (1435708800, 1435708800),
            (1435708800154, 1435708800),
        ] {
            assert_eq!(month.base_time(ts), want, "{ts}");
        }
        let year = iv("24h", "1y");
        for ts in [
            1356998400,
            1356998400154,
            1370532925,
            1388534399,
            1388534399999,
        ] {
            assert_eq!(year.base_time(ts), 1356998400, "{ts}");
        }
        for i in [&hour, &day, &month, &year] {
            assert_eq!(i.base_time(0), 0);
        }
        assert_eq!(month.next_base(1359676800), 1362096000);
        assert_eq!(year.next_base(1356998400), 1388534400);
    }

    #[test]
    fn qualifiers_match_opentsdb_rollup_utils_tests() {
        let hour = iv("1s", "1h");
        let q = |i: &RollupInterval, ts, base| i.qualifier(42, ts, base, 7).unwrap();
        assert_eq!(q(&hour, 1370530800, 1370530800), [42, 0x00, 0x07]);
        assert_eq!(q(&hour, 1370532925, 1370530800), [42, 0x84, 0xD7]);
        assert_eq!(q(&hour, 1370534399, 1370530800), [42, 0xE0, 0xF7]);
        assert!(hour.qualifier(42, 1370534400, 1370530800, 7).is_err());
        let s30 = iv("30s", "1h");
        assert_eq!(q(&s30, 1370532925, 1370530800), [42, 0x04, 0x67]);
        assert_eq!(q(&s30, 1370534399, 1370530800), [42, 0x07, 0x77]);
        assert!(s30.qualifier(42, 1370534400, 1370530800, 7).is_err());
        let m1 = iv("1m", "1h");
        assert_eq!(q(&m1, 1370532925, 1370530800), [42, 0x02, 0x37]);
        assert_eq!(q(&m1, 1370534399, 1370530800), [42, 0x03, 0xB7]);
        let m15 = iv("15m", "1d");
        assert_eq!(q(&m15, 1370476800, 1370476800), [42, 0x00, 0x07]);
        assert_eq!(q(&m15, 1370532925, 1370476800), [42, 0x03, 0xE7]);
        assert_eq!(q(&m15, 1370563199, 1370476800), [42, 0x05, 0xF7]);
        // The vector: 1h in a 1d span, sum = id 0, value 30 on one byte.
        let h1 = iv("1h", "1d");
        assert_eq!(h1.base_time(1356998400), 0x50E22700);
        assert_eq!(
            h1.qualifier(0, 1356998400, 0x50E22700, 0).unwrap(),
            [0, 0, 0]
        );
    }

    #[test]
    fn interval_validation_as_opentsdb() {
        let e = |i: &str, s: &str| {
            RollupInterval::new("a", "b", i, s, false)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(e("1s", "1w"), "Unrecogznied span 'w'");
        assert_eq!(e("1m", "3h"), "The multiplier must be 1 or an even value");
        assert_eq!(
            e("1h", "2d"),
            "Multipliers are only usable with the 'h' unit"
        );
        assert_eq!(
            e("1h", "1h"),
            "Interval [3600] is too large for the span [h]"
        );
        assert_eq!(
            e("10m", "1h"),
            "Not enough intervals [6] for the span. Must be at least [12]"
        );
        assert!(e("1s", "1d").starts_with("Too many intervals [86400]"));
        assert_eq!(e("1ms", "1h"), "Milliseconds are not supported");
        assert_eq!(
            RollupInterval::new("", "b", "1m", "1h", false)
                .unwrap_err()
                .to_string(),
            "The rollup table cannot be null or empty"
        );
        assert_eq!(iv("1h", "1d").intervals, 24);
        assert_eq!(iv("1d", "1y").intervals, 366);
        assert_eq!(iv("1h", "1n").intervals, 768);
    }

    #[test]
    fn config_validation_and_matching() {
        let ivs = vec![
            RollupInterval::new("tsdb", "tsdb-agg", "1m", "1h", true).unwrap(),
            iv("1h", "1d"),
            RollupInterval::new("tsdb-rollup-1d", "tsdb-rollup-agg-1d", "1d", "1y", false).unwrap(),
        ];
        let ids = |v: &[(&str, i64)]| v.iter().map(|(a, b)| (a.to_string(), *b)).collect();
        let r = Rollups::new(ivs.clone(), ids(&[("SUM", 0), ("count", 1)])).unwrap();
        assert_eq!(r.id_for("Sum"), Ok(0));
        assert_eq!(
            r.id_for("max").unwrap_err().to_string(),
            "No ID found mapping to aggregator: max"
        );
        assert_eq!(
            r.interval("5m").unwrap_err().to_string(),
            "No rollups configured for the interval: 5m"
        );
        let best: Vec<&str> = r
            .best_matches(86_400)
            .iter()
            .map(|i| i.interval.as_str())
            .collect();
        assert_eq!(best, ["1d", "1h", "1m"]);
        let best: Vec<&str> = r
            .best_matches(7200)
            .iter()
            .map(|i| i.interval.as_str())
            .collect();
        assert_eq!(best, ["1h", "1m"]);
        assert!(r.best_matches(90).is_empty());
        assert_eq!(
            r.tables("tsdb"),
            [
                "tsdb-agg",
                "tsdb-rollup",
                "tsdb-rollup-agg",
                "tsdb-rollup-1d",
                "tsdb-rollup-agg-1d"
            ]
        );
        let err = |ivs, a: &[(&str, i64)]| Rollups::new(ivs, ids(a)).unwrap_err().to_string();
        assert_eq!(
            err(ivs.clone(), &[("sum", 128)]),
            "ID for aggregator must be between 0 and 127: sum=128"
        );
        assert_eq!(
            err(ivs.clone(), &[("sum", 1), ("max", 1)]),
            "Multiple mappings for the ID '1' are not allowed."
        );
        assert_eq!(
            err(ivs.clone(), &[("nope", 1)]),
            "No such aggregator found for nope"
        );
        assert_eq!(
            err(vec![], &[("sum", 1)]),
            "Rollup config given but no intervals were found."
        );
        let mut twice = ivs.clone();
        twice.push(ivs[1].clone());
        assert!(err(twice, &[("sum", 0)]).starts_with("Only one interval of each type"));
    }

    #[test]
    fn cells_decode_in_both_forms() {
        let id = |n: &str| (n == "sum").then_some(0u8);
        let c = decode_cell(&[0, 0x00, 0x10], &[0x1e], id).unwrap();
        assert_eq!(
            (c.agg_id, c.index, c.value),
            (Some(0), 1, DataValue::Int(30))
        );
        let mut q = legacy_prefix("SUM");
        q.extend_from_slice(&[0x00, 0x23]);
        assert_eq!(q[..4], *b"sum:");
        let c = decode_cell(&q, &[0, 0, 0, 7], id).unwrap();
        assert_eq!(
            (c.agg_id, c.index, c.value),
            (Some(0), 2, DataValue::Int(7))
        );
        let f = decode_cell(&[2, 0x00, 0x0B], &1.5f32.to_be_bytes(), id).unwrap();
        assert_eq!(f.value, DataValue::F32(1.5));
        assert!(decode_cell(&[0x80, 0, 0], &[1], id).is_none());
    }
}
