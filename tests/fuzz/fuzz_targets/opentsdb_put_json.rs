//! `/api/put` bodies: one point or an array, then per-point validation and the `details` echo.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tsgate_opentsdb::{parse_body, Limits};

fuzz_target!(|data: &[u8]| {
    let limits = Limits::default();
    let Ok(points) = parse_body(data) else { return };
    for p in &points {
        match p.validate(&limits) {
            Ok(dp) => {
                let _ = dp.to_owned_point();
            }
            Err(e) => {
                let text = e.to_string();
                serde_json::to_string(&p.error_detail(&text)).expect("error detail serialises");
            }
        }
        serde_json::to_string(&p.echo()).expect("echo serialises");
    }
});
