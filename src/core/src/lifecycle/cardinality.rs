//! Cardinality: the series the store holds, counted by metric, and the limits on them
//! (`limits.max_series`, `limits.max_series_per_metric`, `limits.max_new_series_per_minute`).
//!
//! Every TSUID admitted is recorded in `data_dir/series.log` (synced before its first point is
//! acknowledged: the ingest path calls [`SeriesGate::sync`] once per batch, so a batch of new
//! series costs one fdatasync, not one each), so counts survive restarts and a series known before a restart is never
//! refused after it. A store that predates the log has it built once, from its row keys, at
//! the first start. Series deleted whole (`delete_series` over all time) are forgotten.
//! With HBase the log is this node's: each node counts the series it admitted.

use crate::series::{SeriesGate, SeriesRefused};
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use tsgate_schema::rowkey::KeyLayout;
use tsgate_store::{Scan, SharedStore};

const ADD: u8 = 1;
const FORGET: u8 = 2;

/// The limits, 0 = none.
#[derive(Debug, Clone, Copy, Default)]
pub struct Limits {
    pub max_series: u64,
    pub max_series_per_metric: u64,
    pub max_new_series_per_minute: u64,
}

struct State {
    /// Metric UID → its series' TSUIDs.
    by_metric: HashMap<Vec<u8>, HashSet<Vec<u8>>>,
    total: u64,
    log: std::fs::File,
    /// The current minute (since the epoch) and the series admitted in it.
    minute: u64,
    new_in_minute: u64,
}

pub struct Cardinality {
    state: Mutex<State>,
    /// Records written to the log (under `state`'s lock), and of those the ones synced.
    written: AtomicU64,
    synced: AtomicU64,
    /// Held while syncing; the log's handle for it, so admissions go on meanwhile.
    syncing: Mutex<std::fs::File>,
    limits: Limits,
    metric_width: usize,
    path: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum CardinalityError {
    #[error("series log {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("series log: building it from the store: {0}")]
    Store(#[from] tsgate_store::StoreError),
}

impl Cardinality {
    /// Opens (or first builds, from `table`'s row keys) the series log under `data_dir`.
    pub fn open(
        data_dir: &Path,
        store: &SharedStore,
        table: &str,
        layout: KeyLayout,
        limits: Limits,
    ) -> Result<Cardinality, CardinalityError> {
        let path = data_dir.join("series.log");
        let io = |source| CardinalityError::Io {
            path: path.display().to_string(),
            source,
        };
        let mut by_metric: HashMap<Vec<u8>, HashSet<Vec<u8>>> = HashMap::new();
        let mw = layout.metric_width;
        if path.exists() {
            let mut bytes = Vec::new();
            std::fs::File::open(&path)
                .and_then(|mut f| f.read_to_end(&mut bytes))
                .map_err(io)?;
            let mut i = 0;
            // A record cut short by a crash ends the log: its series was never acknowledged.
            while i + 2 <= bytes.len() {
                let (op, len) = (bytes[i], bytes[i + 1] as usize);
                let Some(tsuid) = bytes.get(i + 2..i + 2 + len) else {
                    break;
                };
                if tsuid.len() >= mw {
                    let set = by_metric.entry(tsuid[..mw].to_vec()).or_default();
                    if op == ADD {
                        set.insert(tsuid.to_vec());
                    } else {
                        set.remove(tsuid);
                    }
                }
                i += 2 + len;
            }
        } else {
            // A store written before the log: its series, from the row keys, once.
            let scan = Scan {
                families: vec![tsgate_schema::DATA_FAMILY.to_vec()],
                ..Default::default()
            };
            for row in store.scan(table, &scan)? {
                let row = row?;
                if let Ok(rk) = layout.parse(&row.key) {
                    by_metric
                        .entry(rk.metric.to_vec())
                        .or_default()
                        .insert(rk.tsuid());
                }
            }
        }
        by_metric.retain(|_, s| !s.is_empty());
        // Rewritten whole at each start: forgotten series leave no records behind.
        let tmp = path.with_extension("log.tmp");
        let mut out = Vec::new();
        for t in by_metric.values().flatten() {
            out.extend_from_slice(&[ADD, t.len() as u8]);
            out.extend_from_slice(t);
        }
        (|| {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(&out)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)
        })()
        .map_err(io)?;
        let log = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(io)?;
        let total = by_metric.values().map(|s| s.len() as u64).sum();
        let sync_handle = log.try_clone().map_err(io)?;
        Ok(Cardinality {
            written: AtomicU64::new(0),
            synced: AtomicU64::new(0),
            syncing: Mutex::new(sync_handle),
            state: Mutex::new(State {
                by_metric,
                total,
                log,
                minute: 0,
                new_in_minute: 0,
            }),
            limits,
            metric_width: mw,
            path,
        })
    }

    /// Forgets series deleted whole.
    pub fn forget(&self, tsuids: &[Vec<u8>]) {
        let mut st = self.state.lock();
        let mut rec = Vec::new();
        for t in tsuids {
            let Some(set) = st.by_metric.get_mut(&t[..self.metric_width.min(t.len())]) else {
                continue;
            };
            if set.remove(t) {
                st.total -= 1;
                rec.extend_from_slice(&[FORGET, t.len() as u8]);
                rec.extend_from_slice(t);
            }
        }
        if let Err(e) = st.log.write_all(&rec).and_then(|_| st.log.sync_data()) {
            tracing::warn!(path = %self.path.display(), error = %e, "series log not written");
        }
    }

    /// Series in all.
    pub fn total(&self) -> u64 {
        self.state.lock().total
    }

    /// (metric UID, series count) for every metric, and every TSUID (for the status page).
    pub fn snapshot(&self) -> Vec<(Vec<u8>, Vec<Vec<u8>>)> {
        let st = self.state.lock();
        st.by_metric
            .iter()
            .map(|(m, s)| (m.clone(), s.iter().cloned().collect()))
            .collect()
    }

    fn refuse(
        &self,
        which: crate::observe::metrics::SeriesLimit,
        why: SeriesRefused,
    ) -> SeriesRefused {
        crate::observe::metrics().series_refused[which as usize].inc();
        why
    }
}

impl SeriesGate for Cardinality {
    fn admit(&self, tsuid: &[u8]) -> Result<(), SeriesRefused> {
        use crate::observe::metrics::SeriesLimit;
        let l = self.limits;
        let metric = &tsuid[..self.metric_width.min(tsuid.len())];
        let mut st = self.state.lock();
        if st.by_metric.get(metric).is_some_and(|s| s.contains(tsuid)) {
            return Ok(());
        }
        if l.max_series > 0 && st.total >= l.max_series {
            return Err(self.refuse(SeriesLimit::Total, SeriesRefused::MaxSeries(l.max_series)));
        }
        let of_metric = st.by_metric.get(metric).map_or(0, |s| s.len() as u64);
        if l.max_series_per_metric > 0 && of_metric >= l.max_series_per_metric {
            return Err(self.refuse(
                SeriesLimit::PerMetric,
                SeriesRefused::MaxSeriesPerMetric(l.max_series_per_metric),
            ));
        }
        let minute = tsgate_common::clock::now_s() / 60;
        if st.minute != minute {
            st.minute = minute;
            st.new_in_minute = 0;
        }
        if l.max_new_series_per_minute > 0 && st.new_in_minute >= l.max_new_series_per_minute {
            return Err(self.refuse(
                SeriesLimit::Rate,
                SeriesRefused::MaxNewSeriesPerMinute(l.max_new_series_per_minute),
            ));
        }
        // Durable before the point is acknowledged: written here, synced by `sync`, which the
        // ingest path calls once per batch before the batch goes to the WAL.
        let mut rec = vec![ADD, tsuid.len() as u8];
        rec.extend_from_slice(tsuid);
        if let Err(source) = st.log.write_all(&rec) {
            return Err(SeriesRefused::NotRecorded {
                path: self.path.display().to_string(),
                source,
            });
        }
        self.written.fetch_add(1, Ordering::AcqRel);
        st.new_in_minute += 1;
        st.total += 1;
        st.by_metric
            .entry(metric.to_vec())
            .or_default()
            .insert(tsuid.to_vec());
        Ok(())
    }

    fn unsynced(&self) -> bool {
        self.synced.load(Ordering::Acquire) < self.written.load(Ordering::Acquire)
    }

    fn sync(&self) -> Result<(), SeriesRefused> {
        let want = self.written.load(Ordering::Acquire);
        if self.synced.load(Ordering::Acquire) >= want {
            return Ok(());
        }
        // Group commit: whoever holds the lock syncs every record written so far, so callers
        // queued behind it usually find their records already covered.
        let file = self.syncing.lock();
        if self.synced.load(Ordering::Acquire) >= want {
            return Ok(());
        }
        let upto = self.written.load(Ordering::Acquire);
        file.sync_data()
            .map_err(|source| SeriesRefused::NotRecorded {
                path: self.path.display().to_string(),
                source,
            })?;
        self.synced.fetch_max(upto, Ordering::AcqRel);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tsgate_store::embedded::EmbeddedStore;

    fn tsuid(metric: u8, host: u8) -> Vec<u8> {
        vec![0, 0, metric, 0, 0, 1, 0, 0, host]
    }

    #[test]
    fn admissions_are_made_durable_by_one_sync_for_all() {
        let dir = tempfile::tempdir().unwrap();
        let names = tsgate_store::TableNames::default();
        let store: SharedStore = std::sync::Arc::new(
            EmbeddedStore::open(&dir.path().join("store"), &names.specs()).unwrap(),
        );
        let open = || {
            let l = Limits::default();
            Cardinality::open(dir.path(), &store, &names.data, KeyLayout::default(), l).unwrap()
        };
        let c = open();
        assert!(!c.unsynced());
        for h in 0..200 {
            c.admit(&tsuid(1, h)).unwrap();
        }
        // Written, not yet synced: the ingest path syncs once before acknowledging.
        assert!(c.unsynced());
        c.sync().unwrap();
        assert!(!c.unsynced());
        c.admit(&tsuid(1, 7)).unwrap(); // known: nothing to record
        assert!(!c.unsynced());
        c.admit(&tsuid(2, 0)).unwrap();
        assert!(c.unsynced());
        c.sync().unwrap();
        drop(c);
        assert_eq!(open().total(), 201);
    }

    #[test]
    fn limits_refuse_new_series_only_and_counts_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let names = tsgate_store::TableNames::default();
        let store: SharedStore = std::sync::Arc::new(
            EmbeddedStore::open(&dir.path().join("store"), &names.specs()).unwrap(),
        );
        let open = |limits| {
            Cardinality::open(
                dir.path(),
                &store,
                &names.data,
                KeyLayout::default(),
                limits,
            )
            .unwrap()
        };
        let c = open(Limits {
            max_series: 5,
            max_series_per_metric: 3,
            max_new_series_per_minute: 0,
        });
        for h in 0..3 {
            c.admit(&tsuid(1, h)).unwrap();
        }
        let e = c.admit(&tsuid(1, 3)).unwrap_err().to_string();
        assert!(e.contains("limits.max_series_per_metric = 3"), "{e}");
        c.admit(&tsuid(1, 0)).unwrap(); // known: admitted
        c.admit(&tsuid(2, 0)).unwrap();
        c.admit(&tsuid(2, 1)).unwrap();
        let e = c.admit(&tsuid(3, 0)).unwrap_err().to_string();
        assert!(e.contains("limits.max_series = 5"), "{e}");
        c.forget(&[tsuid(2, 1)]);
        assert_eq!(c.total(), 4);
        drop(c);
        // Reopened from the log: the same series, the forgotten one gone.
        let c = open(Limits {
            max_series: 0,
            max_series_per_metric: 0,
            max_new_series_per_minute: 2,
        });
        assert_eq!(c.total(), 4);
        c.admit(&tsuid(1, 2)).unwrap(); // known
        let minute = tsgate_common::clock::now_s() / 60;
        c.admit(&tsuid(2, 1)).unwrap();
        c.admit(&tsuid(4, 0)).unwrap();
        let third = c.admit(&tsuid(4, 1));
        // (Unless a minute boundary passed in between, which starts a new allowance.)
        if tsgate_common::clock::now_s() / 60 == minute {
            let e = third.unwrap_err().to_string();
            assert!(e.contains("limits.max_new_series_per_minute = 2"), "{e}");
            assert_eq!(c.total(), 6);
        }
    }
}
