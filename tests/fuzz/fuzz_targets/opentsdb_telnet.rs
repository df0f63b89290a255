//! OpenTSDB telnet lines: `put` and every other command, as the TCP port decodes them.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tsgate_opentsdb::telnet::{decode_latin1, parse_line};
use tsgate_opentsdb::Limits;

fuzz_target!(|data: &[u8]| {
    let limits = Limits::default();
    for raw in data.split(|&b| b == b'\n') {
        let line = decode_latin1(raw);
        match parse_line(line.trim_end_matches('\r'), &limits) {
            Ok(_) => {}
            // Every error renders as OpenTSDB's answer line.
            Err(e) => {
                let _ = e.line();
            }
        }
    }
});
