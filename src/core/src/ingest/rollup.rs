//! Rolled-up and pre-aggregated points (`/api/rollup`, telnet `rollup`), written as OpenTSDB
//! 2.4's `TSDB.addAggregatePoint` writes them: straight to the interval's rollup table (or its
//! pre-aggregate table), one put per point, with the checks and messages of OpenTSDB.
//!
//! These cells do not go through the write-ahead log: a write is answered once the store holds
//! it (as OpenTSDB answers once HBase took the put) and a store sync made it as durable as a
//! WAL record (`write::direct`, which the caller runs once per request).

use crate::config::rollup::RollupsConfig;
use crate::series::SeriesResolver;
use crate::uid::UidError;
use tsgate_opentsdb::rollup::RollupSpec;
use tsgate_opentsdb::DataPoint;
use tsgate_schema::column::encode_value;
use tsgate_schema::rollup::{RollupError, Rollups};
use tsgate_schema::rowkey::{base_time, is_ms};
use tsgate_schema::{KeyLayout, RawPoint, DATA_FAMILY};
use tsgate_store::{RowMutations, SharedStore};

/// Why a rollup point was not stored, in OpenTSDB's categories.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RollupWriteError {
    /// `IllegalArgumentException`.
    #[error("{0}")]
    Invalid(String),
    /// `NoSuchRollupForIntervalException`.
    #[error("{0}")]
    NoSuchRollup(String),
    /// A name without a UID while auto-creation is off.
    #[error("{0}")]
    UnknownName(String),
    /// UID assignment or the store failed.
    #[error("{0}")]
    Store(String),
}

impl RollupWriteError {
    /// The telnet answer line (without `\n`).
    pub fn telnet_line(&self) -> String {
        match self {
            RollupWriteError::Invalid(m) => format!("rollup: illegal argument: {m}"),
            RollupWriteError::NoSuchRollup(m) => format!("rollup: No such rollup: {m}"),
            RollupWriteError::UnknownName(m) => format!("rollup: unknown metric: {m}"),
            RollupWriteError::Store(m) => format!("rollup: HBase error: {m}"),
        }
    }
}

fn invalid(m: impl Into<String>) -> RollupWriteError {
    RollupWriteError::Invalid(m.into())
}

/// Writes rollup points for one configuration.
pub struct RollupWriter<'a> {
    pub store: &'a SharedStore,
    pub layout: KeyLayout,
    pub config: &'a RollupsConfig,
    pub resolver: &'a SeriesResolver,
}

/// Where a point goes and as what: table, row base, qualifier and value.
#[derive(Debug, Clone, PartialEq)]
pub struct Placed {
    pub table: String,
    pub tags: Vec<(String, String)>,
    pub base: u32,
    pub qualifier: Vec<u8>,
    pub value: Vec<u8>,
}

/// `addAggregatePointInternal` without the store: validates and places one point.
pub fn place(
    config: &RollupsConfig,
    rollups: Option<&Rollups>,
    spec: &RollupSpec,
    p: &DataPoint<'_>,
) -> Result<Placed, RollupWriteError> {
    let interval = spec.interval.as_deref().filter(|i| !i.is_empty());
    let Some(rollups) = rollups else {
        return Err(invalid("No rollup or aggregations were configured"));
    };
    let is_groupby = spec.is_groupby();
    let metric = p.metric;
    let mut tags: Vec<(String, String)> = p
        .tags
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let tags_text = |tags: &[(String, String)]| {
        let t: Vec<String> = tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{{{}}}", t.join(", "))
    };
    // A group-by aggregator given empty still makes a group-by point (OpenTSDB tests
    // `!= null`), one without its function.
    if spec.groupby.as_deref() == Some("") {
        return Err(invalid(format!(
            "Cannot write a group by data point without specifying the aggregation function. Metric={metric} tags={}",
            tags_text(&tags)
        )));
    }
    if is_ms(p.timestamp) {
        return Err(invalid(format!(
            "bad timestamp={} when trying to add value={} to metric={metric}, tags={}",
            p.timestamp,
            crate::ingest::to_data_value(p.value).as_f64(),
            tags_text(&tags)
        )));
    }
    let key = config.agg_tag_key.as_str();
    let groupby = spec.groupby.clone().unwrap_or_default();
    let agg_tag = tags.iter().position(|(k, _)| k == key);
    match agg_tag {
        None if !is_groupby => {
            if config.tag_raw {
                tags.push((key.into(), config.raw_agg_tag_value.clone()));
            }
        }
        None => tags.push((key.into(), groupby.to_uppercase())),
        Some(i) => {
            if !tags[i].1.eq_ignore_ascii_case(&groupby) {
                return Err(invalid(format!(
                    "Given tag value for {key} of {} did not match the group by aggregator of {groupby} for {metric} {}",
                    tags[i].1,
                    tags_text(&tags)
                )));
            }
            tags[i].1 = groupby.to_uppercase();
        }
    }
    let derived = |a: &str| config.block_derived && matches!(a, "AVG" | "DEV");
    if is_groupby {
        if !tsgate_schema::rollup::KNOWN_AGGREGATORS.contains(&groupby.to_lowercase().as_str()) {
            return Err(invalid(format!(
                "Invalid group by aggregator {groupby} with metric {metric} {}",
                tags_text(&tags)
            )));
        }
        if derived(&groupby.to_uppercase()) {
            return Err(invalid(format!(
                "Derived group by aggregations are not allowed {groupby} with metric {metric} {}",
                tags_text(&tags)
            )));
        }
    }
    let value = crate::ingest::to_data_value(p.value);
    let (flags, bytes, len) = encode_value(value).map_err(|e| invalid(e.to_string()))?;
    let value = bytes[..len as usize].to_vec();
    let Some(name) = interval else {
        if !is_groupby {
            return Err(invalid("Interval cannot be null for a non-group by point"));
        }
        // A raw pre-aggregate: the default interval's pre-aggregate table, raw qualifier.
        let dflt = rollups
            .default_interval()
            .ok_or_else(|| invalid("No default rollup interval configured"))?;
        let base = base_time(p.timestamp);
        let raw = RawPoint::encode(p.timestamp, base, crate::ingest::to_data_value(p.value))
            .map_err(|e| invalid(e.to_string()))?;
        return Ok(Placed {
            table: dflt.preagg_table.clone(),
            tags,
            base,
            qualifier: raw.qualifier().to_vec(),
            value,
        });
    };
    let iv = rollups.interval(name).map_err(|e| match e {
        RollupError::NoSuchInterval(_) => RollupWriteError::NoSuchRollup(e.to_string()),
        e => invalid(e.to_string()),
    })?;
    let temporal = spec.aggregator.clone().unwrap_or_default();
    let id = rollups
        .id_for(&temporal)
        .map_err(|e| invalid(e.to_string()))?;
    if derived(&temporal.to_uppercase()) {
        return Err(invalid(format!(
            "Derived rollup aggregations are not allowed {} with metric {metric} {}",
            temporal.to_uppercase(),
            tags_text(&tags)
        )));
    }
    if iv.default && !is_groupby {
        // OpenTSDB would put 3-byte rollup cells into the raw table, where raw readers take
        // them for something else; the raw interval is written with /api/put instead.
        return Err(invalid(format!(
            "Interval {name} is the default (raw) interval: write its points with put"
        )));
    }
    let base = iv.base_time(p.timestamp);
    let qualifier = iv
        .qualifier(id, p.timestamp, base, flags)
        .map_err(|e| invalid(e.to_string()))?
        .to_vec();
    Ok(Placed {
        table: if is_groupby {
            iv.preagg_table.clone()
        } else {
            iv.table.clone()
        },
        tags,
        base,
        qualifier,
        value,
    })
}

impl RollupWriter<'_> {
    /// Validates, resolves and stores one point. Blocking (UID assignment, the store).
    pub fn write(&self, spec: &RollupSpec, p: &DataPoint<'_>) -> Result<(), RollupWriteError> {
        let placed = place(self.config, self.config.compiled.as_deref(), spec, p)?;
        let tags: Vec<(&str, &str)> = placed
            .tags
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let series = self
            .resolver
            .resolve(p.metric, &tags)
            .map_err(|e| match e {
                UidError::NoSuchName { .. } => RollupWriteError::UnknownName(e.to_string()),
                e => RollupWriteError::Store(e.to_string()),
            })?;
        self.resolver
            .sync_if_dirty()
            .map_err(|e| RollupWriteError::Store(e.to_string()))?;
        let row = self.layout.row_key(series.tsuid, placed.base);
        self.store
            .mutate(
                &placed.table,
                vec![RowMutations::put(
                    row,
                    DATA_FAMILY,
                    placed.qualifier,
                    placed.value,
                )],
            )
            .map_err(|e| RollupWriteError::Store(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tsgate_opentsdb::Value;

    fn config() -> RollupsConfig {
        let mut c = RollupsConfig {
            enabled: true,
            ..Default::default()
        };
        c.compiled = c.compile("tsdb").unwrap().map(std::sync::Arc::new);
        c
    }

    fn point(ts: u64, v: Value) -> DataPoint<'static> {
        DataPoint {
            metric: "sys.cpu.user",
            timestamp: ts,
            value: v,
            tags: vec![("host", "web01")],
        }
    }

    fn spec(word: &str) -> RollupSpec {
        RollupSpec::parse(word)
    }

    #[test]
    fn places_as_opentsdb() {
        let c = config();
        let r = c.compiled.as_deref();
        let p = place(&c, r, &spec("1h-SUM"), &point(1356998400, Value::Int(30))).unwrap();
        assert_eq!(
            (p.table.as_str(), p.base, &p.qualifier[..], &p.value[..]),
            ("tsdb-rollup-1h", 1356998400, &[0u8, 0, 0][..], &[0x1e][..])
        );
        assert_eq!(p.tags, [("host".to_string(), "web01".to_string())]);
        // 13:00 is interval 13 of the day; a float on 4 bytes (flags 0xB).
        let p = place(
            &c,
            r,
            &spec("1h-max"),
            &point(1356998400 + 13 * 3600 + 5, Value::F32(1.5)),
        )
        .unwrap();
        assert_eq!(&p.qualifier[..], &[3, 0x00, 0xDB]);
        let p = place(&c, r, &spec("1d-count"), &point(1370532925, Value::Int(7))).unwrap();
        assert_eq!((p.table.as_str(), p.base), ("tsdb-rollup-1d", 1356998400));
        assert_eq!(p.qualifier, [1, 0x09, 0xC0]); // day 156 of 2013
                                                  // Rolled-up pre-aggregate: the pre-aggregate table, _aggregate=MAX.
        let p = place(
            &c,
            r,
            &spec("1h-sum:max"),
            &point(1356998400, Value::Int(1)),
        )
        .unwrap();
        assert_eq!(p.table, "tsdb-rollup-preagg-1h");
        assert!(p.tags.contains(&("_aggregate".into(), "MAX".into())));
        // Raw pre-aggregate: the default interval's pre-aggregate table, raw qualifier.
        let p = place(&c, r, &spec("sum"), &point(1356998410, Value::Int(1))).unwrap();
        assert_eq!(
            (p.table.as_str(), p.base, &p.qualifier[..]),
            ("tsdb-preagg", 1356998400, &[0x00u8, 0xA0][..])
        );
    }

    #[test]
    fn errors_as_opentsdb_words_them() {
        let c = config();
        let r = c.compiled.as_deref();
        let e = |s: &str, p: DataPoint| place(&c, r, &spec(s), &p).unwrap_err();
        let x = e("5m-sum", point(1356998400, Value::Int(1)));
        assert_eq!(
            x.telnet_line(),
            "rollup: No such rollup: No rollups configured for the interval: 5m"
        );
        let x = e("1h-dev", point(1356998400, Value::Int(1)));
        assert_eq!(x.to_string(), "No ID found mapping to aggregator: dev");
        let x = e("1h-sum", point(1356998400000, Value::Int(1)));
        assert!(
            x.to_string().starts_with("bad timestamp=1356998400000"),
            "{x}"
        );
        let x = e("avg", point(1356998400, Value::Int(1)));
        assert!(
            x.to_string()
                .starts_with("Derived group by aggregations are not allowed avg"),
            "{x}"
        );
        let x = place(
            &RollupsConfig::default(),
            None,
            &spec("1h-sum"),
            &point(1, Value::Int(1)),
        )
        .unwrap_err();
        assert_eq!(x.to_string(), "No rollup or aggregations were configured");
        let x = e("1h-sum:", point(1356998400, Value::Int(1)));
        assert_eq!(x.to_string(), "Cannot write a group by data point without specifying the aggregation function. Metric=sys.cpu.user tags={host=web01}");
        let mut p = point(1356998400, Value::Int(1));
        p.tags.push(("_aggregate", "MIN"));
        let x = e("1h-sum:max", p);
        assert!(x.to_string().starts_with("Given tag value for _aggregate of MIN did not match the group by aggregator of max"), "{x}");
    }
}
