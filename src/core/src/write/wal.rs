//! The write-ahead log: numbered segment files of CRC-checked records. A write is acknowledged
//! only after its record is on disk (group commit: one fsync covers every write queued meanwhile).
//! Segments are retired once the store holds, durably, every point they contain.
//!
//! A shard writes groups with `write` and hands the fsync to its [`Syncer`] thread, so that it
//! encodes and buffers the next groups while the disk works; the syncer's next fsync covers
//! everything written meanwhile.
//!
//! Retired segments are kept (a few per shard, as `*.free`) and written over by later segments:
//! an fdatasync of blocks the file already has needs no journal commit, where one of a growing
//! file does (a third less fsync time in the remote-write benchmark). Records carry their
//! segment's number, so that a reused file's older records end a replay instead of joining it.
//! A clean stop deletes the free files.
//!
//! Segment: `[b"TSGWAL02"][u64 LE segment number]` then records
//! `[u32 LE payload length][u32 LE low 32 bits of the segment number]
//! [u32 LE crc32c(those 4 number bytes, payload)][payload]`; payload entries:
//! `[u16 LE tsuid len][tsuid][u32 BE row base][u8 qualifier len][qualifier][u8 value len][value]`.
//! Segments written before this format (no magic; `[len][crc32c(payload)][payload]`) still replay.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use tsgate_schema::RawPoint;

const MAGIC: &[u8; 8] = b"TSGWAL02";
const FILE_HEADER: usize = 16;
const HEADER: usize = 12;
const LEGACY_HEADER: usize = 8;
/// Refuse absurd record lengths when replaying a damaged file.
const MAX_RECORD: usize = 256 << 20;
/// Retired segments kept for reuse per shard; the rest are deleted.
const FREE_MAX: usize = 3;

pub struct Wal {
    dir: PathBuf,
    file: Arc<File>,
    seq: u64,
    /// Where the next group goes in `file`.
    offset: u64,
    fsync: bool,
    buf: Vec<u8>,
    record_start: usize,
    /// The segment's header is in `buf`, to go with its first group: a segment is only ever
    /// named by its header together with records (a reused file keeps its older header until
    /// then, and replays as empty).
    header_pending: bool,
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
        if let Some(n) = name
            .strip_suffix(".wal")
            .and_then(|s| s.parse::<u64>().ok())
        {
            out.push(n);
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// Files kept for reuse in `dir`, largest first.
fn free_files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir)? {
        let e = e?;
        if e.file_name().to_string_lossy().ends_with(".free") {
            out.push((e.metadata().map(|m| m.len()).unwrap_or(0), e.path()));
        }
    }
    out.sort_unstable_by(|a, b| b.cmp(a));
    Ok(out.into_iter().map(|(_, p)| p).collect())
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Deletes the free files: a clean stop leaves only what replay needs.
pub fn remove_free(dir: &Path) -> io::Result<()> {
    for f in free_files(dir)? {
        fs::remove_file(f)?;
    }
    Ok(())
}

impl Wal {
    /// Opens a fresh segment after any existing ones.
    pub fn open(dir: &Path, fsync: bool) -> io::Result<Wal> {
        fs::create_dir_all(dir)?;
        // After free files' numbers too: a reused file's older records carry its number, and
        // must never match the segment it becomes.
        let free_seqs = free_files(dir)?
            .into_iter()
            .filter_map(|p| p.file_stem()?.to_str()?.parse::<u64>().ok());
        let seq = segments(dir)?
            .into_iter()
            .chain(free_seqs)
            .max()
            .map_or(1, |s| s + 1);
        let file = take_segment_file(dir, seq)?;
        let mut wal = Wal {
            dir: dir.to_path_buf(),
            file,
            seq,
            offset: 0,
            fsync,
            buf: Vec::with_capacity(1 << 20),
            record_start: 0,
            header_pending: false,
        };
        wal.start_header();
        sync_dir(dir)?;
        Ok(wal)
    }

    fn start_header(&mut self) {
        self.buf.clear();
        self.buf.extend_from_slice(MAGIC);
        self.buf.extend_from_slice(&self.seq.to_le_bytes());
        self.header_pending = true;
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
        let r = self.record_start;
        let salt = (self.seq as u32).to_le_bytes();
        let payload = &self.buf[r + HEADER..];
        let len = payload.len() as u32;
        let crc = record_crc(salt, payload);
        self.buf[r..r + 4].copy_from_slice(&len.to_le_bytes());
        self.buf[r + 4..r + 8].copy_from_slice(&salt);
        self.buf[r + 8..r + 12].copy_from_slice(&crc.to_le_bytes());
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
        if n == 0 || (self.header_pending && n == FILE_HEADER) {
            return Ok((0, self.file.clone()));
        }
        let res = self.file.write_all_at(&self.buf, self.offset);
        self.buf.clear();
        if res.is_err() && self.header_pending {
            // The shard moves to a new segment after a failed write; kept for whatever comes next.
            self.start_header();
        }
        if res.is_ok() {
            self.header_pending = false;
            self.offset += n as u64;
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
        debug_assert!(
            self.buf.is_empty() || (self.header_pending && self.buf.len() == FILE_HEADER),
            "a group pending at rotation"
        );
        self.commit()?;
        let sealed = self.seq;
        let file = take_segment_file(&self.dir, sealed + 1)?;
        // Writes go to the new segment from here on, whatever the directory's fsync says: a
        // failed one must not leave `seq` behind, or every later rotation would try to create
        // this segment again and fail.
        self.seq = sealed + 1;
        self.file = file;
        self.offset = 0;
        self.start_header();
        sync_dir(&self.dir)?;
        Ok(sealed)
    }
}

impl Drop for Wal {
    /// A segment no group went to may be a reused file full of older records: emptied, so that
    /// a stopped node's log takes no more disk than what it holds.
    fn drop(&mut self) {
        if self.header_pending {
            let _ = self.file.set_len(0);
        }
    }
}

/// Makes segment `seq`'s file from a free one when there is one (else a new file). Its name is
/// durable after the caller's `sync_dir`.
fn take_segment_file(dir: &Path, seq: u64) -> io::Result<Arc<File>> {
    let path = segment_path(dir, seq);
    let mut file = None;
    for candidate in free_files(dir)? {
        // Until its header is written, the file names an older segment: replay finds it empty.
        // (Free files are all of this format: `recover` deletes those of a crashed run, and
        // older tsgates kept none.)
        if fs::rename(&candidate, &path).is_ok() {
            file = OpenOptions::new().write(true).open(&path).ok();
            if file.is_some() {
                break;
            }
            // Not to stand in the way of a new file: nothing was written to it.
            let _ = fs::remove_file(&path);
        }
    }
    let file = match file {
        Some(f) => f,
        None => OpenOptions::new()
            .create_new(true)
            .write(true)
            .open(&path)?,
    };
    Ok(Arc::new(file))
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
    pub fn run<T>(
        self,
        rx: std::sync::mpsc::Receiver<SyncRequest<T>>,
        answer: impl Fn(T, io::Result<()>),
    ) {
        // Files whose fsync failed (kept alive so their addresses stay theirs).
        let mut failed: Vec<(Arc<File>, io::ErrorKind, String)> = Vec::new();
        while let Ok(first) = rx.recv() {
            let mut reqs = vec![first];
            reqs.extend(rx.try_iter());
            let mut synced: Vec<Arc<File>> = Vec::with_capacity(1);
            for r in &reqs {
                // One fsync per file covers every request naming it.
                if synced
                    .iter()
                    .chain(failed.iter().map(|(f, ..)| f))
                    .any(|f| Arc::ptr_eq(f, &r.file))
                {
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
                        self.poisoned
                            .store(true, std::sync::atomic::Ordering::Release);
                    }
                }
            }
            for r in reqs {
                let err = failed
                    .iter()
                    .find(|(f, ..)| Arc::ptr_eq(f, &r.file))
                    .map(|(_, k, m)| (*k, m.clone()));
                for w in r.waiters {
                    answer(
                        w,
                        match &err {
                            None => Ok(()),
                            Some((k, m)) => Err(io::Error::new(*k, m.clone())),
                        },
                    );
                }
            }
            // A failed file is only ever named again by requests already queued behind it.
            failed.retain(|(f, ..)| Arc::strong_count(f) > 1);
        }
    }
}

/// Retires every segment numbered `<= upto` (their points are durable in the store): kept
/// for reuse while fewer than `FREE_MAX` are, deleted otherwise.
pub fn retire_upto(dir: &Path, upto: u64) -> io::Result<()> {
    let mut free = free_files(dir)?.len();
    for s in segments(dir)? {
        if s <= upto {
            let path = segment_path(dir, s);
            if free < FREE_MAX && fs::rename(&path, path.with_extension("free")).is_ok() {
                free += 1;
            } else {
                fs::remove_file(path)?;
            }
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
        let (mut at, salt) = if data.starts_with(MAGIC) {
            if data
                .get(8..FILE_HEADER)
                .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
                != Some(seq)
            {
                // A reused file whose new header never reached the disk: nothing was written.
                continue;
            }
            (FILE_HEADER, Some((seq as u32).to_le_bytes()))
        } else {
            (0, None)
        };
        while at < data.len() {
            match read_record(&data[at..], salt, &mut f) {
                Record::Read { len, points } => {
                    at += len;
                    stats.records += 1;
                    stats.points += points;
                }
                Record::End => break,
                Record::Bad => {
                    tracing::warn!(
                        segment = seq,
                        offset = at,
                        "WAL segment ends in a torn or damaged record; rest skipped"
                    );
                    stats.damaged += 1;
                    break;
                }
            }
        }
    }
    Ok(stats)
}

/// A record's checksum: over its segment number's 4 bytes, then its payload.
fn record_crc(salt: [u8; 4], payload: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&salt), payload)
}

enum Record {
    Read {
        len: usize,
        points: usize,
    },
    /// Past the last record: the end of what was written, or a reused file's older records.
    End,
    /// Incomplete, or fails its checksum.
    Bad,
}

/// Decodes one record: of the current format when `salt` (the segment's number) is given,
/// else of the format before it.
fn read_record(
    data: &[u8],
    salt: Option<[u8; 4]>,
    f: &mut impl FnMut(&[u8], u32, RawPoint),
) -> Record {
    let header = if salt.is_some() {
        HEADER
    } else {
        LEGACY_HEADER
    };
    if data.len() < header {
        return if data.iter().all(|&b| b == 0) {
            Record::End
        } else {
            Record::Bad
        };
    }
    let len = u32::from_le_bytes(data[..4].try_into().unwrap()) as usize;
    if len == 0 {
        // No record is empty.
        return Record::End;
    }
    let crc = u32::from_le_bytes(data[header - 4..header].try_into().unwrap());
    if let Some(salt) = salt {
        if data[4..8] != salt {
            return Record::End;
        }
    }
    if len > MAX_RECORD || data.len() < header + len {
        return Record::Bad;
    }
    let payload = &data[header..header + len];
    let sum = match salt {
        Some(salt) => record_crc(salt, payload),
        None => crc32c::crc32c(payload),
    };
    if sum != crc {
        return Record::Bad;
    }
    match decode_points(payload) {
        Some(points) => {
            let n = points.len();
            for (t, b, p) in points {
                f(t, b, p);
            }
            Record::Read {
                len: header + len,
                points: n,
            }
        }
        None => Record::Bad,
    }
}

/// A record's points, all of them or none (validated before any is handed out).
fn decode_points(payload: &[u8]) -> Option<Vec<(&[u8], u32, RawPoint)>> {
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
    Some(points)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tsgate_schema::DataValue;

    fn point(ts: u64, v: i64) -> RawPoint {
        RawPoint::encode(ts, tsgate_schema::rowkey::base_time(ts), DataValue::Int(v)).unwrap()
    }

    #[test]
    fn replays_committed_records_and_skips_a_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Wal::open(dir.path(), true).unwrap();
        w.begin();
        w.push(
            &[0, 0, 1, 0, 0, 1, 0, 0, 1],
            1356998400,
            &point(1356998400, 42),
        );
        w.push(
            &[0, 0, 1, 0, 0, 1, 0, 0, 2],
            1356998400,
            &point(1356998410, -7),
        );
        w.end();
        w.commit().unwrap();
        w.begin();
        w.push(
            &[0, 0, 2, 0, 0, 1, 0, 0, 1],
            1356998400,
            &point(1356998400500, 1),
        );
        w.end();
        w.commit().unwrap();
        // A torn third record: header promising more bytes than were written.
        let mut torn = vec![50, 0, 0, 0];
        torn.extend_from_slice(&(w.seq as u32).to_le_bytes());
        torn.extend_from_slice(&[1, 2, 3, 4, 9]);
        w.file.write_all_at(&torn, w.offset).unwrap();
        drop(w);

        let mut got = Vec::new();
        let stats = replay(dir.path(), |t, b, p| got.push((t.to_vec(), b, p))).unwrap();
        assert_eq!(stats.records, 2);
        assert_eq!(stats.damaged, 1);
        assert_eq!(got.len(), 3);
        assert_eq!(got[1].2.value().unwrap(), DataValue::Int(-7));
        assert_eq!(got[2].2.qualifier(), point(1356998400500, 1).qualifier());

        // A reopened log continues after the old segments; removal retires them.
        let mut w = Wal::open(dir.path(), false).unwrap();
        assert_eq!(w.seq(), 2);
        let sealed = w.rotate().unwrap();
        assert_eq!(sealed, 2);
        retire_upto(dir.path(), sealed).unwrap();
        assert_eq!(segments(dir.path()).unwrap(), vec![3]);
    }

    fn write_group(w: &mut Wal, points: &[(u8, u64, i64)]) {
        w.begin();
        for &(series, ts, v) in points {
            w.push(
                &[0, 0, 1, 0, 0, 1, 0, 0, series],
                tsgate_schema::rowkey::base_time(ts),
                &point(ts, v),
            );
        }
        w.end();
        w.commit().unwrap();
    }

    fn replayed(dir: &Path) -> (Vec<(u8, i64)>, ReplayStats) {
        let mut got = Vec::new();
        let stats = replay(dir, |t, _, p| {
            let DataValue::Int(v) = p.value().unwrap() else {
                panic!("an integer")
            };
            got.push((t[8], v))
        })
        .unwrap();
        (got, stats)
    }

    /// Retired segments are written over by later ones; their older records (longer than the
    /// new ones) end the replay of the new segment, cleanly.
    #[test]
    fn a_reused_file_replays_only_its_new_records() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Wal::open(dir.path(), true).unwrap();
        for i in 0..50 {
            write_group(
                &mut w,
                &[
                    (1, 1356998400 + i, i as i64),
                    (2, 1356998400 + i, -(i as i64)),
                ],
            );
        }
        let sealed = w.rotate().unwrap();
        retire_upto(dir.path(), sealed).unwrap();
        assert_eq!(
            free_files(dir.path()).unwrap().len(),
            1,
            "segment 1 is kept for reuse"
        );
        // Segment 2 is empty: the next rotation makes segment 3 out of segment 1's file.
        w.rotate().unwrap();
        assert_eq!(free_files(dir.path()).unwrap().len(), 0);
        write_group(&mut w, &[(3, 1356998400, 7)]);
        let len = fs::metadata(segment_path(dir.path(), 3)).unwrap().len();
        assert!(
            len > 1000,
            "segment 3 is segment 1's file, written over ({len} bytes)"
        );
        drop(w);
        let (got, stats) = replayed(dir.path());
        assert_eq!(got, vec![(3, 7)]);
        assert_eq!((stats.records, stats.damaged), (1, 0));
    }

    /// A file taken for a segment holds its older header until the first group is written: a
    /// crash in between finds the segment empty, not its older records.
    #[test]
    fn a_reused_file_without_its_new_header_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Wal::open(dir.path(), true).unwrap();
        write_group(&mut w, &[(1, 1356998400, 5)]);
        let sealed = w.rotate().unwrap();
        retire_upto(dir.path(), sealed).unwrap();
        w.rotate().unwrap();
        std::mem::forget(w); // a crash: segment 3 (segment 1's file) got no group
        assert!(fs::metadata(segment_path(dir.path(), 3)).unwrap().len() > 0);
        let (got, stats) = replayed(dir.path());
        assert!(got.is_empty(), "{got:?}");
        assert_eq!(stats.damaged, 0);
        // Numbering goes on after every file's number, free ones included.
        let w = Wal::open(dir.path(), true).unwrap();
        assert_eq!(w.seq(), 4);
    }

    /// Numbers never restart below a free file's: its older records would match the segment.
    #[test]
    fn numbering_goes_on_after_the_free_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Wal::open(dir.path(), true).unwrap();
        for _ in 0..4 {
            write_group(&mut w, &[(1, 1356998400, 5)]);
            w.rotate().unwrap();
        }
        drop(w);
        retire_upto(dir.path(), 5).unwrap(); // everything retired: 3 kept, 2 deleted
        assert!(segments(dir.path()).unwrap().is_empty());
        let free = free_files(dir.path()).unwrap();
        assert_eq!(free.len(), FREE_MAX);
        let newest_free = free
            .iter()
            .filter_map(|p| p.file_stem()?.to_str()?.parse::<u64>().ok())
            .max()
            .unwrap();
        let mut w = Wal::open(dir.path(), true).unwrap();
        assert!(
            w.seq() > newest_free,
            "seq {} after free file {newest_free}",
            w.seq()
        );
        assert_eq!(
            free_files(dir.path()).unwrap().len(),
            FREE_MAX - 1,
            "the segment is a free file"
        );
        write_group(&mut w, &[(2, 1356998400, 6)]);
        drop(w);
        assert_eq!(replayed(dir.path()).0, vec![(2, 6)]);
    }

    /// Segments written before the current format (a crash, then an upgrade) still replay.
    #[test]
    fn segments_of_the_format_before_replay() {
        let dir = tempfile::tempdir().unwrap();
        let mut payload = Vec::new();
        let p = point(1356998410, 9);
        payload.extend_from_slice(&9u16.to_le_bytes());
        payload.extend_from_slice(&[0, 0, 1, 0, 0, 1, 0, 0, 4]);
        payload.extend_from_slice(&1356998400u32.to_be_bytes());
        payload.push(p.qualifier().len() as u8);
        payload.extend_from_slice(p.qualifier());
        payload.push(p.value_bytes().len() as u8);
        payload.extend_from_slice(p.value_bytes());
        let mut data = Vec::new();
        data.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        data.extend_from_slice(&crc32c::crc32c(&payload).to_le_bytes());
        data.extend_from_slice(&payload);
        fs::write(segment_path(dir.path(), 7), &data).unwrap();
        let (got, stats) = replayed(dir.path());
        assert_eq!(got, vec![(4, 9)]);
        assert_eq!((stats.records, stats.damaged), (1, 0));
        let w = Wal::open(dir.path(), true).unwrap();
        assert_eq!(w.seq(), 8);
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
            tx.send(SyncRequest {
                file: file.clone(),
                waiters: vec![id],
            })
            .unwrap();
        }
        drop(tx);
        let poisoned = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let answers = std::sync::Mutex::new(Vec::new());
        Syncer {
            poisoned: poisoned.clone(),
        }
        .run(rx, |id, res| {
            answers.lock().unwrap().push((id, res.is_ok()))
        });
        assert_eq!(
            answers.into_inner().unwrap(),
            vec![(1, false), (2, true), (3, false), (4, true)]
        );
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
        w.push(
            &[0, 0, 1, 0, 0, 1, 0, 0, 1],
            1356998400,
            &point(1356998400, 42),
        );
        w.end();
        w.commit().unwrap();
        drop(w);
        let path = segment_path(dir.path(), 1);
        let mut data = fs::read(&path).unwrap();
        let last = data.len() - 1;
        data[last] ^= 1;
        fs::write(&path, data).unwrap();
        let stats = replay(dir.path(), |_, _, _| {
            panic!("no point may come out of a damaged record")
        })
        .unwrap();
        assert_eq!((stats.records, stats.damaged), (0, 1));
    }
}
