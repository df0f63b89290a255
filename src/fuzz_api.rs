//! Narrow entry points for the fuzz targets in `tests/fuzz`: each runs one parser the way a
//! request handler does, on in-memory data, so a target needs no server or store. Not an API.

use crate::promql::{self, selectors, Settings};
use crate::query::graphite::eval::{Ctx, MemSource};
use std::time::{Duration, Instant};

/// A PromQL query as `/api/v1/query` and `/api/v1/query_range` run it: parse, the `match[]`
/// form, planning (which selector needs which span), then instant and range evaluation over a
/// few in-memory series, rendered as the API's JSON. Returns whether it evaluated.
pub fn promql(q: &str) -> bool {
    promql_bounded(q, promql::DEFAULT_MAX_DEPTH)
}

/// [`promql`] with `query.max_depth` = `max_depth`.
pub fn promql_bounded(q: &str, max_depth: usize) -> bool {
    let Ok(expr) = promql::parse_bounded(q, max_depth) else {
        return false;
    };
    let _ = promql::parse_match(q);
    let t = 1_700_000_000_000i64;
    let settings = Settings {
        max_samples: 100_000,
        // Evaluation loops check the deadline; a fuzz input must not run for long.
        deadline: Some(Instant::now() + Duration::from_millis(300)),
        ..Settings::default()
    };
    let series = promql_fixture(t);
    let (start, end, step) = (t - 600_000, t, 60_000);
    let Ok(data) = selectors::data_from(&expr, &series, start, end, settings) else {
        return false;
    };
    if let Ok(r) = promql::instant_eval(&data, &expr, t, settings) {
        let _ = crate::server::prometheus::query::render(&r);
    }
    if promql::check_range_type(&expr).is_ok() {
        if let Ok(r) = promql::range_eval(&data, &expr, start, end, step, settings) {
            let _ = crate::server::prometheus::query::render(&r);
        }
    }
    true
}

fn promql_fixture(t: i64) -> Vec<selectors::MemSeries> {
    let l = |p: &[(&str, &str)]| {
        p.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<Vec<_>>()
    };
    let pts = |f: f64| {
        (0..80)
            .map(|i| (t - 1_200_000 + i * 15_000, f * i as f64))
            .collect::<Vec<_>>()
    };
    let mut stale = pts(1.0);
    stale[40].1 = f64::from_bits(tsgate_prometheus::STALE_NAN_BITS);
    vec![
        (
            l(&[("__name__", "up"), ("instance", "a:9100"), ("job", "node")]),
            pts(0.0),
        ),
        (
            l(&[
                ("__name__", "req_total"),
                ("instance", "a:9100"),
                ("job", "api"),
            ]),
            pts(1.5),
        ),
        (
            l(&[
                ("__name__", "req_total"),
                ("instance", "b:9100"),
                ("job", "api"),
            ]),
            stale,
        ),
        (
            l(&[("__name__", "bucket"), ("le", "0.5"), ("job", "api")]),
            pts(1.0),
        ),
        (
            l(&[("__name__", "bucket"), ("le", "+Inf"), ("job", "api")]),
            pts(2.0),
        ),
    ]
}

/// A graphite-web target expression as `/render` runs it: parse, then evaluate every function
/// over a few in-memory series in a one-hour window. Returns whether it evaluated.
pub fn graphite_target(target: &str) -> bool {
    graphite_target_bounded(target, crate::query::graphite::parser::DEFAULT_MAX_DEPTH)
}

/// [`graphite_target`] with `query.max_depth` = `max_depth`.
pub fn graphite_target_bounded(target: &str, max_depth: usize) -> bool {
    let Ok(expr) = crate::query::graphite::parser::parse_bounded(target, max_depth) else {
        return false;
    };
    let until = 1_700_000_000i64;
    let pts = |f: f64| {
        (0..60)
            .map(|i| (until - 3600 + i * 60, f * i as f64 - 10.0))
            .collect::<Vec<_>>()
    };
    let source = MemSource(vec![
        ("a.b.c".into(), pts(1.0)),
        ("a.b.d".into(), pts(-2.0)),
        ("a.x.c".into(), pts(0.5)),
        ("servers.web01.cpu;dc=eu".into(), pts(3.0)),
    ]);
    let ctx = Ctx {
        source: &source,
        from: until - 3600,
        until,
        now: until,
        xff: 0.0,
        tz: chrono_tz::UTC,
        xff_set: Default::default(),
    };
    match ctx.eval(&expr) {
        Ok(list) => {
            let _ = crate::server::graphite_web::render::to_json(&list, Some(10), false);
            true
        }
        Err(_) => false,
    }
}

/// `m=`-style `metric{tag=value,…}` of `/api/query/last` and `/api/search/lookup`.
pub fn opentsdb_metric_and_tags(
    s: &str,
) -> Result<(String, Vec<(String, String)>), crate::query::parse::ParseError> {
    crate::server::opentsdb_query::metric_and_tags(s)
}

/// An `/api/query/exp` expression as the handler runs it: parsed with `query.max_depth` =
/// `max_depth`, then evaluated with every variable set. Returns whether it parsed.
pub fn opentsdb_expression(e: &str, max_depth: usize) -> bool {
    let Ok(ast) = crate::server::opentsdb_exp::parse_expr(e, max_depth) else {
        return false;
    };
    let mut names = Vec::new();
    ast.variables(&mut names);
    let env: std::collections::BTreeMap<&str, f64> =
        names.iter().map(|n| (n.as_str(), 1.5)).collect();
    let _ = ast.eval(&env);
    true
}

#[cfg(test)]
mod tests {
    /// The deepest expressions the highest `query.max_depth` admits evaluate on a 2 MiB thread
    /// stack (the size of tokio's and the blocking pool's threads), in a debug build too.
    #[test]
    fn the_deepest_admitted_expressions_fit_a_2_mib_stack() {
        let d = crate::config::MAX_DEPTH_CEILING;
        let shapes = [
            format!("{}up{}", "abs(".repeat(d - 1), ")".repeat(d - 1)),
            format!("1{}", "+1".repeat(d - 1)),
            format!("up{}", " * up".repeat(d - 1)),
            format!("{}up{}", "-(".repeat(d / 2 - 1), ")".repeat(d / 2 - 1)),
            subqueries(d),
        ];
        for q in shapes {
            assert!(crate::promql::parse_bounded(&q, d).is_ok(), "{q}");
            let handle = std::thread::Builder::new()
                .stack_size(2 << 20)
                .spawn(move || super::promql_bounded(&q, d))
                .unwrap();
            assert!(handle.join().unwrap());
        }
    }

    /// Eight subqueries nested (each evaluates the next at its steps), inside `abs(` up to `d`.
    fn subqueries(d: usize) -> String {
        let mut e = "rate(up[5m])".to_string();
        for _ in 0..8 {
            e = format!("max_over_time(({e})[2m:1m])");
        }
        let pad = d - 2 - 8 * 3 - 3;
        format!("{}{e}{}", "abs(".repeat(pad), ")".repeat(pad))
    }

    /// The deepest targets the highest `query.max_depth` admits evaluate on a 2 MiB thread
    /// stack (the blocking pool's), in a debug build too.
    #[test]
    fn the_deepest_admitted_targets_fit_a_2_mib_stack() {
        let d = crate::config::MAX_DEPTH_CEILING;
        let n = d - 1;
        for t in [
            format!("{}a.b.*{}", "absolute(".repeat(n), ")".repeat(n)),
            format!("a.b.*{}", "|scale(2)".repeat(n)),
            format!("{}a.*.c{}", "sumSeries(".repeat(n), ")".repeat(n)),
            format!("{}a.b.c{}", "timeShift(".repeat(n), ", '1min')".repeat(n)),
        ] {
            assert!(crate::query::graphite::parser::parse_bounded(&t, d).is_ok());
            assert!(crate::query::graphite::parser::parse_bounded(&t, d - 1).is_err());
            let h = std::thread::Builder::new()
                .stack_size(2 << 20)
                .spawn(move || super::graphite_target_bounded(&t, d))
                .unwrap();
            assert!(h.join().unwrap());
        }
    }
}
