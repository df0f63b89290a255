//! Behaviour every `Store` backend must share, written once and run against each backend by
//! the integration suite (`tests/store_conformance.rs`). Panics with a message on a mismatch.

use tsgate_store::{Cell, Mutation, Row, RowMutations, Scan, SharedStore};

pub const TABLE: &str = "tsdb-uid";

fn put(store: &SharedStore, row: &[u8], fam: &[u8], q: &[u8], v: &[u8]) {
    store
        .mutate(
            TABLE,
            vec![RowMutations::put(row.to_vec(), fam, q.to_vec(), v.to_vec())],
        )
        .expect("put");
}

/// The row keys `scan` returns, after checking that `scan_rows` lends the same rows and cells,
/// for the scan as given and for each family on its own (a store may lend one family's cells
/// by a path of its own).
fn keys(store: &SharedStore, scan: &Scan) -> Vec<Vec<u8>> {
    let rows = |scan: &Scan| -> Vec<Row> {
        store
            .scan(TABLE, scan)
            .expect("scan")
            .map(|r| r.expect("row"))
            .collect()
    };
    for family in [None, Some(&b"id"[..]), Some(&b"name"[..])] {
        let mut s = scan.clone();
        if let Some(f) = family {
            s.families = vec![f.to_vec()];
        }
        let mut lent = Vec::new();
        store
            .scan_rows(TABLE, &s, &mut |key, cells| {
                let cells = cells.iter().map(|&c| Cell::from(c)).collect();
                lent.push(Row {
                    key: key.to_vec(),
                    cells,
                });
                Ok(true)
            })
            .expect("scan_rows");
        assert_eq!(
            lent,
            rows(&s),
            "scan_rows lends what scan returns ({family:?})"
        );
        let mut keys = Vec::new();
        store
            .scan_keys(TABLE, &s, &mut |key| {
                keys.push(key.to_vec());
                Ok(true)
            })
            .expect("scan_keys");
        assert_eq!(
            keys,
            lent.iter().map(|r| r.key.clone()).collect::<Vec<_>>(),
            "scan_keys gives the keys of the rows scan_rows lends ({family:?})"
        );
    }
    rows(scan).into_iter().map(|r| r.key).collect()
}

/// Rows come back in HBase order (unsigned bytes, shorter prefix first), cells by family then
/// qualifier, and scans honour start/stop, families, regex and limit.
pub fn ordering_and_scans(store: &SharedStore) {
    let rows: [&[u8]; 7] = [
        b"b",
        b"a",
        b"ab",
        &[0x00],
        &[0x00, 0x00],
        &[0xff, 0x01],
        b"a\x00b",
    ];
    for r in rows {
        put(store, r, b"id", b"q2", b"v2");
        put(store, r, b"id", b"q1", b"v1");
        put(store, r, b"name", b"n", r);
    }
    let all = keys(store, &Scan::default());
    let mut want: Vec<Vec<u8>> = rows.iter().map(|r| r.to_vec()).collect();
    want.sort();
    assert_eq!(all, want, "rows in unsigned byte order");
    let row = store.get(TABLE, b"ab", &[]).expect("get");
    let cells: Vec<(Vec<u8>, Vec<u8>)> = row
        .iter()
        .map(|c| (c.family.clone(), c.qualifier.clone()))
        .collect();
    assert_eq!(
        cells,
        vec![
            (b"id".to_vec(), b"q1".to_vec()),
            (b"id".to_vec(), b"q2".to_vec()),
            (b"name".to_vec(), b"n".to_vec())
        ]
    );
    assert!(
        row.iter().all(|c| c.timestamp > 0),
        "cells carry timestamps"
    );
    assert_eq!(
        keys(
            store,
            &Scan {
                start: b"a".to_vec(),
                stop: b"b".to_vec(),
                ..Default::default()
            }
        ),
        vec![b"a".to_vec(), b"a\x00b".to_vec(), b"ab".to_vec()]
    );
    assert_eq!(
        keys(
            store,
            &Scan {
                start: b"ab".to_vec(),
                ..Default::default()
            }
        ),
        vec![b"ab".to_vec(), b"b".to_vec(), vec![0xff, 1]]
    );
    assert_eq!(
        keys(
            store,
            &Scan {
                limit: Some(2),
                ..Default::default()
            }
        )
        .len(),
        2
    );
    let mut seen = 0;
    store
        .scan_rows(TABLE, &Scan::default(), &mut |_, _| {
            seen += 1;
            Ok(seen < 3)
        })
        .expect("scan_rows");
    assert_eq!(seen, 3, "a visitor ends the scan by returning false");
    let only_name = store
        .scan(
            TABLE,
            &Scan {
                families: vec![b"name".to_vec()],
                ..Default::default()
            },
        )
        .expect("scan");
    for r in only_name {
        assert!(r.expect("row").cells.iter().all(|c| c.family == b"name"));
    }
    let re = Scan {
        row_regex: Some(r"^a.*$".into()),
        ..Default::default()
    };
    assert_eq!(
        keys(store, &re),
        vec![b"a".to_vec(), b"a\x00b".to_vec(), b"ab".to_vec()]
    );
    let bytes_re = Scan {
        row_regex: Some(r"^\xFF\x01$".into()),
        ..Default::default()
    };
    assert_eq!(
        keys(store, &bytes_re),
        vec![vec![0xff, 1]],
        "regexes match raw bytes"
    );
    assert!(
        store.get(TABLE, b"zz", &[]).expect("get").is_empty(),
        "a missing row is empty"
    );
}

/// Deletes remove single cells or whole rows; a batch applies in order.
pub fn deletes(store: &SharedStore) {
    put(store, b"del", b"id", b"a", b"1");
    put(store, b"del", b"id", b"b", b"2");
    put(store, b"del", b"name", b"c", b"3");
    store
        .mutate(
            TABLE,
            vec![RowMutations {
                row: b"del".to_vec(),
                mutations: vec![Mutation::Delete {
                    family: b"id".to_vec(),
                    qualifier: b"a".to_vec(),
                }],
            }],
        )
        .expect("delete");
    let left: Vec<Vec<u8>> = store
        .get(TABLE, b"del", &[])
        .expect("get")
        .into_iter()
        .map(|c| c.qualifier)
        .collect();
    assert_eq!(left, vec![b"b".to_vec(), b"c".to_vec()]);
    store
        .mutate(
            TABLE,
            vec![RowMutations {
                row: b"del".to_vec(),
                mutations: vec![Mutation::DeleteRow],
            }],
        )
        .expect("delete row");
    assert!(store.get(TABLE, b"del", &[]).expect("get").is_empty());
    // Put then delete of the same cell in one batch: the delete wins.
    store
        .mutate(
            TABLE,
            vec![RowMutations {
                row: b"pd".to_vec(),
                mutations: vec![
                    Mutation::Put {
                        family: b"id".to_vec(),
                        qualifier: b"x".to_vec(),
                        value: b"1".to_vec(),
                    },
                    Mutation::Delete {
                        family: b"id".to_vec(),
                        qualifier: b"x".to_vec(),
                    },
                ],
            }],
        )
        .expect("batch");
    assert!(store.get(TABLE, b"pd", &[]).expect("get").is_empty());
}

/// A single delete removes a cell put once, as often as the cell is put again and deleted
/// again, leaves the row's other cells, and in one batch with its put leaves the cell deleted.
pub fn single_deletes(store: &SharedStore) {
    let once = |q: &[u8]| Mutation::DeleteOnce {
        family: b"id".to_vec(),
        qualifier: q.to_vec(),
    };
    let qualifiers = |row: &[u8]| -> Vec<Vec<u8>> {
        let cells = store.get(TABLE, row, &[]).expect("get");
        cells.into_iter().map(|c| c.qualifier).collect()
    };
    put(store, b"sd", b"id", b"keep", b"k");
    for round in 0..3u8 {
        put(store, b"sd", b"id", b"gone", &[round]);
        assert_eq!(qualifiers(b"sd"), vec![b"gone".to_vec(), b"keep".to_vec()]);
        let rm = RowMutations {
            row: b"sd".to_vec(),
            mutations: vec![once(b"gone")],
        };
        store.mutate(TABLE, vec![rm]).expect("single delete");
        assert_eq!(qualifiers(b"sd"), vec![b"keep".to_vec()], "round {round}");
    }
    let rm = RowMutations {
        row: b"sdb".to_vec(),
        mutations: vec![
            Mutation::Put {
                family: b"id".to_vec(),
                qualifier: b"x".to_vec(),
                value: b"1".to_vec(),
            },
            once(b"x"),
        ],
    };
    store.mutate(TABLE, vec![rm]).expect("batch");
    assert!(qualifiers(b"sdb").is_empty());
}

/// Increment and compare-and-set are atomic under contention.
pub fn atomics(store: &SharedStore) {
    assert_eq!(
        store.increment(TABLE, b"ctr", b"id", b"n", 5).expect("inc"),
        5
    );
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let s = store.clone();
            std::thread::spawn(move || {
                (0..250)
                    .map(|_| s.increment(TABLE, b"ctr", b"id", b"n", 1).expect("inc"))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut seen: Vec<i64> = threads
        .into_iter()
        .flat_map(|t| t.join().expect("thread"))
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        (6..1006).collect::<Vec<_>>(),
        "every increment result is unique"
    );
    let v = store.get(TABLE, b"ctr", &[b"id"]).expect("get");
    assert_eq!(
        v[0].value,
        1005i64.to_be_bytes().to_vec(),
        "counters are 8-byte big-endian"
    );

    assert!(store
        .check_and_put(TABLE, b"cas", b"id", b"q", None, b"first")
        .expect("cas"));
    assert!(!store
        .check_and_put(TABLE, b"cas", b"id", b"q", None, b"second")
        .expect("cas"));
    assert!(!store
        .check_and_put(TABLE, b"cas", b"id", b"q", Some(b"nope"), b"third")
        .expect("cas"));
    assert!(store
        .check_and_put(TABLE, b"cas", b"id", b"q", Some(b"first"), b"fourth")
        .expect("cas"));
    assert_eq!(
        store.get(TABLE, b"cas", &[]).expect("get")[0].value,
        b"fourth"
    );
    let winners: usize = (0..8)
        .map(|i| {
            let s = store.clone();
            std::thread::spawn(move || {
                s.check_and_put(TABLE, b"race", b"id", b"q", None, &[i])
                    .expect("cas") as usize
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().expect("thread"))
        .sum();
    assert_eq!(winners, 1, "exactly one CAS from absent wins");
    store.flush().expect("flush");
}

/// `mutate_at`: puts land at the given timestamp unless a newer version exists; deletes
/// remove only versions written at or before it, so a value written after a read survives a
/// delete based on that read (what compaction relies on with several writers).
pub fn timestamped_mutations(store: &SharedStore) {
    put(store, b"tsr", b"id", b"old", b"1");
    put(store, b"tsr", b"id", b"hot", b"2");
    let read = store.get(TABLE, b"tsr", &[b"id"]).expect("get");
    let t = read.iter().map(|c| c.timestamp).max().expect("cells");
    // Another writer overwrites `hot` after the read, in a later millisecond.
    std::thread::sleep(std::time::Duration::from_millis(5));
    put(store, b"tsr", b"id", b"hot", b"3");
    let merged = Mutation::Put {
        family: b"id".to_vec(),
        qualifier: b"merged".to_vec(),
        value: b"12".to_vec(),
    };
    let at = |ms: Vec<Mutation>| {
        vec![RowMutations {
            row: b"tsr".to_vec(),
            mutations: ms,
        }]
    };
    store
        .mutate_at(TABLE, at(vec![merged]), t)
        .expect("put at ts");
    let deletes = [b"old".as_slice(), b"hot"]
        .iter()
        .map(|q| Mutation::Delete {
            family: b"id".to_vec(),
            qualifier: q.to_vec(),
        })
        .collect();
    store
        .mutate_at(TABLE, at(deletes), t)
        .expect("delete at ts");
    let after = store.get(TABLE, b"tsr", &[b"id"]).expect("get");
    let view: Vec<(&[u8], &[u8])> = after
        .iter()
        .map(|c| (c.qualifier.as_slice(), c.value.as_slice()))
        .collect();
    assert_eq!(
        view,
        vec![(b"hot".as_slice(), b"3".as_slice()), (b"merged", b"12")],
        "the newer write survives"
    );
    assert_eq!(after[1].timestamp, t, "the put carries the given timestamp");
    // A put older than the cell's current version does not replace it.
    let stale = Mutation::Put {
        family: b"id".to_vec(),
        qualifier: b"hot".to_vec(),
        value: b"stale".to_vec(),
    };
    store
        .mutate_at(TABLE, at(vec![stale]), t)
        .expect("stale put");
    assert_eq!(
        store.get(TABLE, b"tsr", &[b"id"]).expect("get")[0].value,
        b"3"
    );
}

/// `get_rows` answers several rows at once, one entry per row asked, empty for a missing row.
pub fn multi_get(store: &SharedStore) {
    put(store, b"mg1", b"id", b"a", b"1");
    put(store, b"mg2", b"name", b"b", b"2");
    put(store, b"mg2", b"id", b"c", b"3");
    let rows = store
        .get_rows(
            TABLE,
            &[b"mg2".to_vec(), b"nope".to_vec(), b"mg1".to_vec()],
            &[],
        )
        .expect("get_rows");
    let q = |cells: &Vec<tsgate_store::Cell>| {
        cells
            .iter()
            .map(|c| c.qualifier.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        rows.iter().map(q).collect::<Vec<_>>(),
        vec![
            vec![b"c".to_vec(), b"b".to_vec()],
            vec![],
            vec![b"a".to_vec()]
        ]
    );
    let only_id = store
        .get_rows(TABLE, &[b"mg2".to_vec()], &[b"id"])
        .expect("get_rows");
    assert_eq!(q(&only_id[0]), vec![b"c".to_vec()]);
}

/// A scan with a row seeker that agrees with its regex returns the same rows whether the store
/// seeks (jumping over rows, reopening its range, stopping early) or ignores the seeker.
pub fn seeking_scans(store: &SharedStore) {
    use tsgate_store::{RowSeek, RowSeeker};
    // Rows "s" + [a, b] for a < 20, b < 10, in both families; the wanted ones have b == 7.
    for a in 0..20u8 {
        for b in 0..10u8 {
            let row = vec![b's', a, b];
            put(store, &row, b"id", b"q", &[a, b]);
            put(store, &row, b"name", b"q", &[b]);
        }
    }
    let seeker = RowSeeker(std::sync::Arc::new(|row: &[u8]| match row {
        [b's', a, b] if *b < 7 => RowSeek::SeekTo(vec![b's', *a, 7]),
        [b's', _, 7] => RowSeek::Take,
        [b's', 19, _] => RowSeek::Done,
        [b's', a, _] => RowSeek::SeekTo(vec![b's', *a + 1]),
        _ => RowSeek::Skip,
    }));
    let scan = |start: &[u8], stop: &[u8], families: Vec<Vec<u8>>| Scan {
        start: start.to_vec(),
        stop: stop.to_vec(),
        families,
        row_regex: Some("^s.\\x07$".into()),
        seek: Some(seeker.clone()),
        ..Default::default()
    };
    let want = |from: u8, to: u8| (from..to).map(|a| vec![b's', a, 7]).collect::<Vec<_>>();
    assert_eq!(keys(store, &scan(b"s", b"t", vec![])), want(0, 20));
    assert_eq!(
        keys(store, &scan(b"s\x03\x08", b"s\x09", vec![b"id".to_vec()])),
        want(4, 9)
    );
    assert_eq!(
        keys(store, &scan(b"s\x05", b"s\x05\x07", vec![])),
        want(5, 5)
    );
    let rows: Vec<_> = store
        .scan(TABLE, &scan(b"s\x02", b"s\x04", vec![]))
        .expect("scan")
        .map(|r| r.expect("row"))
        .collect();
    assert!(
        rows.iter().all(|r| r.cells.len() == 2),
        "both families' cells of each row"
    );
    // Far jumps (past many rows) and near ones alike.
    let far = RowSeeker(std::sync::Arc::new(|row: &[u8]| match row {
        [b's', a, 7] if *a % 5 == 0 => RowSeek::Take,
        [b's', a, b] if *a % 5 == 0 && *b < 7 => RowSeek::SeekTo(vec![b's', *a, 7]),
        [b's', a, _] if *a >= 15 => RowSeek::Done,
        [b's', a, _] => RowSeek::SeekTo(vec![b's', (*a / 5 + 1) * 5]),
        _ => RowSeek::Skip,
    }));
    let s = Scan {
        start: b"s".to_vec(),
        stop: b"t".to_vec(),
        row_regex: Some("^s(?:\x00|\x05|\x0A|\x0F)\x07$".into()),
        seek: Some(far),
        ..Default::default()
    };
    assert_eq!(
        keys(store, &s),
        [0u8, 5, 10, 15]
            .iter()
            .map(|a| vec![b's', *a, 7])
            .collect::<Vec<_>>()
    );
}

/// Long qualifiers (a compacted column's is two bytes a point), some sharing a long prefix:
/// each is its own cell, cells come in qualifier order, and every operation finds them.
pub fn long_qualifiers(store: &SharedStore) {
    let q = |prefix: usize, tail: &[u8]| -> Vec<u8> { [vec![7u8; prefix], tail.to_vec()].concat() };
    // Out of order on purpose, and around any length a store might cut qualifiers at.
    let qs: Vec<Vec<u8>> = vec![
        q(40, &[1]),
        q(719, &[0]),
        q(40, &[0]),
        q(33, &[]),
        q(32, &[]),
        q(31, &[8]),
        q(40, &[0, 0]),
        q(64, &[]),
    ];
    for (i, x) in qs.iter().enumerate() {
        put(store, b"long", b"id", x, &[i as u8]);
    }
    put(store, b"long", b"name", &q(50, &[]), b"n");
    let mut want = qs.clone();
    want.sort();
    let cells = store.get(TABLE, b"long", &[b"id"]).expect("get");
    assert_eq!(
        cells
            .iter()
            .map(|c| c.qualifier.clone())
            .collect::<Vec<_>>(),
        want,
        "cells in qualifier order"
    );
    for c in &cells {
        let i = qs
            .iter()
            .position(|x| *x == c.qualifier)
            .expect("a put qualifier");
        assert_eq!(c.value, vec![i as u8], "each cell keeps its own value");
    }
    assert_eq!(
        keys(
            store,
            &Scan {
                start: b"long".to_vec(),
                stop: b"lonh".to_vec(),
                ..Default::default()
            }
        ),
        vec![b"long".to_vec()]
    );
    let row: Vec<Row> = store
        .scan(
            TABLE,
            &Scan {
                start: b"long".to_vec(),
                ..Default::default()
            },
        )
        .expect("scan")
        .map(|r| r.expect("row"))
        .collect();
    let id_cells: Vec<Vec<u8>> = row[0]
        .cells
        .iter()
        .filter(|c| c.family == b"id")
        .map(|c| c.qualifier.clone())
        .collect();
    assert_eq!(id_cells, want, "a scan's cells in qualifier order");
    // Overwrite, delete, compare-and-set and timestamped writes address one cell each.
    put(store, b"long", b"id", &qs[2], b"new");
    store
        .mutate(
            TABLE,
            vec![RowMutations {
                row: b"long".to_vec(),
                mutations: vec![Mutation::Delete {
                    family: b"id".to_vec(),
                    qualifier: qs[0].clone(),
                }],
            }],
        )
        .expect("delete");
    assert!(
        !store
            .check_and_put(TABLE, b"long", b"id", &qs[6], Some(b"\x02"), b"no")
            .expect("cas"),
        "compares its own cell, not a neighbour's"
    );
    assert!(store
        .check_and_put(TABLE, b"long", b"id", &qs[6], Some(b"\x06"), b"cas")
        .expect("cas"));
    assert!(
        !store
            .check_and_put(TABLE, b"long", b"id", &q(40, &[2]), Some(b"\x00"), b"no")
            .expect("cas"),
        "an absent long qualifier"
    );
    let ts = store
        .get(TABLE, b"long", &[b"id"])
        .expect("get")
        .iter()
        .map(|c| c.timestamp)
        .max()
        .expect("cells");
    let at = |ms: Vec<Mutation>| {
        vec![RowMutations {
            row: b"long".to_vec(),
            mutations: ms,
        }]
    };
    store
        .mutate_at(
            TABLE,
            at(vec![Mutation::Delete {
                family: b"id".to_vec(),
                qualifier: qs[1].clone(),
            }]),
            ts,
        )
        .expect("delete at ts");
    let got: Vec<(Vec<u8>, Vec<u8>)> = store
        .get(TABLE, b"long", &[b"id"])
        .expect("get")
        .into_iter()
        .map(|c| (c.qualifier, c.value))
        .collect();
    let mut left: Vec<(Vec<u8>, Vec<u8>)> = qs
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 0 && *i != 1)
        .map(|(i, x)| {
            (
                x.clone(),
                if i == 2 {
                    b"new".to_vec()
                } else if i == 6 {
                    b"cas".to_vec()
                } else {
                    vec![i as u8]
                },
            )
        })
        .collect();
    left.sort();
    assert_eq!(got, left);
    // A counter, a first compare-and-set and a timestamped put on long qualifiers that share
    // a prefix with cells already there: each touches its own cell only.
    assert_eq!(
        store
            .increment(TABLE, b"long", b"id", &q(40, &[9]), 3)
            .expect("inc"),
        3
    );
    assert_eq!(
        store
            .increment(TABLE, b"long", b"id", &q(40, &[9]), 4)
            .expect("inc"),
        7
    );
    assert!(store
        .check_and_put(TABLE, b"long", b"id", &q(40, &[3]), None, b"first")
        .expect("cas"));
    store
        .mutate_at(
            TABLE,
            at(vec![Mutation::Put {
                family: b"id".to_vec(),
                qualifier: q(40, &[4]),
                value: b"at".to_vec(),
            }]),
            ts,
        )
        .expect("put at ts");
    for (k, v) in [
        (q(40, &[9]), 7i64.to_be_bytes().to_vec()),
        (q(40, &[3]), b"first".to_vec()),
        (q(40, &[4]), b"at".to_vec()),
    ] {
        left.push((k, v));
    }
    left.sort();
    let got: Vec<(Vec<u8>, Vec<u8>)> = store
        .get(TABLE, b"long", &[b"id"])
        .expect("get")
        .into_iter()
        .map(|c| (c.qualifier, c.value))
        .collect();
    assert_eq!(got, left);
    store
        .mutate(
            TABLE,
            vec![RowMutations {
                row: b"long".to_vec(),
                mutations: vec![Mutation::DeleteRow],
            }],
        )
        .expect("delete row");
    assert!(
        store.get(TABLE, b"long", &[]).expect("get").is_empty(),
        "a row delete takes long qualifiers too"
    );
}

/// Compacted columns of every shape OpenTSDB writes (a decimal random walk, integers, floats
/// that are no short decimals, f32 and f64, milliseconds, seconds and milliseconds mixed, a
/// -0.0, a gap in the clock), and two that share their first bytes, come back byte for byte
/// and in qualifier order from every read: a store may keep them in any form it likes.
pub fn compacted_columns(store: &SharedStore) {
    use tsgate_schema::column::{build_column, RawPoint};
    use tsgate_schema::DataValue;
    let base = 1_699_999_200u32;
    let column = |pts: &[(u64, DataValue)]| {
        let pts: Vec<RawPoint> = pts
            .iter()
            .map(|&(ts, v)| RawPoint::encode(ts, base, v).expect("a point"))
            .collect();
        build_column(&pts)
    };
    let secs = |i: u64| base as u64 + i;
    let mut walk = 40.0f64;
    let shapes: Vec<Vec<(u64, DataValue)>> = vec![
        (0..360)
            .map(|i| {
                walk = (walk + ((i * 7919) % 401) as f64 / 100.0 - 2.0).clamp(0.0, 100.0);
                (secs(i * 10), DataValue::F64((walk * 100.0).round() / 100.0))
            })
            .collect(),
        (0..120)
            .map(|i| (secs(i * 30), DataValue::Int(1 << 40 | (i as i64 * 977))))
            .collect(),
        (0..100)
            .map(|i| (secs(i * 7), DataValue::F64((i as f64 + 0.5).ln())))
            .collect(),
        (0..60)
            .map(|i| (secs(i * 60), DataValue::F32(i as f32 * 0.25)))
            .collect(),
        (0..50)
            .map(|i| (secs(i) * 1000 + i * 13, DataValue::F64(i as f64 / 8.0)))
            .collect(),
        (0..40)
            .map(|i| match i < 20 {
                true => (secs(i), DataValue::Int(-(i as i64))),
                false => (secs(i) * 1000 + 5, DataValue::F64(0.1 * i as f64)),
            })
            .collect(),
        (0..30)
            .map(|i| (secs(i), DataValue::F64(if i == 3 { -0.0 } else { 2.5 })))
            .collect(),
        (0..80)
            .map(|i| {
                (
                    secs(if i < 40 { i } else { i + 900 }),
                    DataValue::Int(i as i64),
                )
            })
            .collect(),
    ];
    let mut cols: Vec<(Vec<u8>, Vec<u8>)> = shapes.iter().map(|p| column(p)).collect();
    // Past the first sixteen points the same as the walk's: shares its first 32 bytes.
    let mut twin = shapes[0].clone();
    twin[20].1 = DataValue::Int(7);
    cols.push(column(&twin));
    for (i, (q, v)) in cols.iter().enumerate() {
        put(store, &[b'c', i as u8 % 3], b"id", q, v);
    }
    type Cells = Vec<(Vec<u8>, Vec<u8>)>;
    let mut want: Vec<(Vec<u8>, Cells)> = (0..3u8)
        .map(|r| {
            let mut cells: Vec<_> = (0..cols.len())
                .filter(|i| *i as u8 % 3 == r)
                .map(|i| cols[i].clone())
                .collect();
            cells.sort();
            (vec![b'c', r], cells)
        })
        .collect();
    want.sort();
    let scan = Scan {
        start: b"c".to_vec(),
        stop: b"d".to_vec(),
        ..Default::default()
    };
    assert_eq!(
        keys(store, &scan).len(),
        3,
        "scan_rows lends what scan returns"
    );
    let rows: Vec<(Vec<u8>, Cells)> = store
        .scan(TABLE, &scan)
        .expect("scan")
        .map(|r| {
            let r = r.expect("row");
            let cells = r.cells.into_iter().map(|c| (c.qualifier, c.value));
            (r.key, cells.collect())
        })
        .collect();
    assert!(rows == want, "a scan gives back every column as written");
    for (row, cells) in &want {
        let got: Cells = store
            .get(TABLE, row, &[b"id"])
            .expect("get")
            .into_iter()
            .map(|c| (c.qualifier, c.value))
            .collect();
        assert!(got == *cells, "a get gives back every column as written");
    }
    // A compare-and-set compares against the bytes written.
    let (q, v) = &cols[1];
    assert!(store
        .check_and_put(TABLE, &[b'c', 1], b"id", q, Some(v), b"next")
        .expect("check_and_put"));
}

/// Scans restricted to qualifier prefixes (OpenTSDB's rollup reads: one aggregator id byte
/// each) return exactly the cells a full scan returns whose qualifier starts with one of them,
/// leave out rows with none, and count only returned rows toward a limit; alone and together
/// with a row regex, bounds and families. Rows are long enough (4 aggregators x 20 cells) that
/// a store seeking over the cells between prefixes does so.
pub fn qualifier_prefix_scans(store: &SharedStore) {
    let long = |tail: u8| -> Vec<u8> { [vec![5u8; 33], vec![tail; 7]].concat() };
    let mut batch = Vec::new();
    for a in 0..12u8 {
        let mut muts = Vec::new();
        let mut cell = |fam: &[u8], q: Vec<u8>, v: Vec<u8>| {
            muts.push(Mutation::Put {
                family: fam.to_vec(),
                qualifier: q,
                value: v,
            })
        };
        // Rows 3, 7 and 11 hold only aggregator 3's cells (and none of family name's 000000).
        let aggs: &[u8] = if a % 4 == 3 { &[3] } else { &[0, 1, 2, 3] };
        for &g in aggs {
            for i in 0..20u8 {
                cell(
                    b"id",
                    vec![g, i >> 4, ((i & 0x0F) << 4) | (a & 1)],
                    vec![a, g, i],
                );
            }
        }
        cell(b"id", vec![b'\''], vec![a]);
        cell(b"id", vec![0xFF, 0], vec![a]);
        cell(b"id", long(1), vec![a, 1]);
        cell(b"id", long(2), vec![a, 2]);
        if a % 4 != 3 {
            cell(b"name", vec![0, 0, 0], vec![a]);
        }
        cell(b"name", vec![2, 0, 0], vec![a]);
        batch.push(RowMutations {
            row: vec![b'p', a],
            mutations: muts,
        });
    }
    store.mutate(TABLE, batch).expect("mutate");
    let rows = |scan: &Scan| -> Vec<Row> {
        keys(store, scan);
        store
            .scan(TABLE, scan)
            .expect("scan")
            .map(|r| r.expect("row"))
            .collect()
    };
    let base = Scan {
        start: b"p".to_vec(),
        stop: b"q".to_vec(),
        ..Default::default()
    };
    let all = rows(&base);
    assert_eq!(all.len(), 12);
    let with = |prefixes: &[&[u8]], s: &Scan| Scan {
        qualifier_prefixes: prefixes.iter().map(|p| p.to_vec()).collect(),
        ..s.clone()
    };
    // What a full scan's rows hold of those prefixes, rows left with none dropped.
    let expect = |prefixes: &[&[u8]], full: &[Row]| -> Vec<Row> {
        let ps: Vec<Vec<u8>> = prefixes.iter().map(|p| p.to_vec()).collect();
        full.iter()
            .cloned()
            .filter_map(|mut r| tsgate_store::keep_qualifiers(&ps, &mut r).then_some(r))
            .collect()
    };
    let cases: &[&[&[u8]]] = &[
        &[&[0], &[1]],
        &[&[1], &[0]],
        &[&[3]],
        &[&[2]],
        &[&[0, 0, 0x51], &[0, 1]],
        &[&[0], &[0, 0]],
        &[b"'"],
        &[&[0xFF]],
        &[&[5; 33]],
        &[&[5; 34]],
        &[&[7]],
        &[&[]],
    ];
    for &prefixes in cases {
        assert_eq!(
            rows(&with(prefixes, &base)),
            expect(prefixes, &all),
            "prefixes {prefixes:02x?}"
        );
    }
    // Concrete counts, so that the comparison above cannot pass on two empty answers.
    let got = rows(&with(&[&[0], &[1]], &base));
    assert_eq!(got.len(), 9, "rows 3, 7 and 11 have no sum or count cell");
    assert!(
        got.iter().all(|r| r.cells.len() == 41),
        "20 + 20 + name's 000000"
    );
    assert_eq!(rows(&with(&[&[3]], &base)).len(), 12);
    assert!(rows(&with(&[&[7]], &base)).is_empty());
    let long_one = rows(&with(&[&long(2)[..35]], &base));
    assert!(long_one
        .iter()
        .all(|r| r.cells.len() == 1 && r.cells[0].qualifier == long(2)));
    assert_eq!(long_one.len(), 12);
    // With a row regex (odd rows), bounds, a family and a limit.
    let odd = Scan {
        row_regex: Some("^p[\\x01\\x03\\x05\\x07\\x09\\x0B]$".into()),
        ..base.clone()
    };
    assert_eq!(rows(&with(&[&[1]], &odd)), expect(&[&[1]], &rows(&odd)),);
    assert_eq!(rows(&with(&[&[1]], &odd)).len(), 3, "p01, p05, p09");
    let bounded = Scan {
        start: vec![b'p', 2],
        stop: vec![b'p', 9],
        families: vec![b"id".to_vec()],
        ..Default::default()
    };
    assert_eq!(
        rows(&with(&[&[2], &[0]], &bounded)),
        expect(&[&[2], &[0]], &rows(&bounded)),
    );
    let limited = Scan {
        limit: Some(4),
        ..base.clone()
    };
    let first4: Vec<Vec<u8>> = rows(&with(&[&[0]], &limited))
        .into_iter()
        .map(|r| r.key)
        .collect();
    assert_eq!(
        first4,
        [0u8, 1, 2, 4].map(|a| vec![b'p', a]),
        "a row with no passing cell does not count toward the limit"
    );
}
