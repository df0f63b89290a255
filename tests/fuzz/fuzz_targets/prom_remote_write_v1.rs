//! Remote-write 1.0 `prometheus.WriteRequest` (raw protobuf): the borrowing decoder the write
//! path uses, label normalisation and sample encoding (`from_v1`), and prost's decoder.
#![no_main]
use libfuzzer_sys::fuzz_target;
use prost::Message;
use tsgate::prometheus::write::from_v1;
use tsgate_prometheus::proto::WriteRequest;

fuzz_target!(|data: &[u8]| {
    if let Ok(b) = from_v1(data, 32, &|_| None) {
        for (i, _) in &b.samples {
            assert!(*i < b.series.len(), "sample points at a missing series");
        }
    }
    let _ = WriteRequest::decode(data);
});
