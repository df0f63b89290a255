//! Issue 35: PromQL and graphite-web expressions nested as deep as `query.max_depth` admits
//! (and past it), evaluated on a 2 MiB stack, the size of the threads that run them in the
//! server. The first byte picks how many levels wrap the rest of the input; an overflow
//! aborts, which libFuzzer reports as a crash.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&levels, rest)) = data.split_first() else {
        return;
    };
    let Ok(inner) = std::str::from_utf8(rest) else {
        return;
    };
    if inner.len() > 256 {
        return;
    }
    let n = levels as usize % 140;
    let prom = format!("{}{inner}{}", "abs(".repeat(n), ")".repeat(n));
    let graphite = format!("{}{inner}{}", "absolute(".repeat(n), ")".repeat(n));
    let piped = format!("{inner}{}", "|absolute()".repeat(n));
    let max = tsgate::config::MAX_DEPTH_CEILING;
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            tsgate::fuzz_api::promql_bounded(&prom, max);
            tsgate::fuzz_api::graphite_target_bounded(&graphite, max);
            tsgate::fuzz_api::graphite_target_bounded(&piped, max);
        })
        .unwrap()
        .join()
        .unwrap();
});
