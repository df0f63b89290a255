//! The pickle port: 4-byte length frames, each a pickle payload for the safe decoder.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tsgate_graphite::{frame, pickle};

fuzz_target!(|data: &[u8]| {
    // Whole input as one payload (the decoder proper) ...
    let _ = pickle::decode(data);
    // ... and as a stream of frames, as the connection reads them.
    let mut buf = data;
    while let Ok(Some((used, range))) = frame::next_frame(buf, 1 << 20) {
        assert!(used > 0 && used <= buf.len() && range.end <= used, "bad frame bounds");
        let _ = pickle::decode(&buf[range]);
        buf = &buf[used..];
    }
});
