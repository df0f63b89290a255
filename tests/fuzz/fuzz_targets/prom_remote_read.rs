//! Remote-read requests (raw protobuf): response-type negotiation and every label matcher
//! (regexes compiled as the store would use them).
#![no_main]
use libfuzzer_sys::fuzz_target;
use prost::Message;
use tsgate::query::select::Matcher;
use tsgate::server::prometheus::read::negotiate;
use tsgate_prometheus::proto::ReadRequest;

fuzz_target!(|data: &[u8]| {
    let Ok(rr) = ReadRequest::decode(data) else { return };
    let _ = negotiate(&rr.accepted_response_types);
    for q in &rr.queries {
        for m in &q.matchers {
            if let Ok(m) = Matcher::new(m.r#type, &m.name, &m.value) {
                let _ = m.matches("");
                let _ = m.matches(&m_name_probe(&q.matchers));
            }
        }
    }
});

fn m_name_probe(ms: &[tsgate_prometheus::proto::LabelMatcher]) -> String {
    ms.iter().map(|m| m.value.as_str()).collect::<Vec<_>>().join("")
}
