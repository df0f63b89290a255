//! Rewrites a `tsdb` row into OpenTSDB's compacted form, as its compaction queue does:
//! read the row, merge, put the compacted column, delete the columns merged into it.

use crate::schema::compaction::{plan_compaction, StoredColumn};
use crate::schema::SchemaError;
use crate::store::{Mutation, RowMutations, SharedStore, StoreError};

pub const DATA_FAMILY: &[u8] = b"t";

#[derive(Debug, thiserror::Error)]
pub enum CompactError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("row {row} cannot be compacted: {source}")]
    Corrupt { row: String, source: SchemaError },
}

/// Compacts one row; returns whether anything was written.
pub fn compact_row(store: &SharedStore, table: &str, row: &[u8]) -> Result<bool, CompactError> {
    let cells = store.get(table, row, &[DATA_FAMILY])?;
    let cols: Vec<StoredColumn> =
        cells.iter().map(|c| StoredColumn { qualifier: &c.qualifier, value: &c.value, ts: c.timestamp }).collect();
    let plan = plan_compaction(&cols)
        .map_err(|source| CompactError::Corrupt { row: crate::schema::hex_upper(row), source })?;
    let Some(plan) = plan else { return Ok(false) };
    let mut mutations = Vec::with_capacity(plan.delete.len() + 1);
    if let Some((qualifier, value)) = plan.put {
        mutations.push(Mutation::Put { family: DATA_FAMILY.to_vec(), qualifier, value });
    }
    mutations.extend(plan.delete.into_iter().map(|qualifier| Mutation::Delete { family: DATA_FAMILY.to_vec(), qualifier }));
    if mutations.is_empty() {
        return Ok(false);
    }
    store.mutate(table, vec![RowMutations { row: row.to_vec(), mutations }])?;
    Ok(true)
}
