//! A small pull tokenizer for the `/api/put` body.
//!
//! Hand-written instead of serde_json because OpenTSDB's Jackson setup differs from strict JSON
//! in ways that change results: number tokens must keep their literal text (`42.0` vs `42`),
//! `NaN`/`Infinity`/`-INF`... are accepted as numbers (`ALLOW_NON_NUMERIC_NUMBERS`), and
//! anything after the first root value is ignored. It also lets strings borrow from the body.

use std::borrow::Cow;

pub(crate) type PResult<T> = Result<T, SyntaxError>;

/// A JSON syntax or type error, worded and placed the way Jackson reports it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{msg} at [line: {line}, column: {column}]")]
pub(crate) struct SyntaxError {
    msg: String,
    line: usize,
    column: usize,
}

/// One value token. Containers are only opened; the caller walks or skips them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Token<'a> {
    Null,
    /// `true` / `false`, as text.
    Bool(&'a str),
    Str(Cow<'a, str>),
    /// A JSON number, as written; `float` when it has a fraction or an exponent.
    Num {
        text: &'a str,
        float: bool,
    },
    /// `NaN`, `Infinity`, `+Infinity`, `-Infinity`, `+INF`, `-INF`.
    NonNumeric(&'a str),
    StartObject,
    StartArray,
}

impl Token<'_> {
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Token::Null => "null",
            Token::Bool(_) => "boolean",
            Token::Str(_) => "string",
            Token::Num { .. } | Token::NonNumeric(_) => "number",
            Token::StartObject => "object",
            Token::StartArray => "array",
        }
    }
}

pub(crate) struct Parser<'a> {
    s: &'a str,
    b: &'a [u8],
    pos: usize,
}

fn is_ident_part(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

impl<'a> Parser<'a> {
    pub(crate) fn new(s: &'a str) -> Self {
        Parser {
            s,
            b: s.as_bytes(),
            pos: 0,
        }
    }

    /// An error message carrying the current 1-based line and column.
    pub(crate) fn err(&self, msg: impl std::fmt::Display) -> SyntaxError {
        let upto = &self.b[..self.pos.min(self.b.len())];
        let line = upto.iter().filter(|&&c| c == b'\n').count() + 1;
        let column = upto.len() - upto.iter().rposition(|&c| c == b'\n').map_or(0, |p| p + 1) + 1;
        SyntaxError {
            msg: msg.to_string(),
            line,
            column,
        }
    }

    fn unexpected(&self, expecting: &str) -> SyntaxError {
        match self.s[self.pos.min(self.s.len())..].chars().next() {
            None => self.err(format!("Unexpected end-of-input: expected {expecting}")),
            Some(c) => self.err(format!(
                "Unexpected character ('{c}' (code {})): expected {expecting}",
                c as u32
            )),
        }
    }

    pub(crate) fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.pos) {
            self.pos += 1;
        }
    }

    pub(crate) fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    /// Where the parser is (a byte offset), for [`Parser::since`].
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// The text read since offset `from`.
    pub(crate) fn since(&self, from: usize) -> &'a str {
        &self.s[from..self.pos]
    }

    /// How many bytes are left to read.
    pub(crate) fn remaining(&self) -> usize {
        self.b.len().saturating_sub(self.pos)
    }

    /// Consumes `text` when the input goes on with it.
    pub(crate) fn skip_text(&mut self, text: &str) -> bool {
        let next = self.b[self.pos.min(self.b.len())..].starts_with(text.as_bytes());
        if next {
            self.pos += text.len();
        }
        next
    }

    /// Consumes the byte `peek` showed.
    pub(crate) fn bump(&mut self) {
        self.pos += 1;
    }

    /// Consumes `c` (after whitespace) or fails.
    pub(crate) fn expect(&mut self, c: u8, expecting: &str) -> PResult<()> {
        self.ws();
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.unexpected(expecting))
        }
    }

    /// After an element of an object/array: `true` if another element follows (`,` consumed),
    /// `false` at the closing `close` (consumed).
    pub(crate) fn next_elem(&mut self, close: u8) -> PResult<bool> {
        self.ws();
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                Ok(true)
            }
            Some(c) if c == close => {
                self.pos += 1;
                Ok(false)
            }
            _ => Err(self.unexpected(if close == b'}' {
                "comma to separate Object entries"
            } else {
                "comma to separate Array entries"
            })),
        }
    }

    /// Right after `{`/`[`: consumes `close` and returns true if the container is empty.
    pub(crate) fn empty_container(&mut self, close: u8) -> bool {
        self.ws();
        if self.peek() == Some(close) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// A string at `"` without escapes or control characters, consumed; `None`, with nothing
    /// consumed, for any other (`string` reads those). Two words back instead of a
    /// `PResult<Cow>`, for the short plain strings that make up most bodies.
    #[inline]
    pub(crate) fn plain_string(&mut self) -> Option<&'a str> {
        let start = self.pos + 1;
        let len = self
            .b
            .get(start..)?
            .iter()
            .position(|&c| c == b'"' || c == b'\\' || c < 0x20)?;
        if self.b[start + len] != b'"' {
            return None;
        }
        self.pos = start + len + 1;
        // Both ends are ASCII bytes of a str: char boundaries.
        Some(&self.s[start..start + len])
    }

    /// A string at `"`, plain or not.
    #[inline]
    pub(crate) fn any_string(&mut self) -> PResult<Cow<'a, str>> {
        match self.plain_string() {
            Some(s) => Ok(Cow::Borrowed(s)),
            None => self.string(),
        }
    }

    /// An object key and its `:`.
    pub(crate) fn key(&mut self) -> PResult<Cow<'a, str>> {
        self.ws();
        if self.peek() != Some(b'"') {
            return Err(self.unexpected("double-quote to start field name"));
        }
        let k = self.any_string()?;
        self.expect(b':', "a colon to separate field name and value")?;
        Ok(k)
    }

    fn literal(&mut self, word: &'static str) -> PResult<&'a str> {
        let end = self.pos + word.len();
        if self.b.get(self.pos..end) == Some(word.as_bytes())
            && !self.b.get(end).is_some_and(|&c| is_ident_part(c))
        {
            let t = &self.s[self.pos..end];
            self.pos = end;
            Ok(t)
        } else {
            Err(self.err("Unrecognized token: expected a valid JSON value"))
        }
    }

    /// The next value token (whitespace skipped).
    pub(crate) fn token(&mut self) -> PResult<Token<'a>> {
        self.ws();
        match self.peek() {
            Some(b'{') => {
                self.pos += 1;
                Ok(Token::StartObject)
            }
            Some(b'[') => {
                self.pos += 1;
                Ok(Token::StartArray)
            }
            Some(b'"') => Ok(Token::Str(self.any_string()?)),
            Some(b't') => Ok(Token::Bool(self.literal("true")?)),
            Some(b'f') => Ok(Token::Bool(self.literal("false")?)),
            Some(b'n') => self.literal("null").map(|_| Token::Null),
            Some(b'N') => Ok(Token::NonNumeric(self.literal("NaN")?)),
            Some(b'I') => Ok(Token::NonNumeric(self.literal("Infinity")?)),
            Some(b'+') => self.signed_non_numeric(),
            Some(b'-') if self.b.get(self.pos + 1) == Some(&b'I') => self.signed_non_numeric(),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.unexpected(
                "a valid value (number, String, array, object, 'true', 'false' or 'null')",
            )),
        }
    }

    fn signed_non_numeric(&mut self) -> PResult<Token<'a>> {
        let rest = &self.b[self.pos + 1..];
        let word = if rest.starts_with(b"Infinity") {
            "Infinity"
        } else if rest.starts_with(b"INF") {
            "INF"
        } else {
            self.pos += 1;
            return Err(self.unexpected("digit (0-9) to follow sign, for valid numeric value"));
        };
        let start = self.pos;
        self.pos += 1;
        self.literal(word)?;
        Ok(Token::NonNumeric(&self.s[start..self.pos]))
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        self.pos - start
    }

    pub(crate) fn number(&mut self) -> PResult<Token<'a>> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => {
                self.pos += 1;
                if self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    return Err(self.err("Invalid numeric value: Leading zeroes not allowed"));
                }
            }
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => {
                return Err(
                    self.unexpected("digit (0-9) to follow minus sign, for valid numeric value")
                )
            }
        }
        let mut float = false;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(self.unexpected("Decimal point to be followed by a digit"));
            }
            float = true;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.unexpected("Exponent indicator to be followed by a digit"));
            }
            float = true;
        }
        Ok(Token::Num {
            text: &self.s[start..self.pos],
            float,
        })
    }

    fn hex4(&mut self) -> PResult<u32> {
        let mut v = 0u32;
        for _ in 0..4 {
            let d = self.peek().and_then(|c| (c as char).to_digit(16));
            match d {
                Some(d) => {
                    v = v * 16 + d;
                    self.pos += 1;
                }
                None => return Err(self.unexpected("a hex-digit for character escape sequence")),
            }
        }
        Ok(v)
    }

    /// A string at `"`. Borrows unless it contains escapes. Lone surrogates from `\u` escapes
    /// (legal in Java strings) become U+FFFD.
    pub(crate) fn string(&mut self) -> PResult<Cow<'a, str>> {
        self.pos += 1;
        let start = self.pos;
        let mut owned: Option<String> = None;
        let mut chunk = start;
        loop {
            let Some(&c) = self.b.get(self.pos) else {
                return Err(self.err(
                    "Unexpected end-of-input: was expecting closing quote for a string value",
                ));
            };
            match c {
                b'"' => {
                    let tail = &self.s[chunk..self.pos];
                    self.pos += 1;
                    return Ok(match owned {
                        None => Cow::Borrowed(tail),
                        Some(mut o) => {
                            o.push_str(tail);
                            Cow::Owned(o)
                        }
                    });
                }
                b'\\' => {
                    let esc_start = self.pos;
                    self.pos += 1;
                    let e = self.peek();
                    self.pos += 1;
                    let ch = match e {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            let hi = self.hex4()?;
                            if (0xD800..0xDC00).contains(&hi)
                                && self.b.get(self.pos..self.pos + 2) == Some(b"\\u")
                            {
                                let save = self.pos;
                                self.pos += 2;
                                let lo = self.hex4()?;
                                if (0xDC00..0xE000).contains(&lo) {
                                    char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))
                                        .unwrap_or('\u{FFFD}')
                                } else {
                                    self.pos = save;
                                    '\u{FFFD}'
                                }
                            } else {
                                char::from_u32(hi).unwrap_or('\u{FFFD}')
                            }
                        }
                        _ => {
                            self.pos -= 1;
                            return Err(self.unexpected("a valid character escape sequence"));
                        }
                    };
                    let o = owned.get_or_insert_with(String::new);
                    o.push_str(&self.s[chunk..esc_start]);
                    o.push(ch);
                    chunk = self.pos;
                }
                0..=0x1F => {
                    return Err(self.err(format!(
                        "Illegal unquoted character ((CTRL-CHAR, code {c})): has to be escaped using backslash to be included in string value"
                    )));
                }
                _ => self.pos += 1,
            }
        }
    }

    /// Skips the rest of a container whose opening bracket was just consumed, iteratively so
    /// deep nesting cannot overflow the stack.
    pub(crate) fn skip_container(&mut self, open: Token<'a>) -> PResult<()> {
        let closer = |t: u8| if t == b'{' { b'}' } else { b']' };
        let mut stack: Vec<u8> = vec![if open == Token::StartObject {
            b'{'
        } else {
            b'['
        }];
        let mut first = true;
        loop {
            let top = *stack.last().unwrap_or(&b'[');
            if first && self.empty_container(closer(top)) {
                stack.pop();
            } else {
                if top == b'{' {
                    self.key()?;
                }
                match self.token()? {
                    Token::StartObject => {
                        stack.push(b'{');
                        first = true;
                        continue;
                    }
                    Token::StartArray => {
                        stack.push(b'[');
                        first = true;
                        continue;
                    }
                    _ => {}
                }
            }
            // After a complete element (or a closed container).
            loop {
                let Some(&top) = stack.last() else {
                    return Ok(());
                };
                if self.next_elem(closer(top))? {
                    break;
                }
                stack.pop();
            }
            first = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Token<'_>> {
        let mut p = Parser::new(s);
        let mut v = vec![];
        loop {
            p.ws();
            if p.peek().is_none() {
                return v;
            }
            v.push(p.token().unwrap());
            p.ws();
            if p.peek() == Some(b',') {
                p.pos += 1;
            }
        }
    }

    #[test]
    fn scalars() {
        assert_eq!(
            toks(r#"42, 42.0, -1e3, "a", true, null, NaN, -INF, +Infinity"#),
            vec![
                Token::Num {
                    text: "42",
                    float: false
                },
                Token::Num {
                    text: "42.0",
                    float: true
                },
                Token::Num {
                    text: "-1e3",
                    float: true
                },
                Token::Str(Cow::Borrowed("a")),
                Token::Bool("true"),
                Token::Null,
                Token::NonNumeric("NaN"),
                Token::NonNumeric("-INF"),
                Token::NonNumeric("+Infinity"),
            ]
        );
    }

    #[test]
    fn strings() {
        let t = toks(r#""a\"b\\c\/\n\u00e9\ud83d\ude00\ud800x""#);
        assert_eq!(
            t,
            vec![Token::Str(Cow::Owned("a\"b\\c/\né😀\u{FFFD}x".into()))]
        );
        assert!(matches!(
            &toks(r#""héllo""#)[0],
            Token::Str(Cow::Borrowed("héllo"))
        ));
        for bad in ["\"abc", "\"a\u{1}\"", r#""\x""#, r#""\u12g4""#] {
            assert!(Parser::new(bad).token().is_err(), "{bad}");
        }
    }

    #[test]
    fn bad_numbers() {
        for bad in [
            "01", "-", "1.", "1e", "1.e3", ".5", "+1", "-x", "NaNx", "Inf", "tru", "nul",
        ] {
            assert!(Parser::new(bad).token().is_err(), "{bad}");
        }
    }

    #[test]
    fn skipping() {
        let s = r#"{"a":[1,{"b":[]},[[]],{}],"c":"}"} ,"#;
        let mut p = Parser::new(s);
        let t = p.token().unwrap();
        p.skip_container(t).unwrap();
        p.ws();
        assert_eq!(p.peek(), Some(b','));
        let deep = "[".repeat(100_000) + &"]".repeat(100_000);
        let mut p = Parser::new(&deep);
        let t = p.token().unwrap();
        p.skip_container(t).unwrap();
        for bad in [
            "[1,]",
            "{\"a\"}",
            "{\"a\":1,}",
            "[1 2]",
            "{1:2}",
            "[",
            "{\"a\":",
        ] {
            let mut p = Parser::new(bad);
            let t = p.token().unwrap();
            assert!(p.skip_container(t).is_err(), "{bad}");
        }
    }

    #[test]
    fn error_positions() {
        let mut p = Parser::new("\n  x");
        let e = p.token().unwrap_err().to_string();
        assert!(
            e.contains("'x' (code 120)") && e.ends_with("[line: 2, column: 3]"),
            "{e}"
        );
    }
}
