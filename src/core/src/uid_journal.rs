//! The UID journal: new name ↔ id assignments of the embedded store, made durable in a small
//! log of their own before any WAL record names them.
//!
//! Without it each batch bringing a new name had to sync the whole engine, whose one journal
//! also holds every flushed point and compaction rewrite not yet synced: under churn that sync
//! wrote megabytes and waited behind the flusher, and remote writes with new series took up
//! to a second. Here a sync is an append and an `fdatasync` of a few hundred bytes, shared by
//! every batch waiting (group commit).
//!
//! The file is [`CAPACITY`] bytes of zeros written when it is made, and records overwrite them
//! in place: an fdatasync of blocks a file already has needs no filesystem journal commit (an
//! appending log's did, and each one then waited for other files' data, as the WAL's reused
//! segments avoid). Each record carries a CRC-32C; replay stops at the first record that is
//! zeros, torn or damaged.
//!
//! Replay at start puts back what a crash took from the store, only where the id has no name
//! at all (a rename or a later assignment is never undone). When the next records would not
//! fit, the store is synced (making every record durable there) and a fresh file replaces
//! the full one.

use parking_lot::Mutex;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use tsgate_schema::uid_table::UidKind;

/// Size of the (preallocated) log: records that would not fit sync the store instead and
/// start a fresh log.
pub const CAPACITY: u64 = 1 << 20;

/// One assignment as logged: `[kind][id length][name length, u32 LE][id][name][CRC-32C of all
/// before it, u32 LE]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    pub kind: UidKind,
    pub uid: Vec<u8>,
    pub name: String,
}

const HEAD: usize = 6;
const CRC: usize = 4;

fn kind_code(k: UidKind) -> u8 {
    k as u8
}

fn kind_of(code: u8) -> Option<UidKind> {
    UidKind::ALL.get(code as usize).copied()
}

fn encode(out: &mut Vec<u8>, kind: UidKind, uid: &[u8], name: &str) {
    let start = out.len();
    out.push(kind_code(kind));
    out.push(uid.len() as u8);
    out.extend_from_slice(&(name.len() as u32).to_le_bytes());
    out.extend_from_slice(uid);
    out.extend_from_slice(name.as_bytes());
    let crc = crc32c::crc32c(&out[start..]);
    out.extend_from_slice(&crc.to_le_bytes());
}

/// The assignments in `bytes`, up to the first record that is zeros (the unused rest of the
/// file), incomplete or damaged (a write the crash cut short: nothing after it was
/// acknowledged).
pub fn decode(mut bytes: &[u8]) -> Vec<Assignment> {
    let mut out = Vec::new();
    while bytes.len() >= HEAD {
        let Some(kind) = kind_of(bytes[0]) else { break };
        let ulen = bytes[1] as usize;
        let nlen = u32::from_le_bytes([bytes[2], bytes[3], bytes[4], bytes[5]]) as usize;
        let Some(end) = HEAD.checked_add(ulen).and_then(|e| e.checked_add(nlen)) else {
            break;
        };
        if ulen == 0 || bytes.len() < end + CRC {
            break;
        }
        let crc = u32::from_le_bytes(bytes[end..end + CRC].try_into().unwrap());
        if crc != crc32c::crc32c(&bytes[..end]) {
            break;
        }
        let Ok(name) = std::str::from_utf8(&bytes[HEAD + ulen..end]) else {
            break;
        };
        out.push(Assignment {
            kind,
            uid: bytes[HEAD..HEAD + ulen].to_vec(),
            name: name.to_string(),
        });
        bytes = &bytes[end + CRC..];
    }
    out
}

/// Makes an empty log at `path`: [`CAPACITY`] zero bytes, written (not just reserved, so
/// that later writes only overwrite) and synced, then renamed over whatever was there.
fn fresh(path: &Path) -> std::io::Result<File> {
    let tmp = path.with_extension("new");
    let mut f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&tmp)?;
    let zeros = vec![0u8; 64 << 10];
    let mut left = CAPACITY;
    while left > 0 {
        let n = left.min(zeros.len() as u64) as usize;
        f.write_all(&zeros[..n])?;
        left -= n as u64;
    }
    f.sync_all()?;
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        File::open(dir)?.sync_all()?;
    }
    Ok(f)
}

#[derive(Debug, thiserror::Error)]
#[error("UID journal {path}: {source}")]
pub struct JournalError {
    pub path: String,
    #[source]
    pub source: std::io::Error,
}

struct Log {
    file: File,
    /// Where the next record goes.
    len: u64,
}

pub struct UidJournal {
    path: PathBuf,
    /// Records not yet written to the file, and how many were ever recorded.
    pending: Mutex<(Vec<u8>, u64)>,
    synced: AtomicU64,
    /// Held while writing and syncing: one sync covers everyone queued behind it.
    log: Mutex<Log>,
}

impl UidJournal {
    /// Reads what the log at `path` holds (for replay) and opens it, empty, for appending.
    /// The caller must have put the returned assignments into the store and synced it first:
    /// call [`UidJournal::read`], replay, sync the store, then this.
    pub fn open_empty(path: &Path) -> Result<UidJournal, JournalError> {
        let file = fresh(path).map_err(|source| JournalError {
            path: path.display().to_string(),
            source,
        })?;
        Ok(UidJournal {
            path: path.to_path_buf(),
            pending: Mutex::new((Vec::new(), 0)),
            synced: AtomicU64::new(0),
            log: Mutex::new(Log { file, len: 0 }),
        })
    }

    /// The assignments a log left by an earlier run holds (none when there is no log).
    pub fn read(path: &Path) -> Result<Vec<Assignment>, JournalError> {
        let mut bytes = Vec::new();
        match File::open(path) {
            Ok(mut f) => f.read_to_end(&mut bytes).map_err(|source| JournalError {
                path: path.display().to_string(),
                source,
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(JournalError {
                    path: path.display().to_string(),
                    source,
                })
            }
        };
        Ok(decode(&bytes))
    }

    /// Notes an assignment already written to the store (not yet durable).
    pub fn record(&self, kind: UidKind, uid: &[u8], name: &str) {
        let mut p = self.pending.lock();
        encode(&mut p.0, kind, uid, name);
        p.1 += 1;
    }

    /// Whether an assignment was recorded and is not yet durable.
    pub fn unsynced(&self) -> bool {
        self.synced.load(Ordering::Acquire) < self.pending.lock().1
    }

    /// Makes every assignment recorded so far durable: in the log, or, when they would not fit
    /// there, by `sync_store` making the store durable (then a fresh log takes the next ones).
    pub fn sync(
        &self,
        sync_store: impl FnOnce() -> Result<(), tsgate_store::StoreError>,
    ) -> Result<(), JournalError> {
        let want = self.pending.lock().1;
        if self.synced.load(Ordering::Acquire) >= want {
            return Ok(());
        }
        let mut log = self.log.lock();
        if self.synced.load(Ordering::Acquire) >= want {
            return Ok(());
        }
        let start = std::time::Instant::now();
        let (buf, upto) = {
            let mut p = self.pending.lock();
            (std::mem::take(&mut p.0), p.1)
        };
        let at = log.len;
        let result = if at + buf.len() as u64 <= CAPACITY {
            // In place over zeros: no size change, so no filesystem journal commit.
            log.file
                .write_all_at(&buf, at)
                .and_then(|_| log.file.sync_data())
                .map(|_| at + buf.len() as u64)
        } else {
            // Full: every record so far (these included) was written to the store before this
            // sync began, so a store sync makes them all durable and the log can start afresh.
            match sync_store() {
                Ok(()) => fresh(&self.path).map(|f| {
                    log.file = f;
                    0
                }),
                Err(e) => Err(std::io::Error::other(format!(
                    "the log is full and the store could not be synced: {e}"
                ))),
            }
        };
        match result {
            Ok(len) => {
                log.len = len;
                self.synced.fetch_max(upto, Ordering::AcqRel);
                crate::observe::write::uid_sync(start);
                Ok(())
            }
            Err(source) => {
                // Back in front of what came meanwhile: the next sync writes them again at
                // the same place (a torn write there fails its checksum until then).
                let mut p = self.pending.lock();
                let later = std::mem::take(&mut p.0);
                p.0 = buf;
                p.0.extend_from_slice(&later);
                Err(JournalError {
                    path: self.path.display().to_string(),
                    source,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_a_torn_tail_is_dropped() {
        let mut b = Vec::new();
        encode(&mut b, UidKind::Metric, &[0, 0, 1], "sys.cpu");
        encode(&mut b, UidKind::Tagv, &[0, 0, 0, 9], "wéb01");
        let whole = decode(&b);
        assert_eq!(
            whole,
            vec![
                Assignment {
                    kind: UidKind::Metric,
                    uid: vec![0, 0, 1],
                    name: "sys.cpu".into()
                },
                Assignment {
                    kind: UidKind::Tagv,
                    uid: vec![0, 0, 0, 9],
                    name: "wéb01".into()
                },
            ]
        );
        for cut in 0..b.len() {
            let got = decode(&b[..cut]);
            assert!(got.len() < 2, "cut at {cut}");
            assert_eq!(got[..], whole[..got.len()]);
        }
        // Garbage (a kind that does not exist) ends the log there.
        let mut g = b.clone();
        g.insert(0, 7);
        assert!(decode(&g).is_empty());
    }

    #[test]
    fn a_sync_makes_records_durable_and_a_full_log_syncs_the_store_instead() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("uid.journal");
        let j = UidJournal::open_empty(&path).unwrap();
        // Written in full when made: later records only overwrite.
        assert_eq!(std::fs::metadata(&path).unwrap().len(), CAPACITY);
        assert!(!j.unsynced());
        j.record(UidKind::Tagk, &[0, 0, 2], "host");
        assert!(j.unsynced());
        assert!(
            UidJournal::read(&path).unwrap().is_empty(),
            "not written before a sync"
        );
        let mut store_syncs = 0;
        let mut sync = |j: &UidJournal| {
            j.sync(|| {
                store_syncs += 1;
                Ok(())
            })
            .unwrap()
        };
        sync(&j);
        assert!(!j.unsynced());
        j.record(UidKind::Metric, &[0, 0, 7], "cpu");
        sync(&j);
        assert_eq!(
            UidJournal::read(&path)
                .unwrap()
                .iter()
                .map(|a| a.name.as_str())
                .collect::<Vec<_>>(),
            ["host", "cpu"]
        );
        assert_eq!(std::fs::metadata(&path).unwrap().len(), CAPACITY);
        // Records that would not fit: the store is synced and a fresh log starts.
        let long = "x".repeat(1000);
        let many = CAPACITY / 1000;
        for i in 0..many {
            j.record(UidKind::Tagv, &(i as u32).to_be_bytes(), &long);
        }
        sync(&j);
        assert!(!j.unsynced());
        assert!(UidJournal::read(&path).unwrap().is_empty());
        j.record(UidKind::Tagv, &[0, 0, 9], "after");
        sync(&j);
        assert_eq!(UidJournal::read(&path).unwrap().len(), 1);
        assert_eq!(store_syncs, 1);
        // A full log whose store cannot sync: an error, and the records stay pending.
        for i in 0..many {
            j.record(UidKind::Tagv, &(i as u32).to_be_bytes(), &long);
        }
        let failed = j.sync(|| Err(tsgate_store::StoreError::NoSuchTable("tsdb-uid".into())));
        assert!(failed.is_err());
        assert!(j.unsynced());
        assert_eq!(UidJournal::read(&path).unwrap().len(), 1);
        // And the next open starts from an empty log.
        drop(j);
        let again = UidJournal::open_empty(&path).unwrap();
        assert!(!again.unsynced());
        assert!(UidJournal::read(&path).unwrap().is_empty());
    }

    /// A record whose bytes were damaged ends the log there.
    #[test]
    fn a_damaged_record_ends_the_log() {
        let mut b = Vec::new();
        encode(&mut b, UidKind::Metric, &[0, 0, 1], "a");
        let first = b.len();
        encode(&mut b, UidKind::Metric, &[0, 0, 2], "b");
        encode(&mut b, UidKind::Metric, &[0, 0, 3], "c");
        b[first + HEAD + 3] ^= 0x20; // "b" -> "B"
        let got = decode(&b);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].name, "a");
    }
}
