//! Metric / tag name validation (`Tags.validateString`, spec §4.5).
//!
//! A name is valid iff it is non-empty and every UTF-16 unit is `[A-Za-z0-9-_./]`, a Java
//! `Character.isLetter` char, or one of the configured extra characters.
//!
//! Approximation: Java's `isLetter` (general categories Lu/Ll/Lt/Lm/Lo, Unicode version of the
//! JVM) is approximated by Rust's `char::is_alphabetic` restricted to the BMP. The two agree on
//! all of U+0000..U+00FF (everything the telnet protocol can carry, since it decodes lines as
//! ISO-8859-1); elsewhere `is_alphabetic` is slightly broader (letter numbers such as `Ⅻ`,
//! some combining vowel signs, circled letters). Non-BMP chars are surrogate pairs in Java and
//! surrogates are never letters, so they are rejected unless both surrogates appear in the
//! extra-characters string (which is exactly Java's `indexOf(char)` behaviour).

/// The `<what>` for metric names.
pub const METRIC_WHAT: &str = "metric name";

/// The `<what>` for a tag key `k` whose value is `v`: `tag name with value [v]`.
pub fn tagk_what(value: &str) -> String {
    format!("tag name with value [{value}]")
}

/// The `<what>` for a tag value `v` whose key is `k`: `tag value with key [k]`.
pub fn tagv_what(key: &str) -> String {
    format!("tag value with key [{key}]")
}

/// Why a name is invalid, before the message is built (keeps the success path allocation-free).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bad {
    Empty,
    Char(char),
}

impl Bad {
    pub(crate) fn error(self, what: &str, s: &str) -> NameError {
        match self {
            Bad::Empty => NameError::Empty { what: what.into() },
            Bad::Char(c) => NameError::Char {
                what: what.into(),
                name: s.into(),
                c,
            },
        }
    }
}

/// An invalid name; `Display` is OpenTSDB's exact `IllegalArgumentException` message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("Invalid {what}: empty string")]
    Empty { what: String },
    /// For a rejected non-BMP char Java prints the lone offending surrogate (which cannot be
    /// represented in a Rust string); we print the whole char instead.
    #[error("Invalid {what} (\"{name}\"): illegal character: {c}")]
    Char { what: String, name: String, c: char },
}

fn special_has_unit(allow_special: &str, unit: u16) -> bool {
    allow_special.encode_utf16().any(|u| u == unit)
}

fn char_ok(c: char, allow_special: &str) -> bool {
    if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/') {
        return true;
    }
    if (c as u32) <= 0xFFFF {
        c.is_alphabetic() || allow_special.contains(c)
    } else {
        let mut buf = [0u16; 2];
        c.encode_utf16(&mut buf)
            .iter()
            .all(|&u| special_has_unit(allow_special, u))
    }
}

/// Checks a name without building any message.
pub(crate) fn check(s: &str, allow_special: &str) -> Result<(), Bad> {
    if s.is_empty() {
        return Err(Bad::Empty);
    }
    // Fast path: the overwhelmingly common all-ASCII `[A-Za-z0-9-_./]` name.
    if s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/'))
    {
        return Ok(());
    }
    match s.chars().find(|&c| !char_ok(c, allow_special)) {
        Some(c) => Err(Bad::Char(c)),
        None => Ok(()),
    }
}

/// Validates `s`, returning OpenTSDB's exact `IllegalArgumentException` message on failure:
/// `Invalid <what>: empty string` or `Invalid <what> ("<s>"): illegal character: <c>`.
pub fn validate(s: &str, what: &str, allow_special: &str) -> Result<(), NameError> {
    check(s, allow_special).map_err(|b| b.error(what, s))
}

/// `validate(metric, "metric name", allow_special)`.
pub fn validate_metric(metric: &str, allow_special: &str) -> Result<(), NameError> {
    validate(metric, METRIC_WHAT, allow_special)
}

/// Validates a tag key (the message names its value).
pub fn validate_tagk(key: &str, value: &str, allow_special: &str) -> Result<(), NameError> {
    check(key, allow_special).map_err(|b| b.error(&tagk_what(value), key))
}

/// Validates a tag value (the message names its key).
pub fn validate_tagv(value: &str, key: &str, allow_special: &str) -> Result<(), NameError> {
    check(value, allow_special).map_err(|b| b.error(&tagv_what(key), value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn good_and_bad_from_spec() {
        assert_eq!(validate("omg-TSDB/42._foo_", "metric name", ""), Ok(()));
        assert_eq!(
            validate("this is a test!", "metric name", "").map_err(|e| e.to_string()),
            Err("Invalid metric name (\"this is a test!\"): illegal character:  ".into())
        );
        assert_eq!(
            validate("illegal!character", "metric", "").map_err(|e| e.to_string()),
            Err("Invalid metric (\"illegal!character\"): illegal character: !".into())
        );
        assert_eq!(
            validate("a b", METRIC_WHAT, "").map_err(|e| e.to_string()),
            Err("Invalid metric name (\"a b\"): illegal character:  ".into())
        );
        assert_eq!(
            validate("", METRIC_WHAT, "").map_err(|e| e.to_string()),
            Err("Invalid metric name: empty string".into())
        );
    }

    #[test]
    fn tag_messages() {
        assert_eq!(
            validate_tagk("ho!st", "a", "").map_err(|e| e.to_string()),
            Err("Invalid tag name with value [a] (\"ho!st\"): illegal character: !".into())
        );
        assert_eq!(
            validate_tagv("we b", "host", "").map_err(|e| e.to_string()),
            Err("Invalid tag value with key [host] (\"we b\"): illegal character:  ".into())
        );
        assert_eq!(
            validate_tagv("", "host", "").map_err(|e| e.to_string()),
            Err("Invalid tag value with key [host]: empty string".into())
        );
        assert_eq!(tagk_what("v"), "tag name with value [v]");
        assert_eq!(tagv_what("k"), "tag value with key [k]");
    }

    #[test]
    fn letters_and_specials() {
        assert_eq!(validate("café", "m", ""), Ok(()));
        assert_eq!(validate("日本語", "m", ""), Ok(()));
        assert_eq!(validate("ñandú.µ", "m", ""), Ok(()));
        // Latin-1 non-letters (what raw UTF-8 bytes look like after ISO-8859-1 decoding).
        assert_eq!(
            validate("Ã©", "m", "").map_err(|e| e.to_string()),
            Err("Invalid m (\"Ã©\"): illegal character: ©".into())
        );
        assert!(validate("a b", "m", " ").is_ok());
        assert!(validate("a:b#c", "m", ":#").is_ok());
        assert!(validate("a:b#c", "m", ":").is_err());
        // Non-BMP letter: rejected (surrogates are not letters) unless listed as special.
        assert!(validate("a𝔸", "m", "").is_err());
        assert!(validate("a𝔸", "m", "𝔸").is_ok());
        assert!(validate("a\u{0}", "m", "").is_err());
    }

    #[test]
    fn latin1_matches_java_is_letter() {
        // Java Character.isLetter over U+0080..U+00FF: ª µ º À-Ö Ø-ö ø-ÿ.
        for cp in 0x80u32..=0xFF {
            let c = char::from_u32(cp).unwrap();
            let java = matches!(cp, 0xAA | 0xB5 | 0xBA | 0xC0..=0xD6 | 0xD8..=0xF6 | 0xF8..=0xFF);
            assert_eq!(check(&c.to_string(), "").is_ok(), java, "U+{cp:04X}");
        }
    }

    proptest! {
        #[test]
        fn ascii_rule(s in "[ -~]{0,20}") {
            let ok = !s.is_empty()
                && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./".contains(&b));
            prop_assert_eq!(validate(&s, "x", "").is_ok(), ok);
        }

        #[test]
        fn never_panics(s in any::<String>(), sp in any::<String>()) {
            let _ = validate(&s, "x", &sp);
        }
    }
}
