//! Float samples (Prometheus, Graphite) as OpenTSDB cells: the value's width and type, and
//! the timestamp in seconds or milliseconds as the schema stores it.

use super::PointError;
use tsgate_schema::rowkey::{base_time, MAX_TIMESTAMP_MS};
use tsgate_schema::{DataValue, RawPoint};

/// Integral values are stored as OpenTSDB integers (1–8 bytes, exact when read back as f64);
/// everything else, NaNs and the staleness marker included, as 8-byte floats with their bits.
pub fn data_value(v: f64) -> DataValue {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 9.0e18 && !(v == 0.0 && v.is_sign_negative())
    {
        DataValue::Int(v as i64)
    } else {
        DataValue::F64(v)
    }
}

/// A Prometheus ms timestamp as the schema's timestamp: whole seconds as seconds (2-byte
/// qualifiers), anything else as milliseconds.
pub fn encode_sample(ts_ms: i64, v: f64) -> Result<(u32, RawPoint), PointError> {
    encode_value(ts_ms, data_value(v))
}

/// [`encode_sample`] of a value already typed (an integer sent as one stays exact past 2^53).
pub fn encode_value(ts_ms: i64, v: DataValue) -> Result<(u32, RawPoint), PointError> {
    if ts_ms < 0 || ts_ms as u64 > MAX_TIMESTAMP_MS {
        return Err(PointError::Invalid(format!(
            "timestamp {ts_ms} ms is outside 0..={MAX_TIMESTAMP_MS}"
        )));
    }
    let ts_ms = ts_ms as u64;
    let ts = if ts_ms.is_multiple_of(1000) {
        ts_ms / 1000
    } else if tsgate_schema::rowkey::is_ms(ts_ms) {
        ts_ms
    } else {
        return Err(PointError::Invalid(format!(
            "timestamp {ts_ms} ms: sub-second times before 1970-02-19 cannot be stored"
        )));
    };
    let base = base_time(ts);
    RawPoint::encode_allow_non_finite(ts, base, v)
        .map(|r| (base, r))
        .map_err(|e| PointError::Invalid(e.to_string()))
}
