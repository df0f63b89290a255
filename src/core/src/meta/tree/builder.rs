//! The TreeBuilder: files one series (its TSMeta with metric and tag UIDMetas) into a tree.
//!
//! Levels are taken in ascending order; inside a level the rules are tried by `order` and the
//! first one yielding a non-empty name wins the level. A separator splits the value into
//! several successive levels. Levels that match nothing are skipped (the path closes up), and
//! consecutive equal branch names collapse into one, which is what OpenTSDB's recursive
//! builder ends up storing. The last name is the leaf; the ones before it are branches.
//!
//! Java regexes are compiled with the `regex` crate: the common syntax is the same, but
//! look-around, back-references, possessive quantifiers and `\Q…\E` are rejected when the
//! rule is stored.

use super::branch::{
    self, branch_id, branch_json, leaf_json, leaf_qualifier, tree_key, BranchView, LeafView, FAMILY,
};
use super::rule::{RuleType, TreeRule};
use super::{CompiledTree, Tree, COLLISION_PREFIX, COLLISION_ROW_SUFFIX};
use crate::meta::tsmeta::TsMeta;
use crate::meta::uidmeta::UidMeta;
use crate::meta::{MetaCtx, MetaResult};
use regex::Regex;
use tsgate_schema::uid_table::UidKind;

pub struct CompiledRule {
    pub rule: TreeRule,
    pub regex: Option<Regex>,
    pub separator: Option<Regex>,
}

/// The result of running one series through a tree (nothing stored yet).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Built {
    /// Names after skipping and collapsing; the last one is the leaf.
    pub elements: Vec<String>,
    /// The rules of the levels that matched nothing, `[1:0:0:TAGK] [1:1:0:METRIC]`.
    pub not_matched: Option<String>,
    pub messages: Vec<String>,
    /// Processing stopped (e.g. a custom field present but null): nothing is stored.
    pub error: Option<String>,
}

impl Built {
    /// The branch path and leaf name to store, or `None` when nothing is stored: an error, a
    /// strict tree with an unmatched level, or fewer than two names (OpenTSDB attaches a lone
    /// leaf to the in-memory root and persists nothing).
    pub fn persisted(&self, strict: bool) -> Option<(&[String], &str)> {
        if self.error.is_some() || (strict && self.not_matched.is_some()) || self.elements.len() < 2
        {
            return None;
        }
        let (leaf, branches) = self.elements.split_last()?;
        Some((branches, leaf.as_str()))
    }
}

/// Java's `String.split(regex)`: no leading empty string for a zero-width match at the start,
/// trailing empty strings removed.
pub fn java_split(re: &Regex, s: &str) -> Vec<String> {
    if s.is_empty() {
        return vec![String::new()];
    }
    let mut parts = Vec::new();
    let mut last = 0;
    for m in re.find_iter(s) {
        if m.end() == 0 {
            continue;
        }
        parts.push(s[last..m.start()].to_string());
        last = m.end();
    }
    parts.push(s[last..].to_string());
    while parts.last().is_some_and(|p| p.is_empty()) {
        parts.pop();
    }
    parts
}

/// Why a series cannot be filed by a rule: processing stops, with OpenTSDB's message.
#[derive(Debug, thiserror::Error)]
enum ExtractError {
    #[error("Value for custom {what} field [{field}] was null")]
    NullCustom { what: &'static str, field: String },
    #[error("Missing rule type for rule: {0}")]
    MissingType(String),
    #[error("Timeseries metric name was null or empty")]
    NoMetricName,
    #[error("Timeseries metric UID object was null")]
    NoMetric,
}

/// The value a rule looks at; `Ok(None)` = no match, `Err` = processing must stop.
fn extract(
    r: &TreeRule,
    meta: &TsMeta,
    msgs: &mut Vec<String>,
) -> Result<Option<String>, ExtractError> {
    let mut custom = |m: &UidMeta, what: &'static str| -> Result<Option<String>, ExtractError> {
        match m.custom.as_ref().and_then(|c| c.get(&r.custom_field)) {
            Some(None) => Err(ExtractError::NullCustom {
                what,
                field: r.custom_field.clone(),
            }),
            Some(Some(v)) => {
                msgs.push(format!(
                    "Matched custom tag [{}] for rule: {r}",
                    r.custom_field
                ));
                Ok(Some(v.clone()))
            }
            None => {
                msgs.push(format!(
                    "No match on custom tag [{}] for rule: {r}",
                    r.custom_field
                ));
                Ok(None)
            }
        }
    };
    let find = |kind: UidKind| {
        meta.tags
            .iter()
            .position(|t| t.kind == Some(kind) && t.name == r.field)
    };
    match r.kind {
        None => Err(ExtractError::MissingType(r.to_string())),
        Some(RuleType::Metric) => match meta.metric.as_ref().map(|m| m.name.as_str()) {
            Some(n) if !n.is_empty() => Ok(Some(n.to_string())),
            _ => Err(ExtractError::NoMetricName),
        },
        Some(RuleType::Tagk) => {
            // The value is the next TAGV after the matching TAGK.
            let v = find(UidKind::Tagk)
                .and_then(|i| {
                    meta.tags[i + 1..]
                        .iter()
                        .find(|t| t.kind == Some(UidKind::Tagv))
                })
                .map(|t| t.name.clone())
                .filter(|n| !n.is_empty());
            match v {
                Some(v) => {
                    msgs.push(format!("Matched tagk [{}] for rule: {r}", r.field));
                    Ok(Some(v))
                }
                None => {
                    msgs.push(format!("No match on tagk [{}] for rule: {r}", r.field));
                    Ok(None)
                }
            }
        }
        Some(RuleType::MetricCustom) => match &meta.metric {
            Some(m) => custom(m, "metric"),
            None => Err(ExtractError::NoMetric),
        },
        Some(RuleType::TagkCustom) => match find(UidKind::Tagk) {
            Some(i) => custom(&meta.tags[i], "tagk"),
            None => {
                msgs.push(format!("No match on tagk [{}] for rule: {r}", r.field));
                Ok(None)
            }
        },
        Some(RuleType::TagvCustom) => match find(UidKind::Tagv) {
            Some(i) => custom(&meta.tags[i], "tagv"),
            None => {
                msgs.push(format!("No match on tagv [{}] for rule: {r}", r.field));
                Ok(None)
            }
        },
    }
}

/// `displayFormat` tokens, replaced in OpenTSDB's order (every occurrence, like Java's
/// `String.replace`).
fn display(
    r: &TreeRule,
    original: &str,
    extracted: &str,
    tsuid: &str,
    msgs: &mut Vec<String>,
) -> String {
    if r.display_format.is_empty() {
        return extracted.to_string();
    }
    let mut f = r
        .display_format
        .replace("{ovalue}", original)
        .replace("{value}", extracted)
        .replace("{tsuid}", tsuid);
    if f.contains("{tag_name}") {
        let name = match r.kind {
            Some(RuleType::Tagk) => r.field.as_str(),
            Some(RuleType::MetricCustom | RuleType::TagkCustom | RuleType::TagvCustom) => {
                r.custom_field.as_str()
            }
            _ => {
                msgs.push(format!(
                    "Display format had a {{tag_name}} token but the rule type was not a tag: {r}"
                ));
                ""
            }
        };
        f = f.replace("{tag_name}", name);
    }
    f
}

/// The display names one rule yields for a value: one, several (separator), or none.
fn names(cr: &CompiledRule, value: &str, tsuid: &str, msgs: &mut Vec<String>) -> Vec<String> {
    let r = &cr.rule;
    if let Some(re) = &cr.regex {
        let Some(caps) = re.captures(value) else {
            msgs.push(format!("Regex did not match [{value}] for rule: {r}"));
            return Vec::new();
        };
        let idx = r.regex_group_idx.max(0) as usize + 1;
        if idx >= caps.len() {
            msgs.push(format!(
                "Regex group index [{}] for rule {r} was out of bounds [{}]",
                r.regex_group_idx,
                caps.len() - 1
            ));
            return Vec::new();
        }
        match caps.get(idx).map(|m| m.as_str()).filter(|s| !s.is_empty()) {
            Some(x) => vec![display(r, value, x, tsuid, msgs)],
            None => {
                msgs.push(format!("Extracted value for rule {r} was null or empty"));
                Vec::new()
            }
        }
    } else if let Some(sep) = &cr.separator {
        let parts = java_split(sep, value);
        if parts.is_empty() {
            msgs.push(format!(
                "Separator did not match, created an empty list on rule: {r}"
            ));
        }
        parts
            .iter()
            .map(|p| display(r, value, p, tsuid, msgs))
            .collect()
    } else {
        vec![display(r, value, value, tsuid, msgs)]
    }
}

/// Runs a series through a tree's rules. Pure: reads and writes nothing.
pub fn build(tree: &CompiledTree, meta: &TsMeta) -> Built {
    let mut b = Built::default();
    let mut raw: Vec<String> = Vec::new();
    let mut unmatched: Vec<String> = Vec::new();
    for level in &tree.levels {
        let mut won: Option<(Vec<String>, &TreeRule)> = None;
        for cr in level {
            b.messages.push(format!("Processing rule: {}", cr.rule));
            let value = match extract(&cr.rule, meta, &mut b.messages) {
                Ok(Some(v)) => v,
                Ok(None) => continue,
                Err(e) => {
                    let e = e.to_string();
                    b.messages.push(e.clone());
                    b.error = Some(e);
                    return b;
                }
            };
            let n = names(cr, &value, &meta.tsuid, &mut b.messages);
            if n.first().is_some_and(|x| !x.is_empty()) {
                won = Some((n, &cr.rule));
                break;
            }
        }
        match won {
            Some((names, rule)) => {
                for n in names {
                    if n.is_empty() {
                        unmatched.push(rule.to_string());
                    } else {
                        raw.push(n);
                    }
                }
            }
            None => {
                if let Some(last) = level.last() {
                    unmatched.push(last.rule.to_string());
                }
            }
        }
    }
    // Consecutive equal branch names collapse; the leaf (last) always stays.
    if let Some(leaf) = raw.pop() {
        for n in raw {
            if b.elements.last() != Some(&n) {
                b.elements.push(n);
            }
        }
        b.elements.push(leaf);
    }
    if !unmatched.is_empty() {
        b.not_matched = Some(unmatched.join(" "));
    }
    if tree.tree.strict_match && b.not_matched.is_some() {
        b.messages.push(format!(
            "TSUID failed to match one or more rule levels, will not add: {}",
            meta.tsuid
        ));
    } else if let Some((branches, leaf)) = b.persisted(tree.tree.strict_match) {
        let parent = branches
            .last()
            .cloned()
            .unwrap_or_else(|| branch::ROOT.into());
        b.messages.push(format!(
            "Depth [{}] Adding leaf [name: {leaf} tsuid: {}] to parent branch [Name: [{parent}]]",
            branches.len() + 1,
            meta.tsuid
        ));
    } else if b.elements.is_empty() {
        b.messages
            .push("No rule matched: the series resulted in a null branch".into());
    }
    b
}

/// The branch tree a build would produce, from ROOT down (for `/api/tree/test`).
pub fn preview(tree: &Tree, b: &Built, tsuid: &str) -> Option<BranchView> {
    if b.error.is_some() || (tree.strict_match && b.not_matched.is_some()) || b.elements.is_empty()
    {
        return None;
    }
    let (leaf, branches) = b.elements.split_last()?;
    let mut path = vec![branch::ROOT.to_string()];
    path.extend(branches.iter().cloned());
    let leaf = LeafView {
        metric: String::new(),
        tags: None,
        tsuid: tsuid.into(),
        display_name: leaf.clone(),
    };
    // Innermost first: the deepest branch holds the leaf, each parent holds its child.
    let mut node = BranchView {
        tree_id: tree.tree_id,
        path: path.clone(),
        branches: None,
        leaves: Some(vec![leaf]),
    };
    for depth in (0..path.len() - 1).rev() {
        node = BranchView {
            tree_id: tree.tree_id,
            path: path[..=depth].to_vec(),
            branches: Some(vec![node]),
            leaves: None,
        };
    }
    Some(node)
}

/// What storing a build did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stored {
    /// Branches and leaf are in place (new or already there).
    Filed,
    /// Another series already holds this leaf: its TSUID.
    Collision(String),
    /// Nothing to store (see `Built::persisted`).
    Nothing,
}

/// Writes a build: the root, every branch on the path (compare-and-set on absence, so existing
/// ones are left alone) and the leaf; a leaf held by another series is a collision, recorded
/// in the collision row when the tree stores failures.
pub fn store(ctx: &MetaCtx, tree: &Tree, b: &Built, tsuid: &str) -> MetaResult<Stored> {
    let Some((branches, leaf)) = b.persisted(tree.strict_match) else {
        return Ok(Stored::Nothing);
    };
    let t = &ctx.tables.tree;
    let id = tree.tree_id;
    ctx.store.check_and_put(
        t,
        &tree_key(id),
        FAMILY,
        branch::BRANCH_QUALIFIER,
        None,
        branch_json::<&str>(&[]).as_bytes(),
    )?;
    for depth in 1..=branches.len() {
        let path = &branches[..depth];
        ctx.store.check_and_put(
            t,
            &branch_id(id, path),
            FAMILY,
            branch::BRANCH_QUALIFIER,
            None,
            branch_json(path).as_bytes(),
        )?;
    }
    let row = branch_id(id, branches);
    let q = leaf_qualifier(leaf);
    if ctx
        .store
        .check_and_put(t, &row, FAMILY, &q, None, leaf_json(leaf, tsuid).as_bytes())?
    {
        return Ok(Stored::Filed);
    }
    let existing = ctx
        .store
        .get(t, &row, &[FAMILY])?
        .into_iter()
        .find(|c| c.qualifier == q)
        .and_then(|c| branch::parse_leaf(&c.value))
        .map(|l| l.tsuid)
        .unwrap_or_default();
    if existing.eq_ignore_ascii_case(tsuid) {
        return Ok(Stored::Filed);
    }
    if tree.store_failures {
        let mut crow = tree_key(id);
        crow.push(COLLISION_ROW_SUFFIX);
        let mut cq = COLLISION_PREFIX.to_vec();
        cq.extend_from_slice(&tsgate_schema::parse_hex(tsuid).unwrap_or_default());
        ctx.store.mutate(
            t,
            vec![tsgate_store::RowMutations::put(
                crow,
                FAMILY,
                cq,
                existing.clone().into_bytes(),
            )],
        )?;
    }
    Ok(Stored::Collision(existing))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::json::StrMap;
    use std::collections::BTreeMap;
    use tsgate_schema::hex_upper;

    fn rule(level: i32, order: i32, kind: RuleType, field: &str) -> TreeRule {
        TreeRule {
            kind: Some(kind),
            field: field.into(),
            level,
            order,
            tree_id: 1,
            ..Default::default()
        }
    }

    fn uid(kind: UidKind, name: &str) -> UidMeta {
        UidMeta {
            kind: Some(kind),
            name: name.into(),
            ..Default::default()
        }
    }

    /// `TestTree.buildTestRuleSet`.
    fn test_tree() -> Tree {
        let mut t = Tree {
            tree_id: 1,
            name: "Test Tree".into(),
            enabled: true,
            ..Default::default()
        };
        t.add_rule(rule(0, 0, RuleType::Tagk, "fqdn"));
        t.add_rule(TreeRule {
            regex: r"^.*\.([a-zA-Z]{3,4})[0-9]{0,1}\..*\..*$".into(),
            ..rule(0, 1, RuleType::Tagk, "host")
        });
        t.add_rule(rule(1, 0, RuleType::Tagk, "fqdn"));
        t.add_rule(TreeRule {
            regex: r"^([a-zA-Z]+)(\-|[0-9])*.*\..*$".into(),
            ..rule(1, 1, RuleType::Tagk, "host")
        });
        t.add_rule(rule(2, 0, RuleType::Tagk, "fqdn"));
        t.add_rule(rule(2, 1, RuleType::Tagk, "host"));
        t.add_rule(TreeRule {
            separator: r"\.".into(),
            ..rule(3, 0, RuleType::Metric, "")
        });
        t.add_rule(rule(4, 0, RuleType::Tagk, "type"));
        t.add_rule(rule(4, 1, RuleType::Tagk, "method"));
        t.add_rule(TreeRule {
            display_format: "Port: {value}".into(),
            ..rule(4, 2, RuleType::Tagk, "port")
        });
        t
    }

    fn test_meta(host: &str) -> TsMeta {
        TsMeta {
            tsuid: "0102030405".into(),
            metric: Some(uid(UidKind::Metric, "sys.cpu.0")),
            tags: vec![
                uid(UidKind::Tagk, "host"),
                uid(UidKind::Tagv, host),
                uid(UidKind::Tagk, "type"),
                uid(UidKind::Tagv, "user"),
            ],
            ..TsMeta::new(&[1, 2, 3, 4, 5], 0)
        }
    }

    /// (deepest branch ID, leaf name, rows a store would hold: tree row + one per branch).
    fn outcome(t: Tree, meta: &TsMeta) -> Option<(String, String, usize)> {
        let strict = t.strict_match;
        let c = CompiledTree::new(t).unwrap();
        let b = build(&c, meta);
        let (branches, leaf) = b.persisted(strict)?;
        Some((
            hex_upper(&branch_id(1, branches)),
            leaf.to_string(),
            1 + branches.len(),
        ))
    }

    fn with(f: impl FnOnce(&mut BTreeMap<i32, BTreeMap<i32, TreeRule>>)) -> Tree {
        let mut t = test_tree();
        f(&mut t.rules);
        t
    }

    #[test]
    fn unit_test_tree_table() {
        let meta = test_meta("web-01.lga.mysite.com");
        let r = |l: i32, o: i32| (l, o);
        type Case<'a> = (&'a str, Tree, Option<(&'a str, &'a str, usize)>);
        let cases: Vec<Case> = vec![
            (
                "defaults",
                test_tree(),
                Some((
                    "00010001A2460001CB54247F72020001BECD000181A800000030",
                    "user",
                    7,
                )),
            ),
            (
                "L3 separator removed",
                with(|rs| {
                    rs.get_mut(&3)
                        .unwrap()
                        .get_mut(&0)
                        .unwrap()
                        .separator
                        .clear()
                }),
                Some(("00010001A2460001CB54247F7202CBBF5B09", "user", 5)),
            ),
            (
                "L3 separator .",
                with(|rs| rs.get_mut(&3).unwrap().get_mut(&0).unwrap().separator = ".".into()),
                Some(("00010001A2460001CB54247F7202", "user", 4)),
            ),
            (
                "L1/o1 regexGroupIdx 42",
                with(|rs| rs.get_mut(&1).unwrap().get_mut(&1).unwrap().regex_group_idx = 42),
                Some(("00010001A246247F72020001BECD000181A800000030", "user", 6)),
            ),
            (
                "L3 displayFormat Wrong: {tag_name}",
                with(|rs| {
                    rs.get_mut(&3).unwrap().get_mut(&0).unwrap().display_format =
                        "Wrong: {tag_name}".into()
                }),
                Some(("00010001A2460001CB54247F7202C3165573", "user", 5)),
            ),
            (
                "L3 displayFormat OVERRIDE",
                with(|rs| {
                    rs.get_mut(&3).unwrap().get_mut(&0).unwrap().display_format = "OVERRIDE".into()
                }),
                Some(("00010001A2460001CB54247F72024E3D0BCC", "user", 5)),
            ),
        ];
        for (name, t, want) in cases {
            let got = outcome(t, &meta);
            assert_eq!(
                got,
                want.map(|(a, b, c)| (a.to_string(), b.to_string(), c)),
                "{name}"
            );
        }
        // L1/o1 display formats: the level-1 branch ID and its name.
        for (fmt, id, display) in [
            (
                "OV: {ovalue}",
                "00010001A24637E140D5",
                "OV: web-01.lga.mysite.com",
            ),
            ("V: {value}", "00010001A24696026FD8", "V: web"),
            (
                "TSUID: {tsuid}",
                "00010001A246E0A07086",
                "TSUID: 0102030405",
            ),
            (
                "TAGNAME: {tag_name}",
                "00010001A2467BFCCB13",
                "TAGNAME: host",
            ),
            (
                "{ovalue}:{value}:{tag_name}:{tsuid}",
                "00010001A246E4592083",
                "web-01.lga.mysite.com:web:host:0102030405",
            ),
        ] {
            let t =
                with(|rs| rs.get_mut(&1).unwrap().get_mut(&1).unwrap().display_format = fmt.into());
            let b = build(&CompiledTree::new(t).unwrap(), &meta);
            let (branches, leaf) = b.persisted(false).unwrap();
            assert_eq!(branches[1], display, "{fmt}");
            assert_eq!(hex_upper(&branch_id(1, &branches[..2])), id, "{fmt}");
            assert_eq!((branches.len() + 1, leaf), (7, "user"), "{fmt}");
        }
        let _ = r;
    }

    #[test]
    fn metric_custom_rule_wins_level_zero_and_an_empty_value_falls_back() {
        let t = with(|rs| {
            let mut mc = rule(0, 0, RuleType::MetricCustom, "owner");
            mc.custom_field = "owner".into();
            rs.get_mut(&0).unwrap().insert(0, mc);
        });
        let mut meta = test_meta("web-01.lga.mysite.com");
        let custom = |v: &str| Some(StrMap(vec![("owner".into(), Some(v.into()))]));
        meta.metric.as_mut().unwrap().custom = custom("John Doe");
        assert_eq!(
            outcome(t.clone(), &meta),
            Some((
                "0001AE805CA50001CB54247F72020001BECD000181A800000030".into(),
                "user".into(),
                7
            ))
        );
        meta.metric.as_mut().unwrap().custom = custom("");
        assert_eq!(
            outcome(t.clone(), &meta),
            Some((
                "00010001A2460001CB54247F72020001BECD000181A800000030".into(),
                "user".into(),
                7
            ))
        );
        // Present but null stops processing.
        meta.metric.as_mut().unwrap().custom = Some(StrMap(vec![("owner".into(), None)]));
        let b = build(&CompiledTree::new(t).unwrap(), &meta);
        assert!(b.error.is_some() && b.persisted(false).is_none());
    }

    #[test]
    fn strict_match_stores_nothing_when_a_level_fails() {
        let mut t = test_tree();
        t.strict_match = true;
        let meta = test_meta("foobar");
        let b = build(&CompiledTree::new(t.clone()).unwrap(), &meta);
        assert_eq!(b.not_matched.as_deref(), Some("[1:0:1:TAGK] [1:1:1:TAGK]"));
        assert_eq!(b.persisted(true), None);
        t.strict_match = false;
        assert!(outcome(t, &meta).is_some());
    }

    #[test]
    fn docs_example_tree() {
        // user_guide/trees.rst, strictMatch off.
        let mut t = Tree {
            tree_id: 1,
            enabled: true,
            ..Default::default()
        };
        t.add_rule(rule(0, 0, RuleType::Tagk, "dc"));
        t.add_rule(TreeRule {
            regex: r".*\.(.*)\.mysite\.com".into(),
            ..rule(0, 1, RuleType::Tagk, "host")
        });
        t.add_rule(rule(1, 0, RuleType::Tagk, "host"));
        t.add_rule(TreeRule {
            separator: r"\.".into(),
            ..rule(2, 0, RuleType::Metric, "")
        });
        let c = CompiledTree::new(t).unwrap();
        let meta = |metric: &str, dc: bool| {
            let mut tags = vec![];
            if dc {
                tags.extend([uid(UidKind::Tagk, "dc"), uid(UidKind::Tagv, "dal")]);
            }
            tags.extend([
                uid(UidKind::Tagk, "host"),
                uid(UidKind::Tagv, "web01.dal.mysite.com"),
            ]);
            TsMeta {
                metric: Some(uid(UidKind::Metric, metric)),
                tags,
                ..TsMeta::new(&[1, 2, 4, 1, 1], 0)
            }
        };
        let b = build(&c, &meta("cpu.system", true));
        let (branches, leaf) = b.persisted(false).unwrap();
        assert_eq!(branches, ["dal", "web01.dal.mysite.com", "cpu"]);
        assert_eq!(leaf, "system");
        assert_eq!(hex_upper(&branch_id(1, &branches[..1])), "00010001838F");
        assert_eq!(
            hex_upper(&branch_id(1, &branches[..2])),
            "00010001838F5C9B027E"
        );
        assert_eq!(
            hex_upper(&branch_id(1, branches)),
            "00010001838F5C9B027E000181A8"
        );
        assert_eq!(hex_upper(&leaf_qualifier(leaf)[5..]), "CB1C722F");
        let b = build(&c, &meta("app.connections", false));
        let (branches, leaf) = b.persisted(false).unwrap();
        assert_eq!(
            (branches, leaf),
            (
                &[
                    "dal".to_string(),
                    "web01.dal.mysite.com".into(),
                    "app".into()
                ][..],
                "connections"
            )
        );
        assert_eq!(
            hex_upper(&branch_id(1, branches)),
            "00010001838F5C9B027E00017A21"
        );
    }

    #[test]
    fn java_split_semantics() {
        let dot = Regex::new(r"\.").unwrap();
        assert_eq!(java_split(&dot, "sys.cpu.0"), ["sys", "cpu", "0"]);
        assert_eq!(java_split(&dot, "a..b."), ["a", "", "b"]);
        assert_eq!(java_split(&dot, ".a"), ["", "a"]);
        assert!(java_split(&Regex::new(".").unwrap(), "sys.cpu.0").is_empty());
        assert_eq!(java_split(&dot, "nodot"), ["nodot"]);
    }

    #[test]
    fn skipped_levels_close_up_and_a_single_name_stores_nothing() {
        let mut t = Tree {
            tree_id: 1,
            ..Default::default()
        };
        t.add_rule(rule(0, 0, RuleType::Tagk, "nope"));
        t.add_rule(rule(1, 0, RuleType::Metric, ""));
        let c = CompiledTree::new(t).unwrap();
        let meta = test_meta("h");
        let b = build(&c, &meta);
        assert_eq!(b.elements, ["sys.cpu.0"]);
        assert_eq!(b.persisted(false), None);
        let view = preview(&c.tree, &b, "0102030405").unwrap();
        assert_eq!(view.leaves.as_ref().unwrap()[0].display_name, "sys.cpu.0");
    }
}
