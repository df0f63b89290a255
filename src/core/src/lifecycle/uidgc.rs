//! `tsgate uid gc`: UIDs no stored series uses any more (after `delete_series` or retention),
//! removed with OpenTSDB's cells for them: the forward mapping (name → UID), the reverse one
//! (UID → name) and the UIDMeta beside it.
//!
//! A UID is only collected once its forward cell is older than `min_age`: a node that has just
//! assigned it may still hold the points that will use it (in its write-ahead log or buffers).
//! Each forward cell is removed only if it still maps its name to the collected UID (a
//! compare-and-set against a concurrent rename or re-assignment).

use crate::uid::UidError;
use std::collections::HashSet;
use tsgate_schema::rowkey::KeyLayout;
use tsgate_schema::uid_table::{UidKind, ID_FAMILY, MAXID_ROW, NAME_FAMILY};
use tsgate_store::{Mutation, RowMutations, Scan, SharedStore, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum GcError {
    #[error("uid gc: {0}")]
    Store(#[from] StoreError),
    #[error("uid gc: {0}")]
    Uid(#[from] UidError),
}

/// One collected UID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collected {
    pub kind: UidKind,
    pub name: String,
    pub uid: Vec<u8>,
}

/// Finds (and unless `dry_run` removes) the UIDs no row of `data` uses whose forward cell is
/// older than `min_age_ms` at `now_ms`.
pub fn collect(
    store: &SharedStore,
    uid_table: &str,
    data_table: &str,
    layout: KeyLayout,
    min_age_ms: u64,
    now_ms: u64,
    dry_run: bool,
) -> Result<Vec<Collected>, GcError> {
    let mut used: [HashSet<Vec<u8>>; 3] = Default::default();
    let scan = Scan {
        families: vec![tsgate_schema::DATA_FAMILY.to_vec()],
        ..Default::default()
    };
    store.scan_rows(data_table, &scan, &mut |key, _| {
        if let Ok(rk) = layout.parse(key) {
            used[0].insert(rk.metric.to_vec());
            for (k, v) in rk.tag_pairs() {
                used[1].insert(k.to_vec());
                used[2].insert(v.to_vec());
            }
        }
        Ok(true)
    })?;
    let mut out = Vec::new();
    let forward = Scan {
        families: vec![ID_FAMILY.to_vec()],
        ..Default::default()
    };
    for row in store.scan(uid_table, &forward)? {
        let row = row?;
        if row.key == MAXID_ROW {
            continue;
        }
        for c in &row.cells {
            let Some(i) = UidKind::ALL
                .iter()
                .position(|k| k.qualifier() == c.qualifier)
            else {
                continue;
            };
            if used[i].contains(&c.value) || now_ms.saturating_sub(c.timestamp) < min_age_ms {
                continue;
            }
            out.push(Collected {
                kind: UidKind::ALL[i],
                name: String::from_utf8_lossy(&row.key).into_owned(),
                uid: c.value.clone(),
            });
        }
    }
    if dry_run {
        return Ok(out);
    }
    let mut removed = Vec::new();
    for c in out {
        let q = c.kind.qualifier();
        // The forward cell first, only if it still names this UID; then what hangs off it.
        let name = c.name.as_bytes();
        let cur = store.get(uid_table, name, &[ID_FAMILY])?;
        if !cur.iter().any(|x| x.qualifier == q && x.value == c.uid) {
            continue;
        }
        store.mutate(
            uid_table,
            vec![
                RowMutations {
                    row: name.to_vec(),
                    mutations: vec![Mutation::Delete {
                        family: ID_FAMILY.to_vec(),
                        qualifier: q.to_vec(),
                    }],
                },
                RowMutations {
                    row: c.uid.clone(),
                    mutations: vec![
                        Mutation::Delete {
                            family: NAME_FAMILY.to_vec(),
                            qualifier: q.to_vec(),
                        },
                        Mutation::Delete {
                            family: NAME_FAMILY.to_vec(),
                            qualifier: c.kind.meta_qualifier().to_vec(),
                        },
                    ],
                },
            ],
        )?;
        removed.push(c);
    }
    store.flush()?;
    Ok(removed)
}
