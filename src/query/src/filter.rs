//! OpenTSDB 2.x tag filters: `literal_or`, `iliteral_or`, `not_literal_or`, `not_iliteral_or`,
//! `wildcard`, `iwildcard`, `regexp`, `not_key`, each with `groupBy`, plus the conversions of the
//! old `tags` map (`*`, `a|b`, values with `*`).

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FilterType {
    LiteralOr,
    IliteralOr,
    NotLiteralOr,
    NotIliteralOr,
    Wildcard,
    Iwildcard,
    Regexp,
    NotKey,
}

impl FilterType {
    pub fn parse(s: &str) -> Option<FilterType> {
        Some(match s.to_ascii_lowercase().as_str() {
            "literal_or" => FilterType::LiteralOr,
            "iliteral_or" => FilterType::IliteralOr,
            "not_literal_or" => FilterType::NotLiteralOr,
            "not_iliteral_or" => FilterType::NotIliteralOr,
            "wildcard" => FilterType::Wildcard,
            "iwildcard" => FilterType::Iwildcard,
            "regexp" => FilterType::Regexp,
            "not_key" => FilterType::NotKey,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            FilterType::LiteralOr => "literal_or",
            FilterType::IliteralOr => "iliteral_or",
            FilterType::NotLiteralOr => "not_literal_or",
            FilterType::NotIliteralOr => "not_iliteral_or",
            FilterType::Wildcard => "wildcard",
            FilterType::Iwildcard => "iwildcard",
            FilterType::Regexp => "regexp",
            FilterType::NotKey => "not_key",
        }
    }

    pub const ALL: [FilterType; 8] = [
        FilterType::LiteralOr,
        FilterType::IliteralOr,
        FilterType::NotLiteralOr,
        FilterType::NotIliteralOr,
        FilterType::Wildcard,
        FilterType::Iwildcard,
        FilterType::Regexp,
        FilterType::NotKey,
    ];

    /// `/api/config/filters` text.
    pub fn describe(self) -> (&'static str, &'static str) {
        match self {
            FilterType::LiteralOr => (
                "Accepts one or more exact values and matches if the series contains any of them. Multiple values can be included and must be separated by the | (pipe) character. The filter is case sensitive and will not allow characters that TSDB does not allow at write time.",
                "host=literal_or(web01),  host=literal_or(web01|web02|web03)  {\"type\":\"literal_or\",\"tagk\":\"host\",\"filter\":\"web01|web02|web03\",\"groupBy\":false}",
            ),
            FilterType::IliteralOr => (
                "Accepts one or more exact values and matches if the series contains any of them. Multiple values can be included and must be separated by the | (pipe) character. The filter is case insensitive and will not allow characters that TSDB does not allow at write time.",
                "host=iliteral_or(web01),  host=iliteral_or(web01|web02|web03)  {\"type\":\"iliteral_or\",\"tagk\":\"host\",\"filter\":\"web01|web02|web03\",\"groupBy\":false}",
            ),
            FilterType::NotLiteralOr => (
                "Accepts one or more exact values and matches if the series does NOT contain any of them. Multiple values can be included and must be separated by the | (pipe) character. The filter is case sensitive and will not allow characters that TSDB does not allow at write time.",
                "host=not_literal_or(web01),  host=not_literal_or(web01|web02|web03)  {\"type\":\"not_literal_or\",\"tagk\":\"host\",\"filter\":\"web01|web02|web03\",\"groupBy\":false}",
            ),
            FilterType::NotIliteralOr => (
                "Accepts one or more exact values and matches if the series does NOT contain any of them. Multiple values can be included and must be separated by the | (pipe) character. The filter is case insensitive and will not allow characters that TSDB does not allow at write time.",
                "host=not_iliteral_or(web01),  host=not_iliteral_or(web01|web02|web03)  {\"type\":\"not_iliteral_or\",\"tagk\":\"host\",\"filter\":\"web01|web02|web03\",\"groupBy\":false}",
            ),
            FilterType::Wildcard => (
                "Performs pre, post and in-fix glob matching of values. The globs are case sensitive and multiple wildcards can be used. The wildcard character is the * (asterisk). At least one wildcard must be present in the filter value. A wildcard by itself can be used as well to match on any value for the tag key.",
                "host=wildcard(web*),  host=wildcard(web*.tsdb.net)  {\"type\":\"wildcard\",\"tagk\":\"host\",\"filter\":\"web*.tsdb.net\",\"groupBy\":false}",
            ),
            FilterType::Iwildcard => (
                "Performs pre, post and in-fix glob matching of values. The globs are case insensitive and multiple wildcards can be used. The wildcard character is the * (asterisk). Case insensitivity is achieved by dropping all values to lower case. At least one wildcard must be present in the filter value. A wildcard by itself can be used as well to match on any value for the tag key.",
                "host=iwildcard(web*),  host=iwildcard(web*.tsdb.net)  {\"type\":\"iwildcard\",\"tagk\":\"host\",\"filter\":\"web*.tsdb.net\",\"groupBy\":false}",
            ),
            FilterType::Regexp => (
                "Provides full, POSIX compliant regular expression using the built in Java Pattern class. Note that an expression containing curly braces {} will not parse properly in URLs. If the pattern is not a valid regular expression then an exception will be raised.",
                "host=regexp(.*)  {\"type\":\"regexp\",\"tagk\":\"host\",\"filter\":\".*\",\"groupBy\":false}",
            ),
            FilterType::NotKey => (
                "Skips any time series with the given tag key, regardless of the value. This can be useful for situations where a metric has inconsistent tag sets. NOTE: The filter value must be null or an empty string.",
                "host=not_key()  {\"type\":\"not_key\",\"tagk\":\"host\",\"filter\":\"\",\"groupBy\":false}",
            ),
        }
    }
}

/// One tag filter, compiled.
/// A tag filter OpenTSDB would refuse, in its words.
#[derive(Debug, Clone, thiserror::Error)]
pub enum FilterError {
    #[error("Missing tag key")]
    MissingTagKey,
    #[error("Filter cannot be null or empty")]
    Empty,
    #[error("Filter must contain an asterisk")]
    NoWildcard(String),
    #[error("Filter must contain more than just a pipe")]
    JustAPipe,
    #[error("Invalid regular expression: {0}")]
    Regex(#[from] regex::Error),
    #[error("The filter value must be empty for not_key")]
    NotKeyValue,
    #[error("Filter must end with a ')': {0}")]
    NoCloseParen(String),
    #[error("Could not find a tag value filter of the type: {0}")]
    UnknownType(String),
}

#[derive(Debug, Clone)]
pub struct TagFilter {
    pub kind: FilterType,
    pub tagk: String,
    pub expr: String,
    pub group_by: bool,
    /// Literals (lower-cased for the case-insensitive types), or glob parts.
    literals: Vec<String>,
    regex: Option<regex::Regex>,
    /// A `wildcard` that ignores case: OpenTSDB's implicit one (`host=*` or `host=web*` in
    /// braces or `tags`) is its case-insensitive TagVWildcardFilter, shown as `wildcard`.
    fold_case: bool,
}

impl TagFilter {
    pub fn new(
        kind: FilterType,
        tagk: &str,
        expr: &str,
        group_by: bool,
    ) -> Result<TagFilter, FilterError> {
        if tagk.is_empty() {
            return Err(FilterError::MissingTagKey);
        }
        let lower = matches!(
            kind,
            FilterType::IliteralOr | FilterType::NotIliteralOr | FilterType::Iwildcard
        );
        let e = if lower {
            expr.to_lowercase()
        } else {
            expr.to_string()
        };
        let mut f = TagFilter {
            kind,
            tagk: tagk.into(),
            expr: expr.into(),
            group_by,
            literals: Vec::new(),
            regex: None,
            fold_case: false,
        };
        match kind {
            FilterType::LiteralOr
            | FilterType::IliteralOr
            | FilterType::NotLiteralOr
            | FilterType::NotIliteralOr => {
                if expr.is_empty() {
                    return Err(FilterError::Empty);
                }
                if expr == "|" {
                    return Err(FilterError::JustAPipe);
                }
                f.literals = e.split('|').map(String::from).collect();
            }
            FilterType::Wildcard | FilterType::Iwildcard => {
                if !expr.contains('*') {
                    return Err(FilterError::NoWildcard(expr.to_string()));
                }
                f.literals = vec![e];
            }
            FilterType::Regexp => {
                f.regex = Some(regex::Regex::new(expr)?);
            }
            FilterType::NotKey => {
                if !expr.is_empty() {
                    return Err(FilterError::NotKeyValue);
                }
            }
        }
        Ok(f)
    }

    /// How OpenTSDB converts a `tags` map value (`TagVFilter.getFilter`): the same forms as
    /// inside the URI's braces, grouped by (TestTSSubQuery.validateWithFilterViaTags:
    /// `{"host":"wildcard(*nari)"}` is a wildcard filter, not a literal).
    pub fn from_tag_value(tagk: &str, v: &str) -> Result<TagFilter, FilterError> {
        TagFilter::from_uri(tagk, v, true)
    }

    /// `*` (grouping wildcard), `type(expr)` (any value holding a `(`: an unknown type or a
    /// missing `)` is an error, as in OpenTSDB), a value with `*` (case-insensitive
    /// wildcard), else `literal_or` (pipe-separated).
    pub fn from_uri(tagk: &str, v: &str, group_by: bool) -> Result<TagFilter, FilterError> {
        if v.is_empty() {
            return Err(FilterError::Empty);
        }
        if v == "*" {
            return TagFilter::implicit_wildcard(tagk, "*", group_by);
        }
        if let Some(open) = v.find('(') {
            if !v.ends_with(')') {
                return Err(FilterError::NoCloseParen(v.to_string()));
            }
            let prefix = v[..open].to_lowercase();
            let kind = FilterType::parse(&prefix).ok_or(FilterError::UnknownType(prefix))?;
            return TagFilter::new(kind, tagk, &v[open + 1..v.len() - 1], group_by);
        }
        if v.contains('*') {
            return TagFilter::implicit_wildcard(tagk, v, group_by);
        }
        TagFilter::new(FilterType::LiteralOr, tagk, v, group_by)
    }

    /// A `wildcard` that ignores case (see `fold_case`).
    fn implicit_wildcard(tagk: &str, v: &str, group_by: bool) -> Result<TagFilter, FilterError> {
        let mut f = TagFilter::new(FilterType::Iwildcard, tagk, v, group_by)?;
        f.kind = FilterType::Wildcard;
        f.fold_case = true;
        Ok(f)
    }

    /// The same filter whatever its grouping: type, key and expression.
    pub fn same_as(&self, other: &TagFilter) -> bool {
        (self.kind, &self.tagk, &self.expr, self.fold_case)
            == (other.kind, &other.tagk, &other.expr, other.fold_case)
    }

    /// The exact literals this filter needs, when it is a case-sensitive `literal_or`
    /// (those can be resolved to UIDs and pushed into the row scan).
    pub fn literal_values(&self) -> Option<&[String]> {
        (self.kind == FilterType::LiteralOr).then_some(&self.literals[..])
    }

    /// Does a series whose value for this tag key is `value` (None = key absent) pass?
    pub fn matches(&self, value: Option<&str>) -> bool {
        let Some(v) = value else {
            return self.kind == FilterType::NotKey;
        };
        match self.kind {
            FilterType::NotKey => false,
            FilterType::LiteralOr => self.literals.iter().any(|l| l == v),
            FilterType::NotLiteralOr => !self.literals.iter().any(|l| l == v),
            FilterType::IliteralOr => {
                let v = v.to_lowercase();
                self.literals.contains(&v)
            }
            FilterType::NotIliteralOr => {
                let v = v.to_lowercase();
                !self.literals.contains(&v)
            }
            FilterType::Wildcard if self.fold_case => glob(&self.literals[0], &v.to_lowercase()),
            FilterType::Wildcard => glob(&self.literals[0], v),
            FilterType::Iwildcard => glob(&self.literals[0], &v.to_lowercase()),
            FilterType::Regexp => self.regex.as_ref().is_some_and(|r| r.is_match(v)),
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"tagk": self.tagk, "filter": self.expr, "group_by": self.group_by, "type": self.kind.name()})
    }
}

/// OpenTSDB's glob: `*` alone matches anything; a leading `*` is a suffix check, a trailing one a
/// prefix check, and every `*`-separated part must then be found in order.
fn glob(pattern: &str, v: &str) -> bool {
    if pattern == "*" {
        return true;
    }
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !v.starts_with(first)
        || !v[first.len()..].ends_with(last)
        || v.len() < first.len() + last.len()
    {
        return false;
    }
    let mut rest = &v[first.len()..v.len() - last.len()];
    for p in &parts[1..parts.len() - 1] {
        match rest.find(p) {
            Some(i) => rest = &rest[i + p.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(kind: &str, expr: &str) -> TagFilter {
        TagFilter::new(FilterType::parse(kind).unwrap(), "host", expr, false).unwrap()
    }

    #[test]
    fn semantics() {
        assert!(f("literal_or", "web01|web02").matches(Some("web02")));
        assert!(!f("literal_or", "web01|web02").matches(Some("Web02")));
        assert!(f("iliteral_or", "web01|WEB02").matches(Some("Web02")));
        assert!(f("not_literal_or", "web01").matches(Some("web02")));
        assert!(
            !f("not_literal_or", "web01").matches(None),
            "the key must be present"
        );
        assert!(f("wildcard", "*").matches(Some("x")));
        assert!(f("wildcard", "web*").matches(Some("web01")));
        assert!(f("wildcard", "*.net").matches(Some("a.net")));
        assert!(f("wildcard", "web*.tsdb.*").matches(Some("web01.tsdb.net")));
        assert!(!f("wildcard", "web*.tsdb.*").matches(Some("web01.tsdc.net")));
        assert!(!f("wildcard", "ab*ba").matches(Some("aba")));
        assert!(f("iwildcard", "WEB*").matches(Some("web01")));
        assert!(
            f("regexp", "eb0[12]").matches(Some("web01")),
            "regexp is a partial match"
        );
        assert!(!f("regexp", "^eb").matches(Some("web01")));
        assert!(f("not_key", "").matches(None));
        assert!(!f("not_key", "").matches(Some("x")));
        assert!(TagFilter::new(FilterType::Wildcard, "host", "web", false).is_err());
        // TestQueryRpc.parseQueryMTypeWGroupByWildcardImplicit: an implicit wildcard is shown as
        // `wildcard` and ignores case (OpenTSDB's TagVWildcardFilter with case_insensitive).
        let t = TagFilter::from_tag_value("host", "web*").unwrap();
        assert_eq!((t.kind, t.group_by), (FilterType::Wildcard, true));
        assert!(t.matches(Some("WEB01")) && t.matches(Some("web01")));
        assert_eq!(t.to_json()["type"], "wildcard");
        let t = TagFilter::from_uri("host", "*", false).unwrap();
        assert!(t.matches(Some("Anything")));
        let u = TagFilter::from_uri("host", "regexp(web.*)", false).unwrap();
        assert_eq!(
            (u.kind, u.expr.as_str(), u.group_by),
            (FilterType::Regexp, "web.*", false)
        );
    }

    /// TestTSSubQuery.validateWithFilterViaTags: a `tags` map value `wildcard(*nari)` is a
    /// wildcard filter (it was taken for a literal); TestQueryRpc
    /// .parseQueryMTypeWGroupByNoSuchFilter: `host=nosuchfilter(*tsort)` is refused (it was
    /// taken for a case-insensitive wildcard because of its `*`).
    #[test]
    fn tag_values_name_their_filter_type() {
        let t = TagFilter::from_tag_value("host", "wildcard(*nari)").unwrap();
        assert_eq!(
            (t.kind, t.expr.as_str(), t.group_by),
            (FilterType::Wildcard, "*nari", true)
        );
        assert!(t.matches(Some("web.nari")) && !t.matches(Some("web.NARI")));
        let e = TagFilter::from_uri("host", "nosuchfilter(*tsort)", true).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Could not find a tag value filter of the type: nosuchfilter"
        );
        assert!(TagFilter::from_uri("host", "wildcard(*tsort", true).is_err());
        let l = TagFilter::from_tag_value("host", "web01|web02").unwrap();
        assert_eq!(l.kind, FilterType::LiteralOr);
        assert!(l.matches(Some("web02")));
    }
}
