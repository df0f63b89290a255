//! Python's `float(str)` grammar, which carbon applies to values and timestamps: optional
//! sign, decimal digits with `_` allowed between digits, optional fraction and exponent, or
//! `inf`/`infinity`/`nan` in any case. Hex and commas are rejected.

fn digits_ok(s: &str) -> bool {
    // Non-empty run of digits where every `_` sits between two digits.
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter().enumerate().all(|(i, &c)| c.is_ascii_digit() || (c == b'_' && i > 0 && i + 1 < b.len() && b[i - 1].is_ascii_digit() && b[i + 1].is_ascii_digit()))
}

/// Parses like Python's `float()` on an already whitespace-trimmed string.
pub fn parse(s: &str) -> Option<f64> {
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
    use super::parse;

    #[test]
    fn python_float_grammar() {
        for (s, v) in [("1.5", 1.5), ("+7", 7.0), ("-3", -3.0), ("1e3", 1000.0), ("1_000", 1000.0), ("5.", 5.0), (".5", 0.5), ("1E+2", 100.0), ("1_0.2_5", 10.25)] {
            assert_eq!(parse(s), Some(v), "{s}");
        }
        assert_eq!(parse("inf"), Some(f64::INFINITY));
        assert_eq!(parse("-Infinity"), Some(f64::NEG_INFINITY));
        assert!(parse("NaN").unwrap().is_nan());
        for s in ["", "0x10", "1,5", "N", "_1", "1_", "1__0", ".", "e5", "1e", "--1", "1.2.3", "infinit", "1 2"] {
            assert_eq!(parse(s), None, "{s}");
        }
    }
}
