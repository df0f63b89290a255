//! Carbon's plaintext protocol: `path value timestamp`, one per line.
//!
//! Rules (carbon 1.1's receiver, see the spec §1.2): the line is trimmed and split on any run of
//! whitespace into exactly three fields; value and timestamp use Python's float grammar; a NaN
//! value is dropped silently; a timestamp whose integer part is `-1` means "now"; fractional
//! seconds are truncated. Unlike carbon, a timestamp that looks like milliseconds (13 digits) is
//! read as milliseconds, and timestamps OpenTSDB's schema cannot hold are rejected.

use crate::pyfloat;

/// Longest line in bytes (without its `\n`); carbon's `LineOnlyReceiver.MAX_LENGTH`.
pub const MAX_LINE: usize = 16 * 1024;

/// Seconds at and above this are taken as milliseconds (1e11 s is the year 5138; 1e11 ms is 1973).
pub const MS_THRESHOLD: f64 = 1e11;
/// Largest millisecond timestamp OpenTSDB's 4-byte base time allows (2^32 s).
pub const MAX_TS_MS: u64 = (u32::MAX as u64) * 1000 + 999;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LineError {
    #[error("expected 3 fields (path value timestamp), got {0}")]
    Fields(usize),
    #[error("invalid value {0:?}")]
    Value(String),
    #[error("invalid timestamp {0:?}")]
    Timestamp(String),
    #[error("timestamp {0} is outside what can be stored (0 .. 2^32 s)")]
    TimestampRange(String),
    #[error("line longer than {MAX_LINE} bytes")]
    TooLong,
    #[error("line is not valid UTF-8")]
    Utf8,
}

/// One accepted point; `path` borrows from the line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point<'a> {
    pub path: &'a str,
    pub value: f64,
    /// Milliseconds since the epoch (whole seconds unless the sender sent milliseconds).
    pub ts_ms: u64,
}

/// Whitespace as Python's `str.split()` sees it: Unicode whitespace plus the ASCII
/// separators U+001C..U+001F.
pub fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Resolves a carbon timestamp to milliseconds: `-1` (integer part) = `now_ms`; seconds
/// truncated to whole seconds; values ≥ [`MS_THRESHOLD`] taken as milliseconds.
pub fn timestamp_ms(ts: f64, now_ms: u64) -> Result<u64, LineError> {
    if !ts.is_finite() {
        return Err(LineError::TimestampRange(ts.to_string()));
    }
    if ts.trunc() == -1.0 {
        return Ok(now_ms);
    }
    if ts < 0.0 {
        return Err(LineError::TimestampRange(ts.to_string()));
    }
    let ms = if ts >= MS_THRESHOLD {
        ts.trunc()
    } else {
        ts.trunc() * 1000.0
    };
    if ms > MAX_TS_MS as f64 {
        return Err(LineError::TimestampRange(ts.to_string()));
    }
    Ok(ms as u64)
}

/// [`is_py_space`] for an ASCII byte.
#[inline]
const fn is_ascii_py_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n' | 0x0b | 0x0c | 0x1c..=0x1f)
}

/// Exactly three whitespace-separated fields, without allocating.
fn fields(line: &str) -> Result<[&str; 3], LineError> {
    if line.is_ascii() {
        return ascii_fields(line);
    }
    let mut out = [""; 3];
    let mut n = 0;
    for f in line.split(is_py_space).filter(|s| !s.is_empty()) {
        if n < 3 {
            out[n] = f;
        }
        n += 1;
    }
    if n == 3 {
        Ok(out)
    } else {
        Err(LineError::Fields(n))
    }
}

/// The ASCII bytes [`is_py_space`] takes, by byte value.
const ASCII_SPACE: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 128 {
        t[c] = is_ascii_py_space(c as u8);
        c += 1;
    }
    t
};

/// [`fields`] of an ASCII line (nearly every line), without decoding chars or consulting the
/// Unicode whitespace table (through a function pointer, that was a tenth of Graphite ingest).
/// A field's bytes are skipped eight at a time while none of them is at or below a space:
/// every separator is (`\t`..`\r`, U+001C..U+001F, space).
fn ascii_fields(line: &str) -> Result<[&str; 3], LineError> {
    const LOW: u64 = 0x2121_2121_2121_2121; // 0x21 in every byte
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let b = line.as_bytes();
    let mut out = [""; 3];
    let (mut n, mut i) = (0, 0);
    loop {
        while i < b.len() && ASCII_SPACE[b[i] as usize] {
            i += 1;
        }
        if i == b.len() {
            break;
        }
        let start = i;
        // Some byte of the word is below 0x21 exactly when this is non-zero (ASCII bytes).
        while let Some(w) = b.get(i..i + 8) {
            let w = u64::from_le_bytes(w.try_into().expect("eight bytes"));
            if w.wrapping_sub(LOW) & !w & HIGH != 0 {
                break;
            }
            i += 8;
        }
        while i < b.len() && !ASCII_SPACE[b[i] as usize] {
            i += 1;
        }
        if n < 3 {
            out[n] = &line[start..i];
        }
        n += 1;
    }
    if n == 3 {
        Ok(out)
    } else {
        Err(LineError::Fields(n))
    }
}

/// Parses one line (without `\n`; a trailing `\r` is whitespace). `Ok(None)` is a NaN value,
/// which carbon drops without complaint.
pub fn parse_line(line: &str, now_ms: u64) -> Result<Option<Point<'_>>, LineError> {
    if line.len() > MAX_LINE {
        return Err(LineError::TooLong);
    }
    point(fields(line)?, now_ms)
}

/// [`parse_line`] for a line already known to be ASCII (its chunk was checked at once): the
/// line is not scanned for other characters again.
pub fn parse_ascii_line(line: &str, now_ms: u64) -> Result<Option<Point<'_>>, LineError> {
    debug_assert!(line.is_ascii());
    if line.len() > MAX_LINE {
        return Err(LineError::TooLong);
    }
    point(ascii_fields(line)?, now_ms)
}

fn point([path, v, t]: [&str; 3], now_ms: u64) -> Result<Option<Point<'_>>, LineError> {
    let value = pyfloat::parse(v).ok_or_else(|| LineError::Value(v.into()))?;
    let ts = pyfloat::parse(t).ok_or_else(|| LineError::Timestamp(t.into()))?;
    if value.is_nan() {
        return Ok(None);
    }
    let ts_ms = timestamp_ms(ts, now_ms)?;
    Ok(Some(Point { path, value, ts_ms }))
}

/// Splits a UDP datagram into lines as Python's `splitlines()` does for the separators that
/// matter (`\n`, `\r\n`, `\r`); the last line needs no terminator.
pub fn datagram_lines(d: &[u8]) -> impl Iterator<Item = &[u8]> {
    d.split(|&b| b == b'\n' || b == b'\r')
        .filter(|l| !l.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_795_000_000_000;

    fn ok(line: &str) -> Point<'_> {
        parse_line(line, NOW).unwrap().unwrap()
    }

    #[test]
    fn carbon_acceptance_table() {
        assert_eq!(
            ok("t.basic 1.5 1795000000"),
            Point {
                path: "t.basic",
                value: 1.5,
                ts_ms: 1_795_000_000_000
            }
        );
        assert_eq!(ok("t.crlf 2 1795000000\r").value, 2.0);
        assert_eq!(ok("t.tabs\t3\t1795000000").value, 3.0);
        assert_eq!(ok("  t.multispace   4   1795000000  ").path, "t.multispace");
        assert_eq!(ok("t.floatts 5 1795000000.75").ts_ms, 1_795_000_000_000);
        assert_eq!(ok("t.minus1 6 -1").ts_ms, NOW);
        assert_eq!(ok("t.minus1 6 -1.5").ts_ms, NOW);
        assert!(parse_line("t.N 7 N", NOW).is_err());
        assert!(parse_line("t.negts 8 -5", NOW).is_err());
        assert_eq!(ok("t.msts 11 1795000000123").ts_ms, 1_795_000_000_123);
        assert_eq!(parse_line("t.nan nan 1795000000", NOW), Ok(None));
        assert_eq!(parse_line("t.nan NaN 1795000000", NOW), Ok(None));
        assert_eq!(ok("t.inf inf 1795000000").value, f64::INFINITY);
        assert_eq!(ok("t.sci 1e3 1795000000.0e0").value, 1000.0);
        assert_eq!(ok("t.underscore 1_000 1795000000").value, 1000.0);
        assert_eq!(ok("t.plus +7 +1795000000").value, 7.0);
        assert!(matches!(
            parse_line("t.hexval 0x10 1795000000", NOW),
            Err(LineError::Value(_))
        ));
        assert!(matches!(
            parse_line("t.comma 1,5 1795000000", NOW),
            Err(LineError::Value(_))
        ));
        assert_eq!(
            parse_line("t.extra 1 1795000000 extra", NOW),
            Err(LineError::Fields(4))
        );
        assert_eq!(parse_line("t.two 1", NOW), Err(LineError::Fields(2)));
        assert_eq!(parse_line("", NOW), Err(LineError::Fields(0)));
        assert_eq!(ok("t.utf8.é 12 1795000000").path, "t.utf8.é");
        assert_eq!(ok("t.tagged;b=2;a=1 9 1795000000").path, "t.tagged;b=2;a=1");
        assert_eq!(ok("t.nbsp\u{a0}1\u{a0}1795000000").value, 1.0);
    }

    proptest::proptest! {
        /// The fields are what Python's `str.split()` gives (split on whitespace, empty
        /// pieces dropped), ASCII or not, for lines made of words and every separator kind.
        #[test]
        fn fields_are_python_split(parts in proptest::collection::vec(proptest::sample::select(vec![
            "a", "t.basic", "1.5", "-1", "é", "\u{2003}", " ", "\t", "\r", "\n", "\x0b", "\x0c", "\x1c", "\x1f", "\u{a0}", "\x1b",
            "dc0.host_0.cpu.usage_user", "1699999200", "0123456\x1b89abcdef", "~~~~~~~~~~~~~~~~~",
        ]), 0..12)) {
            let line: String = parts.concat();
            let want: Vec<&str> = line.split(is_py_space).filter(|s| !s.is_empty()).collect();
            match fields(&line) {
                Ok(f) => proptest::prop_assert_eq!(f.to_vec(), want),
                Err(LineError::Fields(n)) => {
                    proptest::prop_assert_ne!(want.len(), 3);
                    proptest::prop_assert_eq!(n, want.len());
                }
                Err(e) => proptest::prop_assert!(false, "{e:?}"),
            }
        }
    }

    #[test]
    fn line_cap() {
        let name = "a".repeat(MAX_LINE - 12);
        let line = format!("{name} 1 1795000000");
        assert_eq!(line.len(), MAX_LINE + 1);
        assert_eq!(parse_line(&line, NOW), Err(LineError::TooLong));
        assert!(parse_line(&line[1..], NOW).is_ok());
    }

    #[test]
    fn datagrams() {
        let d = b"a 1 -1\r\nb 2 -1\rc 3 -1\nd 4 -1";
        let lines: Vec<&[u8]> = datagram_lines(d).collect();
        assert_eq!(lines, vec![&b"a 1 -1"[..], b"b 2 -1", b"c 3 -1", b"d 4 -1"]);
    }
}
