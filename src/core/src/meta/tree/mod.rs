//! OpenTSDB trees in `tsdb-tree`: definitions (row `<treeId:2>`, column `tree`), rules
//! (`tree_rule:<level>:<order>` in the same row), branches and leaves (see `branch`),
//! collisions (row `<treeId>01`) and not-matched entries (row `<treeId>02`), plus the
//! TreeBuilder that files series into them.

pub mod branch;
pub mod builder;
pub mod rule;

use crate::meta::json::esc;
use crate::meta::{MetaCtx, MetaError, MetaResult};
use branch::{tree_key, BRANCH_QUALIFIER, FAMILY};
use parking_lot::Mutex;
use rule::{TreeRule, TreeRuleUpdate};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tsgate_schema::hex_upper;
use tsgate_store::{Mutation, RowMutations, Scan};

pub const TREE_QUALIFIER: &[u8] = b"tree";
pub const COLLISION_ROW_SUFFIX: u8 = 0x01;
pub const NOT_MATCHED_ROW_SUFFIX: u8 = 0x02;
pub const COLLISION_PREFIX: &[u8] = b"tree_collision:";
pub const NOT_MATCHED_PREFIX: &[u8] = b"tree_not_matched:";

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tree {
    pub tree_id: u16,
    pub name: String,
    pub description: String,
    pub notes: String,
    pub strict_match: bool,
    pub enabled: bool,
    pub store_failures: bool,
    pub created: u64,
    /// level → order → rule.
    pub rules: BTreeMap<i32, BTreeMap<i32, TreeRule>>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredTree {
    #[serde(default)]
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    notes: String,
    #[serde(default)]
    strict_match: bool,
    #[serde(default)]
    created: u64,
    #[serde(default)]
    enabled: bool,
    #[serde(default)]
    store_failures: bool,
}

impl Tree {
    /// `{"name":..,"description":..,"notes":..,"strictMatch":..,"created":..,"enabled":..,"storeFailures":..}`.
    pub fn storage_json(&self) -> String {
        format!(
            "{{\"name\":{},\"description\":{},\"notes\":{},\"strictMatch\":{},\"created\":{},\"enabled\":{},\"storeFailures\":{}}}",
            esc(&self.name),
            esc(&self.description),
            esc(&self.notes),
            self.strict_match,
            self.created,
            self.enabled,
            self.store_failures
        )
    }

    /// API order: name, description, notes, rules, created, treeId, strictMatch,
    /// storeFailures, enabled.
    pub fn api_json(&self) -> String {
        let rules = if self.rules.is_empty() {
            "null".to_string()
        } else {
            let levels: Vec<String> = self
                .rules
                .iter()
                .map(|(l, orders)| {
                    let o: Vec<String> = orders
                        .iter()
                        .map(|(o, r)| format!("\"{o}\":{}", r.to_json()))
                        .collect();
                    format!("\"{l}\":{{{}}}", o.join(","))
                })
                .collect();
            format!("{{{}}}", levels.join(","))
        };
        format!(
            "{{\"name\":{},\"description\":{},\"notes\":{},\"rules\":{},\"created\":{},\"treeId\":{},\"strictMatch\":{},\"storeFailures\":{},\"enabled\":{}}}",
            esc(&self.name),
            esc(&self.description),
            esc(&self.notes),
            rules,
            self.created,
            self.tree_id,
            self.strict_match,
            self.store_failures,
            self.enabled
        )
    }

    pub fn rule(&self, level: i32, order: i32) -> Option<&TreeRule> {
        self.rules.get(&level).and_then(|l| l.get(&order))
    }

    pub fn add_rule(&mut self, r: TreeRule) {
        self.rules.entry(r.level).or_default().insert(r.order, r);
    }

    /// Builds a tree from its row's cells (`tree` + `tree_rule:*`); `None` without `tree`.
    fn from_cells(tree_id: u16, cells: &[tsgate_store::Cell]) -> Option<Tree> {
        let def = cells.iter().find(|c| c.qualifier == TREE_QUALIFIER)?;
        let s: StoredTree = serde_json::from_slice(&def.value).ok()?;
        let mut t = Tree {
            tree_id,
            name: s.name,
            description: s.description,
            notes: s.notes,
            strict_match: s.strict_match,
            enabled: s.enabled,
            store_failures: s.store_failures,
            created: s.created,
            rules: BTreeMap::new(),
        };
        for c in cells
            .iter()
            .filter(|c| c.qualifier.starts_with(rule::QUALIFIER_PREFIX))
        {
            match TreeRule::from_json(&c.value) {
                Ok(r) => t.add_rule(r),
                Err(e) => {
                    tracing::warn!(tree = tree_id, error = %e, "skipping an undecodable tree rule")
                }
            }
        }
        Some(t)
    }
}

/// Parses a tree ID as OpenTSDB accepts it: 1..=65535.
pub fn check_tree_id(id: i64) -> MetaResult<u16> {
    if !(1..=65535).contains(&id) {
        return Err(MetaError::bad("Invalid Tree ID"));
    }
    Ok(id as u16)
}

/// The first key after every key starting with `p` (empty = to the end).
pub fn prefix_stop(p: &[u8]) -> Vec<u8> {
    let mut s = p.to_vec();
    while let Some(last) = s.pop() {
        if last < 0xFF {
            s.push(last + 1);
            return s;
        }
    }
    s
}

pub fn fetch(ctx: &MetaCtx, tree_id: u16) -> MetaResult<Option<Tree>> {
    let cells = ctx
        .store
        .get(&ctx.tables.tree, &tree_key(tree_id), &[FAMILY])?;
    Ok(Tree::from_cells(tree_id, &cells))
}

pub fn not_found(tree_id: impl std::fmt::Display) -> MetaError {
    MetaError::NotFound(format!("Unable to locate tree: {tree_id}"))
}

pub fn fetch_required(ctx: &MetaCtx, tree_id: u16) -> MetaResult<Tree> {
    fetch(ctx, tree_id)?.ok_or_else(|| not_found(tree_id))
}

/// Every tree (rows with a 2-byte key), by ID.
pub fn fetch_all(ctx: &MetaCtx) -> MetaResult<Vec<Tree>> {
    let scan = Scan {
        families: vec![FAMILY.to_vec()],
        row_regex: Some("^..$".into()),
        ..Default::default()
    };
    let mut out = Vec::new();
    for row in ctx.store.scan(&ctx.tables.tree, &scan)? {
        let row = row?;
        if row.key.len() == 2 {
            if let Some(t) =
                Tree::from_cells(u16::from_be_bytes([row.key[0], row.key[1]]), &row.cells)
            {
                out.push(t);
            }
        }
    }
    Ok(out)
}

/// What a tree POST/PUT carried; `None` = not set.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TreeUpdate {
    #[serde(default)]
    pub tree_id: Option<i64>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub notes: Option<String>,
    #[serde(default)]
    pub strict_match: Option<bool>,
    #[serde(default)]
    pub enabled: Option<bool>,
    #[serde(default)]
    pub store_failures: Option<bool>,
}

fn set(v: &Option<String>) -> Option<&String> {
    v.as_ref().filter(|s| !s.is_empty())
}

impl TreeUpdate {
    /// Strings count when non-empty (OpenTSDB's setters compare against a blank tree); flags
    /// count whenever given, so that a POST can switch a tree off again.
    pub fn changed(&self) -> bool {
        set(&self.name).is_some()
            || set(&self.description).is_some()
            || set(&self.notes).is_some()
            || self.strict_match.is_some()
            || self.enabled.is_some()
            || self.store_failures.is_some()
    }

    fn apply(&self, stored: &Tree, overwrite: bool) -> Tree {
        let base = if overwrite {
            Tree {
                tree_id: stored.tree_id,
                created: stored.created,
                rules: stored.rules.clone(),
                ..Default::default()
            }
        } else {
            stored.clone()
        };
        Tree {
            name: set(&self.name).cloned().unwrap_or(base.name.clone()),
            description: set(&self.description)
                .cloned()
                .unwrap_or(base.description.clone()),
            notes: set(&self.notes).cloned().unwrap_or(base.notes.clone()),
            strict_match: self.strict_match.unwrap_or(base.strict_match),
            enabled: self.enabled.unwrap_or(base.enabled),
            store_failures: self.store_failures.unwrap_or(base.store_failures),
            ..base
        }
    }
}

/// Creates a tree (disabled unless asked otherwise) with the next free ID (max + 1) and its
/// root branch.
pub fn create(ctx: &MetaCtx, req: &TreeUpdate) -> MetaResult<Tree> {
    if req.tree_id.is_some_and(|t| t != 0) {
        return Err(MetaError::bad("Tree ID has already been set"));
    }
    if set(&req.name).is_none() {
        return Err(MetaError::bad("Tree was missing the name"));
    }
    let t = &ctx.tables.tree;
    for _ in 0..16 {
        let next = fetch_all(ctx)?
            .iter()
            .map(|t| t.tree_id as u32)
            .max()
            .unwrap_or(0)
            + 1;
        if next > 65535 {
            return Err(MetaError::bad("Exhausted all Tree IDs"));
        }
        let id = next as u16;
        let tree = req.apply(
            &Tree {
                tree_id: id,
                created: tsgate_common::clock::now_s(),
                ..Default::default()
            },
            false,
        );
        if ctx.store.check_and_put(
            t,
            &tree_key(id),
            FAMILY,
            TREE_QUALIFIER,
            None,
            tree.storage_json().as_bytes(),
        )? {
            ctx.store.check_and_put(
                t,
                &tree_key(id),
                FAMILY,
                BRANCH_QUALIFIER,
                None,
                branch::branch_json::<&str>(&[]).as_bytes(),
            )?;
            return Ok(tree);
        }
    }
    Err(MetaError::CasFailed(
        "Unable to save changes to tree: 0".into(),
    ))
}

/// POST (merge) / PUT (replace) of an existing tree's fields; rules are untouched.
pub fn update(ctx: &MetaCtx, tree_id: u16, req: &TreeUpdate, overwrite: bool) -> MetaResult<Tree> {
    let cells = ctx
        .store
        .get(&ctx.tables.tree, &tree_key(tree_id), &[FAMILY])?;
    let stored = Tree::from_cells(tree_id, &cells).ok_or_else(|| not_found(tree_id))?;
    if !req.changed() {
        return Err(MetaError::NotModified);
    }
    let token = cells
        .iter()
        .find(|c| c.qualifier == TREE_QUALIFIER)
        .map(|c| c.value.clone());
    let tree = req.apply(&stored, overwrite);
    let ok = ctx.store.check_and_put(
        &ctx.tables.tree,
        &tree_key(tree_id),
        FAMILY,
        TREE_QUALIFIER,
        token.as_deref(),
        tree.storage_json().as_bytes(),
    )?;
    if !ok {
        return Err(MetaError::CasFailed(format!(
            "Unable to save changes to tree: {tree_id}"
        )));
    }
    fetch_required(ctx, tree_id)
}

/// Deletes a tree's branches, leaves, collisions and not-matched entries; with `definition`
/// also the tree and its rules.
pub fn delete(ctx: &MetaCtx, tree_id: u16, definition: bool) -> MetaResult<()> {
    let key = tree_key(tree_id);
    let scan = Scan {
        start: key.clone(),
        stop: prefix_stop(&key),
        families: vec![FAMILY.to_vec()],
        ..Default::default()
    };
    let mut batch = Vec::new();
    for row in ctx.store.scan(&ctx.tables.tree, &scan)? {
        let row = row?;
        if row.key.len() > 2 || definition {
            batch.push(RowMutations {
                row: row.key,
                mutations: vec![Mutation::DeleteRow],
            });
            continue;
        }
        // The tree row keeps its definition and rules; its root branch and leaves go.
        let doomed: Vec<Mutation> = row
            .cells
            .iter()
            .filter(|c| {
                c.qualifier != TREE_QUALIFIER && !c.qualifier.starts_with(rule::QUALIFIER_PREFIX)
            })
            .map(|c| Mutation::Delete {
                family: FAMILY.to_vec(),
                qualifier: c.qualifier.clone(),
            })
            .collect();
        if !doomed.is_empty() {
            batch.push(RowMutations {
                row: row.key,
                mutations: doomed,
            });
        }
        if batch.len() >= 1024 {
            ctx.store
                .mutate(&ctx.tables.tree, std::mem::take(&mut batch))?;
        }
    }
    if !batch.is_empty() {
        ctx.store.mutate(&ctx.tables.tree, batch)?;
    }
    Ok(())
}

fn rule_cell(ctx: &MetaCtx, tree_id: u16, level: i32, order: i32) -> MetaResult<Option<Vec<u8>>> {
    let cells = ctx
        .store
        .get(&ctx.tables.tree, &tree_key(tree_id), &[FAMILY])?;
    let q = rule::qualifier(level, order);
    Ok(cells
        .into_iter()
        .find(|c| c.qualifier == q)
        .map(|c| c.value))
}

/// The tree a rule request addresses (404 when missing) and the rule's level and order.
pub fn rule_address(ctx: &MetaCtx, req: &TreeRuleUpdate) -> MetaResult<(Tree, i32, i32)> {
    let tree_id = check_tree_id(req.tree_id.unwrap_or(0) as i64)?;
    Ok((
        fetch_required(ctx, tree_id)?,
        req.level.unwrap_or(0),
        req.order.unwrap_or(0),
    ))
}

/// POST (merge) / PUT (replace) of one rule, validated, compare-and-set on its JSON.
pub fn sync_rule(ctx: &MetaCtx, req: &TreeRuleUpdate, overwrite: bool) -> MetaResult<TreeRule> {
    let (tree, level, order) = rule_address(ctx, req)?;
    if !req.changed() {
        return Err(MetaError::NotModified);
    }
    let token = rule_cell(ctx, tree.tree_id, level, order)?;
    let mut r = match (&token, overwrite) {
        (Some(v), false) => TreeRule::from_json(v).map_err(|e| MetaError::bad(e.to_string()))?,
        _ => TreeRule::default(),
    };
    r.level = level;
    r.order = order;
    r.tree_id = tree.tree_id as i32;
    req.apply_to(&mut r)
        .map_err(|e| MetaError::bad(e.to_string()))?;
    r.validate().map_err(|e| MetaError::bad(e.to_string()))?;
    let ok = ctx.store.check_and_put(
        &ctx.tables.tree,
        &tree_key(tree.tree_id),
        FAMILY,
        &rule::qualifier(level, order),
        token.as_deref(),
        r.to_json().as_bytes(),
    )?;
    if !ok {
        return Err(MetaError::CasFailed(format!(
            "Unable to save rule {r} to storage"
        )));
    }
    Ok(r)
}

pub fn delete_rule(ctx: &MetaCtx, tree_id: u16, level: i32, order: i32) -> MetaResult<()> {
    ctx.store.mutate(
        &ctx.tables.tree,
        vec![RowMutations {
            row: tree_key(tree_id),
            mutations: vec![Mutation::Delete {
                family: FAMILY.to_vec(),
                qualifier: rule::qualifier(level, order),
            }],
        }],
    )?;
    Ok(())
}

pub fn delete_all_rules(ctx: &MetaCtx, tree_id: u16) -> MetaResult<()> {
    let cells = ctx
        .store
        .get(&ctx.tables.tree, &tree_key(tree_id), &[FAMILY])?;
    let doomed: Vec<Mutation> = cells
        .into_iter()
        .filter(|c| c.qualifier.starts_with(rule::QUALIFIER_PREFIX))
        .map(|c| Mutation::Delete {
            family: FAMILY.to_vec(),
            qualifier: c.qualifier,
        })
        .collect();
    if !doomed.is_empty() {
        ctx.store.mutate(
            &ctx.tables.tree,
            vec![RowMutations {
                row: tree_key(tree_id),
                mutations: doomed,
            }],
        )?;
    }
    Ok(())
}

/// The collision (`suffix` 01) or not-matched (02) entries of a tree: TSUID hex → value,
/// optionally only for some TSUIDs.
pub fn failures(
    ctx: &MetaCtx,
    tree_id: u16,
    suffix: u8,
    only: &[Vec<u8>],
) -> MetaResult<Vec<(String, String)>> {
    let prefix = if suffix == COLLISION_ROW_SUFFIX {
        COLLISION_PREFIX
    } else {
        NOT_MATCHED_PREFIX
    };
    let mut row = tree_key(tree_id);
    row.push(suffix);
    let mut out = Vec::new();
    for c in ctx.store.get(&ctx.tables.tree, &row, &[FAMILY])? {
        let Some(tsuid) = c.qualifier.strip_prefix(prefix) else {
            continue;
        };
        if !only.is_empty() && !only.iter().any(|t| t.as_slice() == tsuid) {
            continue;
        }
        out.push((
            hex_upper(tsuid),
            String::from_utf8_lossy(&c.value).into_owned(),
        ));
    }
    Ok(out)
}

/// A tree ready to file series: its rules compiled, by level then order.
pub struct CompiledTree {
    pub tree: Tree,
    pub levels: Vec<Vec<builder::CompiledRule>>,
}

impl CompiledTree {
    pub fn new(tree: Tree) -> Result<CompiledTree, rule::RuleError> {
        let mut levels = Vec::new();
        for orders in tree.rules.values() {
            let mut l = Vec::new();
            for r in orders.values() {
                let (regex, separator) = r.compile()?;
                l.push(builder::CompiledRule {
                    rule: r.clone(),
                    regex,
                    separator,
                });
            }
            levels.push(l);
        }
        Ok(CompiledTree { tree, levels })
    }
}

/// The enabled trees, reloaded at most every 5 minutes (as OpenTSDB does) or as soon as the
/// API changes a tree or rule in this process.
#[derive(Default)]
pub struct TreeCache {
    loaded: Mutex<Option<(Instant, Arc<Vec<CompiledTree>>)>>,
}

const TREE_RELOAD: Duration = Duration::from_secs(300);

impl TreeCache {
    pub fn enabled(&self, ctx: &MetaCtx) -> MetaResult<Arc<Vec<CompiledTree>>> {
        let mut g = self.loaded.lock();
        if let Some((at, trees)) = &*g {
            if at.elapsed() < TREE_RELOAD {
                return Ok(trees.clone());
            }
        }
        let mut trees = Vec::new();
        for t in fetch_all(ctx)?.into_iter().filter(|t| t.enabled) {
            let id = t.tree_id;
            match CompiledTree::new(t) {
                Ok(c) => trees.push(c),
                Err(e) => {
                    tracing::warn!(tree = id, error = %e, "tree skipped: a rule does not compile")
                }
            }
        }
        let trees = Arc::new(trees);
        *g = Some((Instant::now(), trees.clone()));
        Ok(trees)
    }

    pub fn invalidate(&self) {
        *self.loaded.lock() = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_json_forms() {
        let mut t = Tree {
            tree_id: 1,
            name: "Test Tree".into(),
            created: 1356998400,
            enabled: true,
            ..Default::default()
        };
        assert_eq!(
            t.storage_json(),
            r#"{"name":"Test Tree","description":"","notes":"","strictMatch":false,"created":1356998400,"enabled":true,"storeFailures":false}"#
        );
        assert_eq!(
            t.api_json(),
            r#"{"name":"Test Tree","description":"","notes":"","rules":null,"created":1356998400,"treeId":1,"strictMatch":false,"storeFailures":false,"enabled":true}"#
        );
        t.add_rule(TreeRule {
            kind: Some(rule::RuleType::Metric),
            tree_id: 1,
            level: 1,
            ..Default::default()
        });
        assert!(t
            .api_json()
            .contains(r#""rules":{"1":{"0":{"type":"METRIC","#));
        assert_eq!(prefix_stop(&[0, 1]), vec![0, 2]);
        assert_eq!(prefix_stop(&[0, 0xFF]), vec![1]);
        assert!(check_tree_id(0).is_err() && check_tree_id(65536).is_err());
    }
}
