//! Evaluator semantics on in-memory series (no store): matching, aggregation, subqueries.

use super::eval::{Evaluator, Value};
use super::selectors::{data_from, MemSeries};
use super::{parse, PromError, Settings};

fn l(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    v.sort();
    v
}

fn fixture() -> Vec<MemSeries> {
    let pts = |f: f64| {
        (0..=20)
            .map(|i| (i * 15_000, f * i as f64))
            .collect::<Vec<_>>()
    };
    vec![
        (
            l(&[("__name__", "req"), ("job", "api"), ("inst", "a")]),
            pts(1.0),
        ),
        (
            l(&[("__name__", "req"), ("job", "api"), ("inst", "b")]),
            pts(2.0),
        ),
        (
            l(&[("__name__", "req"), ("job", "db"), ("inst", "c")]),
            pts(3.0),
        ),
        (
            l(&[("__name__", "info"), ("job", "api"), ("version", "1.2")]),
            pts(0.0).into_iter().map(|(t, _)| (t, 1.0)).collect(),
        ),
        (
            l(&[("__name__", "info"), ("job", "db"), ("version", "3.4")]),
            pts(0.0).into_iter().map(|(t, _)| (t, 1.0)).collect(),
        ),
    ]
}

/// Evaluates at `t` (ms) and renders `labels=value` lines, sorted.
fn at(q: &str, t: i64) -> Result<Vec<String>, String> {
    let e = parse(q).map_err(|e| e.to_string())?;
    let s = Settings::default();
    let data = data_from(&e, &fixture(), t, t, s).map_err(|e| e.to_string())?;
    let ev = Evaluator::new(&data, t, t, s);
    let mut out: Vec<String> = match ev.eval(&e, t).map_err(|e| e.to_string())? {
        Value::Scalar(v) => vec![format!("scalar={v}")],
        Value::Vector(v) => v
            .iter()
            .map(|s| {
                format!(
                    "{}={}",
                    s.labels
                        .iter()
                        .map(|(k, v)| format!("{k}:{v}"))
                        .collect::<Vec<_>>()
                        .join(","),
                    s.v
                )
            })
            .collect(),
        Value::Matrix(m) => m
            .iter()
            .map(|s| format!("{:?}={}", s.labels, s.points.len()))
            .collect(),
        Value::Str(s) => vec![s],
    };
    out.sort();
    Ok(out)
}

#[test]
fn precedence_and_scalars() {
    assert_eq!(at("-1 ^ 2", 0).unwrap(), ["scalar=-1"]);
    assert_eq!(
        at("1 * 2 + 4 / 6 - 10 % 2 ^ 2", 0).unwrap(),
        [format!("scalar={}", 2.0 + 4.0 / 6.0 - 2.0)]
    );
    assert_eq!(at("time()", 90_000).unwrap(), ["scalar=90"]);
}

#[test]
fn group_left_copies_labels_and_drops_name() {
    let r = at("req * on(job) group_left(version) info", 150_000).unwrap();
    assert_eq!(
        r,
        [
            "inst:a,job:api,version:1.2=10",
            "inst:b,job:api,version:1.2=20",
            "inst:c,job:db,version:3.4=30"
        ]
    );
    let err = at("info * on(job) req", 150_000).unwrap_err();
    assert!(
        err.contains(
            "found duplicate series for the match group {job=\"api\"} on the right hand-side"
        ),
        "{err}"
    );
    let err = at("req * on(job) info", 150_000).unwrap_err();
    assert!(
        err.contains("many-to-one matching must be explicit"),
        "{err}"
    );
}

#[test]
fn comparisons_filter_or_return_bool() {
    assert_eq!(
        at("req > 15", 150_000).unwrap(),
        [
            "__name__:req,inst:b,job:api=20",
            "__name__:req,inst:c,job:db=30"
        ]
    );
    assert_eq!(
        at("req > bool 15", 150_000).unwrap(),
        ["inst:a,job:api=0", "inst:b,job:api=1", "inst:c,job:db=1"]
    );
    assert_eq!(
        at("15 < req", 150_000).unwrap(),
        [
            "__name__:req,inst:b,job:api=20",
            "__name__:req,inst:c,job:db=30"
        ]
    );
    assert_eq!(
        at("req unless on(job) info{job=\"db\"}", 150_000)
            .unwrap()
            .len(),
        2
    );
    // Signatures differ (info has version, req has inst): `or` keeps all of both sides…
    assert_eq!(at("info or req", 150_000).unwrap().len(), 5);
    // …and with on(job) the rhs adds nothing new.
    assert_eq!(at("info or on(job) req", 150_000).unwrap().len(), 2);
}

#[test]
fn aggregations() {
    assert_eq!(
        at("sum by (job) (req)", 150_000).unwrap(),
        ["job:api=30", "job:db=30"]
    );
    assert_eq!(
        at("count without (inst) (req)", 150_000).unwrap(),
        ["job:api=2", "job:db=1"]
    );
    assert_eq!(
        at("topk(1, req)", 150_000).unwrap(),
        ["__name__:req,inst:c,job:db=30"]
    );
    assert_eq!(
        at("bottomk by (job) (1, req)", 150_000).unwrap(),
        [
            "__name__:req,inst:a,job:api=10",
            "__name__:req,inst:c,job:db=30"
        ]
    );
    assert_eq!(at("quantile(0.5, req)", 150_000).unwrap(), ["=20"]);
    assert_eq!(at("count_values(\"v\", info)", 150_000).unwrap(), ["v:1=2"]);
    let sd = at("stddev(req)", 150_000).unwrap();
    assert!(sd[0].starts_with("=8.16496580927726"), "{sd:?}");
}

#[test]
fn range_functions_and_subqueries() {
    // Counter +1 per 15 s: rate is 1/15 per second whatever the window.
    let r = at("rate(req{inst=\"a\"}[1m])", 150_000).unwrap();
    let v: f64 = r[0].split('=').nth(1).unwrap().parse().unwrap();
    assert!((v - 1.0 / 15.0).abs() < 1e-12, "{v}");
    // Subquery steps are absolute multiples of 30 s in [t−2m, t]: 30,60,90,120,150 (s) → 5 points.
    assert_eq!(
        at("count_over_time(req{inst=\"a\"}[2m:30s])", 150_000).unwrap(),
        ["inst:a,job:api=5"]
    );
    assert_eq!(
        at("count_over_time(req{inst=\"a\"}[2m:30s])", 151_000).unwrap(),
        ["inst:a,job:api=4"]
    );
    // Closed range window: [90 s, 150 s] holds 5 samples.
    assert_eq!(
        at("count_over_time(req{inst=\"a\"}[1m])", 150_000).unwrap(),
        ["inst:a,job:api=5"]
    );
    assert_eq!(
        at("req{inst=\"a\"} offset 1m", 150_000).unwrap(),
        ["__name__:req,inst:a,job:api=6"]
    );
    assert_eq!(
        at("req{inst=\"a\"} @ 30", 150_000).unwrap(),
        ["__name__:req,inst:a,job:api=2"]
    );
    assert_eq!(
        at("absent(nope{job=\"x\", a=~\"y\"})", 0).unwrap(),
        ["job:x=1"]
    );
    assert_eq!(
        at(
            "label_replace(info, \"major\", \"$1\", \"version\", \"(\\\\d+)\\\\..*\")",
            0
        )
        .unwrap(),
        [
            "__name__:info,job:api,major:1,version:1.2=1",
            "__name__:info,job:db,major:3,version:3.4=1"
        ]
    );
    let err = at("label_replace(req, \"inst\", \"x\", \"\", \"\")", 150_000).unwrap_err();
    assert!(
        err.contains("same labelset") || err.contains("duplicate") || err.contains("multiple"),
        "{err}"
    );
    // …but an aggregation over colliding function results is accepted (the bench's count query).
    assert_eq!(
        at(
            "sum(count_over_time({__name__=~\"req|info\"}[1m]))",
            150_000
        )
        .unwrap(),
        ["=25"]
    );
}

#[test]
fn a_repeated_expression_parses_to_the_same_tree_and_errors_stay_errors() {
    for q in [
        "sum by (job) (rate(req[1m]))",
        "holt_winters(req[1m], 0.5, 0.5)",
        "req offset 5m",
    ] {
        let fresh = super::parse_text(q).unwrap();
        assert_eq!(format!("{:?}", parse(q).unwrap()), format!("{fresh:?}"));
        // The second call is answered from the cache.
        assert_eq!(format!("{:?}", parse(q).unwrap()), format!("{fresh:?}"));
    }
    for q in ["sum(", "double_exponential_smoothing(req[1m], 0.5, 0.5)"] {
        assert!(parse(q).is_err());
        assert!(parse(q).is_err());
    }
}

#[test]
fn a_number_no_duration_can_hold_is_a_parse_error_not_a_panic() {
    // The fuzzer's input, and its kin: the parser would panic converting them.
    for q in ["up[5m:Inf]", "up[NaN]"] {
        match parse(q) {
            Err(super::PromError::BadData(m)) => {
                assert!(m.contains("duration out of range"), "{q}: {m}")
            }
            other => panic!("{q}: {other:?}"),
        }
    }
    // Durations and look-alikes inside strings and comments still parse.
    for q in [
        "up[5m] offset 1h",
        "up{a=\"[1e30]\"}[5m]",
        "up # offset 1e300\n",
        "rate(up[1m:5s])",
        "up[1h30m:] offset -1m",
    ] {
        assert!(parse(q).is_ok(), "{q}: {:?}", parse(q));
    }
}

/// 2.42 takes no plain number for a duration (3.x reads it as seconds): where a range
/// starts, after a subquery's colon and after `offset`, each with its own words (Debian's
/// Prometheus 2.42's answers).
#[test]
fn a_number_is_no_duration() {
    for (q, want) in [
        ("up[300]", "1:4: parse error: missing unit character in duration"),
        ("rate(up[5])", "1:9: parse error: missing unit character in duration"),
        ("up[1e30]", "1:4: parse error: missing unit character in duration"),
        ("up[0x10]", "1:4: parse error: missing unit character in duration"),
        ("up[5:]", "1:4: parse error: missing unit character in duration"),
        (
            "up[10m:5]",
            "1:8: parse error: unexpected number \"5\" in subquery selector, expected duration or \"]\"",
        ),
        (
            "up[1m:5.5]",
            "1:7: parse error: unexpected number \"5.5\" in subquery selector, expected duration or \"]\"",
        ),
        (
            "time(up[10m:00000000000000000000000000000000000000000000315702333878000000000000000] )",
            "1:13: parse error: unexpected number \"0000000000\"... in subquery selector, expected duration or \"]\"",
        ),
        ("up offset 60", "1:11: parse error: unexpected number \"60\" in offset, expected duration"),
        ("up offset -5", "1:12: parse error: unexpected number \"5\" in offset, expected duration"),
        (
            "up offset 1e300",
            "1:11: parse error: unexpected number \"1e300\" in offset, expected duration",
        ),
        (
            "up[5m] offset 5",
            "1:15: parse error: unexpected number \"5\" in offset, expected duration",
        ),
    ] {
        match parse(q) {
            Err(super::PromError::BadData(m)) => assert_eq!(m, want, "{q}"),
            other => panic!("{q}: {other:?}"),
        }
    }
}

/// Issue 35: `abs(` nested 2,000 deep (and an operator chain, which nests without brackets)
/// overflowed the stack. Each shape is refused past the bound, with Prometheus' bad_data.
#[test]
fn nesting_past_max_depth_is_bad_data() {
    let nested = |n: usize| format!("{}up{}", "abs(".repeat(n), ")".repeat(n));
    assert!(super::parse_bounded(&nested(10), 12).is_ok());
    for q in [
        nested(2_000),
        nested(13),
        format!("1{}", "+1".repeat(100_000)),
        format!("{}1", "-".repeat(100_000)),
        format!("up{}", " or up".repeat(5_000)),
        format!("{}up{}", "(".repeat(20), ")".repeat(20)),
        format!("{}up[5m]{}", "sum_over_time(".repeat(13), ")".repeat(13)),
        // Unclosed brackets still count.
        "abs(".repeat(50),
    ] {
        match super::parse_bounded(&q, 12) {
            Err(super::PromError::BadData(m)) => assert!(m.contains("query.max_depth"), "{m}"),
            other => panic!("{}…: {other:?}", &q[..20]),
        }
    }
    // Brackets and operators inside strings and selectors are not levels.
    let q = format!("up{{job=\"{}\"}}", "((((+-".repeat(100));
    assert!(super::parse_bounded(&q, 4).is_ok());
    // Wide is not deep: many operands of one aggregation each nest once.
    let labels: Vec<String> = (0..300).map(|i| format!("\"l{i}\"")).collect();
    let wide = format!("label_join(abs(up), \"dst\", \",\", {})", labels.join(", "));
    assert!(super::parse_bounded(&wide, 3).is_ok());
    assert!(super::parse_bounded(&wide, 2).is_err());
}

/// A subquery whose steps alone pass `max_samples` is refused before its first step (it took
/// 2 GB and two minutes); one whose samples pass it stops when they do.
#[test]
fn subquery_steps_and_samples_count_against_max_samples() {
    let started = std::time::Instant::now();
    let e = at("count_over_time(vector(1)[1d:1ms])", 300_000).unwrap_err();
    assert!(e.contains("too many samples"), "{e}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    // Under the bound the same shape evaluates: 301 steps of 1 s.
    assert_eq!(
        at("count_over_time(vector(1)[5m:1s])", 300_000).unwrap(),
        vec!["=301".to_string()]
    );
}

/// Evaluates at `t` (ms) and renders the vector's `labels=value` lines in its own order.
fn ordered(q: &str, t: i64) -> Vec<String> {
    let e = parse(q).unwrap();
    let s = Settings::default();
    let data = data_from(&e, &fixture(), t, t, s).unwrap();
    match Evaluator::new(&data, t, t, s).eval(&e, t).unwrap() {
        Value::Vector(v) => v
            .iter()
            .map(|s| {
                let l: Vec<String> = s.labels.iter().map(|(k, v)| format!("{k}:{v}")).collect();
                format!("{}={}", l.join(","), s.v)
            })
            .collect(),
        other => panic!("{q}: not a vector: {other:?}"),
    }
}

/// Functions the parser knows from 3.x are refused as 2.42 refuses them: at parse time, as
/// unknown (`limitk` is a function to 2.42's lexer too).
#[test]
fn functions_2_42_lacks_are_unknown() {
    for (q, name) in [
        ("mad_over_time(req[1m])", "mad_over_time"),
        ("sort_by_label(req, \"job\")", "sort_by_label"),
        ("limitk(1, req)", "limitk"),
        ("limit_ratio(0.5, req)", "limit_ratio"),
        (
            "sum(req) + ts_of_max_over_time(req[1m])",
            "ts_of_max_over_time",
        ),
        ("abs(histogram_avg(req))", "histogram_avg"),
    ] {
        match parse(q) {
            Err(PromError::BadData(m)) => assert!(
                m.ends_with(&format!(
                    "parse error: unknown function with name \"{name}\""
                )),
                "{q}: {m}"
            ),
            other => panic!("{q}: {other:?}"),
        }
    }
    assert_eq!(
        parse("mad_over_time(req[1m])").unwrap_err().to_string(),
        "1:1: parse error: unknown function with name \"mad_over_time\""
    );
    // The parser lets a NaN, an infinity or a non-positive number through as the scalar
    // argument of exp and the logarithms; 2.42 wants an instant vector there too.
    for q in ["exp(NaN)", "ln(0)", "log2(-1)", "log10(Inf)"] {
        assert_eq!(
            parse(q).unwrap_err().to_string(),
            format!(
                "1:{}: parse error: expected type instant vector in call to function \"{}\", got scalar",
                q.find('(').unwrap() + 2,
                &q[..q.find('(').unwrap()]
            ),
            "{q}"
        );
    }
    for q in [
        "holt_winters(req[1m], 0.5, 0.5)",
        "histogram_fraction(0, 1, req)",
        "day_of_year()",
    ] {
        assert!(parse(q).is_ok(), "{q}");
    }
}

/// topk/bottomk refuse a k no int64 holds, NaN included, even over no input; a k below 1
/// selects nothing.
#[test]
fn topk_k_must_fit_an_int64() {
    assert_eq!(
        at("topk(NaN, req)", 60_000).unwrap_err(),
        "Scalar value NaN overflows int64"
    );
    assert_eq!(
        at("bottomk(1e19, nothing)", 60_000).unwrap_err(),
        "Scalar value 1e+19 overflows int64"
    );
    assert_eq!(
        at("topk(-Inf, req)", 60_000).unwrap_err(),
        "Scalar value -Inf overflows int64"
    );
    assert!(at("topk(0.5, req)", 60_000).unwrap().is_empty());
    assert_eq!(
        at("topk(1.9, req)", 60_000).unwrap(),
        ["__name__:req,inst:c,job:db=12"]
    );
}

/// stddev/stdvar start a group at its first value: a lone Inf or NaN deviates by 0, a group
/// of two Infs by NaN (Inf - Inf).
#[test]
fn stddev_of_one_infinite_value_is_zero() {
    assert_eq!(at("stddev(vector(Inf))", 0).unwrap(), ["=0"]);
    assert_eq!(at("stdvar(vector(NaN))", 0).unwrap(), ["=0"]);
    assert_eq!(
        at("stddev by (job) (req / 0)", 60_000).unwrap(),
        ["job:api=NaN", "job:db=0"]
    );
    assert_eq!(at("stdvar(req)", 60_000).unwrap(), ["=10.666666666666666"]);
}

/// clamp_min/clamp_max take a NaN bound as Go's math.Max/Min do: NaN out, except that +Inf
/// (Max) and -Inf (Min) win even over NaN.
#[test]
fn clamp_bounds_follow_go_math() {
    assert_eq!(
        at("clamp_max(req{inst=\"a\"}, NaN)", 60_000).unwrap(),
        ["inst:a,job:api=NaN"]
    );
    assert_eq!(
        at("clamp_min(req{inst=\"a\"}, NaN)", 60_000).unwrap(),
        ["inst:a,job:api=NaN"]
    );
    assert_eq!(at("clamp_min(vector(NaN), Inf)", 0).unwrap(), ["=inf"]);
    assert_eq!(at("clamp_max(vector(NaN), -Inf)", 0).unwrap(), ["=-inf"]);
    assert_eq!(
        at("clamp(req{inst=\"a\"}, 5, 9)", 60_000).unwrap(),
        ["inst:a,job:api=5"]
    );
    assert!(at("clamp(req, 2, 1)", 60_000).unwrap().is_empty());
}

/// count_values sets its label before grouping: `without` naming it counts every value of a
/// group together (and drops it), `by` and no modifier group by it.
#[test]
fn count_values_groups_after_setting_its_label() {
    assert_eq!(
        at("count_values without (job, version) (\"job\", info)", 0).unwrap(),
        ["=2"]
    );
    assert_eq!(
        at("count_values without (version) (\"job\", info)", 0).unwrap(),
        ["job:1=2"]
    );
    assert_eq!(
        at("count_values by (job) (\"job\", info)", 0).unwrap(),
        ["job:1=2"]
    );
    assert_eq!(
        at("count_values by (inst) (\"v\", req)", 60_000).unwrap(),
        ["inst:a,v:4=1", "inst:b,v:8=1", "inst:c,v:12=1"]
    );
}

/// sort and sort_desc put NaN last (2.42's comparators), NaNs reversed among themselves as
/// Go's insertion sort leaves them.
#[test]
fn sort_puts_nan_last() {
    assert_eq!(
        ordered("sort_desc(vector(NaN) or req{inst=\"a\"})", 60_000),
        ["__name__:req,inst:a,job:api=4", "=NaN"]
    );
    assert_eq!(
        ordered("sort(req / 0 * 0 or vector(1))", 60_000),
        [
            "=1",
            "inst:c,job:db=NaN",
            "inst:b,job:api=NaN",
            "inst:a,job:api=NaN"
        ]
    );
    assert_eq!(
        ordered("sort_desc(req)", 60_000),
        [
            "__name__:req,inst:c,job:db=12",
            "__name__:req,inst:b,job:api=8",
            "__name__:req,inst:a,job:api=4"
        ]
    );
}

/// Date functions read `time.Unix(int64(v), 0)`: truncation toward zero, and NaN/Inf as
/// Go's int64 conversion makes them (math.MinInt64), through Go's wrapping calendar.
#[test]
fn date_functions_convert_as_go() {
    assert_eq!(at("hour(vector(-1.5))", 0).unwrap(), ["=23"]);
    assert_eq!(at("day_of_month(vector(-0.5))", 0).unwrap(), ["=1"]);
    assert_eq!(at("year(vector(NaN))", 0).unwrap(), ["=292277026596"]);
    assert_eq!(at("month(vector(Inf))", 0).unwrap(), ["=12"]);
    assert_eq!(at("day_of_year(vector(951782400))", 0).unwrap(), ["=60"]);
    assert_eq!(at("days_in_month(vector(951782400))", 0).unwrap(), ["=29"]);
}

/// absent() labels: the first `=` of a name sets it, any later matcher of that name deletes
/// it; an empty value sets nothing.
#[test]
fn absent_labels_as_2_42_builds_them() {
    assert_eq!(at("absent(nope{job=\"a\",job!=\"b\"})", 0).unwrap(), ["=1"]);
    assert_eq!(
        at("absent(nope{job!=\"b\",job=\"a\"})", 0).unwrap(),
        ["job:a=1"]
    );
    assert_eq!(at("absent(nope{job=\"\",x=\"y\"})", 0).unwrap(), ["x:y=1"]);
    assert_eq!(at("absent(nope{job=\"a\",job=\"a\"})", 0).unwrap(), ["=1"]);
}

#[test]
fn label_join_checks_source_names() {
    assert_eq!(
        at("label_join(req, \"x\", \"-\", \"job\", \"1bad\")", 0).unwrap_err(),
        "invalid source label name in label_join(): 1bad"
    );
}

/// histogram_quantile groups buckets by every label but `le`, the name included: two
/// histograms apart only by name stay apart and then collide without it.
#[test]
fn histogram_quantile_keeps_names_apart() {
    let q = "histogram_quantile(0.5, label_replace(label_replace(label_replace(\
             {__name__=~\"req|info\", job=\"db\"}, \"le\", \"+Inf\", \"\", \"\"), \
             \"inst\", \"\", \"\", \"\"), \"version\", \"\", \"\", \"\"))";
    assert_eq!(
        at(q, 60_000).unwrap_err(),
        "vector cannot contain metrics with the same labelset"
    );
}

/// `atan2` keeps the metric name, as comparisons do (2.42's shouldDropMetricName lists the
/// other arithmetic operators only); `bool` drops it.
#[test]
fn atan2_keeps_the_metric_name() {
    assert_eq!(
        at("req{inst=\"a\"} atan2 0", 60_000).unwrap(),
        [format!("__name__:req,inst:a,job:api={}", 4f64.atan2(0.0))]
    );
    assert_eq!(
        at("req{inst=\"a\"} atan2 on(inst) req{inst=\"a\"}", 60_000).unwrap(),
        [format!("inst:a={}", 4f64.atan2(4.0))]
    );
    assert_eq!(
        at(
            "req{inst=\"a\"} atan2 ignoring(nothing) req{inst=\"a\"}",
            60_000
        )
        .unwrap(),
        [format!("__name__:req,inst:a,job:api={}", 4f64.atan2(4.0))]
    );
    assert_eq!(
        at("req{inst=\"a\"} > bool 1", 60_000).unwrap(),
        ["inst:a,job:api=1"]
    );
    assert_eq!(
        at("req{inst=\"a\"} * 1", 60_000).unwrap(),
        ["inst:a,job:api=4"]
    );
}

/// `0e3` is zero to 2.42 (Go's ParseInt refuses it, ParseFloat takes it), not a bad octal;
/// look-alikes in strings, names and other numbers stay as they are.
#[test]
fn a_leading_zero_with_an_exponent_is_a_float() {
    assert_eq!(at("0e3", 0).unwrap(), ["scalar=0"]);
    assert_eq!(at("07e1 + 1", 0).unwrap(), ["scalar=71"]);
    assert_eq!(at("-00E-1", 0).unwrap(), ["scalar=-0"]);
    assert_eq!(at("1.0e3 + 10e1 + 010", 0).unwrap(), ["scalar=1108"]);
    assert_eq!(
        at("vector(0e3) + on() group_left req{inst=\"a\"} * 0", 60_000).unwrap(),
        ["=0"]
    );
    assert_eq!(
        at("label_replace(vector(1), \"x\", \"0e3\", \"\", \"\")", 0).unwrap(),
        ["x:0e3=1"]
    );
}

/// A unary plus before a string is 2.42's type error (the parser here drops the plus).
#[test]
fn unary_plus_on_a_string_is_refused() {
    for (q, col) in [
        ("+\"a\"", 1),
        ("label_join(req, \"x\", +\"-\")", 22),
        ("  + 'a'", 3),
    ] {
        assert_eq!(
            parse(q).unwrap_err().to_string(),
            format!("1:{col}: parse error: unary expression only allowed on expressions of type scalar or instant vector, got \"string\""),
            "{q}"
        );
    }
    assert!(parse("label_join(req, \"x\", \"+\", \"a\") + 1").is_ok());
    assert!(parse("+req").is_ok());
}

/// So is one before a range vector, as a unary minus is, at the operator's position.
#[test]
fn unary_plus_on_a_range_vector_is_refused() {
    for (q, col) in [
        ("+req[5m]", 1),
        ("+(req[5m])", 1),
        ("rate(+req[5m])", 6),
        ("sum_over_time(+req[5m:1m])", 15),
        ("rate(-req[5m])", 6),
        ("-(req[5m])", 1),
        ("1 + -req[5m]", 5),
        ("sum_over_time(-req[5m:1m])", 15),
    ] {
        assert_eq!(
            parse(q).unwrap_err().to_string(),
            format!("1:{col}: parse error: unary expression only allowed on expressions of type scalar or instant vector, got \"range vector\""),
            "{q}"
        );
    }
    for q in [
        "+req",
        "+(-req)",
        "rate((req[5m]))",
        "topk(+2, req)",
        "+1",
        "req + +1",
    ] {
        assert!(parse(q).is_ok(), "{q}");
    }
}

/// In a range query 2.42 sets predict_linear's `@` as an offset from the query's start and
/// then moves the window on with the steps (predict_linear is kept out of its step-invariant
/// evaluation); other functions keep the window at the `@` time.
#[test]
fn predict_linear_at_window_moves_with_range_steps() {
    let steps = |q: &str| -> Vec<i64> {
        let e = parse(q).unwrap();
        let s = Settings::default();
        let data = data_from(&e, &fixture(), 60_000, 360_000, s).unwrap();
        match super::range_eval(&data, &e, 60_000, 360_000, 15_000, s).unwrap() {
            super::QueryResult::Matrix(m) => m[0].1.iter().map(|p| p.0).collect(),
            other => panic!("{other:?}"),
        }
    };
    // Only [30 s, 60 s] is read for the `@` time: the window moved 15 s on still holds two of
    // its points, 30 s on only one (Debian's 2.42 answers so).
    assert_eq!(
        steps("predict_linear(req{inst=\"a\"}[30s] @ 60, 0)"),
        [60_000, 75_000]
    );
    assert_eq!(
        steps("max_over_time(req{inst=\"a\"}[30s] @ 60)"),
        (4..=24).map(|i| i * 15_000).collect::<Vec<i64>>()
    );
    // The line through req is t/15 s, predicted at each step's time.
    assert_eq!(
        at("predict_linear(req{inst=\"a\"}[30s] @ 60, 0)", 120_000).unwrap(),
        ["inst:a,job:api=8"]
    );
}
