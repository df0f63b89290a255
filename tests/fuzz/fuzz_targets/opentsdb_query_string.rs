//! `/api/query` GET parameters: the whole form (`start`, `end`, `m=`, `tsuid=`, flags) and the
//! sub-query grammars on their own (`m=`, `tsuid=`, `metric{tags}{filters}`, `/api/query/last`).
#![no_main]
use libfuzzer_sys::fuzz_target;
use tsgate::query::parse::{from_params, parse_m, parse_metric_filters, parse_tsuid};

fuzz_target!(|data: &[u8]| {
    let params: Vec<(String, String)> = form_urlencoded::parse(data).map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
    let _ = from_params(&params, 1_700_000_000_000);
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = parse_m(s, 0);
        let _ = parse_tsuid(s, 0);
        let _ = parse_metric_filters(s);
        let _ = tsgate::fuzz_api::opentsdb_metric_and_tags(s);
    }
});
