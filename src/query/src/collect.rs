//! Series gathered from one metric's rows, whether read from the store or from the row
//! cache's hour entries: each series once however many rows and salts it spans, its tags
//! looked up by name once, kept or not by the caller's test, with its points in the window.

use super::decode::append_row;
use super::row_cache::RowPoints;
use super::{QueryEngine, QueryError};
use std::collections::HashMap;
use tsgate_core::prometheus::labels::{unescape, PLACEHOLDER_TAGK};
use tsgate_schema::rowkey::RowKey;
use tsgate_schema::uid_table::{id_from_bytes, UidKind};
use tsgate_store::LentRow;

pub(super) struct Collector<'a> {
    q: &'a QueryEngine,
    /// The window, ms.
    start: u64,
    end: u64,
    stamps: Stamps,
    keep: &'a KeepSeries<'a>,
    /// Per TSUID: None = rejected, Some(i) = index in `found`.
    seen: HashMap<Vec<u8>, Option<usize>>,
    found: Vec<StoredSelected>,
    /// Per series in `found`: whether a row of it began before its points so far.
    unsorted: Vec<bool>,
    /// Per series in `found`, when lending: its points, while one cached row's run holds them
    /// all (a PromQL reducer reads them there: copying a thousand rows was a tenth of a query).
    lent: Vec<Option<(RowPoints, usize, usize)>>,
    lending: bool,
    tsuid: Vec<u8>,
    /// For a look-up of one label's values: series are not gathered, their values are.
    values: Option<LabelValues<'a>>,
}

/// The values one label has among the series read, gathered from their tag bytes alone: no
/// series is named, only each tag key seen once and each value found once.
pub(super) struct LabelValues<'a> {
    label: &'a str,
    /// Tag key UIDs seen (as numbers, [`id_from_bytes`]: compared and hashed as one word,
    /// where the byte slices cost a call to `memcmp` per tag of every row), with whether their
    /// name is the label's (unescaped, as a series' labels are made).
    tagks: Vec<(u64, bool)>,
    /// The label's value UIDs found, as numbers.
    pub(super) found: std::collections::HashSet<u64, ahash::RandomState>,
}

impl<'a> LabelValues<'a> {
    pub(super) fn new(label: &'a str) -> LabelValues<'a> {
        LabelValues {
            label,
            tagks: Vec::new(),
            found: Default::default(),
        }
    }

    fn add(&mut self, q: &QueryEngine, tags: &[u8]) -> Result<(), QueryError> {
        for pair in tags.chunks_exact(q.layout.tag_width()) {
            let (k, v) = pair.split_at(q.layout.tagk_width);
            let kb = id_from_bytes(k);
            let names = match self.tagks.iter().find(|(t, _)| *t == kb) {
                Some((_, names)) => *names,
                None => {
                    let name = q.uids.get_name(UidKind::Tagk, k)?;
                    let names = *name != *PLACEHOLDER_TAGK && unescape(&name) == self.label;
                    self.tagks.push((kb, names));
                    names
                }
            };
            if names {
                self.found.insert(id_from_bytes(v));
            }
        }
        Ok(())
    }
}

impl<'a> Collector<'a> {
    pub(super) fn new(
        q: &'a QueryEngine,
        start: u64,
        end: u64,
        stamps: Stamps,
        keep: &'a KeepSeries<'a>,
    ) -> Collector<'a> {
        Collector {
            q,
            start,
            end,
            stamps,
            keep,
            seen: HashMap::new(),
            found: Vec::new(),
            unsorted: Vec::new(),
            lent: Vec::new(),
            lending: false,
            tsuid: Vec::new(),
            values: None,
        }
    }

    /// A collector gathering `values` of series' tags rather than series (see [`LabelValues`]).
    pub(super) fn for_values(
        q: &'a QueryEngine,
        start: u64,
        end: u64,
        keep: &'a KeepSeries<'a>,
        values: LabelValues<'a>,
    ) -> Collector<'a> {
        Collector {
            values: Some(values),
            ..Collector::new(q, start, end, Stamps::None, keep)
        }
    }

    /// What a collector made by [`Collector::for_values`] gathered.
    pub(super) fn into_values(self) -> Option<LabelValues<'a>> {
        self.values
    }

    /// A collector whose series' points may stay in the cached rows they come from, for
    /// [`Collector::each`] (points in ms).
    pub(super) fn lending(
        q: &'a QueryEngine,
        start: u64,
        end: u64,
        keep: &'a KeepSeries<'a>,
    ) -> Collector<'a> {
        Collector {
            lending: true,
            ..Collector::new(q, start, end, Stamps::Ms, keep)
        }
    }

    /// Series `i`'s points in its own list, copied from the row they were lent from.
    fn own(&mut self, i: usize) {
        if let Some((row, a, b)) = self.lent[i].take() {
            self.found[i].points.extend_from_slice(&row[a..b]);
        }
    }

    pub(super) fn stamps(&self) -> Stamps {
        self.stamps
    }

    /// The series of `metric` (named `name`) with tag bytes `tags`: where it is in `found`,
    /// or None when `keep` refused it.
    fn slot(
        &mut self,
        name: &str,
        metric: &[u8],
        tags: &[u8],
    ) -> Result<Option<usize>, QueryError> {
        if let Some(values) = &mut self.values {
            values.add(self.q, tags)?;
            return Ok(None);
        }
        self.tsuid.clear();
        self.tsuid.extend_from_slice(metric);
        self.tsuid.extend_from_slice(tags);
        if let Some(s) = self.seen.get(self.tsuid.as_slice()) {
            return Ok(*s);
        }
        let layout = &self.q.layout;
        let mut named = Vec::new();
        for pair in tags.chunks_exact(layout.tag_width()) {
            let (k, v) = pair.split_at(layout.tagk_width);
            named.push((
                self.q.uids.get_name(UidKind::Tagk, k)?.into(),
                self.q.uids.get_name(UidKind::Tagv, v)?.into(),
            ));
        }
        let s = if (self.keep)(name, &named) {
            self.found.push(StoredSelected {
                metric: name.to_string(),
                tags: named,
                points: Vec::new(),
            });
            self.unsorted.push(false);
            self.lent.push(None);
            Some(self.found.len() - 1)
        } else {
            None
        };
        self.seen.insert(self.tsuid.clone(), s);
        Ok(s)
    }

    /// A kept row's tags alone (a selection of series without points): its series is gathered.
    pub(super) fn series_tags(
        &mut self,
        name: &str,
        metric: &[u8],
        tags: &[u8],
    ) -> Result<(), QueryError> {
        self.slot(name, metric, tags).map(|_| ())
    }

    /// A row's key alone (a selection of series without points): its series is gathered.
    pub(super) fn series_of(&mut self, name: &str, rk: &RowKey) -> Result<(), QueryError> {
        self.series_tags(name, rk.metric, rk.tags)
    }

    /// A row read from the store: its points in the window decoded from its cells.
    pub(super) fn cells(
        &mut self,
        name: &str,
        key: &[u8],
        rk: &RowKey,
        row: LentRow,
    ) -> Result<(), QueryError> {
        let Some(i) = self.slot(name, rk.metric, rk.tags)? else {
            return Ok(());
        };
        if self.stamps == Stamps::None {
            return Ok(());
        }
        self.own(i);
        let (start, end) = (self.start, self.end);
        let pts = &mut self.found[i].points;
        // Each unit its own loop: seconds are made while the row's points are in cache
        // (a later pass over a thousand series' points found them evicted).
        self.unsorted[i] |= match self.stamps {
            Stamps::Seconds => {
                append_row(key, row, rk.base, start, end, pts, |ts| (ts / 1000) as i64)
            }
            _ => append_row(key, row, rk.base, start, end, pts, |ts| ts as i64),
        }?;
        Ok(())
    }

    /// A row as kept whole in the cache (points in ms): those in the window, timed as
    /// [`Collector::cells`] times them.
    pub(super) fn whole(
        &mut self,
        name: &str,
        metric: &[u8],
        tags: &[u8],
        points: &RowPoints,
    ) -> Result<(), QueryError> {
        let Some(i) = self.slot(name, metric, tags)? else {
            return Ok(());
        };
        if self.stamps == Stamps::None {
            return Ok(());
        }
        let (start, end) = (self.start as i64, self.end as i64);
        // A row's points are in time order (its qualifiers are): the window is one run of them.
        // Mostly the whole row is: then its ends say so, where a search through a row not in the
        // processor's cache waited on memory at every step (most of this function's time).
        let (Some(first), Some(last)) = (points.first(), points.last()) else {
            return Ok(());
        };
        let from = if first.0 >= start {
            0
        } else {
            points.partition_point(|p| p.0 < start)
        };
        let to = if last.0 <= end {
            points.len()
        } else {
            points.partition_point(|p| p.0 <= end)
        }
        .max(from);
        if from == to {
            return Ok(());
        }
        if self.lending && self.found[i].points.is_empty() && self.lent[i].is_none() {
            self.lent[i] = Some((points.clone(), from, to));
            return Ok(());
        }
        self.own(i);
        let pts = &mut self.found[i].points;
        let (mark, before) = (pts.len(), pts.last().map(|p| p.0));
        match self.stamps {
            // A copy (a division by a variable per point took a fifth of a PromQL query).
            Stamps::Seconds => pts.extend(points[from..to].iter().map(|&(ms, v)| (ms / 1000, v))),
            _ => pts.extend_from_slice(&points[from..to]),
        }
        let broke = before.is_some_and(|b| pts.get(mark).is_some_and(|p| p.0 < b));
        self.unsorted[i] |= broke;
        Ok(())
    }

    /// The series gathered onto `out`: with points, those with points in the window, in time
    /// order; without, all of them.
    pub(super) fn finish(self, out: &mut Vec<StoredSelected>) {
        let to_list = |mut s: StoredSelected, lent: Option<&[(i64, f64)]>| {
            if let Some(points) = lent {
                s.points = points.to_vec();
            }
            out.push(s);
            Ok::<(), std::convert::Infallible>(())
        };
        let Ok(()) = self.each(to_list);
    }

    /// [`Collector::finish`], each series to `f` in turn, with its points lent from the
    /// cached row that holds them all (the series' own list is then empty), or not.
    pub(super) fn each<E>(
        self,
        mut f: impl FnMut(StoredSelected, Option<&[(i64, f64)]>) -> Result<(), E>,
    ) -> Result<(), E> {
        for ((mut s, unsorted), lent) in self.found.into_iter().zip(self.unsorted).zip(self.lent) {
            if let Some((row, a, b)) = &lent {
                f(s, Some(&row[*a..*b]))?;
                continue;
            }
            if self.stamps != Stamps::None {
                if s.points.is_empty() {
                    continue;
                }
                if unsorted {
                    s.points.sort_by_key(|p| p.0);
                }
            }
            f(s, None)?;
        }
        Ok(())
    }
}

/// What a selection gives of each series' points: none (the series only), or those in its
/// window, timed in milliseconds or (Graphite's) whole seconds, rounded down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stamps {
    None,
    Ms,
    Seconds,
}

/// The caller's test of a series by its stored metric name and tags: true keeps it.
pub type KeepSeries<'a> = dyn Fn(&str, &[(String, String)]) -> bool + 'a;

/// One selected series in its stored form.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSelected {
    pub metric: String,
    pub tags: Vec<(String, String)>,
    pub points: Vec<(i64, f64)>,
}
