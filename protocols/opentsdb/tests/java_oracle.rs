//! Vectors produced by a real JVM (OpenJDK 17) with `tests/data/Oracle.java`:
//! `Double.parseDouble` + `(float) d == d` + `Float.parseFloat` (OpenTSDB's float/double split),
//! and `java.util.HashMap.toString()` for maps filled in a given key order.

use tsgate_opentsdb::{parse_value, validate_point, DataPoint, Limits, Value, ValueError};

fn unescape(s: &str) -> String {
    s.replace("\\t", "\t").replace("\\\\", "\\")
}

#[test]
fn doubles_match_jvm() {
    let mut checked = 0;
    for line in include_str!("data/java_doubles.tsv").lines() {
        let (input, expect) = line.split_once('\t').unwrap();
        let input = unescape(input);
        let expect = unescape(expect);
        let t = input.trim_matches(|c: char| c <= ' ');
        let t = t.trim_start_matches(['+', '-']);
        if t.starts_with("0x") || t.starts_with("0X") {
            continue; // Hex floats: accepted by Java, deliberately rejected here.
        }
        let got = match parse_value(&input) {
            Ok(Value::F32(f)) => format!("F32 {:08x}", f.to_bits()),
            Ok(Value::F64(d)) => format!("F64 {:016x}", d.to_bits()),
            Ok(Value::Int(i)) => format!("INT {i}"),
            Err(ValueError::NumberFormat(e)) => format!("NFE {e}"),
            Err(ValueError::NotFinite(m)) => {
                format!(
                    "NOTFINITE {}",
                    m.trim_start_matches("value is NaN or Infinite: ")
                )
            }
        };
        assert_eq!(got, expect, "input {input:?}");
        checked += 1;
    }
    assert!(checked > 1000);
}

#[test]
fn hashmap_order_matches_jvm() {
    // max_tags = 0 makes validate_point print the whole map.
    let limits = Limits {
        max_tags: 0,
        allow_special: String::new(),
    };
    for line in include_str!("data/java_hashmaps.tsv").lines() {
        let (keys, expect) = line.split_once('\t').unwrap();
        let values: Vec<String> = (0..keys.split(' ').count())
            .map(|i| format!("v{i}"))
            .collect();
        let tags: Vec<(&str, &str)> = keys
            .split(' ')
            .zip(values.iter().map(|s| s.as_str()))
            .collect();
        let p = DataPoint {
            metric: "m",
            timestamp: 1,
            value: Value::Int(1),
            tags,
        };
        let msg = validate_point(&p, &limits).unwrap_err().to_string();
        let map = msg.split_once(", tags: ").unwrap().1;
        assert_eq!(map, expect, "keys {keys}");
    }
}
