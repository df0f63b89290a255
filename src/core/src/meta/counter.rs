//! `ts_ctr` maintenance, done by the flushers: one store operation per series per flush
//! (carrying that flush's point count), never one per point as OpenTSDB does.

use crate::config::MetaConfig;
use tsgate_schema::uid_table::{META_FAMILY, TS_COUNTER_QUALIFIER};
use tsgate_store::{RowMutations, SharedStore, StoreError};

/// How `ts_ctr` is kept (OpenTSDB's `TSDB.storeIntoDB` table, per series instead of per point).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterMode {
    /// Tracking without realtime TSMeta: a marker `00…01` overwritten on every flush.
    Marker,
    /// Tracking + realtime TSMeta + incrementing: atomic increment by the flushed point count.
    Increment,
}

impl CounterMode {
    /// `None` when nothing is written per point (tracking off, or realtime TSMeta on without
    /// incrementing, where OpenTSDB only checks for the TSMeta).
    pub fn from_config(c: &MetaConfig) -> Option<CounterMode> {
        match (
            c.enable_tsuid_tracking,
            c.enable_realtime_ts,
            c.enable_tsuid_incrementing,
        ) {
            (false, _, _) => None,
            (true, false, _) => Some(CounterMode::Marker),
            (true, true, false) => None,
            (true, true, true) => Some(CounterMode::Increment),
        }
    }
}

pub struct TsCounter {
    pub store: SharedStore,
    pub table: String,
    pub mode: CounterMode,
}

impl std::fmt::Debug for TsCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TsCounter")
            .field("table", &self.table)
            .field("mode", &self.mode)
            .finish()
    }
}

impl TsCounter {
    /// Records one flush: `(tsuid, points written)` per series.
    pub fn record(&self, counts: &[(&[u8], u64)]) -> Result<(), StoreError> {
        match self.mode {
            CounterMode::Marker => {
                let one = 1i64.to_be_bytes().to_vec();
                let batch: Vec<RowMutations> = counts
                    .iter()
                    .map(|(t, _)| {
                        RowMutations::put(
                            t.to_vec(),
                            META_FAMILY,
                            TS_COUNTER_QUALIFIER.to_vec(),
                            one.clone(),
                        )
                    })
                    .collect();
                if !batch.is_empty() {
                    self.store.mutate(&self.table, batch)?;
                }
            }
            CounterMode::Increment => {
                for (t, n) in counts {
                    self.store.increment(
                        &self.table,
                        t,
                        META_FAMILY,
                        TS_COUNTER_QUALIFIER,
                        *n as i64,
                    )?;
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
    fn modes_follow_opentsdb_switches() {
        let c = |t, r, i| MetaConfig {
            enable_tsuid_tracking: t,
            enable_realtime_ts: r,
            enable_tsuid_incrementing: i,
            ..Default::default()
        };
        assert_eq!(CounterMode::from_config(&c(false, true, true)), None);
        assert_eq!(
            CounterMode::from_config(&c(true, false, true)),
            Some(CounterMode::Marker)
        );
        assert_eq!(CounterMode::from_config(&c(true, true, false)), None);
        assert_eq!(
            CounterMode::from_config(&c(true, true, true)),
            Some(CounterMode::Increment)
        );
    }
}
