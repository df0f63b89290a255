//! OpenTSDB 2.4's rollup input: the telnet `rollup` command and the `/api/rollup` JSON body
//! (`RollupDataPointRpc`, `RollUpDataPoint`). Rolled-up points name an interval and the
//! aggregator that made them; pre-aggregated ones a group-by aggregator.

use crate::point::{DataPoint, Limits};
use crate::put_json::{BodyError, JsonPoint, JsonTags};
use crate::telnet::{parse_fields, TelnetError};
use std::borrow::Cow;

/// What a rollup point is: `interval` + `aggregator` (a rollup), `groupby` (a pre-aggregate),
/// or both.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RollupSpec {
    pub interval: Option<String>,
    /// The temporal aggregator (the qualifier's id).
    pub aggregator: Option<String>,
    /// The group-by aggregator (the `_aggregate` tag's value).
    pub groupby: Option<String>,
}

impl RollupSpec {
    /// The telnet word: `<interval>-<agg>`, `<agg>` or `<interval>-<agg>:<groupby agg>`.
    pub fn parse(word: &str) -> RollupSpec {
        let parts: Vec<&str> = word.split(':').collect();
        let mut spec = RollupSpec::default();
        if let Some((iv, agg)) = parts[0].split_once('-') {
            spec.interval = Some(iv.to_string());
            spec.aggregator = Some(agg.to_string());
        } else if parts.len() == 1 {
            spec.groupby = Some(parts[0].to_string());
        }
        if let Some(g) = parts.get(1) {
            spec.groupby = Some(g.to_string());
        }
        // A bare group-by aggregator is its own temporal one.
        if spec.groupby.is_some() && spec.aggregator.is_none() {
            spec.aggregator = spec.groupby.clone();
        }
        spec
    }

    pub fn is_groupby(&self) -> bool {
        self.groupby.as_deref().is_some_and(|g| !g.is_empty())
    }

    /// `RollUpDataPoint.validate`'s own checks (after `/api/put`'s).
    pub fn validate(&self) -> Result<(), SpecError> {
        let empty = |s: &Option<String>| s.as_deref().is_none_or(str::is_empty);
        if empty(&self.interval) && !self.is_groupby() {
            return Err(SpecError::MissingInterval);
        }
        if empty(&self.aggregator) && !self.is_groupby() {
            return Err(SpecError::MissingAggregator);
        }
        Ok(())
    }
}

/// What [`RollupSpec::validate`] refuses; `Display` is OpenTSDB's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("Missing interval")]
    MissingInterval,
    #[error("Missing aggregator")]
    MissingAggregator,
}

/// A telnet `rollup` error line: OpenTSDB prefixes it with the command's name.
pub fn error_line(e: &TelnetError) -> String {
    match e.line().strip_prefix("put: ") {
        Some(rest) => format!("rollup: {rest}"),
        None => e.line(),
    }
}

/// Parses `rollup <spec> <metric> <ts> <value> <k=v>...` (the line without its terminator).
pub fn parse_telnet<'a>(
    line: &'a str,
    limits: &Limits,
) -> Result<(RollupSpec, DataPoint<'a>), TelnetError> {
    let n = line.split(' ').count();
    if n < 6 {
        return Err(TelnetError::IllegalArgument(format!(
            "not enough arguments (need least 7, got {})",
            n - 1
        )));
    }
    let mut words = line.split(' ');
    words.next();
    let spec_word = words.next().unwrap_or("");
    if spec_word.is_empty() {
        return Err(TelnetError::IllegalArgument(
            "Missing interval or aggregator".into(),
        ));
    }
    let p = parse_fields(words, limits)?;
    Ok((RollupSpec::parse(spec_word), p))
}

/// One `/api/rollup` element: the `/api/put` fields and the rollup ones.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonRollup {
    pub point: JsonPoint<'static>,
    pub spec: RollupSpec,
}

fn text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn element(v: &serde_json::Value) -> Result<JsonRollup, BodyError> {
    let serde_json::Value::Object(o) = v else {
        if v.is_null() {
            return Ok(JsonRollup {
                point: JsonPoint {
                    is_null: true,
                    ..Default::default()
                },
                spec: RollupSpec::default(),
            });
        }
        return Err(BodyError::Syntax(format!(
            "Unable to parse the given JSON: {v}"
        )));
    };
    let s = |k: &str| o.get(k).and_then(text);
    let timestamp = match o.get("timestamp") {
        Some(serde_json::Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .unwrap_or(0),
        Some(serde_json::Value::String(t)) => t.trim().parse().unwrap_or(0),
        _ => 0,
    };
    let tags: Option<JsonTags<'static>> = match o.get("tags") {
        Some(serde_json::Value::Object(t)) => Some(
            t.iter()
                .map(|(k, v)| (Cow::Owned(k.clone()), text(v).map(Cow::Owned)))
                .collect(),
        ),
        _ => None,
    };
    Ok(JsonRollup {
        point: JsonPoint {
            metric: s("metric").map(Cow::Owned),
            timestamp,
            value: s("value").map(Cow::Owned),
            tags,
            tsuid: s("tsuid").map(Cow::Owned),
            tags_raw: None,
            is_null: false,
        },
        spec: RollupSpec {
            interval: s("interval"),
            aggregator: s("aggregator"),
            groupby: s("groupByAggregator"),
        },
    })
}

/// Parses an `/api/rollup` body: one object or an array of them.
pub fn parse_body(body: &str) -> Result<Vec<JsonRollup>, BodyError> {
    let t = body.trim();
    if t.is_empty() {
        return Err(BodyError::Missing);
    }
    let v: serde_json::Value = serde_json::from_str(t)
        .map_err(|e| BodyError::Syntax(format!("Unable to parse the given JSON: {e}")))?;
    match &v {
        serde_json::Value::Array(a) => a.iter().map(element).collect(),
        other => Ok(vec![element(other)?]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn telnet_spec_forms() {
        let s = RollupSpec::parse("1h-sum");
        assert_eq!(
            (s.interval.as_deref(), s.aggregator.as_deref(), s.groupby),
            (Some("1h"), Some("sum"), None)
        );
        let s = RollupSpec::parse("max");
        assert_eq!(
            (s.interval, s.aggregator.as_deref(), s.groupby.as_deref()),
            (None, Some("max"), Some("max"))
        );
        let s = RollupSpec::parse("1h-sum:max");
        assert_eq!(
            (
                s.interval.as_deref(),
                s.aggregator.as_deref(),
                s.groupby.as_deref()
            ),
            (Some("1h"), Some("sum"), Some("max"))
        );
        assert!(s.is_groupby());
        let l = Limits::default();
        let (s, p) =
            parse_telnet("rollup 1h-SUM sys.cpu.user 1356998400 30 host=web01", &l).unwrap();
        assert_eq!(s.aggregator.as_deref(), Some("SUM"));
        assert_eq!(
            (p.metric, p.timestamp, p.tags.clone()),
            ("sys.cpu.user", 1356998400, vec![("host", "web01")])
        );
        let e = parse_telnet("rollup 1h-sum sys.cpu.user 1356998400 30", &l).unwrap_err();
        assert_eq!(
            error_line(&e),
            "rollup: illegal argument: not enough arguments (need least 7, got 4)"
        );
        let e = parse_telnet("rollup  sys.cpu.user 1356998400 30 host=a", &l).unwrap_err();
        assert_eq!(
            error_line(&e),
            "rollup: illegal argument: Missing interval or aggregator"
        );
        let e = parse_telnet("rollup 1h-sum sys 1356998400 x host=a", &l).unwrap_err();
        assert!(error_line(&e).starts_with("rollup: invalid value: "), "{e}");
    }

    #[test]
    fn json_body() {
        let b = r#"{"metric":"sys.cpu.user","timestamp":1356998400,"value":30,"tags":{"host":"web01"},"interval":"1h","aggregator":"SUM"}"#;
        let v = parse_body(b).unwrap();
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].spec.interval.as_deref(), Some("1h"));
        assert_eq!(v[0].point.value.as_deref(), Some("30"));
        let p = v[0].point.validate(&Limits::default()).unwrap();
        assert_eq!(p.timestamp, 1356998400);
        let v = parse_body(r#"[{"metric":"m","timestamp":1,"value":"1","tags":{"a":"b"}},{"metric":"m","timestamp":1,"value":1,"tags":{"a":"b"},"groupByAggregator":"sum"}]"#).unwrap();
        assert_eq!(v[0].spec.validate(), Err(SpecError::MissingInterval));
        assert_eq!(v[1].spec.validate(), Ok(()));
        assert!(parse_body("").is_err());
        assert!(parse_body("{nope").is_err());
    }
}
