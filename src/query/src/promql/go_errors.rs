//! Parse errors as Prometheus 2.42 words them: `line:col: parse error: msg`, the position
//! where its yacc parser stopped, and its words for what `promql-parser` reports in its own
//! (quotes, "instant vector"/"range vector", Go's `strconv` and `regexp` texts). The crate
//! gives no positions, so they are found again in the query text for the errors it names;
//! an error it leaves generic ("invalid promql query") keeps position 1:1.

/// `line:col` of byte offset `at` in `q`, 1-based, as Prometheus' `PositionRange` prints it.
pub(super) fn line_col(q: &str, at: usize) -> (usize, usize) {
    let at = at.min(q.len());
    let before = &q.as_bytes()[..at];
    let line = before.iter().filter(|b| **b == b'\n').count() + 1;
    let col = at
        - before
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |p| p + 1)
        + 1;
    (line, col)
}

/// The text outside string literals and comments, other characters kept in place (a space
/// for each hidden byte), so that offsets stay those of the query.
fn code_only(q: &str) -> Vec<u8> {
    let b = q.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            c @ (b'"' | b'\'' | b'`') => {
                let mut j = i + 1;
                while j < b.len() && b[j] != c {
                    j += if b[j] == b'\\' && c != b'`' { 2 } else { 1 };
                }
                for x in out.iter_mut().take(j.min(b.len())).skip(i + 1) {
                    *x = b' ';
                }
                i = j + 1;
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    out[i] = b' ';
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    out
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b':'
}

/// Offset of the call `name(` (word-bounded, outside strings), if the text has one.
fn call_at(code: &[u8], name: &str) -> Option<usize> {
    let n = name.as_bytes();
    (0..code.len()).find(|&i| {
        code[i..].starts_with(n)
            && (i == 0 || !is_ident(code[i - 1]))
            && code[i + n.len()..]
                .iter()
                .find(|c| !c.is_ascii_whitespace())
                .is_some_and(|c| *c == b'(')
    })
}

/// The top-level arguments of the call whose `(` is at `open`: (offset of the first
/// non-space byte, text).
fn args_of<'a>(q: &'a str, code: &[u8], open: usize) -> Vec<(usize, &'a str)> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, open + 1);
    for (i, &c) in code.iter().enumerate().skip(open) {
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    out.push((start, &q[start..i]));
                    break;
                }
            }
            b',' if depth == 1 => {
                out.push((start, &q[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    out.into_iter()
        .map(|(s, t)| {
            let skip = t.len() - t.trim_start().len();
            (s + skip, t.trim())
        })
        .collect()
}

/// What an argument's text most likely evaluates to, in Prometheus' type names.
fn kind_of(arg: &str) -> &'static str {
    let a = arg.trim();
    if a.starts_with(['"', '\'', '`']) {
        "string"
    } else if a.ends_with(']') {
        "range vector"
    } else if a.parse::<f64>().is_ok() || a.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        "scalar"
    } else {
        "instant vector"
    }
}

fn go_type(t: &str) -> &str {
    match t {
        "vector" => "instant vector",
        "matrix" => "range vector",
        t => t,
    }
}

/// Go's `regexp` error for a pattern Rust's `regex` refused (`^(?:re)$` as Prometheus
/// anchors it): `error parsing regexp: <code>: `<fragment>``.
pub fn go_regexp_error(re: &str) -> Option<String> {
    let anchored = format!("^(?:{re})$");
    let err = match regex_syntax::Parser::new().parse(&anchored) {
        Err(regex_syntax::Error::Parse(e)) => e,
        _ => return None,
    };
    use regex_syntax::ast::ErrorKind as K;
    let span = err.span();
    let frag = &anchored[span.start.offset..span.end.offset];
    let (code, text) = match err.kind() {
        K::GroupUnclosed => ("missing closing )", anchored.clone()),
        K::GroupUnopened => ("unexpected )", anchored.clone()),
        K::ClassUnclosed => (
            "missing closing ]",
            anchored[span.start.offset..].to_string(),
        ),
        K::RepetitionCountInvalid | K::RepetitionCountDecimalEmpty | K::RepetitionCountUnclosed => {
            ("invalid repeat count", frag.to_string())
        }
        K::RepetitionMissing => ("missing argument to repetition operator", frag.to_string()),
        K::ClassRangeInvalid | K::ClassRangeLiteral => {
            ("invalid character class range", frag.to_string())
        }
        K::EscapeUnrecognized | K::UnsupportedBackreference | K::EscapeUnexpectedEof => {
            ("invalid escape sequence", frag.to_string())
        }
        K::GroupNameInvalid | K::GroupNameEmpty | K::GroupNameUnexpectedEof => {
            ("invalid named capture", frag.to_string())
        }
        K::FlagUnrecognized | K::FlagDanglingNegation | K::FlagRepeatedNegation { .. } => {
            ("invalid or unsupported Perl syntax", frag.to_string())
        }
        _ => return None,
    };
    Some(format!("error parsing regexp: {code}: `{text}`"))
}

/// The message and the offset Prometheus reports for `msg`, the crate's text of an error in
/// `q`.
/// Where the unary operator of a unary type error stands (2.42 reports its position): the
/// first `+` or `-` in an operand's place whose removal takes the error away.
fn unary_at(q: &str, code: &[u8]) -> usize {
    for (i, &c) in code.iter().enumerate() {
        if c != b'-' && c != b'+' {
            continue;
        }
        let before = &code[..i];
        let p = before.iter().rposition(|b| !b.is_ascii_whitespace());
        let unary = match p {
            None => true,
            Some(p) if before[p].is_ascii_alphabetic() => {
                let w0 = before[..=p]
                    .iter()
                    .rposition(|b| !b.is_ascii_alphanumeric() && *b != b'_')
                    .map_or(0, |w| w + 1);
                matches!(
                    &before[w0..=p],
                    b"and" | b"or" | b"unless" | b"bool" | b"atan2"
                )
            }
            Some(p) => b"(,+-*/%^=<>".contains(&before[p]),
        };
        if !unary {
            continue;
        }
        let mut t = q.as_bytes().to_vec();
        t[i] = b' ';
        let Ok(t) = String::from_utf8(t) else {
            continue;
        };
        match promql_parser::parser::parse(&t) {
            Err(e) if e.contains("unary expression only allowed") => continue,
            _ => return i,
        }
    }
    0
}

fn reword(q: &str, msg: &str) -> (usize, String) {
    let code = code_only(q);
    let end = q.len();
    let unquote = |s: &str| s.replace('\'', "\"");
    if msg == "unclosed left parenthesis" || msg.starts_with("unexpected end of input") {
        return (end, msg.to_string());
    }
    if let Some(rest) = msg.strip_prefix("unterminated quoted string") {
        // The quote that opens the string is where the lexer stopped.
        let quote = rest.trim().bytes().next().unwrap_or(b'"');
        let at = code_start_of_unclosed(q, quote).unwrap_or(0);
        let what = if quote == b'`' {
            "unterminated raw string"
        } else {
            "unterminated quoted string"
        };
        return (at, what.to_string());
    }
    if let Some(rest) = msg.strip_prefix("ParseFloatError. ") {
        let num = rest.split(" can't be parsed").next().unwrap_or(rest);
        let at = q.find(num).unwrap_or(0);
        return (
            at,
            format!("error parsing number: strconv.ParseFloat: parsing \"{num}\": invalid syntax"),
        );
    }
    if let Some(rest) = msg.strip_prefix("illegal regex for ") {
        if let Some(e) = go_regexp_error(rest) {
            // The matcher's position: its label name, before `=~`/`!~` and the pattern.
            let at = matcher_at(q, rest).unwrap_or(0);
            return (at, e);
        }
    }
    if let Some(name) = msg
        .strip_prefix("unknown function with name '")
        .and_then(|r| r.strip_suffix('\''))
    {
        let at = call_at(&code, name).unwrap_or(0);
        return (at, format!("unknown function with name \"{name}\""));
    }
    if let Some(rest) = msg.strip_prefix("expected type ") {
        // "expected type T in call to function 'f', got U" / "in aggregation expression".
        if let Some((want, tail)) = rest.split_once(" in call to function '") {
            if let Some((func, got)) = tail.split_once("', got ") {
                let (want, got) = (go_type(want), go_type(got));
                let at = call_at(&code, func)
                    .and_then(|c| {
                        let open = c + code[c..].iter().position(|b| *b == b'(')?;
                        let args = args_of(q, &code, open);
                        args.iter()
                            .find(|a| kind_of(a.1) == got)
                            .or(args.first())
                            .map(|a| a.0)
                    })
                    .unwrap_or(0);
                return (
                    at,
                    format!("expected type {want} in call to function \"{func}\", got {got}"),
                );
            }
        }
        if let Some((want, got)) = rest.split_once(" in aggregation expression, got ") {
            let (want, got) = (go_type(want), go_type(got));
            let param = matches!(want, "scalar" | "string");
            let at = aggregation_arg(q, &code, param).unwrap_or(0);
            let what = if param {
                "aggregation parameter"
            } else {
                "aggregation expression"
            };
            return (at, format!("expected type {want} in {what}, got {got}"));
        }
    }
    if let Some(rest) = msg.strip_prefix("expected ") {
        if let Some((n, tail)) = rest.split_once(" in call to '") {
            if let Some((func, got)) = tail.split_once("', got ") {
                let at = call_at(&code, func).unwrap_or(0);
                return (at, format!("expected {n} in call to \"{func}\", got {got}"));
            }
        }
    }
    if msg == "ranges only allowed for vector selectors" {
        return (range_misplaced(&code).unwrap_or(0), msg.to_string());
    }
    if let Some(got) = msg
        .strip_prefix("unary expression only allowed on expressions of type scalar or vector, got")
        .map(|g| g.trim_start_matches(':').trim_start())
    {
        return (
            unary_at(q, &code),
            format!("unary expression only allowed on expressions of type scalar or instant vector, got \"{}\"", go_type(got)),
        );
    }
    if msg.starts_with("@ modifier must be preceded by") {
        return (
            0,
            "@ modifier must be preceded by an instant vector selector or range vector selector or a subquery".into(),
        );
    }
    if let Some(rest) = msg.strip_prefix("unexpected '") {
        // Label matching: `up{,}`, `up{job=="a"}`.
        if let Some((tok, tail)) = rest.split_once("' in label matching, ") {
            let expected = tail.replace("right_brace", "\"}\"");
            let at = label_token_at(&code, tok).unwrap_or(0);
            return (
                at,
                format!("unexpected \"{tok}\" in label matching, {expected}"),
            );
        }
    }
    if let Some(name) = msg
        .strip_prefix("invalid label matcher, expected label matching operator after '")
        .and_then(|r| r.strip_suffix('\''))
    {
        // The token after the label name.
        if let Some(open) = code.iter().position(|b| *b == b'{') {
            if let Some(p) = find_from(&code, name.as_bytes(), open) {
                let mut i = p + name.len();
                while i < code.len() && code[i].is_ascii_whitespace() {
                    i += 1;
                }
                if let Some(&c) = code.get(i) {
                    return (
                        i,
                        format!(
                            "unexpected \"{}\" in label matching, expected label matching operator",
                            c as char
                        ),
                    );
                }
                return (end, "unexpected end of input inside braces".into());
            }
        }
    }
    if msg == "invalid promql query" {
        if let Some(r) = generic(&code) {
            return r;
        }
    }
    (0, unquote(msg))
}

/// A token of the query outside strings: (offset, text).
fn tokens(code: &[u8]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < code.len() {
        let c = code[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if is_ident(c) || c == b'.' {
            let st = i;
            while i < code.len() && (is_ident(code[i]) || code[i] == b'.') {
                i += 1;
            }
            out.push((st, String::from_utf8_lossy(&code[st..i]).into_owned()));
        } else {
            let two = code.get(i..i + 2).unwrap_or_default();
            let n = if matches!(two, b"==" | b"!=" | b">=" | b"<=" | b"=~" | b"!~") {
                2
            } else {
                1
            };
            out.push((i, String::from_utf8_lossy(&code[i..i + n]).into_owned()));
            i += n;
        }
    }
    out
}

/// The crate's generic error, placed and worded for two common cases: the query ends after
/// an operator (`up +`), or two operands follow each other (`1 2`, `up up`).
fn generic(code: &[u8]) -> Option<(usize, String)> {
    const BINARY: [&str; 16] = [
        "+", "-", "*", "/", "%", "^", "==", "!=", ">", "<", ">=", "<=", "and", "or", "unless",
        "bool",
    ];
    const KEYWORDS: [&str; 10] = [
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "offset",
        "bool",
        "atan2",
        "unless",
    ];
    let toks = tokens(code);
    let end = code.len();
    let last = toks.last().map(|t| t.1.as_str());
    let before = toks.len().checked_sub(2).map(|i| toks[i].1.as_str());
    if last == Some("offset") || (before == Some("offset") && matches!(last, Some("-" | "+"))) {
        return Some((
            end,
            "unexpected end of input in offset, expected duration".into(),
        ));
    }
    if matches!(last, Some("by" | "without" | "on" | "ignoring")) {
        return Some((
            end,
            "unexpected end of input in grouping opts, expected \"(\"".into(),
        ));
    }
    if last.is_some_and(|t| BINARY.contains(&t)) {
        return Some((end, "unexpected end of input".into()));
    }
    let operand = |t: &str| {
        t.bytes().next().is_some_and(|c| is_ident(c) || c == b'.')
            && !KEYWORDS.contains(&t)
            && !BINARY.contains(&t)
    };
    let (mut depth_brace, mut depth_bracket) = (0, 0);
    for w in toks.windows(2) {
        match w[0].1.as_str() {
            "{" => depth_brace += 1,
            "}" => depth_brace -= 1,
            "[" => depth_bracket += 1,
            "]" => depth_bracket -= 1,
            _ => {}
        }
        if depth_brace > 0 || depth_bracket > 0 {
            continue;
        }
        let ends = operand(&w[0].1) || matches!(w[0].1.as_str(), ")" | "]" | "}");
        if ends && operand(&w[1].1) && w[0].1 != "offset" {
            let t = &w[1].1;
            let what = if t.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
                "number"
            } else {
                "identifier"
            };
            return Some((w[1].0, format!("unexpected {what} \"{t}\"")));
        }
    }
    None
}

fn find_from(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    (from..hay.len()).find(|&i| hay[i..].starts_with(needle))
}

/// Offset of the quote that opens a string never closed.
fn code_start_of_unclosed(q: &str, quote: u8) -> Option<usize> {
    let b = q.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            c @ (b'"' | b'\'' | b'`') => {
                let mut j = i + 1;
                while j < b.len() && b[j] != c {
                    j += if b[j] == b'\\' && c != b'`' { 2 } else { 1 };
                }
                if j >= b.len() && c == quote {
                    return Some(i);
                }
                i = j + 1;
            }
            _ => i += 1,
        }
    }
    None
}

/// The label name of the matcher whose pattern is `re`.
fn matcher_at(q: &str, re: &str) -> Option<usize> {
    let b = q.as_bytes();
    for quote in ['"', '\'', '`'] {
        for op in ["=~", "!~"] {
            let lit = format!("{op}{quote}{re}{quote}");
            let alt = format!("{op} {quote}{re}{quote}");
            if let Some(p) = q.find(&lit).or_else(|| q.find(&alt)) {
                let mut i = p;
                while i > 0 && b[i - 1].is_ascii_whitespace() {
                    i -= 1;
                }
                while i > 0 && is_ident(b[i - 1]) {
                    i -= 1;
                }
                return Some(i);
            }
        }
    }
    None
}

/// The expression (or the parameter) of the first aggregation in the text, grouping
/// clauses before the parentheses (`sum by (le) (…)`) skipped.
fn aggregation_arg(q: &str, code: &[u8], param: bool) -> Option<usize> {
    const OPS: [&str; 12] = [
        "sum",
        "avg",
        "count",
        "min",
        "max",
        "group",
        "stddev",
        "stdvar",
        "topk",
        "bottomk",
        "count_values",
        "quantile",
    ];
    let skip_ws = |mut i: usize| {
        while i < code.len() && code[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    let open_of = |c: usize, op: &str| -> Option<usize> {
        let mut i = skip_ws(c + op.len());
        for word in ["by", "without"] {
            if code[i..].starts_with(word.as_bytes())
                && !code.get(i + word.len()).copied().is_some_and(is_ident)
            {
                i = skip_ws(i + word.len());
                let close = i + code[i..].iter().position(|b| *b == b')')?;
                i = skip_ws(close + 1);
            }
        }
        (code.get(i) == Some(&b'(')).then_some(i)
    };
    let (c, open) = OPS
        .iter()
        .flat_map(|op| {
            (0..code.len())
                .filter(|&i| {
                    code[i..].starts_with(op.as_bytes())
                        && (i == 0 || !is_ident(code[i - 1]))
                        && !code.get(i + op.len()).copied().is_some_and(is_ident)
                })
                .filter_map(move |i| open_of(i, op).map(|o| (i, o)))
        })
        .min()?;
    let _ = c;
    let args = args_of(q, code, open);
    let a = if param { args.first() } else { args.last() }?;
    Some(a.0)
}

/// The first `[` that follows something other than a selector (a paren group, another
/// range, a duration).
fn range_misplaced(code: &[u8]) -> Option<usize> {
    for (i, &c) in code.iter().enumerate() {
        if c != b'[' {
            continue;
        }
        let mut j = i;
        while j > 0 && code[j - 1].is_ascii_whitespace() {
            j -= 1;
        }
        if j == 0 {
            return Some(i);
        }
        let prev = code[j - 1];
        if prev == b'}' {
            continue;
        }
        if is_ident(prev) {
            let mut k = j;
            while k > 0 && is_ident(code[k - 1]) {
                k -= 1;
            }
            if !code[k].is_ascii_digit() {
                continue;
            }
        }
        return Some(i);
    }
    None
}

/// Where the unexpected `tok` stands in the first label matching braces.
fn label_token_at(code: &[u8], tok: &str) -> Option<usize> {
    let open = code.iter().position(|b| *b == b'{')?;
    let t = tok.as_bytes().first().copied()?;
    (open + 1..code.len()).find(|&i| {
        code[i] == t
            && match t {
                // `==`, `!==`, `=~=`: an `=` right after an operator.
                b'=' => {
                    i > 0 && matches!(code[i - 1], b'=' | b'~' | b'!') && {
                        let mut k = i - 1;
                        while k > open && matches!(code[k - 1], b'=' | b'~' | b'!') {
                            k -= 1;
                        }
                        i - k >= 2 || code[i - 1] == b'='
                    }
                }
                b',' => {
                    let mut k = i;
                    while k > open + 1 && code[k - 1].is_ascii_whitespace() {
                        k -= 1;
                    }
                    matches!(code[k - 1], b'{' | b',')
                }
                _ => true,
            }
    })
}

/// The full text Prometheus 2.42 gives a query that does not parse.
pub fn parse_error(q: &str, msg: &str) -> String {
    let (at, msg) = reword(q, msg);
    let (line, col) = line_col(q, at);
    format!("{line}:{col}: parse error: {msg}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(q: &str) -> String {
        match promql_parser::parser::parse(q) {
            Ok(_) => panic!("{q} parsed"),
            Err(e) => parse_error(q, &e),
        }
    }

    /// Texts Debian's Prometheus 2.42 answers for these queries (compat/prometheus checks
    /// the live ones).
    #[test]
    fn worded_and_placed_as_2_42() {
        for (q, want) in [
            ("sum(", "1:5: parse error: unclosed left parenthesis"),
            ("up +", "1:5: parse error: unexpected end of input"),
            ("rate(up)", "1:6: parse error: expected type range vector in call to function \"rate\", got instant vector"),
            ("sort(up[5m])", "1:6: parse error: expected type instant vector in call to function \"sort\", got range vector"),
            ("vector(\"a\")", "1:8: parse error: expected type scalar in call to function \"vector\", got string"),
            ("sum(up[5m])", "1:5: parse error: expected type instant vector in aggregation expression, got range vector"),
            ("topk(\"a\", up)", "1:6: parse error: expected type scalar in aggregation parameter, got string"),
            ("count_values(1, up)", "1:14: parse error: expected type string in aggregation parameter, got scalar"),
            ("foo(up)", "1:1: parse error: unknown function with name \"foo\""),
            ("abs()", "1:1: parse error: expected 1 argument(s) in call to \"abs\", got 0"),
            ("up{job=~\"(\"}", "1:4: parse error: error parsing regexp: missing closing ): `^(?:()$`"),
            ("up[5m] offset 1m [1m]", "1:18: parse error: ranges only allowed for vector selectors"),
            ("(up)[5m][1m]", "1:5: parse error: ranges only allowed for vector selectors"),
            ("0x", "1:1: parse error: error parsing number: strconv.ParseFloat: parsing \"0x\": invalid syntax"),
            ("`raw", "1:1: parse error: unterminated raw string"),
            ("up{,}", "1:4: parse error: unexpected \",\" in label matching, expected identifier or \"}\""),
            ("up{job==\"a\"}", "1:8: parse error: unexpected \"=\" in label matching, expected string"),
            ("up{job}", "1:7: parse error: unexpected \"}\" in label matching, expected label matching operator"),
            ("up and 1", "1:1: parse error: set operator \"and\" not allowed in binary scalar expression"),
            ("1 == bool", "1:10: parse error: unexpected end of input"),
            ("1 2", "1:3: parse error: unexpected number \"2\""),
            ("sum(up) keep", "1:9: parse error: unexpected identifier \"keep\""),
        ] {
            assert_eq!(err(q), want, "{q}");
        }
        assert_eq!(
            go_regexp_error("a{2,1}").as_deref(),
            Some("error parsing regexp: invalid repeat count: `{2,1}`")
        );
        assert_eq!(line_col("up +\n  foo(", 11), (2, 7));
    }
}
