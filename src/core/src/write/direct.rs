//! Durability of the writes that go straight to the store instead of through the WAL:
//! rollup and pre-aggregate points (`/api/rollup`, telnet `rollup`) and histogram points
//! (`/api/histogram`, telnet `histogram`). Their cells are single puts the store applies at
//! once, so they need no buffer; what they lacked was the WAL's promise. The embedded store
//! hands a batch to the OS (`write(2)`) before `mutate` returns, which survives `kill -9` but
//! not an OS crash or a power cut; under `write.wal_fsync = "always"` such a write is now
//! answered only after a store sync ([`Store::flush`]: an fsync of the embedded engine's
//! journal; nothing to do on HBase and Bigtable, whose puts are durable when answered).
//!
//! The sync is a group commit, like the WAL's: one sync covers every direct write finished
//! before it started, so concurrent writers share fsyncs instead of queueing one each.
//!
//! [`Store::flush`]: tsgate_store::Store::flush

use parking_lot::{Condvar, Mutex};
use tsgate_store::{SharedStore, StoreError};

#[derive(Default)]
struct State {
    /// Tickets handed out: one per `sync` call, taken after the caller's write returned.
    requested: u64,
    /// Every ticket up to this one is covered by a finished sync.
    done: u64,
    /// A sync is running.
    running: bool,
}

/// Group commit of the store for direct writes.
pub struct DirectSync {
    store: SharedStore,
    /// `write.wal_fsync = "always"`; with `"never"` a direct write is as durable as a WAL
    /// record then is (handed to the OS) and `sync` returns at once.
    fsync: bool,
    state: Mutex<State>,
    cv: Condvar,
}

impl DirectSync {
    pub fn new(store: SharedStore, fsync: bool) -> DirectSync {
        DirectSync {
            store,
            fsync,
            state: Mutex::new(State::default()),
            cv: Condvar::new(),
        }
    }

    /// Returns once every store write this thread finished before the call is durable (as
    /// durable as a WAL record under the same `wal_fsync`). Blocking.
    pub fn sync(&self) -> Result<(), StoreError> {
        if !self.fsync {
            return Ok(());
        }
        let mut s = self.state.lock();
        s.requested += 1;
        let ticket = s.requested;
        loop {
            if s.done >= ticket {
                return Ok(());
            }
            if s.running {
                // The running sync may have started before this write finished: wait for it,
                // then look again (a later sync, perhaps led by this thread, covers it).
                self.cv.wait(&mut s);
                continue;
            }
            s.running = true;
            // Every ticket handed out so far belongs to a write that had returned.
            let covers = s.requested;
            drop(s);
            let started = std::time::Instant::now();
            let r = self.store.flush();
            crate::observe::write::direct_sync(started);
            s = self.state.lock();
            s.running = false;
            if r.is_ok() {
                s.done = s.done.max(covers);
            }
            self.cv.notify_all();
            // A failed sync fails this caller; the others waiting try one of their own.
            r?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use tsgate_store::{Cell, RowMutations, RowStream, Scan, Store, StoreResult};

    /// A store that counts syncs, each taking a while, and fails them on demand.
    #[derive(Default)]
    struct Counting {
        syncs: AtomicUsize,
        fail: std::sync::atomic::AtomicBool,
    }

    impl Store for Counting {
        fn get(&self, _: &str, _: &[u8], _: &[&[u8]]) -> StoreResult<Vec<Cell>> {
            Ok(Vec::new())
        }
        fn mutate(&self, _: &str, _: Vec<RowMutations>) -> StoreResult<()> {
            Ok(())
        }
        fn scan(&self, _: &str, _: &Scan) -> StoreResult<RowStream> {
            Ok(Box::new(std::iter::empty()))
        }
        fn flush(&self) -> StoreResult<()> {
            std::thread::sleep(std::time::Duration::from_millis(20));
            self.syncs.fetch_add(1, Ordering::SeqCst);
            if self.fail.load(Ordering::SeqCst) {
                return Err(StoreError::Engine {
                    op: "flush",
                    table: "*".into(),
                    msg: "disk full".into(),
                });
            }
            Ok(())
        }
        fn mutate_at(&self, _: &str, _: Vec<RowMutations>, _: u64) -> StoreResult<()> {
            Ok(())
        }
        fn increment(&self, _: &str, _: &[u8], _: &[u8], _: &[u8], _: i64) -> StoreResult<i64> {
            Ok(0)
        }
        fn check_and_put(
            &self,
            _: &str,
            _: &[u8],
            _: &[u8],
            _: &[u8],
            _: Option<&[u8]>,
            _: &[u8],
        ) -> StoreResult<bool> {
            Ok(true)
        }
    }

    #[test]
    fn concurrent_writers_share_syncs_and_each_waits_for_one() {
        let store = Arc::new(Counting::default());
        let sync = Arc::new(DirectSync::new(store.clone(), true));
        let threads: Vec<_> = (0..16)
            .map(|_| {
                let sync = sync.clone();
                std::thread::spawn(move || sync.sync())
            })
            .collect();
        for t in threads {
            t.join().unwrap().unwrap();
        }
        let n = store.syncs.load(Ordering::SeqCst);
        // Every caller returned after a sync that started after its call (at least one),
        // and they shared: far fewer than one each.
        assert!((1..16).contains(&n), "{n} syncs for 16 writers");
        // A lone caller always gets a sync of its own.
        sync.sync().unwrap();
        assert_eq!(store.syncs.load(Ordering::SeqCst), n + 1);
    }

    #[test]
    fn a_failed_sync_is_the_callers_error_and_never_counts_as_done() {
        let store = Arc::new(Counting::default());
        let sync = DirectSync::new(store.clone(), true);
        store.fail.store(true, Ordering::SeqCst);
        assert!(sync.sync().is_err());
        store.fail.store(false, Ordering::SeqCst);
        sync.sync().unwrap();
        assert_eq!(store.syncs.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn no_sync_under_wal_fsync_never() {
        let store = Arc::new(Counting::default());
        DirectSync::new(store.clone(), false).sync().unwrap();
        assert_eq!(store.syncs.load(Ordering::SeqCst), 0);
    }
}
