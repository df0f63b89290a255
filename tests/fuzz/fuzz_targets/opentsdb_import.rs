//! `tsgate import` lines: `metric timestamp value tag=v …`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tsgate_opentsdb::{parse_import_line, validate_point, Limits};

fuzz_target!(|s: &str| {
    let limits = Limits::default();
    for line in s.lines() {
        if let Ok(p) = parse_import_line(line, &limits) {
            // What the parser accepts already passed validation; checking again must agree.
            validate_point(&p, &limits).unwrap_or_else(|e| panic!("accepted {line:?} fails validation: {e}"));
        }
    }
});
