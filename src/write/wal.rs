//! The write-ahead log: numbered segment files of CRC-checked records. A write is acknowledged
//! only after its record is on disk (group commit: one fsync covers every write queued meanwhile).
//! Segments are deleted once the store holds, durably, every point they contain.
//!
//! A shard writes groups with `write` and hands the fsync to its [`Syncer`] thread, so that it
//! encodes and buffers the next groups while the disk works; the syncer's next fsync covers
//! everything written meanwhile.
//!
//! Record: `[u32 LE payload length][u32 LE crc32c(payload)][payload]`; payload entries:
//! `[u16 LE tsuid len][tsuid][u32 BE row base][u8 qualifier len][qualifier][u8 value len][value]`.

use crate::schema::RawPoint;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

const HEADER: usize = 8;
/// Refuse absurd record lengths when replaying a damaged file.
const MAX_RECORD: usize = 256 << 20;

pub struct Wal {
    dir: PathBuf,
    file: Arc<File>,
    seq: u64,
    fsync: bool,
    buf: Vec<u8>,
    record_start: usize,
}

fn segment_path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("{seq:020}.wal"))
}

/// Segment numbers present in `dir`, ascending.
pub fn segments(dir: &Path) -> io::Result<Vec<u64>> {
    let mut out = Vec::new();
    if !dir.exists() {
        return Ok(out);
    }
    for e in fs::read_dir(dir)? {
        let name = e?.file_name();
        let name = name.to_string_lossy();
        if let Some(n) = name.strip_suffix(".wal").and_then(|s| s.parse::<u64>().ok()) {
            out.push(n);
        }
    }
    out.sort_unstable();
    Ok(out)
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

impl Wal {
    /// Opens a fresh segment after any existing ones.
    pub fn open(dir: &Path, fsync: bool) -> io::Result<Wal> {
        fs::create_dir_all(dir)?;
        let seq = segments(dir)?.last().map_or(1, |s| s + 1);
        let file = Arc::new(OpenOptions::new().create_new(true).append(true).open(segment_path(dir, seq))?);
        sync_dir(dir)?;
        Ok(Wal { dir: dir.to_path_buf(), file, seq, fsync, buf: Vec::with_capacity(1 << 20), record_start: 0 })
    }

    /// The current segment's number.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Starts a record in the pending group.
    pub fn begin(&mut self) {
        self.record_start = self.buf.len();
        self.buf.extend_from_slice(&[0; HEADER]);
    }

    pub fn push(&mut self, tsuid: &[u8], base: u32, p: &RawPoint) {
        let b = &mut self.buf;
        b.extend_from_slice(&(tsuid.len() as u16).to_le_bytes());
        b.extend_from_slice(tsuid);
        b.extend_from_slice(&base.to_be_bytes());
        let q = p.qualifier();
        b.push(q.len() as u8);
        b.extend_from_slice(q);
        let v = p.value_bytes();
        b.push(v.len() as u8);
        b.extend_from_slice(v);
    }

    /// Seals the record started by `begin`.
    pub fn end(&mut self) {
        let payload = &self.buf[self.record_start + HEADER..];
        let len = payload.len() as u32;
        let crc = crc32c::crc32c(payload);
        self.buf[self.record_start..self.record_start + 4].copy_from_slice(&len.to_le_bytes());
        self.buf[self.record_start + 4..self.record_start + 8].copy_from_slice(&crc.to_le_bytes());
    }

    /// Whether acknowledged writes must be fsynced (`write.wal_fsync = always`).
    pub fn fsync(&self) -> bool {
        self.fsync
    }

    /// Writes the pending group to the current segment, not yet durable: returns its size and
    /// the segment's file for the fsync that will make it so.
    ///
    /// A failed write may leave a torn record mid-segment, and replay stops at the first bad
    /// record: the shard then rotates (see `Syncer::run` for failed fsyncs), so that later
    /// groups go to a fresh segment.
    pub fn write(&mut self) -> io::Result<(usize, Arc<File>)> {
        let n = self.buf.len();
        let res = if n == 0 { Ok(()) } else { (&*self.file).write_all(&self.buf) };
        self.buf.clear();
        if res.is_ok() {
            crate::observe::write::wal_appended(n);
        }
        res.map(|_| (n, self.file.clone()))
    }

    /// Writes the pending group and makes it durable (one fsync for all of it).
    pub fn commit(&mut self) -> io::Result<usize> {
        let (n, file) = self.write()?;
        if self.fsync && n > 0 {
            let start = Instant::now();
            file.sync_data()?;
            crate::observe::write::wal_commit(start);
        }
        Ok(n)
    }

    /// Starts a new segment; returns the number of the one sealed. Groups written to the sealed
    /// segment are made durable by the fsyncs already asked for them (the shard writes its
    /// pending group before rotating; one left over would be committed here).
    pub fn rotate(&mut self) -> io::Result<u64> {
        debug_assert!(self.buf.is_empty(), "a group pending at rotation");
        self.commit()?;
        let sealed = self.seq;
        let next = sealed + 1;
        self.file = Arc::new(OpenOptions::new().create_new(true).append(true).open(segment_path(&self.dir, next))?);
        // Writes go to the new segment from here on, whatever the directory's fsync says: a
        // failed one must not leave `seq` behind, or every later rotation would try to create
        // this segment again and fail.
        self.seq = next;
        sync_dir(&self.dir)?;
        Ok(sealed)
    }
}

/// A written group waiting for its fsync, and who to tell.
pub struct SyncRequest<T> {
    pub file: Arc<File>,
    pub waiters: Vec<T>,
}

/// A shard's fsync thread: takes every request queued, fsyncs each segment file they name
/// once (in order), then answers them all.
///
/// After a failed fsync the kernel may have dropped that file's dirty pages, and a later fsync
/// of it can succeed without them, while replay stops at the first bad record: every later
/// request naming that file fails too, and `poisoned` tells the shard to rotate to a fresh
/// segment.
pub struct Syncer {
    pub poisoned: Arc<std::sync::atomic::AtomicBool>,
}

impl Syncer {
    pub fn run<T>(self, rx: std::sync::mpsc::Receiver<SyncRequest<T>>, answer: impl Fn(T, io::Result<()>)) {
        // Files whose fsync failed (kept alive so their addresses stay theirs).
        let mut failed: Vec<(Arc<File>, io::ErrorKind, String)> = Vec::new();
        while let Ok(first) = rx.recv() {
            let mut reqs = vec![first];
            reqs.extend(rx.try_iter());
            let mut synced: Vec<Arc<File>> = Vec::with_capacity(1);
            for r in &reqs {
                // One fsync per file covers every request naming it.
                if synced.iter().chain(failed.iter().map(|(f, ..)| f)).any(|f| Arc::ptr_eq(f, &r.file)) {
                    continue;
                }
                let start = Instant::now();
                let res = r.file.sync_data();
                crate::observe::write::wal_commit(start);
                match res {
                    Ok(()) => synced.push(r.file.clone()),
                    Err(e) => {
                        tracing::error!(error = %e, "write-ahead log fsync failed; the shard moves to a new segment");
                        failed.push((r.file.clone(), e.kind(), e.to_string()));
                        self.poisoned.store(true, std::sync::atomic::Ordering::Release);
                    }
                }
            }
            for r in reqs {
                let err = failed.iter().find(|(f, ..)| Arc::ptr_eq(f, &r.file)).map(|(_, k, m)| (*k, m.clone()));
                for w in r.waiters {
                    answer(w, match &err {
                        None => Ok(()),
                        Some((k, m)) => Err(io::Error::new(*k, m.clone())),
                    });
                }
            }
            // A failed file is only ever named again by requests already queued behind it.
            failed.retain(|(f, ..)| Arc::strong_count(f) > 1);
        }
    }
}

/// Deletes every segment numbered `<= upto` (their points are durable in the store).
pub fn remove_upto(dir: &Path, upto: u64) -> io::Result<()> {
    for s in segments(dir)? {
        if s <= upto {
            fs::remove_file(segment_path(dir, s))?;
        }
    }
    Ok(())
}

/// What a replay found.
#[derive(Debug, Default)]
pub struct ReplayStats {
    pub segments: usize,
    pub records: usize,
    pub points: usize,
    /// Segments that ended in a torn or damaged record (the rest of that segment is skipped).
    pub damaged: usize,
}

/// Reads every point of every segment in `dir`, in write order.
pub fn replay(dir: &Path, mut f: impl FnMut(&[u8], u32, RawPoint)) -> io::Result<ReplayStats> {
    let mut stats = ReplayStats::default();
    for seq in segments(dir)? {
        stats.segments += 1;
        let mut data = Vec::new();
        File::open(segment_path(dir, seq))?.read_to_end(&mut data)?;
        let mut at = 0;
        while at < data.len() {
            let Some(ok) = read_record(&data[at..], &mut f) else {
                tracing::warn!(segment = seq, offset = at, "WAL segment ends in a torn or damaged record; rest skipped");
                stats.damaged += 1;
                break;
            };
            at += ok.0;
            stats.records += 1;
            stats.points += ok.1;
        }
    }
    Ok(stats)
}

/// Decodes one record; `None` if it is incomplete or fails its checksum.
fn read_record(data: &[u8], f: &mut impl FnMut(&[u8], u32, RawPoint)) -> Option<(usize, usize)> {
    if data.len() < HEADER {
        return None;
    }
    let len = u32::from_le_bytes(data[..4].try_into().ok()?) as usize;
    let crc = u32::from_le_bytes(data[4..8].try_into().ok()?);
    if len > MAX_RECORD || data.len() < HEADER + len {
        return None;
    }
    let payload = &data[HEADER..HEADER + len];
    if crc32c::crc32c(payload) != crc {
        return None;
    }
    // Validate the whole record before handing out any point of it.
    let mut points = Vec::new();
    let mut i = 0;
    let take = |i: &mut usize, n: usize| -> Option<&[u8]> {
        let s = payload.get(*i..*i + n)?;
        *i += n;
        Some(s)
    };
    while i < payload.len() {
        let tl = u16::from_le_bytes(take(&mut i, 2)?.try_into().ok()?) as usize;
        let tsuid = take(&mut i, tl)?;
        let base = u32::from_be_bytes(take(&mut i, 4)?.try_into().ok()?);
        let ql = *take(&mut i, 1)?.first()? as usize;
        let q = take(&mut i, ql)?;
        let vl = *take(&mut i, 1)?.first()? as usize;
        let v = take(&mut i, vl)?;
        points.push((tsuid, base, RawPoint::from_parts(q, v)?));
    }
    let n = points.len();
    for (t, b, p) in points {
        f(t, b, p);
    }
    Some((HEADER + len, n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::DataValue;

    fn point(ts: u64, v: i64) -> RawPoint {
        RawPoint::encode(ts, crate::schema::rowkey::base_time(ts), DataValue::Int(v)).unwrap()
    }

    #[test]
    fn replays_committed_records_and_skips_a_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Wal::open(dir.path(), true).unwrap();
        w.begin();
        w.push(&[0, 0, 1, 0, 0, 1, 0, 0, 1], 1356998400, &point(1356998400, 42));
        w.push(&[0, 0, 1, 0, 0, 1, 0, 0, 2], 1356998400, &point(1356998410, -7));
        w.end();
        w.commit().unwrap();
        w.begin();
        w.push(&[0, 0, 2, 0, 0, 1, 0, 0, 1], 1356998400, &point(1356998400500, 1));
        w.end();
        w.commit().unwrap();
        // A torn third record: header promising more bytes than were written.
        (&*w.file).write_all(&[50, 0, 0, 0, 1, 2, 3, 4, 9]).unwrap();
        drop(w);

        let mut got = Vec::new();
        let stats = replay(dir.path(), |t, b, p| got.push((t.to_vec(), b, p))).unwrap();
        assert_eq!(stats.records, 2);
        assert_eq!(stats.damaged, 1);
        assert_eq!(got.len(), 3);
        assert_eq!(got[1].2.value().unwrap(), DataValue::Int(-7));
        assert_eq!(got[2].2.qualifier(), point(1356998400500, 1).qualifier());

        // A reopened log continues after the old segments; removal drops them.
        let mut w = Wal::open(dir.path(), false).unwrap();
        assert_eq!(w.seq(), 2);
        let sealed = w.rotate().unwrap();
        assert_eq!(sealed, 2);
        remove_upto(dir.path(), sealed).unwrap();
        assert_eq!(segments(dir.path()).unwrap(), vec![3]);
    }

    #[test]
    fn the_syncer_answers_each_request_by_its_file_and_flags_a_failed_fsync() {
        let dir = tempfile::tempdir().unwrap();
        let good = Arc::new(File::create(dir.path().join("a")).unwrap());
        // fdatasync of a pipe fails (EINVAL): a stand-in for a disk error.
        let (_r, w) = std::io::pipe().unwrap();
        let bad = Arc::new(File::from(std::os::fd::OwnedFd::from(w)));
        let (tx, rx) = std::sync::mpsc::channel();
        for (file, id) in [(&bad, 1), (&good, 2), (&bad, 3), (&good, 4)] {
            tx.send(SyncRequest { file: file.clone(), waiters: vec![id] }).unwrap();
        }
        drop(tx);
        let poisoned = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let answers = std::sync::Mutex::new(Vec::new());
        Syncer { poisoned: poisoned.clone() }.run(rx, |id, res| answers.lock().unwrap().push((id, res.is_ok())));
        assert_eq!(answers.into_inner().unwrap(), vec![(1, false), (2, true), (3, false), (4, true)]);
        assert!(poisoned.load(std::sync::atomic::Ordering::Acquire));
    }

    #[test]
    fn long_tsuids_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Wal::open(dir.path(), false).unwrap();
        let tsuid: Vec<u8> = (0..3 + 6 * 60).map(|i| i as u8).collect();
        w.begin();
        w.push(&tsuid, 1356998400, &point(1356998400, 1));
        w.end();
        w.commit().unwrap();
        let mut got = Vec::new();
        replay(dir.path(), |t, _, _| got.push(t.to_vec())).unwrap();
        assert_eq!(got, vec![tsuid]);
    }

    #[test]
    fn a_flipped_bit_fails_the_checksum() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Wal::open(dir.path(), false).unwrap();
        w.begin();
        w.push(&[0, 0, 1, 0, 0, 1, 0, 0, 1], 1356998400, &point(1356998400, 42));
        w.end();
        w.commit().unwrap();
        drop(w);
        let path = segment_path(dir.path(), 1);
        let mut data = fs::read(&path).unwrap();
        let last = data.len() - 1;
        data[last] ^= 1;
        fs::write(&path, data).unwrap();
        let stats = replay(dir.path(), |_, _, _| panic!("no point may come out of a damaged record")).unwrap();
        assert_eq!((stats.records, stats.damaged), (0, 1));
    }
}
