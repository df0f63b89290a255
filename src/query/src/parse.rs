//! `/api/query` requests: the POST JSON body and the GET query string (`m=`, `tsuid=`).

use super::aggregate::Aggregator;
use super::downsample::{parse_downsample, DownsampleError};
use super::filter::{FilterError, FilterType, TagFilter};
use super::spec::{Flags, Query, RateOptions, SubQuery};
use super::time::{parse_time, parse_time_in, TimeError};
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
    #[error("Max value of counter was not a number, received '{0}'")]
    CounterMax(String),
    #[error("Reset value of counter was not a number, received '{0}'")]
    ResetValue(String),
    #[error("Invalid parameter m={0} (not enough :-separated parts)")]
    TooFewParts(String),
    #[error("Invalid parameter m={0} (too many :-separated parts)")]
    TooManyParts(String),
    #[error("Missing '}}' at the end of: {0}")]
    Unclosed(String),
    /// OpenTSDB's `Tags.parse` refusal of one `k=v` inside braces (`tag` for the first braces,
    /// `filter` for the second): `When parsing tag 'k=': invalid tag: k=`.
    #[error("When parsing {0} '{1}': invalid tag: {1}")]
    Tag(&'static str, String),
    /// A filter OpenTSDB could not build from one `k=v` inside braces, prefixed as its
    /// Tags.parseWithMetricAndFilters prefixes it.
    #[error("When parsing {0} '{1}': {2}")]
    InTag(&'static str, String, FilterError),
    #[error("Metric cannot be null or empty")]
    EmptyMetric,
    #[error("The query string was empty")]
    EmptyM,
    #[error("The tsuid query string was empty")]
    EmptyTsuid,
    #[error("Invalid rate options specification: {0}")]
    RateSpec(String),
    #[error("Incorrect number of values in rate options specification, must be counter[,counter max value,reset value], recieved: {0} parts")]
    RateParts(usize),
    #[error("Unexpected text after the filters: {0}")]
    Trailing(String),
}

/// A JSON `start`/`end`; absolute dates are read in the query's `timezone` (OpenTSDB's
/// `TSQuery.validateAndSetQuery`).
fn time_value(v: Option<&Json>, now: u64, tz: Option<&str>) -> Result<Option<u64>, ParseError> {
    match v {
        None | Some(Json::Null) => Ok(None),
        Some(Json::Number(n)) => Ok(Some(parse_time(&n.to_string(), now)?)),
        Some(Json::String(s)) if s.is_empty() => Ok(None),
        Some(Json::String(s)) => Ok(Some(parse_time_in(s, now, tz)?)),
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
    let tz = j.get("timezone").and_then(|t| t.as_str());
    let start_ms = time_value(j.get("start"), now, tz)?.ok_or(ParseError::MissingStart)?;
    let end_ms = time_value(j.get("end"), now, tz)?.unwrap_or(now);
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
            .filter(|a| !a.is_empty())
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
    dedup_subqueries(&mut queries);
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
    let start = last("start")
        .filter(|s| !s.is_empty())
        .ok_or(ParseError::MissingStartParam)?;
    let start_ms = parse_time(start, now)?;
    let end_ms = match last("end") {
        Some(e) if !e.is_empty() => parse_time(e, now)?,
        _ => now,
    };
    // OpenTSDB's QueryRpc reads every `tsuid=` before the `m=`s.
    let mut queries = Vec::new();
    for (_, v) in params.iter().filter(|(k, _)| k == "tsuid") {
        queries.push(parse_tsuid(v, queries.len())?);
    }
    for (_, v) in params.iter().filter(|(k, _)| k == "m") {
        queries.push(parse_m(v, queries.len())?);
    }
    if queries.is_empty() {
        return Err(ParseError::MissingSubQueries);
    }
    dedup_subqueries(&mut queries);
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
            if p.contains('{') {
                sq.rate_options = Some(parse_rate_options(p)?);
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
    if parts.len() > 5 {
        return Err(ParseError::TooManyParts(m.to_string()));
    }
    Ok(parts)
}

/// `agg:[rate[{…}]:][downsample:][explicit_tags:]metric{group-by filters}{other filters}`.
pub fn parse_m(m: &str, index: usize) -> Result<SubQuery, ParseError> {
    if m.is_empty() {
        return Err(ParseError::EmptyM);
    }
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
    if t.is_empty() {
        return Err(ParseError::EmptyTsuid);
    }
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

/// `metric{k=v,k2=type(expr)}{k3=…}`: the first braces group by, the second do not. As
/// OpenTSDB's `Tags.parseWithMetricAndFilters`: each part is one `k=v` with both sides set;
/// an empty part ends its braces when a second pair follows and is an error otherwise
/// (`m{host=a,}`).
pub fn parse_metric_filters(s: &str) -> Result<(String, Vec<TagFilter>), ParseError> {
    if s.is_empty() {
        return Err(ParseError::EmptyMetric);
    }
    let Some(open) = s.find('{') else {
        return Ok((s.to_string(), Vec::new()));
    };
    let metric = s[..open].to_string();
    // Each pair of braces: its text, whether it groups, whether it ends the string.
    let mut braces = Vec::new();
    let mut rest = &s[open..];
    let mut group_by = true;
    while let Some(r) = rest.strip_prefix('{') {
        let close = matching_close(r).ok_or_else(|| ParseError::Unclosed(s.to_string()))?;
        braces.push((&r[..close], group_by, r.len() == close + 1));
        rest = &r[close + 1..];
        group_by = false;
    }
    if !rest.is_empty() {
        return Err(ParseError::Trailing(rest.to_string()));
    }
    // OpenTSDB's Tags.parseWithMetricAndFilters reads the filter braces before the grouping
    // ones: their errors come first, and so do their filters.
    braces.sort_by_key(|&(_, group_by, _)| group_by);
    let mut filters = Vec::new();
    for (text, group_by, last_braces) in braces {
        let what = if group_by { "tag" } else { "filter" };
        for part in split_top(text) {
            if part.is_empty() && (!group_by || !last_braces || text.is_empty()) {
                break;
            }
            // Tags.parse: exactly one `=`, with text on both sides.
            let kv: Vec<&str> = part.split('=').collect();
            let [k, v] = kv[..] else {
                return Err(ParseError::Tag(what, part.to_string()));
            };
            if k.is_empty() || v.is_empty() {
                return Err(ParseError::Tag(what, part.to_string()));
            }
            let f = TagFilter::from_uri(k, v, group_by)
                .map_err(|e| ParseError::InTag(what, part.to_string(), e))?;
            // A grouping filter equal to one already there is not added again; that one
            // groups instead (TagVFilter.mapToFilters: `host=web02,host=web02` is one filter).
            match filters.iter_mut().find(|g: &&mut TagFilter| g.same_as(&f)) {
                Some(g) if group_by => g.group_by = true,
                _ => filters.push(f),
            }
        }
    }
    Ok((metric, filters))
}

/// OpenTSDB's `QueryRpc.parseRateOptions` of `rate{counter[,max[,reset]]}`: the text between
/// `rate{` and the last character, split on commas; the first part is a counter when it ends
/// in `counter` (`dropcounter` also drops resets); max and reset are the second and third
/// parts whatever the first is, empty meaning the default.
fn parse_rate_options(p: &str) -> Result<RateOptions, ParseError> {
    if p.len() < 6 {
        return Err(ParseError::RateSpec(p.to_string()));
    }
    let inner = p.get(5..p.len() - 1).unwrap_or_default();
    let parts: Vec<&str> = inner.split(',').collect();
    if parts.len() > 3 {
        return Err(ParseError::RateParts(parts.len()));
    }
    let mut o = RateOptions {
        counter: parts[0].ends_with("counter"),
        drop_resets: parts[0] == "dropcounter",
        ..RateOptions::default()
    };
    if let Some(m) = parts.get(1).filter(|s| !s.is_empty()) {
        o.counter_max = m
            .parse()
            .map_err(|_| ParseError::CounterMax(m.to_string()))?;
    }
    if let Some(r) = parts.get(2).filter(|s| !s.is_empty()) {
        o.reset_value = r
            .parse()
            .map_err(|_| ParseError::ResetValue(r.to_string()))?;
    }
    Ok(o)
}

/// Drops repeated identical sub-queries, keeping the first (OpenTSDB puts them in a
/// `LinkedHashSet`, for the GET and the POST form alike), and renumbers the rest.
fn dedup_subqueries(queries: &mut Vec<SubQuery>) {
    let mut kept: Vec<SubQuery> = Vec::with_capacity(queries.len());
    for q in queries.drain(..) {
        if !kept.iter().any(|k| same_subquery(k, &q)) {
            kept.push(q);
        }
    }
    for (i, q) in kept.iter_mut().enumerate() {
        q.index = i;
    }
    *queries = kept;
}

/// The fields OpenTSDB's `TSSubQuery.equals` compares (what the user sent).
fn same_subquery(a: &SubQuery, b: &SubQuery) -> bool {
    let filters = |q: &SubQuery| -> Vec<(FilterType, String, String, bool)> {
        q.filters
            .iter()
            .map(|f| (f.kind, f.tagk.clone(), f.expr.clone(), f.group_by))
            .collect()
    };
    a.aggregator == b.aggregator
        && a.metric == b.metric
        && a.tsuids == b.tsuids
        && a.downsample.as_ref().map(|d| &d.spec) == b.downsample.as_ref().map(|d| &d.spec)
        && a.rate == b.rate
        && a.rate_options == b.rate_options
        && a.explicit_tags == b.explicit_tags
        && a.pre_aggregate == b.pre_aggregate
        && a.rollup_usage == b.rollup_usage
        && filters(a) == filters(b)
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
        // The filter braces first, as OpenTSDB reads them.
        assert_eq!(
            (q.filters[0].kind, q.filters[0].group_by),
            (FilterType::Regexp, false)
        );
        assert_eq!(
            (q.filters[1].kind, q.filters[1].group_by),
            (FilterType::Wildcard, true)
        );
        assert_eq!(
            (q.filters[2].kind, q.filters[2].group_by),
            (FilterType::LiteralOr, true)
        );
        // Tags.parseSameValues; TestTags.parseWithMetricMissingComma and
        // parseTooManyEqualSigns; a filter error is prefixed with the pair it came from.
        let q = parse_m("sum:m{host=web02,host=web02}", 0).unwrap();
        assert_eq!(q.filters.len(), 1);
        let q = parse_m("sum:m{host=web02}{host=web02}", 0).unwrap();
        assert_eq!((q.filters.len(), q.filters[0].group_by), (1, true));
        for (m, e) in [
            ("sum:m{host=web01 dc=lga}", "When parsing tag 'host=web01 dc=lga': invalid tag: host=web01 dc=lga"),
            ("sum:m{foo=bar=qux}", "When parsing tag 'foo=bar=qux': invalid tag: foo=bar=qux"),
            ("sum:m{host=wildcard(web)}", "When parsing tag 'host=wildcard(web)': Filter must contain an asterisk"),
            ("sum:m{host=literal_or(|)}", "When parsing tag 'host=literal_or(|)': Filter must contain more than just a pipe"),
            ("sum:m{host=nosuchfilter(*tsort)}{host=dummyfilter(*quirm)}",
             "When parsing filter 'host=dummyfilter(*quirm)': Could not find a tag value filter of the type: dummyfilter"),
        ] {
            assert_eq!(parse_m(m, 0).unwrap_err().to_string(), e);
        }
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

    /// TestQueryRpc: executeURIDuplicates / executePOSTDuplicates (identical sub-queries are
    /// one), the tsuid= sub-queries come before the m= ones, parseQueryMTypeWGroupByFilter
    /// MissingEquals, and TestTags.parseWithMetric{TrailingComma,ForwardComma,NullTagv}.
    #[test]
    fn opentsdb_query_rpc_vectors() {
        let p = |qs: &[(&str, &str)]| {
            let v: Vec<(String, String)> = qs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            from_params(&v, 10_000_000)
        };
        let q = p(&[
            ("start", "1h-ago"),
            ("m", "sum:sys.cpu.user"),
            ("m", "sum:sys.cpu.user"),
            ("m", "sum:sys.cpu.user"),
        ])
        .unwrap();
        assert_eq!(q.queries.len(), 1);
        let q = p(&[
            ("start", "1h-ago"),
            ("m", "sum:sys.cpu.user{host=a}"),
            ("tsuid", "sum:000001000001000001"),
            ("m", "sum:sys.cpu.user{host=b}"),
            ("m", "sum:sys.cpu.user{host=a}"),
        ])
        .unwrap();
        let order: Vec<(usize, bool)> = q
            .queries
            .iter()
            .map(|s| (s.index, s.tsuids.is_empty()))
            .collect();
        assert_eq!(order, vec![(0, false), (1, true), (2, true)]);
        let j = from_json(
            br#"{"start":"1h-ago","queries":[{"metric":"sys.cpu.user","aggregator":"sum"},
                {"metric":"sys.cpu.user","aggregator":"sum"},
                {"metric":"sys.cpu.user","aggregator":"sum","downsample":"1m-avg"}]}"#,
            10_000_000,
        )
        .unwrap();
        assert_eq!(j.queries.len(), 2);
        assert_eq!(j.queries[1].index, 1);
        for bad in [
            "sum:sys.cpu.0{host=wildcard(*tsort)}{hostwildcard(*quirm)}",
            "sum:sys.cpu.user{host=web01,}",
            "sum:sys.cpu.user{,host=web01}",
            "sum:sys.cpu.user{host=}",
            "sum:sys.cpu.user{=web01}",
            "sum:sys.cpu.0{host=nosuchfilter(*tsort)}",
            "sum:",
            "",
        ] {
            assert!(parse_m(bad, 0).is_err(), "{bad}");
        }
        assert_eq!(
            parse_m("sum:sys.cpu.user{host=web01,}", 0)
                .unwrap_err()
                .to_string(),
            "When parsing tag '': invalid tag: "
        );
        assert_eq!(
            parse_m("", 0).unwrap_err().to_string(),
            "The query string was empty"
        );
        // An empty part ends the first braces when filters follow.
        let e = parse_m("sum:sys.cpu.user{}{host=web01}", 0).unwrap();
        assert_eq!(e.filters.len(), 1);
        assert!(!e.filters[0].group_by);
        assert!(parse_m("sum:sys.cpu.0{}{}", 0).unwrap().filters.is_empty());
        // More than five :-separated parts.
        assert!(parse_m("sum:rate:1m-avg:explicit_tags:pre-agg:m", 0)
            .unwrap_err()
            .to_string()
            .contains("too many"));
    }

    /// QueryRpc.parseRateOptions: max and reset are the 2nd and 3rd values whatever the 1st.
    #[test]
    fn rate_options_are_positional() {
        let o = |m: &str| parse_m(m, 0).unwrap().rate_options.unwrap();
        let a = o("sum:rate{counter,100,5}:m");
        assert!(a.counter && !a.drop_resets && a.counter_max == 100 && a.reset_value == 5);
        let b = o("sum:rate{,100}:m");
        assert!(!b.counter && b.counter_max == 100 && b.reset_value == 0);
        let c = o("sum:rate{100}:m");
        assert_eq!(
            c.counter_max,
            i64::MAX,
            "a lone number is the counter flag's place"
        );
        let d = o("sum:rate{dropcounter,,10}:m");
        assert!(d.counter && d.drop_resets && d.counter_max == i64::MAX && d.reset_value == 10);
        assert_eq!(
            parse_m("sum:rate{counter,x}:m", 0).unwrap_err().to_string(),
            "Max value of counter was not a number, received 'x'"
        );
        assert!(parse_m("sum:rate{a,1,2,3}:m", 0).is_err());
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
