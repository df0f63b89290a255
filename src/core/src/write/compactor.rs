//! Rewrites `tsdb` rows into OpenTSDB's compacted form, as its compaction queue does: read the
//! row, merge, put the compacted column, delete the columns merged into it.
//!
//! Several writers (tsgate nodes sharing one HBase) may hold points of the same series-hour:
//! each writes its own partial columns, and any of them may compact the row. Between this
//! compactor's read and its delete another node may write a column — a new qualifier (never
//! deleted: only columns read are) or one it read (same qualifier, newer value). Two rules keep
//! every point:
//! - Both writes carry the timestamp `T` of the newest cell read (HBase `mutateRowsTs`; rows
//!   whose newest cells share a timestamp go in one call). The deletes then remove only
//!   versions at or before `T`: a value written after the read has a later timestamp and
//!   survives. The compacted column is not newer than such a value either,
//!   so readers, which resolve duplicate points by cell timestamp, keep preferring the newer one.
//! - The compacted column is put first, the old columns deleted after (HBase's gateway does not
//!   apply a row's puts and deletes atomically): a crash in between leaves duplicates that
//!   agree, never a gap; the next compaction removes them.
//!
//! What remains is a write landing in the very millisecond `T` (HBase cannot order it after
//! the delete). On a store shared between processes a row is therefore compacted only once its
//! newest cell is `SETTLE` old, which closes that window unless clocks are more than `SETTLE`
//! apart; such rows are retried later.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tsgate_schema::compaction::plan_compaction;
use tsgate_schema::SchemaError;
use tsgate_store::{Cell, Mutation, RowMutations, SharedStore, StoreError};

pub use tsgate_schema::DATA_FAMILY;

/// How old a row's newest cell must be before it is compacted on a shared store.
pub const SETTLE: Duration = Duration::from_secs(1);

/// Rows read per `get_rows` call.
const READ_BATCH: usize = 512;

#[derive(Debug, thiserror::Error)]
pub enum CompactError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("row {row} cannot be compacted: {source}")]
    Corrupt { row: String, source: SchemaError },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Already compact (or holds appends, which OpenTSDB never rewrites).
    Unchanged,
    Compacted,
    /// Written too recently on a shared store: try again later.
    TooFresh,
}

pub struct Compactor {
    store: SharedStore,
    table: String,
    settle_ms: u64,
    /// Rollup cells to build from each row compacted (`write::rollup`).
    rollups: Option<std::sync::Arc<super::rollup::RollupBuild>>,
}

use tsgate_common::clock::now_ms;

impl Compactor {
    pub fn new(store: SharedStore, table: &str) -> Compactor {
        let settle_ms = if store.shared() {
            SETTLE.as_millis() as u64
        } else {
            0
        };
        Compactor {
            store,
            table: table.to_string(),
            settle_ms,
            rollups: None,
        }
    }

    /// Waits for a row's newest cell to be `settle` old instead ([`SETTLE`] on a shared store,
    /// none otherwise). Tests lengthen it: a row is then certainly too fresh, however slowly a
    /// loaded machine runs the test.
    pub fn with_settle(mut self, settle: Duration) -> Self {
        self.settle_ms = settle.as_millis() as u64;
        self
    }

    /// Also builds the rollup cells of each row it is handed (compacted or already compact).
    pub fn with_rollups(
        mut self,
        rollups: Option<std::sync::Arc<super::rollup::RollupBuild>>,
    ) -> Self {
        self.rollups = rollups;
        self
    }

    /// The rollup cells of rows whose cells were just read; false when they could not be
    /// written (the rows are to be compacted again).
    fn build_rollups(&self, rows: &[(&[u8], &[Cell])]) -> bool {
        let Some(b) = &self.rollups else {
            return true;
        };
        let merged: Vec<Vec<tsgate_schema::RawPoint>> = rows
            .iter()
            .map(|(_, cells)| {
                let cols = tsgate_store::columns(cells);
                tsgate_schema::compaction::merge_columns(&cols).points
            })
            .collect();
        let raw: Vec<super::rollup::RawRow> = rows
            .iter()
            .zip(&merged)
            .map(|((key, _), points)| super::rollup::RawRow { key, points })
            .collect();
        match b.build(&self.store, &raw) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(error = %e, rows = rows.len(), "writing rollup cells failed; will retry");
                false
            }
        }
    }

    /// Compacts one row (one read).
    pub fn compact_row(&self, row: &[u8]) -> Result<Outcome, CompactError> {
        let cells = self.store.get(&self.table, row, &[DATA_FAMILY])?;
        let planned = self.plan(row, &cells)?;
        if !matches!(planned, Planned::Done(Outcome::TooFresh)) {
            self.build_rollups(&[(row, &cells)]);
        }
        match planned {
            Planned::Write(w) => {
                self.write(w.newest, vec![(row.to_vec(), w.put, w.delete)])?;
                Ok(Outcome::Compacted)
            }
            Planned::Done(o) => Ok(o),
        }
    }

    /// Compacts rows, reading them in batches; returns the rows to try again later (too fresh,
    /// or the store failed). Undecodable rows are logged and left to `fsck`. Rows whose newest
    /// cells share a timestamp (written by one flush) are rewritten together: one batch of puts,
    /// then one of deletes, per timestamp.
    pub fn compact(&self, rows: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let mut later = Vec::new();
        for chunk in rows.chunks(READ_BATCH) {
            let read = match self.store.get_rows(&self.table, chunk, &[DATA_FAMILY]) {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(error = %e, rows = chunk.len(), "compaction read failed; will retry");
                    later.extend_from_slice(chunk);
                    continue;
                }
            };
            let mut by_ts: BTreeMap<u64, Vec<RowWrite>> = BTreeMap::new();
            // Rows whose rollup cells are built from what was read (not those still settling).
            let mut settled: Vec<(&[u8], &[Cell])> = Vec::new();
            for (row, cells) in chunk.iter().zip(&read) {
                if self.rollups.is_some() {
                    settled.push((row, cells));
                }
                match self.plan(row, cells) {
                    Ok(Planned::Write(w)) => {
                        by_ts
                            .entry(w.newest)
                            .or_default()
                            .push((row.clone(), w.put, w.delete))
                    }
                    Ok(Planned::Done(Outcome::TooFresh)) => {
                        settled.pop();
                        later.push(row.clone())
                    }
                    Ok(Planned::Done(_)) => {}
                    Err(e) => tracing::warn!(error = %e, "compaction skipped"),
                }
            }
            if !settled.is_empty() && !self.build_rollups(&settled) {
                later.extend(settled.iter().map(|(r, _)| r.to_vec()));
            }
            for (ts, writes) in by_ts {
                let rows: Vec<Vec<u8>> = writes.iter().map(|w| w.0.clone()).collect();
                if let Err(e) = self.write(ts, writes) {
                    tracing::warn!(error = %e, rows = rows.len(), "compaction write failed; will retry");
                    later.extend(rows);
                }
            }
        }
        later
    }

    /// Compacts now, waiting out rows still settling for up to `patience` (used when stopping
    /// and after a WAL replay, when no later pass will come). Returns the rows left over.
    pub fn compact_all(&self, rows: &[Vec<u8>], patience: Duration) -> Vec<Vec<u8>> {
        let deadline = Instant::now() + patience;
        let mut left = self.compact(rows);
        // A store that refuses writes (disk full) takes none while this waits: the rows stay
        // uncompacted (readers merge them) rather than holding up a shutdown.
        while !left.is_empty()
            && Instant::now() < deadline
            && self.store.refusing_writes().is_none()
        {
            std::thread::sleep(Duration::from_millis(self.settle_ms.clamp(50, 250)));
            left = self.compact(&left);
        }
        left
    }

    fn plan(&self, row: &[u8], cells: &[Cell]) -> Result<Planned, CompactError> {
        let cols = tsgate_store::columns(cells);
        let plan = plan_compaction(&cols).map_err(|source| CompactError::Corrupt {
            row: tsgate_schema::hex_upper(row),
            source,
        })?;
        let Some(plan) = plan else {
            return Ok(Planned::Done(Outcome::Unchanged));
        };
        if plan.put.is_none() && plan.delete.is_empty() {
            return Ok(Planned::Done(Outcome::Unchanged));
        }
        let newest = cells.iter().map(|c| c.timestamp).max().unwrap_or(0);
        if self.settle_ms > 0 && newest + self.settle_ms > now_ms() {
            return Ok(Planned::Done(Outcome::TooFresh));
        }
        let put = plan.put.map(|(qualifier, value)| Mutation::Put {
            family: DATA_FAMILY.to_vec(),
            qualifier,
            value,
        });
        let delete = plan
            .delete
            .into_iter()
            .map(|qualifier| Mutation::Delete {
                family: DATA_FAMILY.to_vec(),
                qualifier,
            })
            .collect();
        Ok(Planned::Write(Write {
            newest,
            put,
            delete,
        }))
    }

    /// The compacted columns first, then the deletes, all at `ts` (see the module comment).
    /// A store whose batches are atomic takes both in one batch: no crash can then leave a
    /// row holding its points twice (no later pass would see that row again).
    fn write(&self, ts: u64, writes: Vec<RowWrite>) -> Result<(), StoreError> {
        if self.store.atomic_batches() {
            let batch = writes
                .into_iter()
                .map(|(row, put, delete)| RowMutations {
                    row,
                    mutations: put.into_iter().chain(delete).collect(),
                })
                .collect();
            return self.store.mutate_at(&self.table, batch, ts);
        }
        let mut puts = Vec::new();
        let mut deletes = Vec::new();
        for (row, put, delete) in writes {
            if let Some(p) = put {
                puts.push(RowMutations {
                    row: row.clone(),
                    mutations: vec![p],
                });
            }
            if !delete.is_empty() {
                deletes.push(RowMutations {
                    row,
                    mutations: delete,
                });
            }
        }
        if !puts.is_empty() {
            self.store.mutate_at(&self.table, puts, ts)?;
        }
        if !deletes.is_empty() {
            self.store.mutate_at(&self.table, deletes, ts)?;
        }
        Ok(())
    }
}

/// A row to rewrite: its key, the compacted column to put, the columns to delete.
type RowWrite = (Vec<u8>, Option<Mutation>, Vec<Mutation>);

struct Write {
    newest: u64,
    put: Option<Mutation>,
    delete: Vec<Mutation>,
}

enum Planned {
    Write(Write),
    Done(Outcome),
}
