//! The functions of graphite-web 1.1.10 that the first families lacked (`more_*` modules):
//! their `/functions` catalogue (the same line format as the server's catalogue, read by
//! `meta`), graphite-web's `validateParams` over it (its error words), and helpers they share:
//! Python's number formatting and a source that serves series already evaluated (for
//! `reduceSeries`, which calls a function by name on series it picked).

use super::super::eval::{err, Args, Ctx, EvalError, Points, Source, R};
use super::super::index::Entry;
use super::super::parser::Expr;
use super::super::series::{is_agg_func, Series, AGG_FUNCS};
use std::sync::Arc;

/// One line per function: `Group|name(param:type[!|*][=default], …)|description`, as the
/// server's catalogue (`!` required, `*` repeatable, defaults JSON). Aliases (`map`, `reduce`,
/// `sin`, `time`, `randomWalk`) are lines of their own, as graphite-web lists each name.
pub const CATALOGUE: &str = r#"
Combine|aggregateSeriesLists(seriesListFirstPos:seriesList!, seriesListSecondPos:seriesList!, func:aggFunc!, xFilesFactor:float)|Iterates over a two lists and aggregates using specified function list1[0] to list2[0], list1[1] to list2[1] and so on. The lists will need to be the same length.
Combine|aggregateWithWildcards(seriesList:seriesList!, func:aggFunc!, position:node*)|Call aggregator after inserting wildcards at the given position(s).
Combine|averageSeriesWithWildcards(seriesList:seriesList!, position:node*)|Call averageSeries after inserting wildcards at the given position(s).
Combine|diffSeriesLists(seriesListFirstPos:seriesList!, seriesListSecondPos:seriesList!)|Iterates over a two lists and subtracts series lists 2 through n from series 1 list1[0] to list2[0], list1[1] to list2[1] and so on. The lists will need to be the same length.
Combine|divideSeriesLists(dividendSeriesList:seriesList!, divisorSeriesList:seriesList!)|Iterates over a two lists and divides list1[0] by list2[0], list1[1] by list2[1] and so on. The lists need to be the same length.
Combine|map(seriesList:seriesList!, mapNodes:nodeOrTag!*)|Short form: map(). Takes a seriesList and maps it to a list of seriesList. Each seriesList has the given mapNodes in common.
Combine|mapSeries(seriesList:seriesList!, mapNodes:nodeOrTag!*)|Short form: map(). Takes a seriesList and maps it to a list of seriesList. Each seriesList has the given mapNodes in common.
Combine|multiplySeriesLists(seriesListFirstPos:seriesList!, seriesListSecondPos:seriesList!)|Iterates over a two lists and multiplies list1[0] by list2[0], list1[1] by list2[1] and so on. The lists need to be the same length.
Combine|multiplySeriesWithWildcards(seriesList:seriesList!, position:node*)|Call multiplySeries after inserting wildcards at the given position(s).
Combine|powSeries(seriesList:seriesList!*)|Takes two or more series and pows their points. A constant line may be used.
Combine|reduce(seriesLists:seriesLists!, reduceFunction:string!, reduceNode:node!, reduceMatchers:string!*)|Short form: reduce(). Takes a list of seriesLists and reduces it to a list of series by means of the reduceFunction.
Combine|reduceSeries(seriesLists:seriesLists!, reduceFunction:string!, reduceNode:node!, reduceMatchers:string!*)|Short form: reduce(). Takes a list of seriesLists and reduces it to a list of series by means of the reduceFunction.
Combine|sumSeriesLists(seriesListFirstPos:seriesList!, seriesListSecondPos:seriesList!)|Iterates over a two lists and subtracts series lists 2 through n from series 1 list1[0] to list2[0], list1[1] to list2[1] and so on. The lists will need to be the same length.
Combine|sumSeriesWithWildcards(seriesList:seriesList!, position:node*)|Call sumSeries after inserting wildcards at the given position(s).
Combine|weightedAverage(seriesListAvg:seriesList!, seriesListWeight:seriesList!, nodes:nodeOrTag*)|Takes a series of average values and a series of weights and produces a weighted average for all values. The corresponding values should share one or more zero-indexed nodes and/or tags.
Transform|compressPeriodicGaps(seriesList:seriesList!)|Tries to intelligently remove periodic None's from series, recalculating start, stop and step values.
Transform|integralByInterval(seriesList:seriesList!, intervalUnit:string!)|This will do the same as integral() funcion, except resetting the total to 0 at the given time in the parameter "from".
Transform|logit(seriesList:seriesList!)|Takes one metric or a wildcard seriesList and applies the logit function log(x / (1 - x)) to each datapoint.
Transform|sigmoid(seriesList:seriesList!)|Takes one metric or a wildcard seriesList and applies the sigmoid function 1 / (1 + exp(-x)) to each datapoint.
Transform|sin(name:string!, amplitude:integer=1, step:integer=60)|Short Alias: sin(). Just returns the sine of the current time. The optional amplitude parameter changes the amplitude of the wave.
Transform|sinFunction(name:string!, amplitude:integer=1, step:integer=60)|Short Alias: sin(). Just returns the sine of the current time. The optional amplitude parameter changes the amplitude of the wave.
Transform|time(name:string!, step:integer=60)|Short Alias: time(). Just returns the timestamp for each X value.
Transform|timeFunction(name:string!, step:integer=60)|Short Alias: time(). Just returns the timestamp for each X value.
Transform|timeSlice(seriesList:seriesList!, startSliceAt:date!, endSliceAt:date="now")|Takes one metric or a wildcard metric, followed by a quoted string with the time to start the line and another quoted string with the time to end the line. The values outside of the slice are set to None.
Transform|timeStack(seriesList:seriesList!, timeShiftUnit:interval="1d", timeShiftStart:integer=0, timeShiftEnd:integer=7)|Takes one metric or a wildcard seriesList, followed by a quoted string with the length of time (See from / until in the Render API for examples of time formats). Also takes a start multiplier and end multiplier for the length of time. Create a seriesList which is composed the original metric series stacked with time shifts starting time shifts from the start multiplier through the end multiplier.
Calculate|aggregateLine(seriesList:seriesList!, func:aggFunc="average", keepStep:boolean=false)|Takes a metric or wildcard seriesList and draws a horizontal line based on the function applied to each series.
Calculate|exponentialMovingAverage(seriesList:seriesList!, windowSize:intOrInterval!)|Takes a series of values and a window size and produces an exponential moving average utilizing the following formula: ema(current) = constant * (Current Value) + (1 - constant) * ema(previous).
Calculate|holtWintersAberration(seriesList:seriesList!, delta:integer=3, bootstrapInterval:interval="7d", seasonality:interval="1d")|Performs a Holt-Winters forecast using the series as input data and plots the positive or negative deviation of the series data from the forecast.
Calculate|holtWintersConfidenceArea(seriesList:seriesList!, delta:integer=3, bootstrapInterval:interval="7d", seasonality:interval="1d")|Performs a Holt-Winters forecast using the series as input data and plots the area between the upper and lower bands of the predicted forecast deviations.
Calculate|holtWintersConfidenceBands(seriesList:seriesList!, delta:integer=3, bootstrapInterval:interval="7d", seasonality:interval="1d")|Performs a Holt-Winters forecast using the series as input data and plots upper and lower bands with the predicted forecast deviations.
Calculate|holtWintersForecast(seriesList:seriesList!, bootstrapInterval:interval="7d", seasonality:interval="1d")|Performs a Holt-Winters forecast using the series as input data. Data from `bootstrapInterval` (one week by default) previous to the series is used to bootstrap the initial forecast.
Calculate|identity(name:string!)|Identity function: Returns datapoints where the value equals the timestamp of the datapoint.
Calculate|linearRegression(seriesList:seriesList!, startSourceAt:date, endSourceAt:date)|Graphs the liner regression function by least squares method.
Filter Series|averageOutsidePercentile(seriesList:seriesList!, n:float!)|Removes series lying inside an average percentile interval.
Filter Series|filterSeries(seriesList:seriesList!, func:aggFunc!, operator:string!, threshold:float!)|Takes one metric or a wildcard seriesList followed by a consolidation function, an operator and a threshold. Draws only the metrics which match the filter expression.
Filter Series|removeBetweenPercentile(seriesList:seriesList!, n:float!)|Removes series that do not have an value lying in the x-percentile of all the values at a moment.
Filter Series|useSeriesAbove(seriesList:seriesList!, value:float!, search:string!, replace:string!)|Compares the maximum of each series against the given `value`. If the series maximum is greater than `value`, the regular expression search and replace is applied against the series name to plot a related metric.
Alias|aliasQuery(seriesList:seriesList!, search:string!, replace:string!, newName:string!)|Performs a query to alias the metrics in seriesList.
Alias|lower(seriesList:seriesList!, pos:integer*)|Takes one metric or a wildcard seriesList and lowers the case of each letter. Optionally, a letter position to lower case can be specified, in which case only the letter at the specified position gets lower-cased.
Alias|upper(seriesList:seriesList!, pos:integer*)|Takes one metric or a wildcard seriesList and uppers the case of each letter. Optionally, a letter position to upper case can be specified, in which case only the letter at the specified position gets upper-cased.
Special|events(tags:string!*)|Returns the number of events at this point in time. Usable with drawAsInfinite.
Special|randomWalk(name:string!, step:integer=60)|Short Alias: randomWalk(). Returns a random walk starting at 0. This is great for testing when there is no real data in whisper.
Special|randomWalkFunction(name:string!, step:integer=60)|Short Alias: randomWalk(). Returns a random walk starting at 0. This is great for testing when there is no real data in whisper.
Special|substr(seriesList:seriesList!, start:node=0, stop:node=0)|Takes one metric or a wildcard seriesList followed by 1 or 2 integers. Assume that the metric name is a list or array, with each element separated by dots. Prints n - length elements of the array (if only one integer n is passed) or n - m elements of the array (if two integers n and m are passed).
"#;

/// `/functions?type=pie`: graphite-web's `PieFunctions`, what `pieMode` names.
pub const PIE_CATALOGUE: &str = r#"
Pie|average(series:series!)|Return the average
Pie|maximum(series:series!)|Return the maximum
Pie|minimum(series:series!)|Return the minimum
"#;

/// A pie function (`pieMode`) of one series: `average` (graphite-web's `safeDiv(safeSum,
/// safeLen)`), `maximum`, `minimum`; `None` for a mode that is none of them. A series without
/// values is a slice of 0 (graphite-web's `func(…) or 0`).
pub fn pie_value(mode: &str, s: &Series) -> Option<f64> {
    let f = match mode {
        "average" => "average",
        "maximum" => "max",
        "minimum" => "min",
        _ => return None,
    };
    Some(super::super::series::aggregate(f, &s.values).unwrap_or(0.0))
}

/// Every name of graphite-web 1.1.10's `SeriesFunctions` (154, aliases included).
pub const GRAPHITE_WEB_NAMES: &[&str] = &[
    "absolute",
    "add",
    "aggregate",
    "aggregateLine",
    "aggregateSeriesLists",
    "aggregateWithWildcards",
    "alias",
    "aliasByMetric",
    "aliasByNode",
    "aliasByTags",
    "aliasQuery",
    "aliasSub",
    "alpha",
    "applyByNode",
    "areaBetween",
    "asPercent",
    "averageAbove",
    "averageBelow",
    "averageOutsidePercentile",
    "averageSeries",
    "averageSeriesWithWildcards",
    "avg",
    "cactiStyle",
    "changed",
    "color",
    "compressPeriodicGaps",
    "consolidateBy",
    "constantLine",
    "countSeries",
    "cumulative",
    "currentAbove",
    "currentBelow",
    "dashed",
    "delay",
    "derivative",
    "diffSeries",
    "diffSeriesLists",
    "divideSeries",
    "divideSeriesLists",
    "drawAsInfinite",
    "events",
    "exclude",
    "exp",
    "exponentialMovingAverage",
    "fallbackSeries",
    "filterSeries",
    "grep",
    "group",
    "groupByNode",
    "groupByNodes",
    "groupByTags",
    "highest",
    "highestAverage",
    "highestCurrent",
    "highestMax",
    "hitcount",
    "holtWintersAberration",
    "holtWintersConfidenceArea",
    "holtWintersConfidenceBands",
    "holtWintersForecast",
    "identity",
    "integral",
    "integralByInterval",
    "interpolate",
    "invert",
    "isNonNull",
    "keepLastValue",
    "legendValue",
    "limit",
    "lineWidth",
    "linearRegression",
    "log",
    "logit",
    "lower",
    "lowest",
    "lowestAverage",
    "lowestCurrent",
    "map",
    "mapSeries",
    "maxSeries",
    "maximumAbove",
    "maximumBelow",
    "minMax",
    "minSeries",
    "minimumAbove",
    "minimumBelow",
    "mostDeviant",
    "movingAverage",
    "movingMax",
    "movingMedian",
    "movingMin",
    "movingSum",
    "movingWindow",
    "multiplySeries",
    "multiplySeriesLists",
    "multiplySeriesWithWildcards",
    "nPercentile",
    "nonNegativeDerivative",
    "offset",
    "offsetToZero",
    "pct",
    "perSecond",
    "percentileOfSeries",
    "pow",
    "powSeries",
    "randomWalk",
    "randomWalkFunction",
    "rangeOfSeries",
    "reduce",
    "reduceSeries",
    "removeAbovePercentile",
    "removeAboveValue",
    "removeBelowPercentile",
    "removeBelowValue",
    "removeBetweenPercentile",
    "removeEmptySeries",
    "round",
    "scale",
    "scaleToSeconds",
    "secondYAxis",
    "seriesByTag",
    "setXFilesFactor",
    "sigmoid",
    "sin",
    "sinFunction",
    "smartSummarize",
    "sortBy",
    "sortByMaxima",
    "sortByMinima",
    "sortByName",
    "sortByTotal",
    "squareRoot",
    "stacked",
    "stddevSeries",
    "stdev",
    "substr",
    "sum",
    "sumSeries",
    "sumSeriesLists",
    "sumSeriesWithWildcards",
    "summarize",
    "threshold",
    "time",
    "timeFunction",
    "timeShift",
    "timeSlice",
    "timeStack",
    "transformNull",
    "unique",
    "upper",
    "useSeriesAbove",
    "verticalLine",
    "weightedAverage",
    "xFilesFactor",
];

/// `filterSeries`' operators.
pub const OPERATORS: &[&str] = &["!=", "<", "<=", "=", ">", ">="];

/// Options of a parameter beyond those of its type (graphite-web's `Param(options=…)`).
pub fn options(fname: &str, pname: &str) -> Option<Vec<&'static str>> {
    (fname == "filterSeries" && pname == "operator").then(|| OPERATORS.to_vec())
}

/// Suggestions graphite-web lists for a parameter (`Param(suggestions=…)`), where they differ
/// from its type's.
pub fn suggestions(fname: &str, pname: &str) -> Option<Vec<&'static str>> {
    match (fname, pname) {
        (f, "bootstrapInterval") if f.starts_with("holtWinters") => Some(vec!["7d", "30d"]),
        (f, "seasonality") if f.starts_with("holtWinters") => Some(vec!["1d", "7d"]),
        ("timeStack", "timeShiftUnit") => {
            Some(vec!["1h", "6h", "12h", "1d", "2d", "7d", "14d", "30d"])
        }
        // The catalogue's intervals otherwise get the type's (summarize's) suggestions;
        // graphite-web gives these none.
        (f, _) if f.starts_with("holtWinters") || f == "timeStack" => Some(vec![]),
        _ => None,
    }
}

/// One parameter of a catalogue line.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    pub name: String,
    pub ty: String,
    pub required: bool,
    pub multiple: bool,
}

/// The parameters of `fname` in [`CATALOGUE`] (`None` for a name not there).
pub fn params(fname: &str) -> Option<Vec<Param>> {
    let line = CATALOGUE.lines().find(|l| {
        l.split('|')
            .nth(1)
            .and_then(|sig| sig.split_once('('))
            .is_some_and(|(n, _)| n == fname)
    })?;
    let sig = line.split('|').nth(1)?;
    let inner = sig.split_once('(')?.1.strip_suffix(')')?;
    Some(
        inner
            .split(", ")
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (name, spec) = p.split_once(':').unwrap_or((p, ""));
                let ty = spec.split('=').next().unwrap_or("");
                Param {
                    name: name.to_string(),
                    ty: ty.trim_end_matches(['!', '*']).to_string(),
                    required: ty.contains('!'),
                    multiple: ty.contains('*'),
                }
            })
            .collect(),
    )
}

/// Python's `repr` of a literal argument, as graphite-web's messages quote it.
pub fn py_repr(e: &Expr) -> String {
    match e {
        Expr::Num(n) if n.fract() == 0.0 && n.abs() < 1e16 => format!("{}", *n as i64),
        Expr::Num(n) => super::super::series::py_float(*n),
        Expr::Str(s) => format!("'{s}'"),
        Expr::Bool(b) => if *b { "True" } else { "False" }.into(),
        Expr::None => "None".into(),
        Expr::Path(p) => p.clone(),
        Expr::Call(c) => c.text.clone(),
    }
}

/// graphite-web's `validateParams` for a function of [`CATALOGUE`], in its words: too many
/// arguments, a missing required one, an unknown keyword, a value its type refuses.
/// (graphite-web only logs these unless `ENFORCE_INPUT_VALIDATION`; the function then mostly
/// fails anyway, with a Python exception. We refuse them all, with these words.)
pub fn validate(a: &Args) -> R<()> {
    let f = a.call.name.as_str();
    let Some(params) = params(f) else {
        return Ok(());
    };
    let (args, kwargs) = (&a.call.args, &a.call.kwargs);
    let last_multiple = params.last().is_some_and(|p| p.multiple);
    if args.len() + kwargs.len() > params.len() && !last_multiple {
        return err(format!(
            "Too many parameters specified for function \"{f}\""
        ));
    }
    for (i, arg) in args.iter().enumerate() {
        let p = &params[i.min(params.len() - 1)];
        check_value(f, p, arg)?;
    }
    for p in params.iter().skip(args.len()) {
        match kwargs.iter().find(|(k, _)| *k == p.name) {
            Some((_, v)) => check_value(f, p, v)?,
            None if p.required => {
                return err(format!(
                    "Missing required parameter \"{}\" for function \"{f}\"",
                    p.name
                ))
            }
            None => {}
        }
    }
    let unexpected: Vec<&str> = kwargs
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| !params.iter().skip(args.len()).any(|p| p.name == *k))
        .collect();
    if !unexpected.is_empty() {
        return err(format!(
            "Unexpected key word arguments: {}",
            unexpected.join(", ")
        ));
    }
    Ok(())
}

fn check_value(f: &str, p: &Param, v: &Expr) -> R<()> {
    if matches!(v, Expr::None) {
        if p.required {
            return invalid(f, p, v);
        }
        return Ok(());
    }
    if let Some(opts) = options(f, &p.name) {
        let ok = matches!(v, Expr::Str(s) if opts.contains(&s.as_str()));
        if !ok {
            return err(format!(
                "Invalid option specified for function \"{f}\" parameter \"{}\": {}",
                p.name,
                py_repr(v)
            ));
        }
    }
    let ok = match p.ty.as_str() {
        "seriesList" | "seriesLists" => matches!(v, Expr::Path(_) | Expr::Call(_)),
        "integer" | "node" => match v {
            Expr::Num(n) => n.fract() == 0.0,
            Expr::Bool(_) => true,
            Expr::Str(s) => s.trim().parse::<i64>().is_ok(),
            _ => false,
        },
        "float" => match v {
            Expr::Num(_) | Expr::Bool(_) => true,
            Expr::Str(s) => {
                let t = s.trim().to_ascii_lowercase();
                t.parse::<f64>().is_ok() || matches!(t.as_str(), "inf" | "-inf" | "nan")
            }
            _ => false,
        },
        "boolean" => match v {
            Expr::Bool(_) => true,
            Expr::Num(n) => *n == 0.0 || *n == 1.0,
            Expr::Str(s) => matches!(s.to_ascii_lowercase().as_str(), "true" | "false"),
            _ => false,
        },
        "aggFunc" => match v {
            Expr::Str(s) | Expr::Path(s) => {
                let base = s.strip_suffix("Series").unwrap_or(s);
                AGG_FUNCS.contains(&base) || is_agg_func(base) || base == "average"
            }
            _ => false,
        },
        "interval" => match v {
            Expr::Str(s) => super::super::attime::parse_offset(s).is_ok(),
            _ => false,
        },
        "intOrInterval" => match v {
            Expr::Num(n) => n.fract() == 0.0,
            Expr::Str(s) => {
                s.trim().parse::<i64>().is_ok() || super::super::attime::parse_offset(s).is_ok()
            }
            _ => false,
        },
        "string" | "date" => matches!(v, Expr::Str(_) | Expr::Num(_) | Expr::Path(_)),
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        invalid(f, p, v)
    }
}

fn invalid(f: &str, p: &Param, v: &Expr) -> R<()> {
    err(format!(
        "Invalid \"{}\" value specified for function \"{f}\" parameter \"{}\": {}",
        p.ty,
        p.name,
        py_repr(v)
    ))
}

/// Python's `round(v, 6)`: the nearest multiple of 1e-6 by the exact value (ties to even).
pub fn py_round6(v: f64) -> f64 {
    if !v.is_finite() {
        return v;
    }
    format!("{v:.6}").parse().unwrap_or(v)
}

/// Python's `str()` of a number kept as given: an integral float stays `5.0` only when it was
/// written as a float; integers given to us print without the fraction.
pub fn py_num(e: &Expr) -> String {
    match e {
        Expr::Str(s) => s.clone(),
        other => py_repr(other),
    }
}

/// A source serving series already evaluated, each under a placeholder path
/// (`_tsgate_fixed_.<i>`, see [`Fixed::path`]): a call built over those paths evaluates as if
/// the series were its arguments. Its points are the series' values at their own times, and
/// the commonest gap is the series' step, so they grid back as they were over the window.
pub struct Fixed {
    series: Vec<Series>,
}

impl Fixed {
    pub fn new(series: Vec<Series>) -> Fixed {
        Fixed { series }
    }

    pub fn path(i: usize) -> String {
        format!("_tsgate_fixed_.s{i:06}")
    }

    /// A path expression naming every series, in order.
    pub fn glob() -> &'static str {
        "_tsgate_fixed_.*"
    }

    /// Puts the real names back where the placeholders show (names, path expressions, tags).
    pub fn restore(&self, mut s: Series) -> Series {
        let fix = |t: &str| -> String {
            let mut out = t.to_string();
            // Highest first: no placeholder is a prefix of another (fixed width), but keep it
            // simple to read.
            for (i, orig) in self.series.iter().enumerate().rev() {
                let p = Fixed::path(i);
                if out.contains(&p) {
                    out = out.replace(&p, &orig.name);
                }
            }
            out
        };
        s.name = fix(&s.name);
        s.path_expr = fix(&s.path_expr);
        for v in s.tags.values_mut() {
            *v = fix(v);
        }
        s
    }
}

impl Source for Fixed {
    fn entries(&self) -> R<Arc<Vec<Entry>>> {
        Ok(Arc::new(
            (0..self.series.len())
                .map(|i| Entry {
                    path: Fixed::path(i),
                    metric: Fixed::path(i),
                    tags: vec![],
                    metric_uid: None,
                })
                .collect(),
        ))
    }

    fn points(&self, entries: &[&Entry], from: i64, until: i64) -> R<Points> {
        let mut out = Points::default();
        for e in entries {
            let i: usize = e
                .path
                .rsplit('s')
                .next()
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| EvalError::Invalid(format!("unknown series {}", e.path)))?;
            let s = &self.series[i];
            let pts: Vec<(i64, f64)> = s
                .timestamps()
                .zip(&s.values)
                .filter(|(t, _)| *t > from && *t <= until)
                .filter_map(|(t, v)| v.map(|v| (t, v)))
                .collect();
            *out.gaps.entry(s.step).or_default() += s.values.len().max(1);
            out.series.push(pts);
        }
        Ok(out)
    }
}

/// The [`Fixed`] context for `series`: the same window as `ctx`.
pub fn fixed_ctx<'a>(ctx: &Ctx, src: &'a Fixed) -> Ctx<'a> {
    Ctx {
        source: src,
        from: ctx.from,
        until: ctx.until,
        now: ctx.now,
        xff: ctx.xff(),
        tz: ctx.tz,
        xff_set: ctx.xff_set.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graphite::parser::parse;

    fn call_of(t: &str) -> crate::graphite::parser::Call {
        match parse(t).unwrap() {
            Expr::Call(c) => c,
            _ => unreachable!(),
        }
    }

    fn check(t: &str) -> Result<(), String> {
        let c = call_of(t);
        validate(&Args { call: &c }).map_err(|e| e.to_string())
    }

    #[test]
    fn validation_speaks_graphite_web() {
        assert_eq!(check("aggregateLine(a.b, 'max', true)"), Ok(()));
        assert_eq!(
            check("aggregateLine(a.b, 'max', true, 4)").unwrap_err(),
            "Too many parameters specified for function \"aggregateLine\""
        );
        assert_eq!(
            check("aggregateLine(a.b, 'bogus')").unwrap_err(),
            "Invalid \"aggFunc\" value specified for function \"aggregateLine\" parameter \"func\": 'bogus'"
        );
        assert_eq!(
            check("timeStack(a.b, '1d', 1.5)").unwrap_err(),
            "Invalid \"integer\" value specified for function \"timeStack\" parameter \"timeShiftStart\": 1.5"
        );
        assert_eq!(
            check("filterSeries(a.b, 'max', '~', 1)").unwrap_err(),
            "Invalid option specified for function \"filterSeries\" parameter \"operator\": '~'"
        );
        assert_eq!(
            check("filterSeries(a.b, 'max', '>')").unwrap_err(),
            "Missing required parameter \"threshold\" for function \"filterSeries\""
        );
        assert_eq!(
            check("holtWintersForecast(a.b, seasonality='1x')").unwrap_err(),
            "Invalid \"interval\" value specified for function \"holtWintersForecast\" parameter \"seasonality\": '1x'"
        );
        assert_eq!(
            check("holtWintersForecast(a.b, season='1d')").unwrap_err(),
            "Unexpected key word arguments: season"
        );
        // Repeatable last parameters take any number of arguments.
        assert_eq!(check("sumSeriesWithWildcards(a.b.c, 1, 2, 3)"), Ok(()));
        assert_eq!(check("mapSeries(a.b.c, 1)"), Ok(()));
    }

    /// Every graphite-web 1.1.10 name reaches a function (none answers "unknown function").
    #[test]
    fn every_graphite_web_name_is_served() {
        let src = crate::graphite::eval::MemSource(vec![]);
        let ctx = Ctx {
            source: &src,
            from: 0,
            until: 600,
            now: 600,
            xff: 0.0,
            tz: chrono_tz::UTC,
            xff_set: Default::default(),
        };
        for name in GRAPHITE_WEB_NAMES {
            let c = crate::graphite::parser::Call {
                name: name.to_string(),
                args: vec![],
                kwargs: vec![],
                text: format!("{name}()"),
            };
            if let Err(e) = ctx.call(&c) {
                assert!(!e.to_string().contains("unknown function"), "{name}: {e}");
            }
        }
        assert_eq!(GRAPHITE_WEB_NAMES.len(), 154);
    }

    #[test]
    fn python_formats() {
        assert_eq!(py_round6(0.1234565), 0.123456); // below the half in binary
        assert_eq!(py_round6(2.0000004), 2.0);
    }
}
