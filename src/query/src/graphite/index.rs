//! The series index graphite browsing and path expressions resolve against: the Graphite path
//! (`naming::to_path`) of every stored series, whichever API wrote it. Built from the UID table
//! (metric names) and a key-only walk of the data table's rows; cached in memory and rebuilt
//! at most every `TTL` when a request needs it, so browsing costs one scan per TTL window at
//! most. A snapshot built well after this process's last new series, on the embedded store
//! (no other process writes it), lives on past `TTL`, up to `TTL_QUIET`, until this process
//! creates a series.

use super::glob::PathGlob;
use super::naming;
use super::Engine;
use crate::select::{Stamps, StoredRead};
use crate::QueryError;
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tsgate_schema::uid_table::UidKind;

/// New series become visible to browsing within this delay.
pub const TTL: Duration = Duration::from_secs(5);
/// How long a snapshot lives when nothing suggests it is stale (see the module comment).
const TTL_QUIET: Duration = Duration::from_secs(60);
/// A series this process created this long before a build is in the store by then (its first
/// points flushed, `write.flush_interval_ms` added on top).
const SETTLED: Duration = Duration::from_secs(5);

/// Metrics read per task while building a snapshot.
const METRICS_PER_CHUNK: usize = 256;

#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub path: String,
    pub metric: String,
    pub tags: Vec<(String, String)>,
    /// The metric's UID as the snapshot found it (none for entries not read from the store):
    /// a render over a thousand paths stored whole then looks up no names.
    pub metric_uid: Option<Box<[u8]>>,
}

impl Entry {
    /// A tagged path (`name;k=v`) lives in the tag index, not in the dotted tree.
    pub fn is_tagged(&self) -> bool {
        self.path.contains(';')
    }
    /// The Graphite name (path without tags) and the tags graphite reports, `name` included.
    pub fn graphite_tags(&self) -> std::collections::BTreeMap<String, String> {
        let (name, tags) =
            naming::parse_tagged(&self.path).unwrap_or_else(|_| (self.path.clone(), Vec::new()));
        let mut m: std::collections::BTreeMap<String, String> = tags.into_iter().collect();
        m.insert("name".into(), name);
        m
    }
}

#[derive(Default)]
pub struct SeriesIndex {
    /// The snapshot, when it was built, and the series generation it was built at.
    cached: Mutex<Option<Snapshot>>,
}

struct Snapshot {
    at: Instant,
    generation: u64,
    /// Nothing changed for a while before the build, and no other process writes the store.
    quiet: bool,
    entries: Arc<Vec<Entry>>,
}

impl SeriesIndex {
    /// The current snapshot, sorted by path (blocking: call off the async threads).
    pub fn snapshot(&self, state: &Engine) -> Result<Arc<Vec<Entry>>, QueryError> {
        let mut g = self.cached.lock();
        let (generation, changed_ms) = state.resolver.generation();
        if let Some(s) = g.as_ref() {
            // Never rebuilt more often than every TTL (series arriving all the time, or all
            // written again after a restart, would otherwise rebuild it on every request).
            let age = s.at.elapsed();
            if age < TTL || (s.quiet && s.generation == generation && age < TTL_QUIET) {
                return Ok(s.entries.clone());
            }
        }
        let settled = SETTLED + Duration::from_millis(state.settings.flush_interval_ms);
        let since_change = tsgate_common::clock::now_ms().saturating_sub(changed_ms);
        let quiet = state.settings.sole_writer && since_change >= settled.as_millis() as u64;
        let entries = Arc::new(build(state)?);
        *g = Some(Snapshot {
            at: Instant::now(),
            generation,
            quiet,
            entries: entries.clone(),
        });
        Ok(entries)
    }

    /// Forgets the snapshot (after `/tags/delSeries`, or when a test wants fresh data).
    pub fn invalidate(&self) {
        *self.cached.lock() = None;
    }
}

fn build(state: &Engine) -> Result<Vec<Entry>, QueryError> {
    let listed = state.query.uids.list(UidKind::Metric)?;
    let uid_of: std::collections::HashMap<&str, &[u8], ahash::RandomState> =
        listed.iter().map(|(n, u)| (n.as_str(), &u[..])).collect();
    let metrics: Vec<String> = listed.iter().map(|(n, _)| n.clone()).collect();
    // One scan per metric, and graphite writes a metric per path: the metrics are read in
    // chunks on every core (a request that finds the snapshot stale waits for this).
    let chunks: Vec<&[String]> = metrics.chunks(METRICS_PER_CHUNK).collect();
    let read = super::parallel::map_from(chunks, 2, |c| -> Result<Vec<Entry>, QueryError> {
        let mut all = state.query.select_stored(
            c,
            StoredRead {
                start_ms: 0,
                end_ms: i64::MAX,
                stamps: Stamps::None,
                row_filter: &Default::default(),
                fill: None,
                keep: &|_, _| true,
            },
        )?;
        // Series whose raw data expired are still read from their rollups.
        all.extend(state.query.rollup_series(c)?);
        Ok(all
            .into_iter()
            .map(|s| {
                let path = naming::to_path(state, &s.metric, &s.tags);
                let metric_uid = uid_of.get(s.metric.as_str()).map(|u| Box::from(*u));
                Entry {
                    path,
                    metric: s.metric,
                    tags: s.tags,
                    metric_uid,
                }
            })
            .collect())
    });
    let mut out: Vec<Entry> = Vec::new();
    for r in read {
        out.extend(r?);
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out.dedup_by(|a, b| a.path == b.path);
    Ok(out)
}

/// A path expression that names no series: a tagged path that does not parse, or a glob that
/// compiles to no regex.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ResolveError {
    #[error(transparent)]
    Path(#[from] naming::PathError),
    #[error(transparent)]
    Glob(#[from] super::glob::GlobError),
}

/// The dotted-tree leaves a path expression names (every element matched, no deeper nodes),
/// sorted by path. A literal tagged path (`name;k=v`) resolves to that series.
pub fn resolve<'a>(entries: &'a [Entry], expr: &str) -> Result<Vec<&'a Entry>, ResolveError> {
    if expr.contains(';') {
        let (n, t) = naming::parse_tagged(expr)?;
        let canon = naming::canonical(&n, &t);
        return Ok(entries.iter().filter(|e| e.path == canon).collect());
    }
    let glob = PathGlob::new(expr)?;
    // Entries are sorted by path: only those starting with the expression's literal head can
    // match (a literal path is one binary search, not a pass over every series).
    let prefix = glob.literal_prefix();
    // Likewise its literal tail (`.cpu.usage_user` of `*.*.cpu.usage_user`) rejects most
    // other paths with one comparison.
    let suffix = glob.literal_suffix();
    let from = entries.partition_point(|e| e.path.as_str() < prefix.as_str());
    let to = from + entries[from..].partition_point(|e| e.path.starts_with(&prefix));
    let pick = |part: &'a [Entry]| -> Vec<&'a Entry> {
        part.iter()
            .filter(|e| e.path.ends_with(&suffix) && !e.is_tagged() && glob.matches_path(&e.path))
            .collect()
    };
    let candidates = &entries[from..to];
    if candidates.len() < RESOLVE_PARALLEL_MIN {
        return Ok(pick(candidates));
    }
    // Tens of thousands of paths (`*.*.cpu.usage_user` has no literal head): each costs a
    // cache miss or two, so the pass is split over the cores, in order.
    let n = tsgate_common::cores();
    let size = candidates.len().div_ceil(n);
    Ok(tsgate_common::pool::on_workers(n, |i| {
        pick(
            candidates
                .get(i * size..((i + 1) * size).min(candidates.len()))
                .unwrap_or(&[]),
        )
    })
    .concat())
}

/// Candidate paths from which [`resolve`] splits its pass over the cores.
const RESOLVE_PARALLEL_MIN: usize = 4096;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn entry(path: &str) -> Entry {
        Entry {
            path: path.to_string(),
            metric: path.to_string(),
            tags: Vec::new(),
            metric_uid: None,
        }
    }

    #[test]
    fn a_pass_split_over_the_cores_keeps_every_match_in_order() {
        // More candidates than RESOLVE_PARALLEL_MIN, no literal head: the split pass.
        let mut entries: Vec<Entry> = (0..3 * RESOLVE_PARALLEL_MIN + 7)
            .map(|i| entry(&format!("dc{}.host_{i:05}.cpu.m{}", i % 3, i % 10)))
            .collect();
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        let glob = PathGlob::new("*.*.cpu.m3").unwrap();
        let want: Vec<&str> = entries
            .iter()
            .filter(|e| glob.matches_path(&e.path))
            .map(|e| e.path.as_str())
            .collect();
        let got: Vec<&str> = resolve(&entries, "*.*.cpu.m3")
            .unwrap()
            .into_iter()
            .map(|e| e.path.as_str())
            .collect();
        assert_eq!(got.len(), (3 * RESOLVE_PARALLEL_MIN + 7) / 10 + 1);
        assert_eq!(got, want);
    }

    proptest! {
        /// The binary search on the literal head and the check of the literal tail only skip
        /// work: the same entries come back as a plain pass matching every path.
        #[test]
        fn resolve_is_a_plain_pass(
            paths in proptest::collection::btree_set("[ab]{1,2}(\\.[ab]{1,2}){0,3}", 0..40),
            elems in proptest::collection::vec(prop_oneof!["[ab]{1,2}", Just("*".to_string()), Just("a*".to_string()), Just("{a,b}".to_string())], 1..5),
        ) {
            let entries: Vec<Entry> = paths.iter().map(|p| entry(p)).collect();
            let expr = elems.join(".");
            let glob = PathGlob::new(&expr).unwrap();
            let want: Vec<&str> = entries.iter().filter(|e| glob.matches_path(&e.path)).map(|e| e.path.as_str()).collect();
            let got: Vec<&str> = resolve(&entries, &expr).unwrap().into_iter().map(|e| e.path.as_str()).collect();
            prop_assert_eq!(got, want);
        }
    }
}
