//! Every time grammar a request can carry: graphite `from`/`until`/`now` (at-style) and offsets,
//! OpenTSDB absolute/relative times, Prometheus `time`/`start`/`end` and durations/steps.
//! A first line, when there is one, is graphite's `now=` for the second (as `/render` does).
#![no_main]
use libfuzzer_sys::fuzz_target;
use tsgate::query::time::parse_time as tsdb_time;
use tsgate::query::graphite::attime::{parse_attime, parse_offset};
use tsgate::server::prometheus::params::{parse_duration, parse_prom_duration, parse_time as prom_time};

const NOW_S: i64 = 1_700_000_000;

fuzz_target!(|s: &str| {
    let (now, s) = match s.split_once('\n') {
        Some((n, rest)) => (parse_attime(n, NOW_S).unwrap_or(NOW_S), rest),
        None => (NOW_S, s),
    };
    let _ = parse_attime(s, now);
    let _ = parse_offset(s);
    let _ = tsdb_time(s, now.unsigned_abs().saturating_mul(1000));
    let _ = prom_time(s);
    let _ = parse_duration(s);
    let _ = parse_prom_duration(s);
});
