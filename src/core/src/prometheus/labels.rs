//! Label sets ↔ OpenTSDB metric + tags.
//!
//! `__name__` is the metric, every other label a tag. OpenTSDB names allow ASCII letters and
//! digits, `-_./` and Unicode letters; everything else is escaped as `_.HH` (two uppercase hex
//! digits per UTF-8 byte). The introducer `_.` itself is escaped when it occurs literally (its
//! `_` becomes `_.5F`), so decoding is exact. Typical Prometheus names (`[a-zA-Z0-9_]`) and
//! typical OpenTSDB names (`cpu.usage_user`) are left as they are, so series written through
//! OpenTSDB read back under their own names.
//!
//! Empty label values mean "label absent" in Prometheus and are dropped. A series with no label
//! besides `__name__` gets the placeholder tag `_.labels=none` (OpenTSDB requires a tag); no
//! escaped name can collide with it, since `_.` is only ever followed by hex digits.

use std::borrow::Cow;

pub const METRIC_NAME: &str = "__name__";
/// Placeholder tag of a series that has only `__name__`.
pub const PLACEHOLDER_TAGK: &str = "_.labels";
pub const PLACEHOLDER_TAGV: &str = "none";

fn plain(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(c, '-' | '.' | '/' | '_')
        || (!c.is_ascii() && (c as u32) < 0x10000 && c.is_alphabetic())
}

/// Escapes one label name or value into an OpenTSDB-valid name (non-empty input).
pub fn escape(s: &str) -> Cow<'_, str> {
    let b = s.as_bytes();
    let fast = b.iter().enumerate().all(|(i, &c)| {
        (c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'/'))
            || (c == b'_' && b.get(i + 1) != Some(&b'.'))
    });
    if fast {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '_' && chars.peek() == Some(&'.') {
            out.push_str("_.5F");
        } else if plain(c) {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for byte in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("_.{byte:02X}"));
            }
        }
    }
    Cow::Owned(out)
}

fn hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Reverses [`escape`]. A `_.` not followed by two uppercase hex digits (possible only in names
/// written through other protocols) is kept literally.
pub fn unescape(s: &str) -> Cow<'_, str> {
    if !s.contains("_.") {
        return Cow::Borrowed(s);
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'_' && b.get(i + 1) == Some(&b'.') {
            if let (Some(h), Some(l)) = (
                b.get(i + 2).and_then(|&c| hex(c)),
                b.get(i + 3).and_then(|&c| hex(c)),
            ) {
                out.push(h << 4 | l);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    match String::from_utf8(out) {
        Ok(s) => Cow::Owned(s),
        Err(e) => Cow::Owned(String::from_utf8_lossy(e.as_bytes()).into_owned()),
    }
}

/// Why a label set cannot be stored.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LabelError {
    #[error("series {0} has no __name__ label")]
    NoName(String),
    #[error("series {0} has an empty label name")]
    EmptyName(String),
    #[error("series {series} has the label {name:?} more than once")]
    Duplicate { series: String, name: String },
    #[error("series {series} has {count} labels besides __name__, more than prometheus.max_tags = {max}")]
    TooMany {
        series: String,
        count: usize,
        max: usize,
    },
}

/// A Prometheus-style rendering of a label set, for error messages.
pub fn display(labels: &[(&str, &str)]) -> String {
    let name = labels
        .iter()
        .find(|(k, _)| *k == METRIC_NAME)
        .map(|(_, v)| *v)
        .unwrap_or("");
    let rest: Vec<String> = labels
        .iter()
        .filter(|(k, _)| *k != METRIC_NAME)
        .map(|(k, v)| format!("{k}={v:?}"))
        .collect();
    format!("{name}{{{}}}", rest.join(", "))
}

/// The stored form of one series: escaped metric and tags (sorted by tag key), borrowing from
/// the request where no escaping was needed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StoredSeries<'a> {
    pub metric: Cow<'a, str>,
    pub tags: Vec<(Cow<'a, str>, Cow<'a, str>)>,
}

/// Label set (any order) → metric + tags.
pub fn to_stored<'a>(
    labels: &[(&'a str, &'a str)],
    max_tags: usize,
) -> Result<StoredSeries<'a>, LabelError> {
    let mut metric = None;
    let mut names = 0;
    let mut tags: Vec<(Cow<'a, str>, Cow<'a, str>)> = Vec::with_capacity(labels.len());
    for &(k, v) in labels {
        if k.is_empty() {
            return Err(LabelError::EmptyName(display(labels)));
        }
        if k == METRIC_NAME {
            names += 1;
            if !v.is_empty() {
                metric = Some(escape(v));
            }
        } else if !v.is_empty() {
            tags.push((escape(k), escape(v)));
        }
    }
    if names > 1 {
        return Err(LabelError::Duplicate {
            series: display(labels),
            name: METRIC_NAME.into(),
        });
    }
    let metric = metric.ok_or_else(|| LabelError::NoName(display(labels)))?;
    if tags.len() > max_tags {
        return Err(LabelError::TooMany {
            series: display(labels),
            count: tags.len(),
            max: max_tags,
        });
    }
    if tags.is_empty() {
        tags.push((
            Cow::Borrowed(PLACEHOLDER_TAGK),
            Cow::Borrowed(PLACEHOLDER_TAGV),
        ));
    }
    // Escaping is injective, so a repeated label name shows up as neighbours once sorted.
    if !tags.windows(2).all(|w| w[0].0 < w[1].0) {
        tags.sort_unstable();
        if let Some(w) = tags.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(LabelError::Duplicate {
                series: display(labels),
                name: unescape(&w[0].0).into_owned(),
            });
        }
    }
    Ok(StoredSeries { metric, tags })
}

/// A Prometheus label set, sorted by name (the order Prometheus keeps them in).
pub type Labels = Vec<(String, String)>;

/// Metric + tags as stored → label set, sorted by name.
pub fn from_stored<'a>(metric: &str, tags: impl IntoIterator<Item = (&'a str, &'a str)>) -> Labels {
    let mut out: Labels = vec![(METRIC_NAME.to_string(), unescape(metric).into_owned())];
    for (k, v) in tags {
        if k == PLACEHOLDER_TAGK {
            continue;
        }
        out.push((unescape(k).into_owned(), unescape(v).into_owned()));
    }
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn valid_opentsdb(s: &str) -> bool {
        tsgate_opentsdb::names::validate(s, "name", "").is_ok()
    }

    #[test]
    fn common_names_are_unchanged() {
        for s in [
            "node_cpu_seconds_total",
            "cpu.usage_user",
            "web-01",
            "/api/v1/query",
            "__name__",
            "0.5",
            "Ünïcödé",
        ] {
            assert!(
                matches!(escape(s), Cow::Borrowed(_)) || escape(s) == s,
                "{s}"
            );
            assert_eq!(unescape(s), s);
        }
    }

    #[test]
    fn escapes_are_readable_and_valid() {
        assert_eq!(escape("job:rate5m"), "job_.3Arate5m");
        assert_eq!(escape("a b"), "a_.20b");
        assert_eq!(escape("x_.y"), "x_.5F.y");
        assert_eq!(escape("+Inf"), "_.2BInf");
        assert_eq!(escape("日本"), "日本");
        assert_eq!(escape("🙂"), "_.F0_.9F_.99_.82");
        for s in [
            "job:rate5m",
            "a b",
            "x_.y",
            "+Inf",
            "🙂",
            "line\nbreak",
            "a=\"b\"",
        ] {
            assert!(valid_opentsdb(&escape(s)), "{s} -> {}", escape(s));
        }
    }

    #[test]
    fn label_sets_round_trip_with_placeholder_and_limit() {
        let s = to_stored(&[("__name__", "up")], 8).unwrap();
        assert_eq!(
            s.tags,
            vec![(
                Cow::Borrowed(PLACEHOLDER_TAGK),
                Cow::Borrowed(PLACEHOLDER_TAGV)
            )]
        );
        let back = from_stored(&s.metric, s.tags.iter().map(|(k, v)| (&**k, &**v)));
        assert_eq!(back, vec![("__name__".to_string(), "up".to_string())]);

        let labels = [
            ("job", "node"),
            ("__name__", "a:b"),
            ("empty", ""),
            ("path", "/x y"),
        ];
        let s = to_stored(&labels, 8).unwrap();
        assert_eq!(s.metric, "a_.3Ab");
        let back = from_stored(&s.metric, s.tags.iter().map(|(k, v)| (&**k, &**v)));
        let want: Labels = [("__name__", "a:b"), ("job", "node"), ("path", "/x y")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(back, want);

        assert!(matches!(
            to_stored(&[("job", "x")], 8),
            Err(LabelError::NoName(_))
        ));
        assert!(matches!(
            to_stored(&[("__name__", "m"), ("a", "1"), ("a", "2")], 8),
            Err(LabelError::Duplicate { .. })
        ));
        let many: Vec<(String, String)> = (0..9)
            .map(|i| (format!("l{i}"), "v".to_string()))
            .chain([("__name__".to_string(), "m".to_string())])
            .collect();
        let many: Vec<(&str, &str)> = many.iter().map(|(k, v)| (&**k, &**v)).collect();
        let err = to_stored(&many, 8).unwrap_err().to_string();
        assert!(
            err.contains("9 labels") && err.contains("prometheus.max_tags = 8"),
            "{err}"
        );
    }

    proptest! {
        #[test]
        fn escape_is_reversible_and_valid(s in "\\PC{1,24}|[_.:a-z]{1,12}") {
            let e = escape(&s);
            prop_assert_eq!(unescape(&e), s.as_str());
            prop_assert!(valid_opentsdb(&e), "{:?} -> {:?}", s, e);
        }
    }
}
