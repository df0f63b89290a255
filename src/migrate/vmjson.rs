//! VictoriaMetrics' JSON-lines format, one series per line:
//! `{"metric":{"__name__":"up","job":"node"},"values":[1,0.5],"timestamps":[1700000000000,1700000010000]}`.
//!
//! Values keep their type both ways: an integer is written without a fraction (`42`) and read
//! back as an integer; a float always has one (`42.0`, `0.1`, `1e300`) and is read back as a
//! float. Non-finite values are written `NaN`, `+Inf`, `-Inf`, bare, as VictoriaMetrics writes
//! and reads them (not strict JSON). Timestamps are milliseconds.

use std::fmt::Write as _;
use tsgate_schema::DataValue;

/// Why a line cannot be imported; in VictoriaMetrics' words where it has them.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    #[error("not UTF-8: {0}")]
    NotUtf8(#[from] std::str::Utf8Error),
    #[error("cannot parse json line: {0}")]
    Json(#[from] serde_json::Error),
    #[error("missing tags")]
    MissingTags,
    #[error("label {key:?} has the value {value}, not a string")]
    LabelNotString { key: String, value: String },
    #[error("missing `values` array")]
    MissingValues,
    #[error("missing `timestamps` array")]
    MissingTimestamps,
    #[error(
        "`timestamps` array size must match `values` array size; got {timestamps}; want {values}"
    )]
    SizeMismatch { timestamps: usize, values: usize },
    #[error("cannot read timestamp at position {at}: {value} is not an integer")]
    Timestamp { at: usize, value: String },
    /// A JSON number no f64 holds.
    #[error("cannot read value at position {at}: {value}")]
    Value { at: usize, value: String },
    #[error("cannot read value at position {at}: {value} is not a number")]
    NotANumber { at: usize, value: String },
    /// The labels cannot be stored (`prometheus.max_tags`, a bad name).
    #[error(transparent)]
    Labels(#[from] crate::prometheus::labels::LabelError),
}

/// One parsed line: its labels (as sent, `__name__` among them) and its points.
#[derive(Debug, Clone, PartialEq)]
pub struct VmSeries {
    pub labels: Vec<(String, String)>,
    pub points: Vec<(i64, DataValue)>,
}

/// Appends one value in the format's spelling.
pub fn push_value(out: &mut String, v: DataValue) {
    match v {
        DataValue::Int(i) => {
            out.push_str(itoa::Buffer::new().format(i));
        }
        DataValue::F32(f) => push_float(out, f as f64),
        DataValue::F64(f) => push_float(out, f),
    }
}

fn push_float(out: &mut String, f: f64) {
    if f.is_nan() {
        out.push_str("NaN");
    } else if f.is_infinite() {
        out.push_str(if f > 0.0 { "+Inf" } else { "-Inf" });
    } else {
        // ryu always writes a fraction or an exponent: the value reads back as a float.
        out.push_str(ryu::Buffer::new().format_finite(f));
    }
}

/// One line (with its `\n`) for a series: `__name__` first, then the other labels in order.
pub fn push_line(out: &mut String, labels: &[(String, String)], points: &[(u64, DataValue)]) {
    out.push_str("{\"metric\":{");
    let mut first = true;
    let name = labels.iter().filter(|(k, _)| k == "__name__");
    let rest = labels.iter().filter(|(k, _)| k != "__name__");
    for (k, v) in name.chain(rest) {
        if !first {
            out.push(',');
        }
        first = false;
        push_json_str(out, k);
        out.push(':');
        push_json_str(out, v);
    }
    out.push_str("},\"values\":[");
    for (i, (_, v)) in points.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_value(out, *v);
    }
    out.push_str("],\"timestamps\":[");
    for (i, (t, _)) in points.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{t}");
    }
    out.push_str("]}\n");
}

fn push_json_str(out: &mut String, s: &str) {
    out.push_str(&serde_json::to_string(s).expect("a string serialises"));
}

/// What stands in for a bare `NaN`/`+Inf`/`-Inf`/`Inf` while serde_json reads the line: a
/// string starting with a NUL, which valid JSON cannot hold unescaped, so no sent string is
/// ever taken for one.
const BARE: char = '\u{0}';

/// The line with bare non-finite tokens outside strings quoted as `"\0NaN"` etc.
fn quote_bare_tokens(line: &str) -> std::borrow::Cow<'_, str> {
    if !line.contains("NaN") && !line.contains("Inf") {
        return std::borrow::Cow::Borrowed(line);
    }
    let b = line.as_bytes();
    let mut out = String::with_capacity(line.len() + 16);
    let (mut i, mut in_str, mut from) = (0, false, 0);
    while i < b.len() {
        let c = b[i];
        if in_str {
            match c {
                b'\\' => i += 1,
                b'"' => in_str = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        if c == b'"' {
            in_str = true;
            i += 1;
            continue;
        }
        let token = ["NaN", "+Inf", "-Inf", "Inf"]
            .into_iter()
            .find(|t| b[i..].starts_with(t.as_bytes()));
        match token {
            Some(t) => {
                out.push_str(&line[from..i]);
                let _ = write!(out, "\"\\u0000{t}\"");
                i += t.len();
                from = i;
            }
            None => i += 1,
        }
    }
    out.push_str(&line[from..]);
    std::borrow::Cow::Owned(out)
}

fn value_of(v: &serde_json::Value, i: usize) -> Result<DataValue, LineError> {
    match v {
        serde_json::Value::Number(n) => {
            if let Some(i) = n.as_i64().filter(|_| !n.is_f64()) {
                return Ok(DataValue::Int(i));
            }
            n.as_f64()
                .map(DataValue::F64)
                .ok_or_else(|| LineError::Value {
                    at: i,
                    value: n.to_string(),
                })
        }
        serde_json::Value::String(s) if s.starts_with(BARE) => Ok(DataValue::F64(match &s[1..] {
            "NaN" => f64::NAN,
            "-Inf" => f64::NEG_INFINITY,
            _ => f64::INFINITY,
        })),
        other => Err(LineError::NotANumber {
            at: i,
            value: other.to_string(),
        }),
    }
}

/// Parses one line. Errors say what VictoriaMetrics' parser says of the same line, in its words
/// where it has them.
pub fn parse_line(line: &str) -> Result<VmSeries, LineError> {
    #[derive(serde::Deserialize)]
    struct Line {
        metric: Option<serde_json::Map<String, serde_json::Value>>,
        values: Option<Vec<serde_json::Value>>,
        timestamps: Option<Vec<serde_json::Value>>,
    }
    let text = quote_bare_tokens(line.trim());
    let l: Line = serde_json::from_str(&text)?;
    let metric = l
        .metric
        .filter(|m| !m.is_empty())
        .ok_or(LineError::MissingTags)?;
    let mut labels = Vec::with_capacity(metric.len());
    for (k, v) in metric {
        match v {
            serde_json::Value::String(s) => labels.push((k, s)),
            other => {
                return Err(LineError::LabelNotString {
                    key: k,
                    value: other.to_string(),
                })
            }
        }
    }
    let values = l
        .values
        .filter(|v| !v.is_empty())
        .ok_or(LineError::MissingValues)?;
    let timestamps = l
        .timestamps
        .filter(|t| !t.is_empty())
        .ok_or(LineError::MissingTimestamps)?;
    if values.len() != timestamps.len() {
        return Err(LineError::SizeMismatch {
            timestamps: timestamps.len(),
            values: values.len(),
        });
    }
    let mut points = Vec::with_capacity(values.len());
    for (i, (v, t)) in values.iter().zip(&timestamps).enumerate() {
        let t = t.as_i64().ok_or_else(|| LineError::Timestamp {
            at: i,
            value: t.to_string(),
        })?;
        points.push((t, value_of(v, i)?));
    }
    Ok(VmSeries { labels, points })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(l: &[(&str, &str)]) -> Vec<(String, String)> {
        l.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn lines_keep_value_types_and_read_back() {
        let mut out = String::new();
        push_line(
            &mut out,
            &labels(&[("job", "a\"b"), ("__name__", "up")]),
            &[
                (1000, DataValue::Int(42)),
                (2000, DataValue::F64(42.0)),
                (3000, DataValue::F64(0.1)),
                (4000, DataValue::F64(f64::NAN)),
                (5000, DataValue::F64(f64::NEG_INFINITY)),
                (6000, DataValue::F32(0.5)),
            ],
        );
        assert_eq!(
            out,
            "{\"metric\":{\"__name__\":\"up\",\"job\":\"a\\\"b\"},\"values\":[42,42.0,0.1,NaN,-Inf,0.5],\"timestamps\":[1000,2000,3000,4000,5000,6000]}\n"
        );
        let back = parse_line(&out).unwrap();
        assert_eq!(back.labels, labels(&[("__name__", "up"), ("job", "a\"b")]));
        assert_eq!(back.points[0], (1000, DataValue::Int(42)));
        assert_eq!(back.points[1], (2000, DataValue::F64(42.0)));
        assert_eq!(back.points[2], (3000, DataValue::F64(0.1)));
        assert!(matches!(back.points[3].1, DataValue::F64(f) if f.is_nan()));
        assert_eq!(back.points[4], (5000, DataValue::F64(f64::NEG_INFINITY)));
        assert_eq!(back.points[5], (6000, DataValue::F64(0.5)));
    }

    #[test]
    fn bare_tokens_inside_strings_stay_strings() {
        let s = parse_line(
            r#"{"metric":{"__name__":"NaN","x":"+Inf"},"values":[+Inf,Inf],"timestamps":[1,2]}"#,
        )
        .unwrap();
        assert_eq!(s.labels, labels(&[("__name__", "NaN"), ("x", "+Inf")]));
        assert_eq!(s.points[0].1, DataValue::F64(f64::INFINITY));
        // A quoted value is refused, as VictoriaMetrics refuses it.
        assert!(
            parse_line(r#"{"metric":{"__name__":"a"},"values":["NaN"],"timestamps":[1]}"#)
                .unwrap_err()
                .to_string()
                .contains("not a number")
        );
    }

    #[test]
    fn bad_lines_are_named_as_victoriametrics_names_them() {
        let e = |l: &str| parse_line(l).unwrap_err().to_string();
        assert!(e("not json").starts_with("cannot parse json line"));
        assert_eq!(
            e(r#"{"metric":{"__name__":"x"},"values":[1,2],"timestamps":[1]}"#),
            "`timestamps` array size must match `values` array size; got 1; want 2"
        );
        assert_eq!(
            e(r#"{"metric":{},"values":[1],"timestamps":[1]}"#),
            "missing tags"
        );
        assert_eq!(
            e(r#"{"metric":{"__name__":"x"},"values":[],"timestamps":[]}"#),
            "missing `values` array"
        );
        assert!(
            e(r#"{"metric":{"__name__":"x"},"values":[1],"timestamps":["1"]}"#)
                .contains("timestamp at position 0")
        );
    }
}
