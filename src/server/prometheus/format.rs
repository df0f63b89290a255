//! Prometheus' JSON number and timestamp formatting (Go's strconv), and its response envelope.

use crate::server::http::Reply;
use http::StatusCode;

/// A sample value in a vector or matrix: Go's `'f'` format, switching to `'e'` below 1e-6 and
/// at 1e21 and above; `+Inf`, `-Inf`, `NaN`.
pub fn sample_value(v: f64) -> String {
    let mut s = String::new();
    push_sample_value(&mut s, v);
    s
}

/// [`sample_value`] appended to `out`.
fn push_sample_value(out: &mut String, v: f64) {
    if v.is_nan() {
        out.push_str("NaN");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "+Inf" } else { "-Inf" });
    } else if v != 0.0 && !(1e-6..1e21).contains(&v.abs()) {
        out.push_str(&go_exp(v));
    } else {
        let mut buf = ryu::Buffer::new();
        match tsgate_common::numfmt::plain_shortest(v, &mut buf) {
            // Go's 'f' leaves no `.0` on integral values.
            Some(s) => out.push_str(s.strip_suffix(".0").unwrap_or(s)),
            None => tsgate_common::numfmt::push_plain(out, v),
        }
    }
}

/// A scalar value: plain `'f'` formatting, no exponent switch.
pub fn scalar_value(v: f64) -> String {
    if v.is_nan() || v.is_infinite() {
        return sample_value(v);
    }
    tsgate_common::numfmt::plain(v)
}

/// Go's `%e` with shortest digits: `1e-07`, `1.5e+21`.
fn go_exp(v: f64) -> String {
    tsgate_common::numfmt::Shortest::of(v).exp_form()
}

/// A vector/matrix timestamp: seconds, with `.` and exactly 3 digits when ms are non-zero.
pub fn timestamp(ms: i64) -> String {
    let mut s = String::new();
    push_timestamp(&mut s, ms);
    s
}

/// [`timestamp`] appended to `out`.
fn push_timestamp(out: &mut String, ms: i64) {
    use std::fmt::Write;
    if ms < 0 {
        out.push('-');
    }
    let a = ms.unsigned_abs();
    out.push_str(itoa::Buffer::new().format(a / 1000));
    let frac = a % 1000;
    if frac != 0 {
        let _ = write!(out, ".{frac:03}");
    }
}

/// The `[ts, "value"]` pair of vectors and matrices, as raw JSON.
pub fn point(ms: i64, v: f64) -> String {
    let mut s = String::new();
    push_point(&mut s, ms, v);
    s
}

/// [`point`] appended to `out` (a matrix writes thousands: no string per point).
pub fn push_point(out: &mut String, ms: i64, v: f64) {
    out.push('[');
    push_timestamp(out, ms);
    out.push_str(",\"");
    push_sample_value(out, v);
    out.push_str("\"]");
}

pub fn json_reply(status: StatusCode, body: String) -> Reply {
    http::Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(body.into_bytes())
        .expect("valid")
}

/// `{"status":"success","data":…[,"warnings":[…]]}` around already-rendered JSON.
pub fn success_raw(data: &str, warnings: &[String]) -> Reply {
    let mut body = format!("{{\"status\":\"success\",\"data\":{data}");
    if !warnings.is_empty() {
        body.push_str(&format!(
            ",\"warnings\":{}",
            serde_json::to_string(warnings).unwrap_or_default()
        ));
    }
    body.push('}');
    json_reply(StatusCode::OK, body)
}

/// Prometheus' error types and the codes 2.42 answers them with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorType {
    BadData,
    Execution,
    Timeout,
    Internal,
    Unavailable,
}

impl ErrorType {
    fn parts(self) -> (&'static str, StatusCode) {
        match self {
            ErrorType::BadData => ("bad_data", StatusCode::BAD_REQUEST),
            ErrorType::Execution => ("execution", StatusCode::UNPROCESSABLE_ENTITY),
            ErrorType::Timeout => ("timeout", StatusCode::SERVICE_UNAVAILABLE),
            ErrorType::Internal => ("internal", StatusCode::INTERNAL_SERVER_ERROR),
            ErrorType::Unavailable => ("unavailable", StatusCode::SERVICE_UNAVAILABLE),
        }
    }
}

pub fn error(kind: ErrorType, msg: &str) -> Reply {
    let (t, status) = kind.parts();
    json_reply(
        status,
        serde_json::json!({"status": "error", "errorType": t, "error": msg}).to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The appending form writes what the timestamp and value formatters write.
        #[test]
        fn push_point_matches_the_formatters(ms in proptest::prelude::any::<i64>(), v in proptest::prelude::any::<f64>(),
                                             small in -2_000_000i64..2_000_000, w in -1e7f64..1e7) {
            for (ms, v) in [(ms, v), (small, w), (small, v), (ms, 0.0), (ms, -0.0), (small, 1e-7), (small, 1e21)] {
                let mut out = String::from("x");
                push_point(&mut out, ms, v);
                proptest::prop_assert_eq!(&out[1..], format!("[{},\"{}\"]", timestamp(ms), sample_value(v)));
            }
        }
    }

    #[test]
    fn go_float_formatting() {
        assert_eq!(sample_value(0.1), "0.1");
        assert_eq!(sample_value(123456789.123), "123456789.123");
        assert_eq!(sample_value(1e-7), "1e-07");
        assert_eq!(sample_value(1e21), "1e+21");
        assert_eq!(sample_value(1.5e300), "1.5e+300");
        assert_eq!(sample_value(f64::INFINITY), "+Inf");
        assert_eq!(sample_value(f64::NEG_INFINITY), "-Inf");
        assert_eq!(sample_value(f64::NAN), "NaN");
        assert_eq!(sample_value(-0.0), "-0");
        assert_eq!(sample_value(2.0), "2");
        assert_eq!(scalar_value(1e-7), "0.0000001");
        assert_eq!(scalar_value(1e21), "1000000000000000000000");
    }

    #[test]
    fn timestamps() {
        assert_eq!(timestamp(1500), "1.500");
        assert_eq!(timestamp(250), "0.250");
        assert_eq!(timestamp(1_000_000), "1000");
        assert_eq!(timestamp(-1500), "-1.500");
        assert_eq!(timestamp(4000), "4");
    }
}
