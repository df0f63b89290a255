//! JSON written the way OpenTSDB's Jackson writes it. Stored metadata JSON doubles as the
//! compare-and-set token, so field order, escaping and map order are part of the format:
//! these helpers write it by hand instead of through serde's (sorted) maps.

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use std::fmt::Write;

/// A JSON string literal, escaped as Jackson escapes: `"`, `\`, the short control escapes,
/// other control characters as `\u00XX`; everything else raw.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            '\u{8}' => o.push_str("\\b"),
            '\u{c}' => o.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04X}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

type Entry = (String, Option<String>);

/// A string map in the order its keys arrived (JSON document order). Values may be null.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StrMap(pub Vec<(String, Option<String>)>);

impl StrMap {
    pub fn get(&self, k: &str) -> Option<&Option<String>> {
        self.0.iter().find(|(key, _)| key == k).map(|(_, v)| v)
    }

    pub fn insert(&mut self, k: String, v: Option<String>) {
        match self.0.iter_mut().find(|(key, _)| *key == k) {
            Some(slot) => slot.1 = v,
            None => self.0.push((k, v)),
        }
    }

    /// The keys in the order Java's `HashMap` iterates them (bucket of the spread
    /// `String.hashCode`, then insertion order), which is how OpenTSDB writes UIDMeta/TSMeta
    /// `custom` maps.
    pub fn java_hashmap_order(&self) -> Vec<&(String, Option<String>)> {
        let mut cap = 16usize;
        while self.0.len() as f64 > cap as f64 * 0.75 {
            cap *= 2;
        }
        let mut v: Vec<(usize, usize, &Entry)> = self
            .0
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let h = tsgate_schema::java_string_hash(&e.0) as u32;
                (((h ^ (h >> 16)) as usize) & (cap - 1), i, e)
            })
            .collect();
        v.sort_by_key(|x| (x.0, x.1));
        v.into_iter().map(|x| x.2).collect()
    }

    /// The keys sorted (Java `TreeMap`, annotation `custom`).
    pub fn sorted(&self) -> Vec<&(String, Option<String>)> {
        let mut v: Vec<_> = self.0.iter().collect();
        v.sort_by(|a, b| java_cmp(&a.0, &b.0));
        v
    }

    pub fn to_json(entries: &[&(String, Option<String>)]) -> String {
        let mut o = String::from("{");
        for (i, (k, v)) in entries.iter().map(|e| (&e.0, &e.1)).enumerate() {
            if i > 0 {
                o.push(',');
            }
            o.push_str(&esc(k));
            o.push(':');
            match v {
                Some(v) => o.push_str(&esc(v)),
                None => o.push_str("null"),
            }
        }
        o.push('}');
        o
    }
}

/// `String.compareTo`: UTF-16 code unit order.
pub fn java_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// `custom` as OpenTSDB writes it: `null` or an object (sorted or in `HashMap` order).
pub fn custom_json(c: &Option<StrMap>, sorted: bool) -> String {
    match c {
        None => "null".into(),
        Some(m) if sorted => StrMap::to_json(&m.sorted()),
        Some(m) => StrMap::to_json(&m.java_hashmap_order()),
    }
}

impl<'de> Deserialize<'de> for StrMap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = StrMap;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of strings")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<StrMap, A::Error> {
                let mut out = StrMap::default();
                while let Some((k, v)) = m.next_entry::<String, serde_json::Value>()? {
                    // Jackson coerces scalars into the map's String values.
                    let v = match v {
                        serde_json::Value::Null => None,
                        serde_json::Value::String(s) => Some(s),
                        serde_json::Value::Number(n) => Some(n.to_string()),
                        serde_json::Value::Bool(b) => Some(b.to_string()),
                        _ => {
                            return Err(serde::de::Error::custom(format!(
                                "custom field {k} must be a string"
                            )))
                        }
                    };
                    out.insert(k, v);
                }
                Ok(out)
            }
        }
        d.deserialize_map(V)
    }
}

impl serde::Serialize for StrMap {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// A double as Jackson writes it: finite as Java's `Double.toString`, NaN as `"NaN"`.
pub fn java_double_json(d: f64) -> String {
    if d.is_nan() {
        "\"NaN\"".into()
    } else if d.is_infinite() {
        format!("\"{}\"", tsgate_common::numfmt::java_double(d))
    } else {
        tsgate_common::numfmt::java_double(d)
    }
}

/// Present with a value, present as `null`, or absent: what "the caller set this field" means
/// for POST merges.
pub fn double_or_nan(v: &serde_json::Value) -> Option<f64> {
    match v {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_like_jackson() {
        assert_eq!(esc("a\"b\\c\n\u{1}é/"), "\"a\\\"b\\\\c\\n\\u0001é/\"");
    }

    #[test]
    fn hashmap_order_follows_buckets_then_insertion() {
        // "owner" and "dept": bucket = spread(hash) & 15.
        let mut m = StrMap::default();
        for k in ["owner", "dept", "a", "b"] {
            m.insert(k.into(), Some("x".into()));
        }
        let order: Vec<&str> = m
            .java_hashmap_order()
            .iter()
            .map(|e| e.0.as_str())
            .collect();
        let bucket = |k: &str| {
            let h = tsgate_schema::java_string_hash(k) as u32;
            (h ^ (h >> 16)) & 15
        };
        let mut want = vec!["owner", "dept", "a", "b"];
        want.sort_by_key(|k| bucket(k));
        assert_eq!(order, want);
        // "a" (97) and "b" (98) land in buckets 1 and 2.
        assert_eq!((bucket("a"), bucket("b")), (1, 2));
    }

    #[test]
    fn custom_json_forms() {
        let m: StrMap = serde_json::from_str(r#"{"z":"1","a":null,"n":5}"#).unwrap();
        assert_eq!(
            custom_json(&Some(m.clone()), true),
            r#"{"a":null,"n":"5","z":"1"}"#
        );
        assert_eq!(custom_json(&None, true), "null");
        assert_eq!(java_double_json(f64::NAN), "\"NaN\"");
        assert_eq!(java_double_json(1.0), "1.0");
    }
}
