//! Per-series work spread over the machine's cores: a path expression such as `*.*.cpu.*`
//! names thousands of series, each read and gridded on its own.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Below this many items the work runs on the calling thread (a thread costs more than it
/// saves on a handful of series).
pub const MIN_PARALLEL: usize = 64;

/// `f` over `items` (taken by value, so each item's memory can be freed as soon as it is
/// used), results in `items`' order. Workers take chunks in turn, so an uneven item (a metric
/// with many series) does not hold the others up.
pub fn map<T: Send, U: Send>(items: Vec<T>, f: impl Fn(T) -> U + Sync) -> Vec<U> {
    map_from(items, MIN_PARALLEL, f)
}

/// How many parts of comparable size to split work into: one per core.
pub fn cores() -> usize {
    tsgate_common::cores()
}

/// [`map`] for items that are each big enough to be worth a thread from `min` of them on.
pub fn map_from<T: Send, U: Send>(items: Vec<T>, min: usize, f: impl Fn(T) -> U + Sync) -> Vec<U> {
    let cores = cores();
    if cores <= 1 || items.len() < min.max(2) {
        return items.into_iter().map(f).collect();
    }
    let size = (items.len() / (cores * 8)).max(1);
    let chunks: Vec<Mutex<Vec<T>>> = chunked(items, size).into_iter().map(Mutex::new).collect();
    let next = AtomicUsize::new(0);
    let work = |_| {
        let mut mine = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(c) = chunks.get(i) else { break mine };
            let c = std::mem::take(&mut *c.lock());
            mine.push((i, c.into_iter().map(&f).collect::<Vec<U>>()));
        }
    };
    let mut parts: Vec<(usize, Vec<U>)> = tsgate_common::pool::on_workers(cores, work)
        .into_iter()
        .flatten()
        .collect();
    parts.sort_by_key(|p| p.0);
    parts.into_iter().flat_map(|p| p.1).collect()
}

/// `items` folded chunk by chunk: each chunk (a contiguous run of `items`) into a part of its
/// own, made by `new` and grown by `add` on whichever core took the chunk. The parts come back
/// in `items`' order, so a caller merging them in turn combines `items` in order (up to the
/// grouping of the chunks).
pub fn fold<T: Send, P: Send>(
    items: Vec<T>,
    new: impl Fn() -> P + Sync,
    add: impl Fn(&mut P, T) + Sync,
) -> Vec<P> {
    map_from(fold_chunks(items), 2, |chunk| {
        let mut part = new();
        for item in chunk {
            add(&mut part, item);
        }
        part
    })
}

/// `items` cut into the contiguous chunks [`fold`] folds, each into a part of its own: one
/// chunk below [`MIN_PARALLEL`] items (or on one core), else about eight per core.
pub fn fold_chunks<T>(items: Vec<T>) -> Vec<Vec<T>> {
    if cores() <= 1 || items.len() < MIN_PARALLEL {
        vec![items]
    } else {
        let size = items.len().div_ceil(cores() * 8);
        chunked(items, size)
    }
}

/// `items` cut into contiguous chunks of `size` (the last one shorter).
fn chunked<T>(items: Vec<T>, size: usize) -> Vec<Vec<T>> {
    let size = size.max(1);
    let mut out = Vec::new();
    let mut rest = items.into_iter();
    loop {
        let c: Vec<T> = rest.by_ref().take(size).collect();
        if c.is_empty() {
            break out;
        }
        out.push(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_order_at_every_size() {
        for n in [0, 1, MIN_PARALLEL - 1, MIN_PARALLEL, 1000, 10_007] {
            let items: Vec<usize> = (0..n).collect();
            assert_eq!(
                map(items.clone(), |x| x * 2),
                items.iter().map(|x| x * 2).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn fold_parts_come_in_order() {
        for n in [0, 1, MIN_PARALLEL - 1, MIN_PARALLEL, 1000, 10_007] {
            let items: Vec<usize> = (0..n).collect();
            let parts = fold(items.clone(), Vec::new, |p: &mut Vec<usize>, x| p.push(x));
            assert!(!parts.is_empty());
            assert_eq!(parts.concat(), items);
        }
    }
}
