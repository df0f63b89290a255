//! Carbon plaintext lines (TCP chunks and UDP datagrams): `path value timestamp`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tsgate_graphite::plaintext::{datagram_lines, parse_line, timestamp_ms};

const NOW_MS: u64 = 1_356_998_400_000;

fuzz_target!(|data: &[u8]| {
    for raw in datagram_lines(data) {
        let Ok(line) = std::str::from_utf8(raw) else { continue };
        if let Ok(Some(p)) = parse_line(line, NOW_MS) {
            // An accepted point is something the store can take: a path and a real timestamp.
            assert!(!p.path.is_empty(), "empty path accepted from {line:?}");
            assert!(!p.value.is_nan(), "NaN is dropped, never returned: {line:?}");
        }
    }
    if data.len() >= 8 {
        let _ = timestamp_ms(f64::from_le_bytes(data[..8].try_into().unwrap()), NOW_MS);
    }
});
