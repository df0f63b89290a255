//! Pushing required tag pairs into a `tsdb` scan: as a row-key regex (every store applies it),
//! and as a skip-scan seeker (stores that seek cheaply use it to jump from one candidate row to
//! the next instead of reading the rows between; a one-series query then reads a handful of
//! rows per hour, not every series of the metric).

use std::collections::BTreeMap;
use std::sync::Arc;
use tsgate_schema::KeyLayout;
use tsgate_store::{RowSeek, RowSeeker};

/// Tag key UID → the value UIDs it must have (`None`: any value, but present).
pub type RequiredPairs = BTreeMap<Vec<u8>, AllowedValues>;

/// The value UIDs a required tag key may have (`None`: any value, but present).
pub type AllowedValues = Option<Vec<Vec<u8>>>;

/// The scan filters for some required tag pairs; both empty when nothing is required.
#[derive(Debug, Clone, Default)]
pub struct RowFilter {
    pub regex: Option<String>,
    pub seek: Option<RowSeeker>,
    /// Some tag must have one of a few given values: few rows to read, not worth sharing
    /// among threads.
    pub narrow: bool,
}

impl RowFilter {
    pub fn for_pairs(layout: &KeyLayout, required: RequiredPairs) -> RowFilter {
        let narrow = required.values().any(|v| v.is_some());
        let regex = super::tag_pair_regex(layout, required.clone());
        let seek = (!required.is_empty()).then(|| {
            let s = PairSeeker::new(layout, required);
            RowSeeker(Arc::new(move |row: &[u8]| s.judge(row)))
        });
        RowFilter {
            regex,
            seek,
            narrow,
        }
    }

    /// This filter narrowed to one of `parts` disjoint shares of the series (by a hash of the
    /// row's tags, so all rows of a series fall in one share): readers of one metric on
    /// several cores each take a share. Only for stores that seek (others ignore seekers).
    pub fn share(&self, layout: &KeyLayout, part: usize, parts: usize) -> RowFilter {
        if parts <= 1 {
            return self.clone();
        }
        let head = layout.head_width();
        let inner = self.seek.clone();
        let seek = RowSeeker(Arc::new(move |row: &[u8]| {
            let verdict = inner.as_ref().map_or(RowSeek::Take, |s| (s.0)(row));
            if verdict != RowSeek::Take {
                return verdict;
            }
            match tags_share(row.get(head..).unwrap_or_default(), parts) == part {
                true => RowSeek::Take,
                false => RowSeek::Skip,
            }
        }));
        RowFilter {
            regex: self.regex.clone(),
            seek: Some(seek),
            narrow: self.narrow,
        }
    }
}

/// A row's tag bytes reduced to a share number.
pub(crate) fn tags_share(tags: &[u8], parts: usize) -> usize {
    (fnv1a(tags) % parts as u64) as usize
}

/// FNV-1a: key bytes are short, and any spread will do.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Judges a row key against required tag pairs, and says where the next candidate row is.
/// Row keys are `[salt][metric][base]` then tag pairs sorted by tag key UID, so among rows
/// sharing the bytes before some pair, that pair's key only grows: once it passes a required
/// key, or its value passes every allowed value, no row with that prefix can match.
pub struct PairSeeker {
    head: usize,
    kw: usize,
    pair: usize,
    /// Sorted by key; allowed values sorted.
    required: Vec<(Vec<u8>, AllowedValues)>,
}

impl PairSeeker {
    pub fn new(layout: &KeyLayout, required: RequiredPairs) -> PairSeeker {
        let required = required
            .into_iter()
            .map(|(k, vs)| {
                (
                    k,
                    vs.map(|mut v| {
                        v.sort();
                        v.dedup();
                        v
                    }),
                )
            })
            .collect();
        PairSeeker {
            head: layout.head_width(),
            kw: layout.tagk_width,
            pair: layout.tag_width(),
            required,
        }
    }

    pub fn judge(&self, row: &[u8]) -> RowSeek {
        if row.len() < self.head || !(row.len() - self.head).is_multiple_of(self.pair) {
            // Not a data row key (the regex's `^.{head}(?:.{pair})*$` rejects it too).
            return RowSeek::Skip;
        }
        let mut want = self.required.iter().peekable();
        for start in (self.head..row.len()).step_by(self.pair) {
            let k = &row[start..start + self.kw];
            let v = &row[start + self.kw..start + self.pair];
            let Some((rk, allowed)) = want.peek() else {
                return RowSeek::Take;
            };
            if rk.as_slice() < k {
                // A required key sorts before this pair's and the row lacks it: so does every
                // row sharing the bytes before this pair.
                return past(&row[..start]);
            }
            if rk.as_slice() > k {
                continue;
            }
            match allowed {
                None => {}
                Some(vals) => match vals.binary_search_by(|a| a.as_slice().cmp(v)) {
                    Ok(_) => {}
                    Err(i) => {
                        return match vals.get(i) {
                            // The next allowed value of this key, same prefix.
                            Some(a) => {
                                let mut to = row[..start + self.kw].to_vec();
                                to.extend_from_slice(a);
                                RowSeek::SeekTo(to)
                            }
                            None => past(&row[..start + self.kw]),
                        };
                    }
                },
            }
            want.next();
        }
        if want.peek().is_none() {
            RowSeek::Take
        } else {
            // A longer row with this prefix may still carry the missing keys.
            RowSeek::Skip
        }
    }
}

/// The first key after every key that starts with `prefix`.
fn past(prefix: &[u8]) -> RowSeek {
    let mut to = prefix.to_vec();
    while let Some(last) = to.pop() {
        if last < 0xFF {
            to.push(last + 1);
            return RowSeek::SeekTo(to);
        }
    }
    RowSeek::Done
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn layout() -> KeyLayout {
        KeyLayout {
            metric_width: 1,
            tagk_width: 1,
            tagv_width: 1,
            salt_width: 0,
            salt_buckets: 1,
        }
    }

    /// A row: metric, base (4 bytes), then pairs with strictly increasing keys.
    fn row(metric: u8, base: u8, pairs: &[(u8, u8)]) -> Vec<u8> {
        let mut r = vec![metric, 0, 0, 0, base];
        for (k, v) in pairs {
            r.extend_from_slice(&[*k, *v]);
        }
        r
    }

    /// The rows a seeking store returns: walk the sorted rows, jumping where the seeker says.
    fn skip_scan(
        rows: &std::collections::BTreeSet<Vec<u8>>,
        s: &PairSeeker,
    ) -> (Vec<Vec<u8>>, usize) {
        seek_scan(rows, &|r| s.judge(r))
    }

    fn seek_scan(
        rows: &std::collections::BTreeSet<Vec<u8>>,
        judge: &dyn Fn(&[u8]) -> RowSeek,
    ) -> (Vec<Vec<u8>>, usize) {
        let (mut out, mut seeks) = (Vec::new(), 0);
        let mut it = rows.range::<Vec<u8>, _>(..);
        while let Some(r) = it.next() {
            match judge(r) {
                RowSeek::Take => out.push(r.clone()),
                RowSeek::Skip => {}
                RowSeek::Done => break,
                RowSeek::SeekTo(to) => {
                    assert!(to > *r, "a seek must move forward");
                    seeks += 1;
                    it = rows.range(to..);
                }
            }
        }
        (out, seeks)
    }

    fn matches(row: &[u8], req: &RequiredPairs) -> bool {
        let pairs: Vec<(u8, u8)> = row[5..].chunks(2).map(|p| (p[0], p[1])).collect();
        req.iter().all(|(k, vs)| {
            pairs.iter().any(|(pk, pv)| {
                *pk == k[0] && vs.as_ref().is_none_or(|vs| vs.iter().any(|v| v[0] == *pv))
            })
        })
    }

    proptest! {
        /// The skip scan returns exactly the rows a full scan filtered row by row keeps.
        #[test]
        fn skip_scan_keeps_exactly_the_matching_rows(
            series in proptest::collection::vec(proptest::collection::btree_map(0u8..6, prop_oneof![Just(0u8), Just(1), Just(2), Just(0xFF), any::<u8>()], 0..5), 0..60),
            bases in proptest::collection::vec(prop_oneof![Just(0u8), Just(1), Just(0xFF)], 1..3),
            req in proptest::collection::btree_map(0u8..6, proptest::option::of(proptest::collection::vec(prop_oneof![Just(0u8), Just(1), Just(2), Just(0xFF), any::<u8>()], 1..4)), 1..3),
        ) {
            let mut rows = std::collections::BTreeSet::new();
            for b in &bases {
                for pairs in &series {
                    let p: Vec<(u8, u8)> = pairs.iter().map(|(k, v)| (*k, *v)).collect();
                    rows.insert(row(7, *b, &p));
                }
            }
            let req: RequiredPairs = req.into_iter().map(|(k, vs)| (vec![k], vs.map(|vs| vs.into_iter().map(|v| vec![v]).collect()))).collect();
            let s = PairSeeker::new(&layout(), req.clone());
            let want: Vec<Vec<u8>> = rows.iter().filter(|r| matches(r, &req)).cloned().collect();
            let (got, _) = skip_scan(&rows, &s);
            prop_assert_eq!(&got, &want);
            // A seeking store drops the regex: the seeker must take exactly what it accepts.
            let re = tsgate_store::embedded::compile_row_regex(&super::super::tag_pair_regex(&layout(), req.clone()).unwrap()).unwrap();
            for r in &rows {
                prop_assert_eq!(s.judge(r) == RowSeek::Take, re.is_match(r), "row {:?}", r);
            }
            for short in [&[7u8, 0, 0][..], &[7, 0, 0, 0, 0, 1]] {
                prop_assert_eq!(s.judge(short) == RowSeek::Take, re.is_match(short));
            }
        }
    }

    #[test]
    fn one_host_among_many_takes_a_few_seeks_per_hour() {
        // Rows sorted by dc (key 1) then host (key 2): host 0 lives in dc 0 only.
        let mut rows = std::collections::BTreeSet::new();
        for base in 0..2u8 {
            for host in 0..200u8 {
                rows.insert(row(7, base, &[(1, host % 3), (2, host)]));
            }
        }
        let req: RequiredPairs = [(vec![2], Some(vec![vec![0]]))].into_iter().collect();
        let (got, seeks) = skip_scan(&rows, &PairSeeker::new(&layout(), req));
        assert_eq!(
            got,
            vec![row(7, 0, &[(1, 0), (2, 0)]), row(7, 1, &[(1, 0), (2, 0)])]
        );
        assert!(seeks <= 8, "{seeks} seeks for 400 rows");
    }

    #[test]
    fn shares_partition_the_rows_and_keep_the_pair_filter() {
        let mut rows = std::collections::BTreeSet::new();
        for base in 0..3u8 {
            for host in 0..100u8 {
                rows.insert(row(7, base, &[(1, host % 3), (2, host)]));
            }
        }
        let req: RequiredPairs = [(vec![1], Some(vec![vec![1], vec![2]]))]
            .into_iter()
            .collect();
        let f = RowFilter::for_pairs(&layout(), req.clone());
        let all: Vec<Vec<u8>> = rows.iter().filter(|r| matches(r, &req)).cloned().collect();
        let judge = |f: &RowFilter, r: &[u8]| (f.seek.as_ref().unwrap().0)(r);
        let mut got: Vec<Vec<u8>> = Vec::new();
        for part in 0..3 {
            let share = f.share(&layout(), part, 3);
            let mine: Vec<Vec<u8>> = rows
                .iter()
                .filter(|r| judge(&share, r) == RowSeek::Take)
                .cloned()
                .collect();
            assert!(
                mine.len() > all.len() / 6,
                "share {part} holds {} of {} rows",
                mine.len(),
                all.len()
            );
            // Every hour's row of a series lands in the same share.
            for r in &mine {
                for base in 0..3u8 {
                    let mut other = r.clone();
                    other[4] = base;
                    assert_eq!(judge(&share, &other), RowSeek::Take);
                }
            }
            got.extend(mine);
        }
        got.sort();
        assert_eq!(got, all);
        let unfiltered = RowFilter::default().share(&layout(), 1, 2);
        assert!(
            rows.iter().any(|r| judge(&unfiltered, r) == RowSeek::Take)
                && rows.iter().any(|r| judge(&unfiltered, r) == RowSeek::Skip)
        );
    }

    #[test]
    fn past_carries_and_ends() {
        assert_eq!(past(&[1, 2]), RowSeek::SeekTo(vec![1, 3]));
        assert_eq!(past(&[1, 0xFF]), RowSeek::SeekTo(vec![2]));
        assert_eq!(past(&[0xFF, 0xFF]), RowSeek::Done);
    }
}
