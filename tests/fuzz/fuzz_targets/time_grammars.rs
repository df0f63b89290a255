//! Every time grammar a request can carry: graphite `from`/`until`/`now` (at-style) and offsets,
//! OpenTSDB absolute/relative times, Prometheus `time`/`start`/`end` and durations/steps.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tsgate::query::time::parse_time as tsdb_time;
use tsgate::server::graphite_web::attime::{parse_attime, parse_offset};
use tsgate::server::prometheus::params::{parse_duration, parse_prom_duration, parse_time as prom_time};

const NOW_S: i64 = 1_700_000_000;

fuzz_target!(|s: &str| {
    let _ = parse_attime(s, NOW_S);
    let _ = parse_offset(s);
    let _ = tsdb_time(s, NOW_S as u64 * 1000);
    let _ = prom_time(s);
    let _ = parse_duration(s);
    let _ = parse_prom_duration(s);
});
