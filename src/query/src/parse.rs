//! `/api/query` requests: the POST JSON body and the GET query string (`m=`, `tsuid=`).

use super::aggregate::Aggregator;
use super::downsample::{parse_downsample, DownsampleError};
use super::filter::{FilterError, FilterType, TagFilter};
use super::spec::{Flags, Query, RateOptions, SubQuery};
use super::time::{parse_time, TimeError};
use serde_json::Value as Json;

/// An `/api/query` request OpenTSDB would refuse (400), in its words.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error(transparent)]
    Time(#[from] TimeError),
    #[error(transparent)]
    Downsample(#[from] DownsampleError),
    #[error(transparent)]
    Filter(#[from] FilterError),
    /// A JSON time that is neither a number nor a string.
    #[error("Invalid time: {0}")]
    TimeValue(String),
    #[error("No such aggregation function: {0}")]
    Aggregator(String),
    #[error("Missing message content")]
    NoContent,
    #[error("Unable to parse the given JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("Missing start time")]
    MissingStart,
    #[error("Missing parameter <code>start</code>")]
    MissingStartParam,
    #[error("Missing queries")]
    MissingQueries,
    #[error("Missing sub queries")]
    MissingSubQueries,
    #[error("Missing the aggregation function")]
    MissingAggregator,
    #[error("Missing the metric or tsuids, provide at least one")]
    MissingMetric,
    #[error("Missing filter type")]
    MissingFilterType,
    #[error("Could not find a filter for type: {0}")]
    FilterType(String),
    #[error("Missing tagk in filter")]
    MissingFilterTagk,
    #[error("Invalid counter max value: {0}")]
    CounterMax(String),
    #[error("Invalid reset value: {0}")]
    ResetValue(String),
    #[error("Invalid parameter m={0} (not enough :-separated parts)")]
    TooFewParts(String),
    #[error("Invalid parameter m={0} (too many :-separated parts)")]
    TooManyParts(String),
    #[error("Missing '}}' at the end of: {0}")]
    Unclosed(String),
    #[error("invalid tag: {0}")]
    Tag(String),
    #[error("Unexpected text after the filters: {0}")]
    Trailing(String),
}

fn time_value(v: Option<&Json>, now: u64) -> Result<Option<u64>, ParseError> {
    match v {
        None | Some(Json::Null) => Ok(None),
        Some(Json::Number(n)) => Ok(Some(parse_time(&n.to_string(), now)?)),
        Some(Json::String(s)) if s.is_empty() => Ok(None),
        Some(Json::String(s)) => Ok(Some(parse_time(s, now)?)),
        Some(other) => Err(ParseError::TimeValue(other.to_string())),
    }
}

fn flag(j: &Json, k: &str) -> bool {
    match j.get(k) {
        Some(Json::Bool(b)) => *b,
        Some(Json::String(s)) => s.eq_ignore_ascii_case("true"),
        _ => false,
    }
}

fn aggregator(name: &str) -> Result<Aggregator, ParseError> {
    Aggregator::parse(name).ok_or_else(|| ParseError::Aggregator(name.to_string()))
}

fn rate_options(j: &Json) -> RateOptions {
    // A number, or a string holding one.
    let int = |k: &str| {
        j.get(k).and_then(|v| {
            v.as_i64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        })
    };
    let default = RateOptions::default();
    RateOptions {
        counter: flag(j, "counter") || flag(j, "isCounter"),
        counter_max: int("counterMax").unwrap_or(default.counter_max),
        reset_value: int("resetValue").unwrap_or(default.reset_value),
        drop_resets: flag(j, "dropResets"),
    }
}

/// The POST JSON body (`arrays` comes from the URL).
pub fn from_json(body: &[u8], now: u64) -> Result<Query, ParseError> {
    if body.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(ParseError::NoContent);
    }
    let j: Json = serde_json::from_slice(body)?;
    let start_ms = time_value(j.get("start"), now)?.ok_or(ParseError::MissingStart)?;
    let end_ms = time_value(j.get("end"), now)?.unwrap_or(now);
    let mut queries = Vec::new();
    let subs = j
        .get("queries")
        .and_then(|q| q.as_array())
        .filter(|a| !a.is_empty())
        .ok_or(ParseError::MissingQueries)?;
    for (index, q) in subs.iter().enumerate() {
        let agg = q
            .get("aggregator")
            .and_then(|a| a.as_str())
            .ok_or(ParseError::MissingAggregator)?;
        let aggregator = aggregator(agg)?;
        let metric = q
            .get("metric")
            .and_then(|m| m.as_str())
            .unwrap_or_default()
            .to_string();
        let tsuids: Vec<String> = q
            .get("tsuids")
            .and_then(|t| t.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        if metric.is_empty() && tsuids.is_empty() {
            return Err(ParseError::MissingMetric);
        }
        let mut filters = Vec::new();
        if let Some(tags) = q.get("tags").and_then(|t| t.as_object()) {
            for (k, v) in tags {
                filters.push(TagFilter::from_tag_value(
                    k,
                    v.as_str().unwrap_or_default(),
                )?);
            }
        }
        if let Some(fs) = q.get("filters").and_then(|f| f.as_array()) {
            for f in fs {
                let ty = f
                    .get("type")
                    .and_then(|t| t.as_str())
                    .ok_or(ParseError::MissingFilterType)?;
                let kind =
                    FilterType::parse(ty).ok_or_else(|| ParseError::FilterType(ty.to_string()))?;
                let tagk = f
                    .get("tagk")
                    .and_then(|t| t.as_str())
                    .ok_or(ParseError::MissingFilterTagk)?;
                let expr = f.get("filter").and_then(|t| t.as_str()).unwrap_or_default();
                filters.push(TagFilter::new(kind, tagk, expr, flag(f, "groupBy"))?);
            }
        }
        let downsample = match q
            .get("downsample")
            .and_then(|d| d.as_str())
            .filter(|d| !d.is_empty())
        {
            Some(d) => Some(parse_downsample(d)?),
            None => None,
        };
        queries.push(SubQuery {
            index,
            aggregator,
            metric,
            tsuids,
            filters,
            downsample,
            rate: flag(q, "rate"),
            rate_options: q
                .get("rateOptions")
                .filter(|o| o.is_object())
                .map(rate_options),
            explicit_tags: flag(q, "explicitTags"),
            rollup_usage: q
                .get("rollupUsage")
                .and_then(|u| u.as_str())
                .map(crate::spec::RollupUsage::parse)
                .unwrap_or_default(),
            pre_aggregate: flag(q, "preAggregate"),
        });
    }
    let flags = Flags {
        ms_resolution: flag(&j, "msResolution"),
        show_tsuids: flag(&j, "showTSUIDs"),
        show_query: flag(&j, "showQuery"),
        show_summary: flag(&j, "showSummary"),
        show_stats: flag(&j, "showStats"),
        no_annotations: flag(&j, "noAnnotations"),
        global_annotations: flag(&j, "globalAnnotations"),
        delete: flag(&j, "delete"),
        arrays: false,
    };
    Ok(Query {
        start_ms,
        end_ms,
        queries,
        flags,
        timezone: j.get("timezone").and_then(|t| t.as_str()).map(String::from),
        use_calendar: flag(&j, "useCalendar"),
    })
}

/// The GET form. `params` keeps repeated keys in order; single-valued ones take the last.
pub fn from_params(params: &[(String, String)], now: u64) -> Result<Query, ParseError> {
    let last = |k: &str| {
        params
            .iter()
            .rev()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    };
    let present = |k: &str| params.iter().any(|(n, _)| n == k);
    let start = last("start").ok_or(ParseError::MissingStartParam)?;
    let start_ms = parse_time(start, now)?;
    let end_ms = match last("end") {
        Some(e) if !e.is_empty() => parse_time(e, now)?,
        _ => now,
    };
    let mut queries = Vec::new();
    for (k, v) in params {
        match k.as_str() {
            "m" => queries.push(parse_m(v, queries.len())?),
            "tsuid" => queries.push(parse_tsuid(v, queries.len())?),
            _ => {}
        }
    }
    if queries.is_empty() {
        return Err(ParseError::MissingSubQueries);
    }
    Ok(Query {
        start_ms,
        end_ms,
        queries,
        flags: Flags {
            ms_resolution: present("ms"),
            show_tsuids: present("show_tsuids"),
            show_query: present("show_query"),
            show_summary: present("show_summary"),
            show_stats: present("show_stats"),
            no_annotations: present("no_annotations"),
            global_annotations: present("global_annotations"),
            delete: false,
            arrays: false,
        },
        timezone: None,
        use_calendar: false,
    })
}

/// Applies the middle parts of `m=`/`tsuid=` (rate, downsample, explicit_tags; others ignored).
fn middle(parts: &[&str], sq: &mut SubQuery) -> Result<(), ParseError> {
    for p in parts {
        let lower = p.to_ascii_lowercase();
        if lower.starts_with("rate") {
            sq.rate = true;
            if let (Some(open), true) = (p.find('{'), p.ends_with('}')) {
                let opts: Vec<&str> = p[open + 1..p.len() - 1].split(',').collect();
                let mut o = RateOptions::default();
                let mut i = 0;
                if opts.first().is_some_and(|x| *x == "dropcounter") {
                    o.drop_resets = true;
                    o.counter = true;
                    i = 1;
                } else if opts.first().is_some_and(|x| *x == "counter") {
                    o.counter = true;
                    i = 1;
                }
                if let Some(m) = opts.get(i).filter(|s| !s.is_empty()) {
                    o.counter_max = m
                        .parse()
                        .map_err(|_| ParseError::CounterMax(m.to_string()))?;
                }
                if let Some(r) = opts.get(i + 1).filter(|s| !s.is_empty()) {
                    o.reset_value = r
                        .parse()
                        .map_err(|_| ParseError::ResetValue(r.to_string()))?;
                }
                sq.rate_options = Some(o);
            }
        } else if p.starts_with(|c: char| c.is_ascii_digit()) {
            sq.downsample = Some(parse_downsample(p)?);
        } else if lower == "explicit_tags" {
            sq.explicit_tags = true;
        } else if lower.starts_with("rollup_") {
            sq.rollup_usage = crate::spec::RollupUsage::parse(p);
        } else if lower == "pre-agg" {
            sq.pre_aggregate = true;
        }
    }
    Ok(())
}

fn split_m(m: &str) -> Result<Vec<&str>, ParseError> {
    // Colons inside braces (filters like regexp(a:b)) do not separate parts.
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in m.char_indices() {
        match c {
            '{' | '(' => depth += 1,
            '}' | ')' => depth -= 1,
            ':' if depth == 0 => {
                parts.push(&m[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&m[start..]);
    if parts.len() < 2 {
        return Err(ParseError::TooFewParts(m.to_string()));
    }
    if parts.len() > 7 {
        return Err(ParseError::TooManyParts(m.to_string()));
    }
    Ok(parts)
}

/// `agg:[rate[{…}]:][downsample:][explicit_tags:]metric{group-by filters}{other filters}`.
pub fn parse_m(m: &str, index: usize) -> Result<SubQuery, ParseError> {
    let parts = split_m(m)?;
    let aggregator = aggregator(parts[0])?;
    let (metric, filters) = parse_metric_filters(parts[parts.len() - 1])?;
    let mut sq = SubQuery {
        index,
        aggregator,
        metric,
        tsuids: vec![],
        filters,
        downsample: None,
        rate: false,
        rate_options: None,
        explicit_tags: false,
        rollup_usage: Default::default(),
        pre_aggregate: false,
    };
    middle(&parts[1..parts.len() - 1], &mut sq)?;
    Ok(sq)
}

/// `agg:[…:]tsuid1,tsuid2`.
pub fn parse_tsuid(t: &str, index: usize) -> Result<SubQuery, ParseError> {
    let parts = split_m(t)?;
    let aggregator = aggregator(parts[0])?;
    let tsuids: Vec<String> = parts[parts.len() - 1]
        .split(',')
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    if tsuids.is_empty() {
        return Err(ParseError::MissingMetric);
    }
    let mut sq = SubQuery {
        index,
        aggregator,
        metric: String::new(),
        tsuids,
        filters: vec![],
        downsample: None,
        rate: false,
        rate_options: None,
        explicit_tags: false,
        rollup_usage: Default::default(),
        pre_aggregate: false,
    };
    middle(&parts[1..parts.len() - 1], &mut sq)?;
    Ok(sq)
}

/// `metric{k=v,k2=type(expr)}{k3=…}`: the first braces group by, the second do not.
pub fn parse_metric_filters(s: &str) -> Result<(String, Vec<TagFilter>), ParseError> {
    let Some(open) = s.find('{') else {
        return Ok((s.to_string(), Vec::new()));
    };
    let metric = s[..open].to_string();
    let mut filters = Vec::new();
    let mut rest = &s[open..];
    let mut group_by = true;
    while let Some(r) = rest.strip_prefix('{') {
        let close = matching_close(r).ok_or_else(|| ParseError::Unclosed(s.to_string()))?;
        for part in split_top(&r[..close]) {
            if part.is_empty() {
                continue;
            }
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| ParseError::Tag(part.to_string()))?;
            filters.push(TagFilter::from_uri(k, v, group_by)?);
        }
        rest = &r[close + 1..];
        group_by = false;
    }
    if !rest.is_empty() {
        return Err(ParseError::Trailing(rest.to_string()));
    }
    Ok((metric, filters))
}

fn matching_close(s: &str) -> Option<usize> {
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            '}' if depth == 0 => return Some(i),
            _ => {}
        }
    }
    None
}

/// Splits on commas outside parentheses.
fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn m_syntax() {
        let q = parse_m(
            "sum:rate{counter,100,5}:1m-avg-nan:sys.cpu{host=web*,dc=lga|sjc}{env=regexp(prod.*)}",
            0,
        )
        .unwrap();
        assert_eq!(q.metric, "sys.cpu");
        assert!(q.rate);
        let o = q.rate_options.unwrap();
        assert!(o.counter && o.counter_max == 100 && o.reset_value == 5);
        assert_eq!(q.downsample.unwrap().interval_ms, 60_000);
        assert_eq!(q.filters.len(), 3);
        assert_eq!(
            (q.filters[0].kind, q.filters[0].group_by),
            (FilterType::Iwildcard, true)
        );
        assert_eq!(
            (q.filters[1].kind, q.filters[1].group_by),
            (FilterType::LiteralOr, true)
        );
        assert_eq!(
            (q.filters[2].kind, q.filters[2].group_by),
            (FilterType::Regexp, false)
        );
        assert!(parse_m("sum", 0)
            .unwrap_err()
            .to_string()
            .contains("not enough"));
        assert!(matches!(
            parse_m("bogus:m", 0).unwrap_err(),
            ParseError::Aggregator(a) if a == "bogus"
        ));
        assert!(parse_m("bogus:m", 0)
            .unwrap_err()
            .to_string()
            .contains("No such aggregation function: bogus"));
        let d = parse_m("avg:rate{dropcounter}:m", 0).unwrap();
        assert!(d.rate_options.unwrap().drop_resets);
        let t = parse_tsuid("sum:000001000001000001,000001000001000002", 0).unwrap();
        assert_eq!(t.tsuids.len(), 2);
    }

    #[test]
    fn json_body() {
        let q = from_json(
            br#"{"start":"1h-ago","queries":[{"aggregator":"sum","metric":"m","tags":{"host":"*"},
                "filters":[{"type":"literal_or","tagk":"dc","filter":"a|b","groupBy":true}],
                "downsample":"5m-max","rate":true,"rateOptions":{"counter":true,"counterMax":1000}}],"msResolution":true}"#,
            10_000_000,
        )
        .unwrap();
        assert_eq!(q.start_ms, 10_000_000 - 3_600_000);
        assert_eq!(q.end_ms, 10_000_000);
        assert!(q.flags.ms_resolution);
        assert_eq!(q.queries[0].filters.len(), 2);
        assert_eq!(
            q.queries[0].rate_options.as_ref().unwrap().counter_max,
            1000
        );
        assert_eq!(
            from_json(b"{}", 0).unwrap_err().to_string(),
            "Missing start time"
        );
        assert_eq!(
            from_json(br#"{"start":1}"#, 0).unwrap_err().to_string(),
            "Missing queries"
        );
        assert_eq!(
            from_json(br#"{"start":1,"queries":[{"aggregator":"sum"}]}"#, 0)
                .unwrap_err()
                .to_string(),
            "Missing the metric or tsuids, provide at least one"
        );
        assert_eq!(
            from_json(b"", 0).unwrap_err().to_string(),
            "Missing message content"
        );
    }
}
