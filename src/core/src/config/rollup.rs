//! `[rollups]`: OpenTSDB 2.4's rollup configuration (`tsd.rollups.*`), either the JSON file
//! `tsd.rollups.config` names or the same fields inline. Plain data; the schema crate validates
//! and compiles it (`tsgate_schema::rollup::Rollups`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tsgate_schema::rollup::{RollupError, RollupInterval, Rollups};

/// Why `[rollups]` cannot be used; `Display` is OpenTSDB's message where it has one.
#[derive(Debug, thiserror::Error)]
pub enum RollupConfigError {
    #[error("Failed to open conf file: {path}: {source}")]
    Open {
        path: String,
        source: std::io::Error,
    },
    #[error("rollups.config is not a rollup config: {0}")]
    NotARollupConfig(#[from] serde_json::Error),
    #[error(transparent)]
    Rollup(#[from] RollupError),
    #[error("None of the rollup intervals were marked as the \"default\".")]
    NoDefaultInterval,
    #[error("rollups.agg_tag_key must not be empty")]
    EmptyAggTagKey,
    #[error("rollups.retention names {0:?}, which is not a configured rollup interval (raw data keeps storage.retention)")]
    RetentionInterval(String),
    #[error("rollups.retention.{name}: {source}")]
    RetentionDuration {
        name: String,
        source: super::DurationError,
    },
}

/// One interval, with OpenTSDB's JSON field names (also in TOML).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Default)]
#[serde(default)]
pub struct IntervalConfig {
    pub table: String,
    #[serde(rename = "preAggregationTable")]
    pub pre_aggregation_table: String,
    pub interval: String,
    #[serde(rename = "rowSpan")]
    pub row_span: String,
    #[serde(rename = "defaultInterval")]
    pub default_interval: bool,
}

/// The JSON document of `tsd.rollups.config` (unknown fields ignored, as Jackson is told to).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Default)]
#[serde(default)]
pub struct RollupDocument {
    pub intervals: Vec<IntervalConfig>,
    #[serde(rename = "aggregationIds")]
    pub aggregation_ids: BTreeMap<String, i64>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct RollupsConfig {
    /// `tsd.rollups.enable`.
    pub enabled: bool,
    /// `tsd.rollups.config`: a JSON file (relative to the TOML file's directory), or the JSON
    /// document itself. Empty: the inline `intervals` / `aggregationIds`, else the default.
    pub config: String,
    pub intervals: Vec<IntervalConfig>,
    #[serde(rename = "aggregationIds")]
    pub aggregation_ids: BTreeMap<String, i64>,
    /// `tsd.rollups.agg_tag_key`: the tag naming a pre-aggregate's group-by aggregator.
    pub agg_tag_key: String,
    /// `tsd.rollups.raw_agg_tag_value`.
    pub raw_agg_tag_value: String,
    /// `tsd.rollups.tag_raw`: rolled-up raw data carries `agg_tag_key=raw_agg_tag_value`.
    pub tag_raw: bool,
    /// `tsd.rollups.block_derived`: refuse `avg` and `dev` rollups and pre-aggregates.
    pub block_derived: bool,
    /// Build rollup cells of every configured interval from raw data as hours are compacted.
    pub build: bool,
    /// How long each rollup interval keeps its cells, by interval (`{ "1h" = "365d" }`): units
    /// s m h d w y, "" = for ever (the default of every interval). Raw data keeps
    /// `storage.retention`. A row (one row span of one series) goes once its span has wholly
    /// passed the retention.
    pub retention: BTreeMap<String, String>,
    /// The compiled configuration (after [`RollupsConfig::resolve`]).
    #[serde(skip)]
    pub compiled: Option<Arc<Rollups>>,
    /// The TOML file's directory, for a relative `config` path.
    #[serde(skip)]
    pub base_dir: Option<PathBuf>,
}

impl Default for RollupsConfig {
    fn default() -> Self {
        RollupsConfig {
            enabled: false,
            config: String::new(),
            intervals: Vec::new(),
            aggregation_ids: BTreeMap::new(),
            agg_tag_key: tsgate_schema::rollup::AGG_TAG_KEY.into(),
            raw_agg_tag_value: "RAW".into(),
            tag_raw: false,
            block_derived: true,
            build: true,
            retention: BTreeMap::new(),
            compiled: None,
            base_dir: None,
        }
    }
}

impl RollupsConfig {
    /// The retention of rollup interval `interval`, seconds (0 = for ever; checked by
    /// [`RollupsConfig::compile`]).
    pub fn retention_s(&self, interval: &str) -> u64 {
        self.retention
            .get(interval)
            .and_then(|t| super::parse_duration_s(t).ok())
            .unwrap_or(0)
    }
}

/// The default when rollups are on and nothing else is configured: raw data (1 m, default
/// interval, in the data table), 1 h in one-day rows, 1 d in one-year rows; sum, count, min
/// and max.
pub fn default_document(data_table: &str) -> RollupDocument {
    let iv = |table: &str, pre: &str, interval: &str, span: &str, dflt| IntervalConfig {
        table: table.into(),
        pre_aggregation_table: pre.into(),
        interval: interval.into(),
        row_span: span.into(),
        default_interval: dflt,
    };
    RollupDocument {
        intervals: vec![
            iv(data_table, "tsdb-preagg", "1m", "1h", true),
            iv("tsdb-rollup-1h", "tsdb-rollup-preagg-1h", "1h", "1d", false),
            iv("tsdb-rollup-1d", "tsdb-rollup-preagg-1d", "1d", "1y", false),
        ],
        aggregation_ids: [("sum", 0), ("count", 1), ("min", 2), ("max", 3)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    }
}

impl RollupsConfig {
    /// The document in force: the file or JSON of `config`, else the inline fields, else the
    /// default.
    pub fn document(&self, data_table: &str) -> Result<RollupDocument, RollupConfigError> {
        let text = self.config.trim();
        if !text.is_empty() {
            let json = if text.starts_with('{') {
                text.to_string()
            } else {
                let p = Path::new(text);
                let p = match (&self.base_dir, p.is_relative()) {
                    (Some(d), true) => d.join(p),
                    _ => p.to_path_buf(),
                };
                std::fs::read_to_string(&p).map_err(|source| RollupConfigError::Open {
                    path: p.display().to_string(),
                    source,
                })?
            };
            return Ok(serde_json::from_str(&json)?);
        }
        if self.intervals.is_empty() && self.aggregation_ids.is_empty() {
            return Ok(default_document(data_table));
        }
        Ok(RollupDocument {
            intervals: self.intervals.clone(),
            aggregation_ids: self.aggregation_ids.clone(),
        })
    }

    /// Validates and compiles the configuration (OpenTSDB's checks and messages), when enabled.
    pub fn compile(&self, data_table: &str) -> Result<Option<Rollups>, RollupConfigError> {
        if !self.enabled {
            return Ok(None);
        }
        let doc = self.document(data_table)?;
        let mut intervals = Vec::new();
        for i in &doc.intervals {
            intervals.push(RollupInterval::new(
                &i.table,
                &i.pre_aggregation_table,
                &i.interval,
                &i.row_span,
                i.default_interval,
            )?);
        }
        let mut r = Rollups::new(intervals, doc.aggregation_ids.into_iter().collect())?;
        if r.default_interval().is_none() {
            return Err(RollupConfigError::NoDefaultInterval);
        }
        if self.agg_tag_key.is_empty() {
            return Err(RollupConfigError::EmptyAggTagKey);
        }
        r.agg_tag_key = self.agg_tag_key.clone();
        r.raw_agg_tag_value = self.raw_agg_tag_value.clone();
        for (name, text) in &self.retention {
            if !r
                .intervals
                .iter()
                .any(|i| !i.default && i.interval == *name)
            {
                return Err(RollupConfigError::RetentionInterval(name.clone()));
            }
            super::parse_duration_s(text).map_err(|source| {
                RollupConfigError::RetentionDuration {
                    name: name.clone(),
                    source,
                }
            })?;
        }
        Ok(Some(r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_json_file_and_inline_agree() {
        let mut c = RollupsConfig {
            enabled: true,
            ..Default::default()
        };
        let dflt = c.compile("tsdb").unwrap().unwrap();
        assert_eq!(dflt.intervals.len(), 3);
        assert_eq!(dflt.interval("1h").unwrap().table, "tsdb-rollup-1h");
        assert_eq!(dflt.interval("1d").unwrap().intervals, 366);
        assert_eq!(dflt.id_for("max"), Ok(3));
        let json = serde_json::to_string(&default_document("tsdb")).unwrap();
        assert!(
            json.contains("\"preAggregationTable\":\"tsdb-preagg\""),
            "{json}"
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("rollups.json"), &json).unwrap();
        c.config = "rollups.json".into();
        c.base_dir = Some(dir.path().into());
        assert_eq!(c.compile("tsdb").unwrap().unwrap(), dflt);
        c.config = json;
        assert_eq!(c.compile("tsdb").unwrap().unwrap(), dflt);
        let toml_text = r#"
            enabled = true
            aggregationIds = { sum = 0, count = 1, min = 2, max = 3 }
            [[intervals]]
            table = "tsdb"
            preAggregationTable = "tsdb-preagg"
            interval = "1m"
            rowSpan = "1h"
            defaultInterval = true
            [[intervals]]
            table = "tsdb-rollup-1h"
            preAggregationTable = "tsdb-rollup-preagg-1h"
            interval = "1h"
            rowSpan = "1d"
            [[intervals]]
            table = "tsdb-rollup-1d"
            preAggregationTable = "tsdb-rollup-preagg-1d"
            interval = "1d"
            rowSpan = "1y"
        "#;
        let inline: RollupsConfig = toml::from_str(toml_text).unwrap();
        assert_eq!(inline.compile("tsdb").unwrap().unwrap(), dflt);
    }

    #[test]
    fn errors_are_opentsdb_s() {
        let c = RollupsConfig {
            enabled: true,
            config: r#"{"intervals":[{"table":"r","preAggregationTable":"p","interval":"1h","rowSpan":"1d"}],"aggregationIds":{"sum":0}}"#.into(),
            ..Default::default()
        };
        assert_eq!(
            c.compile("tsdb").unwrap_err().to_string(),
            "None of the rollup intervals were marked as the \"default\"."
        );
        let c = RollupsConfig {
            enabled: true,
            config: "missing.json".into(),
            ..Default::default()
        };
        assert!(c
            .compile("tsdb")
            .unwrap_err()
            .to_string()
            .starts_with("Failed to open conf file: missing.json"));
        assert!(matches!(RollupsConfig::default().compile("tsdb"), Ok(None)));
        let mut c = RollupsConfig {
            enabled: true,
            ..Default::default()
        };
        c.retention.insert("1h".into(), "365d".into());
        assert!(c.compile("tsdb").is_ok());
        assert_eq!(c.retention_s("1h"), 365 * 86_400);
        assert_eq!(c.retention_s("1d"), 0);
        c.retention.insert("1m".into(), "7d".into());
        assert!(c
            .compile("tsdb")
            .unwrap_err()
            .to_string()
            .contains("not a configured rollup interval"));
        c.retention.remove("1m");
        c.retention.insert("1d".into(), "ever".into());
        assert!(c
            .compile("tsdb")
            .unwrap_err()
            .to_string()
            .starts_with("rollups.retention.1d"));
    }
}
