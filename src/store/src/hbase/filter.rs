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

/// `QualifierFilter(=, 'binaryprefix:<p>')` for each prefix, ORed: a cell passes when its
/// qualifier starts with one of them. HBase's filter language takes the bytes between the
/// quotes as they are (a `'` doubled), so any prefix can be said exactly.
pub fn qualifier_filter(prefixes: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, p) in prefixes.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(b" OR ");
        }
        out.extend_from_slice(b"QualifierFilter(=, 'binaryprefix:");
        for &b in p {
            out.push(b);
            if b == b'\'' {
                out.push(b'\'');
            }
        }
        out.extend_from_slice(b"')");
    }
    out
}

/// The filter string of a scan: its row filter and its qualifier filter, ANDed (each in
/// parentheses: in HBase's filter language AND binds tighter than OR).
pub fn scan_filter(row: Option<String>, prefixes: &[Vec<u8>]) -> Option<Vec<u8>> {
    let quals = (!prefixes.is_empty()).then(|| qualifier_filter(prefixes));
    match (row.map(String::into_bytes), quals) {
        (None, None) => None,
        (Some(r), None) => Some(r),
        (None, Some(q)) => Some(q),
        (Some(r), Some(q)) => Some([b"(".as_slice(), &r, b") AND (", &q, b")"].concat()),
    }
}

/// What the test double understands of a filter string: exactly the shapes `scan_filter`
/// makes (a row regex, qualifier prefixes, or both).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ParsedFilter {
    pub row_regex: Option<String>,
    /// Empty: every qualifier.
    pub qualifier_prefixes: Vec<Vec<u8>>,
}

/// A filter string the test double does not understand.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unsupported filter string (the test double knows RowFilter(=, 'regexstring:…') AND QualifierFilter(=, 'binaryprefix:…') OR …): {0}")]
pub struct UnsupportedFilter(pub String);

/// A filter expression of HBase's filter language, as far as the double needs it.
#[derive(Debug)]
enum Expr {
    Row(String),
    QualifierPrefix(Vec<u8>),
    And(Vec<Expr>),
    Or(Vec<Expr>),
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn skip_spaces(&mut self) {
        while self.s.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn eat(&mut self, token: &[u8]) -> bool {
        self.skip_spaces();
        if self.s[self.at..].starts_with(token) {
            self.at += token.len();
            return true;
        }
        false
    }

    /// `or := and (OR and)*` (AND binds tighter).
    fn or(&mut self) -> Option<Expr> {
        let mut terms = vec![self.and()?];
        while self.eat(b"OR ") {
            terms.push(self.and()?);
        }
        Some(if terms.len() == 1 {
            terms.pop()?
        } else {
            Expr::Or(terms)
        })
    }

    fn and(&mut self) -> Option<Expr> {
        let mut terms = vec![self.primary()?];
        while self.eat(b"AND ") {
            terms.push(self.primary()?);
        }
        Some(if terms.len() == 1 {
            terms.pop()?
        } else {
            Expr::And(terms)
        })
    }

    fn primary(&mut self) -> Option<Expr> {
        if self.eat(b"(") {
            let e = self.or()?;
            return self.eat(b")").then_some(e);
        }
        let row = if self.eat(b"RowFilter") {
            true
        } else if self.eat(b"QualifierFilter") {
            false
        } else {
            return None;
        };
        if !(self.eat(b"(") && self.eat(b"=") && self.eat(b",")) {
            return None;
        }
        let arg = self.quoted()?;
        if !self.eat(b")") {
            return None;
        }
        if row {
            let re = arg.strip_prefix(b"regexstring:")?;
            Some(Expr::Row(String::from_utf8(re.to_vec()).ok()?))
        } else {
            Some(Expr::QualifierPrefix(
                arg.strip_prefix(b"binaryprefix:")?.to_vec(),
            ))
        }
    }

    /// A quoted argument, `''` standing for one `'`.
    fn quoted(&mut self) -> Option<Vec<u8>> {
        if !self.eat(b"'") {
            return None;
        }
        let mut out = Vec::new();
        loop {
            let b = *self.s.get(self.at)?;
            self.at += 1;
            if b != b'\'' {
                out.push(b);
            } else if self.s.get(self.at) == Some(&b'\'') {
                out.push(b);
                self.at += 1;
            } else {
                return Some(out);
            }
        }
    }
}

/// Parses a filter string of a shape `scan_filter` produces (spaces as HBase's parser allows).
pub fn parse_filter(s: &[u8]) -> Result<ParsedFilter, UnsupportedFilter> {
    let bad = || UnsupportedFilter(String::from_utf8_lossy(s).into_owned());
    let mut p = Parser { s, at: 0 };
    let e = p.or().ok_or_else(bad)?;
    p.skip_spaces();
    if p.at != s.len() {
        return Err(bad());
    }
    let prefixes = |e: &Expr| -> Option<Vec<Vec<u8>>> {
        match e {
            Expr::QualifierPrefix(q) => Some(vec![q.clone()]),
            Expr::Or(terms) => terms
                .iter()
                .map(|t| match t {
                    Expr::QualifierPrefix(q) => Some(q.clone()),
                    _ => None,
                })
                .collect(),
            _ => None,
        }
    };
    let mut out = ParsedFilter::default();
    let terms = match e {
        Expr::And(terms) => terms,
        e => vec![e],
    };
    for t in &terms {
        match t {
            Expr::Row(re) if out.row_regex.is_none() => out.row_regex = Some(re.clone()),
            t if out.qualifier_prefixes.is_empty() => {
                out.qualifier_prefixes = prefixes(t).ok_or_else(bad)?
            }
            _ => return Err(bad()),
        }
    }
    Ok(out)
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
        let back = parse_filter(row_filter(&j).as_bytes()).unwrap();
        JavaRowRegex::compile(&back.row_regex.unwrap())
            .unwrap()
            .matches(row)
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
            parse_filter(b"RowFilter (=, 'regexstring:a''b')").unwrap(),
            ParsedFilter {
                row_regex: Some("a'b".into()),
                qualifier_prefixes: vec![]
            }
        );
        assert!(parse_filter(b"RowFilter(=, 'regexstring:a'b')").is_err());
        assert!(parse_filter(b"PrefixFilter('a')").is_err());
        assert!(parse_filter(b"RowFilter(!=, 'regexstring:a')").is_err());
    }

    #[test]
    fn qualifier_prefixes_go_as_bytes_and_come_back() {
        let prefixes = vec![vec![0u8], vec![b'\'', 0xFF, b')'], b"sum:".to_vec()];
        let q = qualifier_filter(&prefixes);
        assert_eq!(
            q,
            b"QualifierFilter(=, 'binaryprefix:\x00') OR QualifierFilter(=, 'binaryprefix:''\xFF)') OR QualifierFilter(=, 'binaryprefix:sum:')"
        );
        let both = scan_filter(Some(row_filter("^a")), &prefixes).unwrap();
        assert_eq!(
            parse_filter(&both).unwrap(),
            ParsedFilter {
                row_regex: Some("^a".into()),
                qualifier_prefixes: prefixes.clone()
            }
        );
        assert_eq!(parse_filter(&q).unwrap().qualifier_prefixes, prefixes);
        assert_eq!(scan_filter(None, &[]), None);
        // A row filter ORed with a qualifier filter is not a shape tsgate sends.
        assert!(parse_filter(
            b"RowFilter(=, 'regexstring:a') OR QualifierFilter(=, 'binaryprefix:b')"
        )
        .is_err());
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
