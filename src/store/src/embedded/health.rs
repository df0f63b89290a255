//! Whether the embedded store takes writes. Two causes stop it, and both go away by themselves:
//!
//! - free space in its directory below `storage.min_free_mb` (as VictoriaMetrics' read-only
//!   mode under `-storage.minFreeDiskSpaceBytes`): writes are refused before the engine runs
//!   out of space, and taken again once there is room;
//! - a failed engine. fjall poisons a database when a journal write or sync fails, or a
//!   background flush or compaction fails (ENOSPC, most often), and then refuses every write
//!   for as long as that database is open: the store opens it again (see
//!   `EmbeddedStore::heal`) once there is room.

use crate::Refusal;
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Bytes free to an unprivileged writer on the filesystem holding `path` (`statvfs`'s
/// `f_bavail`: the root reserve of ext4 is not counted).
pub fn free_bytes(path: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid NUL-terminated path and `st` a writable statvfs.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st.f_bavail as u64 * st.f_frsize as u64)
}

/// `12.3 MiB`.
pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

/// A reading of free space is reused this long: every store write asks.
const READING_TTL: Duration = Duration::from_millis(100);
/// A failed engine is opened again at most this often.
const RETRY_EVERY: Duration = Duration::from_secs(1);
/// Below this much free space a failed engine is not reopened (opening replays its journal
/// into memory, and its first flush writes it out), whatever `storage.min_free_mb` says.
pub const REOPEN_MIN_FREE: u64 = 4 << 20;

pub(super) struct Health {
    dir: PathBuf,
    /// `storage.min_free_mb` in bytes (0: only the engine's own failures stop writes).
    min_free: AtomicU64,
    /// The last reading of free space and when it was taken.
    reading: Mutex<Option<(Instant, u64)>>,
    /// The engine poisoned itself: it takes no write until it is opened again.
    failed: AtomicBool,
    /// What is refused now, and why (None: writes are taken).
    refusal: Mutex<Option<Refusal>>,
    /// When a failed engine may next be opened again.
    next_try: Mutex<Instant>,
    /// Times the engine was opened again after failing (for the log and tests).
    pub reopened: AtomicU64,
}

impl Health {
    pub fn new(dir: &Path) -> Health {
        Health {
            dir: dir.to_path_buf(),
            min_free: AtomicU64::new(0),
            reading: Mutex::new(None),
            failed: AtomicBool::new(false),
            refusal: Mutex::new(None),
            next_try: Mutex::new(Instant::now()),
            reopened: AtomicU64::new(0),
        }
    }

    pub fn set_min_free(&self, bytes: u64) {
        self.min_free.store(bytes, Ordering::Relaxed);
        *self.reading.lock() = None;
    }

    pub fn min_free(&self) -> u64 {
        self.min_free.load(Ordering::Relaxed)
    }

    /// Free bytes now (a reading at most [`READING_TTL`] old); unknown counts as plenty.
    pub fn free(&self) -> u64 {
        let mut r = self.reading.lock();
        if let Some((at, n)) = *r {
            if at.elapsed() < READING_TTL {
                return n;
            }
        }
        let n = free_bytes(&self.dir).unwrap_or(u64::MAX);
        *r = Some((Instant::now(), n));
        n
    }

    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    pub fn refusal(&self) -> Option<Refusal> {
        self.refusal.lock().clone()
    }

    /// Records that the engine poisoned itself, `why` being the error that showed it. Called
    /// on every failing write: logged when the state changes, not each time.
    pub fn engine_failed(&self, why: &str, disk_full: bool) {
        let free = self.free();
        // A poisoned engine does not say why; a disk this close to full is reason enough.
        let disk_full = disk_full || free < self.min_free().max(REOPEN_MIN_FREE * 2);
        let need = self.min_free().max(REOPEN_MIN_FREE);
        let refusal = if disk_full {
            Refusal {
                reason: "disk_full",
                detail: format!(
                    "the disk holding {} is full ({} free; the engine said: {why}); the engine \
                     is reopened, and writes resume, once {} is free",
                    self.dir.display(),
                    mib(free),
                    mib(need)
                ),
            }
        } else {
            Refusal {
                reason: "engine_failed",
                detail: format!(
                    "the storage engine in {} failed ({why}); it is being reopened",
                    self.dir.display()
                ),
            }
        };
        self.failed.store(true, Ordering::Release);
        self.refuse(refusal);
    }

    /// Whether a write may go ahead now, judging free space (a failed engine is the caller's).
    pub fn check_space(&self) -> Result<(), Refusal> {
        let min = self.min_free();
        if min == 0 {
            return Ok(());
        }
        let free = self.free();
        if free >= min {
            return Ok(());
        }
        let r = Refusal {
            reason: "disk_full",
            detail: format!(
                "{} free in {}, below storage.min_free_mb ({}): writes resume once more is free",
                mib(free),
                self.dir.display(),
                mib(min)
            ),
        };
        self.refuse(r.clone());
        Err(r)
    }

    fn refuse(&self, r: Refusal) {
        let mut cur = self.refusal.lock();
        if cur.as_ref().is_none_or(|c| c.reason != r.reason) {
            tracing::error!(reason = r.reason, "store refuses writes: {}", r.detail);
        }
        *cur = Some(r);
    }

    /// Writes are taken again (the engine is healthy and there is room).
    pub fn taking_writes(&self) {
        let mut cur = self.refusal.lock();
        if let Some(was) = cur.take() {
            tracing::warn!(
                was = was.reason,
                free = %mib(self.free()),
                "store takes writes again"
            );
        }
    }

    /// Whether now is the time to open a failed engine again: at most once per
    /// [`RETRY_EVERY`], and only with room for it. Returns the free bytes seen.
    pub fn may_reopen(&self) -> Option<u64> {
        let mut next = self.next_try.lock();
        if Instant::now() < *next {
            return None;
        }
        *next = Instant::now() + RETRY_EVERY;
        *self.reading.lock() = None;
        let free = self.free();
        (free >= self.min_free().max(REOPEN_MIN_FREE)).then_some(free)
    }

    pub fn reopened(&self) {
        self.failed.store(false, Ordering::Release);
        self.reopened.fetch_add(1, Ordering::Relaxed);
    }
}

/// Whether an engine error says the disk is full (ENOSPC, or EDQUOT: a quota is full).
pub fn is_disk_full(e: &fjall::Error) -> bool {
    let io = match e {
        fjall::Error::Io(io) => Some(io),
        fjall::Error::Storage(fjall::LsmError::Io(io)) => Some(io),
        _ => None,
    };
    io.is_some_and(|io| {
        io.kind() == std::io::ErrorKind::StorageFull
            || io.kind() == std::io::ErrorKind::QuotaExceeded
            || matches!(io.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT))
    })
}

/// Whether an engine error on a write means the engine is poisoned (it refuses every write
/// from now on): fjall poisons on any I/O error of a journal write or sync.
pub fn poisons(e: &fjall::Error) -> bool {
    matches!(
        e,
        fjall::Error::Poisoned | fjall::Error::Io(_) | fjall::Error::Storage(_)
    )
}
