//! The Hbase.thrift service over the double's tables: the calls tsgate makes behave as HBase's
//! Thrift (v1) server does; the rest answer an IOError saying the double lacks them.

use super::catalog::{Catalog, CatalogError, Table};
use super::columns::{row_result, Selection};
use super::scanners::{OpenScanner, Scanners};
use hbase_thrift::hbase::*;
use std::collections::BTreeMap;
use std::sync::Arc;
use tsgate_store::hbase::codec;
use tsgate_store::hbase::filter::{parse_filter, JavaRowRegex, ParsedFilter};
use tsgate_store::{Mutation as StoreMutation, RowMutations, Scan, Store, StoreError};

pub struct Handler {
    pub catalog: Arc<Catalog>,
    pub scanners: Arc<Scanners>,
}

fn tscan(start: Text, stop: Option<Text>, columns: Vec<Text>) -> TScan {
    TScan {
        start_row: Some(start),
        stop_row: stop,
        timestamp: None,
        columns: Some(columns),
        caching: None,
        filter_string: None,
        batch_size: None,
        sort_columns: None,
        reversed: None,
        cache_blocks: None,
    }
}

type Attrs = BTreeMap<Text, Text>;

fn io_err(msg: impl Into<String>) -> thrift::Error {
    thrift::Error::User(Box::new(IOError {
        message: Some(msg.into()),
        can_retry: Some(false),
    }))
}

fn illegal(msg: impl Into<String>) -> thrift::Error {
    thrift::Error::User(Box::new(IllegalArgument {
        message: Some(msg.into()),
    }))
}

fn store_err(e: StoreError) -> thrift::Error {
    io_err(e.to_string())
}

fn unsupported<T>(method: &str) -> thrift::Result<T> {
    Err(io_err(format!(
        "tsgate's HBase test double does not implement {method}"
    )))
}

fn name(t: &[u8]) -> String {
    String::from_utf8_lossy(t).into_owned()
}

impl Handler {
    fn table(&self, t: &[u8]) -> thrift::Result<Arc<Table>> {
        let n = name(t);
        self.catalog.get(&n).ok_or_else(|| {
            io_err(format!(
                "org.apache.hadoop.hbase.TableNotFoundException: {n}"
            ))
        })
    }

    fn check_family(table: &Table, tname: &str, f: &[u8]) -> thrift::Result<()> {
        if table.families.contains_key(f) {
            Ok(())
        } else {
            Err(io_err(format!("org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException: Column family {} does not exist in region {tname}", name(f))))
        }
    }

    /// Thrift mutations of one row as store mutations. A bare family name deletes the whole
    /// family (HBase's `addFamily`); `family:` is the column with an empty qualifier.
    fn row_mutations(
        &self,
        table: &Table,
        tname: &str,
        row: &[u8],
        ms: Vec<Mutation>,
    ) -> thrift::Result<Vec<StoreMutation>> {
        let mut out = Vec::with_capacity(ms.len());
        for m in ms {
            let col = m.column.unwrap_or_default();
            let (fam, qual) = codec::split_column(&col);
            Self::check_family(table, tname, fam)?;
            if m.is_delete.unwrap_or(false) {
                match qual {
                    Some(q) => out.push(StoreMutation::Delete {
                        family: fam.to_vec(),
                        qualifier: q.to_vec(),
                    }),
                    None => {
                        for c in table.store.get(tname, row, &[fam]).map_err(store_err)? {
                            out.push(StoreMutation::Delete {
                                family: c.family,
                                qualifier: c.qualifier,
                            });
                        }
                    }
                }
            } else {
                out.push(StoreMutation::Put {
                    family: fam.to_vec(),
                    qualifier: qual.unwrap_or_default().to_vec(),
                    value: m.value.unwrap_or_default(),
                });
            }
        }
        Ok(out)
    }

    fn get_row_cells(
        &self,
        table: &Table,
        tname: &str,
        row: &[u8],
        columns: &[Text],
    ) -> thrift::Result<Option<TRowResult>> {
        let sel = Selection::parse(columns);
        let fams = sel.families();
        for f in &fams {
            Self::check_family(table, tname, f)?;
        }
        let fam_refs: Vec<&[u8]> = fams.iter().map(|f| f.as_slice()).collect();
        let cells = sel.filter(table.store.get(tname, row, &fam_refs).map_err(store_err)?);
        Ok((!cells.is_empty()).then(|| row_result(row.to_vec(), cells, false)))
    }

    fn open_scanner(&self, table_name: Text, scan: TScan) -> thrift::Result<ScannerID> {
        let table = self.table(&table_name)?;
        let tname = name(&table_name);
        let sel = Selection::parse(&scan.columns.unwrap_or_default());
        let families = sel.families();
        for f in &families {
            Self::check_family(&table, &tname, f)?;
        }
        let parsed: ParsedFilter = match scan.filter_string {
            None => ParsedFilter::default(),
            Some(f) => parse_filter(&f).map_err(|e| illegal(e.to_string()))?,
        };
        let filter = parsed
            .row_regex
            .as_deref()
            .map(JavaRowRegex::compile)
            .transpose()
            .map_err(|e| illegal(format!("bad regexstring: {e}")))?;
        let s = Scan {
            start: scan.start_row.unwrap_or_default(),
            stop: scan.stop_row.unwrap_or_default(),
            families,
            ..Default::default()
        };
        let rows = table.store.scan(&tname, &s).map_err(store_err)?;
        let batch = scan.batch_size.unwrap_or(0).max(0) as usize;
        Ok(self.scanners.add(OpenScanner {
            rows,
            filter,
            qualifier_prefixes: parsed.qualifier_prefixes,
            selection: sel,
            batch,
            sorted: scan.sort_columns.unwrap_or(false),
            pending: None,
        }))
    }
}

impl HbaseSyncHandler for Handler {
    fn handle_enable_table(&self, t: Bytes) -> thrift::Result<()> {
        self.table(&t).map(|_| ())
    }
    fn handle_disable_table(&self, t: Bytes) -> thrift::Result<()> {
        self.table(&t).map(|_| ())
    }
    fn handle_is_table_enabled(&self, t: Bytes) -> thrift::Result<bool> {
        self.table(&t).map(|_| true)
    }
    fn handle_compact(&self, _t: Bytes) -> thrift::Result<()> {
        Ok(())
    }
    fn handle_major_compact(&self, _t: Bytes) -> thrift::Result<()> {
        Ok(())
    }
    fn handle_get_table_names(&self) -> thrift::Result<Vec<Text>> {
        Ok(self
            .catalog
            .names()
            .into_iter()
            .map(String::into_bytes)
            .collect())
    }
    fn handle_get_table_names_with_is_table_enabled(&self) -> thrift::Result<BTreeMap<Text, bool>> {
        Ok(self
            .catalog
            .names()
            .into_iter()
            .map(|n| (n.into_bytes(), true))
            .collect())
    }
    fn handle_get_column_descriptors(
        &self,
        t: Text,
    ) -> thrift::Result<BTreeMap<Text, ColumnDescriptor>> {
        let table = self.table(&t)?;
        Ok(table
            .families
            .iter()
            .map(|(f, (v, c))| {
                let mut n = f.clone();
                n.push(b':');
                let cd = ColumnDescriptor {
                    name: Some(n.clone()),
                    max_versions: Some(*v),
                    compression: Some(c.clone()),
                    in_memory: Some(false),
                    bloom_filter_type: Some("ROW".into()),
                    bloom_filter_vector_size: Some(0),
                    bloom_filter_nb_hashes: Some(0),
                    block_cache_enabled: Some(true),
                    time_to_live: Some(i32::MAX),
                };
                (n, cd)
            })
            .collect())
    }
    fn handle_get_table_regions(&self, _t: Text) -> thrift::Result<Vec<TRegionInfo>> {
        unsupported("getTableRegions")
    }
    fn handle_create_table(&self, t: Text, cfs: Vec<ColumnDescriptor>) -> thrift::Result<()> {
        match self.catalog.create(&name(&t), &cfs) {
            Ok(()) => Ok(()),
            Err(CatalogError::Exists(n)) => Err(thrift::Error::User(Box::new(AlreadyExists {
                message: Some(format!("table name already in use: {n}")),
            }))),
            Err(CatalogError::Invalid(m)) => Err(illegal(m)),
            Err(e) => Err(io_err(e.to_string())),
        }
    }
    fn handle_delete_table(&self, _t: Text) -> thrift::Result<()> {
        unsupported("deleteTable")
    }
    fn handle_get(
        &self,
        t: Text,
        row: Text,
        column: Text,
        _a: Attrs,
    ) -> thrift::Result<Vec<TCell>> {
        let table = self.table(&t)?;
        let r = self.get_row_cells(&table, &name(&t), &row, &[column])?;
        Ok(r.and_then(|r| r.columns)
            .map(|m| m.into_values().collect())
            .unwrap_or_default())
    }
    fn handle_get_ver(
        &self,
        _t: Text,
        _r: Text,
        _c: Text,
        _n: i32,
        _a: Attrs,
    ) -> thrift::Result<Vec<TCell>> {
        unsupported("getVer")
    }
    fn handle_get_ver_ts(
        &self,
        _t: Text,
        _r: Text,
        _c: Text,
        _ts: i64,
        _n: i32,
        _a: Attrs,
    ) -> thrift::Result<Vec<TCell>> {
        unsupported("getVerTs")
    }
    fn handle_get_row(&self, t: Text, row: Text, a: Attrs) -> thrift::Result<Vec<TRowResult>> {
        self.handle_get_row_with_columns(t, row, Vec::new(), a)
    }
    fn handle_get_row_with_columns(
        &self,
        t: Text,
        row: Text,
        columns: Vec<Text>,
        _a: Attrs,
    ) -> thrift::Result<Vec<TRowResult>> {
        let table = self.table(&t)?;
        Ok(self
            .get_row_cells(&table, &name(&t), &row, &columns)?
            .into_iter()
            .collect())
    }
    fn handle_get_row_ts(
        &self,
        _t: Text,
        _r: Text,
        _ts: i64,
        _a: Attrs,
    ) -> thrift::Result<Vec<TRowResult>> {
        unsupported("getRowTs")
    }
    fn handle_get_row_with_columns_ts(
        &self,
        _t: Text,
        _r: Text,
        _c: Vec<Text>,
        _ts: i64,
        _a: Attrs,
    ) -> thrift::Result<Vec<TRowResult>> {
        unsupported("getRowWithColumnsTs")
    }
    fn handle_get_rows(
        &self,
        t: Text,
        rows: Vec<Text>,
        a: Attrs,
    ) -> thrift::Result<Vec<TRowResult>> {
        self.handle_get_rows_with_columns(t, rows, Vec::new(), a)
    }
    /// Rows that do not exist are left out of the answer, as HBase does.
    fn handle_get_rows_with_columns(
        &self,
        t: Text,
        rows: Vec<Text>,
        columns: Vec<Text>,
        _a: Attrs,
    ) -> thrift::Result<Vec<TRowResult>> {
        let table = self.table(&t)?;
        let tname = name(&t);
        let mut out = Vec::new();
        for r in rows {
            out.extend(self.get_row_cells(&table, &tname, &r, &columns)?);
        }
        Ok(out)
    }
    fn handle_get_rows_ts(
        &self,
        _t: Text,
        _r: Vec<Text>,
        _ts: i64,
        _a: Attrs,
    ) -> thrift::Result<Vec<TRowResult>> {
        unsupported("getRowsTs")
    }
    fn handle_get_rows_with_columns_ts(
        &self,
        _t: Text,
        _r: Vec<Text>,
        _c: Vec<Text>,
        _ts: i64,
        _a: Attrs,
    ) -> thrift::Result<Vec<TRowResult>> {
        unsupported("getRowsWithColumnsTs")
    }
    fn handle_mutate_row(
        &self,
        t: Text,
        row: Text,
        mutations: Vec<Mutation>,
        a: Attrs,
    ) -> thrift::Result<()> {
        self.handle_mutate_rows(
            t,
            vec![BatchMutation {
                row: Some(row),
                mutations: Some(mutations),
            }],
            a,
        )
    }
    fn handle_mutate_row_ts(
        &self,
        t: Text,
        row: Text,
        mutations: Vec<Mutation>,
        ts: i64,
        a: Attrs,
    ) -> thrift::Result<()> {
        self.handle_mutate_rows_ts(
            t,
            vec![BatchMutation {
                row: Some(row),
                mutations: Some(mutations),
            }],
            ts,
            a,
        )
    }
    fn handle_mutate_rows(
        &self,
        t: Text,
        batches: Vec<BatchMutation>,
        _a: Attrs,
    ) -> thrift::Result<()> {
        let table = self.table(&t)?;
        let tname = name(&t);
        let mut out = Vec::with_capacity(batches.len());
        for b in batches {
            let row = b.row.unwrap_or_default();
            let mutations =
                self.row_mutations(&table, &tname, &row, b.mutations.unwrap_or_default())?;
            out.push(RowMutations { row, mutations });
        }
        table.store.mutate(&tname, out).map_err(store_err)
    }
    /// Puts at `ts`; deletes of the versions at or before `ts` (HBase's `addColumns(f, q, ts)`).
    fn handle_mutate_rows_ts(
        &self,
        t: Text,
        batches: Vec<BatchMutation>,
        ts: i64,
        _a: Attrs,
    ) -> thrift::Result<()> {
        let table = self.table(&t)?;
        let tname = name(&t);
        let mut out = Vec::with_capacity(batches.len());
        for b in batches {
            let row = b.row.unwrap_or_default();
            let mutations =
                self.row_mutations(&table, &tname, &row, b.mutations.unwrap_or_default())?;
            out.push(RowMutations { row, mutations });
        }
        table
            .store
            .mutate_at(&tname, out, ts.max(0) as u64)
            .map_err(store_err)
    }
    fn handle_atomic_increment(
        &self,
        t: Text,
        row: Text,
        column: Text,
        value: i64,
    ) -> thrift::Result<i64> {
        let table = self.table(&t)?;
        let tname = name(&t);
        let (fam, q) = codec::split_column(&column);
        Self::check_family(&table, &tname, fam)?;
        let q = q.ok_or_else(|| illegal("atomicIncrement needs family:qualifier"))?;
        table.store.increment(&tname, &row, fam, q, value).map_err(|e| match e {
            StoreError::NotACounter(_) => io_err("org.apache.hadoop.hbase.DoNotRetryIOException: Field is not a long, it's the wrong width"),
            e => store_err(e),
        })
    }
    fn handle_delete_all(&self, _t: Text, _r: Text, _c: Text, _a: Attrs) -> thrift::Result<()> {
        unsupported("deleteAll")
    }
    fn handle_delete_all_ts(
        &self,
        _t: Text,
        _r: Text,
        _c: Text,
        _ts: i64,
        _a: Attrs,
    ) -> thrift::Result<()> {
        unsupported("deleteAllTs")
    }
    fn handle_delete_all_row(&self, _t: Text, _r: Text, _a: Attrs) -> thrift::Result<()> {
        unsupported("deleteAllRow")
    }
    fn handle_increment(&self, _i: TIncrement) -> thrift::Result<()> {
        unsupported("increment")
    }
    fn handle_increment_rows(&self, _i: Vec<TIncrement>) -> thrift::Result<()> {
        unsupported("incrementRows")
    }
    fn handle_delete_all_row_ts(
        &self,
        _t: Text,
        _r: Text,
        _ts: i64,
        _a: Attrs,
    ) -> thrift::Result<()> {
        unsupported("deleteAllRowTs")
    }
    fn handle_scanner_open_with_scan(
        &self,
        t: Text,
        scan: TScan,
        _a: Attrs,
    ) -> thrift::Result<ScannerID> {
        self.open_scanner(t, scan)
    }
    fn handle_scanner_open(
        &self,
        t: Text,
        start: Text,
        columns: Vec<Text>,
        _a: Attrs,
    ) -> thrift::Result<ScannerID> {
        let scan = tscan(start, None, columns);
        self.open_scanner(t, scan)
    }
    fn handle_scanner_open_with_stop(
        &self,
        t: Text,
        start: Text,
        stop: Text,
        columns: Vec<Text>,
        _a: Attrs,
    ) -> thrift::Result<ScannerID> {
        let scan = tscan(start, Some(stop), columns);
        self.open_scanner(t, scan)
    }
    fn handle_scanner_open_with_prefix(
        &self,
        _t: Text,
        _p: Text,
        _c: Vec<Text>,
        _a: Attrs,
    ) -> thrift::Result<ScannerID> {
        unsupported("scannerOpenWithPrefix")
    }
    fn handle_scanner_open_ts(
        &self,
        _t: Text,
        _s: Text,
        _c: Vec<Text>,
        _ts: i64,
        _a: Attrs,
    ) -> thrift::Result<ScannerID> {
        unsupported("scannerOpenTs")
    }
    fn handle_scanner_open_with_stop_ts(
        &self,
        _t: Text,
        _s: Text,
        _e: Text,
        _c: Vec<Text>,
        _ts: i64,
        _a: Attrs,
    ) -> thrift::Result<ScannerID> {
        unsupported("scannerOpenWithStopTs")
    }
    fn handle_scanner_get(&self, id: ScannerID) -> thrift::Result<Vec<TRowResult>> {
        self.handle_scanner_get_list(id, 1)
    }
    fn handle_scanner_get_list(
        &self,
        id: ScannerID,
        nb_rows: i32,
    ) -> thrift::Result<Vec<TRowResult>> {
        let s = self
            .scanners
            .get(id)
            .ok_or_else(|| illegal(format!("scanner ID is invalid: {id}")))?;
        let mut s = s.lock();
        s.next_results(nb_rows.max(1) as usize).map_err(io_err)
    }
    fn handle_scanner_close(&self, id: ScannerID) -> thrift::Result<()> {
        if self.scanners.close(id) {
            Ok(())
        } else {
            Err(illegal(format!("scanner ID is invalid: {id}")))
        }
    }
    fn handle_get_region_info(&self, _r: Text) -> thrift::Result<TRegionInfo> {
        unsupported("getRegionInfo")
    }
    fn handle_append(&self, _a: TAppend) -> thrift::Result<Vec<TCell>> {
        unsupported("append")
    }
    /// An empty expected value checks that the cell is absent (or empty), as HBase's does.
    fn handle_check_and_put(
        &self,
        t: Text,
        row: Text,
        column: Text,
        value: Text,
        mput: Mutation,
        _a: Attrs,
    ) -> thrift::Result<bool> {
        let table = self.table(&t)?;
        let tname = name(&t);
        let (fam, q) = codec::split_column(&column);
        Self::check_family(&table, &tname, fam)?;
        let q = q.ok_or_else(|| illegal("checkAndPut needs family:qualifier"))?;
        if mput.column.as_deref() != Some(column.as_slice()) || mput.is_delete == Some(true) {
            return Err(illegal(
                "tsgate's HBase test double only puts the checked column in checkAndPut",
            ));
        }
        let new = mput.value.unwrap_or_default();
        let put = |expected: Option<&[u8]>| {
            table
                .store
                .check_and_put(&tname, &row, fam, q, expected, &new)
                .map_err(store_err)
        };
        if value.is_empty() {
            Ok(put(None)? || put(Some(&[]))?)
        } else {
            put(Some(&value))
        }
    }
    fn handle_get_thrift_server_type(&self) -> thrift::Result<TThriftServerType> {
        Ok(TThriftServerType::ONE)
    }
    fn handle_get_cluster_id(&self) -> thrift::Result<String> {
        Ok("tsgate-hbase-test-double".into())
    }
    fn handle_grant(&self, _i: TAccessControlEntity) -> thrift::Result<bool> {
        unsupported("grant")
    }
    fn handle_revoke(&self, _i: TAccessControlEntity) -> thrift::Result<bool> {
        unsupported("revoke")
    }
}
