//! A shard's flusher: writes buffered series-hours to the store as (partially) compacted
//! columns, makes the store durable, drops the WAL segments it covered, merges the open hour's
//! partial columns of a row once they have gathered for `roll_interval`, and hands rows whose
//! hour has closed and that have gone quiet to its compaction thread (`super::compaction`).
//!
//! Why rolls: each flush writes one partial column per series-hour it holds points for, so at
//! the default 0.5 s interval a series written steadily ends its hour with 7,200 columns, each
//! a key of its own in the store (50 bytes a point on disk) and each a delete when the hour
//! is compacted. A roll puts one column for all the partial columns of a row written since its
//! last roll, and deletes them, in the same batch; the flusher still holds their points (they
//! are why a roll reads nothing). The hour then ends with about `3600 s / roll_interval`
//! columns, which its compaction merges with one read of the row.

use super::compaction::Lane;
use super::compactor::DATA_FAMILY;
use super::shard::Buffer;
use super::WriteError;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;
use tsgate_schema::column::{build_column, built_len, split_built};
use tsgate_schema::rowkey::ROW_SPAN;
use tsgate_schema::{KeyLayout, RawPoint};
use tsgate_store::{Mutation, RowMutations, SharedStore};

pub struct FlushJob {
    pub buffer: Buffer,
    /// WAL segments up to this one are covered by this job and every earlier one; None for a
    /// job only readers asked for (see `ShardMsg::Publish`): its points are stored but left to
    /// the next job to make durable, and compaction waits for that job too.
    pub wal_upto: Option<u64>,
    pub waiters: Vec<oneshot::Sender<Result<(), WriteError>>>,
    /// Told once the buffer is in the store, before it is made durable there.
    pub readers: Vec<oneshot::Sender<Result<(), WriteError>>>,
    /// The shard is stopping: compact every closed row now.
    pub last: bool,
}

pub struct Flusher {
    pub store: SharedStore,
    pub table: String,
    pub layout: KeyLayout,
    pub wal_dir: PathBuf,
    /// How long a closed row must go without writes before it is compacted.
    pub compaction_delay: Duration,
    /// How long a row's partial columns gather before they are merged into one (zero: never;
    /// forced to zero on a store shared with other writers, whose columns a roll cannot know).
    pub roll_interval: Duration,
    /// Most points held for rolls; past it the oldest rows roll early.
    pub roll_max_points: usize,
    /// Keeps `ts_ctr` per series: one store call per series per flush, not per point.
    pub ts_counter: Option<std::sync::Arc<crate::meta::counter::TsCounter>>,
    /// Rollup cells the compaction thread builds (`write::rollup`).
    pub rollups: Option<std::sync::Arc<super::rollup::RollupBuild>>,
    /// Cleared while store writes fail, set again once one succeeds (see `Writer::store_available`).
    pub store_ok: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Counts the jobs whose points are in the store (see `shard::InFlight`).
    pub in_flight: std::sync::Arc<super::shard::InFlight>,
    /// Set by `Writer::close`: a flush the store refuses (disk full) is then given up instead
    /// of retried, its points left in the WAL for the next start (see `flush_durably`).
    pub closing: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// A flush was given up: no later one may retire WAL segments (they hold its points).
    pub gave_up: std::sync::atomic::AtomicBool,
}

const MUTATE_CHUNK: usize = 4096;

/// Sorts by offset and keeps the last write of each offset (arrival order is write order).
pub fn settle(points: &mut Vec<RawPoint>) {
    // The usual case, a series' points in time order and once each: nothing to do (sorting
    // them anyway was a few percent of the ingest CPU).
    let mut offsets = points.iter().map(RawPoint::offset_ms);
    if let Some(first) = offsets.next() {
        let mut prev = first;
        if offsets.all(|o| std::mem::replace(&mut prev, o) < o) {
            return;
        }
    }
    points.reverse();
    points.sort_by_key(|p| p.offset_ms()); // stable: the newest of equal offsets comes first
    points.dedup_by_key(|p| p.offset_ms());
}

use tsgate_common::clock::now_s;

/// OpenTSDB compacts a row once its hour ended more than a second ago.
pub fn hour_closed(base: u32, now: u64) -> bool {
    base as u64 + ROW_SPAN < now
}

/// Points received per series in a buffer (before duplicates are settled: every write counts).
fn series_counts(buffer: &Buffer) -> Vec<(crate::series::Series, u64)> {
    let mut m: HashMap<crate::series::Series, u64, ahash::RandomState> = HashMap::default();
    for row in &buffer.rows {
        *m.entry(row.series).or_default() += row.points.len() as u64;
    }
    m.into_iter().collect()
}

/// A row as the flusher keeps it: its series (interned) and base time, 16 bytes where its
/// key was a 20–40 byte allocation; the key is made again when a row is written or handed to
/// compaction. A million series' rows waiting for compaction held ~130 MiB as keys.
pub type RowId = (crate::series::Series, u32);

/// The partial columns each row got since its last roll, with their points.
#[derive(Default)]
pub struct Rolls {
    rows: HashMap<RowId, Held, ahash::RandomState>,
    /// The rows by the end of their window, earliest first: due rows are found without
    /// walking every held row (a million series' rows, walked each second, were a fifth of
    /// the flusher's time in a bulk load).
    by_end: BTreeMap<(Instant, u64), RowId>,
    next: u64,
    /// Points held over all rows.
    points: usize,
}

struct Held {
    /// When this row's window ends: `roll_interval` after its first partial column, scaled by
    /// 0.5–1.5 after its key, so that rows that started together (every series at an hour's
    /// turn) do not all roll in the same flush.
    ends: Instant,
    /// Its entry in `Rolls::by_end`.
    seq: u64,
    /// The partial columns in the store, each qualifier once, in write order: a roll takes
    /// their points in that order and settles them (the last write of an offset wins).
    columns: HeldColumns,
    /// Points over `columns`.
    points: usize,
}

/// A held row's partial columns (qualifiers, values) in one buffer, each as the two lengths
/// (u32, big-endian) then the bytes: 2 + 1–8 bytes per point and 8 per column, where the
/// points themselves took 14 and each column's qualifiers an allocation more (a bulk load of
/// the bench's hour held ~58 MiB of points until compaction took the rows).
#[derive(Default)]
struct HeldColumns {
    bytes: Vec<u8>,
    count: usize,
}

impl HeldColumns {
    /// Each column's (qualifiers, values), in write order, with where it starts.
    fn iter(&self) -> impl Iterator<Item = (usize, &[u8], &[u8])> {
        let mut at = 0;
        std::iter::from_fn(move || {
            let head = self.bytes.get(at..at + 8)?;
            let ql = u32::from_be_bytes(head[..4].try_into().expect("4 bytes")) as usize;
            let vl = u32::from_be_bytes(head[4..].try_into().expect("4 bytes")) as usize;
            let (start, q_at) = (at, at + 8);
            at = q_at + ql + vl;
            Some((
                start,
                &self.bytes[q_at..q_at + ql],
                &self.bytes[q_at + ql..at],
            ))
        })
    }

    fn len(&self) -> usize {
        self.count
    }

    /// Adds a column; one of the same qualifiers held before is removed first (the new one
    /// holds every offset it did, and comes after what was written between). Returns how many
    /// points that removed.
    fn push(&mut self, q: &[u8], v: &[u8]) -> usize {
        let same = self
            .iter()
            .find(|(_, held, _)| *held == q)
            .map(|(start, held, vals)| (start, 8 + held.len() + vals.len(), built_len(held)));
        let gone = match same {
            Some((start, len, points)) => {
                self.bytes.drain(start..start + len);
                self.count -= 1;
                points
            }
            None => 0,
        };
        // Lengths of one column fit: a buffer row holds far fewer than 2^30 points. (Exact
        // growth, a move per column, and growth by half both held more than doubling.)
        self.bytes
            .extend_from_slice(&(q.len() as u32).to_be_bytes());
        self.bytes
            .extend_from_slice(&(v.len() as u32).to_be_bytes());
        self.bytes.extend_from_slice(q);
        self.bytes.extend_from_slice(v);
        self.count += 1;
        gone
    }
}

impl Rolls {
    fn due(&self, row: &RowId) -> bool {
        self.rows.get(row).is_some_and(|h| h.ends <= Instant::now())
    }

    fn hold(&mut self, row: RowId, interval: Duration, (q, v): (&[u8], &[u8])) {
        let n = built_len(q);
        let held = match self.rows.get_mut(&row) {
            Some(h) => h,
            None => {
                let ends = Instant::now() + interval.mul_f64(0.5 + spread(row));
                self.next += 1;
                self.by_end.insert((ends, self.next), row);
                self.rows.entry(row).or_insert(Held {
                    ends,
                    seq: self.next,
                    columns: HeldColumns::default(),
                    points: 0,
                })
            }
        };
        let gone = held.columns.push(q, v);
        held.points -= gone;
        self.points -= gone;
        held.points += n;
        self.points += n;
    }

    /// Forgets a row (rolled, or handed to compaction, which merges its columns anyway).
    pub fn forget(&mut self, row: &RowId) {
        if let Some(h) = self.rows.remove(row) {
            self.by_end.remove(&(h.ends, h.seq));
            self.points -= h.points;
        }
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

/// Rows that may need compacting, with their last write.
pub type Pending = HashMap<RowId, Instant, ahash::RandomState>;

/// What a flush did with a row, when rolls are on.
enum Wrote {
    /// Put this partial column (qualifiers, values), held for the row's roll.
    Partial((Vec<u8>, Vec<u8>)),
    /// Put the row's roll.
    Rolled,
}

/// A fraction in [0, 1) taken from a row.
fn spread((series, base): RowId) -> f64 {
    let h = ahash::RandomState::with_seeds(1, 2, 3, 4).hash_one((series.tsuid, base));
    (h >> 11) as f64 / (1u64 << 53) as f64
}

/// A roll of `row`: one column of `points` (settled), the partial columns it replaces deleted.
/// The put goes first in the batch and a put and delete of one cell would leave it deleted:
/// a partial column that happens to be the merged one is not deleted.
/// The deletes are single deletes ([`Mutation::DeleteOnce`]): on the embedded engine each
/// meets its partial column in the next flush or compaction and both vanish, where a plain
/// tombstone stayed until the last level — a 30-minute soak of millisecond data had the open
/// hour's scans step over millions of them (queries 1 s → 29 s, disk 0.5 → 1.5 GB). A partial
/// column is put once; should the same one have been put twice (the same points sent again),
/// an older copy may come back, and it loses to this newer cell as duplicates always do
/// (readers and the compactor prefer the newest cell), until the hour's compaction deletes it.
fn roll_mutations(row: Vec<u8>, columns: &HeldColumns, more: &[RawPoint]) -> RowMutations {
    let mut points = Vec::with_capacity(columns.bytes.len() / 4 + more.len());
    for (_, q, v) in columns.iter() {
        split_built(q, v, &mut points);
    }
    points.extend_from_slice(more);
    settle(&mut points);
    let (q, v) = build_column(&points);
    let mut mutations = Vec::with_capacity(columns.len() + 1);
    mutations.extend(columns.iter().filter(|(_, c, _)| *c != q).map(|(_, c, _)| {
        Mutation::DeleteOnce {
            family: DATA_FAMILY.to_vec(),
            qualifier: c.to_vec(),
        }
    }));
    mutations.insert(
        0,
        Mutation::Put {
            family: DATA_FAMILY.to_vec(),
            qualifier: q,
            value: v,
        },
    );
    RowMutations { row, mutations }
}

impl Flusher {
    /// Whether this flusher rolls partial columns.
    fn rolls_on(&self) -> bool {
        !self.roll_interval.is_zero() && !self.store.shared()
    }

    /// Writes a buffer to the store: one column per series-hour. Taken by value: a failed write
    /// has dropped the points of the chunks it stored, so the buffer cannot be written again.
    pub fn write(&self, mut buffer: Buffer) -> Result<Vec<(Vec<u8>, u32)>, WriteError> {
        let mut touched = Vec::with_capacity(buffer.rows.len());
        self.write_from(&mut buffer, &mut 0, &mut touched, &mut Rolls::default())?;
        Ok(touched
            .into_iter()
            .map(|(s, base)| (self.layout.row_key(s.tsuid, base), base))
            .collect())
    }

    /// Writes `buffer.rows[*done..]` in chunks, adding each row to `touched`.
    /// A chunk's points are dropped (or held for the row's roll) as soon as the store has its
    /// columns: a flush's buffer is the write path's largest allocation, and a burst has one in
    /// the flusher while the shard fills the next. On failure `*done` is where a retry resumes
    /// (the chunks before it are stored; writing a chunk again would only put the same
    /// columns). A row whose roll is due gets its roll instead of one more partial column.
    fn write_from(
        &self,
        buffer: &mut Buffer,
        done: &mut usize,
        touched: &mut Vec<RowId>,
        rolls: &mut Rolls,
    ) -> Result<(), WriteError> {
        let rolling = self.rolls_on();
        while *done < buffer.rows.len() {
            let chunk = *done..(*done + MUTATE_CHUNK).min(buffer.rows.len());
            let mut batch = Vec::with_capacity(chunk.len());
            let mut keys = Vec::with_capacity(chunk.len());
            // Per row, when rolling: what became of it.
            let mut written = Vec::with_capacity(chunk.len());
            for r in &mut buffer.rows[chunk.clone()] {
                settle(&mut r.points);
                let id = (r.series, r.base);
                let row = self.layout.row_key(r.series.tsuid, r.base);
                if rolling && rolls.due(&id) {
                    let held = &rolls.rows[&id];
                    batch.push(roll_mutations(row, &held.columns, &r.points));
                    written.push(Wrote::Rolled);
                } else {
                    let (q, v) = build_column(&r.points);
                    if rolling {
                        written.push(Wrote::Partial((q.clone(), v.clone())));
                    }
                    batch.push(RowMutations::put(row, DATA_FAMILY, q, v));
                }
                keys.push(id);
            }
            self.store.mutate(&self.table, batch)?;
            let rolled = written
                .iter()
                .filter(|w| matches!(w, Wrote::Rolled))
                .count();
            for (i, r) in buffer.rows[chunk.clone()].iter_mut().enumerate() {
                r.points = Vec::new();
                if !rolling {
                    continue;
                }
                match std::mem::replace(&mut written[i], Wrote::Rolled) {
                    Wrote::Partial((q, v)) => rolls.hold(keys[i], self.roll_interval, (&q, &v)),
                    Wrote::Rolled => rolls.forget(&keys[i]),
                }
            }
            crate::observe::write::rolled(rolled);
            touched.append(&mut keys);
            *done = chunk.end;
        }
        Ok(())
    }

    /// Rolls the held rows that are due and had no points in the last flush (a series that
    /// stopped, or writes less often than the flush interval), and, past `roll_max_points`,
    /// the rows due soonest early. A failure leaves them held for the next try.
    fn roll_idle(&self, rolls: &mut Rolls) {
        if rolls.is_empty() {
            return;
        }
        let now = Instant::now();
        let mut due: Vec<RowId> = Vec::new();
        // Rows of closed hours let go early: their compaction merges their partial columns.
        let mut let_go: Vec<RowId> = Vec::new();
        let (mut left, mut early) = (rolls.points, false);
        let wall = now_s();
        for ((ends, _), k) in &rolls.by_end {
            if *ends > now {
                // Past the bound once the due rows are out, windows close early, down to
                // three quarters of it: an open hour's row rolls, a closed hour's is let go
                // (a bulk load of past hours is all such rows; rolling them early was a
                // quarter of the flusher's time in one of a million series, and each roll
                // was written just before the compaction that rewrote the row anyway).
                if !early && left <= self.roll_max_points {
                    break;
                }
                early = true;
                if left <= self.roll_max_points / 4 * 3 {
                    break;
                }
                if hour_closed(k.1, wall) {
                    left -= rolls.rows[k].points;
                    let_go.push(*k);
                    continue;
                }
            }
            left -= rolls.rows[k].points;
            due.push(*k);
        }
        for k in &let_go {
            rolls.forget(k);
        }
        // A row with one partial column has nothing to merge: it is only let go.
        due.retain(|k| {
            let single = rolls.rows[k].columns.len() <= 1;
            if single {
                rolls.forget(k);
            }
            !single
        });
        for chunk in due.chunks(MUTATE_CHUNK) {
            let batch: Vec<RowMutations> = chunk
                .iter()
                .map(|k| {
                    let h = &rolls.rows[k];
                    let row = self.layout.row_key(k.0.tsuid, k.1);
                    roll_mutations(row, &h.columns, &[])
                })
                .collect();
            if let Err(e) = self.store.mutate(&self.table, batch) {
                tracing::warn!(error = %e, rows = chunk.len(), "rolling partial columns failed; will retry");
                return;
            }
            for k in chunk {
                rolls.forget(k);
            }
            crate::observe::write::rolled(chunk.len());
        }
    }

    pub fn run(self, jobs: Receiver<FlushJob>) {
        // Rows that may need compacting, with their last write.
        let mut pending: Pending = HashMap::default();
        let mut rolls = Rolls::default();
        let mut due = DueRows::default();
        // Idle rows are looked for (see `roll_idle`) every quarter window: windows last 15 s
        // or more by default, and one look per flush walked every held row each time.
        let mut roll_scan = Quarterly::default();
        let name = self
            .wal_dir
            .file_name()
            .map(|n| n.to_string_lossy().replace("shard", "compact"))
            .unwrap_or_else(|| "compact".into());
        let lane = match Lane::start(self.store.clone(), &self.table, &name, self.rollups.clone()) {
            Ok(l) => Some(l),
            Err(e) => {
                // Without its thread the rows stay uncompacted (readers merge them; fsck
                // --fix compacts): never a reason to stop taking writes.
                tracing::error!(error = %e, "cannot start the compaction thread; closed hours stay uncompacted");
                None
            }
        };
        let mut slow = super::compaction::RateLimited::new(Duration::from_secs(60));
        let mut behind = super::compaction::RateLimited::new(Duration::from_secs(60));
        let (mut backlog_seen, mut queue_seen) = (0usize, 0usize);
        while let Ok(job) = jobs.recv() {
            let FlushJob {
                buffer,
                wal_upto,
                waiters,
                readers,
                last,
            } = job;
            let (points, started) = (buffer.points, Instant::now());
            let result = self.flush_durably(buffer, wal_upto, &mut pending, &mut rolls, readers);
            crate::observe::write::flushed(points, started);
            if let Err(e) = &result {
                tracing::error!(error = %e, "flush failed; points stay in the write-ahead log");
            }
            for w in waiters {
                let _ = w.send(result.clone());
            }
            let took = started.elapsed();
            if took >= SLOW_FLUSH && slow.ready() {
                tracing::warn!(
                    points,
                    seconds = took.as_secs_f64(),
                    compaction_backlog = backlog_seen,
                    "slow flush: writers wait while the store takes this long"
                );
            }
            if wal_upto.is_none() {
                // A job only readers asked for added rows too: counted now (the gauge drifted
                // low when only the jobs that go on were counted).
                queue_seen = crate::observe::write::compaction_queue(queue_seen, pending.len());
                continue;
            }
            if let Some(lane) = &lane {
                lane.take_back(&mut pending, self.compaction_delay, &self.layout);
                let (ready, oldest) =
                    self.hand_over(lane, &mut pending, &mut rolls, &mut due, last);
                if oldest >= BEHIND && behind.ready() {
                    tracing::warn!(
                        waiting_rows = ready,
                        compacting_rows = lane.queued(),
                        oldest_seconds = oldest.as_secs(),
                        "compaction is behind: rows of closed hours wait (readers merge them meanwhile)"
                    );
                }
                backlog_seen =
                    crate::observe::write::compaction_backlog(backlog_seen, ready + lane.queued());
            }
            if self.rolls_on() && roll_scan.due(self.roll_interval) {
                self.roll_idle(&mut rolls);
            }
            queue_seen = crate::observe::write::compaction_queue(queue_seen, pending.len());
            // The buffer and perhaps a memtable the engine wrote out are free now: give them
            // back before the next burst is buffered on top of them. Not after small flushes,
            // nor after a job only a query asked for: the release returns queries' freed
            // memory too (see `crate::memory`).
            if points >= RELEASE_AFTER_POINTS {
                tsgate_common::memory::release_freed();
            }
            if last && result.is_ok() {
                // Kept for reuse while running; a stopped node does not need them.
                if let Err(e) = super::wal::remove_free(&self.wal_dir) {
                    tracing::warn!(error = %e, "cannot delete the write-ahead log's free files");
                }
            }
        }
        if let Some(lane) = lane {
            lane.finish();
        }
        crate::observe::write::compaction_backlog(backlog_seen, 0);
        crate::observe::write::compaction_queue(queue_seen, 0);
    }

    fn flush_durably(
        &self,
        mut buffer: Buffer,
        wal_upto: Option<u64>,
        pending: &mut Pending,
        rolls: &mut Rolls,
        readers: Vec<oneshot::Sender<Result<(), WriteError>>>,
    ) -> Result<(), WriteError> {
        use std::sync::atomic::Ordering::Relaxed;
        let now = Instant::now();
        if self.gave_up.load(Relaxed) {
            return Err(self.give_up(None));
        }
        let counts = self.ts_counter.as_ref().map(|_| series_counts(&buffer));
        // On a store failure keep retrying: the points are in the WAL, and nothing newer may
        // be acknowledged as flushed before them.
        let mut delay = Duration::from_millis(100);
        let (mut done, mut touched) = (0, Vec::with_capacity(buffer.rows.len()));
        loop {
            match self.write_from(&mut buffer, &mut done, &mut touched, rolls) {
                Ok(()) => {
                    // Only a write that reached the store proves it healthy (an empty flush
                    // of another shard must not hide a failing one).
                    if !touched.is_empty() {
                        self.store_ok
                            .store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                    break;
                }
                Err(e) => {
                    self.store_ok.store(false, Relaxed);
                    if let Some(r) = self.stopping_refused() {
                        return Err(self.give_up(Some(r)));
                    }
                    tracing::error!(error = %e, "store write failed; retrying");
                    // In slices, so that a shutdown meanwhile is seen at once.
                    let until = Instant::now() + delay;
                    while Instant::now() < until && !self.closing.load(Relaxed) {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    delay = (delay * 2).min(Duration::from_secs(5));
                }
            }
        }
        // Readable now: the jobs before this one were written first.
        self.in_flight
            .written
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        for r in readers {
            let _ = r.send(Ok(()));
        }
        for row in touched {
            pending.insert(row, now);
        }
        if let (Some(c), Some(counts)) = (&self.ts_counter, counts) {
            let counts: Vec<(&[u8], u64)> = counts.iter().map(|(s, n)| (s.tsuid, *n)).collect();
            // Metadata is best effort: a failure here must not hold up the data.
            if let Err(e) = c.record(&counts) {
                tracing::warn!(error = %e, "ts_ctr update failed");
            }
        }
        if let Some(upto) = wal_upto {
            self.store.flush()?;
            super::wal::retire_upto(&self.wal_dir, upto).map_err(WriteError::wal)?;
        }
        Ok(())
    }

    /// Why the store refuses writes, when the node is stopping and it does: retrying would
    /// only run out `server.shutdown_timeout_ms` (a full disk does not empty itself), and
    /// every point is in the WAL, which the next start replays.
    fn stopping_refused(&self) -> Option<tsgate_store::Refusal> {
        if !self.closing.load(std::sync::atomic::Ordering::Relaxed) {
            return None;
        }
        self.store.refusing_writes()
    }

    /// Gives this flush (and every later one) up, leaving their WAL segments in place.
    fn give_up(&self, why: Option<tsgate_store::Refusal>) -> WriteError {
        self.gave_up
            .store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(r) = &why {
            tracing::warn!(
                reason = r.reason,
                "stopping while the store refuses writes ({}): points not yet in the store stay in the write-ahead log for the next start",
                r.detail
            );
        }
        WriteError::GaveUp
    }

    /// Hands the rows due for compaction (hour closed, quiet for `compaction_delay`; with `all`,
    /// every closed row) to the compaction thread, oldest first, as many as it has room for:
    /// the flusher never waits for it (but for the last job, when it waits for everything).
    /// Returns how many due rows are left waiting, and how long the oldest of them has been due.
    ///
    /// `pending` is scanned only when `due` has run dry and its scan interval has passed (or
    /// for the last job): a scan of every row per flush, and a sort of every due row to hand
    /// over 4,096 of them, made a bulk load of a million series' closed hours quadratic (51 k
    /// points/s against 294 k before).
    fn hand_over(
        &self,
        lane: &Lane,
        pending: &mut Pending,
        rolls: &mut Rolls,
        due: &mut DueRows,
        all: bool,
    ) -> (usize, Duration) {
        // Scans run at most every quarter of the compaction delay: a row is handed over that
        // much after it became due at worst.
        if all || (due.rows.is_empty() && due.scans.due(self.compaction_delay)) {
            let at = Instant::now();
            let now = now_s();
            let mut ready: Vec<(Instant, RowId)> = pending
                .iter()
                .filter(|((_, base), touched)| {
                    hour_closed(*base, now)
                        && (all || at.saturating_duration_since(**touched) >= self.compaction_delay)
                })
                .map(|(k, t)| (*t, *k))
                .collect();
            if ready.is_empty() {
                // Flush ticks keep coming while ingest is quiet: a store waiting for the
                // deletes to stop hears again that compaction is caught up (see `Store::tidy`).
                let closed_left = pending.keys().any(|(_, base)| hour_closed(*base, now));
                if !all && !closed_left {
                    lane.tidy();
                }
                due.rows.clear();
                return (0, Duration::ZERO);
            }
            ready.sort_unstable_by_key(|(t, _)| *t);
            due.rows = ready.into();
        }
        while !due.rows.is_empty() {
            let mut ids = Vec::with_capacity(super::compaction::HAND_OVER_ROWS);
            let mut taken = 0;
            for (t, k) in due.rows.iter() {
                if ids.len() == super::compaction::HAND_OVER_ROWS {
                    break;
                }
                taken += 1;
                // Written since the scan (no longer quiet) or handed over already: skipped,
                // left to a later scan.
                if pending.get(k) == Some(t) {
                    ids.push(*k);
                }
            }
            let rows = ids
                .iter()
                .map(|(s, b)| (self.layout.row_key(s.tsuid, *b), *b))
                .collect();
            if !ids.is_empty() && !lane.offer(rows, all) {
                break;
            }
            for k in &ids {
                pending.remove(k);
                rolls.forget(k);
            }
            due.rows.drain(..taken);
        }
        let oldest = due
            .rows
            .front()
            .map(|(t, _)| t.elapsed().saturating_sub(self.compaction_delay))
            .unwrap_or_default();
        (due.rows.len(), oldest)
    }
}

/// Rows a scan of `pending` found due for compaction, oldest first, handed over as the
/// compaction thread makes room.
#[derive(Default)]
pub struct DueRows {
    rows: std::collections::VecDeque<(Instant, RowId)>,
    scans: Quarterly,
}

/// A walk of the flusher's rows done at most every quarter of an interval (a second at most):
/// what it looks for is found that much late at worst, where a walk per flush cost a walk of
/// every row each time.
#[derive(Default)]
pub struct Quarterly {
    last: Option<Instant>,
}

impl Quarterly {
    /// Whether a walk is due now for `interval`; if so, it counts as done.
    fn due(&mut self, interval: Duration) -> bool {
        let every = (interval / 4).min(Duration::from_secs(1));
        if self.last.is_some_and(|t| t.elapsed() < every) {
            return false;
        }
        self.last = Some(Instant::now());
        true
    }
}

/// A flush of at least this many points returns the memory it freed to the OS at once (about
/// a MiB of buffered points; a steady scrape of 10,000 series every 10 s flushes 500 points a
/// time and never does).
const RELEASE_AFTER_POINTS: usize = 65_536;

/// Rows of closed hours due this long without being compacted are logged (at most once a
/// minute): the compaction thread is not keeping up.
const BEHIND: Duration = Duration::from_secs(60);

/// A flush this slow is logged (at most once a minute): writers are waiting on it.
const SLOW_FLUSH: Duration = Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;
    use tsgate_schema::DataValue;

    #[test]
    fn settle_keeps_the_last_write_of_an_offset() {
        let p = |ts: u64, v: i64| RawPoint::encode(ts, 1356998400, DataValue::Int(v)).unwrap();
        let mut pts = vec![
            p(1356998410, 1),
            p(1356998400, 2),
            p(1356998410, 3),
            p(1356998400000, 4),
        ];
        settle(&mut pts);
        assert_eq!(pts.len(), 2);
        assert_eq!(pts[0].value().unwrap(), DataValue::Int(4));
        assert_eq!(pts[1].value().unwrap(), DataValue::Int(3));
        // In order and once each: as they were.
        let mut pts = vec![p(1356998400, 1), p(1356998400500, 2), p(1356998410, 3)];
        settle(&mut pts);
        assert_eq!(
            pts.iter().map(|p| p.value().unwrap()).collect::<Vec<_>>(),
            [1, 2, 3].map(DataValue::Int)
        );
        // In order but for a repeat at the end: the later write stands.
        let mut pts = vec![p(1356998400, 1), p(1356998410, 2), p(1356998410, 3)];
        settle(&mut pts);
        assert_eq!(
            pts.iter().map(|p| p.value().unwrap()).collect::<Vec<_>>(),
            [1, 3].map(DataValue::Int)
        );
    }

    /// Fails its `fail_at`-th `mutate` (counting from 1), once.
    struct FlakyStore {
        inner: SharedStore,
        calls: std::sync::atomic::AtomicUsize,
        fail_at: usize,
    }

    impl tsgate_store::Store for FlakyStore {
        fn get(
            &self,
            t: &str,
            r: &[u8],
            f: &[&[u8]],
        ) -> tsgate_store::StoreResult<Vec<tsgate_store::Cell>> {
            self.inner.get(t, r, f)
        }
        fn mutate(&self, t: &str, b: Vec<RowMutations>) -> tsgate_store::StoreResult<()> {
            if self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1 == self.fail_at {
                return Err(tsgate_store::StoreError::Engine {
                    op: "mutate",
                    table: t.into(),
                    msg: "injected".into(),
                });
            }
            self.inner.mutate(t, b)
        }
        fn scan(
            &self,
            t: &str,
            s: &tsgate_store::Scan,
        ) -> tsgate_store::StoreResult<tsgate_store::RowStream> {
            self.inner.scan(t, s)
        }
        fn increment(
            &self,
            t: &str,
            r: &[u8],
            f: &[u8],
            q: &[u8],
            d: i64,
        ) -> tsgate_store::StoreResult<i64> {
            self.inner.increment(t, r, f, q, d)
        }
        fn check_and_put(
            &self,
            t: &str,
            r: &[u8],
            f: &[u8],
            q: &[u8],
            e: Option<&[u8]>,
            v: &[u8],
        ) -> tsgate_store::StoreResult<bool> {
            self.inner.check_and_put(t, r, f, q, e, v)
        }
        fn flush(&self) -> tsgate_store::StoreResult<()> {
            self.inner.flush()
        }
        fn mutate_at(
            &self,
            t: &str,
            b: Vec<RowMutations>,
            ts: u64,
        ) -> tsgate_store::StoreResult<()> {
            self.inner.mutate_at(t, b, ts)
        }
    }

    const ROWS: usize = 2 * MUTATE_CHUNK + 10;
    const BASE: u32 = 1_356_998_400;

    /// A flusher over a store that fails its second write once, and a buffer of `ROWS` rows of
    /// three points each, row i holding i*10, i*10+1, i*10+2.
    fn flaky_flush() -> (
        tempfile::TempDir,
        Flusher,
        std::sync::Arc<FlakyStore>,
        Buffer,
        Vec<crate::series::Series>,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let names = tsgate_store::TableNames::default();
        let inner: SharedStore = std::sync::Arc::new(
            tsgate_store::embedded::EmbeddedStore::open(&dir.path().join("store"), &names.specs())
                .unwrap(),
        );
        let flaky = std::sync::Arc::new(FlakyStore {
            inner,
            calls: Default::default(),
            fail_at: 2,
        });
        let flusher = Flusher {
            store: flaky.clone(),
            table: names.data.clone(),
            layout: KeyLayout::default(),
            wal_dir: dir.path().join("wal"),
            compaction_delay: Duration::ZERO,
            roll_interval: Duration::ZERO,
            roll_max_points: 0,
            ts_counter: None,
            rollups: None,
            store_ok: Default::default(),
            in_flight: Default::default(),
            closing: Default::default(),
            gave_up: Default::default(),
        };
        let mut buffer = Buffer::default();
        let series: Vec<_> = (0..ROWS as u32)
            .map(|i| {
                crate::series::SeriesKey::new(&[
                    0,
                    0,
                    7,
                    0,
                    0,
                    1,
                    (i >> 16) as u8,
                    (i >> 8) as u8,
                    i as u8,
                ])
            })
            .collect();
        for (i, s) in series.iter().enumerate() {
            for k in 0..3u64 {
                buffer.insert(
                    s,
                    BASE,
                    RawPoint::encode(
                        BASE as u64 + k * 10,
                        BASE,
                        DataValue::Int(i as i64 * 10 + k as i64),
                    )
                    .unwrap(),
                );
            }
        }
        (dir, flusher, flaky, buffer, series)
    }

    /// Every row holds one column of its three points.
    fn assert_stored(store: &SharedStore, series: &[crate::series::Series]) {
        let table = tsgate_store::TableNames::default().data;
        for (i, s) in series.iter().enumerate() {
            let row = KeyLayout::default().row_key(s.tsuid, BASE);
            let cells = store.get(&table, &row, &[DATA_FAMILY]).unwrap();
            assert_eq!(cells.len(), 1, "row {i}: one column");
            let mut points = Vec::new();
            tsgate_schema::column::decode_compacted(
                &cells[0].qualifier,
                &cells[0].value,
                &mut points,
            )
            .unwrap();
            let values: Vec<_> = points.iter().map(|p| p.value().unwrap()).collect();
            assert_eq!(
                values,
                (0..3)
                    .map(|k| DataValue::Int(i as i64 * 10 + k))
                    .collect::<Vec<_>>(),
                "row {i}"
            );
        }
    }

    /// A flush that fails part-way resumes at the first chunk the store did not take: the
    /// chunks before it are stored once and their points already dropped, the rest are kept
    /// until stored, and in the end every row holds its points.
    #[test]
    fn a_failed_flush_resumes_at_the_chunk_that_failed() {
        let (_dir, flusher, flaky, mut buffer, series) = flaky_flush();
        let (mut done, mut touched) = (0, Vec::new());
        assert!(flusher
            .write_from(&mut buffer, &mut done, &mut touched, &mut Rolls::default())
            .is_err());
        assert_eq!(done, MUTATE_CHUNK, "the first chunk is stored");
        assert_eq!(touched.len(), MUTATE_CHUNK);
        assert!(
            buffer.rows[..MUTATE_CHUNK]
                .iter()
                .all(|r| r.points.is_empty() && r.points.capacity() == 0),
            "stored rows' points are dropped"
        );
        assert!(
            buffer.rows[MUTATE_CHUNK..]
                .iter()
                .all(|r| r.points.len() == 3),
            "rows not stored keep their points"
        );
        flusher
            .write_from(&mut buffer, &mut done, &mut touched, &mut Rolls::default())
            .unwrap();
        assert_eq!((done, touched.len()), (ROWS, ROWS));
        for (i, s) in series.iter().enumerate() {
            assert_eq!(touched[i], (*s, BASE));
        }
        // One call per chunk, plus the one that failed: nothing was written twice.
        assert_eq!(flaky.calls.load(std::sync::atomic::Ordering::SeqCst), 3 + 1);
        assert_stored(&flaky.inner, &series);
    }

    /// The flush loop around it: the failure marks the store unavailable, the retry stores
    /// the rest and marks it available again, and every row waits for its compaction.
    #[test]
    fn a_flush_retries_a_failed_store_write_to_the_end() {
        let (_dir, flusher, flaky, buffer, series) = flaky_flush();
        let mut pending = Pending::default();
        flusher
            .flush_durably(
                buffer,
                None,
                &mut pending,
                &mut Rolls::default(),
                Vec::new(),
            )
            .unwrap();
        assert!(
            flusher.store_ok.load(std::sync::atomic::Ordering::SeqCst),
            "available again"
        );
        assert_eq!(pending.len(), ROWS);
        assert!(series.iter().all(|s| pending.contains_key(&(*s, BASE))));
        assert_eq!(flaky.calls.load(std::sync::atomic::Ordering::SeqCst), 3 + 1);
        assert_stored(&flaky.inner, &series);
    }

    fn embedded() -> (tempfile::TempDir, SharedStore) {
        let dir = tempfile::tempdir().unwrap();
        let names = tsgate_store::TableNames::default();
        let store: SharedStore = std::sync::Arc::new(
            tsgate_store::embedded::EmbeddedStore::open(&dir.path().join("store"), &names.specs())
                .unwrap(),
        );
        std::fs::create_dir_all(dir.path().join("wal")).unwrap();
        (dir, store)
    }

    fn flusher_over(store: SharedStore, dir: &std::path::Path, roll: Duration) -> Flusher {
        Flusher {
            store,
            table: tsgate_store::TableNames::default().data,
            layout: KeyLayout::default(),
            wal_dir: dir.join("wal"),
            compaction_delay: Duration::ZERO,
            roll_interval: roll,
            roll_max_points: 1 << 20,
            ts_counter: None,
            rollups: None,
            store_ok: Default::default(),
            in_flight: Default::default(),
            closing: Default::default(),
            gave_up: Default::default(),
        }
    }

    fn series_no(i: u32) -> crate::series::Series {
        crate::series::SeriesKey::new(&[0, 0, 8, 0, 0, 1, (i >> 16) as u8, (i >> 8) as u8, i as u8])
    }

    /// The next hour's base: a row of an hour that is not closed (rolls hold only those), and
    /// stays so while a test runs.
    fn open_base() -> u32 {
        let now = now_s();
        (now - now % 3600 + 3600) as u32
    }

    /// A buffer of `points` (seconds after the open base, value) for each series.
    fn buffer_of(rows: &[(crate::series::Series, &[(u64, i64)])]) -> Buffer {
        buffer_at(open_base(), rows)
    }

    /// The same in the row of `base`.
    fn buffer_at(base: u32, rows: &[(crate::series::Series, &[(u64, i64)])]) -> Buffer {
        let mut b = Buffer::default();
        for (s, points) in rows {
            for &(at, v) in *points {
                let p = RawPoint::encode(base as u64 + at, base, DataValue::Int(v)).unwrap();
                b.insert(s, base, p);
            }
        }
        b
    }

    /// The row's column count and its points as readers merge them (offset s, value).
    fn row_of(store: &SharedStore, s: crate::series::Series) -> (usize, Vec<(u64, i64)>) {
        row_at(store, s, open_base())
    }

    fn row_at(
        store: &SharedStore,
        s: crate::series::Series,
        base: u32,
    ) -> (usize, Vec<(u64, i64)>) {
        let row = KeyLayout::default().row_key(s.tsuid, base);
        let table = tsgate_store::TableNames::default().data;
        let cells = store.get(&table, &row, &[DATA_FAMILY]).unwrap();
        let cols = tsgate_store::columns(&cells);
        let merged = tsgate_schema::compaction::merge_columns(&cols);
        let points = merged
            .points
            .iter()
            .map(|p| match p.value().unwrap() {
                DataValue::Int(v) => (p.offset_ms() as u64 / 1000, v),
                other => panic!("{other:?}"),
            })
            .collect();
        (cells.len(), points)
    }

    /// A due row gets one column for every partial column since its last roll and its new
    /// points, the partial columns go, and an offset written twice keeps its later value.
    #[test]
    fn a_roll_replaces_the_partial_columns_with_one_holding_the_last_writes() {
        let (dir, store) = embedded();
        let f = flusher_over(store.clone(), dir.path(), Duration::from_millis(40));
        let (a, mut rolls) = (series_no(1), Rolls::default());
        let write = |points: &[(u64, i64)], rolls: &mut Rolls| {
            let mut touched = Vec::new();
            f.write_from(&mut buffer_of(&[(a, points)]), &mut 0, &mut touched, rolls)
                .unwrap();
        };
        write(&[(0, 1), (10, 2)], &mut rolls);
        write(&[(10, 20), (20, 3)], &mut rolls);
        assert_eq!(row_of(&store, a), (2, vec![(0, 1), (10, 20), (20, 3)]));
        assert_eq!((rolls.len(), rolls.points), (1, 4));
        std::thread::sleep(Duration::from_millis(80)); // past any row's window (20–60 ms)
        write(&[(30, 4)], &mut rolls);
        assert_eq!(
            row_of(&store, a),
            (1, vec![(0, 1), (10, 20), (20, 3), (30, 4)]),
            "one column, the later write of offset 10 in it"
        );
        assert!(rolls.is_empty() && rolls.points == 0);
        // A new window starts with the next partial column.
        write(&[(40, 5)], &mut rolls);
        assert_eq!(row_of(&store, a).0, 2);
        assert_eq!(rolls.len(), 1);
        // The same offsets written again (a column of the same qualifiers, new values) after
        // a column overlapping them: held once, its points counted once, and its values win
        // over the overlapping column's in the roll.
        write(&[(50, 1), (60, 2)], &mut rolls);
        write(&[(60, 20), (70, 3)], &mut rolls);
        write(&[(50, 7), (60, 8)], &mut rolls);
        assert_eq!((rolls.len(), rolls.points), (1, 5));
        assert_eq!(row_of(&store, a).0, 4, "the same qualifiers are one cell");
        std::thread::sleep(Duration::from_millis(80));
        write(&[(80, 6)], &mut rolls);
        let (cells, points) = row_of(&store, a);
        assert_eq!(cells, 2, "the first roll's column and this one");
        assert_eq!(&points[4..], &[(40, 5), (50, 7), (60, 8), (70, 3), (80, 6)]);
    }

    /// Past `roll_max_points`, a closed hour's row is let go early without a write (its
    /// compaction merges its partial columns), where an open hour's rolls.
    #[test]
    fn past_the_bound_a_closed_hours_row_is_let_go_and_an_open_hours_rolls() {
        let (dir, store) = embedded();
        let mut f = flusher_over(store.clone(), dir.path(), Duration::from_secs(3600));
        f.roll_max_points = 2;
        let (a, b) = (series_no(1), series_no(2));
        let mut rolls = Rolls::default();
        for k in 0..2u64 {
            let mut buf = buffer_at(BASE, &[(a, &[(k, k as i64)])]);
            let open = buffer_of(&[(b, &[(k, k as i64)])]);
            for (s, r) in open.rows.iter().map(|r| (r.series, r)) {
                for p in &r.points {
                    buf.insert(s, r.base, *p);
                }
            }
            f.write_from(&mut buf, &mut 0, &mut Vec::new(), &mut rolls)
                .unwrap();
        }
        assert_eq!((rolls.len(), rolls.points), (2, 4), "both rows held");
        f.roll_idle(&mut rolls);
        assert!(rolls.is_empty(), "down to 3/4 of the bound: both went");
        assert_eq!(
            row_at(&store, a, BASE).0,
            2,
            "closed: two partial columns left"
        );
        assert_eq!(row_of(&store, b), (1, vec![(0, 0), (1, 1)]), "open: rolled");
    }

    /// Rows that got nothing in a flush roll once due; a row of one column is let go without
    /// a write; past `roll_max_points` the rows due soonest roll before their time.
    #[test]
    fn idle_rows_roll_when_due_and_the_oldest_roll_early_past_the_bound() {
        let (dir, store) = embedded();
        let f = flusher_over(store.clone(), dir.path(), Duration::from_millis(40));
        let (a, b) = (series_no(1), series_no(2));
        let mut rolls = Rolls::default();
        let mut touched = Vec::new();
        for buffer in [
            buffer_of(&[(a, &[(0, 1)]), (b, &[(0, 7)])]),
            buffer_of(&[(a, &[(10, 2)])]),
        ] {
            f.write_from(&mut { buffer }, &mut 0, &mut touched, &mut rolls)
                .unwrap();
        }
        f.roll_idle(&mut rolls);
        assert_eq!(rolls.len(), 2, "not due yet");
        std::thread::sleep(Duration::from_millis(80));
        f.roll_idle(&mut rolls);
        assert!(rolls.is_empty());
        assert_eq!(row_of(&store, a), (1, vec![(0, 1), (10, 2)]));
        assert_eq!(row_of(&store, b), (1, vec![(0, 7)]));

        let mut f = flusher_over(store.clone(), dir.path(), Duration::from_secs(3600));
        f.roll_max_points = 4;
        let (c, d) = (series_no(3), series_no(4));
        for buffer in [
            buffer_of(&[(c, &[(0, 1), (1, 2)])]),
            buffer_of(&[(c, &[(2, 3)]), (d, &[(0, 1), (1, 2), (2, 3)])]),
        ] {
            f.write_from(&mut { buffer }, &mut 0, &mut touched, &mut rolls)
                .unwrap();
            std::thread::sleep(Duration::from_millis(2));
        }
        assert_eq!(rolls.points, 6);
        let key = |s: crate::series::Series| (s, open_base());
        let ends = |s| rolls.rows[&key(s)].ends;
        let (first, other) = if ends(c) <= ends(d) { (c, d) } else { (d, c) };
        f.roll_idle(&mut rolls);
        assert_eq!(
            rolls.points, 3,
            "the row due first went: down to 3/4 of the bound"
        );
        assert!(!rolls.rows.contains_key(&key(first)));
        assert!(rolls.rows.contains_key(&key(other)));
        if first == c {
            // Two partial columns merged into one.
            assert_eq!(row_of(&store, c), (1, vec![(0, 1), (1, 2), (2, 3)]));
        } else {
            // One partial column: let go as it is; c keeps its two.
            assert_eq!(row_of(&store, c).0, 2);
        }
        assert_eq!(row_of(&store, d).0, 1);
    }

    /// A roll the store refuses changes nothing: the row keeps its partial columns and the
    /// flusher its points, and the retry merges them all.
    #[test]
    fn a_failed_roll_keeps_the_partial_columns_and_the_held_points() {
        let (dir, inner) = embedded();
        let flaky = std::sync::Arc::new(FlakyStore {
            inner,
            calls: Default::default(),
            fail_at: 4,
        });
        let f = flusher_over(flaky.clone(), dir.path(), Duration::from_millis(1));
        let a = series_no(9);
        let mut rolls = Rolls::default();
        let mut touched = Vec::new();
        for (at, v) in [(0, 1), (1, 2)] {
            let mut b = buffer_of(&[(a, &[(at, v)])]);
            f.write_from(&mut b, &mut 0, &mut touched, &mut rolls)
                .unwrap();
            std::thread::sleep(Duration::from_millis(5));
        }
        // The second write rolled the first partial column with its own points.
        assert_eq!(row_of(&flaky.inner, a), (1, vec![(0, 1), (1, 2)]));
        assert!(rolls.is_empty());
        let mut b = buffer_of(&[(a, &[(2, 3)])]);
        f.write_from(&mut b, &mut 0, &mut touched, &mut rolls)
            .unwrap();
        std::thread::sleep(Duration::from_millis(5));
        let (mut b, mut done) = (buffer_of(&[(a, &[(3, 4)])]), 0);
        assert!(f
            .write_from(&mut b, &mut done, &mut touched, &mut rolls)
            .is_err());
        assert_eq!(done, 0);
        assert_eq!(
            row_of(&flaky.inner, a),
            (2, vec![(0, 1), (1, 2), (2, 3)]),
            "as before the roll"
        );
        assert_eq!((rolls.len(), rolls.points), (1, 1));
        f.write_from(&mut b, &mut done, &mut touched, &mut rolls)
            .unwrap();
        assert_eq!(
            row_of(&flaky.inner, a),
            (2, vec![(0, 1), (1, 2), (2, 3), (3, 4)]),
            "the first roll's column and the second's"
        );
        assert!(rolls.is_empty());
    }

    /// Blocks `get_rows` (the compactor's first call) until let go.
    struct StuckStore {
        inner: SharedStore,
        open: std::sync::Mutex<bool>,
        moved: std::sync::Condvar,
        entered: std::sync::atomic::AtomicBool,
    }

    impl tsgate_store::Store for StuckStore {
        fn get(
            &self,
            t: &str,
            r: &[u8],
            f: &[&[u8]],
        ) -> tsgate_store::StoreResult<Vec<tsgate_store::Cell>> {
            self.inner.get(t, r, f)
        }
        fn get_rows(
            &self,
            t: &str,
            rows: &[Vec<u8>],
            f: &[&[u8]],
        ) -> tsgate_store::StoreResult<Vec<Vec<tsgate_store::Cell>>> {
            self.entered
                .store(true, std::sync::atomic::Ordering::SeqCst);
            let mut open = self.open.lock().unwrap();
            while !*open {
                open = self.moved.wait(open).unwrap();
            }
            drop(open);
            self.inner.get_rows(t, rows, f)
        }
        fn mutate(&self, t: &str, b: Vec<RowMutations>) -> tsgate_store::StoreResult<()> {
            self.inner.mutate(t, b)
        }
        fn scan(
            &self,
            t: &str,
            s: &tsgate_store::Scan,
        ) -> tsgate_store::StoreResult<tsgate_store::RowStream> {
            self.inner.scan(t, s)
        }
        fn increment(
            &self,
            t: &str,
            r: &[u8],
            f: &[u8],
            q: &[u8],
            d: i64,
        ) -> tsgate_store::StoreResult<i64> {
            self.inner.increment(t, r, f, q, d)
        }
        fn check_and_put(
            &self,
            t: &str,
            r: &[u8],
            f: &[u8],
            q: &[u8],
            e: Option<&[u8]>,
            v: &[u8],
        ) -> tsgate_store::StoreResult<bool> {
            self.inner.check_and_put(t, r, f, q, e, v)
        }
        fn flush(&self) -> tsgate_store::StoreResult<()> {
            self.inner.flush()
        }
        fn mutate_at(
            &self,
            t: &str,
            b: Vec<RowMutations>,
            ts: u64,
        ) -> tsgate_store::StoreResult<()> {
            self.inner.mutate_at(t, b, ts)
        }
        fn atomic_batches(&self) -> bool {
            true
        }
    }

    /// Flushes go on, each answered, while the compaction thread is stuck in the store with
    /// rows of closed hours piling up; once it moves, every row is compacted.
    #[test]
    fn flushes_go_on_while_compaction_is_stuck() {
        let (dir, inner) = embedded();
        let stuck = std::sync::Arc::new(StuckStore {
            inner: inner.clone(),
            open: std::sync::Mutex::new(false),
            moved: Default::default(),
            entered: Default::default(),
        });
        let f = flusher_over(stuck.clone(), dir.path(), Duration::ZERO);
        let (jobs, rx) = std::sync::mpsc::sync_channel(1);
        let flusher = std::thread::spawn(move || f.run(rx));
        // More rows than the compaction thread takes in: the rest wait in the flusher.
        let series: Vec<_> = (0..3 * 2048).map(series_no).collect();
        let flush = |k: u64, last: bool| {
            let rows: Vec<(crate::series::Series, Vec<(u64, i64)>)> =
                series.iter().map(|s| (*s, vec![(k, k as i64)])).collect();
            let rows: Vec<(crate::series::Series, &[(u64, i64)])> =
                rows.iter().map(|(s, p)| (*s, &p[..])).collect();
            let (tx, answer) = oneshot::channel();
            jobs.send(FlushJob {
                buffer: buffer_at(BASE, &rows),
                wal_upto: Some(0),
                waiters: vec![tx],
                readers: Vec::new(),
                last,
            })
            .unwrap();
            answer
        };
        for k in 0..4 {
            let mut answer = flush(k, false);
            let t = Instant::now();
            loop {
                match answer.try_recv() {
                    Ok(r) => break r.unwrap(),
                    Err(oneshot::error::TryRecvError::Empty) => {}
                    Err(e) => panic!("{e}"),
                }
                assert!(
                    t.elapsed() < Duration::from_secs(20),
                    "flush {k} not answered"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        assert!(stuck.entered.load(std::sync::atomic::Ordering::SeqCst));
        *stuck.open.lock().unwrap() = true;
        stuck.moved.notify_all();
        drop(flush(4, true));
        drop(jobs);
        flusher.join().unwrap();
        for s in &series {
            let (columns, points) = row_at(&inner, s, BASE);
            assert_eq!(columns, 1, "compacted");
            assert_eq!(points, (0..5).map(|k| (k, k as i64)).collect::<Vec<_>>());
        }
    }

    #[test]
    fn hours_close_a_second_after_they_end() {
        assert!(!hour_closed(1356998400, 1357002000));
        assert!(hour_closed(1356998400, 1357002001));
    }
}
