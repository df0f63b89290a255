//! Target expressions (graphite-web's grammar, §2.4 of the spec): calls, path expressions,
//! pipes, strings (quotes stripped, content not unescaped), numbers, booleans, `None`, `inf`,
//! keyword arguments. Unlike graphite-web's non-anchored parser, trailing garbage is an error
//! (graphite-web silently reads `sumSeries(a.b` as the path `sumSeries`; we answer 400).

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Path(String),
    Call(Call),
    Str(String),
    Num(f64),
    Bool(bool),
    None,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub name: String,
    pub args: Vec<Expr>,
    pub kwargs: Vec<(String, Expr)>,
    /// The call's own text, as written (graphite names `seriesByTag` results by it).
    pub text: String,
}

/// Deepest nesting [`parse`] accepts: calls within calls, and each `|` of a pipe chain (both
/// are levels of the evaluator's recursion). `query.max_depth`'s default.
pub const DEFAULT_MAX_DEPTH: usize = 64;

pub fn parse(s: &str) -> Result<Expr, ParseError> {
    parse_bounded(s, DEFAULT_MAX_DEPTH)
}

/// [`parse`] refusing a target nested deeper than `max_depth` (a tree taller than that): the
/// parser and the evaluator both recurse once per level, and a few thousand levels overflow a
/// thread's stack, which aborts the process.
pub fn parse_bounded(s: &str, max_depth: usize) -> Result<Expr, ParseError> {
    let mut p = P {
        s: s.as_bytes(),
        src: s,
        i: 0,
        level: 0,
        max_depth,
    };
    p.ws();
    let (e, _) = p.expression()?;
    p.ws();
    if p.i < p.s.len() {
        let rest = String::from_utf8_lossy(&p.s[p.i..]);
        let (shown, more) = clip(&rest);
        return p.err(Problem::Unexpected(shown.to_string(), more));
    }
    Ok(e)
}

/// A target graphite-web's grammar refuses: what was wrong, at which byte, and the target's
/// start (an error message quotes at most [`SHOWN_MAX`] bytes of it).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{problem} at position {at} in {shown:?}{more}")]
pub struct ParseError {
    pub problem: Problem,
    pub at: usize,
    shown: String,
    more: &'static str,
}

/// What was wrong with a target.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Problem {
    /// Text after a whole expression (clipped, with `…` when it was).
    #[error("unexpected {0:?}{1}")]
    Unexpected(String, &'static str),
    /// Nested deeper than `query.max_depth`.
    #[error("target nested deeper than {0} levels (query.max_depth)")]
    TooDeep(usize),
    #[error("expected a function call after '|'")]
    CallAfterPipe,
    #[error("positional argument after keyword argument")]
    PositionalAfterKeyword,
    #[error("expected ',' or ')'")]
    CommaOrParen,
    #[error("unterminated string")]
    UnterminatedString,
    #[error("missing argument")]
    MissingArgument,
    #[error("expected a path expression or function call")]
    Expected,
}

/// Longest part of a target an error message quotes.
const SHOWN_MAX: usize = 200;

/// A target can be a whole request body long: a message quotes its start only.
fn clip(s: &str) -> (&str, &'static str) {
    let mut end = s.len().min(SHOWN_MAX);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    (&s[..end], if end < s.len() { "…" } else { "" })
}

/// Positional and keyword arguments, and the tallest one's height.
type ArgList = (Vec<Expr>, Vec<(String, Expr)>, usize);

/// An expression and its height (1 for a leaf).
type Parsed = (Expr, usize);

struct P<'a> {
    s: &'a [u8],
    src: &'a str,
    i: usize,
    /// Calls open around the position: bounds the parser's own recursion.
    level: usize,
    max_depth: usize,
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}
fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}
/// Characters a path element may hold: printable, minus the grammar's delimiters. Bytes ≥ 0x80
/// (UTF-8 names) are allowed too, as carbon stores them.
fn is_path_char(c: u8) -> bool {
    (c > 0x20 && c != 0x7f)
        && !matches!(
            c,
            b'(' | b')' | b'{' | b'}' | b',' | b'.' | b'\'' | b'"' | b'\\' | b'|'
        )
}

impl P<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn err<T>(&self, problem: Problem) -> Result<T, ParseError> {
        let (shown, more) = clip(self.src);
        Err(ParseError {
            problem,
            at: self.i,
            shown: shown.to_string(),
            more,
        })
    }

    /// The error for a tree taller than `max_depth`.
    fn too_deep<T>(&self) -> Result<T, ParseError> {
        self.err(Problem::TooDeep(self.max_depth))
    }

    fn expression(&mut self) -> Result<Parsed, ParseError> {
        let (mut e, mut height) = self.primary()?;
        loop {
            self.ws();
            if self.peek() != Some(b'|') {
                return Ok((e, height));
            }
            self.i += 1;
            self.ws();
            let start = self.i;
            let (Expr::Call(mut c), h) = self.primary()? else {
                self.i = start;
                return self.err(Problem::CallAfterPipe);
            };
            // The piped value becomes the call's first argument: one level deeper.
            height = h.max(height + 1);
            if height > self.max_depth {
                return self.too_deep();
            }
            c.args.insert(0, e);
            e = Expr::Call(c);
        }
    }

    fn primary(&mut self) -> Result<Parsed, ParseError> {
        let start = self.i;
        if self.peek().is_some_and(is_ident_start) {
            let mut j = self.i;
            while j < self.s.len() && is_ident(self.s[j]) {
                j += 1;
            }
            if self.s.get(j) == Some(&b'(') {
                let name = self.src[self.i..j].to_string();
                self.i = j + 1;
                if self.level >= self.max_depth {
                    return self.too_deep();
                }
                self.level += 1;
                let got = self.arglist();
                self.level -= 1;
                let (args, kwargs, tallest) = got?;
                if tallest + 1 > self.max_depth {
                    return self.too_deep();
                }
                let call = Expr::Call(Call {
                    name,
                    args,
                    kwargs,
                    text: self.src[start..self.i].to_string(),
                });
                return Ok((call, tallest + 1));
            }
        }
        Ok((self.path()?, 1))
    }

    fn arglist(&mut self) -> Result<ArgList, ParseError> {
        let (mut args, mut kwargs, mut tallest) = (Vec::new(), Vec::new(), 0);
        self.ws();
        if self.peek() == Some(b')') {
            self.i += 1;
            return Ok((args, kwargs, tallest));
        }
        loop {
            self.ws();
            if let Some(k) = self.kwarg_name() {
                let (e, h) = self.arg()?;
                tallest = tallest.max(h);
                kwargs.push((k, e));
            } else if !kwargs.is_empty() {
                return self.err(Problem::PositionalAfterKeyword);
            } else {
                let (e, h) = self.arg()?;
                tallest = tallest.max(h);
                args.push(e);
            }
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b')') => {
                    self.i += 1;
                    return Ok((args, kwargs, tallest));
                }
                _ => return self.err(Problem::CommaOrParen),
            }
        }
    }

    /// `name=` (not `name==`): consumes it and returns the name.
    fn kwarg_name(&mut self) -> Option<String> {
        let mut j = self.i;
        if !self.s.get(j).copied().is_some_and(is_ident_start) {
            return None;
        }
        while j < self.s.len() && is_ident(self.s[j]) {
            j += 1;
        }
        let name_end = j;
        while j < self.s.len() && self.s[j] == b' ' {
            j += 1;
        }
        if self.s.get(j) == Some(&b'=') && self.s.get(j + 1) != Some(&b'=') {
            let name = self.src[self.i..name_end].to_string();
            self.i = j + 1;
            self.ws();
            return Some(name);
        }
        None
    }

    fn arg(&mut self) -> Result<Parsed, ParseError> {
        match self.peek() {
            Some(q @ (b'\'' | b'"')) => {
                let start = self.i + 1;
                let Some(len) = self.s[start..].iter().position(|&c| c == q) else {
                    return self.err(Problem::UnterminatedString);
                };
                self.i = start + len + 1;
                return Ok((Expr::Str(self.src[start..start + len].to_string()), 1));
            }
            None => return self.err(Problem::MissingArgument),
            _ => {}
        }
        if let Some(n) = self.number() {
            return Ok((Expr::Num(n), 1));
        }
        // Bare words that are values only when a delimiter follows them.
        for (word, v) in [
            ("true", Expr::Bool(true)),
            ("false", Expr::Bool(false)),
            ("none", Expr::None),
            ("inf", Expr::Num(f64::INFINITY)),
        ] {
            let end = self.i + word.len();
            // Compared as bytes: `end` may fall inside a multi-byte character.
            if end <= self.s.len()
                && self.s[self.i..end].eq_ignore_ascii_case(word.as_bytes())
                && self.delimited(end)
            {
                self.i = end;
                return Ok((v, 1));
            }
        }
        self.expression()
    }

    /// Whether position `j` (after optional spaces) is `,`, `)` or the end.
    fn delimited(&self, mut j: usize) -> bool {
        while j < self.s.len() && self.s[j] == b' ' {
            j += 1;
        }
        matches!(self.s.get(j), None | Some(b',') | Some(b')'))
    }

    fn number(&mut self) -> Option<f64> {
        let s = self.s;
        let mut j = self.i;
        if s.get(j) == Some(&b'-') {
            j += 1;
        }
        let d0 = j;
        while j < s.len() && s[j].is_ascii_digit() {
            j += 1;
        }
        if j == d0 {
            return None;
        }
        if s.get(j) == Some(&b'.') && s.get(j + 1).is_some_and(|c| c.is_ascii_digit()) {
            j += 1;
            while j < s.len() && s[j].is_ascii_digit() {
                j += 1;
            }
        }
        if matches!(s.get(j), Some(b'e') | Some(b'E')) {
            let mut k = j + 1;
            if matches!(s.get(k), Some(b'-') | Some(b'+')) {
                k += 1;
            }
            let k0 = k;
            while k < s.len() && s[k].is_ascii_digit() {
                k += 1;
            }
            if k > k0 {
                j = k;
            }
        }
        if !self.delimited(j) {
            return None;
        }
        let v = self.src[self.i..j].parse().ok()?;
        self.i = j;
        Some(v)
    }

    fn path(&mut self) -> Result<Expr, ParseError> {
        let start = self.i;
        let mut depth = 0usize;
        while let Some(c) = self.peek() {
            match c {
                b'{' => depth += 1,
                b'}' if depth > 0 => depth -= 1,
                b',' if depth > 0 => {}
                b'.' => {}
                // An escape takes the next byte whatever it is, but never past the end.
                b'\\' => self.i = (self.i + 1).min(self.s.len() - 1),
                c if is_path_char(c) => {}
                _ => break,
            }
            self.i += 1;
        }
        if self.i == start || depth > 0 {
            return self.err(Problem::Expected);
        }
        Ok(Expr::Path(
            String::from_utf8_lossy(&self.s[start..self.i]).into_owned(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(e: &Expr) -> &Call {
        match e {
            Expr::Call(c) => c,
            _ => panic!("not a call: {e:?}"),
        }
    }

    #[test]
    fn grafana_health_check() {
        let e = parse(r#"aliasSub(constantLine(100), "(^.*$)", "\1 A")"#).unwrap();
        let c = call(&e);
        assert_eq!(c.name, "aliasSub");
        assert_eq!(call(&c.args[0]).args, vec![Expr::Num(100.0)]);
        assert_eq!(c.args[1], Expr::Str("(^.*$)".into()));
        assert_eq!(c.args[2], Expr::Str(r"\1 A".into()));
    }

    #[test]
    fn paths_globs_kwargs_pipes() {
        let e = parse("sumSeries(demo.{web01,db01}.cpu, a.b[0-9]*.c?)").unwrap();
        assert_eq!(
            call(&e).args,
            vec![
                Expr::Path("demo.{web01,db01}.cpu".into()),
                Expr::Path("a.b[0-9]*.c?".into())
            ]
        );
        let e = parse("summarize(x.y, '1h', func='max', alignToFrom=true)").unwrap();
        let c = call(&e);
        assert_eq!(
            c.kwargs,
            vec![
                ("func".into(), Expr::Str("max".into())),
                ("alignToFrom".into(), Expr::Bool(true))
            ]
        );
        let e = parse("a.b | scale(2) | alias('x')").unwrap();
        let c = call(&e);
        assert_eq!(c.name, "alias");
        assert_eq!(
            call(&c.args[0]).args,
            vec![Expr::Path("a.b".into()), Expr::Num(2.0)]
        );
        // A number followed by more path characters is a path.
        assert_eq!(parse("1.foo").unwrap(), Expr::Path("1.foo".into()));
        assert_eq!(
            call(&parse("scale(x, -1.5e3)").unwrap()).args[1],
            Expr::Num(-1500.0)
        );
        assert_eq!(
            call(&parse("keepLastValue(x, inf)").unwrap()).args[1],
            Expr::Num(f64::INFINITY)
        );
        assert_eq!(
            call(&parse("seriesByTag('name=a.b','dc=~x.*')").unwrap()).text,
            "seriesByTag('name=a.b','dc=~x.*')"
        );
        assert!(parse("sumSeries(a.b").is_err());
        assert!(parse("").is_err());
    }

    /// Fuzz findings (tests/fuzz, graphite_target): byte positions that are not character
    /// boundaries, or past the end, used to slice the target text.
    #[test]
    fn multibyte_and_trailing_escape_never_panic() {
        // A bare word's length ending inside `€` (3 bytes).
        assert_eq!(
            call(&parse("f(tr€)").unwrap()).args,
            vec![Expr::Path("tr€".into())]
        );
        assert_eq!(
            call(&parse("f(TRUE)").unwrap()).args,
            vec![Expr::Bool(true)]
        );
        // A trailing backslash escapes nothing.
        assert_eq!(parse(r"a.b\").unwrap(), Expr::Path(r"a.b\".into()));
        assert!(parse("f(a\\").is_err());
        assert!(parse("a.b)é").unwrap_err().to_string().contains("é"));
    }

    /// Issue 35: `absolute(` nested 2,000 deep overflowed the stack and aborted the process.
    #[test]
    fn nesting_is_bounded_in_calls_and_pipes() {
        let nested = |n: usize| format!("{}a.b{}", "absolute(".repeat(n), ")".repeat(n));
        assert!(parse_bounded(&nested(7), 8).is_ok());
        let e = parse_bounded(&nested(8), 8).unwrap_err();
        assert_eq!(e.problem, Problem::TooDeep(8));
        assert!(e.to_string().contains("query.max_depth"), "{e}");
        // Far past any stack, still a plain error.
        assert!(parse(&nested(100_000))
            .unwrap_err()
            .to_string()
            .contains("deeper than 64"));
        // A pipe chain is as deep as the same calls nested.
        let piped = |n: usize| format!("a.b{}", "|absolute()".repeat(n));
        assert!(parse_bounded(&piped(7), 8).is_ok());
        assert!(parse_bounded(&piped(8), 8)
            .unwrap_err()
            .to_string()
            .contains("deeper"));
        assert!(parse(&piped(100_000)).is_err());
        // Pipes inside an argument count from where that argument sits.
        let inner = format!("f({})", piped(6));
        assert!(parse_bounded(&inner, 8).is_ok());
        assert!(parse_bounded(&format!("g({inner})"), 8).is_err());
        // Wide is not deep.
        let wide = format!("sumSeries({})", vec!["absolute(x)"; 5_000].join(","));
        assert!(parse_bounded(&wide, 3).is_ok());
    }
}
