//! tsgate's row-key regexes (Rust `regex::bytes` syntax, searched unanchored, `\xHH` escapes)
//! as Bigtable's `row_key_regex_filter`: RE2 over the key's raw bytes that must match the whole
//! key. The pattern is rebuilt from its syntax tree so that every byte is written as `\xHH`
//! (never `\Q…\E`, which the service does not read as bytes), under `(?s)` so `.` takes `\n`,
//! and wrapped as `.*(?:…).*` for the search. What cannot be said exactly (word boundaries)
//! is dropped, which only widens the match; the client re-checks every row with the exact
//! regex, so the server's filter only has to keep every row that matches.

use crate::regex_emit::{self, hex_escape, Dialect};

/// RE2's limit on a counted repetition.
const RE2_MAX_REPEAT: u32 = 1000;

/// RE2 over raw bytes: every byte exact, every class exact.
struct Re2;

impl Dialect for Re2 {
    fn byte(&self, b: u8, out: &mut String) {
        hex_escape(b, out);
    }

    fn class(&self, ranges: &[(u8, u8)], out: &mut String) -> Option<()> {
        if ranges.is_empty() {
            return None; // matches nothing: leave it to the client
        }
        out.push('[');
        for &(lo, hi) in ranges {
            out.push_str(&format!(r"\x{lo:02X}"));
            if hi > lo {
                out.push_str(&format!(r"-\x{hi:02X}"));
            }
        }
        out.push(']');
        Some(())
    }

    fn max_repeat(&self) -> u32 {
        RE2_MAX_REPEAT
    }
}

/// The RE2 pattern for `byte_regex`, or `None` when none can be built (the scan then filters
/// on the client only).
pub fn re2_row_filter(byte_regex: &str) -> Option<String> {
    let hir = regex_emit::parse(byte_regex)?;
    let mut out = String::from("(?s).*(?:");
    regex_emit::emit(&Re2, &hir, &mut out)?;
    out.push_str(").*");
    Some(out)
}

/// The qualifier ranges `[start, end)` that hold exactly the qualifiers starting with one of
/// `prefixes` (end None: to the last qualifier), disjoint and sorted: ranges compare bytes as
/// bytes, where an RE2 pattern's `.` would not take every byte (the service's regexes run over
/// UTF-8 unless `\C` is used, which Google's emulator does not read).
pub fn qualifier_ranges(prefixes: &[Vec<u8>]) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    let mut sorted = prefixes.to_vec();
    sorted.sort();
    sorted.dedup();
    let mut out: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
    for p in sorted {
        // A prefix another one starts with adds nothing (and would send its cells twice).
        if out.last().is_some_and(|(q, _)| p.starts_with(q)) {
            continue;
        }
        // The first byte string after every one starting with `p`.
        let mut end = p.clone();
        while end.last() == Some(&0xFF) {
            end.pop();
        }
        let end = if end.is_empty() {
            None
        } else {
            let last = end.len() - 1;
            end[last] += 1;
            Some(end)
        };
        out.push((p, end));
    }
    out
}

/// An RE2 pattern matching exactly the name `s` (a family), anchored at both ends.
pub fn exact(s: &[u8]) -> String {
    let mut out = String::from(r"\A(?:");
    for &b in s {
        hex_escape(b, &mut out);
    }
    out.push_str(r")\z");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualifier_ranges_hold_exactly_the_prefixed_qualifiers() {
        let ranges = qualifier_ranges(&[
            vec![1],
            vec![0, 0xFF],
            vec![0],
            vec![1, 5],
            vec![0xFF, 0xFF],
        ]);
        assert_eq!(
            ranges,
            [
                (vec![0], Some(vec![1])),
                (vec![1], Some(vec![2])),
                (vec![0xFF, 0xFF], None),
            ]
        );
        assert_eq!(
            qualifier_ranges(&[vec![7, 0xFF, 3]]),
            [(vec![7, 0xFF, 3], Some(vec![7, 0xFF, 4]))]
        );
        assert_eq!(qualifier_ranges(&[vec![], vec![3]]), [(vec![], None)]);
        let inside = |q: &[u8]| {
            ranges
                .iter()
                .any(|(s, e)| q >= s.as_slice() && e.as_ref().is_none_or(|e| q < e.as_slice()))
        };
        for q in [&[0u8][..], &[0, 0xFF, 0xFF], &[1, 0], &[0xFF, 0xFF, 0]] {
            assert!(inside(q), "{q:02x?}");
        }
        for q in [&[2u8][..], &[0xFF], &[0xFF, 0xFE, 0xFF]] {
            assert!(!inside(q), "{q:02x?}");
        }
    }
    use proptest::prelude::*;

    /// RE2's whole-key match of a byte-for-byte pattern, as the emulator runs it: the Rust
    /// regex crate in bytes mode reads this RE2 subset the same way.
    fn server_match(re: &str, row: &[u8]) -> bool {
        let re2 = re2_row_filter(re).unwrap();
        regex::bytes::RegexBuilder::new(&format!("^(?-u:{re2})$"))
            .unicode(false)
            .build()
            .unwrap()
            .is_match(row)
    }

    #[test]
    fn bytes_are_escaped_and_the_key_matched_whole() {
        let re2 = re2_row_filter(r"^\x00\xFF.{2}$").unwrap();
        assert_eq!(re2, r"(?s).*(?:\A\x00\xFF(?:[\x00-\xFF]){2}\z).*");
        assert!(server_match(r"^\x00\xFF.{2}$", &[0, 0xff, 1, 2]));
        assert!(!server_match(r"^\x00\xFF.{2}$", &[0, 0xff, 1, 2, 3]));
        assert!(
            server_match(r"\xFF", &[1, 0xff, 2]),
            "unanchored is a search"
        );
        assert!(re2_row_filter("a{2000}").is_none());
        assert_eq!(exact(b"t"), r"\A(?:t)\z");
        assert_eq!(exact(b"a-b"), r"\A(?:a\x2Db)\z");
    }

    proptest! {
        /// The server's filter keeps exactly the rows the byte regex accepts (no more: word
        /// boundaries are not among these patterns).
        #[test]
        fn server_filter_agrees(row in proptest::collection::vec(prop_oneof![0u8..4, 0x0Au8..0x0B, 0x41u8..0x44, 0x80u8..0x84, 0xFEu8..=0xFF], 0..10),
                                pick in 0usize..8) {
            let patterns = [
                r"^.{2}\x00",
                r"^(?:.{2})*\x01\x41$",
                r"\xC2\x80|\xFE",
                r"^[\x00-\x02\x80-\xFF]+$",
                r"A.?B",
                r"^.{3}(?:\x00\x00|\xFF\xFE).*$",
                r"[^\x00]{2}",
                r"(?i)^a",
            ];
            let re = patterns[pick];
            let exact = crate::embedded::compile_row_regex(re).unwrap().is_match(&row);
            prop_assert_eq!(server_match(re, &row), exact, "{} on {:02x?} via {:?}", re, row, re2_row_filter(re));
        }
    }
}
