//! Branches and leaves in `tsdb-tree`: branch IDs (2-byte tree ID + the Java `String.hashCode`
//! of each path element), the `branch` column JSON, `leaf:<hash>` columns, and reading one
//! branch with its direct children and leaves for `/api/tree/branch`.

use crate::meta::json::{esc, java_cmp, StrMap};
use crate::meta::{MetaCtx, MetaError, MetaResult};
use std::collections::BTreeMap;
use tsgate_schema::uid_table::UidKind;
use tsgate_schema::{hex_upper, java_string_hash};
use tsgate_store::Scan;

pub use tsgate_schema::DATA_FAMILY as FAMILY;
pub const BRANCH_QUALIFIER: &[u8] = b"branch";
pub const LEAF_PREFIX: &[u8] = b"leaf:";
pub const ROOT: &str = "ROOT";

pub fn tree_key(tree_id: u16) -> Vec<u8> {
    tree_id.to_be_bytes().to_vec()
}

/// The ID of the branch reached by `names` (the path below ROOT) in a tree.
pub fn branch_id<S: AsRef<str>>(tree_id: u16, names: &[S]) -> Vec<u8> {
    let mut id = tree_key(tree_id);
    for n in names {
        id.extend_from_slice(&java_string_hash(n.as_ref()).to_be_bytes());
    }
    id
}

/// `{"path":{"0":"ROOT","1":..},"displayName":<last>}`: what the `branch` column holds.
pub fn branch_json<S: AsRef<str>>(names: &[S]) -> String {
    let mut o = String::from("{\"path\":{\"0\":\"ROOT\"");
    for (i, n) in names.iter().enumerate() {
        o.push_str(&format!(",\"{}\":{}", i + 1, esc(n.as_ref())));
    }
    let display = names.last().map(|n| n.as_ref()).unwrap_or(ROOT);
    o.push_str(&format!("}},\"displayName\":{}}}", esc(display)));
    o
}

pub fn leaf_qualifier(display: &str) -> Vec<u8> {
    let mut q = LEAF_PREFIX.to_vec();
    q.extend_from_slice(&java_string_hash(display).to_be_bytes());
    q
}

pub fn leaf_json(display: &str, tsuid_hex: &str) -> String {
    format!(
        "{{\"displayName\":{},\"tsuid\":{}}}",
        esc(display),
        esc(tsuid_hex)
    )
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredBranch {
    #[serde(default)]
    path: BTreeMap<String, String>,
    #[serde(default)]
    display_name: String,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredLeaf {
    #[serde(default)]
    pub display_name: String,
    #[serde(default)]
    pub tsuid: String,
}

pub fn parse_leaf(v: &[u8]) -> Option<StoredLeaf> {
    serde_json::from_slice(v).ok()
}

#[derive(Debug, Clone, PartialEq)]
pub struct LeafView {
    pub metric: String,
    pub tags: Option<StrMap>,
    pub tsuid: String,
    pub display_name: String,
}

impl LeafView {
    pub fn api_json(&self) -> String {
        format!(
            "{{\"metric\":{},\"tags\":{},\"tsuid\":{},\"displayName\":{}}}",
            esc(&self.metric),
            self.tags
                .as_ref()
                .map(|t| StrMap::to_json(&t.java_hashmap_order()))
                .unwrap_or_else(|| "null".into()),
            esc(&self.tsuid),
            esc(&self.display_name)
        )
    }
}

/// A branch as the API shows it; `branches`/`leaves` are `None` (JSON null) when empty.
#[derive(Debug, Clone, PartialEq)]
pub struct BranchView {
    pub tree_id: u16,
    /// Path element names, ROOT first.
    pub path: Vec<String>,
    pub branches: Option<Vec<BranchView>>,
    pub leaves: Option<Vec<LeafView>>,
}

impl BranchView {
    pub fn display_name(&self) -> &str {
        self.path.last().map(|s| s.as_str()).unwrap_or(ROOT)
    }

    pub fn branch_id(&self) -> Vec<u8> {
        branch_id(self.tree_id, &self.path[1.min(self.path.len())..])
    }

    /// OpenTSDB's order: leaves, branches, path, treeId, displayName, branchId, depth.
    pub fn api_json(&self) -> String {
        let leaves = match &self.leaves {
            Some(l) => format!(
                "[{}]",
                l.iter().map(|x| x.api_json()).collect::<Vec<_>>().join(",")
            ),
            None => "null".into(),
        };
        let branches = match &self.branches {
            Some(b) => format!(
                "[{}]",
                b.iter().map(|x| x.api_json()).collect::<Vec<_>>().join(",")
            ),
            None => "null".into(),
        };
        let path: Vec<String> = self
            .path
            .iter()
            .enumerate()
            .map(|(i, n)| format!("\"{i}\":{}", esc(n)))
            .collect();
        format!(
            "{{\"leaves\":{leaves},\"branches\":{branches},\"path\":{{{}}},\"treeId\":{},\"displayName\":{},\"branchId\":\"{}\",\"depth\":{}}}",
            path.join(","),
            self.tree_id,
            esc(self.display_name()),
            hex_upper(&self.branch_id()),
            self.path.len().saturating_sub(1)
        )
    }

    /// Children and leaves sorted case-insensitively by name (Java's `compareToIgnoreCase`).
    pub fn sort(&mut self) {
        let key = |s: &str| s.to_lowercase();
        if let Some(b) = &mut self.branches {
            b.sort_by(|x, y| java_cmp(&key(x.display_name()), &key(y.display_name())));
        }
        if let Some(l) = &mut self.leaves {
            l.sort_by(|x, y| java_cmp(&key(&x.display_name), &key(&y.display_name)));
        }
    }
}

fn parse_branch(tree_id: u16, v: &[u8]) -> Option<BranchView> {
    let s: StoredBranch = serde_json::from_slice(v).ok()?;
    let mut path: Vec<(u32, String)> = s
        .path
        .into_iter()
        .filter_map(|(k, v)| Some((k.parse().ok()?, v)))
        .collect();
    path.sort_by_key(|p| p.0);
    let mut path: Vec<String> = path.into_iter().map(|p| p.1).collect();
    if path.is_empty() {
        path.push(if s.display_name.is_empty() {
            ROOT.into()
        } else {
            s.display_name
        });
    }
    Some(BranchView {
        tree_id,
        path,
        branches: None,
        leaves: None,
    })
}

/// The metric and tag names of a leaf's TSUID (best effort: unknown UIDs leave them empty).
fn leaf_names(ctx: &MetaCtx, tsuid_hex: &str) -> (String, Option<StrMap>) {
    let Some(t) = tsgate_schema::parse_hex(tsuid_hex) else {
        return (String::new(), None);
    };
    let l = &ctx.layout;
    if t.len() < l.metric_width || !(t.len() - l.metric_width).is_multiple_of(l.tag_width()) {
        return (String::new(), None);
    }
    let metric = ctx
        .uids
        .get_name(UidKind::Metric, &t[..l.metric_width])
        .map(|n| n.to_string())
        .unwrap_or_default();
    let mut tags = StrMap::default();
    for p in t[l.metric_width..].chunks_exact(l.tag_width()) {
        let (k, v) = p.split_at(l.tagk_width);
        if let (Ok(k), Ok(v)) = (
            ctx.uids.get_name(UidKind::Tagk, k),
            ctx.uids.get_name(UidKind::Tagv, v),
        ) {
            tags.insert(k.to_string(), Some(v.to_string()));
        }
    }
    (metric, Some(tags))
}

/// Escapes raw bytes for a store row regex.
pub fn bytes_regex(b: &[u8]) -> String {
    b.iter().map(|x| format!("\\x{x:02X}")).collect()
}

/// One branch with its direct children (their `branch` columns only) and its own leaves
/// (with metric and tag names), as `/api/tree/branch` shows it. `None` when absent.
pub fn fetch(ctx: &MetaCtx, id: &[u8]) -> MetaResult<Option<BranchView>> {
    if id.len() < 2 || !(id.len() - 2).is_multiple_of(4) {
        return Err(MetaError::bad(format!(
            "Invalid branch ID: {}",
            hex_upper(id)
        )));
    }
    let tree_id = u16::from_be_bytes([id[0], id[1]]);
    let stop = super::prefix_stop(id);
    // Only the branch's own row and rows exactly one level deeper (not the tree's collision
    // and not-matched rows, nor grandchildren).
    let scan = Scan {
        start: id.to_vec(),
        stop,
        families: vec![FAMILY.to_vec()],
        row_regex: Some(format!("^{}(?:.{{4}})?$", bytes_regex(id))),
        ..Default::default()
    };
    let mut me: Option<BranchView> = None;
    let mut children = Vec::new();
    let mut leaves = Vec::new();
    for row in ctx.store.scan(&ctx.tables.tree, &scan)? {
        let row = row?;
        if row.key == id {
            for c in &row.cells {
                if c.qualifier == BRANCH_QUALIFIER {
                    me = parse_branch(tree_id, &c.value);
                } else if c.qualifier.starts_with(LEAF_PREFIX) {
                    if let Some(l) = parse_leaf(&c.value) {
                        let (metric, tags) = leaf_names(ctx, &l.tsuid);
                        leaves.push(LeafView {
                            metric,
                            tags,
                            tsuid: l.tsuid,
                            display_name: l.display_name,
                        });
                    }
                }
            }
        } else if let Some(c) = row.cells.iter().find(|c| c.qualifier == BRANCH_QUALIFIER) {
            if let Some(b) = parse_branch(tree_id, &c.value) {
                children.push(b);
            }
        }
    }
    let Some(mut me) = me else { return Ok(None) };
    me.branches = (!children.is_empty()).then_some(children);
    me.leaves = (!leaves.is_empty()).then_some(leaves);
    me.sort();
    Ok(Some(me))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docs_example_ids() {
        // backends/hbase.rst: dal.web01.myapp.bytes_sent in tree 1.
        assert_eq!(hex_upper(&branch_id(1, &["dal"])), "00010001838F");
        assert_eq!(
            hex_upper(&branch_id(1, &["dal", "web01", "myapp"])),
            "00010001838F06BC4C5506387CF5"
        );
        assert_eq!(hex_upper(&leaf_qualifier("bytes_sent")[5..]), "530152EC");
        assert_eq!(&leaf_qualifier("bytes_sent")[..5], b"leaf:");
        assert_eq!(hex_upper(&branch_id::<&str>(1, &[])), "0001");
        // user_guide/trees.rst: sys → cpu.
        assert_eq!(
            hex_upper(&branch_id(1, &["sys", "cpu"])),
            "00010001BECD000181A8"
        );
    }

    #[test]
    fn stored_json_forms() {
        assert_eq!(
            branch_json::<&str>(&[]),
            r#"{"path":{"0":"ROOT"},"displayName":"ROOT"}"#
        );
        assert_eq!(
            branch_json(&["sys", "cpu"]),
            r#"{"path":{"0":"ROOT","1":"sys","2":"cpu"},"displayName":"cpu"}"#
        );
        assert_eq!(
            leaf_json("user", "000001000001000001"),
            r#"{"displayName":"user","tsuid":"000001000001000001"}"#
        );
        let b = parse_branch(1, branch_json(&["sys", "cpu"]).as_bytes()).unwrap();
        assert_eq!(b.path, vec!["ROOT", "sys", "cpu"]);
        assert_eq!(hex_upper(&b.branch_id()), "00010001BECD000181A8");
        assert_eq!(
            b.api_json(),
            r#"{"leaves":null,"branches":null,"path":{"0":"ROOT","1":"sys","2":"cpu"},"treeId":1,"displayName":"cpu","branchId":"00010001BECD000181A8","depth":2}"#
        );
    }
}
