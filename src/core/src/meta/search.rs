//! `/api/search/*` answered from tsgate's own tables. OpenTSDB hands these queries to a search
//! plugin (its Elasticsearch plugin reads them as Lucene query strings); tsgate evaluates a
//! Lucene-style subset itself over the objects the plugin would have indexed: TSMetas (every
//! series with a `tsdb-meta` row), UIDMetas (every assigned UID of `tsdb-uid`) and annotations
//! (every note in the data table).
//!
//! Query syntax: `field:value` or a bare `value` (any field); values are globs (`*`, `?`)
//! matched case-insensitively against the whole field value, or `"quoted"` for a literal;
//! `AND`/`&&`, `OR`/`||`, `NOT`/`!`/`-term`, `+term`, parentheses; terms side by side are ORed
//! (Lucene's default operator). `*`, `*:*` and an empty query match everything.

use super::annotation::{self, Annotation};
use super::json::StrMap;
use super::tsmeta::{self, TsMeta};
use super::uidmeta::{self, kind_name, UidMeta};
use super::{MetaCtx, MetaError, MetaResult};
use tsgate_schema::uid_table::{UidKind, META_FAMILY, TS_COUNTER_QUALIFIER, TS_META_QUALIFIER};
use tsgate_store::Scan;

/// A parsed search query.
#[derive(Debug, Clone, PartialEq)]
pub enum Query {
    All,
    Term {
        /// Lower-cased field name; `None` = any field.
        field: Option<String>,
        value: Pattern,
    },
    And(Box<Query>, Box<Query>),
    Or(Box<Query>, Box<Query>),
    Not(Box<Query>),
}

/// A value to match: a glob or a literal (quoted), compared case-insensitively.
#[derive(Debug, Clone, PartialEq)]
pub enum Pattern {
    Glob(String),
    Literal(String),
}

impl Pattern {
    fn matches(&self, v: &str) -> bool {
        match self {
            Pattern::Literal(l) => l.to_lowercase() == v.to_lowercase(),
            Pattern::Glob(g) => glob(
                &g.to_lowercase().chars().collect::<Vec<_>>(),
                &v.to_lowercase().chars().collect::<Vec<_>>(),
            ),
        }
    }
}

fn glob(p: &[char], s: &[char]) -> bool {
    // Iterative with one backtrack point: linear enough for names and descriptions.
    let (mut pi, mut si) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while si < s.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = si;
            pi += 1;
        } else if let Some(st) = star {
            pi = st + 1;
            mark += 1;
            si = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Quoted(String),
    And,
    Or,
    Not,
    Plus,
    Open,
    Close,
}

fn tokens(q: &str) -> MetaResult<Vec<Tok>> {
    let mut out = Vec::new();
    let mut it = q.chars().peekable();
    while let Some(&c) = it.peek() {
        match c {
            c if c.is_whitespace() => {
                it.next();
            }
            '(' | ')' => {
                it.next();
                out.push(if c == '(' { Tok::Open } else { Tok::Close });
            }
            '"' => {
                it.next();
                let mut s = String::new();
                loop {
                    match it.next() {
                        None => return Err(MetaError::bad("Unterminated quote in the query")),
                        Some('"') => break,
                        Some('\\') => s.extend(it.next()),
                        Some(c) => s.push(c),
                    }
                }
                out.push(Tok::Quoted(s));
            }
            // Only at a token's start: `sys.cpu-user` is one word.
            '!' | '-' | '+' => {
                it.next();
                out.push(if c == '+' { Tok::Plus } else { Tok::Not });
            }
            _ => {
                let mut w = String::new();
                while let Some(&c) = it.peek() {
                    if c.is_whitespace() || c == '(' || c == ')' {
                        break;
                    }
                    if c == '\\' {
                        it.next();
                        w.extend(it.next());
                        continue;
                    }
                    w.push(c);
                    it.next();
                    if c == ':' && it.peek() == Some(&'"') {
                        break;
                    }
                }
                out.push(match w.as_str() {
                    "AND" | "&&" => Tok::And,
                    "OR" | "||" => Tok::Or,
                    "NOT" => Tok::Not,
                    _ => Tok::Word(w),
                });
            }
        }
    }
    Ok(out)
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn or(&mut self) -> MetaResult<Query> {
        let mut q = self.and()?;
        loop {
            match self.peek() {
                None | Some(Tok::Close) => return Ok(q),
                Some(Tok::Or) => {
                    self.pos += 1;
                }
                _ => {}
            }
            let r = self.and()?;
            q = Query::Or(Box::new(q), Box::new(r));
        }
    }

    fn and(&mut self) -> MetaResult<Query> {
        let mut q = self.unary()?;
        while self.peek() == Some(&Tok::And) {
            self.pos += 1;
            let r = self.unary()?;
            q = Query::And(Box::new(q), Box::new(r));
        }
        Ok(q)
    }

    fn unary(&mut self) -> MetaResult<Query> {
        let t = self.peek().cloned();
        self.pos += 1;
        match t {
            Some(Tok::Not) => Ok(Query::Not(Box::new(self.unary()?))),
            Some(Tok::Plus) => self.unary(),
            Some(Tok::Open) => {
                let q = self.or()?;
                if self.peek() != Some(&Tok::Close) {
                    return Err(MetaError::bad("Missing ')' in the query"));
                }
                self.pos += 1;
                Ok(q)
            }
            Some(Tok::Quoted(s)) => Ok(Query::Term {
                field: None,
                value: Pattern::Literal(s),
            }),
            Some(Tok::Word(w)) => self.term(w),
            Some(t) => Err(MetaError::bad(format!("Unexpected {t:?} in the query"))),
            None => Err(MetaError::bad("The query ends too early")),
        }
    }

    fn term(&mut self, w: String) -> MetaResult<Query> {
        if w == "*" || w == "*:*" {
            return Ok(Query::All);
        }
        let Some((f, v)) = w.split_once(':') else {
            return Ok(Query::Term {
                field: None,
                value: Pattern::Glob(w),
            });
        };
        let field = Some(f.to_ascii_lowercase());
        if !v.is_empty() {
            return Ok(Query::Term {
                field,
                value: Pattern::Glob(v.to_string()),
            });
        }
        // `field:"literal"` or `field:(a OR b)`.
        match self.peek().cloned() {
            Some(Tok::Quoted(s)) => {
                self.pos += 1;
                Ok(Query::Term {
                    field,
                    value: Pattern::Literal(s),
                })
            }
            Some(Tok::Open) => {
                let inner = self.unary()?;
                Ok(with_field(inner, &field))
            }
            _ => Err(MetaError::bad(format!("Missing a value after '{w}'"))),
        }
    }
}

fn with_field(q: Query, field: &Option<String>) -> Query {
    match q {
        Query::Term { field: None, value } => Query::Term {
            field: field.clone(),
            value,
        },
        Query::And(a, b) => Query::And(
            Box::new(with_field(*a, field)),
            Box::new(with_field(*b, field)),
        ),
        Query::Or(a, b) => Query::Or(
            Box::new(with_field(*a, field)),
            Box::new(with_field(*b, field)),
        ),
        Query::Not(a) => Query::Not(Box::new(with_field(*a, field))),
        q => q,
    }
}

/// Parses a query string (empty = everything).
pub fn parse(q: &str) -> MetaResult<Query> {
    let toks = tokens(q)?;
    if toks.is_empty() {
        return Ok(Query::All);
    }
    let mut p = Parser { toks, pos: 0 };
    let q = p.or()?;
    if p.pos < p.toks.len() {
        return Err(MetaError::bad("Unbalanced ')' in the query"));
    }
    Ok(q)
}

/// Searchable fields of one object: (lower-case field name, value).
pub type Fields = Vec<(String, String)>;

impl Query {
    pub fn matches(&self, doc: &Fields) -> bool {
        match self {
            Query::All => true,
            Query::Term { field, value } => doc
                .iter()
                .any(|(f, v)| field.as_ref().is_none_or(|want| want == f) && value.matches(v)),
            Query::And(a, b) => a.matches(doc) && b.matches(doc),
            Query::Or(a, b) => a.matches(doc) || b.matches(doc),
            Query::Not(a) => !a.matches(doc),
        }
    }
}

fn custom_fields(out: &mut Fields, c: &Option<StrMap>) {
    for (k, v) in c.iter().flat_map(|m| m.0.iter()) {
        if let Some(v) = v {
            out.push((format!("custom.{}", k.to_lowercase()), v.clone()));
        }
    }
}

/// A TSMeta's fields: `tsuid`, `metric` (and `name`), `tagk`, `tagv`, `tags.<tagk>`,
/// `displayname`, `description`, `notes`, `units`, `datatype`, `custom.<key>`.
pub fn tsmeta_fields(m: &TsMeta) -> Fields {
    let mut f: Fields = vec![("tsuid".into(), m.tsuid.clone())];
    if let Some(metric) = &m.metric {
        f.push(("metric".into(), metric.name.clone()));
        f.push(("name".into(), metric.name.clone()));
    }
    for (k, v) in m.tag_pairs() {
        f.push(("tagk".into(), k.name.clone()));
        f.push(("tagv".into(), v.name.clone()));
        f.push((format!("tags.{}", k.name.to_lowercase()), v.name.clone()));
    }
    for (k, v) in [
        ("displayname", &m.display_name),
        ("description", &m.description),
        ("notes", &m.notes),
        ("units", &m.units),
        ("datatype", &m.data_type),
    ] {
        f.push((k.into(), v.clone()));
    }
    custom_fields(&mut f, &m.custom);
    f
}

/// A UIDMeta's fields: `uid`, `type`, `name`, `displayname`, `description`, `notes`,
/// `custom.<key>`.
pub fn uidmeta_fields(m: &UidMeta) -> Fields {
    let mut f: Fields = vec![
        ("uid".into(), m.uid.clone()),
        (
            "type".into(),
            m.kind.map(kind_name).unwrap_or_default().into(),
        ),
        ("name".into(), m.name.clone()),
        ("displayname".into(), m.display_name.clone()),
        ("description".into(), m.description.clone()),
        ("notes".into(), m.notes.clone()),
    ];
    custom_fields(&mut f, &m.custom);
    f
}

/// An annotation's fields: `tsuid`, `description`, `notes`, `starttime`, `endtime`,
/// `custom.<key>`.
pub fn annotation_fields(a: &Annotation) -> Fields {
    let mut f: Fields = vec![
        ("tsuid".into(), a.tsuid.clone()),
        ("description".into(), a.description.clone()),
        ("notes".into(), a.notes.clone()),
        ("starttime".into(), a.start_time.to_string()),
        ("endtime".into(), a.end_time.to_string()),
    ];
    custom_fields(&mut f, &a.custom);
    f
}

/// Every series with a `tsdb-meta` row (a TSMeta or a `ts_ctr` counter), in TSUID order, as its
/// TSMeta (blank fields when only the counter exists) with the UIDMetas of its names. Rows
/// whose UIDs no longer resolve are skipped.
pub fn every_tsmeta(ctx: &MetaCtx, mut f: impl FnMut(TsMeta)) -> MetaResult<()> {
    let scan = Scan {
        families: vec![META_FAMILY.to_vec()],
        ..Default::default()
    };
    for row in ctx.store.scan(&ctx.tables.meta, &scan)? {
        let row = row?;
        let indexed = row
            .cells
            .iter()
            .any(|c| c.qualifier == TS_META_QUALIFIER || c.qualifier == TS_COUNTER_QUALIFIER);
        if !indexed {
            continue;
        }
        match tsmeta::load_or_blank(ctx, &row.key) {
            Ok(m) => f(m),
            Err(MetaError::NotFound(_)) | Err(MetaError::BadRequest { .. }) => continue,
            Err(MetaError::Uid(crate::uid::UidError::NoSuchId { .. })) => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Every assigned UID (metrics, then tag keys, then tag values; each by name) as its UIDMeta
/// (blank fields when none is stored).
pub fn every_uidmeta(ctx: &MetaCtx, mut f: impl FnMut(UidMeta)) -> MetaResult<()> {
    for kind in [UidKind::Metric, UidKind::Tagk, UidKind::Tagv] {
        for (_name, uid) in ctx.uids.list(kind)? {
            match uidmeta::load(ctx, kind, &uid) {
                Ok(m) => f(m),
                Err(MetaError::NotFound(_)) => continue,
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// Every annotation of the data table (globals first: their rows sort first), in row order.
/// A full scan of the data table, annotation columns only.
pub fn every_annotation(ctx: &MetaCtx, f: impl FnMut(Annotation)) -> MetaResult<()> {
    annotation::scan_all(&*ctx.store, &ctx.tables.data, f)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(pairs: &[(&str, &str)]) -> Fields {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn m(q: &str, d: &Fields) -> bool {
        parse(q).unwrap().matches(d)
    }

    #[test]
    fn globs_fields_and_operators() {
        let d = doc(&[
            ("name", "sys.cpu.user"),
            ("tagk", "host"),
            ("tagv", "web01"),
            ("tags.host", "web01"),
            ("description", "User CPU time"),
        ]);
        // The docs' example query.
        assert!(m("name:sys.cpu.*", &d));
        assert!(!m("name:sys.mem.*", &d));
        assert!(
            m("NAME:SYS.CPU.USER", &d),
            "field and value case-insensitive"
        );
        assert!(m("web0?", &d), "bare term: any field");
        assert!(!m("web0", &d), "whole-value match, not substring");
        assert!(m("tags.host:web01 AND name:sys.*", &d));
        assert!(!m("tags.host:web02 AND name:sys.*", &d));
        assert!(m("tags.host:web02 OR name:sys.*", &d));
        assert!(m("tags.host:web02 name:sys.*", &d), "side by side = OR");
        assert!(!m("NOT name:sys.*", &d));
        assert!(!m("-name:sys.*", &d));
        assert!(m("name:sys.* AND -tagv:db*", &d));
        assert!(m("description:\"user cpu time\"", &d));
        assert!(!m("description:\"user cpu\"", &d));
        assert!(m("name:(foo OR sys.cpu.user)", &d));
        assert!(m("(tagk:zone OR tagk:host) AND NOT tagv:db01", &d));
        assert!(m("*", &d) && m("*:*", &d) && m("", &d));
        assert!(
            m("name:sys.cpu-user OR tagk:host", &d),
            "a dash inside a word is literal"
        );
    }

    #[test]
    fn malformed_queries_are_refused() {
        for q in ["(name:a", "name:a)", "name:\"open", "name: ", "AND"] {
            assert!(parse(q).is_err(), "{q}");
        }
    }

    #[test]
    fn glob_backtracks() {
        let g = |p: &str, s: &str| Pattern::Glob(p.into()).matches(s);
        assert!(g("a*b*c", "axxbyyc"));
        assert!(g("a*b", "abab"));
        assert!(!g("a*b", "abac"));
        assert!(g("*", ""));
        assert!(!g("?", ""));
    }
}
