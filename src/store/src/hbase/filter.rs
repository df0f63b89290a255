//! The row-key regex as an HBase filter string.
//!
//! tsgate's row regexes match raw row-key bytes (`\xHH` escapes, `.` = any byte). HBase's filter
//! language builds `RowFilter(=, 'regexstring:…')` with a `RegexStringComparator` whose charset
//! is UTF-8 (the filter language cannot set ISO-8859-1 the way asynchbase does): the row key is
//! decoded as UTF-8, malformed bytes becoming U+FFFD, and matched with `java.util.regex` (DOTALL).
//! No Java regex can then see every byte, so what is sent is a *superset*: ASCII bytes decode to
//! themselves, one character each, and are matched exactly; a byte ≥ 0x80 belongs to a run of
//! such bytes that decodes to at most as many non-ASCII characters, so each atom that may match
//! one becomes "a non-ASCII character, or nothing". The server then never drops a row the byte
//! regex accepts, and the client re-applies the exact byte regex to what comes back.

use crate::regex_emit::{self, hex_escape, Dialect};

/// The Java regex sent to HBase for a byte regex, or `None` when none can be built safely (the
/// scan then filters on the client only).
pub fn java_superset(byte_regex: &str) -> Option<String> {
    let hir = regex_emit::parse(byte_regex)?;
    let mut out = String::new();
    regex_emit::emit(&JavaSuperset, &hir, &mut out)?;
    Some(out)
}

const NON_ASCII: &str = r"[^\x00-\x7F]";

/// Java regex over the key decoded as UTF-8: exact over ASCII, widened over the rest.
struct JavaSuperset;

impl Dialect for JavaSuperset {
    fn byte(&self, b: u8, out: &mut String) {
        if b < 0x80 {
            hex_escape(b, out);
        } else {
            out.push_str(&format!("{NON_ASCII}?"));
        }
    }

    /// One byte-class: exact over its ASCII members, widened over the rest.
    fn class(&self, ranges: &[(u8, u8)], out: &mut String) -> Option<()> {
        let mut ascii = String::new();
        let mut high = false;
        for &(lo, hi) in ranges {
            if lo <= 0x7F {
                let top = hi.min(0x7F);
                ascii.push_str(&format!(r"\x{lo:02X}"));
                if top > lo {
                    ascii.push_str(&format!(r"-\x{top:02X}"));
                }
            }
            high |= hi >= 0x80;
        }
        match (ascii.is_empty(), high) {
            (true, false) => return None, // matches nothing: leave the filtering to the client
            (false, false) => out.push_str(&format!("[{ascii}]")),
            (true, true) => out.push_str(&format!("{NON_ASCII}?")),
            (false, true) => out.push_str(&format!("(?:[{ascii}]|{NON_ASCII})?")),
        }
        Some(())
    }
}

/// `RowFilter(=, 'regexstring:<re>')`, quoting `'` by doubling it as HBase's filter language wants.
pub fn row_filter(java_regex: &str) -> String {
    format!(
        "RowFilter(=, 'regexstring:{}')",
        java_regex.replace('\'', "''")
    )
}

/// The filters the test double understands: exactly what `row_filter` makes.
#[derive(Debug, PartialEq, Eq)]
pub enum ParsedFilter {
    RowRegex(String),
}

/// A filter string the test double does not understand.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unsupported filter string (the test double knows RowFilter(=, 'regexstring:…')): {0}")]
pub struct UnsupportedFilter(pub String);

/// Parses a filter string of the form `row_filter` produces (spaces as HBase's parser allows).
pub fn parse_filter(s: &str) -> Result<ParsedFilter, UnsupportedFilter> {
    let bad = || UnsupportedFilter(s.to_string());
    let rest = s
        .trim()
        .strip_prefix("RowFilter")
        .ok_or_else(bad)?
        .trim_start();
    let rest = rest.strip_prefix('(').ok_or_else(bad)?.trim_start();
    let rest = rest.strip_prefix('=').ok_or_else(bad)?.trim_start();
    let rest = rest.strip_prefix(',').ok_or_else(bad)?.trim_start();
    let rest = rest.strip_suffix(')').ok_or_else(bad)?.trim_end();
    let quoted = rest
        .strip_prefix('\'')
        .and_then(|r| r.strip_suffix('\''))
        .ok_or_else(bad)?;
    // Inside the quotes a lone ' would have ended the string: only doubled ones may appear.
    if quoted.replace("''", "").contains('\'') {
        return Err(bad());
    }
    let comparator = quoted.replace("''", "'");
    let re = comparator.strip_prefix("regexstring:").ok_or_else(bad)?;
    Ok(ParsedFilter::RowRegex(re.to_string()))
}

/// How HBase evaluates the comparator: the row decoded as UTF-8 (malformed bytes → U+FFFD),
/// searched (not anchored) with DOTALL.
pub struct JavaRowRegex(regex::Regex);

impl JavaRowRegex {
    pub fn compile(java_regex: &str) -> Result<JavaRowRegex, regex::Error> {
        regex::Regex::new(&format!("(?s){java_regex}")).map(JavaRowRegex)
    }

    pub fn matches(&self, row: &[u8]) -> bool {
        self.0.is_match(&String::from_utf8_lossy(row))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn byte_match(re: &str, row: &[u8]) -> bool {
        crate::embedded::compile_row_regex(re)
            .unwrap()
            .is_match(row)
    }

    fn server_match(re: &str, row: &[u8]) -> bool {
        let j = java_superset(re).unwrap();
        let ParsedFilter::RowRegex(back) = parse_filter(&row_filter(&j)).unwrap();
        JavaRowRegex::compile(&back).unwrap().matches(row)
    }

    #[test]
    fn ascii_patterns_are_exact() {
        let re = r"^\x00\x00\x01.{4}(?:.{6})*\x00\x00\x02\x00\x00\x05";
        let j = java_superset(re).unwrap();
        assert!(j.starts_with(r"\A\x00\x00\x01"), "{j}");
        let hit = [0, 0, 1, 1, 2, 3, 4, 0, 0, 2, 0, 0, 5];
        let miss = [0, 0, 1, 1, 2, 3, 4, 0, 0, 2, 0, 0, 6];
        assert!(server_match(re, &hit));
        assert!(!server_match(re, &miss));
        assert!(!server_match(r"^ab$", b"abc"));
        assert!(server_match(r"^a.*$", b"a\x00b"));
    }

    #[test]
    fn quotes_are_doubled_and_parsed_back() {
        assert_eq!(row_filter("a'b"), "RowFilter(=, 'regexstring:a''b')");
        assert_eq!(
            parse_filter("RowFilter (=, 'regexstring:a''b')").unwrap(),
            ParsedFilter::RowRegex("a'b".into())
        );
        assert!(parse_filter("RowFilter(=, 'regexstring:a'b')").is_err());
        assert!(parse_filter("PrefixFilter('a')").is_err());
        assert!(parse_filter("RowFilter(!=, 'regexstring:a')").is_err());
    }

    #[test]
    fn high_bytes_are_never_filtered_out() {
        let re = r"^\xFF\x01$";
        assert!(server_match(re, &[0xff, 1]));
        assert!(
            server_match(r"^\xC3\xA9x", &[0xc3, 0xa9, b'x']),
            "a valid UTF-8 pair decodes to one char"
        );
    }

    proptest! {
        /// The filter sent to HBase accepts every row the byte regex accepts (it may accept
        /// more: the client re-checks).
        #[test]
        fn server_filter_is_a_superset(row in proptest::collection::vec(prop_oneof![0u8..4, 0x41u8..0x44, 0x80u8..0x84, 0xC2u8..0xC4, 0xE2u8..0xE3, 0xF0u8..0xF1, 0xFEu8..=0xFF], 0..10),
                                       pick in 0usize..8) {
            let patterns = [
                r"^.{2}\x00",
                r"^(?:.{2})*\x01\x41$",
                r"\xC2\x80|\xE2",
                r"^[\x00-\x02\x80-\xFF]+$",
                r"A.?B",
                r"^.{3}(?:\x00\x00|\xFF\xFE).*$",
                r"[^\x00]{2}",
                r"(?i)^a",
            ];
            let re = patterns[pick];
            if byte_match(re, &row) {
                prop_assert!(server_match(re, &row), "{re} on {row:02x?} via {:?}", java_superset(re));
            }
        }
    }
}
