//! Emulation of `java.util.HashMap` iteration order for small string-keyed maps.
//!
//! OpenTSDB keeps tags in a `HashMap<String, String>` and both prints it (`{k=v, k2=v2}`) in
//! error messages and validates the tags in its iteration order, so which bad tag gets reported
//! depends on it. Only error paths use this module.
//!
//! Model: default capacity 16, load factor 0.75, doubling; a bucket's entries iterate in
//! insertion order (resizes preserve that), and buckets iterate by index. A bucket reaching 8
//! entries while the table is smaller than 64 forces a resize, as in Java. Not modelled: the
//! order inside a treeified bucket (>= 9 colliding keys in a table of >= 64 buckets), which only
//! crafted keys can reach.

/// Java `String.hashCode()` (over UTF-16 units, 32-bit wrap-around).
pub(crate) fn java_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(i32::from(u)))
}

/// `HashMap.hash()`: the high half folded into the low half.
fn spread(s: &str) -> u32 {
    let h = java_hash(s) as u32;
    h ^ (h >> 16)
}

/// Indices of `keys` (distinct, listed in insertion order) in Java `HashMap` iteration order.
pub(crate) fn iteration_order<S: AsRef<str>>(keys: &[S]) -> Vec<usize> {
    let hashes: Vec<u32> = keys.iter().map(|k| spread(k.as_ref())).collect();
    let mut cap: usize = 16;
    let mut counts = vec![0u32; cap];
    let recount = |cap: usize, n: usize, counts: &mut Vec<u32>| {
        counts.clear();
        counts.resize(cap, 0);
        for &h in &hashes[..n] {
            counts[h as usize & (cap - 1)] += 1;
        }
    };
    for (i, &h) in hashes.iter().enumerate() {
        let bucket = h as usize & (cap - 1);
        let chain = counts[bucket];
        counts[bucket] += 1;
        if chain >= 8 && cap < 64 {
            cap *= 2;
            recount(cap, i + 1, &mut counts);
        }
        if i + 1 > cap / 4 * 3 {
            cap *= 2;
            recount(cap, i + 1, &mut counts);
        }
    }
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by_key(|&i| (hashes[i] as usize & (cap - 1), i));
    order
}

/// `AbstractMap.toString()` of the map holding `pairs` (distinct keys, insertion order);
/// `None` values print as `null`.
pub(crate) fn format_map<K: AsRef<str>, V: AsRef<str>>(pairs: &[(K, Option<V>)]) -> String {
    let keys: Vec<&str> = pairs.iter().map(|(k, _)| k.as_ref()).collect();
    let mut out = String::from("{");
    for (n, i) in iteration_order(&keys).into_iter().enumerate() {
        if n > 0 {
            out.push_str(", ");
        }
        out.push_str(keys[i]);
        out.push('=');
        out.push_str(pairs[i].1.as_ref().map_or("null", |v| v.as_ref()));
    }
    out.push('}');
    out
}

/// `format_map` for pairs without null values.
pub(crate) fn format_pairs(pairs: &[(&str, &str)]) -> String {
    let v: Vec<(&str, Option<&str>)> = pairs.iter().map(|&(k, v)| (k, Some(v))).collect();
    format_map(&v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_matches_java() {
        assert_eq!(java_hash(""), 0);
        assert_eq!(java_hash("sys"), 114381);
        assert_eq!(java_hash("hello"), 99162322);
        assert_eq!(java_hash("host"), 3208616);
    }

    fn order(keys: &[&str]) -> Vec<String> {
        iteration_order(keys)
            .into_iter()
            .map(|i| keys[i].to_string())
            .collect()
    }

    #[test]
    fn known_java_orders() {
        // Orders of `new HashMap<>()` filled in the listed order (bucket = (h ^ h>>>16) & 15).
        assert_eq!(order(&["error", "datapoint"]), ["datapoint", "error"]);
        assert_eq!(
            order(&["success", "failed", "errors"]),
            ["success", "failed", "errors"]
        );
        // "a".."c" hash to 97..99 → buckets 1..3.
        assert_eq!(order(&["c", "a", "b"]), ["a", "b", "c"]);
        // Same bucket (16 apart): insertion order kept.
        assert_eq!(order(&["q", "a"]), ["q", "a"]);
    }

    #[test]
    fn resize_changes_order() {
        // 13 single-letter keys resize the table to 32: 'a'(97)→bucket 1 and 'q'(113)→17.
        let keys: Vec<String> = (b'a'..=b'm')
            .map(|c| (c as char).to_string())
            .chain(["q".into()])
            .collect();
        let refs: Vec<&str> = keys.iter().map(|s| s.as_str()).collect();
        let o = order(&refs);
        assert_eq!(o.last().unwrap(), "q");
        assert_eq!(o[0], "a");
    }

    #[test]
    fn formats_like_abstract_map() {
        assert_eq!(format_pairs(&[]), "{}");
        assert_eq!(format_pairs(&[("host", "web01")]), "{host=web01}");
        assert_eq!(format_map(&[("k", None::<&str>)]), "{k=null}");
        assert_eq!(format_pairs(&[("c", "3"), ("a", "1")]), "{a=1, c=3}");
    }
}
