//! Graphite 1.1 tagged-series names (`name;k=v;…`) and their canonical form.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tsgate_graphite::tags;

fuzz_target!(|s: &str| {
    let _ = tags::is_tagged(s);
    if let Ok(t) = tags::parse(s) {
        // Normalising is idempotent: the canonical name parses back to the same series.
        let c = t.canonical();
        let again = tags::parse(&c).unwrap_or_else(|e| panic!("canonical {c:?} of {s:?} does not parse: {e}"));
        assert_eq!(again.canonical(), c, "canonical form of {s:?} is not stable");
    }
});
