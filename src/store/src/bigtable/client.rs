//! `BigtableStore`: the `Store` trait over Bigtable's data API. Each operation is one call
//! (a scan one per page of rows, a batch one per request-sized piece), made on the store's own
//! small async runtime and waited for by the calling thread, so callers see a blocking store
//! like the HBase one.

use super::auth::{default_source, TokenSource};
use super::error::{BigtableError, Code};
use super::filter;
use super::grpc::{tls_config, url_encode, Channel, Endpoint};
use super::proto::{self, mutation::Kind, row_filter::Filter, row_range, RowFilter};
use super::rows::RowMerger;
use super::{BigtableConfig, MAX_ROW_KEY_BYTES};
use crate::{Cell, Mutation, Row, RowMutations, RowStream, Scan, Store, StoreError, StoreResult};
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The calls made, by method, for `/api/stats` (retries count: they are round trips).
#[derive(Debug, Clone, Copy)]
pub enum Method {
    ReadRows,
    MutateRows,
    CheckAndMutateRow,
    ReadModifyWriteRow,
    ListTables,
    CreateTable,
}

impl Method {
    const ALL: [Method; 6] = [
        Method::ReadRows,
        Method::MutateRows,
        Method::CheckAndMutateRow,
        Method::ReadModifyWriteRow,
        Method::ListTables,
        Method::CreateTable,
    ];

    fn name(self) -> &'static str {
        match self {
            Method::ReadRows => "ReadRows",
            Method::MutateRows => "MutateRows",
            Method::CheckAndMutateRow => "CheckAndMutateRow",
            Method::ReadModifyWriteRow => "ReadModifyWriteRow",
            Method::ListTables => "ListTables",
            Method::CreateTable => "CreateTable",
        }
    }

    fn path(self) -> &'static str {
        match self {
            Method::ReadRows => "/google.bigtable.v2.Bigtable/ReadRows",
            Method::MutateRows => "/google.bigtable.v2.Bigtable/MutateRows",
            Method::CheckAndMutateRow => "/google.bigtable.v2.Bigtable/CheckAndMutateRow",
            Method::ReadModifyWriteRow => "/google.bigtable.v2.Bigtable/ReadModifyWriteRow",
            Method::ListTables => "/google.bigtable.admin.v2.BigtableTableAdmin/ListTables",
            Method::CreateTable => "/google.bigtable.admin.v2.BigtableTableAdmin/CreateTable",
        }
    }

    fn admin(self) -> bool {
        matches!(self, Method::ListTables | Method::CreateTable)
    }
}

pub(crate) struct Inner {
    pub(crate) cfg: BigtableConfig,
    data: Channel,
    admin: Channel,
    /// `projects/<p>/instances/<i>`.
    pub(crate) instance_path: String,
    calls: [AtomicU64; 6],
    retries: AtomicU64,
}

/// The store's runtime, shut down without waiting when the store goes (which may happen on
/// an async thread, where waiting is not allowed).
struct Runtime(Option<tokio::runtime::Runtime>);

impl Drop for Runtime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

impl Runtime {
    /// Runs `f` to its end on the store's runtime, blocking this thread.
    fn block<T: Send + 'static>(
        &self,
        f: impl Future<Output = Result<T, BigtableError>> + Send + 'static,
    ) -> Result<T, BigtableError> {
        let rt = self.0.as_ref().expect("runtime present until drop");
        if tokio::runtime::Handle::try_current().is_err() {
            return rt.block_on(f);
        }
        // On a thread of another runtime (a caller that did not move to a blocking thread):
        // `block_on` would panic there, so hand the future over and wait.
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        rt.spawn(async move {
            let _ = tx.send(f.await);
        });
        rx.recv()
            .map_err(|_| BigtableError::Other("the Bigtable client's runtime stopped".into()))?
    }
}

pub struct BigtableStore {
    inner: Arc<Inner>,
    rt: Arc<Runtime>,
}

fn err<'a>(op: &'static str, table: &'a str) -> impl Fn(BigtableError) -> StoreError + 'a {
    move |source| StoreError::Bigtable {
        op,
        table: table.to_string(),
        source,
    }
}

/// A little jitter for backoff (no random source needed for this).
fn jitter(d: Duration) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .subsec_nanos() as u64;
    d + Duration::from_micros(nanos % (d.as_micros() as u64 / 2 + 1))
}

impl Inner {
    pub(crate) fn table_path(&self, table: &str) -> String {
        format!("{}/tables/{table}", self.instance_path)
    }

    fn routing(&self, table: &str) -> String {
        format!(
            "table_name={}&app_profile_id={}",
            url_encode(&self.table_path(table)),
            url_encode(&self.cfg.app_profile)
        )
    }

    /// One call, without retries.
    async fn call_once<Req: prost::Message, Resp: prost::Message + Default>(
        &self,
        m: Method,
        routing: &str,
        req: &Req,
    ) -> Result<Vec<Resp>, BigtableError> {
        self.calls[m as usize].fetch_add(1, Ordering::Relaxed);
        let chan = if m.admin() { &self.admin } else { &self.data };
        chan.call(
            m.path(),
            routing,
            req,
            Duration::from_millis(self.cfg.timeout_ms),
        )
        .await
    }

    /// A call with retries and backoff for what may be retried (see `is_retryable`).
    pub(crate) async fn call<Req: prost::Message, Resp: prost::Message + Default>(
        &self,
        m: Method,
        routing: &str,
        req: &Req,
        idempotent: bool,
    ) -> Result<Vec<Resp>, BigtableError> {
        let mut attempt = 0;
        loop {
            match self.call_once(m, routing, req).await {
                Err(e) if attempt < self.cfg.retries && e.is_retryable(idempotent) => {
                    self.backoff(attempt, &e).await;
                    attempt += 1;
                }
                r => return r,
            }
        }
    }

    async fn backoff(&self, attempt: u32, e: &BigtableError) {
        self.retries.fetch_add(1, Ordering::Relaxed);
        let d = Duration::from_millis(self.cfg.retry_backoff_ms)
            .saturating_mul(1 << attempt.min(16))
            .min(Duration::from_secs(5));
        tracing::debug!(attempt, error = %e, "retrying a Bigtable call");
        tokio::time::sleep(jitter(d)).await;
    }

    async fn read_rows(
        &self,
        table: &str,
        rows: proto::RowSet,
        filter: RowFilter,
        limit: i64,
    ) -> Result<Vec<Row>, BigtableError> {
        let req = proto::ReadRowsRequest {
            table_name: self.table_path(table),
            rows: Some(rows),
            filter: Some(filter),
            rows_limit: limit,
            app_profile_id: self.cfg.app_profile.clone(),
        };
        let answers: Vec<proto::ReadRowsResponse> = self
            .call(Method::ReadRows, &self.routing(table), &req, true)
            .await?;
        let mut merger = RowMerger::default();
        for a in answers {
            for chunk in a.chunks {
                merger.push(chunk)?;
            }
        }
        merger.finished()?;
        Ok(merger.take())
    }

    /// Applies entries, each request within the service's limits, retrying the entries that
    /// failed transiently; any other failure of an entry fails the batch.
    async fn mutate_rows(
        &self,
        table: &str,
        entries: Vec<proto::MutateRowsEntry>,
    ) -> Result<(), BigtableError> {
        for request in self.split(entries) {
            self.mutate_request(table, request).await?;
        }
        Ok(())
    }

    /// Requests of at most `max_mutations_per_request` mutations and about
    /// `max_request_bytes`; a row with more mutations than one request takes goes alone, in
    /// order, over several (the service may apply a request's entries in any order).
    fn split(&self, entries: Vec<proto::MutateRowsEntry>) -> Vec<Vec<proto::MutateRowsEntry>> {
        let max_muts = self.cfg.max_mutations_per_request;
        let max_bytes = self.cfg.max_request_bytes;
        let mut out = Vec::new();
        let mut cur: Vec<proto::MutateRowsEntry> = Vec::new();
        let (mut muts, mut bytes) = (0, 0);
        for e in entries {
            let n = e.mutations.len();
            let b = prost::Message::encoded_len(&e);
            if n > max_muts {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                let key = e.row_key;
                let mut rest = e.mutations;
                while !rest.is_empty() {
                    let tail = rest.split_off(rest.len().min(max_muts));
                    out.push(vec![proto::MutateRowsEntry {
                        row_key: key.clone(),
                        mutations: std::mem::replace(&mut rest, tail),
                    }]);
                }
                (muts, bytes) = (0, 0);
                continue;
            }
            if !cur.is_empty() && (muts + n > max_muts || bytes + b > max_bytes) {
                out.push(std::mem::take(&mut cur));
                (muts, bytes) = (0, 0);
            }
            muts += n;
            bytes += b;
            cur.push(e);
        }
        if !cur.is_empty() {
            out.push(cur);
        }
        out
    }

    async fn mutate_request(
        &self,
        table: &str,
        entries: Vec<proto::MutateRowsEntry>,
    ) -> Result<(), BigtableError> {
        let routing = self.routing(table);
        let rows = entries.len();
        let mut req = proto::MutateRowsRequest {
            table_name: self.table_path(table),
            entries,
            app_profile_id: self.cfg.app_profile.clone(),
        };
        let mut attempt = 0;
        loop {
            let last_err = match self
                .call_once::<_, proto::MutateRowsResponse>(Method::MutateRows, &routing, &req)
                .await
            {
                Ok(answers) => {
                    // Entries the answer did not report on are retried like transient failures.
                    let mut status: Vec<Option<proto::Status>> = vec![None; req.entries.len()];
                    for a in answers {
                        for e in a.entries {
                            if let Some(s) = status.get_mut(e.index as usize) {
                                *s = Some(e.status.unwrap_or_default());
                            }
                        }
                    }
                    let mut retry = Vec::new();
                    let mut failed = Vec::new();
                    let mut first_transient = None;
                    for (i, s) in status.into_iter().enumerate() {
                        match s {
                            Some(s) if s.code == 0 => {}
                            Some(s) if Code(s.code).is_transient() => {
                                first_transient.get_or_insert(s);
                                retry.push(i);
                            }
                            Some(s) => failed.push(s),
                            None => retry.push(i),
                        }
                    }
                    if let Some(first) = failed.first() {
                        return Err(BigtableError::RowsFailed {
                            failed: failed.len(),
                            rows,
                            first: format!("{}: {}", Code(first.code), first.message),
                        });
                    }
                    if retry.is_empty() {
                        return Ok(());
                    }
                    let entries = std::mem::take(&mut req.entries);
                    let mut keep = retry.into_iter().peekable();
                    req.entries = entries
                        .into_iter()
                        .enumerate()
                        .filter(|(i, _)| {
                            if keep.peek() == Some(i) {
                                keep.next();
                                true
                            } else {
                                false
                            }
                        })
                        .map(|(_, e)| e)
                        .collect();
                    match first_transient {
                        Some(s) => BigtableError::Status {
                            code: Code(s.code),
                            message: s.message,
                        },
                        None => {
                            BigtableError::Protocol("MutateRows left entries unanswered".into())
                        }
                    }
                }
                Err(e) if e.is_retryable(true) => e,
                Err(e) => return Err(e),
            };
            if attempt >= self.cfg.retries {
                return Err(match last_err {
                    BigtableError::Status { code, message } => BigtableError::RowsFailed {
                        failed: req.entries.len(),
                        rows,
                        first: format!("{code}: {message} (after {} retries)", attempt),
                    },
                    e => e,
                });
            }
            self.backoff(attempt, &last_err).await;
            attempt += 1;
        }
    }
}

/// Only the newest version of each cell, of the given families, of rows matching `row_re2`,
/// whose qualifier starts with one of `prefixes` (empty: any).
fn read_filter(families: &[&[u8]], row_re2: Option<String>, prefixes: &[Vec<u8>]) -> RowFilter {
    let mut f = Vec::new();
    if let Some(re) = row_re2 {
        f.push(RowFilter::of(Filter::RowKeyRegex(re.into_bytes())));
    }
    if !families.is_empty() {
        let alts: Vec<String> = families.iter().map(|f| filter::exact(f)).collect();
        f.push(RowFilter::of(Filter::FamilyNameRegex(alts.join("|"))));
    }
    // Column ranges name a family: without families the client alone filters qualifiers.
    if !prefixes.is_empty() && !families.is_empty() {
        let ranges = filter::qualifier_ranges(prefixes);
        let mut each = Vec::new();
        for fam in families {
            for (start, end) in &ranges {
                each.push(RowFilter::of(Filter::ColumnRange(proto::ColumnRange {
                    family_name: family_name(fam),
                    start: Some(proto::column_range::Start::Closed(start.clone())),
                    end: end.clone().map(proto::column_range::End::Open),
                })));
            }
        }
        // The service refuses an interleave of fewer than two.
        f.push(match each.len() {
            1 => each.pop().unwrap_or_default(),
            _ => RowFilter::of(Filter::Interleave(proto::Interleave { filters: each })),
        });
    }
    f.push(RowFilter::of(Filter::CellsPerColumnLimit(1)));
    RowFilter::chain(f)
}

fn family_name(f: &[u8]) -> String {
    String::from_utf8_lossy(f).into_owned()
}

/// One row's mutations as Bigtable's: puts first, then deletes (what HBase does with a
/// batch, so a put and a delete of one cell leave it deleted). `at_ms`: puts at that time and
/// deletes of versions up to it; `None`: puts at the server's time, deletes of every version.
/// A whole-row delete takes every version either way (Bigtable's `DeleteFromRow` has no time
/// range; no caller sends one through `mutate_at`).
fn row_mutations(muts: Vec<Mutation>, at_ms: Option<u64>) -> Vec<proto::Mutation> {
    let (puts, deletes): (Vec<Mutation>, Vec<Mutation>) = muts
        .into_iter()
        .partition(|m| matches!(m, Mutation::Put { .. }));
    let ts = at_ms.map(|ms| ms as i64 * 1000).unwrap_or(-1);
    let range = at_ms.map(|ms| proto::TimestampRange {
        start_timestamp_micros: 0,
        end_timestamp_micros: (ms as i64 + 1) * 1000,
    });
    puts.into_iter()
        .chain(deletes)
        .map(|m| proto::Mutation {
            kind: Some(match m {
                Mutation::Put {
                    family,
                    qualifier,
                    value,
                } => Kind::SetCell(proto::SetCell {
                    family_name: family_name(&family),
                    column_qualifier: qualifier,
                    timestamp_micros: ts,
                    value,
                }),
                Mutation::Delete { family, qualifier }
                | Mutation::DeleteOnce { family, qualifier } => {
                    Kind::DeleteFromColumn(proto::DeleteFromColumn {
                        family_name: family_name(&family),
                        column_qualifier: qualifier,
                        time_range: range.clone(),
                    })
                }
                Mutation::DeleteRow => Kind::DeleteFromRow(proto::DeleteFromRow {}),
            }),
        })
        .collect()
}

/// A batch as entries, one per row (rows named twice merged, in order).
fn entries(
    batch: Vec<RowMutations>,
    at_ms: Option<u64>,
) -> Result<Vec<proto::MutateRowsEntry>, BigtableError> {
    let mut index: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut rows: Vec<(Vec<u8>, Vec<Mutation>)> = Vec::new();
    for rm in batch {
        if rm.mutations.is_empty() {
            continue;
        }
        if rm.row.len() > MAX_ROW_KEY_BYTES {
            return Err(BigtableError::KeyTooLong {
                len: rm.row.len(),
                max: MAX_ROW_KEY_BYTES,
            });
        }
        match index.get(&rm.row) {
            Some(&i) => rows[i].1.extend(rm.mutations),
            None => {
                index.insert(rm.row.clone(), rows.len());
                rows.push((rm.row, rm.mutations));
            }
        }
    }
    Ok(rows
        .into_iter()
        .map(|(row_key, muts)| proto::MutateRowsEntry {
            row_key,
            mutations: row_mutations(muts, at_ms),
        })
        .collect())
}

impl BigtableStore {
    /// Builds the client; nothing is sent until the first call.
    pub fn new(cfg: &BigtableConfig) -> Result<BigtableStore, BigtableError> {
        cfg.check()?;
        let connect = Duration::from_millis(cfg.connect_timeout_ms);
        let (data, admin) = match cfg.emulator() {
            Some(addr) => (
                Channel::new(
                    Endpoint::Plain { addr: addr.clone() },
                    cfg.channels,
                    None,
                    connect,
                ),
                Channel::new(Endpoint::Plain { addr }, 1, None, connect),
            ),
            None => {
                let tls = tls_config(&cfg.ca_file)?;
                let endpoint = |hp: &str| -> Result<Endpoint, BigtableError> {
                    let (host, port) = hp.rsplit_once(':').ok_or_else(|| {
                        BigtableError::Config(format!("endpoint {hp:?} is not host:port"))
                    })?;
                    Ok(Endpoint::Tls {
                        host: host.to_string(),
                        port: port.parse().map_err(|_| {
                            BigtableError::Config(format!("endpoint {hp:?} is not host:port"))
                        })?,
                        config: tls.clone(),
                    })
                };
                let auth = |aud: &str| -> Result<Option<Arc<dyn TokenSource>>, BigtableError> {
                    Ok(Some(Arc::from(default_source(&cfg.credentials_file, aud)?)))
                };
                (
                    Channel::new(
                        endpoint(&cfg.endpoint)?,
                        cfg.channels,
                        auth("https://bigtable.googleapis.com/")?,
                        connect,
                    ),
                    Channel::new(
                        endpoint(&cfg.admin_endpoint)?,
                        1,
                        auth("https://bigtableadmin.googleapis.com/")?,
                        connect,
                    ),
                )
            }
        };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("bigtable")
            .enable_all()
            .build()
            .map_err(|e| BigtableError::Other(format!("cannot start the client runtime: {e}")))?;
        Ok(BigtableStore {
            inner: Arc::new(Inner {
                instance_path: format!("projects/{}/instances/{}", cfg.project, cfg.instance),
                cfg: cfg.clone(),
                data,
                admin,
                calls: Default::default(),
                retries: AtomicU64::new(0),
            }),
            rt: Arc::new(Runtime(Some(rt))),
        })
    }

    /// Connects and checks that the tables exist (one `ListTables` on the admin API; a
    /// credential allowed the data API only skips the check with a warning).
    pub fn open(cfg: &BigtableConfig, tables: &[&str]) -> Result<BigtableStore, BigtableError> {
        let store = BigtableStore::new(cfg)?;
        match store.table_names() {
            Ok(names) => {
                let missing: Vec<&str> = tables
                    .iter()
                    .copied()
                    .filter(|t| !names.iter().any(|n| n == t))
                    .collect();
                if !missing.is_empty() {
                    return Err(BigtableError::MissingTables {
                        instance: store.inner.instance_path.clone(),
                        tables: missing.join(", "),
                    });
                }
            }
            Err(BigtableError::Status { code, message }) if code == Code::PERMISSION_DENIED => {
                tracing::warn!(%message, "cannot list the Bigtable instance's tables; not checking that they exist");
            }
            Err(e) => return Err(e),
        }
        Ok(store)
    }

    pub(crate) fn run<T: Send + 'static, F>(
        &self,
        f: impl FnOnce(Arc<Inner>) -> F,
    ) -> Result<T, BigtableError>
    where
        F: Future<Output = Result<T, BigtableError>> + Send + 'static,
    {
        self.rt.block(f(self.inner.clone()))
    }

    /// The instance's table ids.
    pub fn table_names(&self) -> Result<Vec<String>, BigtableError> {
        self.run(|inner| async move {
            let mut names = Vec::new();
            let mut token = String::new();
            loop {
                let req = proto::ListTablesRequest {
                    parent: inner.instance_path.clone(),
                    view: 1,
                    page_token: token,
                };
                let routing = format!("parent={}", url_encode(&inner.instance_path));
                let answers: Vec<proto::ListTablesResponse> =
                    inner.call(Method::ListTables, &routing, &req, true).await?;
                let Some(a) = answers.into_iter().next() else {
                    break;
                };
                names.extend(
                    a.tables
                        .iter()
                        .map(|t| t.name.rsplit('/').next().unwrap_or_default().to_string()),
                );
                if a.next_page_token.is_empty() {
                    break;
                }
                token = a.next_page_token;
            }
            Ok(names)
        })
    }

    /// Creates a table with its families (`Ok(false)`: it existed).
    pub fn create_table(
        &self,
        table: &str,
        families: Vec<(String, proto::GcRule)>,
    ) -> Result<bool, BigtableError> {
        let table = table.to_string();
        self.run(|inner| async move {
            let req = proto::CreateTableRequest {
                parent: inner.instance_path.clone(),
                table_id: table,
                table: Some(proto::Table {
                    name: String::new(),
                    column_families: families
                        .into_iter()
                        .map(|(f, gc)| (f, proto::ColumnFamily { gc_rule: Some(gc) }))
                        .collect(),
                }),
            };
            let routing = format!("parent={}", url_encode(&inner.instance_path));
            // Not retried after a lost answer: a second try would say ALREADY_EXISTS, which
            // is read as "existed" anyway.
            match inner
                .call::<_, proto::Table>(Method::CreateTable, &routing, &req, true)
                .await
            {
                Ok(_) => Ok(true),
                Err(BigtableError::Status { code, .. }) if code == Code::ALREADY_EXISTS => {
                    Ok(false)
                }
                Err(e) => Err(e),
            }
        })
    }

    /// Calls sent again after a transient failure.
    pub fn retries(&self) -> u64 {
        self.inner.retries.load(Ordering::Relaxed)
    }

    /// gRPC calls made so far (all methods, retries included).
    pub fn calls(&self) -> u64 {
        self.inner
            .calls
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum()
    }
}

impl Store for BigtableStore {
    fn get(&self, table: &str, row: &[u8], families: &[&[u8]]) -> StoreResult<Vec<Cell>> {
        Ok(self
            .get_rows(table, &[row.to_vec()], families)?
            .pop()
            .unwrap_or_default())
    }

    fn get_rows(
        &self,
        table: &str,
        rows: &[Vec<u8>],
        families: &[&[u8]],
    ) -> StoreResult<Vec<Vec<Cell>>> {
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let filter = read_filter(families, None, &[]);
        let mut found: HashMap<Vec<u8>, Vec<Cell>> = HashMap::with_capacity(rows.len());
        for chunk in rows.chunks(1000) {
            let t = table.to_string();
            let keys = chunk.to_vec();
            let filter = filter.clone();
            tracing::trace!(table, rows = chunk.len(), "ReadRows of row keys");
            let got = self
                .run(|inner| async move {
                    let set = proto::RowSet {
                        row_keys: keys,
                        row_ranges: Vec::new(),
                    };
                    inner.read_rows(&t, set, filter, 0).await
                })
                .map_err(err("get", table))?;
            found.extend(got.into_iter().map(|r| (r.key, r.cells)));
        }
        Ok(rows
            .iter()
            .map(|r| found.get(r).cloned().unwrap_or_default())
            .collect())
    }

    fn mutate(&self, table: &str, batch: Vec<RowMutations>) -> StoreResult<()> {
        let entries = entries(batch, None).map_err(err("mutate", table))?;
        if entries.is_empty() {
            return Ok(());
        }
        let t = table.to_string();
        self.run(|inner| async move { inner.mutate_rows(&t, entries).await })
            .map_err(err("mutate", table))
    }

    fn scan(&self, table: &str, scan: &Scan) -> StoreResult<RowStream> {
        Ok(Box::new(Scanner::new(self, table, scan)?))
    }

    fn increment(
        &self,
        table: &str,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        delta: i64,
    ) -> StoreResult<i64> {
        let req = proto::ReadModifyWriteRowRequest {
            table_name: self.inner.table_path(table),
            row_key: row.to_vec(),
            rules: vec![proto::ReadModifyWriteRule {
                family_name: family_name(family),
                column_qualifier: qualifier.to_vec(),
                increment_amount: delta,
            }],
            app_profile_id: self.inner.cfg.app_profile.clone(),
        };
        let t = table.to_string();
        let answer = self
            .run(|inner| async move {
                let routing = inner.routing(&t);
                inner
                    .call::<_, proto::ReadModifyWriteRowResponse>(
                        Method::ReadModifyWriteRow,
                        &routing,
                        &req,
                        false,
                    )
                    .await
            })
            .map_err(|e| {
                // The service refuses to add to a cell that is not 8 bytes, in words of its own
                // (and the emulator in others): look at the cell to tell that case apart.
                let refused = matches!(&e, BigtableError::Status { code, .. }
                    if *code != Code::UNAVAILABLE && !code.is_transient());
                let not_counter = refused
                    && self.get(table, row, &[family]).is_ok_and(|cells| {
                        cells
                            .iter()
                            .any(|c| c.qualifier == qualifier && c.value.len() != 8)
                    });
                if not_counter {
                    StoreError::NotACounter(format!("{table}/{}", tsgate_schema::hex_upper(row)))
                } else {
                    err("increment", table)(e)
                }
            })?;
        let value = answer
            .into_iter()
            .next()
            .and_then(|a| a.row)
            .and_then(|r| r.families.into_iter().next())
            .and_then(|f| f.columns.into_iter().next())
            .and_then(|c| c.cells.into_iter().next())
            .map(|c| c.value)
            .unwrap_or_default();
        let bytes: [u8; 8] = value.as_slice().try_into().map_err(|_| {
            StoreError::NotACounter(format!("{table}/{}", tsgate_schema::hex_upper(row)))
        })?;
        Ok(i64::from_be_bytes(bytes))
    }

    /// `CheckAndMutateRow` on the cell's newest version: an exact column range and value
    /// range (no regex, so any byte compares as itself); absent = the predicate finds nothing.
    fn check_and_put(
        &self,
        table: &str,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        expected: Option<&[u8]>,
        value: &[u8],
    ) -> StoreResult<bool> {
        let mut pred = vec![
            RowFilter::of(Filter::ColumnRange(proto::ColumnRange {
                family_name: family_name(family),
                start: Some(proto::column_range::Start::Closed(qualifier.to_vec())),
                end: Some(proto::column_range::End::Closed(qualifier.to_vec())),
            })),
            RowFilter::of(Filter::CellsPerColumnLimit(1)),
        ];
        if let Some(v) = expected {
            pred.push(RowFilter::of(Filter::ValueRange(proto::ValueRange {
                start: Some(proto::value_range::Start::Closed(v.to_vec())),
                end: Some(proto::value_range::End::Closed(v.to_vec())),
            })));
        }
        let put = row_mutations(
            vec![Mutation::Put {
                family: family.to_vec(),
                qualifier: qualifier.to_vec(),
                value: value.to_vec(),
            }],
            None,
        );
        let (true_mutations, false_mutations) = match expected {
            Some(_) => (put, Vec::new()),
            None => (Vec::new(), put),
        };
        let req = proto::CheckAndMutateRowRequest {
            table_name: self.inner.table_path(table),
            row_key: row.to_vec(),
            true_mutations,
            false_mutations,
            predicate_filter: Some(RowFilter::chain(pred)),
            app_profile_id: self.inner.cfg.app_profile.clone(),
        };
        let t = table.to_string();
        let matched = self
            .run(|inner| async move {
                let routing = inner.routing(&t);
                let a: Vec<proto::CheckAndMutateRowResponse> = inner
                    .call(Method::CheckAndMutateRow, &routing, &req, false)
                    .await?;
                Ok(a.into_iter().next().unwrap_or_default().predicate_matched)
            })
            .map_err(err("check_and_put", table))?;
        Ok(matched == expected.is_some())
    }

    /// An acknowledged Bigtable mutation is already durable (replicated within its cluster).
    fn flush(&self) -> StoreResult<()> {
        Ok(())
    }

    /// Puts at `ts` ms (microseconds `ts * 1000`: whole milliseconds, as a table of the
    /// default granularity wants), deletes of the versions in `[0, ts]`.
    fn mutate_at(&self, table: &str, batch: Vec<RowMutations>, ts: u64) -> StoreResult<()> {
        let entries = entries(batch, Some(ts)).map_err(err("mutate_at", table))?;
        if entries.is_empty() {
            return Ok(());
        }
        let t = table.to_string();
        self.run(|inner| async move { inner.mutate_rows(&t, entries).await })
            .map_err(err("mutate_at", table))
    }

    fn shared(&self) -> bool {
        true
    }

    /// gRPC calls by method (`tsd.hbase.rpcs type=<method>`), retries included.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Method::ALL
            .iter()
            .map(|m| {
                (
                    m.name(),
                    self.inner.calls[*m as usize].load(Ordering::Relaxed),
                )
            })
            .collect()
    }
}

/// A scan, read a page of rows per `ReadRows` call, resuming after the last row each page
/// returned.
struct Scanner {
    inner: Arc<Inner>,
    rt: Arc<Runtime>,
    table: String,
    start: Option<row_range::Start>,
    stop: Vec<u8>,
    filter: RowFilter,
    exact: Option<regex::bytes::Regex>,
    /// The scan's qualifier prefixes, checked again on what comes back (as the row regex).
    prefixes: Vec<Vec<u8>>,
    left: Option<usize>,
    buf: VecDeque<Row>,
    done: bool,
}

impl Scanner {
    fn new(store: &BigtableStore, table: &str, scan: &Scan) -> StoreResult<Scanner> {
        let exact = scan
            .row_regex
            .as_deref()
            .map(crate::embedded::compile_row_regex)
            .transpose()?;
        let re2 = if store.inner.cfg.server_row_filter {
            scan.row_regex.as_deref().and_then(filter::re2_row_filter)
        } else {
            None
        };
        let fams: Vec<&[u8]> = scan.families.iter().map(Vec::as_slice).collect();
        let empty = !scan.stop.is_empty() && scan.start >= scan.stop;
        Ok(Scanner {
            inner: store.inner.clone(),
            rt: store.rt.clone(),
            table: table.to_string(),
            start: (!scan.start.is_empty()).then(|| row_range::Start::Closed(scan.start.clone())),
            stop: scan.stop.clone(),
            filter: read_filter(&fams, re2, &scan.qualifier_prefixes),
            prefixes: scan.qualifier_prefixes.clone(),
            exact,
            left: scan.limit,
            buf: VecDeque::new(),
            done: empty || scan.limit == Some(0),
        })
    }

    fn fetch(&mut self) -> Result<(), BigtableError> {
        let page = self.inner.cfg.scan_rows as usize;
        // Without a client-side check every row counts toward the limit.
        let want = match (self.left, &self.exact) {
            (Some(l), None) => l.min(page),
            _ => page,
        };
        let range = proto::RowRange {
            start: self.start.clone(),
            end: (!self.stop.is_empty()).then(|| row_range::End::Open(self.stop.clone())),
        };
        let set = proto::RowSet {
            row_keys: Vec::new(),
            row_ranges: vec![range],
        };
        let (t, filter) = (self.table.clone(), self.filter.clone());
        let rows = self.rt.block({
            let inner = self.inner.clone();
            async move { inner.read_rows(&t, set, filter, want as i64).await }
        })?;
        if rows.len() < want {
            self.done = true;
        }
        if let Some(last) = rows.last() {
            self.start = Some(row_range::Start::Open(last.key.clone()));
        }
        self.buf.extend(rows.into_iter().filter_map(|mut r| {
            (self.exact.as_ref().is_none_or(|re| re.is_match(&r.key))
                && crate::keep_qualifiers(&self.prefixes, &mut r))
            .then_some(r)
        }));
        Ok(())
    }
}

impl Iterator for Scanner {
    type Item = StoreResult<Row>;

    fn next(&mut self) -> Option<StoreResult<Row>> {
        loop {
            if self.left == Some(0) {
                return None;
            }
            if let Some(row) = self.buf.pop_front() {
                if let Some(l) = &mut self.left {
                    *l -= 1;
                }
                return Some(Ok(row));
            }
            if self.done {
                return None;
            }
            if let Err(e) = self.fetch() {
                self.done = true;
                return Some(Err(StoreError::Bigtable {
                    op: "scan",
                    table: self.table.clone(),
                    source: e,
                }));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inner(max_muts: usize) -> Inner {
        let cfg = BigtableConfig {
            project: "p".into(),
            instance: "i".into(),
            max_mutations_per_request: max_muts,
            ..Default::default()
        };
        let chan = || {
            Channel::new(
                Endpoint::Plain {
                    addr: "127.0.0.1:1".into(),
                },
                1,
                None,
                Duration::from_secs(1),
            )
        };
        Inner {
            cfg,
            data: chan(),
            admin: chan(),
            instance_path: "projects/p/instances/i".into(),
            calls: Default::default(),
            retries: AtomicU64::new(0),
        }
    }

    fn put(row: &[u8], q: u8) -> RowMutations {
        RowMutations::put(row.to_vec(), b"t", vec![q], vec![1])
    }

    #[test]
    fn batches_split_within_the_mutation_limit_and_rows_merge() {
        let batch = vec![put(b"a", 1), put(b"b", 1), put(b"a", 2), put(b"c", 1)];
        let e = entries(batch, None).unwrap();
        assert_eq!(e.len(), 3, "row a named twice is one entry");
        assert_eq!(e[0].mutations.len(), 2);
        let reqs = inner(2).split(e);
        let sizes: Vec<Vec<usize>> = reqs
            .iter()
            .map(|r| r.iter().map(|e| e.mutations.len()).collect())
            .collect();
        assert_eq!(sizes, vec![vec![2], vec![1, 1]]);
        // A row wider than a request goes alone, in order, over several.
        let wide = RowMutations {
            row: b"w".to_vec(),
            mutations: (0..5u8)
                .map(|q| Mutation::Put {
                    family: b"t".to_vec(),
                    qualifier: vec![q],
                    value: vec![],
                })
                .collect(),
        };
        let reqs = inner(2).split(entries(vec![put(b"a", 1), wide], None).unwrap());
        let sizes: Vec<usize> = reqs.iter().map(|r| r[0].mutations.len()).collect();
        assert_eq!(sizes, vec![1, 2, 2, 1]);
        let long = RowMutations::put(vec![0; 4097], b"t", vec![], vec![]);
        assert!(matches!(
            entries(vec![long], None),
            Err(BigtableError::KeyTooLong { len: 4097, .. })
        ));
    }

    #[test]
    fn credentials_problems_are_named_before_any_call() {
        let cfg = |file: &str| BigtableConfig {
            project: "p".into(),
            instance: "i".into(),
            credentials_file: file.into(),
            endpoint: "bigtable.example:443".into(),
            // Not an emulator: the TLS and credentials path (the variable may be set around us).
            emulator_host: String::new(),
            ..Default::default()
        };
        if std::env::var_os("BIGTABLE_EMULATOR_HOST").is_some() {
            return;
        }
        let e = BigtableStore::new(&cfg("/nonexistent/key.json"))
            .err()
            .unwrap();
        assert!(
            e.to_string().contains("cannot read /nonexistent/key.json"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("adc.json");
        std::fs::write(&user, r#"{"type":"authorized_user","client_id":"x"}"#).unwrap();
        let e = BigtableStore::new(&cfg(user.to_str().unwrap()))
            .err()
            .unwrap();
        assert!(
            e.to_string().contains("only a service account's JSON key"),
            "{e}"
        );
        let e = BigtableStore::new(&BigtableConfig {
            ca_file: "/nonexistent/ca.pem".into(),
            ..cfg("")
        })
        .err()
        .unwrap();
        assert!(e.to_string().contains("storage.bigtable.ca_file"), "{e}");
    }

    #[test]
    fn puts_go_before_deletes_and_timestamps_are_whole_milliseconds() {
        let rm = RowMutations {
            row: b"r".to_vec(),
            mutations: vec![
                Mutation::Delete {
                    family: b"t".to_vec(),
                    qualifier: b"q".to_vec(),
                },
                Mutation::Put {
                    family: b"t".to_vec(),
                    qualifier: b"q".to_vec(),
                    value: b"v".to_vec(),
                },
            ],
        };
        let e = entries(vec![rm], Some(1_356_998_400_123)).unwrap();
        match (&e[0].mutations[0].kind, &e[0].mutations[1].kind) {
            (Some(Kind::SetCell(s)), Some(Kind::DeleteFromColumn(d))) => {
                assert_eq!(s.timestamp_micros, 1_356_998_400_123_000);
                assert_eq!(
                    d.time_range.as_ref().unwrap().end_timestamp_micros,
                    1_356_998_400_124_000,
                    "deletes up to and including the millisecond"
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
