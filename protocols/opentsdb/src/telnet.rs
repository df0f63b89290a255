//! The telnet-style line protocol (spec §7) and the `tsdb import` line format.
//!
//! Lines are split on single spaces exactly like OpenTSDB's `Tags.splitString(line, ' ')`:
//! consecutive spaces give empty words and, unlike Java's `String.split`, trailing empty words
//! are kept (`"put m 1 1 "` has 5 words). Callers should decode the raw line bytes as
//! ISO-8859-1 (see [`decode_latin1`]) to see exactly the characters OpenTSDB sees.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use crate::javamap;
use crate::point::{not_finite_message, validate_point, DataPoint, Limits};
use crate::value::{parse_long, parse_value, Value, ValueError};

/// A parsed telnet command. Only `put` carries a payload; arguments of the others are ignored,
/// as OpenTSDB does. Any other first word (including the empty word of an empty line, which
/// OpenTSDB answers with ``unknown command: .  Try `help'.``) is `Unknown`.
#[derive(Debug, Clone, PartialEq)]
pub enum Command<'a> {
    Put(DataPoint<'a>),
    Version,
    Stats,
    Help,
    DropCaches,
    Exit,
    Status,
    Diediedie,
    Unknown(&'a str),
}

/// A telnet error; `Display`/[`TelnetError::line`] give OpenTSDB's full response line without
/// the trailing `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TelnetError {
    /// `put: illegal argument: <msg>` (Java `IllegalArgumentException`).
    IllegalArgument(String),
    /// `put: invalid value: <msg>` (Java `NumberFormatException`).
    InvalidValue(String),
    /// ``unknown command: <word0>.  Try `help'.`` – for the server to render `Command::Unknown`.
    UnknownCommand(String),
}

impl TelnetError {
    pub fn line(&self) -> String {
        self.to_string()
    }

    /// The bare message (for `UnknownCommand`, the word).
    pub fn message(&self) -> &str {
        match self {
            TelnetError::IllegalArgument(m)
            | TelnetError::InvalidValue(m)
            | TelnetError::UnknownCommand(m) => m,
        }
    }
}

impl fmt::Display for TelnetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TelnetError::IllegalArgument(m) => write!(f, "put: illegal argument: {m}"),
            TelnetError::InvalidValue(m) => write!(f, "put: invalid value: {m}"),
            TelnetError::UnknownCommand(w) => write!(f, "unknown command: {w}.  Try `help'."),
        }
    }
}

impl std::error::Error for TelnetError {}

fn illegal(msg: String) -> TelnetError {
    TelnetError::IllegalArgument(msg)
}

/// Decodes a line as ISO-8859-1 (one char per byte), borrowing when it is pure ASCII.
pub fn decode_latin1(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) if s.is_ascii() => Cow::Borrowed(s),
        _ => Cow::Owned(bytes.iter().map(|&b| char::from(b)).collect()),
    }
}

/// The `help` response: `available commands: ` + each name followed by a space + `\n`.
pub fn help_line(cmds: &[&str]) -> String {
    let mut s = String::from("available commands: ");
    for c in cmds {
        s.push_str(c);
        s.push(' ');
    }
    s.push('\n');
    s
}

fn word_count(line: &str) -> usize {
    line.bytes().filter(|&b| b == b' ').count() + 1
}

/// Parses one line (terminator already stripped).
pub fn parse_line<'a>(line: &'a str, limits: &Limits) -> Result<Command<'a>, TelnetError> {
    let word0 = line.split(' ').next().unwrap_or(line);
    Ok(match word0 {
        "put" => {
            let n = word_count(line);
            if n < 5 {
                return Err(illegal(format!(
                    "not enough arguments (need least 4, got {})",
                    n - 1
                )));
            }
            let mut words = line.split(' ');
            words.next();
            Command::Put(parse_fields(words, limits)?)
        }
        "version" => Command::Version,
        "stats" => Command::Stats,
        "help" => Command::Help,
        "dropcaches" => Command::DropCaches,
        "exit" => Command::Exit,
        "status" => Command::Status,
        "diediedie" => Command::Diediedie,
        other => Command::Unknown(other),
    })
}

/// Parses a `tsdb import` line: a `put` line without the leading `put` word
/// (`metric ts value k=v ...`), with the same checks and error texts as `put`.
pub fn parse_import_line<'a>(line: &'a str, limits: &Limits) -> Result<DataPoint<'a>, TelnetError> {
    let n = word_count(line);
    if n < 4 {
        return Err(illegal(format!(
            "not enough arguments (need least 4, got {n})"
        )));
    }
    parse_fields(line.split(' '), limits)
}

/// A `put` line cut into its series text and its sample, for callers that remember series
/// texts already accepted: `series` is the metric and the tag words exactly as written, so
/// two lines with the same `series` bytes name the same series and pass the same name checks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PutParts<'a> {
    pub metric: &'a str,
    /// The tag words as written, after the value (may hold extra spaces).
    pub tags: &'a str,
    pub timestamp: u64,
    pub value: Value,
}

/// Cuts a `put` line when its timestamp and value pass every check [`parse_line`] makes of
/// them; `None` for anything else (other commands, malformed or rejected samples), which the
/// caller hands to [`parse_line`] for the answer. When a line with the same metric and tag
/// words was accepted by [`parse_line`] (with the same `Limits`), this line is accepted too,
/// with this timestamp and value.
pub fn split_put(line: &str) -> Option<PutParts<'_>> {
    let rest = line.strip_prefix("put ")?;
    let (metric, rest) = word(rest)?;
    let (ts_word, rest) = word(rest)?;
    let (value_word, tags) = word(rest)?;
    if metric.is_empty() || value_word.is_empty() || tags.is_empty() {
        return None;
    }
    let ts = if ts_word.contains('.') {
        parse_long(&ts_word.replace('.', ""))
    } else {
        parse_long(ts_word)
    }
    .ok()?;
    if ts <= 0 {
        return None;
    }
    let value = parse_value(value_word).ok()?;
    let timestamp = ts as u64;
    if !value.is_finite()
        || (crate::point::is_ms_timestamp(timestamp) && timestamp > crate::point::MAX_MS_TIMESTAMP)
    {
        return None;
    }
    Some(PutParts {
        metric,
        tags,
        timestamp,
        value,
    })
}

/// The text before the first space and the text after it. A byte loop: these words are a
/// few bytes long, where `split_once(' ')`'s searcher cost more to set up than to run.
fn word(s: &str) -> Option<(&str, &str)> {
    let at = s.bytes().position(|b| b == b' ')?;
    // A space is one byte, so both sides are whole characters.
    Some((&s[..at], &s[at + 1..]))
}

/// `metric ts value tags...` with OpenTSDB's checks in its order (spec §7.3).
pub(crate) fn parse_fields<'a>(
    mut words: impl Iterator<Item = &'a str>,
    limits: &Limits,
) -> Result<DataPoint<'a>, TelnetError> {
    // The callers guarantee at least three words.
    let metric = words.next().unwrap_or("");
    let ts_word = words.next().unwrap_or("");
    let value_word = words.next().unwrap_or("");
    if metric.is_empty() {
        return Err(illegal("empty metric name".into()));
    }
    // "1364410924.250" → all dots dropped → 1364410924250 (not ms-normalised, a quirk).
    let ts = if ts_word.contains('.') {
        parse_long(&ts_word.replace('.', ""))
    } else {
        parse_long(ts_word)
    }
    .map_err(|e| TelnetError::InvalidValue(e.to_string()))?;
    if ts <= 0 {
        return Err(illegal(format!("invalid timestamp: {ts}")));
    }
    if value_word.is_empty() {
        return Err(illegal("empty value".into()));
    }
    let tags = parse_tags(words)?;
    let value = parse_value(value_word).map_err(|e| match e {
        ValueError::NumberFormat(e) => TelnetError::InvalidValue(e.to_string()),
        ValueError::NotFinite(m) => illegal(not_finite_message(&m, metric, ts)),
    })?;
    let p = DataPoint {
        metric,
        timestamp: ts as u64,
        value,
        tags,
    };
    validate_point(&p, limits).map_err(|e| illegal(e.to_string()))?;
    Ok(p)
}

/// Above this many tags, duplicate detection switches from a linear scan to a hash index so
/// hostile lines cannot cause quadratic work.
const LINEAR_TAGS: usize = 32;

/// `Tags.parse` over each non-empty word: exactly one `=` with both sides non-empty; a repeated
/// key is fine with the same value and an error with a different one.
fn parse_tags<'a>(
    words: impl Iterator<Item = &'a str>,
) -> Result<Vec<(&'a str, &'a str)>, TelnetError> {
    let mut tags: Vec<(&'a str, &'a str)> = Vec::with_capacity(8);
    let mut index: Option<HashMap<&'a str, usize>> = None;
    for word in words {
        if word.is_empty() {
            continue;
        }
        let (k, v) = match word.split_once('=') {
            Some((k, v)) if !k.is_empty() && !v.is_empty() && !v.contains('=') => (k, v),
            _ => return Err(illegal(format!("invalid tag: {word}"))),
        };
        let existing = match &index {
            Some(ix) => ix.get(k).copied(),
            None => tags.iter().position(|t| t.0 == k),
        };
        if let Some(i) = existing {
            if tags[i].1 == v {
                continue;
            }
            return Err(illegal(format!(
                "duplicate tag: {word}, tags={}",
                javamap::format_pairs(&tags)
            )));
        }
        tags.push((k, v));
        if let Some(ix) = &mut index {
            ix.insert(k, tags.len() - 1);
        } else if tags.len() > LINEAR_TAGS {
            index = Some(tags.iter().enumerate().map(|(i, t)| (t.0, i)).collect());
        }
    }
    Ok(tags)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;
    use proptest::prelude::*;

    /// Lines near the valid ones: odd spacing, bad numbers, odd tags.
    fn near_put() -> impl Strategy<Value = String> {
        let word = prop::sample::select(vec![
            "",
            " ",
            "sys.cpu",
            "m",
            "1356998400",
            "1356998400.250",
            "1356998400123",
            "99999999999999",
            "0",
            "-5",
            "42",
            "4.5e3",
            "NaN",
            "Inf",
            "0x10",
            "host=a",
            "host=b",
            "dc=x",
            "host=",
            "=a",
            "a=b=c",
            "ho!st=a",
            "host=a host=b",
        ]);
        prop::collection::vec(word, 0..8).prop_map(|w| format!("put {}", w.join(" ")))
    }

    proptest! {
        #[test]
        fn split_put_agrees_with_parse_line(line in near_put(), other in near_put()) {
            let limits = Limits::default();
            if let Some(parts) = split_put(&line) {
                // Same series text as an accepted line: accepted with this sample.
                if let Some(o) = split_put(&other) {
                    let same = format!("put {} {} {} {}", o.metric, line.split(' ').nth(2).unwrap(), line.split(' ').nth(3).unwrap(), o.tags);
                    if let Ok(Command::Put(p)) = parse_line(&other, &limits) {
                        let q = match parse_line(&same, &limits) { Ok(Command::Put(q)) => q, r => panic!("{same}: {r:?} (from {other})") };
                        prop_assert_eq!((q.metric, q.timestamp, q.value, &q.tags), (p.metric, parts.timestamp, parts.value, &p.tags));
                    }
                }
                // And the line itself parses to the same sample, or fails on its names alone.
                if let Ok(Command::Put(p)) = parse_line(&line, &limits) {
                    prop_assert_eq!((p.metric, p.timestamp, p.value), (parts.metric, parts.timestamp, parts.value));
                }
            }
        }
    }

    fn put_err(line: &str) -> String {
        parse_line(line, &Limits::default()).unwrap_err().line()
    }

    fn put_ok(line: &str) -> DataPoint<'_> {
        match parse_line(line, &Limits::default()) {
            Ok(Command::Put(p)) => p,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn spec_examples() {
        assert_eq!(
            put_err("put"),
            "put: illegal argument: not enough arguments (need least 4, got 0)"
        );
        assert_eq!(
            put_err("put metric.foo notatime 42 host=web01"),
            "put: invalid value: Invalid character 'n' in notatime"
        );
        assert_eq!(
            put_err("put sys.cpu 1356998400 42 host"),
            "put: illegal argument: invalid tag: host"
        );
        assert_eq!(
            put_err("put sys.cpu 1356998400 42 ho!st=a"),
            "put: illegal argument: Invalid tag name with value [a] (\"ho!st\"): illegal character: !"
        );
        // Passes parsing; `new.metric` being unknown is the storage layer's business.
        let p = put_ok("put new.metric 1479496160 1.3e3 host=web01");
        assert_eq!(p.value, Value::F32(1300.0));
    }

    #[test]
    fn good_put() {
        let p = put_ok("put sys.cpu.user 1356998400 42.5 host=webserver01 cpu=0");
        assert_eq!(p.metric, "sys.cpu.user");
        assert_eq!(p.timestamp, 1356998400);
        assert_eq!(p.value, Value::F32(42.5));
        assert_eq!(p.tags, vec![("host", "webserver01"), ("cpu", "0")]);
        let p = put_ok("put m 1 -7 a=b  c=d a=b ");
        assert_eq!(p.value, Value::Int(-7));
        assert_eq!(p.tags, vec![("a", "b"), ("c", "d")]);
    }

    #[test]
    fn word_splitting_keeps_trailing_empties() {
        assert_eq!(
            put_err("put "),
            "put: illegal argument: not enough arguments (need least 4, got 1)"
        );
        assert_eq!(
            put_err("put m 1 1"),
            "put: illegal argument: not enough arguments (need least 4, got 3)"
        );
        // 5 words, the last empty: passes the count, then has no tag.
        assert_eq!(
            put_err("put m 1 1 "),
            "put: illegal argument: Need at least one tag (metric=m, tags={})"
        );
        assert_eq!(
            put_err("put  1 1 a=b"),
            "put: illegal argument: empty metric name"
        );
        assert_eq!(put_err("put m  1 a=b"), "put: invalid value: Empty string");
        assert_eq!(
            put_err("put m 1  a=b"),
            "put: illegal argument: empty value"
        );
        // A double space shifts the words: "1" becomes the value, "" the timestamp.
        assert_eq!(
            put_err("put m  1 1 a=b"),
            "put: invalid value: Empty string"
        );
    }

    #[test]
    fn timestamps() {
        assert_eq!(
            put_ok("put m 1364410924.250 1 a=b").timestamp,
            1364410924250
        );
        assert_eq!(put_ok("put m 1364410924.5 1 a=b").timestamp, 13644109245);
        assert_eq!(put_ok("put m 1.2.3 1 a=b").timestamp, 123);
        assert_eq!(
            put_err("put m 1.x 1 a=b"),
            "put: invalid value: Invalid character 'x' in 1x"
        );
        assert_eq!(put_err("put m . 1 a=b"), "put: invalid value: Empty string");
        assert_eq!(
            put_err("put m 0 1 a=b"),
            "put: illegal argument: invalid timestamp: 0"
        );
        assert_eq!(
            put_err("put m -5 1 a=b"),
            "put: illegal argument: invalid timestamp: -5"
        );
        assert_eq!(
            put_err("put m 0.0 1 a=b"),
            "put: illegal argument: invalid timestamp: 0"
        );
        assert_eq!(
            put_err("put m + 1 a=b"),
            "put: invalid value: Just a sign, no value: +"
        );
        assert_eq!(
            put_err("put m 10000000000000 42 a=b"),
            "put: illegal argument: bad timestamp=10000000000000 when trying to add value=[42]/0 to metric=m, tags={a=b}"
        );
        assert_eq!(put_ok("put m 9999999999999 1 a=b").timestamp, 9999999999999);
    }

    #[test]
    fn tags() {
        assert_eq!(
            put_err("put m 1 1 a="),
            "put: illegal argument: invalid tag: a="
        );
        assert_eq!(
            put_err("put m 1 1 =b"),
            "put: illegal argument: invalid tag: =b"
        );
        assert_eq!(
            put_err("put m 1 1 a=b=c"),
            "put: illegal argument: invalid tag: a=b=c"
        );
        assert_eq!(
            put_err("put m 1 1 ="),
            "put: illegal argument: invalid tag: ="
        );
        assert_eq!(
            put_err("put m 1 1 host=a dc=x host=b"),
            "put: illegal argument: duplicate tag: host=b, tags={host=a, dc=x}"
        );
        // Tag syntax is checked before the value.
        assert_eq!(
            put_err("put m 1 x host"),
            "put: illegal argument: invalid tag: host"
        );
        let nine = "put m 1 1 a=1 b=2 c=3 d=4 e=5 f=6 g=7 h=8 i=9";
        assert_eq!(
            put_err(nine),
            "put: illegal argument: Too many tags: 9 maximum allowed: 8, tags: {a=1, b=2, c=3, d=4, e=5, f=6, g=7, h=8, i=9}"
        );
        let l = Limits {
            max_tags: 9,
            allow_special: String::new(),
        };
        assert!(parse_line(nine, &l).is_ok());
    }

    #[test]
    fn values() {
        assert_eq!(
            put_err("put m 1 notanum a=b"),
            "put: invalid value: Invalid character 'n' in notanum"
        );
        assert_eq!(
            put_err("put m 1 notanumber a=b"),
            "put: invalid value: For input string: \"notanumber\""
        );
        assert_eq!(
            put_err("put m 1 NaN a=b"),
            "put: invalid value: Invalid character 'N' in NaN"
        );
        assert_eq!(
            put_err("put m 1 1.2.3 a=b"),
            "put: invalid value: multiple points"
        );
        assert_eq!(
            put_err("put m 1 1e400 a=b"),
            "put: illegal argument: value is NaN or Infinite: Infinity for metric=m timestamp=1"
        );
        assert_eq!(put_ok("put m 1 12.3 a=b").value, Value::F64(12.3));
        // The value is classified before names are validated.
        assert_eq!(
            put_err("put m! 1 x a=b"),
            "put: invalid value: Invalid character 'x' in x"
        );
        assert_eq!(
            put_err("put m! 1 1 a=b"),
            "put: illegal argument: Invalid metric name (\"m!\"): illegal character: !"
        );
    }

    #[test]
    fn other_commands() {
        let l = Limits::default();
        assert_eq!(parse_line("version", &l), Ok(Command::Version));
        assert_eq!(parse_line("stats extra args", &l), Ok(Command::Stats));
        assert_eq!(parse_line("help", &l), Ok(Command::Help));
        assert_eq!(parse_line("dropcaches", &l), Ok(Command::DropCaches));
        assert_eq!(parse_line("exit", &l), Ok(Command::Exit));
        assert_eq!(parse_line("status", &l), Ok(Command::Status));
        assert_eq!(parse_line("diediedie", &l), Ok(Command::Diediedie));
        assert_eq!(parse_line("PUT m 1 1 a=b", &l), Ok(Command::Unknown("PUT")));
        assert_eq!(parse_line("", &l), Ok(Command::Unknown("")));
        assert_eq!(parse_line(" put", &l), Ok(Command::Unknown("")));
        assert_eq!(
            TelnetError::UnknownCommand("foo".into()).line(),
            "unknown command: foo.  Try `help'."
        );
        assert_eq!(
            TelnetError::UnknownCommand("".into()).to_string(),
            "unknown command: .  Try `help'."
        );
    }

    #[test]
    fn help() {
        assert_eq!(
            help_line(&["put", "stats"]),
            "available commands: put stats \n"
        );
        assert_eq!(help_line(&[]), "available commands: \n");
    }

    #[test]
    fn import_lines() {
        let l = Limits::default();
        let p = parse_import_line("sys.cpu 1356998400 42 host=a", &l).unwrap();
        assert_eq!(
            (p.metric, p.timestamp, p.value),
            ("sys.cpu", 1356998400, Value::Int(42))
        );
        assert_eq!(p.tags, vec![("host", "a")]);
        assert_eq!(
            parse_import_line("sys.cpu 1356998400 42", &l)
                .unwrap_err()
                .line(),
            "put: illegal argument: not enough arguments (need least 4, got 3)"
        );
        assert_eq!(
            parse_import_line("sys.cpu x 42 host=a", &l)
                .unwrap_err()
                .line(),
            "put: invalid value: Invalid character 'x' in x"
        );
    }

    #[test]
    fn latin1() {
        assert!(matches!(decode_latin1(b"put m"), Cow::Borrowed("put m")));
        assert_eq!(decode_latin1("é".as_bytes()), "Ã©");
        assert_eq!(decode_latin1(&[0x66, 0xE9]), "fé");
        let line = decode_latin1("put m 1 1 host=caf\u{e9}".as_bytes()).into_owned();
        assert_eq!(
            put_err(&line),
            "put: illegal argument: Invalid tag value with key [host] (\"cafÃ©\"): illegal character: ©"
        );
    }

    #[test]
    fn many_duplicate_checks_use_index() {
        let mut line = String::from("put m 1 1");
        for i in 0..100 {
            line.push_str(&format!(" k{i}=v"));
        }
        line.push_str(" k5=v k7=w");
        assert!(put_err(&line).starts_with("put: illegal argument: duplicate tag: k7=w, tags={"));
    }

    proptest! {
        #[test]
        fn never_panics(s in any::<String>()) {
            let _ = parse_line(&s, &Limits::default());
            let _ = parse_import_line(&s, &Limits::default());
        }

        #[test]
        fn never_panics_put_like(s in "put [a-z.!]{0,4} [0-9.+-]{0,12} [0-9.eEnaN+-]{0,8}( [a-z=!]{0,5}){0,10} ?") {
            let _ = parse_line(&s, &Limits::default());
        }

        #[test]
        fn valid_puts_round_trip(
            metric in "[a-zA-Z0-9._/-]{1,20}",
            ts in 1u64..=9_999_999_999_999,
            v in any::<i64>(),
            tags in proptest::collection::btree_map("[a-z]{1,8}", "[a-z0-9]{1,8}", 1..=8),
        ) {
            let mut line = format!("put {metric} {ts} {v}");
            for (k, tv) in &tags {
                line.push_str(&format!(" {k}={tv}"));
            }
            let p = match parse_line(&line, &Limits::default()) {
                Ok(Command::Put(p)) => p,
                other => panic!("{line}: {other:?}"),
            };
            prop_assert_eq!(p.metric, metric.as_str());
            prop_assert_eq!(p.timestamp, ts);
            prop_assert_eq!(p.value, Value::Int(v));
            let expect: Vec<(&str, &str)> = tags.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            prop_assert_eq!(p.tags, expect);
        }
    }
}
