//! Python's `float(str)` grammar, which carbon applies to values and timestamps: optional
//! sign, decimal digits with `_` allowed between digits, optional fraction and exponent, or
//! `inf`/`infinity`/`nan` in any case. Hex and commas are rejected.

fn digits_ok(s: &str) -> bool {
    // Non-empty run of digits where every `_` sits between two digits.
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter().enumerate().all(|(i, &c)| {
            c.is_ascii_digit()
                || (c == b'_'
                    && i > 0
                    && i + 1 < b.len()
                    && b[i - 1].is_ascii_digit()
                    && b[i + 1].is_ascii_digit())
        })
}

/// Powers of ten an f64 holds exactly, up to what [`plain_decimal`] divides by.
const POW10: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// A plain decimal (`62.04`, `1699999200`, `-3`, `5.`): sign, at most 15 digits and one point.
/// Its digits are an integer and its scale a power of ten that an f64 both hold exactly, so
/// one division rounds it correctly (Clinger's fast path) without the general parser, which
/// was a tenth of Graphite ingest. `None` for anything else.
#[inline]
fn plain_decimal(s: &[u8]) -> Option<f64> {
    let (neg, b) = match s.first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if b.len() > 16 {
        return None;
    }
    let (mut m, mut digits, mut point) = (0u64, 0usize, None);
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'0'..=b'9' => {
                m = m * 10 + u64::from(c - b'0');
                digits += 1;
            }
            b'.' if point.is_none() => point = Some(i),
            _ => return None,
        }
    }
    if digits == 0 || digits > 15 {
        return None;
    }
    let v = m as f64 / POW10[point.map_or(0, |p| b.len() - p - 1)];
    Some(if neg { -v } else { v })
}

/// Parses like Python's `float()` on an already whitespace-trimmed string.
pub fn parse(s: &str) -> Option<f64> {
    if let Some(v) = plain_decimal(s.as_bytes()) {
        return Some(v);
    }
    // Rust's grammar is a subset of Python's (no `_` separators), so what it takes is right.
    if let Ok(v) = s.parse::<f64>() {
        return Some(v);
    }
    if !s.contains('_') {
        return None;
    }
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let neg = s.starts_with('-');
    let special = match body.to_ascii_lowercase().as_str() {
        "inf" | "infinity" => Some(f64::INFINITY),
        "nan" => Some(f64::NAN),
        _ => None,
    };
    if let Some(v) = special {
        return Some(if neg { -v } else { v });
    }
    let (mantissa, exp) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let (int, frac) = match mantissa.split_once('.') {
        Some((a, b)) => (a, Some(b)),
        None => (mantissa, None),
    };
    let int_ok = int.is_empty() || digits_ok(int);
    let frac_ok = match frac {
        None => !int.is_empty(),
        Some(f) => (f.is_empty() && !int.is_empty()) || digits_ok(f),
    };
    let exp_ok = match exp {
        None => true,
        Some(e) => digits_ok(e.strip_prefix(['+', '-']).unwrap_or(e)),
    };
    if !(int_ok && frac_ok && exp_ok) {
        return None;
    }
    if s.contains('_') {
        s.replace('_', "").parse().ok()
    } else {
        s.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::{parse, plain_decimal};

    proptest::proptest! {
        /// A plain decimal is read as Rust's correctly rounding parser reads it, to the bit
        /// (signed zeros included), at every length and position of the point.
        #[test]
        fn plain_decimals_round_correctly(sign in proptest::sample::select(vec!["", "-", "+"]), digits in "[0-9]{0,17}", point in proptest::option::of(0usize..18)) {
            let mut body = digits.clone();
            if let Some(p) = point {
                body.insert(p.min(body.len()), '.');
            }
            let s = format!("{sign}{body}");
            if let Some(v) = plain_decimal(s.as_bytes()) {
                proptest::prop_assert_eq!(Some(v.to_bits()), s.parse::<f64>().ok().map(f64::to_bits), "{}", s);
            } else {
                // Left to the general parser: too many digits, or not a number at all.
                proptest::prop_assert!(digits.len() > 15 || digits.is_empty(), "{}", s);
            }
            proptest::prop_assert_eq!(parse(&s).map(f64::to_bits), s.parse::<f64>().ok().map(f64::to_bits));
        }
    }

    #[test]
    fn python_float_grammar() {
        for (s, v) in [
            ("1.5", 1.5),
            ("+7", 7.0),
            ("-3", -3.0),
            ("1e3", 1000.0),
            ("1_000", 1000.0),
            ("5.", 5.0),
            (".5", 0.5),
            ("1E+2", 100.0),
            ("1_0.2_5", 10.25),
        ] {
            assert_eq!(parse(s), Some(v), "{s}");
        }
        assert_eq!(parse("inf"), Some(f64::INFINITY));
        assert_eq!(parse("-Infinity"), Some(f64::NEG_INFINITY));
        assert!(parse("NaN").unwrap().is_nan());
        for s in [
            "", "0x10", "1,5", "N", "_1", "1_", "1__0", ".", "e5", "1e", "--1", "1.2.3", "infinit",
            "1 2",
        ] {
            assert_eq!(parse(s), None, "{s}");
        }
    }
}
