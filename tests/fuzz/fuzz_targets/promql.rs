//! PromQL through tsgate's engine: parse, `match[]`, planning, instant and range evaluation.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|q: &str| {
    // Longer queries add nothing the parser has not seen and slow every run.
    if q.len() <= 512 {
        tsgate::fuzz_api::promql(q);
    }
});
