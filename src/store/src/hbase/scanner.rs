//! A scan as an iterator: `scannerOpenWithScan`, then `scannerGetList` of `caching` results at a
//! time (rows split into `batch`-cell pieces are joined back), `scannerClose` at the end.
//! The scanner keeps one pooled connection (scanner ids live in one Thrift server); on a
//! transport error it reopens after the last row it returned, so no row is skipped or repeated.

use super::codec;
use super::error::HBaseError;
use super::filter;
use super::pool::{Conn, Method, Pool};
use crate::{Row, Scan, StoreError, StoreResult};
use hbase_thrift::hbase::{THbaseSyncClient, TScan};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

pub struct Scanner {
    pool: Arc<Pool>,
    table: String,
    scan: Scan,
    /// The exact byte regex, re-checked here (the server applies a superset of it).
    exact: Option<regex::bytes::Regex>,
    /// The filter string sent (row regex superset and qualifier prefixes).
    server_filter: Option<Vec<u8>>,
    caching: i32,
    batch: i32,
    conn: Option<(Conn, i32)>,
    /// Results fetched and not yet returned (possibly pieces of one row).
    buffered: VecDeque<Row>,
    /// The server has nothing more after `buffered`.
    exhausted: bool,
    /// Rows returned so far and the last one's key (where to resume after a failure).
    returned: usize,
    last_key: Option<Vec<u8>>,
    failed: bool,
}

fn err(table: &str, op: &'static str, source: HBaseError) -> StoreError {
    StoreError::HBase {
        op,
        table: table.to_string(),
        source,
    }
}

impl Scanner {
    pub fn new(
        pool: Arc<Pool>,
        table: &str,
        scan: &Scan,
        caching: u32,
        batch: u32,
    ) -> StoreResult<Scanner> {
        let exact = scan
            .row_regex
            .as_deref()
            .map(crate::embedded::compile_row_regex)
            .transpose()?;
        let row_filter = scan
            .row_regex
            .as_deref()
            .and_then(filter::java_superset)
            .map(|j| filter::row_filter(&j));
        let server_filter = filter::scan_filter(row_filter, &scan.qualifier_prefixes);
        Ok(Scanner {
            pool,
            table: table.to_string(),
            scan: scan.clone(),
            exact,
            server_filter,
            caching: caching.clamp(1, i32::MAX as u32) as i32,
            batch: batch.min(i32::MAX as u32) as i32,
            conn: None,
            buffered: VecDeque::new(),
            exhausted: false,
            returned: 0,
            last_key: None,
            failed: false,
        })
    }

    /// Opens (or reopens after a failure) the server-side scanner.
    fn open(&mut self) -> Result<(), HBaseError> {
        let pool = self.pool.clone();
        let mut conn = pool.checkout()?;
        let start = match &self.last_key {
            // The smallest key after the last row returned.
            Some(k) => {
                let mut s = k.clone();
                s.push(0);
                s
            }
            None => self.scan.start.clone(),
        };
        let tscan = TScan {
            start_row: Some(start),
            stop_row: (!self.scan.stop.is_empty()).then(|| self.scan.stop.clone()),
            timestamp: None,
            columns: (!self.scan.families.is_empty())
                .then(|| codec::family_columns(&self.scan.families)),
            caching: Some(self.caching),
            filter_string: self.server_filter.clone(),
            batch_size: (self.batch > 0).then_some(self.batch),
            sort_columns: Some(true),
            reversed: None,
            cache_blocks: None,
        };
        pool.stats.count(Method::ScannerOpenWithScan);
        match conn.client().scanner_open_with_scan(
            self.table.clone().into_bytes(),
            tscan,
            BTreeMap::new(),
        ) {
            Ok(id) => {
                self.conn = Some((conn, id));
                Ok(())
            }
            Err(e) => {
                let e = HBaseError::from_thrift(e, pool.addr());
                if !e.keeps_connection() {
                    conn.discard();
                }
                Err(e)
            }
        }
    }

    /// Fetches the next `caching` results.
    fn fetch(&mut self) -> Result<(), HBaseError> {
        if self.conn.is_none() {
            self.open()?;
        }
        let (conn, id) = self.conn.as_mut().expect("opened");
        let id = *id;
        self.pool.stats.count(Method::ScannerGetList);
        match conn.client().scanner_get_list(id, self.caching) {
            Ok(results) => {
                // Fewer than asked means the scanner has run out (the server fills each answer).
                self.exhausted = results.len() < self.caching as usize;
                for r in results {
                    let (key, cells) = codec::cells(r);
                    self.buffered.push_back(Row { key, cells });
                }
                Ok(())
            }
            Err(e) => {
                let e = HBaseError::from_thrift(e, self.pool.addr());
                let (conn, _) = self.conn.take().expect("present");
                if !e.keeps_connection() {
                    conn.discard();
                }
                Err(e)
            }
        }
    }

    /// Fetches with retries: a failed scanner is reopened after the last returned row, and
    /// pieces of a row not yet returned are dropped (they come again).
    fn fetch_retrying(&mut self) -> Result<(), HBaseError> {
        let mut attempt = 0;
        let mut delay = std::time::Duration::from_millis(50);
        loop {
            attempt += 1;
            match self.fetch() {
                Ok(()) => return Ok(()),
                Err(e) if e.is_transient() && attempt <= self.pool.retries() => {
                    tracing::warn!(table = %self.table, attempt, error = %e, "HBase scan failed; reopening the scanner");
                    self.buffered.clear();
                    self.conn = None;
                    std::thread::sleep(delay);
                    delay = (delay * 2).min(std::time::Duration::from_secs(5));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The next whole row from the server, joining pieces of a row split by `batch`.
    fn next_row(&mut self) -> Result<Option<Row>, HBaseError> {
        loop {
            if self.buffered.is_empty() {
                if self.exhausted {
                    return Ok(None);
                }
                self.fetch_retrying()?;
                continue;
            }
            // A row is whole once something after it is buffered, or nothing more can come.
            let key = self.buffered[0].key.clone();
            let pieces = self.buffered.iter().take_while(|r| r.key == key).count();
            if pieces == self.buffered.len() && !self.exhausted {
                self.fetch_retrying()?;
                continue;
            }
            let mut row = self.buffered.pop_front().expect("non-empty");
            for _ in 1..pieces {
                let more = self.buffered.pop_front().expect("counted");
                row.cells.extend(more.cells);
            }
            row.cells
                .sort_by(|a, b| (&a.family, &a.qualifier).cmp(&(&b.family, &b.qualifier)));
            return Ok(Some(row));
        }
    }

    fn close(&mut self) {
        if let Some((mut conn, id)) = self.conn.take() {
            self.pool.stats.count(Method::ScannerClose);
            if let Err(e) = conn.client().scanner_close(id) {
                let e = HBaseError::from_thrift(e, self.pool.addr());
                tracing::debug!(error = %e, "closing an HBase scanner failed");
                if !e.keeps_connection() {
                    conn.discard();
                }
            }
        }
    }
}

impl Iterator for Scanner {
    type Item = StoreResult<Row>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.scan.limit.is_some_and(|l| self.returned >= l) {
            self.close();
            return None;
        }
        loop {
            match self.next_row() {
                Ok(Some(mut row)) => {
                    self.last_key = Some(row.key.clone());
                    if self.exact.as_ref().is_some_and(|re| !re.is_match(&row.key)) {
                        continue;
                    }
                    // The server filtered the cells already; checked again as the row regex
                    // is, so that a gateway ignoring the filter cannot widen the answer.
                    if !crate::keep_qualifiers(&self.scan.qualifier_prefixes, &mut row) {
                        continue;
                    }
                    self.returned += 1;
                    return Some(Ok(row));
                }
                Ok(None) => {
                    self.close();
                    return None;
                }
                Err(e) => {
                    self.failed = true;
                    self.close();
                    return Some(Err(err(&self.table, "scan", e)));
                }
            }
        }
    }
}

impl Drop for Scanner {
    fn drop(&mut self) {
        self.close();
    }
}
