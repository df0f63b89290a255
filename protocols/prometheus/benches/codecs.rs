//! Prometheus codecs: remote-write 1.0 (zero-copy decoder, prost for comparison) and 2.0,
//! snappy, remote-read responses (SAMPLES and streamed XOR chunks), XOR chunks. Inputs are
//! shaped like `../shared/bench/gen.py`'s: `cpu_usage_*{dc,host,rack}` gauges that random-walk
//! with 2 decimals, 2,000 samples per remote-write request, a point every 10 s.
//! cargo bench -p tsgate-prometheus

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use prost::Message;
use std::hint::black_box;
use tsgate_prometheus::chunk::{decode_xor, encode_xor, SAMPLES_PER_CHUNK};
use tsgate_prometheus::frame::write_frame;
use tsgate_prometheus::proto::{
    Chunk, ChunkEncoding, ChunkedReadResponse, ChunkedSeries, Label, QueryResult, ReadResponse,
    Sample, TimeSeries, WriteRequest,
};
use tsgate_prometheus::{snappy, v1_borrowed, v2};

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
const START_MS: i64 = 1_699_999_200_000;
const STEP_MS: i64 = 10_000;

struct Rng(u64);
impl Rng {
    /// xorshift: fixed values without a rand dependency
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Labels of series `i` of the fleet (10 metrics per host), sorted by name as gen.py writes them.
fn labels(i: usize) -> Vec<(String, String)> {
    let h = i / METRICS.len();
    vec![
        (
            "__name__".into(),
            format!("cpu_{}", METRICS[i % METRICS.len()]),
        ),
        ("dc".into(), format!("dc{}", h % 3)),
        ("host".into(), format!("host_{h}")),
        ("rack".into(), format!("rack{}", h % 40)),
    ]
}

fn proto_labels(i: usize) -> Vec<Label> {
    labels(i)
        .into_iter()
        .map(|(name, value)| Label { name, value })
        .collect()
}

/// A gauge's random walk, 2 decimals, `n` points from START_MS every STEP_MS.
fn walk(rng: &mut Rng, n: usize) -> Vec<(i64, f64)> {
    let mut v = (rng.next() % 10_000) as f64 / 100.0;
    (0..n)
        .map(|k| {
            v = (v + (rng.next() % 400) as f64 / 100.0 - 2.0).clamp(0.0, 100.0);
            (START_MS + k as i64 * STEP_MS, (v * 100.0).round() / 100.0)
        })
        .collect()
}

/// One remote-write 1.0 request as gen.py makes it: 2,000 series of one sample each.
fn rw1_request() -> WriteRequest {
    let mut rng = Rng(42);
    WriteRequest {
        timeseries: (0..2000)
            .map(|i| TimeSeries {
                labels: proto_labels(i),
                samples: walk(&mut rng, 1)
                    .into_iter()
                    .map(|(timestamp, value)| Sample { value, timestamp })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// The same series and samples as a 2.0 request (symbols table, refs).
fn rw2_request(v1: &WriteRequest) -> v2::Request {
    let mut symbols = vec![String::new()];
    let mut index = std::collections::HashMap::new();
    let mut sym = |s: &str| -> u32 {
        *index.entry(s.to_string()).or_insert_with(|| {
            symbols.push(s.to_string());
            symbols.len() as u32 - 1
        })
    };
    let timeseries = v1
        .timeseries
        .iter()
        .map(|ts| v2::TimeSeries {
            labels_refs: ts
                .labels
                .iter()
                .flat_map(|l| [sym(&l.name), sym(&l.value)])
                .collect(),
            samples: ts
                .samples
                .iter()
                .map(|s| v2::Sample {
                    value: s.value,
                    timestamp: s.timestamp,
                    start_timestamp: 0,
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    v2::Request {
        symbols,
        timeseries,
    }
}

fn bench_remote_write(c: &mut Criterion) {
    let req = rw1_request();
    let raw = req.encode_to_vec();
    let body = snappy::compress(&raw);
    let raw2 = rw2_request(&req).encode_to_vec();
    let samples = req.timeseries.len() as u64;
    let mut g = c.benchmark_group("prometheus");
    g.throughput(Throughput::Elements(samples));
    g.bench_function("rw1_decode_zero_copy_2000", |b| {
        b.iter(|| {
            let mut n = 0;
            v1_borrowed::decode(
                black_box(&raw),
                |s| {
                    n += s.samples.len() + s.labels()?.len();
                    Ok(())
                },
                |_| {},
            )
            .unwrap();
            n
        })
    });
    g.bench_function("rw1_decode_prost_2000", |b| {
        b.iter(|| {
            WriteRequest::decode(black_box(raw.as_slice()))
                .unwrap()
                .timeseries
                .len()
        })
    });
    g.bench_function("rw2_decode_2000", |b| {
        b.iter(|| {
            let r = v2::Request::decode(black_box(raw2.as_slice())).unwrap();
            r.check_symbols().unwrap();
            r.timeseries
                .iter()
                .map(|t| r.labels(&t.labels_refs).unwrap().len() + t.samples.len())
                .sum::<usize>()
        })
    });
    g.bench_function("snappy_decompress_rw1_2000", |b| {
        b.iter(|| snappy::decompress(black_box(&body), 1 << 26).unwrap().len())
    });
    g.bench_function("snappy_compress_rw1_2000", |b| {
        b.iter(|| snappy::compress(black_box(&raw)).len())
    });
    g.finish();
}

/// A series as remote read returns it: its labels and points (ms, value).
type ReadSeries = (Vec<Label>, Vec<(i64, f64)>);

/// 100 series of one hour each (360 points): what one remote-read query might return.
fn read_result() -> Vec<ReadSeries> {
    let mut rng = Rng(7);
    (0..100)
        .map(|i| (proto_labels(i), walk(&mut rng, 360)))
        .collect()
}

fn bench_remote_read(c: &mut Criterion) {
    let series = read_result();
    let points: usize = series.iter().map(|s| s.1.len()).sum();
    let mut g = c.benchmark_group("prometheus");
    g.throughput(Throughput::Elements(points as u64));
    // Mirrors src/server/prometheus/read.rs: one snappy-compressed ReadResponse ...
    g.bench_function("remote_read_samples_encode", |b| {
        b.iter(|| {
            let resp = ReadResponse {
                results: vec![QueryResult {
                    timeseries: series
                        .iter()
                        .map(|(l, pts)| TimeSeries {
                            labels: l.clone(),
                            samples: pts
                                .iter()
                                .map(|&(timestamp, value)| Sample { value, timestamp })
                                .collect(),
                            ..Default::default()
                        })
                        .collect(),
                }],
            };
            snappy::compress(&resp.encode_to_vec()).len()
        })
    });
    // ... or one CRC32C frame per series of XOR chunks of 120 samples.
    g.bench_function("remote_read_xor_chunks_encode", |b| {
        b.iter(|| {
            let mut body = Vec::new();
            for (l, pts) in &series {
                let chunks = pts
                    .chunks(SAMPLES_PER_CHUNK)
                    .map(|part| Chunk {
                        min_time_ms: part[0].0,
                        max_time_ms: part[part.len() - 1].0,
                        r#type: ChunkEncoding::Xor as i32,
                        data: encode_xor(part),
                    })
                    .collect();
                let msg = ChunkedReadResponse {
                    chunked_series: vec![ChunkedSeries {
                        labels: l.clone(),
                        chunks,
                    }],
                    query_index: 0,
                };
                write_frame(&mut body, &msg.encode_to_vec());
            }
            body.len()
        })
    });
    g.finish();
}

fn bench_xor(c: &mut Criterion) {
    let pts = walk(&mut Rng(9), SAMPLES_PER_CHUNK);
    let chunk = encode_xor(&pts);
    assert_eq!(decode_xor(&chunk).unwrap(), pts);
    let mut g = c.benchmark_group("prometheus");
    g.throughput(Throughput::Elements(pts.len() as u64));
    g.bench_function("xor_chunk_encode_120", |b| {
        b.iter(|| encode_xor(black_box(&pts)).len())
    });
    g.bench_function("xor_chunk_decode_120", |b| {
        b.iter(|| decode_xor(black_box(&chunk)).unwrap().len())
    });
    g.finish();
}

criterion_group!(benches, bench_remote_write, bench_remote_read, bench_xor);
criterion_main!(benches);
