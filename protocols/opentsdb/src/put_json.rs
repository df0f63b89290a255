//! The `/api/put` body codec (spec §8.3), mirroring OpenTSDB 2.4's Jackson binding of
//! `IncomingDataPoint { String metric; long timestamp; String value; HashMap tags; String tsuid }`:
//!
//! * String fields accept JSON strings, and also numbers / booleans / `NaN`-style tokens as
//!   their literal text (Jackson's scalar coercion) – so `"value": 42.0` stays the text `42.0`
//!   and is classified as a float, `"value": 42` as an integer. `null` leaves the field unset;
//!   an array or object fails the whole body.
//! * `timestamp` is a Java `long` (0 when missing or `null`): integers as is; floats truncated
//!   toward zero; strings trimmed, `""`/`"null"` → 0, else `Long.parseLong`; anything else, or
//!   out of `long` range, fails the whole body ("Unable to parse the given JSON").
//! * `tags` must be an object or `null`; repeated keys keep the last value (at the first key's
//!   position); tag values may be `null`.
//! * Unknown fields are skipped, repeated fields keep the last value, and anything after the
//!   root value is ignored (Jackson's `FAIL_ON_TRAILING_TOKENS` is off).

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use crate::javamap;
use crate::json::{PResult, Parser, Token};
use crate::point::{check_parts, is_ms_timestamp, DataPoint, Limits, PointError, MAX_MS_TIMESTAMP};
use crate::value::{java_trim, parse_value, Value, ValueError};

/// A whole-body failure (HTTP 400 with this message / details).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyError {
    /// Empty (or blank) body.
    Missing,
    /// First non-blank char is neither `{` nor `[`.
    NotObjectOrArray,
    /// `[]`.
    NoDatapoints,
    /// JSON syntax or type error; carries the parser message (the `details`).
    Syntax(String),
}

impl BodyError {
    pub fn message(&self) -> &'static str {
        match self {
            BodyError::Missing => "Missing request content",
            BodyError::NotObjectOrArray => "The JSON must start as an object or an array",
            BodyError::NoDatapoints => "No datapoints found in content",
            BodyError::Syntax(_) => "Unable to parse the given JSON",
        }
    }

    pub fn details(&self) -> Option<&str> {
        match self {
            BodyError::Syntax(d) => Some(d),
            _ => None,
        }
    }
}

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for BodyError {}

/// Tag pairs as received; a value is `None` for JSON `null`.
pub type JsonTags<'a> = Vec<(Cow<'a, str>, Option<Cow<'a, str>>)>;

/// One deserialised `/api/put` point, before validation. Strings borrow from the body when
/// they contain no escapes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JsonPoint<'a> {
    pub metric: Option<Cow<'a, str>>,
    /// The Java `long` after Jackson's coercions; 0 when missing or `null`.
    pub timestamp: i64,
    /// The value's text: a JSON string as is, a JSON number as written.
    pub value: Option<Cow<'a, str>>,
    pub tags: Option<JsonTags<'a>>,
    /// Accepted and echoed back like OpenTSDB does; otherwise unused.
    pub tsuid: Option<Cow<'a, str>>,
    /// The `tags` object exactly as sent (from `{` to `}`), when `tags` holds one: the same
    /// text with the same metric is the same series, already checked (see `validate_known`).
    pub tags_raw: Option<&'a str>,
    /// A `null` element of the array (OpenTSDB reports it per point).
    pub is_null: bool,
}

fn owned(c: Cow<'_, str>) -> Cow<'static, str> {
    Cow::Owned(c.into_owned())
}

impl JsonPoint<'_> {
    pub fn into_owned(self) -> JsonPoint<'static> {
        JsonPoint {
            metric: self.metric.map(owned),
            timestamp: self.timestamp,
            value: self.value.map(owned),
            tags: self.tags.map(|t| {
                t.into_iter()
                    .map(|(k, v)| (owned(k), v.map(owned)))
                    .collect()
            }),
            tsuid: self.tsuid.map(owned),
            tags_raw: None,
            is_null: self.is_null,
        }
    }

    /// For a point whose metric and `tags_raw` were accepted before: its timestamp and value
    /// when [`JsonPoint::validate`] would accept it, without checking the names again (the
    /// same text passed those checks); `None` when it would not (`validate` says why).
    pub fn validate_known(&self) -> Option<(u64, Value)> {
        if self.is_null || self.timestamp <= 0 {
            return None;
        }
        let value = parse_value(self.value.as_deref().filter(|v| !v.is_empty())?).ok()?;
        let ts = self.timestamp as u64;
        // `check_parts`' checks that do not depend on the names.
        (value.is_finite() && !(is_ms_timestamp(ts) && ts > MAX_MS_TIMESTAMP))
            .then_some((ts, value))
    }

    /// OpenTSDB's per-point checks, in order; `Err` is the `error` text of the `details` entry.
    pub fn validate(&self, limits: &Limits) -> Result<DataPoint<'_>, PointError> {
        if self.is_null {
            return Err(PointError::NullPoint);
        }
        let metric = match self.metric.as_deref() {
            Some(m) if !m.is_empty() => m,
            _ => return Err(PointError::EmptyMetric),
        };
        if self.timestamp <= 0 {
            return Err(PointError::InvalidTimestamp);
        }
        let value = match self.value.as_deref() {
            Some(v) if !v.is_empty() => v,
            _ => return Err(PointError::EmptyValue),
        };
        let tags = match &self.tags {
            Some(t) if !t.is_empty() => t,
            _ => return Err(PointError::MissingTags),
        };
        let value = parse_value(value).map_err(|e| match e {
            ValueError::NumberFormat(_) => PointError::NotANumber,
            ValueError::NotFinite(base) => PointError::NotFinite {
                base,
                metric: metric.into(),
                timestamp: self.timestamp as u64,
            },
        })?;
        let ts = self.timestamp as u64;
        check_parts(
            metric,
            ts,
            &value,
            tags.len(),
            |i| (&*tags[i].0, tags[i].1.as_deref()),
            limits,
        )?;
        Ok(DataPoint {
            metric,
            timestamp: ts,
            value,
            // check_parts rejected null values.
            tags: tags
                .iter()
                .map(|(k, v)| (&**k, v.as_deref().unwrap_or("")))
                .collect(),
        })
    }

    /// The `datapoint` object of a `details` error entry, serialised like Jackson does:
    /// `metric`, `timestamp`, `value` (a string), `tags` (Java `HashMap` order), `tsuid`,
    /// omitting unset fields; `null` for a null element.
    pub fn echo(&self) -> Echo<'_> {
        Echo(self)
    }

    /// A whole `details` entry, `{"datapoint":{...},"error":"..."}` (Java `HashMap` order).
    pub fn error_detail<'b>(&'b self, error: &'b str) -> ErrorDetail<'b> {
        ErrorDetail { point: self, error }
    }
}

/// See [`JsonPoint::echo`].
pub struct Echo<'b>(&'b JsonPoint<'b>);

struct EchoTags<'b>(&'b JsonTags<'b>);

impl Serialize for EchoTags<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let keys: Vec<&str> = self.0.iter().map(|(k, _)| &**k).collect();
        let mut m = s.serialize_map(Some(keys.len()))?;
        for i in javamap::iteration_order(&keys) {
            m.serialize_entry(keys[i], &self.0[i].1.as_deref())?;
        }
        m.end()
    }
}

impl Serialize for Echo<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let p = self.0;
        if p.is_null {
            return s.serialize_unit();
        }
        let mut m = s.serialize_map(None)?;
        if let Some(v) = &p.metric {
            m.serialize_entry("metric", v)?;
        }
        m.serialize_entry("timestamp", &p.timestamp)?;
        if let Some(v) = &p.value {
            m.serialize_entry("value", v)?;
        }
        if let Some(t) = &p.tags {
            m.serialize_entry("tags", &EchoTags(t))?;
        }
        if let Some(v) = &p.tsuid {
            m.serialize_entry("tsuid", v)?;
        }
        m.end()
    }
}

/// See [`JsonPoint::error_detail`].
pub struct ErrorDetail<'b> {
    point: &'b JsonPoint<'b>,
    error: &'b str,
}

impl Serialize for ErrorDetail<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("datapoint", &self.point.echo())?;
        m.serialize_entry("error", self.error)?;
        m.end()
    }
}

/// Parses a (decompressed) `/api/put` body. Invalid UTF-8 is replaced with U+FFFD, as Java's
/// decoding does.
pub fn parse_body(body: &[u8]) -> Result<Vec<JsonPoint<'_>>, BodyError> {
    match std::str::from_utf8(body) {
        Ok(s) => parse_body_str(s),
        Err(_) => {
            let s = String::from_utf8_lossy(body).into_owned();
            let points = parse_body_str(&s)?;
            Ok(points.into_iter().map(JsonPoint::into_owned).collect())
        }
    }
}

/// [`parse_body`] for an already decoded body.
pub fn parse_body_str(body: &str) -> Result<Vec<JsonPoint<'_>>, BodyError> {
    // OpenTSDB trims with Java's String.trim() before looking at the first char.
    let t = java_trim(body);
    let mut p = Parser::new(t);
    match t.as_bytes().first() {
        None => Err(BodyError::Missing),
        Some(b'{') => {
            p.token().map_err(|e| BodyError::Syntax(e.to_string()))?;
            Ok(vec![
                point(&mut p, None).map_err(|e| BodyError::Syntax(e.to_string()))?
            ])
        }
        Some(b'[') => {
            let points = array(&mut p).map_err(|e| BodyError::Syntax(e.to_string()))?;
            if points.is_empty() {
                Err(BodyError::NoDatapoints)
            } else {
                Ok(points)
            }
        }
        Some(_) => Err(BodyError::NotObjectOrArray),
    }
}

/// About the shortest text of a point as senders write them (`{"metric":"m","timestamp":…,
/// "value":…,"tags":{"host":"h"}}` is 70 bytes): a body's array is sized from its length
/// once, not copied as it doubles…
const POINT_TEXT_MIN: usize = 64;

/// …up to this many points (2 MiB of them): a body padded with spaces reserves no more.
const PRESIZE_POINTS_MAX: usize = 16 * 1024;

fn array<'a>(p: &mut Parser<'a>) -> PResult<Vec<JsonPoint<'a>>> {
    p.token()?;
    let mut out = Vec::with_capacity((p.remaining() / POINT_TEXT_MIN).min(PRESIZE_POINTS_MAX));
    if p.empty_container(b']') {
        return Ok(out);
    }
    loop {
        match p.token()? {
            Token::StartObject => {
                let dp = point(p, out.last())?;
                out.push(dp);
            }
            Token::Null => out.push(JsonPoint {
                is_null: true,
                ..JsonPoint::default()
            }),
            t => {
                return Err(p.err(format!(
                    "Cannot deserialize a data point out of a {} value",
                    t.kind()
                )))
            }
        }
        if !p.next_elem(b']')? {
            return Ok(out);
        }
    }
}

/// Jackson's String coercion: scalars as their text, `null` as unset.
fn string_field<'a>(p: &Parser<'a>, field: &str, t: Token<'a>) -> PResult<Option<Cow<'a, str>>> {
    Ok(match t {
        Token::Null => None,
        Token::Str(s) => Some(s),
        Token::Bool(s) | Token::NonNumeric(s) | Token::Num { text: s, .. } => {
            Some(Cow::Borrowed(s))
        }
        Token::StartObject | Token::StartArray => {
            return Err(p.err(format!(
                "Cannot deserialize a String for field \"{field}\" out of an {}",
                t.kind()
            )))
        }
    })
}

/// Jackson's coercion of a value into a primitive `long`.
fn long_field<'a>(p: &Parser<'a>, t: Token<'a>) -> PResult<i64> {
    let range = |text: &str| {
        p.err(format!(
            "Numeric value ({text}) out of range of long (-9223372036854775808 - 9223372036854775807)"
        ))
    };
    match t {
        Token::Null => Ok(0),
        Token::Num { text, float: false } => text.parse::<i64>().map_err(|_| range(text)),
        Token::Num { text, float: true } => {
            let d: f64 = text.parse().map_err(|_| range(text))?;
            // Jackson rejects values outside [Long.MIN_VALUE, Long.MAX_VALUE] as doubles
            // (both bounds are ±2^63 once converted), then casts, truncating toward zero.
            const BOUND: f64 = 9_223_372_036_854_775_808.0; // 2^63
            if !(-BOUND..=BOUND).contains(&d) {
                return Err(range(text));
            }
            Ok(d as i64)
        }
        Token::NonNumeric("NaN") => Ok(0),
        Token::NonNumeric(text) => Err(range(text)),
        Token::Str(s) => {
            let s = java_trim(&s);
            if s.is_empty() || s == "null" {
                return Ok(0);
            }
            // Long.parseLong (also accepts a leading '+'). Java would accept non-ASCII
            // Unicode decimal digits too; we do not.
            s.parse::<i64>().map_err(|_| {
                p.err(format!(
                    "Cannot deserialize value of type `long` from String \"{s}\": not a valid Long value"
                ))
            })
        }
        t => Err(p.err(format!(
            "Cannot deserialize value of type `long` out of a {} value",
            t.kind()
        ))),
    }
}

/// Above this many tags, key lookups go through a hash index.
const LINEAR_TAGS: usize = 32;

fn tags_field<'a>(p: &mut Parser<'a>, t: Token<'a>) -> PResult<Option<JsonTags<'a>>> {
    match t {
        Token::Null => return Ok(None),
        Token::StartObject => {}
        t => {
            return Err(p.err(format!(
                "Cannot deserialize a Map for field \"tags\" out of a {} value",
                t.kind()
            )))
        }
    }
    let mut tags: JsonTags<'a> = Vec::new();
    if p.empty_container(b'}') {
        return Ok(Some(tags));
    }
    let mut index: Option<HashMap<Cow<'a, str>, usize>> = None;
    loop {
        let k = p.key()?;
        p.ws();
        // A string value (what senders write) read directly, as `token` would.
        let v = if p.peek() == Some(b'"') {
            Some(p.any_string()?)
        } else {
            let t = p.token()?;
            string_field(p, "tags", t)?
        };
        let existing = match &index {
            Some(ix) => ix.get(&k).copied(),
            None => tags.iter().position(|(k2, _)| *k2 == k),
        };
        match existing {
            Some(i) => tags[i].1 = v,
            None => {
                if let Some(ix) = &mut index {
                    ix.insert(k.clone(), tags.len());
                }
                tags.push((k, v));
                if index.is_none() && tags.len() > LINEAR_TAGS {
                    index = Some(
                        tags.iter()
                            .enumerate()
                            .map(|(i, (k, _))| (k.clone(), i))
                            .collect(),
                    );
                }
            }
        }
        if !p.next_elem(b'}')? {
            return Ok(Some(tags));
        }
    }
}

/// The fields of one point object whose `{` was just consumed; `prev` is the point before it
/// in the array.
fn point<'a>(p: &mut Parser<'a>, prev: Option<&JsonPoint<'a>>) -> PResult<JsonPoint<'a>> {
    let mut dp = JsonPoint::default();
    if p.empty_container(b'}') {
        return Ok(dp);
    }
    loop {
        let key = p.key()?;
        p.ws();
        // The shapes senders write (string metric, integer timestamp, number or string value,
        // tags object) are read straight off their first byte, as `token` would read them:
        // building a `Token` per field was a fifth of parsing.
        match (&*key, p.peek()) {
            ("metric", Some(b'"')) => dp.metric = Some(p.any_string()?),
            ("value", Some(b'"')) => dp.value = Some(p.any_string()?),
            ("value", Some(b'0'..=b'9')) => {
                let t = p.number()?;
                dp.value = string_field(p, "value", t)?;
            }
            ("timestamp", Some(b'0'..=b'9')) => {
                let t = p.number()?;
                dp.timestamp = long_field(p, t)?;
            }
            ("tags", Some(b'{')) => {
                // Senders write a series' points together: the same tags object as the point
                // before parses to the same tags, so its text is compared, not parsed again
                // (an object ends at its own closing brace, whatever follows it).
                if let Some((raw, tags)) = prev.and_then(|q| Some((q.tags_raw?, q.tags.as_ref()?)))
                {
                    if p.skip_text(raw) {
                        dp.tags = Some(tags.clone());
                        dp.tags_raw = Some(raw);
                        if !p.next_elem(b'}')? {
                            return Ok(dp);
                        }
                        continue;
                    }
                }
                let from = p.pos();
                p.bump();
                dp.tags = tags_field(p, Token::StartObject)?;
                dp.tags_raw = Some(p.since(from));
            }
            _ => {
                let t = p.token()?;
                match &*key {
                    "metric" => dp.metric = string_field(p, "metric", t)?,
                    "timestamp" => dp.timestamp = long_field(p, t)?,
                    "value" => dp.value = string_field(p, "value", t)?,
                    "tags" => {
                        dp.tags = tags_field(p, t)?;
                        dp.tags_raw = None;
                    }
                    "tsuid" => dp.tsuid = string_field(p, "tsuid", t)?,
                    _ => {
                        if matches!(t, Token::StartObject | Token::StartArray) {
                            p.skip_container(t)?;
                        }
                    }
                }
            }
        }
        if !p.next_elem(b'}')? {
            return Ok(dp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;
    use proptest::prelude::*;

    fn one(body: &str) -> JsonPoint<'_> {
        let mut v = parse_body_str(body).unwrap();
        assert_eq!(v.len(), 1);
        v.pop().unwrap()
    }

    fn verr(body: &str) -> String {
        one(body)
            .validate(&Limits::default())
            .unwrap_err()
            .to_string()
    }

    const GOOD: &str = r#"{"metric":"sys.cpu.nice","timestamp":1346846400,"value":18,"tags":{"host":"web01","dc":"lga"}}"#;

    #[test]
    fn body_errors() {
        assert_eq!(parse_body(b"").unwrap_err(), BodyError::Missing);
        assert_eq!(parse_body(b" \n\t").unwrap_err(), BodyError::Missing);
        assert_eq!(BodyError::Missing.message(), "Missing request content");
        let e = parse_body(b"metric=x").unwrap_err();
        assert_eq!(e.message(), "The JSON must start as an object or an array");
        assert_eq!(e.details(), None);
        let e = parse_body(b" [ ] ").unwrap_err();
        assert_eq!(e.message(), "No datapoints found in content");
        let e = parse_body(br#"{"metric":"x",}"#).unwrap_err();
        assert_eq!(e.message(), "Unable to parse the given JSON");
        assert!(
            e.details()
                .unwrap()
                .contains("double-quote to start field name"),
            "{e:?}"
        );
        for bad in [
            r#"[{"metric":"x"},]"#,
            r#"[1]"#,
            r#"["x"]"#,
            r#"{"value":[1]}"#,
            r#"{"tags":"a"}"#,
            r#"{"tags":[]}"#,
            r#"{"timestamp":"abc"}"#,
            r#"{"timestamp":"1.5"}"#,
            r#"{"timestamp":true}"#,
            r#"{"timestamp":9223372036854775808}"#,
            r#"{"timestamp":1e19}"#,
            r#"{"timestamp":Infinity}"#,
            r#"{"metric":{"a":1}}"#,
            r#"{"tags":{"a":{}}}"#,
            r#"{"x":[1,}"#,
            r#"[{"metric":"x"}"#,
        ] {
            assert!(
                matches!(parse_body(bad.as_bytes()), Err(BodyError::Syntax(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn good_single_and_array() {
        let p = one(GOOD);
        let d = p.validate(&Limits::default()).unwrap();
        assert_eq!(d.metric, "sys.cpu.nice");
        assert_eq!(d.timestamp, 1346846400);
        assert_eq!(d.value, Value::Int(18));
        assert_eq!(d.tags, vec![("host", "web01"), ("dc", "lga")]);
        let body = format!("[{GOOD}, {}]", GOOD.replace("18", "\"18.5\""));
        let v = parse_body(body.as_bytes()).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(
            v[1].validate(&Limits::default()).unwrap().value,
            Value::F32(18.5)
        );
        // Borrowed, not copied.
        assert!(matches!(v[0].metric, Some(Cow::Borrowed(_))));
    }

    #[test]
    fn value_text_is_kept() {
        let v = |lit: &str| {
            let body = GOOD.replace("18", lit);
            let p = one(&body);
            (
                p.value.as_deref().map(str::to_string),
                p.validate(&Limits::default())
                    .map(|d| d.value)
                    .map_err(|e| e.to_string()),
            )
        };
        assert_eq!(v("42"), (Some("42".into()), Ok(Value::Int(42))));
        assert_eq!(v("42.0"), (Some("42.0".into()), Ok(Value::F32(42.0))));
        assert_eq!(v("1E3"), (Some("1E3".into()), Ok(Value::F32(1000.0))));
        assert_eq!(v("-0"), (Some("-0".into()), Ok(Value::Int(0))));
        assert_eq!(v("12.3"), (Some("12.3".into()), Ok(Value::F64(12.3))));
        assert_eq!(v("\"42\""), (Some("42".into()), Ok(Value::Int(42))));
        assert_eq!(v("true").1, Err("Unable to parse value to a number".into()));
        assert_eq!(v("NaN").1, Err("Unable to parse value to a number".into()));
        assert_eq!(
            v("-Infinity").1,
            Err("Unable to parse value to a number".into())
        );
        assert_eq!(
            v("1e400").1,
            Err(
                "value is NaN or Infinite: Infinity for metric=sys.cpu.nice timestamp=1346846400"
                    .into()
            )
        );
        assert_eq!(v("\"\"").1, Err("Empty value".into()));
        assert_eq!(v("null").1, Err("Empty value".into()));
    }

    #[test]
    fn timestamps() {
        let ts = |lit: &str| one(&GOOD.replace("1346846400", lit)).timestamp;
        assert_eq!(ts("\"1346846400\""), 1346846400);
        assert_eq!(ts("\" +1346846400 \""), 1346846400);
        assert_eq!(ts("1346846400.9"), 1346846400);
        assert_eq!(ts("-0.5"), 0);
        assert_eq!(ts("1.3468464E9"), 1346846400);
        assert_eq!(ts("null"), 0);
        assert_eq!(ts("\"\""), 0);
        assert_eq!(ts("\"null\""), 0);
        assert_eq!(ts("NaN"), 0);
        assert_eq!(ts("1346846400000"), 1346846400000);
        assert_eq!(verr(&GOOD.replace("1346846400", "0")), "Invalid timestamp");
        assert_eq!(verr(&GOOD.replace("1346846400", "-5")), "Invalid timestamp");
        assert_eq!(
            verr(&GOOD.replace("\"timestamp\":1346846400,", "")),
            "Invalid timestamp"
        );
        assert_eq!(
            verr(&GOOD.replace("1346846400", "10000000000000")),
            "bad timestamp=10000000000000 when trying to add value=[18]/0 to metric=sys.cpu.nice, tags={host=web01, dc=lga}"
        );
    }

    #[test]
    fn validation_order() {
        assert_eq!(verr("{}"), "Metric name was empty");
        assert_eq!(
            verr(r#"{"metric":"","timestamp":-1}"#),
            "Metric name was empty"
        );
        assert_eq!(
            verr(r#"{"metric":"m","timestamp":-1,"value":""}"#),
            "Invalid timestamp"
        );
        assert_eq!(
            verr(r#"{"metric":"m","timestamp":1,"value":""}"#),
            "Empty value"
        );
        assert_eq!(
            verr(r#"{"metric":"m","timestamp":1,"value":"x"}"#),
            "Missing tags"
        );
        assert_eq!(
            verr(r#"{"metric":"m","timestamp":1,"value":"x","tags":{}}"#),
            "Missing tags"
        );
        assert_eq!(
            verr(r#"{"metric":"m","timestamp":1,"value":"x","tags":null}"#),
            "Missing tags"
        );
        assert_eq!(
            verr(r#"{"metric":"a b","timestamp":1,"value":"x","tags":{"k":"v"}}"#),
            "Unable to parse value to a number"
        );
        assert_eq!(
            verr(r#"{"metric":"a b","timestamp":1,"value":"1","tags":{"k":"v"}}"#),
            "Invalid metric name (\"a b\"): illegal character:  "
        );
        assert_eq!(
            verr(r#"{"metric":"m","timestamp":1,"value":"1","tags":{"k":"v!"}}"#),
            "Invalid tag value with key [k] (\"v!\"): illegal character: !"
        );
        assert_eq!(
            verr(r#"{"metric":"m","timestamp":1,"value":"1","tags":{"k":null}}"#),
            "Invalid tag value with key [k]: null"
        );
        let nine = r#"{"metric":"m","timestamp":1,"value":"1","tags":{"a":"1","b":"2","c":"3","d":"4","e":"5","f":"6","g":"7","h":"8","i":"9"}}"#;
        assert_eq!(
            verr(nine),
            "Too many tags: 9 maximum allowed: 8, tags: {a=1, b=2, c=3, d=4, e=5, f=6, g=7, h=8, i=9}"
        );
        let v = parse_body(b"[null]").unwrap();
        assert_eq!(
            v[0].validate(&Limits::default()).unwrap_err().to_string(),
            "Unexpected null datapoint encountered in set."
        );
    }

    #[test]
    fn jackson_quirks() {
        // Unknown fields skipped (any JSON), repeated fields last-wins, coercions, trailing junk.
        let p = one(
            r#"{"x":{"y":[1,{"z":null}]},"metric":"a","metric":"b","timestamp":"5","value":1.50,
                "tags":{"k":"1","k2":2,"k":"3"},"tsuid":"00AB"} trailing } garbage"#,
        );
        assert_eq!(p.metric.as_deref(), Some("b"));
        assert_eq!(p.timestamp, 5);
        assert_eq!(p.value.as_deref(), Some("1.50"));
        let tags: Vec<(&str, Option<&str>)> = p
            .tags
            .as_ref()
            .unwrap()
            .iter()
            .map(|(k, v)| (&**k, v.as_deref()))
            .collect();
        assert_eq!(tags, vec![("k", Some("3")), ("k2", Some("2"))]);
        assert_eq!(p.tsuid.as_deref(), Some("00AB"));
        let d = p.validate(&Limits::default()).unwrap();
        assert_eq!(d.value, Value::F32(1.5));
        // Escaped strings are decoded; invalid UTF-8 becomes U+FFFD.
        let p = one(r#"{"metric":"a\u002eb"}"#);
        assert_eq!(p.metric.as_deref(), Some("a.b"));
        let v = parse_body(b"{\"metric\":\"a\xffb\"}").unwrap();
        assert_eq!(v[0].metric.as_deref(), Some("a\u{FFFD}b"));
        // Java's trim strips control characters too.
        assert_eq!(parse_body(b"\x00\x01{}\x02").unwrap().len(), 1);
    }

    #[test]
    fn echo_shape() {
        let p = one(GOOD);
        assert_eq!(
            serde_json::to_string(&p.echo()).unwrap(),
            r#"{"metric":"sys.cpu.nice","timestamp":1346846400,"value":"18","tags":{"host":"web01","dc":"lga"}}"#
        );
        let p = one(r#"{"value":5,"tags":{"c":null,"a":"x"}}"#);
        assert_eq!(
            serde_json::to_string(&p.echo()).unwrap(),
            r#"{"timestamp":0,"value":"5","tags":{"a":"x","c":null}}"#
        );
        assert_eq!(
            serde_json::to_string(&p.error_detail("Metric name was empty")).unwrap(),
            r#"{"datapoint":{"timestamp":0,"value":"5","tags":{"a":"x","c":null}},"error":"Metric name was empty"}"#
        );
        let v = parse_body(b"[null]").unwrap();
        assert_eq!(serde_json::to_string(&v[0].echo()).unwrap(), "null");
    }

    #[test]
    fn tags_raw_is_the_last_tags_object() {
        assert_eq!(
            one(r#"{"metric":"m","tags":{"a":"b"}}"#).tags_raw,
            Some(r#"{"a":"b"}"#)
        );
        assert_eq!(
            one(r#"{"tags":{"a":"b"},"tags":{ "c" : "d" }}"#).tags_raw,
            Some(r#"{ "c" : "d" }"#)
        );
        assert_eq!(one(r#"{"tags":{"a":"b"},"tags":null}"#).tags_raw, None);
        assert_eq!(one(r#"{"metric":"m"}"#).tags_raw, None);
        // A body decoded lossily owns its text: no raw tags to remember it by.
        let lossy = parse_body(b"[{\"metric\":\"m\xff\",\"tags\":{\"a\":\"b\"}}]").unwrap();
        assert_eq!(lossy[0].tags_raw, None);
    }

    #[test]
    fn many_tags_indexed() {
        let mut body = String::from(r#"{"metric":"m","timestamp":1,"value":1,"tags":{"#);
        for i in 0..200 {
            body.push_str(&format!("\"k{i}\":\"v\","));
        }
        body.push_str(r#""k7":"w"}}"#);
        let p = one(&body);
        let tags = p.tags.as_ref().unwrap();
        assert_eq!(tags.len(), 200);
        assert_eq!(tags[7].1.as_deref(), Some("w"));
        let l = Limits {
            max_tags: 1000,
            allow_special: String::new(),
        };
        assert!(p.validate(&l).is_ok());
    }

    proptest! {
        #[test]
        fn never_panics(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Ok(v) = parse_body(&b) {
                for p in &v {
                    let _ = p.validate(&Limits::default());
                    let _ = serde_json::to_string(&p.echo());
                }
            }
        }

        #[test]
        fn never_panics_jsonish(s in r#"[\[\]{}",:0-9a-z.eE+\- \\]{0,60}"#) {
            let _ = parse_body(s.as_bytes());
            let _ = parse_body(format!("[{{\"metric\":{s}}}]").as_bytes());
        }

        #[test]
        fn round_trips_via_serde_json(
            metric in "[a-z.]{1,10}",
            ts in 1i64..=9_999_999_999_999,
            v in any::<i64>(),
            tags in proptest::collection::btree_map("[a-z]{1,5}", "[a-z0-9]{1,5}", 1..=8),
        ) {
            let body = serde_json::json!({"metric": metric, "timestamp": ts, "value": v, "tags": tags});
            let bytes = serde_json::to_vec(&body).unwrap();
            let pts = parse_body(&bytes).unwrap();
            let d = pts[0].validate(&Limits::default()).unwrap();
            prop_assert_eq!(d.metric, metric.as_str());
            prop_assert_eq!(d.timestamp, ts as u64);
            prop_assert_eq!(d.value, Value::Int(v));
            prop_assert_eq!(d.tags.len(), tags.len());
        }

        /// `validate_known` agrees with `validate` on every point whose names are valid, and
        /// `tags_raw` is the tags object as sent.
        #[test]
        fn validate_known_is_validate_for_known_names(
            ts in prop_oneof![any::<i64>(), 1i64..=10_000_000_000_000, Just(0i64), Just(9_999_999_999_999), Just(10_000_000_000_000)],
            value in prop_oneof!["-?[0-9]{1,20}", "-?[0-9]{1,5}\\.[0-9]{0,5}(e-?[0-9]{1,3})?", Just("NaN".to_string()), Just("Infinity".to_string()), Just("".to_string()), "[a-z0-9.]{0,4}"],
            spaced in any::<bool>(),
        ) {
            let tags = if spaced { r#"{ "host" : "a", "dc":"b" }"# } else { r#"{"host":"a","dc":"b"}"# };
            let body = format!(r#"{{"metric":"sys.cpu","timestamp":{ts},"value":"{value}","tags":{tags}}}"#);
            let pts = parse_body(body.as_bytes()).unwrap();
            let p = &pts[0];
            prop_assert_eq!(p.tags_raw, Some(tags));
            match (p.validate(&Limits::default()), p.validate_known()) {
                (Ok(d), Some((t, v))) => {
                    prop_assert_eq!(d.timestamp, t);
                    prop_assert_eq!(d.value, v);
                }
                (Err(_), None) => {}
                (a, b) => prop_assert!(false, "validate {:?} but validate_known {:?}", a.map(|d| d.timestamp), b),
            }
        }

        /// An array parses to what its points parse to one by one, whether a point's tags
        /// object repeats the text of the point before (read by comparing it) or not: the
        /// objects come from a few texts, some sharing a prefix, some repeating or null keys,
        /// some followed by a second `tags` field or by garbage.
        #[test]
        fn repeated_tags_parse_as_alone(
            picks in proptest::collection::vec((0usize..8, 0usize..4), 1..12),
        ) {
            const TAGS: [&str; 8] = [
                r#"{"host":"a","dc":"b"}"#,
                r#"{"host":"a","dc":"b","rack":"c"}"#,
                r#"{ "host" : "a", "dc":"b" }"#,
                r#"{"host":"a","host":"z"}"#,
                r#"{"host":null}"#,
                r#"{"h\u006fst":"a"}"#,
                r#"{}"#,
                r#"null"#,
            ];
            const AFTER: [&str; 4] = ["", r#","tags":{"x":"y"}"#, r#","value":2"#, " x"];
            let points: Vec<String> = picks.iter().map(|&(t, a)| format!(r#"{{"metric":"m","timestamp":1,"value":1,"tags":{}{}}}"#, TAGS[t], AFTER[a])).collect();
            let alone: Result<Vec<JsonPoint>, BodyError> = points.iter().map(|p| parse_body(p.as_bytes()).map(|mut v| v.remove(0))).collect();
            let body = format!("[{}]", points.join(","));
            prop_assert_eq!(parse_body(body.as_bytes()).ok(), alone.ok());
        }

        #[test]
        fn escaped_strings_round_trip(s in any::<String>()) {
            // Every place a string is read: field values, a tag key and a tag value (plain
            // ones take the direct path, escaped ones the general one).
            let body = serde_json::to_string(&serde_json::json!({"metric": s, "value": s, "tags": {s.clone(): s}})).unwrap();
            let pts = parse_body(body.as_bytes()).unwrap();
            prop_assert_eq!(pts[0].metric.as_deref(), Some(s.as_str()));
            prop_assert_eq!(pts[0].value.as_deref(), Some(s.as_str()));
            let tags = pts[0].tags.as_ref().unwrap();
            prop_assert_eq!(&*tags[0].0, s.as_str());
            prop_assert_eq!(tags[0].1.as_deref(), Some(s.as_str()));
        }
    }
}
