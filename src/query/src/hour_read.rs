//! One metric's rows read through the row cache's hour entries (see [`super::row_cache`]):
//! each closed hour of the window (per salt bucket) is taken from its entry when one is kept;
//! otherwise it is read from the store whole (every row of the metric in that hour, unfiltered)
//! and kept, while the request's allowance lasts and once the hour has gone quiet. The caller's
//! filter (required tag pairs, share of the series) is then applied to each row's key in
//! memory, as the store would have applied it to the scan. The open hour, and hours not kept,
//! are read as before.
//!
//! A PromQL panel over a thousand series then decodes only its open hour on a redraw:
//! reading and decoding the rows was about a third of `avg by (dc) (avg_over_time(x[1m]))`'s
//! CPU.

use super::collect::Collector;
use super::collect::Stamps;
use super::decode::append_row;
use super::row_cache::{
    hour_key, hour_key_weight, hour_row_weight, Fill, HourRows, HourTagsBuilder, RowCache,
    RowPoints,
};
use super::seek::{tags_share, RowFilter};
use super::select::{go_on, stop_on_error_lent, Window, KEPT_HOURS_MAX};
use super::{QueryEngine, QueryError};
use std::sync::Arc;
use tsgate_schema::rowkey::{base_time, ROW_SPAN};
use tsgate_store::{LentRow, RowSeek};

/// What is done with one hour of one salt bucket.
enum Hour {
    /// Taken from its entry.
    Kept(HourRows),
    /// Read whole and kept, under this key.
    Fill(Vec<u8>),
    /// Read through the caller's filter, as without the cache.
    Read,
}

/// One metric's rows of one hour under one salt prefix, as [`QueryEngine::read_hour`] reads them.
struct MetricHour<'a> {
    salt: &'a [u8],
    uid: &'a [u8],
    /// The metric's name, given to the collector with its series.
    name: &'a str,
    h: u32,
}

/// The hour after `h`, at most the last one a row key can name.
fn next(h: u32) -> u32 {
    (h as u64 + ROW_SPAN).min(u32::MAX as u64) as u32
}

impl QueryEngine {
    /// The rows of metric `uid` (named `name`) in window `w` that `filter` passes, in share
    /// `part` of `parts`, onto `c`; through the cache's hour entries when there is a cache and
    /// the read is one it serves, filling it from `fill`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn collect_metric(
        &self,
        uid: &[u8],
        name: &str,
        w: &Window,
        filter: &RowFilter,
        (part, parts): (usize, usize),
        fill: Option<&Fill>,
        c: &mut Collector,
    ) -> Result<(), QueryError> {
        let shared = filter.share(&self.layout, part, parts);
        let hours = (w.last as u64 - w.first as u64) / ROW_SPAN;
        if c.stamps() == Stamps::None {
            // Series alone: a narrow filter's hours are served from kept entries too (a few
            // thousand tags in memory cost less than a seek), and filled.
            let cache = self.rows.as_deref().filter(|_| hours <= KEPT_HOURS_MAX);
            if let (Some(cache), Some(wanted)) = (cache, in_memory(filter, part, parts)) {
                let at = SeriesRead {
                    uid,
                    name,
                    shared: &shared,
                    wanted: &wanted,
                    keyed: filter.seek.is_some() || filter.regex.is_some(),
                    share: (part, parts),
                };
                return self.collect_series(at, w, fill, cache, c);
            }
        }
        // A narrow filter seeks to a few series' rows, which costs less than looking through
        // every row of an hour (and reading the hour whole to keep it would cost more still).
        // Long windows would look up an entry per hour for little.
        let cache = self
            .rows
            .as_deref()
            .filter(|_| !filter.narrow && hours <= KEPT_HOURS_MAX);
        let (Some(cache), Some(wanted)) = (cache, in_memory(filter, part, parts)) else {
            let scans = self.metric_scans(uid, w.first, w.last, &shared);
            return self.scan_into(&scans, name, c);
        };
        // Only the open hour's rows change at every flush; no points, nothing worth keeping.
        let open = base_time(tsgate_common::clock::now_ms() / 1000);
        let fill = fill.filter(|_| c.stamps() != Stamps::None);
        let mut key = Vec::new();
        for salt in self.layout.salt_prefixes() {
            let plan: Vec<(u32, Hour)> = (w.first..w.last)
                .step_by(ROW_SPAN as usize)
                .enumerate()
                .map(|(i, h)| {
                    if h >= open {
                        return (h, Hour::Read);
                    }
                    let k = hour_key(&self.layout.metric_start(&salt, uid, h));
                    if let Some(rows) = cache.get_hour(&k) {
                        return (h, Hour::Kept(rows));
                    }
                    // Readers of other shares read the same hours: each fills its own of them.
                    if fill.is_some_and(|f| f.left() > 0)
                        && i % parts.max(1) == part
                        && cache.keeps(&k)
                    {
                        return (h, Hour::Fill(k));
                    }
                    (h, Hour::Read)
                })
                .collect();
            let mut at = 0;
            while at < plan.len() {
                let (h, what) = &plan[at];
                at += 1;
                match what {
                    Hour::Kept(rows) => {
                        let head = self.layout.metric_start(&salt, uid, *h);
                        for (tags, points) in rows.iter() {
                            key.clear();
                            key.extend_from_slice(&head);
                            key.extend_from_slice(tags);
                            if wanted(&key, tags) {
                                c.whole(name, uid, tags, points)?;
                            }
                        }
                    }
                    Hour::Fill(k) if fill.is_some_and(|f| f.left() > 0) => {
                        let fill = fill.expect("checked");
                        // Taken just before the read: the longer before, the likelier a flush
                        // of other rows of its stripe outdates it.
                        let ticket = cache.ticket(k);
                        if let Some((rows, taken)) = self.read_hour(
                            MetricHour {
                                salt: &salt,
                                uid,
                                name,
                                h: *h,
                            },
                            &wanted,
                            (cache, fill, hour_key_weight(k.len())),
                            c,
                        )? {
                            if !cache.put_hour(k.clone(), ticket, rows) {
                                fill.give(taken);
                            }
                        }
                    }
                    Hour::Fill(_) | Hour::Read => {
                        // With the hours after it that are read too, in one scan.
                        let mut to = next(*h);
                        while at < plan.len() && matches!(plan[at].1, Hour::Read) {
                            to = next(plan[at].0);
                            at += 1;
                        }
                        let scan = self.metric_scan(&salt, uid, *h, to, &shared);
                        self.scan_into(std::slice::from_ref(&scan), name, c)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Every row of `at`, decoded whole; those `wanted` (by key and tag bytes) onto `c`. The rows to keep, with the allowance taken from `fill` for
    /// them (from the key's part, `base`, on), unless one of them may not be kept: it does not
    /// decode whole, or is not based at `h` (a write to it would not name this hour); or they
    /// outweigh what the allowance or the cache can take. Then the allowance is given back (as
    /// on an error), and the rest of the hour is decoded as without the cache: the wanted rows,
    /// in the window.
    fn read_hour(
        &self,
        at: MetricHour,
        wanted: &dyn Fn(&[u8], &[u8]) -> bool,
        (cache, fill, base): (&RowCache, &Fill, u64),
        c: &mut Collector,
    ) -> Result<Option<(HourRows, u64)>, QueryError> {
        let MetricHour { salt, uid, name, h } = at;
        let scan = self.metric_scan(salt, uid, h, next(h), &RowFilter::default());
        let mut rows = Vec::new();
        let mut whole = fill.take(base);
        let mut taken = if whole { base } else { 0 };
        let mut failed = None;
        let mut body = |key: &[u8], row: LentRow| -> Result<(), QueryError> {
            let Ok(rk) = self.layout.parse(key) else {
                return Ok(());
            };
            let want = wanted(key, rk.tags);
            let mut all = Vec::new();
            let kept = whole
                && rk.base == h
                && append_row(key, row, rk.base, 0, u64::MAX, &mut all, |ts| ts as i64).is_ok()
                && all.is_sorted_by_key(|p| p.0)
                && {
                    let w = hour_row_weight(rk.tags.len(), all.len());
                    if taken + w > cache.max_entry() {
                        fill.ran_out();
                    }
                    taken + w <= cache.max_entry() && fill.take(w) && {
                        taken += w;
                        true
                    }
                };
            if !kept {
                // Not kept: what was taken goes back, and this row and the rest are read
                // for the window alone, as without the cache.
                if whole {
                    whole = false;
                    fill.give(taken);
                    taken = 0;
                    rows = Vec::new();
                }
                return if want {
                    c.cells(name, key, &rk, row)
                } else {
                    Ok(())
                };
            }
            let all: RowPoints = Arc::from(all);
            if want {
                c.whole(name, rk.metric, rk.tags, &all)?;
            }
            rows.push((Box::from(rk.tags), all));
            Ok(())
        };
        let scanned = self.store.scan_points(
            &self.table,
            &scan,
            &mut stop_on_error_lent(&mut body, &mut failed),
        );
        let error = match (failed, scanned) {
            (Some(e), _) => Some(e),
            (None, Err(e)) => Some(e.into()),
            (None, Ok(_)) => None,
        };
        if let Some(e) = error {
            if whole {
                fill.give(taken);
            }
            return Err(e);
        }
        Ok(whole.then(|| (Arc::from(rows), taken)))
    }
}

/// `filter`, and share `part` of `parts`, applied in memory to a row (its key, and its tag
/// bytes) as the store would have applied them to a scan; None when the filter's regex does
/// not compile here (the store is then left to apply it).
fn in_memory(
    filter: &RowFilter,
    part: usize,
    parts: usize,
) -> Option<impl Fn(&[u8], &[u8]) -> bool + '_> {
    // The store applies the regex only to scans without a seeker: so does this.
    let regex = filter
        .regex
        .as_deref()
        .filter(|_| filter.seek.is_none())
        .map(tsgate_store::embedded::compile_row_regex)
        .transpose()
        .ok()?;
    let passes = move |key: &[u8]| match &filter.seek {
        Some(s) => (s.0)(key) == RowSeek::Take,
        None => regex.as_ref().is_none_or(|r| r.is_match(key)),
    };
    let mine = move |tags: &[u8]| parts <= 1 || tags_share(tags, parts) == part;
    Some(move |key: &[u8], tags: &[u8]| mine(tags) && passes(key))
}

/// One metric's series as [`QueryEngine::collect_series`] reads them.
struct SeriesRead<'a> {
    uid: &'a [u8],
    name: &'a str,
    /// The caller's filter for the store, narrowed to its share.
    shared: &'a RowFilter,
    /// The same, in memory.
    wanted: &'a dyn Fn(&[u8], &[u8]) -> bool,
    /// Whether `wanted` looks at a row's key (a filter by tag pairs), or only at its tags.
    keyed: bool,
    share: (usize, usize),
}

impl QueryEngine {
    /// [`QueryEngine::collect_metric`] for series alone (no points): each closed hour's row
    /// keys from its kept entry, whether kept with points or alone; otherwise read from the
    /// store and kept alone while the allowance lasts, once the hour has gone quiet. The open
    /// hour, and hours not kept, are read through the filter as before.
    fn collect_series(
        &self,
        at: SeriesRead,
        w: &Window,
        fill: Option<&Fill>,
        cache: &RowCache,
        c: &mut Collector,
    ) -> Result<(), QueryError> {
        let (part, parts) = at.share;
        let open = base_time(tsgate_common::clock::now_ms() / 1000);
        let mut key = Vec::new();
        for salt in self.layout.salt_prefixes() {
            // Hours to read through the filter, in one scan: from, to.
            let mut run: Option<(u32, u32)> = None;
            let read_run = |run: &mut Option<(u32, u32)>, c: &mut Collector| match run.take() {
                Some((from, to)) => {
                    let scan = self.metric_scan(&salt, at.uid, from, to, at.shared);
                    self.scan_into(std::slice::from_ref(&scan), at.name, c)
                }
                None => Ok(()),
            };
            for (i, h) in (w.first..w.last).step_by(ROW_SPAN as usize).enumerate() {
                let k = hour_key(&self.layout.metric_start(&salt, at.uid, h));
                if h < open {
                    if let Some(series) = cache.get_hour_series(&k) {
                        read_run(&mut run, c)?;
                        let head = self.layout.metric_start(&salt, at.uid, h);
                        series.each_tags(|tags| {
                            key.clear();
                            if at.keyed {
                                key.extend_from_slice(&head);
                                key.extend_from_slice(tags);
                            }
                            match (at.wanted)(&key, tags) {
                                true => c.series_tags(at.name, at.uid, tags),
                                false => Ok(()),
                            }
                        })?;
                        continue;
                    }
                    // Readers of other shares read the same hours: each fills its own of them.
                    let fill = fill.filter(|f| f.left() > 0 && i % parts.max(1) == part);
                    if let Some(fill) = fill.filter(|_| cache.keeps(&k)) {
                        read_run(&mut run, c)?;
                        self.read_hour_tags(&at, &salt, h, k, (cache, fill), c)?;
                        continue;
                    }
                }
                let from = run.map_or(h, |(from, _)| from);
                run = Some((from, next(h)));
            }
            read_run(&mut run, c)?;
        }
        Ok(())
    }

    /// Every row key of hour `h` of `at`'s metric under `salt`; those wanted onto `c`, and all
    /// kept under `k` as the hour's series when the allowance in `fill` covers them.
    fn read_hour_tags(
        &self,
        at: &SeriesRead,
        salt: &[u8],
        h: u32,
        k: Vec<u8>,
        (cache, fill): (&RowCache, &Fill),
        c: &mut Collector,
    ) -> Result<(), QueryError> {
        // Taken just before the read: a write to the hour after it keeps nothing.
        let ticket = cache.ticket(&k);
        let scan = self.metric_scan(salt, at.uid, h, next(h), &RowFilter::default());
        let mut tags = HourTagsBuilder::default();
        let mut whole = true;
        let mut failed = None;
        let mut body = |key: &[u8]| -> Result<(), QueryError> {
            let Ok(rk) = self.layout.parse(key) else {
                whole = false;
                return Ok(());
            };
            // A row not based at `h` would not name this hour when written.
            whole = whole && rk.base == h && tags.push(rk.tags);
            match (at.wanted)(key, rk.tags) {
                true => c.series_of(at.name, &rk),
                false => Ok(()),
            }
        };
        self.store.scan_keys(&self.table, &scan, &mut |key| {
            Ok(go_on(body(key), &mut failed))
        })?;
        if let Some(e) = failed {
            return Err(e);
        }
        if !whole {
            return Ok(());
        }
        let tags = tags.finish();
        let weight = tags.weight(k.len());
        if weight > cache.max_entry() {
            fill.ran_out();
        } else if fill.take(weight) && !cache.put_hour_tags(k, ticket, tags) {
            fill.give(weight);
        }
        Ok(())
    }
}
