//! Textual data point values, classified the way OpenTSDB 2.4 does it (spec §2.4).
//!
//! * no `.`, `e` or `E` in the text → integer, parsed by OpenTSDB's own strict `parseLong`;
//! * otherwise → Java `Double.parseDouble`; stored as a 4-byte float when the double converts to
//!   `float` and back unchanged, else as an 8-byte double.

/// A classified data point value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    Int(i64),
    F32(f32),
    F64(f64),
}

impl Value {
    pub fn as_f64(&self) -> f64 {
        match *self {
            Value::Int(v) => v as f64,
            Value::F32(v) => v as f64,
            Value::F64(v) => v,
        }
    }

    pub fn is_finite(&self) -> bool {
        match *self {
            Value::Int(_) => true,
            Value::F32(v) => v.is_finite(),
            Value::F64(v) => v.is_finite(),
        }
    }

    /// The value rendered like Java's `Float.toString`/`Double.toString` for the cases OpenTSDB
    /// prints it in error messages (non-finite values); finite values use Rust's formatting.
    pub(crate) fn java_special_string(&self) -> String {
        let d = self.as_f64();
        if d.is_nan() {
            "NaN".to_string()
        } else if d == f64::INFINITY {
            "Infinity".to_string()
        } else if d == f64::NEG_INFINITY {
            "-Infinity".to_string()
        } else {
            match *self {
                Value::Int(v) => v.to_string(),
                Value::F32(v) => v.to_string(),
                Value::F64(v) => v.to_string(),
            }
        }
    }
}

/// Why a textual value was rejected. `Display` gives just OpenTSDB's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// Java `NumberFormatException` ("invalid value" on telnet, "Unable to parse value to a
    /// number" on HTTP).
    #[error(transparent)]
    NumberFormat(#[from] NumberFormatError),
    /// Java `IllegalArgumentException` "value is NaN or Infinite: <v>". OpenTSDB appends
    /// ` for metric=<m> timestamp=<ts>` to this; the telnet/HTTP codecs do that.
    #[error("{0}")]
    NotFinite(String),
}

/// Java's `NumberFormatException` from `Tags.parseLong` or `Double.parseDouble`; `Display`
/// is Java's exact message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NumberFormatError {
    /// `parseLong("")`.
    #[error("Empty string")]
    EmptyLong,
    #[error("Just a sign, no value: {0}")]
    JustSign(String),
    #[error("Value too long: {0}")]
    TooLong(String),
    #[error("Invalid character '{c}' in {text}")]
    Character { c: char, text: String },
    #[error("Overflow in {0}")]
    Overflow(String),
    /// `parseDouble` of nothing but spaces.
    #[error("empty String")]
    EmptyDouble,
    #[error("multiple points")]
    MultiplePoints,
    /// Anything else `parseDouble` refuses (the text is the trimmed input).
    #[error("For input string: \"{0}\"")]
    Input(String),
}

/// Number of UTF-16 code units, which is what Java's `String.length()` counts.
fn java_len(s: &str) -> usize {
    if s.is_ascii() {
        s.len()
    } else {
        s.encode_utf16().count()
    }
}

/// OpenTSDB's strict `Tags.parseLong`: optional sign, ASCII digits only, at most 19 digits.
///
/// The length limits are checked before the characters, and overflow is detected the way the
/// Java code does (accumulating negatively with wrap-around), so the error messages match.
pub fn parse_long(s: &str) -> Result<i64, NumberFormatError> {
    let b = s.as_bytes();
    if b.is_empty() {
        return Err(NumberFormatError::EmptyLong);
    }
    let signed = b[0] == b'+' || b[0] == b'-';
    // Only strings longer than 19 bytes can be longer than 19 UTF-16 units.
    let n = if b.len() > 19 { java_len(s) } else { b.len() };
    if signed {
        if n == 1 {
            return Err(NumberFormatError::JustSign(s.into()));
        } else if n > 20 {
            return Err(NumberFormatError::TooLong(s.into()));
        }
    } else if n > 19 {
        return Err(NumberFormatError::TooLong(s.into()));
    }
    let mut v: i64 = 0;
    for c in s[usize::from(signed)..].chars() {
        if !c.is_ascii_digit() {
            // Java would print a lone high surrogate for a non-BMP char; we print the char.
            return Err(NumberFormatError::Character { c, text: s.into() });
        }
        v = v.wrapping_mul(10).wrapping_sub(i64::from(c as u8 - b'0'));
    }
    if v > 0 {
        Err(NumberFormatError::Overflow(s.into()))
    } else if b[0] == b'-' {
        Ok(v)
    } else if v == i64::MIN {
        Err(NumberFormatError::Overflow(s.into()))
    } else {
        Ok(-v)
    }
}

/// `Tags.looksLikeInteger`: no `.`, `e` or `E` anywhere.
pub fn looks_like_integer(s: &str) -> bool {
    !s.bytes().any(|b| b == b'.' || b == b'e' || b == b'E')
}

/// Java's `String.trim()`: strips every char <= U+0020 at both ends.
pub(crate) fn java_trim(s: &str) -> &str {
    s.trim_matches(|c: char| c <= ' ')
}

/// Java `Double.parseDouble` for decimal input.
///
/// Accepts what Java accepts for decimal strings: surrounding chars <= U+0020 trimmed, optional
/// sign, digits with an optional `.` (at least one digit overall), optional exponent, and one
/// optional trailing `f`/`F`/`d`/`D`. `NaN`/`Infinity` are handled by the caller's integer path
/// (they contain no `.`/`e`/`E`). Hex floats (`0x1.8p1`), which Java also accepts, are rejected.
pub fn parse_java_double(s: &str) -> Result<f64, NumberFormatError> {
    let t = java_trim(s);
    let err = || NumberFormatError::Input(t.into());
    if t.is_empty() {
        return Err(NumberFormatError::EmptyDouble);
    }
    let b = t.as_bytes();
    let mut i = 0;
    if b[0] == b'+' || b[0] == b'-' {
        i = 1;
    }
    if b[i..].starts_with(b"0x") || b[i..].starts_with(b"0X") {
        return Err(err());
    }
    // Java scans the mantissa as a run of digits and dots and fails on the second dot.
    let run = b[i..]
        .iter()
        .take_while(|c| c.is_ascii_digit() || **c == b'.');
    if run.filter(|&&c| c == b'.').count() > 1 {
        return Err(NumberFormatError::MultiplePoints);
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    let mut n = digits(&mut i);
    if i < b.len() && b[i] == b'.' {
        i += 1;
        n += digits(&mut i);
    }
    if n == 0 {
        return Err(err());
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return Err(err());
        }
    }
    let end = i;
    if i < b.len() && !(i == b.len() - 1 && matches!(b[i], b'f' | b'F' | b'd' | b'D')) {
        return Err(err());
    }
    if let Some(v) = short_decimal(&b[..end]) {
        return Ok(v);
    }
    // The grammar above is a subset of what Rust's parser accepts, and both round correctly.
    t[..end].parse::<f64>().map_err(|_| err())
}

/// Powers of ten an f64 holds exactly.
const EXACT_POW10: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// The value of a mantissa already checked by [`parse_java_double`] (sign, digits, at most one
/// point) when it has no exponent and at most 15 digits: then the digits as an integer and the
/// power of ten to divide by are both exact in an f64, and the one division rounds correctly
/// (Clinger's fast path). Values such as `62.04` are most of what tcollector sends; the general
/// parser was a tenth of telnet ingest. `None` for anything longer or with an exponent.
fn short_decimal(b: &[u8]) -> Option<f64> {
    let (neg, body) = match b.first()? {
        b'-' => (true, &b[1..]),
        b'+' => (false, &b[1..]),
        _ => (false, b),
    };
    if body.len() > 16 {
        return None;
    }
    let (mut m, mut digits, mut scale) = (0u64, 0u32, None);
    for &c in body {
        if c == b'.' {
            scale = Some(0usize);
        } else if c.is_ascii_digit() {
            m = m * 10 + u64::from(c - b'0');
            digits += 1;
            if let Some(k) = scale.as_mut() {
                *k += 1;
            }
        } else {
            return None; // an exponent
        }
    }
    if digits > 15 {
        return None;
    }
    let v = m as f64 / EXACT_POW10[scale.unwrap_or(0)];
    Some(if neg { -v } else { v })
}

/// Classifies and parses a textual value exactly like OpenTSDB's put paths.
pub fn parse_value(s: &str) -> Result<Value, ValueError> {
    if looks_like_integer(s) {
        return Ok(Value::Int(parse_long(s)?));
    }
    let d = parse_java_double(s)?;
    // `(float) d == d` – when it holds, Float.parseFloat yields exactly `d as f32` too.
    let v = if (d as f32) as f64 == d {
        Value::F32(d as f32)
    } else {
        Value::F64(d)
    };
    if !v.is_finite() {
        return Err(ValueError::NotFinite(format!(
            "value is NaN or Infinite: {}",
            v.java_special_string()
        )));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn nfe(s: &str) -> String {
        parse_long(s).unwrap_err().to_string()
    }

    #[test]
    fn parse_long_ok() {
        assert_eq!(parse_long("0"), Ok(0));
        assert_eq!(parse_long("-0"), Ok(0));
        assert_eq!(parse_long("+42"), Ok(42));
        assert_eq!(parse_long("-42"), Ok(-42));
        assert_eq!(parse_long("007"), Ok(7));
        assert_eq!(parse_long("9223372036854775807"), Ok(i64::MAX));
        assert_eq!(parse_long("+9223372036854775807"), Ok(i64::MAX));
        assert_eq!(parse_long("-9223372036854775808"), Ok(i64::MIN));
        assert_eq!(parse_long("1356998400"), Ok(1356998400));
    }

    #[test]
    fn parse_long_errors() {
        assert_eq!(nfe(""), "Empty string");
        assert_eq!(nfe("+"), "Just a sign, no value: +");
        assert_eq!(nfe("-"), "Just a sign, no value: -");
        assert_eq!(nfe("notatime"), "Invalid character 'n' in notatime");
        assert_eq!(nfe("NaN"), "Invalid character 'N' in NaN");
        assert_eq!(nfe("12a"), "Invalid character 'a' in 12a");
        assert_eq!(nfe("+-1"), "Invalid character '-' in +-1");
        assert_eq!(nfe(" 1"), "Invalid character ' ' in  1");
        assert_eq!(
            nfe("9223372036854775808"),
            "Overflow in 9223372036854775808"
        );
        assert_eq!(
            nfe("+9223372036854775808"),
            "Overflow in +9223372036854775808"
        );
        assert_eq!(
            nfe("-9223372036854775809"),
            "Overflow in -9223372036854775809"
        );
        assert_eq!(
            nfe("9999999999999999999"),
            "Overflow in 9999999999999999999"
        );
        assert_eq!(
            nfe("12345678901234567890"),
            "Value too long: 12345678901234567890"
        );
        assert_eq!(
            nfe("+12345678901234567890"),
            "Value too long: +12345678901234567890"
        );
        // The length check precedes the character check.
        assert_eq!(
            nfe("aaaaaaaaaaaaaaaaaaaa"),
            "Value too long: aaaaaaaaaaaaaaaaaaaa"
        );
        // Java counts UTF-16 units: 10 two-byte chars are 10 units, not 20.
        let s = "éééééééééé";
        assert_eq!(nfe(s), format!("Invalid character 'é' in {s}"));
    }

    #[test]
    fn classify_spec_examples() {
        // test/core/TestTags.java examples quoted in spec §2.4.
        assert!(matches!(parse_value("12.3"), Ok(Value::F64(d)) if d == 12.3));
        assert!(matches!(
            parse_value("1.234556789123456"),
            Ok(Value::F64(_))
        ));
        assert!(matches!(
            parse_value("0.6116398572921753"),
            Ok(Value::F32(_))
        ));
        assert!(matches!(parse_value("1.01417856E9"), Ok(Value::F32(_))));
        assert!(matches!(
            parse_value("4.508277154265837E7"),
            Ok(Value::F64(_))
        ));
        assert!(matches!(
            parse_value("8.208611994536002E8"),
            Ok(Value::F64(_))
        ));
        assert_eq!(parse_value("42.5"), Ok(Value::F32(42.5)));
        let v = parse_value("1.3E3").unwrap();
        assert_eq!(v, Value::F32(1300.0));
        if let Value::F32(f) = v {
            assert_eq!(f.to_bits().to_be_bytes(), [0x44, 0xA2, 0x80, 0x00]);
        }
        assert_eq!(parse_value("42"), Ok(Value::Int(42)));
        assert_eq!(parse_value("-1"), Ok(Value::Int(-1)));
    }

    #[test]
    fn classify_java_double_forms() {
        assert_eq!(parse_value("1.5"), Ok(Value::F32(1.5)));
        assert_eq!(parse_value("1e3"), Ok(Value::F32(1000.0)));
        assert_eq!(parse_value(".5"), Ok(Value::F32(0.5)));
        assert_eq!(parse_value("5."), Ok(Value::F32(5.0)));
        assert_eq!(parse_value("+1.5"), Ok(Value::F32(1.5)));
        assert_eq!(parse_value("-1.5"), Ok(Value::F32(-1.5)));
        assert_eq!(parse_value("1.5d"), Ok(Value::F32(1.5)));
        assert_eq!(parse_value("1.5F"), Ok(Value::F32(1.5)));
        assert_eq!(parse_value("1e3f"), Ok(Value::F32(1000.0)));
        assert_eq!(parse_value("1.E2"), Ok(Value::F32(100.0)));
        assert_eq!(parse_value("1e-2"), Ok(Value::F64(0.01)));
        assert_eq!(parse_value(" 1.5\t"), Ok(Value::F32(1.5)));
        assert!(
            matches!(parse_value("-0.0"), Ok(Value::F32(f)) if f == 0.0 && f.is_sign_negative())
        );
    }

    #[test]
    fn classify_errors() {
        let nf = |s: &str| match parse_value(s) {
            Err(ValueError::NumberFormat(m)) => m.to_string(),
            other => panic!("{s}: {other:?}"),
        };
        assert_eq!(nf("notanum"), "Invalid character 'n' in notanum");
        // Contains an 'e', so it goes to the double parser.
        assert_eq!(nf("notanumber"), "For input string: \"notanumber\"");
        assert_eq!(nf("NaN"), "Invalid character 'N' in NaN");
        assert_eq!(nf("Infinity"), "Invalid character 'I' in Infinity");
        assert_eq!(nf(""), "Empty string");
        assert_eq!(nf("1.2.3"), "multiple points");
        assert_eq!(nf("-1..x"), "multiple points");
        assert_eq!(nf("1e3.5"), "For input string: \"1e3.5\"");
        assert_eq!(nf("."), "For input string: \".\"");
        assert_eq!(nf("e5"), "For input string: \"e5\"");
        assert_eq!(nf("1e"), "For input string: \"1e\"");
        assert_eq!(nf("1.5fd"), "For input string: \"1.5fd\"");
        assert_eq!(nf(" 1.x "), "For input string: \"1.x\"");
        assert_eq!(nf("inf.0"), "For input string: \"inf.0\"");
        assert_eq!(nf("0x1.8p1"), "For input string: \"0x1.8p1\"");
        assert_eq!(
            parse_value("1e400"),
            Err(ValueError::NotFinite(
                "value is NaN or Infinite: Infinity".into()
            ))
        );
        assert_eq!(
            parse_value("-1e400"),
            Err(ValueError::NotFinite(
                "value is NaN or Infinite: -Infinity".into()
            ))
        );
        assert_eq!(
            ValueError::NumberFormat(NumberFormatError::MultiplePoints).to_string(),
            "multiple points",
            "Display is the bare message"
        );
    }

    proptest! {
        #[test]
        fn short_decimals_parse_as_the_general_parser_does(
            neg in any::<bool>(), int in "[0-9]{0,9}", frac in "[0-9]{0,9}", point in any::<bool>(), suffix in "[fFdD]?"
        ) {
            prop_assume!(!int.is_empty() || (point && !frac.is_empty()));
            let text = format!("{}{}{}{}{}", if neg { "-" } else { "" }, int, if point { "." } else { "" }, if point { frac.as_str() } else { "" }, suffix);
            let general = text.trim_end_matches(['f', 'F', 'd', 'D']).parse::<f64>().unwrap();
            let got = parse_java_double(&text).unwrap();
            prop_assert_eq!(got.to_bits(), general.to_bits(), "{}", text);
        }

        #[test]
        fn parse_long_round_trips(v in any::<i64>()) {
            prop_assert_eq!(parse_long(&v.to_string()), Ok(v));
            prop_assert_eq!(parse_value(&v.to_string()), Ok(Value::Int(v)));
        }

        #[test]
        fn parse_long_plus_sign(v in 0i64..=i64::MAX) {
            prop_assert_eq!(parse_long(&format!("+{v}")), Ok(v));
        }

        #[test]
        fn f64_round_trips(d in any::<f64>().prop_filter("finite", |d| d.is_finite())) {
            let s = format!("{d:e}");
            let v = parse_value(&s).unwrap();
            prop_assert_eq!(v.as_f64(), d);
            prop_assert_eq!(matches!(v, Value::F32(_)), (d as f32) as f64 == d);
        }

        #[test]
        fn f32_values_stay_f32(f in any::<f32>().prop_filter("finite", |f| f.is_finite())) {
            let s = format!("{:e}", f as f64);
            prop_assert_eq!(parse_value(&s), Ok(Value::F32(f)));
        }

        #[test]
        fn never_panics(s in any::<String>()) {
            let _ = parse_value(&s);
            let _ = parse_long(&s);
        }

        #[test]
        fn never_panics_numberish(s in "[-+0-9.eEdDfF x]{0,24}") {
            let _ = parse_value(&s);
        }
    }
}
