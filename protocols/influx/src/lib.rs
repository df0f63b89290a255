//! InfluxDB line protocol, pure and without I/O:
//!
//! ```text
//! measurement[,tag=value…] field=value[,field=value…] [timestamp]
//! ```
//!
//! * [`lines`] splits a body into lines (blank lines and `#` comments skipped), numbered from 1;
//! * [`parse_line`] parses one line into a [`Line`] whose names borrow from the body unless an
//!   escape had to be undone;
//! * [`Precision`] reads the `precision` parameter of the 1.x (`n u ms s m h`) and 2.x
//!   (`ns us ms s`) write APIs and turns timestamps into milliseconds;
//! * [`metric_name`] joins measurement and field as VictoriaMetrics does (`cpu` + `usage_user` →
//!   `cpu_usage_user`).
//!
//! Escapes follow InfluxDB: in a measurement `\,` and `\ `; in tag keys, tag values and field
//! keys also `\=`; in string field values `\"` and `\\`. `\\` stands for one backslash
//! everywhere; a backslash before any other character is kept as it is.

use std::borrow::Cow;

/// One field's value as sent.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldValue<'a> {
    /// `1`, `-1.5`, `2e3` (finite only: InfluxDB refuses NaN and infinities).
    Float(f64),
    /// `1i`
    Int(i64),
    /// `1u`
    UInt(u64),
    /// `t`, `T`, `true`, `True`, `TRUE`, `f`, `F`, `false`, `False`, `FALSE`
    Bool(bool),
    /// `"text"`, escapes undone.
    Str(Cow<'a, str>),
}

/// One parsed line.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Line<'a> {
    pub measurement: Cow<'a, str>,
    /// In the order sent.
    pub tags: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    /// In the order sent; at least one.
    pub fields: Vec<(Cow<'a, str>, FieldValue<'a>)>,
    /// As sent, in the request's precision; `None`: the server's time.
    pub timestamp: Option<i64>,
}

/// Why a line cannot be parsed (the wording follows InfluxDB's where it has one).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    #[error("missing measurement")]
    MissingMeasurement,
    #[error("missing fields")]
    MissingFields,
    #[error("missing tag key")]
    MissingTagKey,
    #[error("missing tag value")]
    MissingTagValue,
    #[error("missing field key")]
    MissingFieldKey,
    #[error("missing field value")]
    MissingFieldValue,
    #[error("invalid field format")]
    InvalidFieldFormat,
    #[error("unterminated string field value")]
    UnterminatedString,
    #[error("invalid number {0:?}")]
    InvalidNumber(String),
    #[error("invalid boolean {0:?}")]
    InvalidBoolean(String),
    #[error("bad timestamp {0:?}")]
    BadTimestamp(String),
    #[error("names and string values must be UTF-8")]
    NotUtf8,
}

/// The body's lines that hold a point: `(line number from 1, the line)`, without its `\r\n`
/// or `\n`. Blank lines and comments (`#` first) are skipped.
pub fn lines(body: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    body.split(|&b| b == b'\n')
        .enumerate()
        .filter_map(|(i, l)| {
            let l = l.strip_suffix(b"\r").unwrap_or(l);
            let start = l.iter().position(|b| !b.is_ascii_whitespace())?;
            let l = &l[start..];
            (l[0] != b'#').then_some((i + 1, l))
        })
}

/// Position of the first `stop` byte not escaped by a backslash (a backslash escapes the
/// byte after it, whatever it is, for finding boundaries).
fn find_unescaped(b: &[u8], stop: impl Fn(u8) -> bool) -> Option<usize> {
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            c if stop(c) => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// Undoes the escapes of a name (`specials` besides the backslash itself).
fn unescape<'a>(b: &'a [u8], specials: &[u8]) -> Result<Cow<'a, str>, LineError> {
    let s = std::str::from_utf8(b).map_err(|_| LineError::NotUtf8)?;
    if !b.contains(&b'\\') {
        return Ok(Cow::Borrowed(s));
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(&n) = chars.peek() {
                if n == '\\' || (n.is_ascii() && specials.contains(&(n as u8))) {
                    out.push(n);
                    chars.next();
                    continue;
                }
            }
        }
        out.push(c);
    }
    Ok(Cow::Owned(out))
}

const MEASUREMENT: &[u8] = b", ";
const KEY: &[u8] = b",= ";

/// Parses one line (as [`lines`] yields it).
pub fn parse_line(line: &[u8]) -> Result<Line<'_>, LineError> {
    let mut out = Line::default();
    parse_into(line, &mut out)?;
    Ok(out)
}

/// Parses one line into `out`, reusing its vectors (a request's lines one after another
/// allocate only where an escape must be undone).
pub fn parse_into<'a>(line: &'a [u8], out: &mut Line<'a>) -> Result<(), LineError> {
    out.tags.clear();
    out.fields.clear();
    out.timestamp = None;
    // The series key: up to the first unescaped space.
    let key_end = find_unescaped(line, |c| c == b' ').ok_or(LineError::MissingFields)?;
    let key = &line[..key_end];
    let m_end = find_unescaped(key, |c| c == b',').unwrap_or(key.len());
    if m_end == 0 {
        return Err(LineError::MissingMeasurement);
    }
    out.measurement = unescape(&key[..m_end], MEASUREMENT)?;
    let mut rest = &key[m_end..];
    while let Some(r) = rest.strip_prefix(b",") {
        let end = find_unescaped(r, |c| c == b',').unwrap_or(r.len());
        let pair = &r[..end];
        let eq = find_unescaped(pair, |c| c == b'=').ok_or(LineError::MissingTagValue)?;
        if eq == 0 {
            return Err(LineError::MissingTagKey);
        }
        if eq + 1 == pair.len() {
            return Err(LineError::MissingTagValue);
        }
        out.tags
            .push((unescape(&pair[..eq], KEY)?, unescape(&pair[eq + 1..], KEY)?));
        rest = &r[end..];
    }
    // Fields, after any run of spaces.
    let mut f = &line[key_end..];
    while let Some(r) = f.strip_prefix(b" ") {
        f = r;
    }
    if f.is_empty() {
        return Err(LineError::MissingFields);
    }
    loop {
        let eq = find_unescaped(f, |c| c == b'=' || c == b' ' || c == b',')
            .ok_or(LineError::MissingFieldValue)?;
        if f[eq] != b'=' {
            return Err(LineError::MissingFieldValue);
        }
        if eq == 0 {
            return Err(LineError::MissingFieldKey);
        }
        let name = unescape(&f[..eq], KEY)?;
        let v = &f[eq + 1..];
        let (value, used) = field_value(v)?;
        out.fields.push((name, value));
        f = &v[used..];
        match f.first() {
            Some(b',') => f = &f[1..],
            Some(b' ') | None => break,
            Some(_) => return Err(LineError::InvalidFieldFormat),
        }
    }
    let ts = std::str::from_utf8(f)
        .map_err(|_| LineError::NotUtf8)?
        .trim_matches(|c: char| c == ' ' || c == '\t');
    if !ts.is_empty() {
        out.timestamp = Some(
            ts.parse::<i64>()
                .map_err(|_| LineError::BadTimestamp(ts.to_string()))?,
        );
    }
    Ok(())
}

/// One field value at the start of `v`, and how many bytes it took.
fn field_value(v: &[u8]) -> Result<(FieldValue<'_>, usize), LineError> {
    if v.first() == Some(&b'"') {
        let body = &v[1..];
        let close = find_unescaped(body, |c| c == b'"').ok_or(LineError::UnterminatedString)?;
        let raw = &body[..close];
        let s = unescape(raw, b"\"")?;
        return Ok((FieldValue::Str(s), close + 2));
    }
    let end = v
        .iter()
        .position(|&c| c == b',' || c == b' ')
        .unwrap_or(v.len());
    let t = std::str::from_utf8(&v[..end]).map_err(|_| LineError::NotUtf8)?;
    if t.is_empty() {
        return Err(LineError::MissingFieldValue);
    }
    let number = |t: &str| LineError::InvalidNumber(t.to_string());
    let value = match t.as_bytes()[t.len() - 1] {
        b'i' => FieldValue::Int(t[..t.len() - 1].parse().map_err(|_| number(t))?),
        b'u' => FieldValue::UInt(t[..t.len() - 1].parse().map_err(|_| number(t))?),
        _ => match t {
            "t" | "T" | "true" | "True" | "TRUE" => FieldValue::Bool(true),
            "f" | "F" | "false" | "False" | "FALSE" => FieldValue::Bool(false),
            _ => {
                let first = t.as_bytes()[0];
                if !(first.is_ascii_digit() || matches!(first, b'-' | b'+' | b'.')) {
                    return Err(LineError::InvalidBoolean(t.to_string()));
                }
                // Rust also reads `inf` and `NaN`: InfluxDB refuses both.
                let f: f64 = t.parse().map_err(|_| number(t))?;
                if !f.is_finite() {
                    return Err(number(t));
                }
                FieldValue::Float(f)
            }
        },
    };
    Ok((value, end))
}

/// The unit of a request's timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    Nanos,
    Micros,
    Millis,
    Seconds,
    Minutes,
    Hours,
}

impl Precision {
    /// The 1.x `/write` API's `precision` (`n`, `u`, `ms`, `s`, `m`, `h`; `ns` and `us` are
    /// read too); absent or empty means nanoseconds.
    pub fn v1(p: Option<&str>) -> Option<Precision> {
        match p.unwrap_or("") {
            "" | "n" | "ns" => Some(Precision::Nanos),
            "u" | "us" | "µ" => Some(Precision::Micros),
            "ms" => Some(Precision::Millis),
            "s" => Some(Precision::Seconds),
            "m" => Some(Precision::Minutes),
            "h" => Some(Precision::Hours),
            _ => None,
        }
    }

    /// The 2.x `/api/v2/write` API's `precision` (`ns`, `us`, `ms`, `s`); absent means ns.
    pub fn v2(p: Option<&str>) -> Option<Precision> {
        match p.unwrap_or("ns") {
            "ns" => Some(Precision::Nanos),
            "us" => Some(Precision::Micros),
            "ms" => Some(Precision::Millis),
            "s" => Some(Precision::Seconds),
            _ => None,
        }
    }

    /// A timestamp in this unit as milliseconds (finer units rounded down), `None` when it
    /// does not fit.
    pub fn to_millis(self, ts: i64) -> Option<i64> {
        match self {
            Precision::Nanos => Some(ts.div_euclid(1_000_000)),
            Precision::Micros => Some(ts.div_euclid(1_000)),
            Precision::Millis => Some(ts),
            Precision::Seconds => ts.checked_mul(1_000),
            Precision::Minutes => ts.checked_mul(60_000),
            Precision::Hours => ts.checked_mul(3_600_000),
        }
    }
}

/// The metric name of one field: `measurement_field`, as VictoriaMetrics names it (its
/// `-influxMeasurementFieldSeparator` default, without `-influxSkipSingleField`).
pub fn metric_name(measurement: &str, field: &str) -> String {
    let mut s = String::with_capacity(measurement.len() + 1 + field.len());
    s.push_str(measurement);
    s.push('_');
    s.push_str(field);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn p(s: &str) -> Line<'_> {
        parse_line(s.as_bytes()).unwrap()
    }

    #[test]
    fn full_line() {
        let l = p(
            r#"cpu,host=web01,region=us\ west usage_user=1.5,n=2i,u=3u,ok=T,msg="a \"b\" \\c" 1700000000000000000"#,
        );
        assert_eq!(l.measurement, "cpu");
        assert_eq!(
            l.tags,
            vec![
                ("host".into(), "web01".into()),
                ("region".into(), "us west".into())
            ]
        );
        assert_eq!(
            l.fields,
            vec![
                ("usage_user".into(), FieldValue::Float(1.5)),
                ("n".into(), FieldValue::Int(2)),
                ("u".into(), FieldValue::UInt(3)),
                ("ok".into(), FieldValue::Bool(true)),
                ("msg".into(), FieldValue::Str(r#"a "b" \c"#.into())),
            ]
        );
        assert_eq!(l.timestamp, Some(1_700_000_000_000_000_000));
    }

    #[test]
    fn escapes_in_names() {
        let l = p(r"weird\,meas\ x,tag\=k=v\ x\,y field\ x=1,back\\slash=2 5");
        assert_eq!(l.measurement, "weird,meas x");
        assert_eq!(l.tags, vec![("tag=k".into(), "v x,y".into())]);
        assert_eq!(l.fields[0].0, "field x");
        assert_eq!(l.fields[1].0, r"back\slash");
        // A backslash before an ordinary character stays.
        assert_eq!(p(r"a\b f=1").measurement, r"a\b");
        // Commas and spaces inside a string field are not separators.
        let l = p(r#"m s="x, y=z",v=1 7"#);
        assert_eq!(l.fields.len(), 2);
        assert_eq!(l.fields[0].1, FieldValue::Str("x, y=z".into()));
        assert_eq!(l.timestamp, Some(7));
    }

    #[test]
    fn no_timestamp_and_bools() {
        let l = p("m f=false,g=t,h=-1e3,i=-5i");
        assert_eq!(l.timestamp, None);
        assert_eq!(
            l.fields.iter().map(|f| f.1.clone()).collect::<Vec<_>>(),
            vec![
                FieldValue::Bool(false),
                FieldValue::Bool(true),
                FieldValue::Float(-1000.0),
                FieldValue::Int(-5)
            ]
        );
    }

    #[test]
    fn errors() {
        let e = |s: &str| parse_line(s.as_bytes()).unwrap_err();
        assert_eq!(e("bad line here"), LineError::MissingFieldValue);
        assert_eq!(e("nofields"), LineError::MissingFields);
        assert_eq!(e("m "), LineError::MissingFields);
        assert_eq!(e(",t=1 f=1"), LineError::MissingMeasurement);
        assert_eq!(e("m,t= f=1"), LineError::MissingTagValue);
        assert_eq!(e("m,=v f=1"), LineError::MissingTagKey);
        assert_eq!(e("m =1"), LineError::MissingFieldKey);
        assert_eq!(e("m f="), LineError::MissingFieldValue);
        assert_eq!(e(r#"m f="open"#), LineError::UnterminatedString);
        assert_eq!(e("m f=1x"), LineError::InvalidNumber("1x".into()));
        assert_eq!(e("m f=nan"), LineError::InvalidBoolean("nan".into()));
        assert_eq!(e("m f=inf"), LineError::InvalidBoolean("inf".into()));
        assert_eq!(e("m f=1e999"), LineError::InvalidNumber("1e999".into()));
        assert_eq!(
            e("m f=9223372036854775808i"),
            LineError::InvalidNumber("9223372036854775808i".into())
        );
        assert_eq!(e("m f=-1u"), LineError::InvalidNumber("-1u".into()));
        assert_eq!(e("m f=1 12x"), LineError::BadTimestamp("12x".into()));
        assert_eq!(e(r#"m f="a"x"#), LineError::InvalidFieldFormat);
        assert_eq!(parse_line(b"m\xff f=1").unwrap_err(), LineError::NotUtf8);
    }

    #[test]
    fn body_lines() {
        let body = b"# comment\n\na f=1\r\n  b f=2\n\t\nc f=3";
        let got: Vec<(usize, &[u8])> = lines(body).collect();
        assert_eq!(
            got,
            vec![(3, &b"a f=1"[..]), (4, &b"b f=2"[..]), (6, &b"c f=3"[..])]
        );
    }

    #[test]
    fn precisions() {
        assert_eq!(Precision::v1(None), Some(Precision::Nanos));
        assert_eq!(Precision::v1(Some("h")), Some(Precision::Hours));
        assert_eq!(Precision::v1(Some("ns")), Some(Precision::Nanos));
        assert_eq!(Precision::v1(Some("x")), None);
        assert_eq!(Precision::v2(Some("m")), None);
        assert_eq!(Precision::v2(Some("us")), Some(Precision::Micros));
        let t = 1_700_000_000_123_456_789i64;
        assert_eq!(Precision::Nanos.to_millis(t), Some(1_700_000_000_123));
        assert_eq!(
            Precision::Micros.to_millis(t / 1000),
            Some(1_700_000_000_123)
        );
        assert_eq!(
            Precision::Seconds.to_millis(1_700_000_000),
            Some(1_700_000_000_000)
        );
        assert_eq!(Precision::Minutes.to_millis(2), Some(120_000));
        assert_eq!(Precision::Hours.to_millis(i64::MAX), None);
        assert_eq!(Precision::Nanos.to_millis(-1), Some(-1));
    }

    #[test]
    fn names() {
        assert_eq!(metric_name("cpu", "usage_user"), "cpu_usage_user");
        assert_eq!(metric_name("mem", "value"), "mem_value");
    }

    fn escape(s: &str, specials: &str) -> String {
        let mut o = String::new();
        for c in s.chars() {
            if c == '\\' || specials.contains(c) {
                o.push('\\');
            }
            o.push(c);
        }
        o
    }

    proptest! {
        /// Whatever the names hold, escaping them as a client does parses back to them.
        #[test]
        fn escaped_names_round_trip(
            m in "[^\n\r]{1,12}",
            k in "[^\n\r]{1,8}",
            v in "[^\n\r]{1,8}",
            f in "[^\n\r]{1,8}",
            s in "[^\n\r]{0,8}",
            x in -1e12f64..1e12,
            ts in proptest::option::of(any::<i64>()),
        ) {
            // Leading whitespace and `#` would make a measurement a blank line or comment.
            prop_assume!(!m.starts_with(|c: char| c.is_ascii_whitespace() || c == '#'));
            let line = format!(
                "{},{}={} {}={x:?},s=\"{}\"{}",
                escape(&m, ", "), escape(&k, ",= "), escape(&v, ",= "), escape(&f, ",= "),
                escape(&s, "\""), ts.map(|t| format!(" {t}")).unwrap_or_default()
            );
            let l = parse_line(line.as_bytes()).map_err(|e| TestCaseError::fail(format!("{line}: {e}")))?;
            prop_assert_eq!(&l.measurement, &m);
            prop_assert_eq!(&l.tags, &vec![(Cow::from(k.as_str()), Cow::from(v.as_str()))]);
            prop_assert_eq!(&l.fields[0], &(Cow::from(f.as_str()), FieldValue::Float(x)));
            prop_assert_eq!(&l.fields[1].1, &FieldValue::Str(s.as_str().into()));
            prop_assert_eq!(l.timestamp, ts);
        }

        #[test]
        fn never_panics(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            for (_, l) in lines(&b) {
                let _ = parse_line(l);
            }
        }
    }
}
