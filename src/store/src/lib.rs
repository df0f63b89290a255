//! Storage shaped like HBase's data model: tables of rows, cells addressed by
//! family:qualifier, ordered scans, atomic increment and compare-and-set. One trait, so the
//! embedded engine, the HBase gateway and Cloud Bigtable are interchangeable (and testable
//! with one suite).

pub mod bigtable;
pub mod embedded;
pub mod hbase;
pub mod keycodec;
mod regex_emit;
pub mod throttle;
pub mod watch;

use std::sync::Arc;
use tsgate_schema::compaction::StoredColumn;
use tsgate_schema::DataValue;

/// One cell: family, qualifier, value and its (HBase-style, ms) timestamp.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    pub family: Vec<u8>,
    pub qualifier: Vec<u8>,
    pub value: Vec<u8>,
    pub timestamp: u64,
}

/// A cell lent to a [`RowVisitor`] for one call: what a scan reads, without copying it out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CellRef<'a> {
    pub family: &'a [u8],
    pub qualifier: &'a [u8],
    pub value: &'a [u8],
    pub timestamp: u64,
}

impl<'a> From<&'a Cell> for CellRef<'a> {
    fn from(c: &'a Cell) -> Self {
        CellRef {
            family: &c.family,
            qualifier: &c.qualifier,
            value: &c.value,
            timestamp: c.timestamp,
        }
    }
}

impl From<CellRef<'_>> for Cell {
    fn from(c: CellRef<'_>) -> Self {
        Cell {
            family: c.family.to_vec(),
            qualifier: c.qualifier.to_vec(),
            value: c.value.to_vec(),
            timestamp: c.timestamp,
        }
    }
}

impl Cell {
    /// The cell as the row codec reads it (`merge_columns`, `plan_compaction`).
    pub fn column(&self) -> StoredColumn<'_> {
        CellRef::from(self).column()
    }
}

impl<'a> CellRef<'a> {
    /// The cell as the row codec reads it (`merge_columns`, `plan_compaction`).
    pub fn column(self) -> StoredColumn<'a> {
        StoredColumn {
            qualifier: self.qualifier,
            value: self.value,
            ts: self.timestamp,
        }
    }
}

/// A row's cells as the row codec reads them.
pub fn columns(cells: &[Cell]) -> Vec<StoredColumn<'_>> {
    cells.iter().map(Cell::column).collect()
}

/// Sees a scan's rows in order (row key, its cells as [`Row`] holds them); returns false to end
/// the scan there.
pub type RowVisitor<'a> = dyn FnMut(&[u8], &[CellRef<'_>]) -> StoreResult<bool> + 'a;

/// Sees a [`Store::scan_keys`] scan's row keys in order; returns false to end the scan there.
pub type KeyVisitor<'a> = dyn FnMut(&[u8]) -> StoreResult<bool> + 'a;

/// A row as [`Store::scan_points`] lends it.
#[derive(Debug, Clone, Copy)]
pub enum LentRow<'a> {
    /// Its cells, as [`Store::scan_rows`] lends them.
    Cells(&'a [CellRef<'a>]),
    /// A row of one compacted column, its points decoded by the store: (offset from the row's
    /// base time in ms, value), offsets strictly rising, as schema's `walk_compacted` reads the
    /// column's bytes.
    Points(&'a [(u32, DataValue)]),
}

/// Sees a [`Store::scan_points`] scan's rows in order; returns false to end the scan there.
pub type PointsVisitor<'a> = dyn FnMut(&[u8], LentRow<'_>) -> StoreResult<bool> + 'a;

/// A row and its cells, sorted by family then qualifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub key: Vec<u8>,
    pub cells: Vec<Cell>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mutation {
    Put {
        family: Vec<u8>,
        qualifier: Vec<u8>,
        value: Vec<u8>,
    },
    Delete {
        family: Vec<u8>,
        qualifier: Vec<u8>,
    },
    /// A delete of a cell put once since it was last deleted (RocksDB's single delete). A
    /// backend may make it cheaper: the embedded engine's weak tombstone vanishes together with
    /// the one version it meets in a compaction, where a delete's tombstone stays (and every
    /// scan steps over it) until the last level. If the cell was put twice, an older version may
    /// come back; callers use it only where that version would lose to newer cells anyway.
    /// HBase and Bigtable treat it as [`Mutation::Delete`].
    DeleteOnce {
        family: Vec<u8>,
        qualifier: Vec<u8>,
    },
    DeleteRow,
}

/// The mutations of one row. As on HBase, a put and a delete of the same cell in one batch
/// leave the cell deleted (HBase applies a batch's puts before its deletes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowMutations {
    pub row: Vec<u8>,
    pub mutations: Vec<Mutation>,
}

impl RowMutations {
    pub fn put(row: Vec<u8>, family: &[u8], qualifier: Vec<u8>, value: Vec<u8>) -> Self {
        RowMutations {
            row,
            mutations: vec![Mutation::Put {
                family: family.to_vec(),
                qualifier,
                value,
            }],
        }
    }
}

/// An ordered scan: rows in `[start, stop)` (empty `stop` = to the end), restricted to some
/// families (empty = all), to row keys matching a regex, and to cells whose qualifier starts
/// with one of some prefixes. The regex is matched against the row key's bytes (each byte one
/// character, as HBase's RegexStringComparator sees them under ISO-8859-1), so patterns use
/// `\xHH` escapes.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    pub start: Vec<u8>,
    pub stop: Vec<u8>,
    pub families: Vec<Vec<u8>>,
    pub row_regex: Option<String>,
    /// Only cells whose qualifier starts with one of these (empty = every cell), as HBase's
    /// `QualifierFilter` with a `BinaryPrefixComparator` each, ORed: what OpenTSDB's rollup
    /// reads send with an aggregator's id byte. A row none of whose cells pass is not
    /// returned (nor counted by `limit`), as on HBase and Bigtable. The embedded engine seeks
    /// over the cells between the prefixes instead of reading them.
    pub qualifier_prefixes: Vec<Vec<u8>>,
    pub limit: Option<usize>,
    /// A skip-scan hint for stores that can seek cheaply (the embedded engine), which then
    /// use it instead of `row_regex`; others ignore it. It must take exactly the rows the
    /// regex accepts.
    pub seek: Option<RowSeeker>,
}

/// Whether `qualifier` passes a scan's [`Scan::qualifier_prefixes`] (empty: every one does).
pub fn qualifier_passes(prefixes: &[Vec<u8>], qualifier: &[u8]) -> bool {
    prefixes.is_empty() || prefixes.iter().any(|p| qualifier.starts_with(p))
}

/// Keeps only the cells of `row` that pass `prefixes`; false if none is left (the row is then
/// not returned): the client-side check of a backend whose server may not filter exactly.
pub fn keep_qualifiers(prefixes: &[Vec<u8>], row: &mut Row) -> bool {
    if !prefixes.is_empty() {
        row.cells
            .retain(|c| qualifier_passes(prefixes, &c.qualifier));
    }
    !row.cells.is_empty()
}

/// What a [`RowSeeker`] says of one row key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowSeek {
    /// Return the row.
    Take,
    /// Reject the row; the next one may match.
    Skip,
    /// Reject every row before this key (which sorts after the current row).
    SeekTo(Vec<u8>),
    /// No later row can match.
    Done,
}

/// Judges row keys one at a time, so a store can jump over runs of rows its caller would
/// reject instead of reading them (as HBase's FuzzyRowFilter seeks).
#[derive(Clone)]
pub struct RowSeeker(pub Arc<RowSeekFn>);

/// The judgement a [`RowSeeker`] shares between the threads of a scan.
pub type RowSeekFn = dyn Fn(&[u8]) -> RowSeek + Send + Sync;

impl std::fmt::Debug for RowSeeker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RowSeeker")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("storage engine error during {op} on table {table}: {msg}")]
    Engine {
        op: &'static str,
        table: String,
        msg: String,
    },
    /// Another process holds the embedded store's directory (a running server, most often).
    #[error("the store in {0} is locked by another process")]
    Locked(String),
    #[error("unknown table {0}")]
    NoSuchTable(String),
    #[error("unknown family {family} in table {table}")]
    NoSuchFamily { table: String, family: String },
    #[error("invalid row filter {0}")]
    BadFilter(String),
    #[error("cell {0} is not an 8-byte counter")]
    NotACounter(String),
    #[error("HBase {op} on table {table}: {source}")]
    HBase {
        op: &'static str,
        table: String,
        #[source]
        source: hbase::HBaseError,
    },
    #[error("Bigtable {op} on table {table}: {source}")]
    Bigtable {
        op: &'static str,
        table: String,
        #[source]
        source: bigtable::BigtableError,
    },
    /// The store takes no writes for now (reads go on); it takes them again by itself once
    /// the cause is gone.
    #[error("the store refuses writes ({}): {}", .0.reason, .0.detail)]
    Refusing(Refusal),
}

/// Why a store refuses writes for now (see [`Store::refusing_writes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// One of [`REFUSAL_REASONS`]: the `reason` label of `tsgate_store_refusing_writes`.
    pub reason: &'static str,
    /// For people: what was seen, where, and what brings writes back.
    pub detail: String,
}

/// Free space in the data directory is below `storage.min_free_mb`, or the engine ran out of
/// it; and the engine failed otherwise (an I/O error), being reopened.
pub const REFUSAL_REASONS: [&str; 2] = ["disk_full", "engine_failed"];

pub type StoreResult<T> = Result<T, StoreError>;
pub type RowStream = Box<dyn Iterator<Item = StoreResult<Row>> + Send>;

pub trait Store: Send + Sync + 'static {
    /// The cells of one row (`families` empty = all families); empty if the row does not exist.
    fn get(&self, table: &str, row: &[u8], families: &[&[u8]]) -> StoreResult<Vec<Cell>>;
    /// Applies a batch of row mutations.
    fn mutate(&self, table: &str, batch: Vec<RowMutations>) -> StoreResult<()>;
    fn scan(&self, table: &str, scan: &Scan) -> StoreResult<RowStream>;
    /// The rows of [`Store::scan`], lent to `visit` one at a time instead of returned: a store
    /// that can lend cells from its own buffers saves a copy of every row a query reads.
    fn scan_rows(&self, table: &str, scan: &Scan, visit: &mut RowVisitor<'_>) -> StoreResult<()> {
        visit_rows(self.scan(table, scan)?, visit)
    }
    /// [`Store::scan_rows`] for reads of points (queries), not of bytes: a store that keeps
    /// compacted columns encoded may lend such a row's points decoded, without making the
    /// column's bytes only for the reader to decode them again. Others lend every row's cells.
    fn scan_points(
        &self,
        table: &str,
        scan: &Scan,
        visit: &mut PointsVisitor<'_>,
    ) -> StoreResult<()> {
        self.scan_rows(table, scan, &mut |key, cells| {
            visit(key, LentRow::Cells(cells))
        })
    }
    /// The keys of the rows [`Store::scan_rows`] would lend, without their cells: a store that
    /// keeps cells encoded need not decode them for a reader that only asks which rows exist
    /// (label and series look-ups spent half their time decoding points they dropped).
    fn scan_keys(&self, table: &str, scan: &Scan, visit: &mut KeyVisitor<'_>) -> StoreResult<()> {
        self.scan_rows(table, scan, &mut |key, _| visit(key))
    }
    /// Atomically adds `delta` to an 8-byte big-endian counter (absent = 0); returns the new value.
    fn increment(
        &self,
        table: &str,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        delta: i64,
    ) -> StoreResult<i64>;
    /// Puts `value` only if the cell currently holds `expected` (`None` = absent). True if put.
    fn check_and_put(
        &self,
        table: &str,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        expected: Option<&[u8]>,
        value: &[u8],
    ) -> StoreResult<bool>;
    /// Makes everything written so far durable.
    fn flush(&self) -> StoreResult<()>;

    /// Called once at a clean shutdown, after the last write: leaves the store in its most
    /// compact on-disk form (the embedded engine writes its memtables out, so its own journal
    /// is not left holding a second copy of the data).
    fn close(&self) -> StoreResult<()> {
        self.flush()
    }

    /// Applies a batch as of cell timestamp `ts` (HBase's `mutateRowsTs`): puts are stored at
    /// `ts` (a cell already holding a newer version keeps it), deletes remove only the versions
    /// written at or before `ts`, so a value written since survives. Puts and deletes are not
    /// applied atomically together (HBase's Thrift gateway runs them as separate operations):
    /// callers that need an order send them in separate calls.
    fn mutate_at(&self, table: &str, batch: Vec<RowMutations>, ts: u64) -> StoreResult<()>;

    /// The cells of several rows, one entry per requested row, in order (one round trip where
    /// the backend allows it).
    fn get_rows(
        &self,
        table: &str,
        rows: &[Vec<u8>],
        families: &[&[u8]],
    ) -> StoreResult<Vec<Vec<Cell>>> {
        rows.iter().map(|r| self.get(table, r, families)).collect()
    }

    /// Whether other processes may write the same tables at the same time (a shared HBase
    /// cluster): the compactor then guards against concurrent writers (see `write::compactor`).
    fn shared(&self) -> bool {
        false
    }

    /// Called when the compaction of closed hours has caught up, and again at each flush tick
    /// while it stays so (cheap when there is nothing to do): a store may reclaim what its
    /// deletes left behind (tombstones every read steps over until the engine merges them
    /// away), when that is cheap enough to do now.
    fn tidy(&self) -> StoreResult<()> {
        Ok(())
    }

    /// Whether scans use their [`RowSeeker`] (in place of the regex).
    fn seeks(&self) -> bool {
        false
    }

    /// Whether a `mutate_at` batch lands all or nothing, even across a crash (the embedded
    /// engine's write batches do; HBase's gateway applies it in pieces).
    fn atomic_batches(&self) -> bool {
        false
    }

    /// Backend counters for `/api/stats` and `stats` (e.g. Thrift calls by method).
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }

    /// Installs (or with `None` removes) the retention judge of `table`'s rows: the store then
    /// drops the rows it names whenever its engine rewrites them, without reading their cells.
    /// False if this store cannot (the caller then deletes expired rows itself).
    fn expire_rows(&self, _table: &str, _expired: Option<RowExpiry>) -> bool {
        false
    }

    /// Rewrites `table` now so that the rows its judge names are gone from disk, and waits
    /// (boundedly) until the files it replaced are deleted. A store without a judge has
    /// nothing to do.
    fn reclaim(&self, _table: &str, _how: Reclaim) -> StoreResult<Reclaimed> {
        Ok(Reclaimed::default())
    }

    /// The bytes `table` takes on local disk, if this store keeps it locally.
    fn disk_bytes(&self, _table: &str) -> Option<u64> {
        None
    }

    /// Why this store refuses writes right now, if it does (the embedded engine: disk full, or
    /// its engine failed and is being reopened). Reads go on meanwhile.
    fn refusing_writes(&self) -> Option<Refusal> {
        None
    }

    /// Copies every table as of one instant into a new store of this backend under `dir`
    /// (which must not hold one): a consistent copy taken while writes go on. Returns the
    /// cells copied, or `None` from a store that keeps no local copy to take (HBase and
    /// Bigtable have their own snapshots).
    fn snapshot_to(&self, _dir: &std::path::Path) -> StoreResult<Option<u64>> {
        Ok(None)
    }
}

pub type SharedStore = Arc<dyn Store>;

/// How [`Store::reclaim`] rewrites a table.
#[derive(Default)]
pub struct Reclaim {
    /// Bytes a second the rewrite reads at most (0 = no limit), so that it leaves the disk to
    /// ingest and queries.
    pub bytes_per_s: u64,
    /// Told of every row the rewrite meets.
    pub on_row: Option<RowObserver>,
    /// Once set, the rewrite stops keeping to `bytes_per_s`, and the wait for the replaced
    /// files to go ends (the process is stopping).
    pub hurry: Option<Arc<std::sync::atomic::AtomicBool>>,
}

/// Told a row key and whether the judge named the row expired.
pub type RowObserver = Box<dyn FnMut(&[u8], bool) + Send>;

/// What a [`Store::reclaim`] did.
#[derive(Debug, Default, Clone, Copy)]
pub struct Reclaimed {
    /// Bytes the table's files shrank by.
    pub freed: u64,
    /// Bytes the rewrite read (keys and values).
    pub read: u64,
    /// Time it waited to stay under `bytes_per_s`.
    pub waited: std::time::Duration,
    /// Whether the replaced files were gone from disk when it returned (otherwise the engine
    /// deletes them at its next flush or compaction, once no read uses them).
    pub released: bool,
}

/// Says of a row key whether its row has expired (retention): a store that can drop rows by
/// their key alone, as its engine rewrites its files, takes one instead of being sent deletes.
pub type RowExpiry = Arc<dyn Fn(&[u8]) -> bool + Send + Sync>;

/// [`Store::scan_rows`] over rows already returned.
pub fn visit_rows(rows: RowStream, visit: &mut RowVisitor<'_>) -> StoreResult<()> {
    for row in rows {
        let row = row?;
        let cells: Vec<CellRef> = row.cells.iter().map(CellRef::from).collect();
        if !visit(&row.key, &cells)? {
            break;
        }
    }
    Ok(())
}

/// A table and its column families, as `create 'tsdb', {NAME => 't'}` would make it.
#[derive(Debug, Clone)]
pub struct TableSpec {
    pub name: String,
    pub families: Vec<Vec<u8>>,
}

/// Table names, configurable like OpenTSDB's `tsd.storage.hbase.*_table`.
#[derive(Debug, Clone, serde::Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct TableNames {
    pub data: String,
    pub uid: String,
    pub meta: String,
    pub tree: String,
    /// Rollup and pre-aggregate tables (`[rollups]`), family `t` like the data table.
    #[serde(skip)]
    pub rollups: Vec<String>,
}

impl Default for TableNames {
    fn default() -> Self {
        TableNames {
            data: "tsdb".into(),
            uid: "tsdb-uid".into(),
            meta: "tsdb-meta".into(),
            tree: "tsdb-tree".into(),
            rollups: Vec::new(),
        }
    }
}

impl TableNames {
    /// OpenTSDB's four tables with their families.
    pub fn specs(&self) -> Vec<TableSpec> {
        vec![
            TableSpec {
                name: self.data.clone(),
                families: vec![tsgate_schema::DATA_FAMILY.to_vec()],
            },
            TableSpec {
                name: self.uid.clone(),
                families: vec![b"id".to_vec(), b"name".to_vec()],
            },
            TableSpec {
                name: self.meta.clone(),
                families: vec![b"name".to_vec()],
            },
            TableSpec {
                name: self.tree.clone(),
                families: vec![tsgate_schema::DATA_FAMILY.to_vec()],
            },
        ]
        .into_iter()
        .chain(self.rollups.iter().map(|t| TableSpec {
            name: t.clone(),
            families: vec![tsgate_schema::DATA_FAMILY.to_vec()],
        }))
        .collect()
    }
}
