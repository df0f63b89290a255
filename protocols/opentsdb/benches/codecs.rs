//! OpenTSDB codecs: telnet `put` lines, import lines and `/api/put` JSON, shaped like
//! `../shared/bench/gen.py`'s `telnet.txt` and `http-*.json` (cpu.* with dc, host, rack tags).
//! cargo bench -p tsgate-opentsdb

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use tsgate_opentsdb::{parse_body, parse_import_line, parse_line, Command, Limits};

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

/// `n` points of gen.py's fleet at one timestamp: (metric, ts, value, dc, host, rack).
fn points(n: usize) -> Vec<(String, u64, f64, String, String, String)> {
    let mut x = 42u64; // xorshift: fixed values without a rand dependency
    (0..n)
        .map(|i| {
            let h = i / METRICS.len();
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = (x % 10_000) as f64 / 100.0;
            (
                format!("cpu.{}", METRICS[i % METRICS.len()]),
                START,
                v,
                format!("dc{}", h % 3),
                format!("host_{h}"),
                format!("rack{}", h % 40),
            )
        })
        .collect()
}

fn bench_lines(c: &mut Criterion) {
    let pts = points(10_000);
    let limits = Limits::default();
    let puts: String = pts
        .iter()
        .map(|(m, ts, v, dc, h, r)| format!("put {m} {ts} {v} dc={dc} host={h} rack={r}\n"))
        .collect();
    let imports: String = pts
        .iter()
        .map(|(m, ts, v, dc, h, r)| format!("{m} {ts} {v} dc={dc} host={h} rack={r}\n"))
        .collect();
    let mut g = c.benchmark_group("opentsdb");
    g.throughput(Throughput::Elements(pts.len() as u64));
    g.bench_function("telnet_put_line", |b| {
        b.iter(|| {
            let mut n = 0;
            for line in puts.lines() {
                if let Command::Put(p) = parse_line(black_box(line), &limits).unwrap() {
                    n += p.tags.len();
                }
            }
            n
        })
    });
    g.bench_function("import_line", |b| {
        b.iter(|| {
            imports
                .lines()
                .map(|l| parse_import_line(black_box(l), &limits).unwrap().tags.len())
                .sum::<usize>()
        })
    });
    g.finish();
}

fn bench_json(c: &mut Criterion) {
    // gen.py writes /api/put arrays of 5,000 points
    let pts = points(5_000);
    let items: Vec<String> = pts
        .iter()
        .map(|(m, ts, v, dc, h, r)| format!(r#"{{"metric": "{m}", "timestamp": {ts}, "value": {v}, "tags": {{"dc": "{dc}", "host": "{h}", "rack": "{r}"}}}}"#))
        .collect();
    let body = format!("[{}]", items.join(", "));
    let limits = Limits::default();
    let mut g = c.benchmark_group("opentsdb");
    g.throughput(Throughput::Elements(pts.len() as u64));
    // What the server does with a body: parse it, then validate each point into a DataPoint.
    g.bench_function("api_put_json_5000", |b| {
        b.iter(|| {
            let parsed = parse_body(black_box(body.as_bytes())).unwrap();
            parsed
                .iter()
                .map(|p| p.validate(&limits).unwrap().tags.len())
                .sum::<usize>()
        })
    });
    g.finish();
}

criterion_group!(benches, bench_lines, bench_json);
criterion_main!(benches);
