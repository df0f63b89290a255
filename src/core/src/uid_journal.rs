//! The UID journal: new name ↔ id assignments of the embedded store, made durable in a small
//! log of their own before any WAL record names them.
//!
//! Without it each batch bringing a new name had to sync the whole engine, whose one journal
//! also holds every flushed point and compaction rewrite not yet synced: under churn that sync
//! wrote megabytes and waited behind the flusher, and remote writes with new series took up
//! to a second. Here a sync is an append and an `fdatasync` of a few hundred bytes, shared by
//! every batch waiting (group commit).
//!
//! Replay at start puts back what a crash took from the store, only where the id has no name
//! at all (a rename or a later assignment is never undone). Once the log outgrows
//! [`CHECKPOINT_BYTES`] the store is synced and the log emptied.

use parking_lot::Mutex;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use tsgate_schema::uid_table::UidKind;

/// Log size after which a sync also syncs the store and empties the log.
pub const CHECKPOINT_BYTES: u64 = 1 << 20;

/// One assignment as logged: `[kind][id length][name length, u32 LE][id][name]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    pub kind: UidKind,
    pub uid: Vec<u8>,
    pub name: String,
}

const HEAD: usize = 6;

fn kind_code(k: UidKind) -> u8 {
    match k {
        UidKind::Metric => 0,
        UidKind::Tagk => 1,
        UidKind::Tagv => 2,
    }
}

fn kind_of(code: u8) -> Option<UidKind> {
    Some(match code {
        0 => UidKind::Metric,
        1 => UidKind::Tagk,
        2 => UidKind::Tagv,
        _ => return None,
    })
}

fn encode(out: &mut Vec<u8>, kind: UidKind, uid: &[u8], name: &str) {
    out.push(kind_code(kind));
    out.push(uid.len() as u8);
    out.extend_from_slice(&(name.len() as u32).to_le_bytes());
    out.extend_from_slice(uid);
    out.extend_from_slice(name.as_bytes());
}

/// The assignments in `bytes`, up to the first incomplete or damaged record (a write the
/// crash cut short: nothing after it was acknowledged).
pub fn decode(mut bytes: &[u8]) -> Vec<Assignment> {
    let mut out = Vec::new();
    while bytes.len() >= HEAD {
        let Some(kind) = kind_of(bytes[0]) else { break };
        let ulen = bytes[1] as usize;
        let nlen = u32::from_le_bytes([bytes[2], bytes[3], bytes[4], bytes[5]]) as usize;
        let Some(end) = HEAD.checked_add(ulen).and_then(|e| e.checked_add(nlen)) else {
            break;
        };
        if ulen == 0 || bytes.len() < end {
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
        bytes = &bytes[end..];
    }
    out
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
        let err = |source| JournalError {
            path: path.display().to_string(),
            source,
        };
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(err)?;
        file.set_len(0).map_err(err)?;
        file.sync_all().map_err(err)?;
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

    /// Makes every assignment recorded so far durable. When the log has grown past
    /// [`CHECKPOINT_BYTES`], `sync_store` makes the store durable and the log is emptied (a
    /// failure there only leaves the log longer).
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
        let written = log.file.write_all(&buf).and_then(|_| log.file.sync_data());
        if let Err(source) = written {
            // Back in front of what came meanwhile: the next sync tries them again, appending
            // where the last good record ends (a short write is cut off first).
            let _ = log.file.set_len(log.len);
            let mut p = self.pending.lock();
            let later = std::mem::take(&mut p.0);
            p.0 = buf;
            p.0.extend_from_slice(&later);
            return Err(JournalError {
                path: self.path.display().to_string(),
                source,
            });
        }
        log.len += buf.len() as u64;
        self.synced.fetch_max(upto, Ordering::AcqRel);
        crate::observe::write::uid_sync(start);
        if log.len > CHECKPOINT_BYTES {
            // Every record in the file was written to the store before this sync began.
            match sync_store().map(|_| log.file.set_len(0)) {
                Ok(Ok(())) => log.len = 0,
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, path = %self.path.display(), "UID journal not emptied")
                }
                Err(e) => {
                    tracing::warn!(error = %e, "store sync for the UID journal failed; the journal keeps its records")
                }
            }
        }
        Ok(())
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
    fn a_sync_makes_records_durable_and_a_checkpoint_empties_the_log() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("uid.journal");
        let j = UidJournal::open_empty(&path).unwrap();
        assert!(!j.unsynced());
        j.record(UidKind::Tagk, &[0, 0, 2], "host");
        assert!(j.unsynced());
        assert!(
            UidJournal::read(&path).unwrap().is_empty(),
            "not written before a sync"
        );
        let mut store_syncs = 0;
        j.sync(|| {
            store_syncs += 1;
            Ok(())
        })
        .unwrap();
        assert!(!j.unsynced());
        assert_eq!(store_syncs, 0);
        assert_eq!(UidJournal::read(&path).unwrap().len(), 1);
        // Past the checkpoint size, the store is synced and the log emptied.
        let long = "x".repeat(1000);
        for i in 0..(CHECKPOINT_BYTES / 1000 + 2) {
            j.record(UidKind::Tagv, &(i as u32).to_be_bytes(), &long);
        }
        j.sync(|| {
            store_syncs += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(store_syncs, 1);
        assert!(UidJournal::read(&path).unwrap().is_empty());
        // A store that cannot sync leaves the records in the log.
        for i in 0..(CHECKPOINT_BYTES / 1000 + 2) {
            j.record(UidKind::Tagv, &(i as u32).to_be_bytes(), &long);
        }
        j.sync(|| Err(tsgate_store::StoreError::NoSuchTable("tsdb-uid".into())))
            .unwrap();
        assert_eq!(
            UidJournal::read(&path).unwrap().len() as u64,
            CHECKPOINT_BYTES / 1000 + 2
        );
        // And the next open starts from an empty log.
        drop(j);
        let again = UidJournal::open_empty(&path).unwrap();
        assert!(!again.unsynced());
        assert!(UidJournal::read(&path).unwrap().is_empty());
    }
}
