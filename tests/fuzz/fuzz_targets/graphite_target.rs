//! graphite-web `target=` expressions: the parser, then every render function's evaluation.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|t: &str| {
    if t.len() <= 512 {
        tsgate::fuzz_api::graphite_target(t);
    }
});
