//! A parsed data point and the write-time checks OpenTSDB applies to it (`TSDB.addPoint` →
//! `checkTimestampAndTags` → `IncomingDataPoints.checkMetricAndTags`).

use crate::javamap;
use crate::names;
use crate::value::Value;

/// A data point borrowing its strings from the input line/body.
/// `tags` keeps first-insertion order and has distinct keys.
#[derive(Debug, Clone, PartialEq)]
pub struct DataPoint<'a> {
    pub metric: &'a str,
    pub timestamp: u64,
    pub value: Value,
    pub tags: Vec<(&'a str, &'a str)>,
}

/// Owned twin of [`DataPoint`].
#[derive(Debug, Clone, PartialEq)]
pub struct OwnedDataPoint {
    pub metric: String,
    pub timestamp: u64,
    pub value: Value,
    pub tags: Vec<(String, String)>,
}

impl OwnedDataPoint {
    #[allow(clippy::should_implement_trait)]
    pub fn as_ref(&self) -> DataPoint<'_> {
        DataPoint {
            metric: &self.metric,
            timestamp: self.timestamp,
            value: self.value,
            tags: self
                .tags
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect(),
        }
    }
}

impl DataPoint<'_> {
    pub fn to_owned_point(&self) -> OwnedDataPoint {
        OwnedDataPoint {
            metric: self.metric.to_string(),
            timestamp: self.timestamp,
            value: self.value,
            tags: self
                .tags
                .iter()
                .map(|&(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }
}

impl<'a> From<&'a OwnedDataPoint> for DataPoint<'a> {
    fn from(p: &'a OwnedDataPoint) -> Self {
        p.as_ref()
    }
}

/// Write-path limits (`tsd.storage.max_tags`, `tsd.core.tag.allow_specialchars`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    pub max_tags: usize,
    pub allow_special: String,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_tags: 8,
            allow_special: String::new(),
        }
    }
}

/// Largest accepted millisecond timestamp.
pub const MAX_MS_TIMESTAMP: u64 = 9_999_999_999_999;

/// OpenTSDB treats a timestamp as milliseconds iff any of its upper 32 bits is set.
pub fn is_ms_timestamp(ts: u64) -> bool {
    ts & 0xFFFF_FFFF_0000_0000 != 0
}

/// The stored value bytes and flags, as printed in the "bad timestamp" message
/// (`Arrays.toString(byte[])` + `/` + flags).
fn value_bytes_and_flags(v: &Value) -> (Vec<u8>, u8) {
    match *v {
        Value::Int(i) => {
            let b = i.to_be_bytes();
            let len = if i8::try_from(i).is_ok() {
                1
            } else if i16::try_from(i).is_ok() {
                2
            } else if i32::try_from(i).is_ok() {
                4
            } else {
                8
            };
            (b[8 - len..].to_vec(), len as u8 - 1)
        }
        Value::F32(f) => (f.to_bits().to_be_bytes().to_vec(), 0x8 | 0x3),
        Value::F64(d) => (d.to_bits().to_be_bytes().to_vec(), 0x8 | 0x7),
    }
}

fn java_byte_array(bytes: &[u8]) -> String {
    let parts: Vec<String> = bytes.iter().map(|&b| (b as i8).to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// The message OpenTSDB raises for a NaN/infinite value: `<base> for metric=<m> timestamp=<ts>`
/// where `<base>` is `value is NaN or Infinite: <v>`.
pub(crate) fn not_finite_message(
    base: &str,
    metric: &str,
    timestamp: impl std::fmt::Display,
) -> String {
    format!("{base} for metric={metric} timestamp={timestamp}")
}

/// Why OpenTSDB refuses a data point; `Display` is its exact message (the telnet
/// `IllegalArgumentException` text, or the `error` of an `/api/put` `details` entry).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PointError {
    /// `base` is `value is NaN or Infinite: <v>`.
    #[error("{base} for metric={metric} timestamp={timestamp}")]
    NotFinite {
        base: String,
        metric: String,
        timestamp: u64,
    },
    /// A millisecond timestamp past OpenTSDB's range; `value` is the value's bytes as a Java
    /// array and `tags` the map as Java prints it.
    #[error(
        "bad timestamp={timestamp} when trying to add value={value}/{flags} to metric={metric}, \
         tags={tags}"
    )]
    BadTimestamp {
        timestamp: u64,
        value: String,
        flags: u8,
        metric: String,
        tags: String,
    },
    #[error("Need at least one tag (metric={metric}, tags={{}})")]
    NoTags { metric: String },
    #[error("Too many tags: {count} maximum allowed: {max}, tags: {tags}")]
    TooManyTags {
        count: usize,
        max: usize,
        tags: String,
    },
    #[error(transparent)]
    Name(#[from] names::NameError),
    #[error("Invalid {}: null", names::tagv_what(key))]
    NullTagValue { key: String },
    // `/api/put` only: the checks of its JSON fields.
    #[error("Unexpected null datapoint encountered in set.")]
    NullPoint,
    #[error("Metric name was empty")]
    EmptyMetric,
    #[error("Invalid timestamp")]
    InvalidTimestamp,
    #[error("Empty value")]
    EmptyValue,
    #[error("Missing tags")]
    MissingTags,
    #[error("Unable to parse value to a number")]
    NotANumber,
}

/// The shared checks, over tags whose values may be JSON `null` (`None`).
/// `tag(i)` gives the i-th tag in insertion order; keys are distinct.
pub(crate) fn check_parts<'t>(
    metric: &str,
    timestamp: u64,
    value: &Value,
    n_tags: usize,
    tag: impl Fn(usize) -> (&'t str, Option<&'t str>),
    limits: &Limits,
) -> Result<(), PointError> {
    let all_tags = || -> Vec<(&'t str, Option<&'t str>)> { (0..n_tags).map(&tag).collect() };
    if !value.is_finite() {
        let base = format!("value is NaN or Infinite: {}", value.java_special_string());
        return Err(PointError::NotFinite {
            base,
            metric: metric.into(),
            timestamp,
        });
    }
    if is_ms_timestamp(timestamp) && timestamp > MAX_MS_TIMESTAMP {
        let (bytes, flags) = value_bytes_and_flags(value);
        return Err(PointError::BadTimestamp {
            timestamp,
            value: java_byte_array(&bytes),
            flags,
            metric: metric.into(),
            tags: javamap::format_map(&all_tags()),
        });
    }
    if n_tags == 0 {
        return Err(PointError::NoTags {
            metric: metric.into(),
        });
    }
    if n_tags > limits.max_tags {
        return Err(PointError::TooManyTags {
            count: n_tags,
            max: limits.max_tags,
            tags: javamap::format_map(&all_tags()),
        });
    }
    names::validate_metric(metric, &limits.allow_special)?;
    let sp = limits.allow_special.as_str();
    let tag_ok = |(k, v): (&str, Option<&str>)| {
        names::check(k, sp).is_ok() && v.is_some_and(|v| names::check(v, sp).is_ok())
    };
    // Fast path: everything valid, so the iteration order does not matter.
    if (0..n_tags).all(|i| tag_ok(tag(i))) {
        return Ok(());
    }
    let tags = all_tags();
    let keys: Vec<&str> = tags.iter().map(|t| t.0).collect();
    for i in javamap::iteration_order(&keys) {
        let (k, v) = tags[i];
        let v_str = v.unwrap_or("null");
        if let Err(b) = names::check(k, sp) {
            return Err(b.error(&names::tagk_what(v_str), k).into());
        }
        match v {
            None => return Err(PointError::NullTagValue { key: k.into() }),
            Some(v) => {
                if let Err(b) = names::check(v, sp) {
                    return Err(b.error(&names::tagv_what(k), v).into());
                }
            }
        }
    }
    Ok(())
}

/// OpenTSDB's write-time checks, in its order: NaN/Infinite value, timestamp range
/// (`bad timestamp=...`), tag count (`Need at least one tag ...`, `Too many tags: ...`),
/// metric name, then each tag key and value in Java `HashMap` iteration order.
/// `Display` of the error is the `IllegalArgumentException` message.
pub fn validate_point(p: &DataPoint, limits: &Limits) -> Result<(), PointError> {
    check_parts(
        p.metric,
        p.timestamp,
        &p.value,
        p.tags.len(),
        |i| (p.tags[i].0, Some(p.tags[i].1)),
        limits,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dp<'a>(
        metric: &'a str,
        ts: u64,
        value: Value,
        tags: &[(&'a str, &'a str)],
    ) -> DataPoint<'a> {
        DataPoint {
            metric,
            timestamp: ts,
            value,
            tags: tags.to_vec(),
        }
    }

    fn err(p: &DataPoint) -> String {
        validate_point(p, &Limits::default())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn valid_points() {
        let l = Limits::default();
        assert_eq!(
            validate_point(
                &dp("sys.cpu", 1356998400, Value::Int(42), &[("host", "web01")]),
                &l
            ),
            Ok(())
        );
        assert_eq!(
            validate_point(
                &dp("m", 9_999_999_999_999, Value::F32(1.5), &[("a", "b")]),
                &l
            ),
            Ok(())
        );
        assert_eq!(
            validate_point(&dp("m", 0, Value::Int(1), &[("a", "b")]), &l),
            Ok(())
        );
    }

    #[test]
    fn tag_count() {
        assert_eq!(
            err(&dp("sys.cpu", 1, Value::Int(1), &[])),
            "Need at least one tag (metric=sys.cpu, tags={})"
        );
        let tags: Vec<(String, String)> =
            (0..9).map(|i| (format!("k{i}"), format!("v{i}"))).collect();
        let refs: Vec<(&str, &str)> = tags.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            err(&dp("m", 1, Value::Int(1), &refs)),
            "Too many tags: 9 maximum allowed: 8, tags: {k0=v0, k1=v1, k2=v2, k3=v3, k4=v4, k5=v5, k6=v6, k7=v7, k8=v8}"
        );
        let l = Limits {
            max_tags: 9,
            ..Limits::default()
        };
        assert_eq!(
            validate_point(&dp("m", 1, Value::Int(1), &refs), &l),
            Ok(())
        );
        // Tag count is checked before names.
        assert!(err(&dp("bad metric", 1, Value::Int(1), &[])).starts_with("Need at least one tag"));
    }

    #[test]
    fn names_in_order() {
        assert_eq!(
            err(&dp("a b", 1, Value::Int(1), &[("ho!st", "a")])),
            "Invalid metric name (\"a b\"): illegal character:  "
        );
        assert_eq!(
            err(&dp("m", 1, Value::Int(1), &[("ho!st", "a")])),
            "Invalid tag name with value [a] (\"ho!st\"): illegal character: !"
        );
        assert_eq!(
            err(&dp("m", 1, Value::Int(1), &[("host", "a!")])),
            "Invalid tag value with key [host] (\"a!\"): illegal character: !"
        );
        // HashMap order: "a" (bucket 1) is validated before "c" (bucket 3).
        assert_eq!(
            err(&dp("m", 1, Value::Int(1), &[("c", "x!"), ("a", "y!")])),
            "Invalid tag value with key [a] (\"y!\"): illegal character: !"
        );
        let l = Limits {
            max_tags: 8,
            allow_special: "!".into(),
        };
        assert_eq!(
            validate_point(&dp("m!", 1, Value::Int(1), &[("c", "x!")]), &l),
            Ok(())
        );
    }

    #[test]
    fn bad_timestamp() {
        assert_eq!(
            err(&dp("m", 10_000_000_000_000, Value::Int(42), &[("host", "a")])),
            "bad timestamp=10000000000000 when trying to add value=[42]/0 to metric=m, tags={host=a}"
        );
        assert_eq!(
            err(&dp("m", 10_000_000_000_000, Value::Int(-300), &[])),
            "bad timestamp=10000000000000 when trying to add value=[-2, -44]/1 to metric=m, tags={}"
        );
        assert_eq!(
            err(&dp("m", 10_000_000_000_000, Value::F32(1300.0), &[("a", "b")])),
            "bad timestamp=10000000000000 when trying to add value=[68, -94, -128, 0]/11 to metric=m, tags={a=b}"
        );
        assert_eq!(
            err(&dp("m", 10_000_000_000_000, Value::Int(1 << 40), &[("a", "b")])),
            "bad timestamp=10000000000000 when trying to add value=[0, 0, 1, 0, 0, 0, 0, 0]/7 to metric=m, tags={a=b}"
        );
        // Seconds up to u32::MAX, then milliseconds up to 9999999999999, are fine.
        let ok = |ts| {
            validate_point(
                &dp("m", ts, Value::Int(1), &[("a", "b")]),
                &Limits::default(),
            )
        };
        assert_eq!(ok(u64::from(u32::MAX)), Ok(()));
        assert_eq!(ok(u64::from(u32::MAX) + 1), Ok(()));
        assert_eq!(ok(MAX_MS_TIMESTAMP), Ok(()));
        assert!(ok(MAX_MS_TIMESTAMP + 1).is_err());
    }

    #[test]
    fn not_finite() {
        assert_eq!(
            err(&dp("m", 5, Value::F64(f64::INFINITY), &[("a", "b")])),
            "value is NaN or Infinite: Infinity for metric=m timestamp=5"
        );
        assert_eq!(
            err(&dp("m", 5, Value::F32(f32::NAN), &[])),
            "value is NaN or Infinite: NaN for metric=m timestamp=5"
        );
    }

    #[test]
    fn owned_round_trip() {
        let p = dp("m", 1, Value::F64(0.1), &[("a", "b")]);
        let o = p.to_owned_point();
        assert_eq!(o.as_ref(), p);
        assert_eq!(DataPoint::from(&o), p);
    }
}
