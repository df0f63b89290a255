//! `HBaseStore`: the `Store` trait over the Thrift gateway. Every method is one Thrift call
//! (batches stay batched), run on a pooled connection with retries on transport errors.

use super::codec;
use super::error::HBaseError;
use super::pool::{Method, Pool};
use super::scanner::Scanner;
use super::HBaseConfig;
use crate::{Cell, RowMutations, RowStream, Scan, Store, StoreError, StoreResult, TableSpec};
use hbase_thrift::hbase::{BatchMutation, THbaseSyncClient};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Rows per `mutateRows` and per `getRowsWithColumns` call.
const MUTATE_ROWS_MAX: usize = 4096;
const GET_ROWS_MAX: usize = 1024;

pub struct HBaseStore {
    pool: Arc<Pool>,
    /// Each table's families (a whole-row delete names them one by one).
    families: HashMap<String, Vec<Vec<u8>>>,
    caching: u32,
    batch: u32,
}

fn err<'a>(op: &'static str, table: &'a str) -> impl Fn(HBaseError) -> StoreError + 'a {
    move |source| StoreError::HBase {
        op,
        table: table.to_string(),
        source,
    }
}

fn no_attrs() -> BTreeMap<Vec<u8>, Vec<u8>> {
    BTreeMap::new()
}

impl HBaseStore {
    /// Connects lazily: nothing is sent until the first call.
    pub fn new(cfg: &HBaseConfig, tables: &[TableSpec]) -> HBaseStore {
        HBaseStore {
            pool: Arc::new(Pool::new(cfg)),
            families: tables
                .iter()
                .map(|t| {
                    (
                        t.name.clone(),
                        t.families.iter().map(|f| f.to_vec()).collect(),
                    )
                })
                .collect(),
            caching: cfg.scan_caching,
            batch: cfg.scan_batch,
        }
    }

    /// Connects and checks that the tables exist (one `getTableNames`).
    pub fn open(cfg: &HBaseConfig, tables: &[TableSpec]) -> Result<HBaseStore, HBaseError> {
        let store = HBaseStore::new(cfg, tables);
        let names = store.table_names()?;
        let missing: Vec<&str> = tables
            .iter()
            .map(|t| t.name.as_str())
            .filter(|t| !names.iter().any(|n| n == t))
            .collect();
        if !missing.is_empty() {
            return Err(HBaseError::MissingTables(missing.join(", ")));
        }
        Ok(store)
    }

    pub fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }

    pub fn table_names(&self) -> Result<Vec<String>, HBaseError> {
        let names = self
            .pool
            .call(Method::GetTableNames, |c| c.get_table_names())?;
        Ok(names
            .into_iter()
            .map(|n| String::from_utf8_lossy(&n).into_owned())
            .collect())
    }

    fn table_families(&self, table: &str) -> StoreResult<&Vec<Vec<u8>>> {
        self.families
            .get(table)
            .ok_or_else(|| StoreError::NoSuchTable(table.to_string()))
    }
}

impl Store for HBaseStore {
    fn get(&self, table: &str, row: &[u8], families: &[&[u8]]) -> StoreResult<Vec<Cell>> {
        let cols = codec::family_columns(families);
        let results = self
            .pool
            .call(Method::GetRowWithColumns, |c| {
                c.get_row_with_columns(table.into(), row.to_vec(), cols.clone(), no_attrs())
            })
            .map_err(err("get", table))?;
        Ok(results
            .into_iter()
            .next()
            .map(|r| codec::cells(r).1)
            .unwrap_or_default())
    }

    fn get_rows(
        &self,
        table: &str,
        rows: &[Vec<u8>],
        families: &[&[u8]],
    ) -> StoreResult<Vec<Vec<Cell>>> {
        let cols = codec::family_columns(families);
        let mut found: HashMap<Vec<u8>, Vec<Cell>> = HashMap::with_capacity(rows.len());
        for chunk in rows.chunks(GET_ROWS_MAX) {
            let results = self
                .pool
                .call(Method::GetRowsWithColumns, |c| {
                    c.get_rows_with_columns(table.into(), chunk.to_vec(), cols.clone(), no_attrs())
                })
                .map_err(err("get_rows", table))?;
            // HBase leaves rows that do not exist out of the answer.
            for r in results {
                let (key, cells) = codec::cells(r);
                found.insert(key, cells);
            }
        }
        Ok(rows
            .iter()
            .map(|r| found.get(r).cloned().unwrap_or_default())
            .collect())
    }

    fn mutate(&self, table: &str, batch: Vec<RowMutations>) -> StoreResult<()> {
        let fams = self.table_families(table)?;
        let batches: Vec<BatchMutation> = batch
            .into_iter()
            .filter(|rm| !rm.mutations.is_empty())
            .map(|rm| BatchMutation {
                row: Some(rm.row),
                mutations: Some(codec::mutations(rm.mutations, fams)),
            })
            .collect();
        for chunk in batches.chunks(MUTATE_ROWS_MAX) {
            self.pool
                .call(Method::MutateRows, |c| {
                    c.mutate_rows(table.into(), chunk.to_vec(), no_attrs())
                })
                .map_err(err("mutate", table))?;
        }
        Ok(())
    }

    fn scan(&self, table: &str, scan: &Scan) -> StoreResult<RowStream> {
        Ok(Box::new(Scanner::new(
            self.pool.clone(),
            table,
            scan,
            self.caching,
            self.batch,
        )?))
    }

    fn increment(
        &self,
        table: &str,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        delta: i64,
    ) -> StoreResult<i64> {
        let col = codec::column(family, qualifier);
        self.pool
            .call(Method::AtomicIncrement, |c| {
                c.atomic_increment(table.into(), row.to_vec(), col.clone(), delta)
            })
            .map_err(err("increment", table))
    }

    /// HBase's check for absence is an empty expected value (it matches an absent cell or an
    /// empty one), so `expected = Some(b"")` behaves like `None` here.
    fn check_and_put(
        &self,
        table: &str,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        expected: Option<&[u8]>,
        value: &[u8],
    ) -> StoreResult<bool> {
        let col = codec::column(family, qualifier);
        let expected = expected.unwrap_or_default().to_vec();
        let mput = codec::put(family, qualifier, value);
        self.pool
            .call(Method::CheckAndPut, |c| {
                c.check_and_put(
                    table.into(),
                    row.to_vec(),
                    col.clone(),
                    expected.clone(),
                    mput.clone(),
                    no_attrs(),
                )
            })
            .map_err(err("check_and_put", table))
    }

    /// An acknowledged HBase mutation is already in HBase's write-ahead log.
    fn flush(&self) -> StoreResult<()> {
        Ok(())
    }

    fn mutate_at(&self, table: &str, batch: Vec<RowMutations>, ts: u64) -> StoreResult<()> {
        let fams = self.table_families(table)?;
        let batches: Vec<BatchMutation> = batch
            .into_iter()
            .filter(|rm| !rm.mutations.is_empty())
            .map(|rm| BatchMutation {
                row: Some(rm.row),
                mutations: Some(codec::mutations(rm.mutations, fams)),
            })
            .collect();
        for chunk in batches.chunks(MUTATE_ROWS_MAX) {
            self.pool
                .call(Method::MutateRowsTs, |c| {
                    c.mutate_rows_ts(table.into(), chunk.to_vec(), ts as i64, no_attrs())
                })
                .map_err(err("mutate_at", table))?;
        }
        Ok(())
    }

    fn shared(&self) -> bool {
        true
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        self.pool.stats.snapshot()
    }
}
