//! Streamed remote-read responses as a client reads them: CRC32C frames, then XOR chunks.
#![no_main]
use libfuzzer_sys::fuzz_target;
use prost::Message;
use tsgate_prometheus::chunk::{decode_xor, encode_xor};
use tsgate_prometheus::frame::read_frames;
use tsgate_prometheus::proto::ChunkedReadResponse;

fuzz_target!(|data: &[u8]| {
    if let Ok(samples) = decode_xor(data) {
        // Whatever decodes re-encodes to a chunk that decodes to the same samples.
        let back = decode_xor(&encode_xor(&samples)).expect("our own chunk decodes");
        assert_eq!(back.len(), samples.len());
        for (a, b) in back.iter().zip(&samples) {
            assert!(a.0 == b.0 && a.1.to_bits() == b.1.to_bits(), "{a:?} != {b:?}");
        }
    }
    if let Ok(frames) = read_frames(data) {
        for f in frames {
            if let Ok(r) = ChunkedReadResponse::decode(f) {
                for s in &r.chunked_series {
                    for c in &s.chunks {
                        let _ = decode_xor(&c.data);
                    }
                }
            }
        }
    }
});
