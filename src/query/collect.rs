//! Series gathered from one metric's rows, whether read from the store or from the row
//! cache's hour entries: each series once however many rows and salts it spans, its tags
//! looked up by name once, kept or not by the caller's test, with its points in the window.

use super::select::{append_row, with_columns, Stamps, StoredSelected};
use super::{QueryEngine, QueryError};
use crate::schema::rowkey::RowKey;
use crate::schema::uid_table::UidKind;
use crate::store::CellRef;
use std::collections::HashMap;

pub(super) struct Collector<'a> {
    q: &'a QueryEngine,
    /// The window, ms.
    start: u64,
    end: u64,
    stamps: Stamps,
    keep: &'a dyn Fn(&str, &[(String, String)]) -> bool,
    /// Per TSUID: None = rejected, Some(i) = index in `found`.
    seen: HashMap<Vec<u8>, Option<usize>>,
    found: Vec<StoredSelected>,
    /// Per series in `found`: whether a row of it began before its points so far.
    unsorted: Vec<bool>,
    tsuid: Vec<u8>,
}

impl<'a> Collector<'a> {
    pub(super) fn new(q: &'a QueryEngine, start: u64, end: u64, stamps: Stamps, keep: &'a dyn Fn(&str, &[(String, String)]) -> bool) -> Collector<'a> {
        Collector { q, start, end, stamps, keep, seen: HashMap::new(), found: Vec::new(), unsorted: Vec::new(), tsuid: Vec::new() }
    }

    pub(super) fn stamps(&self) -> Stamps {
        self.stamps
    }

    /// The series of `metric` (named `name`) with tag bytes `tags`: where it is in `found`,
    /// or None when `keep` refused it.
    fn slot(&mut self, name: &str, metric: &[u8], tags: &[u8]) -> Result<Option<usize>, QueryError> {
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
            named.push((self.q.uids.get_name(UidKind::Tagk, k)?.into(), self.q.uids.get_name(UidKind::Tagv, v)?.into()));
        }
        let s = if (self.keep)(name, &named) {
            self.found.push(StoredSelected { metric: name.to_string(), tags: named, points: Vec::new() });
            self.unsorted.push(false);
            Some(self.found.len() - 1)
        } else {
            None
        };
        self.seen.insert(self.tsuid.clone(), s);
        Ok(s)
    }

    /// A row read from the store: its points in the window decoded from its cells.
    pub(super) fn cells(&mut self, name: &str, key: &[u8], rk: &RowKey, cells: &[CellRef]) -> Result<(), QueryError> {
        let Some(i) = self.slot(name, rk.metric, rk.tags)? else { return Ok(()) };
        if self.stamps == Stamps::None {
            return Ok(());
        }
        let (start, end) = (self.start, self.end);
        let pts = &mut self.found[i].points;
        // Each unit its own loop: seconds are made while the row's points are in cache
        // (a later pass over a thousand series' points found them evicted).
        self.unsorted[i] |= with_columns(cells, |cols| match self.stamps {
            Stamps::Seconds => append_row(key, cols, rk.base, start, end, pts, |ts| (ts / 1000) as i64),
            _ => append_row(key, cols, rk.base, start, end, pts, |ts| ts as i64),
        })?;
        Ok(())
    }

    /// A row as kept whole in the cache (points in ms): those in the window, timed as
    /// [`Collector::cells`] times them.
    pub(super) fn whole(&mut self, name: &str, metric: &[u8], tags: &[u8], points: &[(i64, f64)]) -> Result<(), QueryError> {
        let Some(i) = self.slot(name, metric, tags)? else { return Ok(()) };
        if self.stamps == Stamps::None {
            return Ok(());
        }
        let (start, end) = (self.start as i64, self.end as i64);
        let pts = &mut self.found[i].points;
        let (mark, before) = (pts.len(), pts.last().map(|p| p.0));
        // A row's points are in time order (its qualifiers are): the window is one run of them.
        // Mostly the whole row is: then its ends say so, where a search through a row not in the
        // processor's cache waited on memory at every step (most of this function's time).
        let (Some(first), Some(last)) = (points.first(), points.last()) else { return Ok(()) };
        let from = if first.0 >= start { 0 } else { points.partition_point(|p| p.0 < start) };
        let to = if last.0 <= end { points.len() } else { points.partition_point(|p| p.0 <= end) }.max(from);
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
        for (mut s, unsorted) in self.found.into_iter().zip(self.unsorted) {
            if self.stamps != Stamps::None {
                if s.points.is_empty() {
                    continue;
                }
                if unsorted {
                    s.points.sort_by_key(|p| p.0);
                }
            }
            out.push(s);
        }
    }
}
