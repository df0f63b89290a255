//! Remote-write 2.0 `io.prometheus.write.v2.Request` (raw protobuf): decode, symbol-table
//! references, normalisation into stored series.
#![no_main]
use libfuzzer_sys::fuzz_target;
use prost::Message;
use tsgate::prometheus::write::from_v2;
use tsgate_prometheus::v2;

fuzz_target!(|data: &[u8]| {
    let Ok(req) = v2::Request::decode(data) else { return };
    let _ = req.check_symbols();
    for ts in &req.timeseries {
        let _ = req.labels(&ts.labels_refs);
    }
    let b = from_v2(&req, 32);
    for (i, _) in &b.samples {
        assert!(*i < b.series.len(), "sample points at a missing series");
    }
});
