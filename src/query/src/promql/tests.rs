//! Evaluator semantics on in-memory series (no store): matching, aggregation, subqueries.

use super::eval::{Evaluator, Value};
use super::selectors::{data_from, MemSeries};
use super::{parse, Settings};

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
    for q in [
        "time(up[10m:00000000000000000000000000000000000000000000315702333878000000000000000] )",
        "up[1e30]",
        "up[5m:Inf]",
        "up[NaN]",
        "up offset 1e300",
        "up offset -1e300",
    ] {
        match parse(q) {
            Err(super::PromError::BadData(m)) => {
                assert!(m.contains("duration out of range"), "{q}: {m}")
            }
            other => panic!("{q}: {other:?}"),
        }
    }
    // Numbers that fit, durations, and look-alikes inside strings and comments still parse.
    for q in [
        "up[300]",
        "up[10m:5]",
        "up offset 60",
        "up[5m] offset 1h",
        "up{a=\"[1e30]\"}[5m]",
        "up # offset 1e300\n",
        "rate(up[1m:1e-3])",
    ] {
        assert!(parse(q).is_ok(), "{q}: {:?}", parse(q));
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
