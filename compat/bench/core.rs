//! Criterion benches of the core: the OpenTSDB schema codec (row keys, qualifiers/values,
//! compaction of a 1-hour row), the series and UID caches over the embedded store, WAL
//! appends, and the embedded store's cell codec (encode, decode to bytes or to points).
//! Series are gen.py's fleet (`cpu.usage_*` with dc, host, rack; a point every 10 s).
//! cargo bench --bench core [-- FILTER]

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use std::hint::black_box;
use std::sync::Arc;
use tsgate::schema::column::build_column;
use tsgate::schema::compaction::{append_ordered, plan_compaction, StoredColumn};
use tsgate::schema::uid_table::UidKind;
use tsgate::schema::{DataValue, KeyLayout, RawPoint};
use tsgate::series::SeriesResolver;
use tsgate::store::embedded::EmbeddedStore;
use tsgate::store::{RowMutations, Scan, Store, TableNames};
use tsgate::uid::UidCore;
use tsgate::write::wal::{retire_upto, Wal};

const METRICS: [&str; 10] = [
    "usage_user",
    "usage_system",
    "usage_idle",
    "usage_nice",
    "usage_iowait",
    "usage_irq",
    "usage_softirq",
    "usage_steal",
    "usage_guest",
    "usage_guest_nice",
];
const BASE: u32 = 1_699_999_200; // an hour boundary, gen.py's START

/// xorshift: fixed values without a rand dependency.
fn rng(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// Metric and tags of fleet series `i` (10 metrics per host).
fn series(i: usize) -> (String, [(String, String); 3]) {
    let h = i / METRICS.len();
    (
        format!("cpu.{}", METRICS[i % METRICS.len()]),
        [
            ("dc".into(), format!("dc{}", h % 3)),
            ("host".into(), format!("host_{h}")),
            ("rack".into(), format!("rack{}", h % 40)),
        ],
    )
}

fn tags_ref(t: &[(String, String); 3]) -> [(&str, &str); 3] {
    [(&t[0].0, &t[0].1), (&t[1].0, &t[1].1), (&t[2].0, &t[2].1)]
}

/// A UID core over a fresh embedded store; the tempdir must outlive it.
fn uid_core() -> (tempfile::TempDir, Arc<UidCore>) {
    let d = tempfile::tempdir().unwrap();
    let store = Arc::new(EmbeddedStore::open(d.path(), &TableNames::default().specs()).unwrap());
    (
        d,
        Arc::new(UidCore::new(
            store,
            "tsdb-uid".into(),
            [3, 3, 3],
            [true, true, true],
        )),
    )
}

/// TSUIDs shaped as the fleet's: metric uid + 3 tag pairs, 3-byte uids.
fn tsuid(i: usize) -> Vec<u8> {
    let h = (i / 10) as u32;
    let uid = |n: u32| n.to_be_bytes()[1..].to_vec();
    [
        uid(1 + (i % 10) as u32),
        uid(1),
        uid(1 + h % 3),
        uid(2),
        uid(4 + h),
        uid(3),
        uid(1004 + h % 40),
    ]
    .concat()
}

fn bench_schema(c: &mut Criterion) {
    let layout = KeyLayout::default();
    let tsuids: Vec<Vec<u8>> = (0..10_000).map(tsuid).collect();
    let keys: Vec<Vec<u8>> = tsuids.iter().map(|t| layout.row_key(t, BASE)).collect();
    let mut g = c.benchmark_group("schema");
    g.throughput(Throughput::Elements(tsuids.len() as u64));
    g.bench_function("row_key_encode", |b| {
        b.iter(|| {
            tsuids
                .iter()
                .map(|t| layout.row_key(black_box(t), BASE).len())
                .sum::<usize>()
        })
    });
    g.bench_function("row_key_decode", |b| {
        b.iter(|| {
            keys.iter()
                .map(|k| {
                    let r = layout.parse(black_box(k)).unwrap();
                    r.base as usize + r.tag_pairs().count()
                })
                .sum::<usize>()
        })
    });
    // gen.py's values: 2-decimal gauges (stored as 4-byte floats) and integers.
    let mut x = 42;
    let values: Vec<(u64, DataValue)> = (0..10_000)
        .map(|i| {
            let v = (rng(&mut x) % 10_000) as f64 / 100.0;
            (
                BASE as u64 + (i % 360) * 10,
                if i % 2 == 0 {
                    DataValue::F32(v as f32)
                } else {
                    DataValue::Int(v as i64)
                },
            )
        })
        .collect();
    g.bench_function("qualifier_value_encode", |b| {
        b.iter(|| {
            values
                .iter()
                .map(|&(ts, v)| {
                    RawPoint::encode(black_box(ts), BASE, v)
                        .unwrap()
                        .qualifier()
                        .len()
                })
                .sum::<usize>()
        })
    });
    g.finish();

    // Compaction of one 1-hour row (360 points at 10 s), from the two shapes a row has before
    // compaction: one cell per point (OpenTSDB's writers) and tsgate's flushes (a partially
    // compacted column per flush; here 6 of 60 points).
    let pts: Vec<RawPoint> = (0..360u64)
        .map(|k| {
            RawPoint::encode(
                BASE as u64 + k * 10,
                BASE,
                DataValue::F32((rng(&mut x) % 10_000) as f32 / 100.0),
            )
            .unwrap()
        })
        .collect();
    let singles: Vec<(Vec<u8>, Vec<u8>)> = pts
        .iter()
        .map(|p| (p.qualifier().to_vec(), p.value_bytes().to_vec()))
        .collect();
    let partials: Vec<(Vec<u8>, Vec<u8>)> = pts.chunks(60).map(build_column).collect();
    let mut g = c.benchmark_group("schema");
    g.throughput(Throughput::Elements(pts.len() as u64));
    for (name, cells) in [
        ("compact_1h_row_from_360_cells", &singles),
        ("compact_1h_row_from_6_flushes", &partials),
    ] {
        let cols: Vec<StoredColumn> = cells
            .iter()
            .enumerate()
            .map(|(i, (q, v))| StoredColumn {
                qualifier: q,
                value: v,
                ts: i as u64 + 1,
            })
            .collect();
        g.bench_function(name, |b| {
            b.iter(|| {
                plan_compaction(black_box(&cols))
                    .unwrap()
                    .unwrap()
                    .put
                    .unwrap()
                    .0
                    .len()
            })
        });
    }
    // Reading a compacted 1-hour row back, gen.py's mix: 4-byte floats and integers of 1 to
    // 4 bytes (what every query does per row).
    let mixed: Vec<RawPoint> = (0..360u64)
        .map(|k| {
            let r = rng(&mut x) % 10_000;
            let v = if k % 2 == 0 {
                DataValue::F32(r as f32 / 100.0)
            } else {
                DataValue::Int((r * r * (k % 7)) as i64)
            };
            RawPoint::encode(BASE as u64 + k * 10, BASE, v).unwrap()
        })
        .collect();
    let (q, v) = build_column(&mixed);
    let col = [StoredColumn {
        qualifier: &q,
        value: &v,
        ts: 1,
    }];
    let mut out = Vec::new();
    let (from, to) = (BASE as u64 * 1000, BASE as u64 * 1000 + 3_600_000);
    g.bench_function("read_1h_compacted_row", |b| {
        b.iter(|| {
            out.clear();
            assert!(append_ordered(black_box(&col), BASE, from, to, &mut out));
            out.len()
        })
    });
    g.finish();
}

fn bench_caches(c: &mut Criterion) {
    let n = 10_000;
    let all: Vec<_> = (0..n).map(series).collect();
    let (_d, uids) = uid_core();
    let resolver = SeriesResolver::new(uids.clone());
    for (m, t) in &all {
        resolver.resolve(m, &tags_ref(t)).unwrap();
    }
    let mut g = c.benchmark_group("cache");
    g.throughput(Throughput::Elements(n as u64));
    // What every point of a known series costs on the write path.
    g.bench_function("series_cache_hit", |b| {
        b.iter(|| {
            all.iter()
                .map(|(m, t)| resolver.resolve(black_box(m), &tags_ref(t)).unwrap().hash)
                .fold(0, u64::wrapping_add)
        })
    });
    // A Graphite path or telnet line seen before: the raw-text memo in front of it.
    let texts: Vec<Vec<u8>> = (0..n)
        .map(|i| format!("gdc{}.host_{}.cpu.usage_{}", i % 3, i / 10, i % 10).into_bytes())
        .collect();
    for (text, (m, t)) in texts.iter().zip(&all) {
        resolver.remember_raw(text, resolver.resolve(m, &tags_ref(t)).unwrap());
    }
    // As the listeners read it: one reader per batch.
    g.bench_function("raw_memo_hit", |b| {
        b.iter(|| {
            let memo = resolver.raw_reader();
            texts
                .iter()
                .map(|t| memo.get(black_box(t)).unwrap().hash)
                .fold(0, u64::wrapping_add)
        })
    });
    let hosts: Vec<String> = (0..n / 10).map(|h| format!("host_{h}")).collect();
    g.throughput(Throughput::Elements(hosts.len() as u64));
    g.bench_function("uid_cache_hit", |b| {
        b.iter(|| {
            hosts
                .iter()
                .map(|h| {
                    uids.get_id(UidKind::Tagv, black_box(h))
                        .unwrap()
                        .unwrap()
                        .len()
                })
                .sum::<usize>()
        })
    });
    // A miss on a name the store has (after a restart or dropcaches): one store read each.
    g.bench_function("uid_cache_miss_read", |b| {
        b.iter_batched(
            || uids.drop_caches(),
            |_| {
                hosts
                    .iter()
                    .map(|h| uids.get_id(UidKind::Tagv, h).unwrap().unwrap().len())
                    .sum::<usize>()
            },
            BatchSize::PerIteration,
        )
    });
    // A name never seen: OpenTSDB's assignment (counter increment, two check-and-puts).
    let mut next = 0u64;
    g.throughput(Throughput::Elements(100));
    g.bench_function("uid_assign_new", |b| {
        b.iter(|| {
            for _ in 0..100 {
                next += 1;
                uids.get_or_create(UidKind::Tagv, &format!("new_{next}"))
                    .unwrap();
            }
        })
    });
    g.finish();
}

fn bench_wal(c: &mut Criterion) {
    let d = tempfile::tempdir().unwrap();
    let tsuids: Vec<Vec<u8>> = (0..10_000).map(tsuid).collect();
    let mut x = 7;
    let pts: Vec<RawPoint> = (0..10_000)
        .map(|_| {
            RawPoint::encode(
                BASE as u64 + 10,
                BASE,
                DataValue::F32((rng(&mut x) % 10_000) as f32 / 100.0),
            )
            .unwrap()
        })
        .collect();
    let mut g = c.benchmark_group("wal");
    g.throughput(Throughput::Elements(pts.len() as u64));
    for (name, fsync) in [
        ("append_10000_no_fsync", false),
        ("append_10000_fsync", true),
    ] {
        let mut wal = Wal::open(&d.path().join(name), fsync).unwrap();
        let mut commits = 0u32;
        g.bench_function(name, |b| {
            b.iter(|| {
                // one record of 10,000 points, as a shard's group commit writes it
                wal.begin();
                for (t, p) in tsuids.iter().zip(&pts) {
                    wal.push(t, BASE, p);
                }
                wal.end();
                let n = wal.commit().unwrap();
                // keep the tempdir small: start a new segment and drop the old ones now and then
                commits += 1;
                if commits.is_multiple_of(256) {
                    let sealed = wal.rotate().unwrap();
                    retire_upto(&d.path().join(name), sealed).unwrap();
                }
                n
            })
        });
    }
    g.finish();
}

/// Reading stored rows back: 1,000 series of a 10,000-series hour, each an hour's compacted
/// column (360 points of 8-byte floats), one range per series as a Graphite path stored whole
/// is read. Rows returned (`scan`, each copied out) against rows lent (`scan_rows`).
fn bench_store(c: &mut Criterion) {
    let d = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(d.path(), &TableNames::default().specs()).unwrap();
    let layout = KeyLayout::default();
    let points: Vec<RawPoint> = (0..360u64)
        .map(|k| {
            RawPoint::encode(BASE as u64 + k * 10, BASE, DataValue::F64(k as f64 * 0.37)).unwrap()
        })
        .collect();
    let (q, v) = build_column(&points);
    let rows: Vec<Vec<u8>> = (0..10_000)
        .map(|i| layout.row_key(&tsuid(i), BASE))
        .collect();
    for chunk in rows.chunks(1000) {
        store
            .mutate(
                "tsdb",
                chunk
                    .iter()
                    .map(|r| RowMutations::put(r.clone(), b"t", q.clone(), v.clone()))
                    .collect(),
            )
            .unwrap();
    }
    // One sorted run, as a tidied or reopened store holds settled hours.
    store.close().unwrap();
    // Every tenth row: one metric of each host.
    let scans: Vec<Scan> = rows
        .iter()
        .step_by(10)
        .map(|r| Scan {
            start: r.clone(),
            stop: [&r[..], &[0][..]].concat(),
            families: vec![b"t".to_vec()],
            ..Default::default()
        })
        .collect();
    let mut g = c.benchmark_group("store");
    g.throughput(Throughput::Elements(scans.len() as u64));
    g.bench_function("scan_1000_rows_copied", |b| {
        b.iter(|| {
            let mut n = 0;
            for s in &scans {
                for row in store.scan("tsdb", black_box(s)).unwrap() {
                    n += row.unwrap().cells[0].value.len();
                }
            }
            n
        })
    });
    g.bench_function("scan_1000_rows_lent", |b| {
        b.iter(|| {
            let mut n = 0;
            for s in &scans {
                store
                    .scan_rows("tsdb", black_box(s), &mut |_, cells| {
                        n += cells[0].value.len();
                        Ok(true)
                    })
                    .unwrap();
            }
            n
        })
    });
    g.finish();
}

/// The embedded store's cell codec on one compacted hour (360 points every 10 s): gen.py's
/// 2-decimal gauge (a random walk, stored as 4-byte floats: the decimal mode), and floats that
/// are no short decimals (the XOR mode). Decoded to the column's bytes (what scans and
/// HBase-compatible reads get), those bytes walked to points (a query's read before points
/// were lent), and straight to points (a query's read now).
fn bench_cellcodec(c: &mut Criterion) {
    use tsgate::schema::column::walk_compacted;
    use tsgate::store::embedded::cellcodec;
    let column = |value: &dyn Fn(u64) -> DataValue| {
        let pts: Vec<RawPoint> = (0..360u64)
            .map(|i| RawPoint::encode(BASE as u64 + i * 10, BASE, value(i)).unwrap())
            .collect();
        build_column(&pts)
    };
    let mut x = 42;
    let mut walk = 5_000i64;
    let gauge: Vec<f32> = (0..360)
        .map(|_| {
            walk = (walk + (rng(&mut x) % 401) as i64 - 200).clamp(0, 10_000);
            walk as f32 / 100.0
        })
        .collect();
    let columns = [
        ("decimal", column(&|i| DataValue::F32(gauge[i as usize]))),
        ("xor", column(&|i| DataValue::F64((i as f64 + 0.5).sqrt()))),
    ];
    let mut g = c.benchmark_group("cellcodec");
    g.throughput(Throughput::Elements(360));
    for (name, (q, v)) in &columns {
        let mut enc = Vec::new();
        assert!(cellcodec::encode(q, v, &mut enc), "{name} encodes");
        g.bench_function(format!("encode_{name}"), |b| {
            b.iter(|| {
                let mut out = Vec::with_capacity(enc.len());
                cellcodec::encode(black_box(q), black_box(v), &mut out);
                out.len()
            })
        });
        let (mut dq, mut dv) = (Vec::new(), Vec::new());
        g.bench_function(format!("decode_bytes_{name}"), |b| {
            b.iter(|| {
                cellcodec::decode(black_box(&enc), &mut dq, &mut dv).unwrap();
                dq.len() + dv.len()
            })
        });
        g.bench_function(format!("decode_bytes_walk_{name}"), |b| {
            b.iter(|| {
                cellcodec::decode(black_box(&enc), &mut dq, &mut dv).unwrap();
                let mut sum = 0.0;
                walk_compacted(&dq, &dv, |off, v| {
                    sum += off as f64 + v.as_f64();
                    true
                });
                sum
            })
        });
        let mut pts = Vec::new();
        g.bench_function(format!("decode_points_{name}"), |b| {
            b.iter(|| {
                pts.clear();
                cellcodec::decode_points(black_box(&enc), &mut pts).unwrap();
                pts.iter()
                    .map(|&(off, v)| off as f64 + v.as_f64())
                    .sum::<f64>()
            })
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    bench_schema,
    bench_caches,
    bench_wal,
    bench_store,
    bench_cellcodec
);
criterion_main!(benches);
