//! `/functions` (the metadata Grafana's function editor reads: group, params with types,
//! required/multiple/default/options; strict JSON: an infinite default is the string "inf",
//! which our parser accepts where a number is expected) and `/events/get_data` (global
//! OpenTSDB annotations as graphite events).

use super::error::Error;
use super::{json_or_jsonp, now_s, Params};
use crate::query::graphite::functions::more_spec as more;
use crate::query::graphite::functions::more_special;
use crate::query::graphite::series::AGG_FUNCS;
use crate::server::http::Reply;
use crate::server::state::GraphiteWeb;
use http::StatusCode;
use serde_json::{json, Map, Value};

/// One line per function: `Group|name(param:type[!|*][=default], …)|description`.
/// `!` required, `*` repeatable; defaults are JSON literals.
const CATALOGUE: &str = r#"
Alias|alias(seriesList:seriesList!, newName:string!)|Takes one metric or a wildcard seriesList and a string in quotes. Prints the string instead of the metric name in the legend.
Alias|aliasByMetric(seriesList:seriesList!)|Takes a seriesList and applies an alias derived from the base metric name.
Alias|aliasByNode(seriesList:seriesList!, nodes:nodeOrTag!*)|Takes a seriesList and applies an alias derived from one or more "node" portion/s of the target name or tags. Node indices are 0 indexed.
Alias|aliasByTags(seriesList:seriesList!, tags:nodeOrTag!*)|Takes a seriesList and applies an alias derived from one or more tags and/or nodes.
Alias|aliasSub(seriesList:seriesList!, search:string!, replace:string!)|Runs series names through a regex search/replace (Python re.sub syntax; back-references as \1).
Combine|aggregate(seriesList:seriesList!, func:aggFunc!, xFilesFactor:float)|Aggregate series using the specified function.
Combine|applyByNode(seriesList:seriesList!, nodeNum:node!, templateFunction:string!, newName:string)|Takes a seriesList and applies some complicated function (described by a string), replacing templates with unique prefixes of keys from the seriesList.
Combine|asPercent(seriesList:seriesList!, total:any, nodes:nodeOrTag*)|Calculates a percentage of the total of a wildcard series.
Combine|averageSeries(seriesLists:seriesList!*)|Short Alias: avg(). Takes one metric or a wildcard seriesList. Draws the average value of all metrics passed at each time.
Combine|countSeries(seriesLists:seriesList*)|Draws a horizontal line representing the number of nodes found in the seriesList.
Combine|diffSeries(seriesLists:seriesList!*)|Subtracts series 2 through n from series 1.
Combine|divideSeries(dividendSeriesList:seriesList!, divisorSeries:seriesList!)|Takes a dividend metric and a divisor metric and draws the division result.
Combine|group(seriesLists:seriesList*)|Takes an arbitrary number of seriesLists and adds them to a single seriesList.
Combine|groupByNode(seriesList:seriesList!, nodeNum:nodeOrTag!, callback:aggOrSeriesFunc="average")|Takes a serieslist and maps a callback to subgroups within as defined by a common node.
Combine|groupByNodes(seriesList:seriesList!, callback:aggOrSeriesFunc!, nodes:nodeOrTag*)|Takes a serieslist and maps a callback to subgroups within as defined by multiple nodes.
Combine|groupByTags(seriesList:seriesList!, callback:aggOrSeriesFunc!, tags:tag!*)|Takes a serieslist and maps a callback to subgroups within as defined by a common set of tags.
Combine|maxSeries(seriesLists:seriesList!*)|Takes one metric or a wildcard seriesList. For each datapoint from each metric passed in, pick the maximum value and graph it.
Combine|minSeries(seriesLists:seriesList!*)|Takes one metric or a wildcard seriesList. For each datapoint from each metric passed in, pick the minimum value and graph it.
Combine|multiplySeries(seriesLists:seriesList!*)|Takes two or more series and multiplies their points.
Combine|percentileOfSeries(seriesList:seriesList!, n:float!, interpolate:boolean=false)|percentileOfSeries returns a single series which is composed of the n-percentile values taken across a wildcard series at each point.
Combine|rangeOfSeries(seriesLists:seriesList!*)|Takes a wildcard seriesList. Distills down a set of inputs into the range of the series.
Combine|stddevSeries(seriesLists:seriesList!*)|Takes one metric or a wildcard seriesList. Draws the standard deviation of all metrics passed at each time.
Combine|sumSeries(seriesLists:seriesList!*)|Short form: sum(). Adds metrics together and returns the sum at each datapoint.
Transform|add(seriesList:seriesList!, constant:float!)|Takes one metric or a wildcard seriesList followed by a constant, and adds the constant to each datapoint.
Transform|changed(seriesList:seriesList!)|Takes one metric or a wildcard seriesList. Output 1 when the value changed, 0 when null or the same.
Transform|exp(seriesList:seriesList!)|Raise e to the power of the datapoint, where e = 2.718281... is the base of natural logarithms.
Transform|interpolate(seriesList:seriesList!, limit:intOrInf="inf")|Takes one metric or a wildcard seriesList, and optionally a limit to the number of 'None' values to skip over. Continues the line with the last received value when gaps ('None' values) appear in your data, rather than breaking your line.
Transform|isNonNull(seriesList:seriesList!)|Takes a metric or wildcard seriesList and counts up the number of non-null values.
Transform|minMax(seriesList:seriesList!)|Applies the popular min max normalization technique, which takes each point and applies the following normalization transformation to it: normalized = (point - min) / (max - min).
Transform|offsetToZero(seriesList:seriesList!)|Offsets a metric or wildcard seriesList by subtracting the minimum value in the series from each datapoint.
Transform|round(seriesList:seriesList!, precision:integer)|Takes one metric or a wildcard seriesList optionally followed by a precision, and rounds each datapoint.
Transform|scaleToSeconds(seriesList:seriesList!, seconds:float!)|Takes one metric or a wildcard seriesList and returns "value per seconds" where seconds is a last argument to this functions.
Transform|squareRoot(seriesList:seriesList!)|Takes one metric or a wildcard seriesList, and computes the square root of each datapoint.
Transform|absolute(seriesList:seriesList!)|Takes one metric or a wildcard seriesList and applies the mathematical abs function to each datapoint.
Transform|delay(seriesList:seriesList!, steps:integer!)|Shifts all samples later by an integer number of steps.
Transform|derivative(seriesList:seriesList!)|This is the opposite of the integral function.
Transform|hitcount(seriesList:seriesList!, intervalString:interval!, alignToInterval:boolean=false)|Estimate hit counts from a list of time series.
Transform|integral(seriesList:seriesList!)|This will show the sum over time, sort of like a continuous addition function.
Transform|invert(seriesList:seriesList!)|Takes one metric or a wildcard seriesList, and inverts each datapoint (i.e. 1/x).
Transform|keepLastValue(seriesList:seriesList!, limit:intOrInf="inf")|Takes one metric or a wildcard seriesList, and optionally a limit to the number of 'None' values to skip over.
Transform|log(seriesList:seriesList!, base:integer=10)|Takes one metric or a wildcard seriesList, a base, and draws the y-axis in logarithmic format.
Transform|nonNegativeDerivative(seriesList:seriesList!, maxValue:float, minValue:float)|Same as the derivative function above, but ignores datapoints that trend down.
Transform|offset(seriesList:seriesList!, factor:float!)|Takes one metric or a wildcard seriesList followed by a constant, and adds the constant to each datapoint.
Transform|perSecond(seriesList:seriesList!, maxValue:float, minValue:float)|NonNegativeDerivative adjusted for the series time interval.
Transform|pow(seriesList:seriesList!, factor:float!)|Takes one metric or a wildcard seriesList followed by a constant, and raises the datapoint by the power of the constant provided at each point.
Transform|scale(seriesList:seriesList!, factor:float!)|Takes one metric or a wildcard seriesList followed by a constant, and multiplies the datapoint by the constant provided at each point.
Transform|smartSummarize(seriesList:seriesList!, intervalString:interval!, func:aggFunc="sum", alignTo:string)|Smarter version of summarize.
Transform|summarize(seriesList:seriesList!, intervalString:interval!, func:aggFunc="sum", alignToFrom:boolean=false)|Summarize the data into interval buckets of a certain size.
Transform|timeShift(seriesList:seriesList!, timeShift:interval!, resetEnd:boolean=true, alignDST:boolean=false)|Takes one metric or a wildcard seriesList, followed by a quoted string with the length of time (See from / until in the Render API for examples of time formats).
Transform|transformNull(seriesList:seriesList!, default:float=0, referenceSeries:seriesList)|Takes a metric or wildcard seriesList and replaces null values with the value specified by default.
Calculate|movingAverage(seriesList:seriesList!, windowSize:intOrInterval!, xFilesFactor:float)|Graphs the moving average of a metric (or metrics) over a fixed number of past points, or a time interval.
Calculate|movingMax(seriesList:seriesList!, windowSize:intOrInterval!, xFilesFactor:float)|Graphs the moving maximum of a metric (or metrics) over a fixed number of past points, or a time interval.
Calculate|movingMedian(seriesList:seriesList!, windowSize:intOrInterval!, xFilesFactor:float)|Graphs the moving median of a metric (or metrics) over a fixed number of past points, or a time interval.
Calculate|movingMin(seriesList:seriesList!, windowSize:intOrInterval!, xFilesFactor:float)|Graphs the moving minimum of a metric (or metrics) over a fixed number of past points, or a time interval.
Calculate|movingSum(seriesList:seriesList!, windowSize:intOrInterval!, xFilesFactor:float)|Graphs the moving sum of a metric (or metrics) over a fixed number of past points, or a time interval.
Calculate|movingWindow(seriesList:seriesList!, windowSize:intOrInterval!, func:aggFunc="average", xFilesFactor:float)|Graphs a moving window function of a metric (or metrics) over a fixed number of past points, or a time interval.
Calculate|nPercentile(seriesList:seriesList!, n:integer!)|Returns n-percent of each series in the seriesList.
Calculate|stdev(seriesList:seriesList!, points:integer!, windowTolerance:float=0.1)|Takes one metric or a wildcard seriesList followed by an integer N. Draw the Standard Deviation of all metrics passed for the past N datapoints.
Filter Series|fallbackSeries(seriesList:seriesList!, fallback:seriesList!)|Takes a wildcard seriesList, and a second fallback metric. If the wildcard does not match any series, draws the fallback metric.
Filter Series|mostDeviant(seriesList:seriesList!, n:integer!)|Takes one metric or a wildcard seriesList followed by an integer N. Draws the N most deviant metrics.
Filter Series|unique(seriesLists:seriesList*)|Takes an arbitrary number of seriesLists and returns unique series, filtered by name.
Filter Data|removeAbovePercentile(seriesList:seriesList!, n:float!)|Removes data above the nth percentile from the series or list of series provided.
Filter Data|removeBelowPercentile(seriesList:seriesList!, n:float!)|Removes data below the nth percentile from the series or list of series provided.
Filter Series|averageAbove(seriesList:seriesList!, n:float!)|Takes one metric or a wildcard seriesList followed by an integer N. Out of all metrics passed, draws only the metrics with an average value above N for the time period specified.
Filter Series|averageBelow(seriesList:seriesList!, n:float!)|Draws only the metrics with an average value below N for the time period specified.
Filter Series|currentAbove(seriesList:seriesList!, n:float!)|Draws only the metrics whose value is above N at the end of the time period specified.
Filter Series|currentBelow(seriesList:seriesList!, n:float!)|Draws only the metrics whose value is below N at the end of the time period specified.
Filter Series|exclude(seriesList:seriesList!, pattern:string!)|Takes a metric or a wildcard seriesList, followed by a regular expression in double quotes. Excludes metrics that match the regular expression.
Filter Series|grep(seriesList:seriesList!, pattern:string!)|Takes a metric or a wildcard seriesList, followed by a regular expression in double quotes. Excludes metrics that don't match the regular expression.
Filter Series|highest(seriesList:seriesList!, n:integer=1, func:aggFunc="average")|Takes one metric or a wildcard seriesList followed by an integer N and an aggregation function. Out of all metrics passed, draws only the N metrics with the highest aggregated value over the time period specified.
Filter Series|highestAverage(seriesList:seriesList!, n:integer!)|Draws only the top N metrics with the highest average value for the time period specified.
Filter Series|highestCurrent(seriesList:seriesList!, n:integer!)|Draws only the N metrics with the highest value at the end of the time period specified.
Filter Series|highestMax(seriesList:seriesList!, n:integer!)|Draws only the N metrics with the highest maximum value in the time period specified.
Filter Series|limit(seriesList:seriesList!, n:integer!)|Takes one metric or a wildcard seriesList followed by an integer N. Only draw the first N metrics.
Filter Series|lowest(seriesList:seriesList!, n:integer=1, func:aggFunc="average")|Draws only the N metrics with the lowest aggregated value over the time period specified.
Filter Series|lowestAverage(seriesList:seriesList!, n:integer!)|Draws only the bottom N metrics with the lowest average value for the time period specified.
Filter Series|lowestCurrent(seriesList:seriesList!, n:integer!)|Draws only the N metrics with the lowest value at the end of the time period specified.
Filter Series|maximumAbove(seriesList:seriesList!, n:float!)|Draws only the metrics with a maximum value above n.
Filter Series|maximumBelow(seriesList:seriesList!, n:float!)|Draws only the metrics with a maximum value below n.
Filter Series|minimumAbove(seriesList:seriesList!, n:float!)|Draws only the metrics with a minimum value above n.
Filter Series|minimumBelow(seriesList:seriesList!, n:float!)|Draws only the metrics with a minimum value below n.
Filter Series|removeEmptySeries(seriesList:seriesList!, xFilesFactor:float)|Takes one metric or a wildcard seriesList. Out of all metrics passed, draws only the metrics with not empty data.
Filter Data|removeAboveValue(seriesList:seriesList!, n:float!)|Removes data above the given threshold from the series or list of series provided.
Filter Data|removeBelowValue(seriesList:seriesList!, n:float!)|Removes data below the given threshold from the series or list of series provided.
Sorting|sortBy(seriesList:seriesList!, func:aggFunc="average", reverse:boolean=false)|Takes one metric or a wildcard seriesList followed by an aggregation function and an optional reverse parameter.
Sorting|sortByMinima(seriesList:seriesList!)|Takes one metric or a wildcard seriesList. Sorts the list of metrics by the lowest value across the time period specified, including only series that have a maximum value greater than 0.
Sorting|sortByMaxima(seriesList:seriesList!)|Takes one metric or a wildcard seriesList. Sorts the list of metrics in descending order by the maximum value across the time period specified.
Sorting|sortByName(seriesList:seriesList!, natural:boolean=false, reverse:boolean=false)|Takes one metric or a wildcard seriesList. Sorts the list of metrics by the metric name.
Sorting|sortByTotal(seriesList:seriesList!)|Takes one metric or a wildcard seriesList. Sorts the list of metrics in descending order by the sum of values across the time period specified.
Special|consolidateBy(seriesList:seriesList!, consolidationFunc:string!)|Takes one metric or a wildcard seriesList and a consolidation function name.
Special|cumulative(seriesList:seriesList!)|Takes one metric or a wildcard seriesList. When a graph is drawn where width of the graph size in pixels is smaller than the number of datapoints to be graphed, uses sum instead of average.
Special|setXFilesFactor(seriesList:seriesList!, xFilesFactor:float!)|Short form: xFilesFactor(). Takes one metric or a wildcard seriesList and an xFilesFactor value between 0 and 1.
Special|constantLine(value:float!)|Takes a float F. Draws a horizontal line at value F across the graph.
Special|seriesByTag(tagExpressions:string!*)|Returns a SeriesList of series matching all the specified tag expressions.
Graph|color(seriesList:seriesList!, theColor:string!)|Assigns the given color to the seriesList.
Graph|alpha(seriesList:seriesList!, alpha:float!)|Assigns the given alpha transparency setting to the series. Takes a float value between 0 and 1.
Graph|dashed(seriesList:seriesList!, dashLength:integer=5)|Draw the selected metrics with a dotted line with segments of length F.
Graph|lineWidth(seriesList:seriesList!, width:float!)|Draw the selected metrics with a line width of F, overriding the default value of 1, or the &lineWidth=X.X parameter.
Graph|secondYAxis(seriesList:seriesList!)|Graph the series on the secondary Y axis.
Graph|stacked(seriesLists:seriesList!, stack:string)|Takes one metric or a wildcard seriesList and change them so they are stacked; an optional stack name keeps several stacks apart.
Graph|drawAsInfinite(seriesList:seriesList!)|Takes one metric or a wildcard seriesList. If the value is zero, draw the line at 0. If the value is above zero, draw the line at infinity.
Graph|areaBetween(seriesList:seriesList!)|Draws the vertical area in between the two series in seriesList (with areaMode=stacked).
Graph|threshold(value:float!, label:string, color:string)|Draws a horizontal line at value F across the graph, with an optional label and color.
Graph|verticalLine(ts:date!, label:string, color:string)|Draws a vertical line at the designated timestamp with optional 'label' and 'color'.
Alias|legendValue(seriesList:seriesList!, valuesTypes:string*)|Appends a value (last, avg, total, min, max, …) to the metric name in the legend; a last argument si or binary formats it with prefixes.
Special|cactiStyle(seriesList:seriesList!, system:string, units:string)|Takes a series list and modifies the aliases to provide column aligned output with Current, Max, and Min values in the style of cacti.
"#;

/// Extra `options` per parameter name (besides aggFunc's list).
fn options(fname: &str, pname: &str, ptype: &str) -> Option<Vec<&'static str>> {
    if ptype == "aggFunc" || ptype == "aggOrSeriesFunc" {
        let mut v: Vec<&str> = AGG_FUNCS.to_vec();
        if ptype == "aggOrSeriesFunc" {
            v.extend([
                "averageSeries",
                "countSeries",
                "diffSeries",
                "maxSeries",
                "minSeries",
                "multiplySeries",
                "rangeOfSeries",
                "stddevSeries",
                "sumSeries",
            ]);
        }
        v.sort();
        return Some(v);
    }
    (fname == "consolidateBy" && pname == "consolidationFunc").then(|| {
        vec![
            "average", "avg", "avg_zero", "first", "last", "max", "min", "sum",
        ]
    })
}

fn suggestions(ptype: &str) -> Option<Vec<&'static str>> {
    match ptype {
        "interval" => Some(vec!["10min", "1h", "1d"]),
        "intOrInterval" => Some(vec![
            "5", "7", "10", "1min", "5min", "10min", "30min", "1hour",
        ]),
        _ => None,
    }
}

/// The catalogue as graphite-web's `/functions` object (keys in graphite's order per entry).
pub fn catalogue() -> Map<String, Value> {
    catalogue_of(&[CATALOGUE, more::CATALOGUE], true)
}

/// `/functions?type=pie`: the functions `pieMode` names.
pub fn pie_catalogue() -> Map<String, Value> {
    catalogue_of(&[more::PIE_CATALOGUE], false)
}

fn catalogue_of(texts: &[&str], aliases: bool) -> Map<String, Value> {
    let mut out = Map::new();
    let lines = texts.iter().flat_map(|t| t.lines());
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let mut parts = line.splitn(3, '|');
        let (group, sig, desc) = (
            parts.next().unwrap_or(""),
            parts.next().unwrap_or(""),
            parts.next().unwrap_or(""),
        );
        let (name, rest) = sig.split_once('(').expect("catalogue syntax");
        let rest = rest.strip_suffix(')').expect("catalogue syntax");
        let mut params = Vec::new();
        let mut shown = Vec::new();
        for p in rest.split(", ").filter(|p| !p.is_empty()) {
            let (pname, spec) = p.split_once(':').expect("param syntax");
            let (ty, default) = match spec.split_once('=') {
                Some((t, d)) => (t, Some(d)),
                None => (spec, None),
            };
            let required = ty.contains('!');
            let multiple = ty.contains('*');
            let ty = ty.trim_end_matches(['!', '*']);
            let mut m = Map::new();
            m.insert("name".into(), json!(pname));
            m.insert("type".into(), json!(ty));
            if required {
                m.insert("required".into(), json!(true));
            }
            if multiple {
                m.insert("multiple".into(), json!(true));
            }
            if let Some(d) = default {
                m.insert(
                    "default".into(),
                    serde_json::from_str(d).expect("catalogue default is JSON"),
                );
            }
            if let Some(o) = options(name, pname, ty).or_else(|| more::options(name, pname)) {
                m.insert("options".into(), json!(o));
            }
            let suggested = more::suggestions(name, pname).or_else(|| suggestions(ty));
            if let Some(s) = suggested.filter(|s| !s.is_empty()) {
                m.insert("suggestions".into(), json!(s));
            }
            shown.push(match default {
                Some(d) => format!("{pname}={}", d.replace('"', "'")),
                None if multiple => format!("*{pname}"),
                None => pname.to_string(),
            });
            params.push(Value::Object(m));
        }
        let entry = json!({
            "name": name,
            "function": format!("{name}({})", shown.join(", ")),
            "description": desc,
            "module": "graphite.render.functions",
            "group": group,
            "params": params,
        });
        out.insert(name.to_string(), entry);
    }
    if !aliases {
        return out;
    }
    // Short aliases appear as their own keys, as in graphite-web.
    for (alias, of) in [
        ("sum", "sumSeries"),
        ("avg", "averageSeries"),
        ("pct", "asPercent"),
        ("xFilesFactor", "setXFilesFactor"),
    ] {
        if let Some(mut e) = out.get(of).cloned() {
            e["name"] = json!(alias);
            out.insert(alias.into(), e);
        }
    }
    out
}

pub fn functions(p: &Params, one: Option<&str>) -> Result<Reply, Error> {
    let cat = if p.get("type") == Some("pie") {
        pie_catalogue()
    } else {
        catalogue()
    };
    let jsonp = p.get("jsonp");
    if let Some(name) = one {
        return match cat.get(name) {
            Some(e) => Ok(json_or_jsonp(StatusCode::OK, e.to_string(), jsonp)),
            None => Err(Error::UnknownFunction(name.to_string())),
        };
    }
    let filtered: Map<String, Value> = cat
        .into_iter()
        .filter(|(_, e)| p.get("group").is_none_or(|g| e["group"] == g))
        .collect();
    if p.truthy("grouped") {
        let mut g: Map<String, Value> = Map::new();
        for (k, e) in filtered {
            let grp = e["group"].as_str().unwrap_or("").to_string();
            g.entry(grp).or_insert_with(|| json!({}))[&k] = e;
        }
        return Ok(json_or_jsonp(
            StatusCode::OK,
            Value::Object(g).to_string(),
            jsonp,
        ));
    }
    Ok(json_or_jsonp(
        StatusCode::OK,
        Value::Object(filtered).to_string(),
        jsonp,
    ))
}

/// Global OpenTSDB annotations as graphite events: `when` = start (s), `what` = description,
/// `data` = notes, `tags` from the custom field `tags` (space or comma separated).
pub fn events(state: &GraphiteWeb, p: &Params) -> Result<Reply, Error> {
    let now = now_s();
    let t = |k: &str, d: i64| {
        p.get(k)
            .filter(|v| !v.is_empty() && *v != "undefined")
            .map(|v| crate::query::graphite::attime::parse_attime(v, now))
            .unwrap_or(Ok(d))
    };
    let (from, until) = (t("from", 0)?, t("until", now)?);
    let want: Vec<String> = p
        .all("tags")
        .iter()
        .flat_map(|t| t.split([' ', ',']))
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect();
    let union = p.get("set") == Some("union");
    let events = more_special::read_events(&state.engine, from, until)?;
    let mut out = Vec::new();
    for (i, e) in events.into_iter().enumerate() {
        let ok = want.is_empty()
            || if union {
                want.iter().any(|w| e.tags.contains(w))
            } else {
                want.iter().all(|w| e.tags.contains(w))
            };
        if ok {
            out.push(json!({"when": e.when, "what": e.note.description, "data": e.note.notes, "tags": e.tags, "id": i + 1}));
        }
    }
    Ok(json_or_jsonp(
        StatusCode::OK,
        Value::Array(out).to_string(),
        p.get("jsonp"),
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn catalogue_is_strict_json_and_covers_the_library() {
        let c = super::catalogue();
        let text = serde_json::Value::Object(c.clone()).to_string();
        assert!(!text.contains("Infinity"));
        let s = &c["summarize"];
        assert_eq!(s["group"], "Transform");
        assert_eq!(
            s["params"][0],
            serde_json::json!({"name": "seriesList", "type": "seriesList", "required": true})
        );
        assert_eq!(s["params"][2]["default"], "sum");
        assert!(s["params"][2]["options"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("avg_zero")));
        assert_eq!(c["sum"]["name"], "sum");
        assert!(c.len() >= 70);
    }
}
