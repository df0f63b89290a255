use proptest::prelude::*;
use tsgate_graphite::{frame, pickle, plaintext, tags};

proptest! {
    #[test]
    fn pickle_never_panics(b in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = pickle::decode(&b);
    }

    #[test]
    fn pickle_never_panics_after_a_valid_prefix(b in proptest::collection::vec(any::<u8>(), 0..256)) {
        let mut p = vec![0x80, 2, b']', b'q', 0, b'('];
        p.extend_from_slice(&b);
        let _ = pickle::decode(&p);
    }

    #[test]
    fn lines_never_panic(s in "\\PC{0,80}", b in proptest::collection::vec(any::<u8>(), 0..80)) {
        let _ = plaintext::parse_line(&s, 1_795_000_000_000);
        let _ = plaintext::datagram_lines(&b).count();
        let _ = frame::next_frame(&b, 64);
        let _ = tags::parse(&s);
    }

    #[test]
    fn lines_round_trip(path in "[a-z][a-z0-9_.-]{0,30}", v in -1e12f64..1e12, ts in 0u32..4_000_000_000) {
        let line = format!("{path} {v:?} {ts}\r");
        let p = plaintext::parse_line(&line, 0).unwrap().unwrap();
        prop_assert_eq!(p.path, path.as_str());
        prop_assert_eq!(p.value, v);
        prop_assert_eq!(p.ts_ms, ts as u64 * 1000);
    }

    #[test]
    fn tags_canonical_is_a_fixed_point(name in "[a-z.]{1,10}", kv in proptest::collection::vec(("[a-zA-Z_-]{1,5}", "[a-z0-9=.]{1,5}"), 0..6)) {
        let mut p = name.clone();
        for (k, v) in &kv {
            p.push_str(&format!(";{k}={v}"));
        }
        if let Ok(t) = tags::parse(&p) {
            let c = t.canonical();
            prop_assert_eq!(tags::parse(&c).unwrap().canonical(), c);
        }
    }
}

/// Pickles written by CPython (protocols 0–5) for `[("a.b", (1795000000, 1.5)), ("c", (1795000001.5, 7))]`.
#[test]
fn cpython_protocols_0_to_5() {
    let out = std::process::Command::new("python3")
        .args(["-c", "import pickle,sys\nd=[('a.b',(1795000000,1.5)),('c',(1795000001.5,7))]\nfor p in range(6): sys.stdout.write(pickle.dumps(d,protocol=p).hex()+'\\n')"])
        .output();
    let Ok(out) = out else { return };
    if !out.status.success() {
        return;
    }
    for (proto, line) in String::from_utf8(out.stdout).unwrap().lines().enumerate() {
        let bytes: Vec<u8> = (0..line.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&line[i..i + 2], 16).unwrap())
            .collect();
        let d = pickle::decode(&bytes).unwrap_or_else(|e| panic!("protocol {proto}: {e}"));
        assert_eq!(d.items.len(), 2, "protocol {proto}");
        assert_eq!(
            (&*d.items[0].path, d.items[0].timestamp, d.items[0].value),
            ("a.b", 1795000000.0, 1.5)
        );
        assert_eq!(
            (&*d.items[1].path, d.items[1].timestamp, d.items[1].value),
            ("c", 1795000001.5, 7.0)
        );
    }
}

/// A protocol-2 encoder as carbon-relay's pickles look (memoised names, TUPLE2, APPENDS).
fn encode_p2(items: &[(String, i64, f64)]) -> Vec<u8> {
    let mut p = vec![0x80, 2, b']', b'q', 0, b'('];
    let mut memo: Vec<&str> = Vec::new();
    for (name, ts, v) in items {
        if let Some(i) = memo.iter().position(|m| *m == name) {
            p.extend_from_slice(&[b'h', (i + 1) as u8]);
        } else {
            p.push(b'X');
            p.extend_from_slice(&(name.len() as u32).to_le_bytes());
            p.extend_from_slice(name.as_bytes());
            if memo.len() < 200 {
                memo.push(name);
                p.extend_from_slice(&[b'q', memo.len() as u8]);
            }
        }
        if let Ok(small) = i32::try_from(*ts) {
            p.push(b'J');
            p.extend_from_slice(&small.to_le_bytes());
        } else {
            p.extend_from_slice(&[0x8a, 8]);
            p.extend_from_slice(&ts.to_le_bytes());
        }
        p.push(b'G');
        p.extend_from_slice(&v.to_be_bytes());
        p.extend_from_slice(&[0x86, 0x86]);
    }
    p.extend_from_slice(b"e.");
    p
}

proptest! {
    #[test]
    fn pickle_round_trips(items in proptest::collection::vec(("[a-z.é;=]{1,12}", any::<i64>(), any::<f64>()), 0..40)) {
        let bytes = encode_p2(&items);
        let d = pickle::decode(&bytes).unwrap();
        prop_assert_eq!(d.bad_items, 0);
        prop_assert_eq!(d.items.len(), items.len());
        for (got, (name, ts, v)) in d.items.iter().zip(&items) {
            prop_assert_eq!(&*got.path, name.as_str());
            prop_assert_eq!(got.timestamp, *ts as f64);
            prop_assert!(got.value.to_bits() == v.to_bits() || (got.value.is_nan() && v.is_nan()));
        }
    }
}
