//! `/api/query` POST bodies (JSON): times, sub-queries, filters, downsampling, rate options.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tsgate::query::parse::from_json;

fuzz_target!(|data: &[u8]| {
    let _ = from_json(data, 1_700_000_000_000);
});
