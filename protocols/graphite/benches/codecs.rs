//! Graphite codecs: plaintext lines and pickle frames, on lines shaped like
//! `../shared/bench/gen.py`'s `graphite.txt` (`dc0.host_0.cpu.usage_user 62.04 1699999200`).
//! cargo bench -p tsgate-graphite

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use tsgate_graphite::{pickle, plaintext};

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
const START: u64 = 1699999200;

/// gen.py's points for one timestamp: `hosts` hosts × 10 metrics, values 0–100 with 2 decimals.
fn points(hosts: usize) -> Vec<(String, u64, f64)> {
    let mut x = 42u64; // xorshift: fixed values without a rand dependency
    let mut out = Vec::with_capacity(hosts * METRICS.len());
    for h in 0..hosts {
        for m in METRICS {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            out.push((
                format!("dc{}.host_{h}.cpu.{m}", h % 3),
                START,
                (x % 10_000) as f64 / 100.0,
            ));
        }
    }
    out
}

fn bench_plaintext(c: &mut Criterion) {
    let pts = points(1000);
    let text: String = pts
        .iter()
        .map(|(p, ts, v)| format!("{p} {v} {ts}\n"))
        .collect();
    let mut g = c.benchmark_group("graphite");
    g.throughput(Throughput::Elements(pts.len() as u64));
    g.bench_function("plaintext_parse_line", |b| {
        b.iter(|| {
            let mut sum = 0.0;
            for line in text.lines() {
                sum += plaintext::parse_line(black_box(line), 0)
                    .unwrap()
                    .unwrap()
                    .value;
            }
            sum
        })
    });
    g.finish();
}

/// A pickle as carbon-relay sends it, `pickle.dumps([(path, (ts, value)), …], protocol=2)`:
/// list, MARK, per item BINUNICODE path, BININT ts, BINFLOAT value, TUPLE2, TUPLE2; APPENDS.
/// (Python also memoises every object with BINPUT; the decoder handles both.)
fn pickle_frame(items: &[(String, u64, f64)]) -> Vec<u8> {
    let mut p = vec![0x80, 2, b']', b'('];
    for (path, ts, v) in items {
        p.push(b'X');
        p.extend_from_slice(&(path.len() as u32).to_le_bytes());
        p.extend_from_slice(path.as_bytes());
        p.push(b'J');
        p.extend_from_slice(&(*ts as i32).to_le_bytes());
        p.push(b'G');
        p.extend_from_slice(&v.to_be_bytes());
        p.extend_from_slice(&[0x86, 0x86]);
    }
    p.extend_from_slice(b"e.");
    p
}

fn bench_pickle(c: &mut Criterion) {
    // carbon-relay's MAX_DATAPOINTS_PER_MESSAGE is 500
    let pts = points(50);
    let frame = pickle_frame(&pts);
    assert_eq!(pickle::decode(&frame).unwrap().items.len(), pts.len());
    let mut g = c.benchmark_group("graphite");
    g.throughput(Throughput::Elements(pts.len() as u64));
    g.bench_function("pickle_decode_500", |b| {
        b.iter(|| pickle::decode(black_box(&frame)).unwrap().items.len())
    });
    g.finish();
}

criterion_group!(benches, bench_plaintext, bench_pickle);
criterion_main!(benches);
