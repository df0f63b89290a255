//! `/api/query/exp` expressions (OpenTSDB's arithmetic over metric variables): parsed with the
//! depth bound the handler uses and evaluated. The first byte picks how many brackets wrap the
//! rest and which `query.max_depth` applies; a stack overflow aborts, which libFuzzer reports.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&levels, rest)) = data.split_first() else {
        return;
    };
    let Ok(inner) = std::str::from_utf8(rest) else {
        return;
    };
    let max = if levels & 1 == 0 {
        64
    } else {
        tsgate::config::MAX_DEPTH_CEILING
    };
    let n = (levels >> 1) as usize;
    let wrapped = format!("{}{inner}{}", "(".repeat(n), ")".repeat(n));
    let chained = format!("{inner}{}", "+a".repeat(n));
    // The server parses on the blocking pool's threads, whose stacks are 2 MiB.
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            tsgate::fuzz_api::opentsdb_expression(&wrapped, max);
            tsgate::fuzz_api::opentsdb_expression(&chained, max);
        })
        .unwrap()
        .join()
        .unwrap();
});
