//! The snappy layer of remote write/read bodies (block format, size cap checked first), then
//! whatever it yields through both remote-write decoders and the remote-read request decoder.
#![no_main]
use libfuzzer_sys::fuzz_target;
use prost::Message;
use tsgate::prometheus::write::{from_v1, from_v2};
use tsgate_prometheus::{proto::ReadRequest, snappy, v2};

/// Small, so inputs claiming huge sizes are refused rather than allocated.
const LIMIT: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = snappy::decompress(data, LIMIT) else { return };
    assert!(raw.len() <= LIMIT, "decompressed past the cap");
    let _ = from_v1(&raw, 32, &|_| None);
    if let Ok(r) = v2::Request::decode(raw.as_slice()) {
        let _ = from_v2(&r, 32);
    }
    let _ = ReadRequest::decode(raw.as_slice());
    // Round trip: what we compress, we decompress to the same bytes.
    assert_eq!(snappy::decompress(&snappy::compress(&raw), LIMIT).unwrap(), raw);
});
