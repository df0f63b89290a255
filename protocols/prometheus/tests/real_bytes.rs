//! Decodes remote-write bodies produced by other encoders (the shared bench generator:
//! Python's snappy via cramjam and a hand-rolled protobuf writer).

use prost::Message;
use tsgate_prometheus::{proto::WriteRequest, snappy};

#[test]
fn bench_generator_body_decodes() {
    let body = include_bytes!("data/rw-gen-py.bin");
    let raw = snappy::decompress(body, 32 << 20).unwrap();
    let req = WriteRequest::decode(raw.as_slice()).unwrap();
    assert_eq!(req.timeseries.len(), 2000);
    let first = &req.timeseries[0];
    let names: Vec<&str> = first.labels.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["__name__", "dc", "host", "rack"]);
    assert_eq!(first.labels[0].value, "cpu_usage_user");
    assert_eq!(first.samples.len(), 1);
    assert_eq!(first.samples[0].timestamp, 1_699_999_200_000);
    assert!((0.0..=100.0).contains(&first.samples[0].value));
    // Re-encoding may be shorter (proto3 omits zero-valued fields the generator writes out),
    // but decodes to the same request.
    let enc = req.encode_to_vec();
    assert!(enc.len() <= raw.len());
    assert!(WriteRequest::decode(enc.as_slice()).unwrap() == req);
}
