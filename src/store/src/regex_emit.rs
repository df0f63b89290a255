//! One walk over a parsed row-key regex, shared by the remote stores that filter on the server.
//!
//! tsgate's row regexes match raw key bytes (Rust `regex::bytes` syntax, `\xHH` escapes, `.` =
//! any byte). HBase reads Java regexes over the key decoded as UTF-8, Bigtable reads RE2 over
//! the raw bytes: each store says how a byte, a class and a counted repetition are written in
//! its dialect, and this module does the rest of the syntax tree the same way for both.

use regex_syntax::hir::{Class, Hir, HirKind, Look};

/// How one server's regex dialect writes what the walk meets.
pub(crate) trait Dialect {
    /// One literal byte.
    fn byte(&self, b: u8, out: &mut String);
    /// A class of inclusive byte ranges; `None` when nothing useful can be written (the scan
    /// then filters on the client only).
    fn class(&self, ranges: &[(u8, u8)], out: &mut String) -> Option<()>;
    /// The largest counted repetition the server accepts.
    fn max_repeat(&self) -> u32 {
        u32::MAX
    }
}

/// The syntax tree of a byte regex as tsgate compiles it (bytes, `.` takes `\n`).
pub(crate) fn parse(byte_regex: &str) -> Option<Hir> {
    regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .dot_matches_new_line(true)
        .build()
        .parse(byte_regex)
        .ok()
}

/// `\xHH` for every byte but ASCII letters and digits, which both dialects read as themselves.
pub(crate) fn hex_escape(b: u8, out: &mut String) {
    if b.is_ascii_alphanumeric() {
        out.push(b as char);
    } else {
        out.push_str(&format!(r"\x{b:02X}"));
    }
}

/// Writes `hir` in dialect `d`. Line and word assertions are dropped: an assertion less only
/// widens the match, and the client re-checks every row with the exact regex.
pub(crate) fn emit(d: &impl Dialect, hir: &Hir, out: &mut String) -> Option<()> {
    match hir.kind() {
        HirKind::Empty => {}
        HirKind::Literal(lit) => {
            for &b in lit.0.iter() {
                d.byte(b, out);
            }
        }
        HirKind::Class(Class::Bytes(c)) => {
            let ranges: Vec<(u8, u8)> = c.ranges().iter().map(|r| (r.start(), r.end())).collect();
            d.class(&ranges, out)?;
        }
        HirKind::Class(Class::Unicode(c)) => {
            // With Unicode off only ASCII classes are Unicode ones; clip anything wider to bytes.
            let ranges: Vec<(u8, u8)> = c
                .ranges()
                .iter()
                .filter(|r| (r.start() as u32) < 256)
                .map(|r| (r.start() as u8, (r.end() as u32).min(255) as u8))
                .collect();
            d.class(&ranges, out)?;
        }
        HirKind::Look(look) => match look {
            Look::Start => out.push_str(r"\A"),
            Look::End => out.push_str(r"\z"),
            _ => {}
        },
        HirKind::Repetition(rep) => {
            let cap = d.max_repeat();
            if rep.min > cap || rep.max.is_some_and(|m| m > cap) {
                return None;
            }
            out.push_str("(?:");
            emit(d, &rep.sub, out)?;
            out.push(')');
            match (rep.min, rep.max) {
                (0, None) => out.push('*'),
                (1, None) => out.push('+'),
                (0, Some(1)) => out.push('?'),
                (m, None) => out.push_str(&format!("{{{m},}}")),
                (m, Some(n)) if m == n => out.push_str(&format!("{{{m}}}")),
                (m, Some(n)) => out.push_str(&format!("{{{m},{n}}}")),
            }
        }
        HirKind::Capture(cap) => {
            out.push_str("(?:");
            emit(d, &cap.sub, out)?;
            out.push(')');
        }
        HirKind::Concat(parts) => {
            for p in parts {
                emit(d, p, out)?;
            }
        }
        HirKind::Alternation(parts) => {
            out.push_str("(?:");
            for (i, p) in parts.iter().enumerate() {
                if i > 0 {
                    out.push('|');
                }
                emit(d, p, out)?;
            }
            out.push(')');
        }
    }
    Some(())
}
