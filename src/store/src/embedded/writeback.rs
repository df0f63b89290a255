//! Writeback pacing: the engine's files being written are handed to the disk a little at a
//! time instead of in bursts.
//!
//! The engine writes a table file (tens of MiB) through the page cache and fsyncs it once at
//! the end; its journal is synced only when the flusher retires WAL segments; the kernel
//! writes the rest back once it is 30 s old. Each of those puts tens of MiB in the disk's
//! queue at once, and every fsync meanwhile (the WAL's, whose acknowledgement writers wait
//! for) waits behind them: in the 30-minute soak WAL fsyncs took up to 2.5 s in such minutes.
//! Every [`TICK`] this starts writeback (`sync_file_range(SYNC_FILE_RANGE_WRITE)`: start,
//! don't wait) of every engine file changed since the last tick, as RocksDB's `bytes_per_sync`
//! and PostgreSQL's `*_flush_after` do. It changes nothing about durability: the same bytes
//! are written, only sooner and in smaller pieces.

use std::path::{Path, PathBuf};
use std::sync::Weak;
use std::time::{Duration, SystemTime};

/// How often files changed since the last look are handed to the disk.
pub const TICK: Duration = Duration::from_millis(200);

/// Starts the pacer for the engine under `dir`; it stops once `alive` can no longer be
/// upgraded (the store was dropped).
pub fn start(dir: PathBuf, alive: Weak<()>) {
    let spawned = std::thread::Builder::new()
        .name("tsgate-writeback".into())
        .spawn(move || {
            let mut since = SystemTime::now();
            while alive.upgrade().is_some() {
                std::thread::sleep(TICK);
                let now = SystemTime::now();
                // A little overlap: a file changed just as the last look read its time.
                let from = since.checked_sub(TICK).unwrap_or(since);
                for f in changed_files(&dir, from) {
                    start_writeback(&f);
                }
                since = now;
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "writeback pacing not started");
    }
}

/// The engine's files (journals at the top, table files under `keyspaces/*/tables/`) whose
/// contents changed at or after `from`.
fn changed_files(dir: &Path, from: SystemTime) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut look = |d: &Path| {
        let Ok(entries) = std::fs::read_dir(d) else {
            return;
        };
        for e in entries.flatten() {
            let Ok(m) = e.metadata() else { continue };
            if m.is_file() && m.modified().is_ok_and(|t| t >= from) {
                out.push(e.path());
            }
        }
    };
    look(dir);
    if let Ok(keyspaces) = std::fs::read_dir(dir.join("keyspaces")) {
        for k in keyspaces.flatten() {
            look(&k.path().join("tables"));
        }
    }
    out
}

/// Asks the kernel to start writing `path`'s dirty pages out now (not waiting for them). A
/// file deleted meanwhile is skipped.
fn start_writeback(path: &Path) {
    use std::os::fd::AsRawFd;
    let Ok(f) = std::fs::File::open(path) else {
        return;
    };
    // SAFETY: a valid open descriptor; the call takes no pointers.
    unsafe {
        libc::sync_file_range(f.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_journals_and_table_files_changed_since() {
        let d = tempfile::tempdir().unwrap();
        let tables = d.path().join("keyspaces/3/tables");
        std::fs::create_dir_all(&tables).unwrap();
        let before = SystemTime::now() - Duration::from_secs(60);
        std::fs::write(d.path().join("0.jnl"), b"journal").unwrap();
        std::fs::write(tables.join("17"), b"table").unwrap();
        std::fs::write(d.path().join("keyspaces/3/v1"), b"not a table").unwrap();
        let mut got = changed_files(d.path(), before);
        got.sort();
        assert_eq!(got, vec![d.path().join("0.jnl"), tables.join("17")]);
        assert!(changed_files(d.path(), SystemTime::now() + Duration::from_secs(60)).is_empty());
        for f in &got {
            start_writeback(f); // harmless on any file
        }
        start_writeback(&d.path().join("gone"));
    }
}
