//! Crash test: writers on every ingest protocol (telnet `put`, `/api/put`, Prometheus remote
//! write, Graphite plaintext and pickle) run concurrently while the server is killed with
//! SIGKILL at random moments, many times in a row, and restarted on the same data dir.
//! At the end every acknowledged point is stored exactly once with the value sent, no point
//! that was never sent appears, no raw cell holds a timestamp twice, and `tsgate fsck` is clean.
//!
//! What counts as acknowledged (README, "Durability and limits"):
//! - HTTP (`/api/put`, remote write): a 2xx answer.
//! - telnet: the answer to a `version` sent after a batch of puts (a connection is processed in
//!   order and a put is answered only once durable, so the answer covers every line before it).
//! - Graphite plaintext and pickle (no answers in the protocol): the server closing the
//!   connection after the client half-closed it, observed while that server process was still
//!   alive (the server closes only after every point read is durable; a FIN caused by the kill
//!   itself does not count, which is why the writers check the server's epoch under a lock the
//!   killer holds while killing).
//!
//! Points without an acknowledgement may or may not be stored, but if stored, exactly once and
//! with the value sent.

mod common;
use common::*;
use prost::Message;
use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tsgate_prometheus::proto::{Label, Sample, TimeSeries, WriteRequest};
use tsgate_prometheus::snappy;

/// First timestamp; every writer's points are one second apart from here, so they span closed
/// hours and compaction runs (and gets killed) too.
const T0: u64 = 1356998400;
const BATCH: u64 = 40;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Proto {
    Telnet,
    Put,
    Prom,
    Graphite,
    Pickle,
}

impl Proto {
    fn metric(self) -> &'static str {
        match self {
            Proto::Telnet => "crash.telnet",
            Proto::Put => "crash.put",
            Proto::Prom => "crash.prom",
            Proto::Graphite => "crash.graphite",
            Proto::Pickle => "crash.pickle",
        }
    }
}

/// The live server's addresses and its epoch; `alive` is false from the moment the killer
/// decides to kill it until the next one answers.
#[derive(Clone, Default)]
struct Live {
    epoch: u64,
    alive: bool,
    http: String,
    graphite: String,
    pickle: String,
}

/// Per series (proto, writer): ts → value, acknowledged or merely sent.
#[derive(Default)]
struct Ledger {
    acked: BTreeMap<(Proto, u32), BTreeMap<u64, i64>>,
    sent: BTreeMap<(Proto, u32), BTreeMap<u64, i64>>,
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn value_of(w: u32, seq: u64) -> i64 {
    (seq as i64) * 10 + w as i64
}

fn connect(addr: &str) -> Option<TcpStream> {
    let s = TcpStream::connect_timeout(&addr.parse().ok()?, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    s.set_write_timeout(Some(Duration::from_secs(10))).ok()?;
    Some(s)
}

/// Sends one batch; true when it was acknowledged (per the rules in the module comment).
fn send_batch(p: Proto, w: u32, addrs: &Live, live: &Mutex<Live>, points: &[(u64, i64)]) -> bool {
    let metric = p.metric();
    let confirm = || {
        // The close/answer we saw came from this server only if it is still the live one.
        let l = live.lock().unwrap();
        l.alive && l.epoch == addrs.epoch
    };
    match p {
        Proto::Telnet => {
            let Some(mut s) = connect(&addrs.http) else {
                return false;
            };
            let mut text = String::new();
            for (ts, v) in points {
                text.push_str(&format!("put {metric} {ts} {v} w={w}\n"));
            }
            text.push_str("version\n");
            if s.write_all(text.as_bytes()).is_err() {
                return false;
            }
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            while !String::from_utf8_lossy(&got).contains("net.opentsdb") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => return false,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            let text = String::from_utf8_lossy(&got);
            assert!(
                text.starts_with("net.opentsdb"),
                "telnet puts answered with errors: {text}"
            );
            true
        }
        Proto::Put => {
            let body: Vec<serde_json::Value> = points
                .iter()
                .map(|(ts, v)| serde_json::json!({"metric": metric, "timestamp": ts, "value": v, "tags": {"w": w.to_string()}}))
                .collect();
            let (code, body) = http(
                &addrs.http,
                "POST",
                "/api/put",
                &serde_json::Value::from(body).to_string(),
                &[],
            );
            assert!(
                code == 0 || code == 204 || code >= 500,
                "/api/put answered {code}: {body}"
            );
            code == 204
        }
        Proto::Prom => {
            let req = WriteRequest {
                timeseries: vec![TimeSeries {
                    labels: vec![
                        Label {
                            name: "__name__".into(),
                            value: metric.into(),
                        },
                        Label {
                            name: "w".into(),
                            value: w.to_string(),
                        },
                    ],
                    samples: points
                        .iter()
                        .map(|&(ts, v)| Sample {
                            value: v as f64,
                            timestamp: ts as i64 * 1000,
                        })
                        .collect(),
                    ..Default::default()
                }],
                ..Default::default()
            };
            let body = snappy::compress(&req.encode_to_vec());
            let (code, text) = http_bytes(
                &addrs.http,
                "POST",
                "/api/v1/write",
                &body,
                &[
                    ("Content-Encoding", "snappy"),
                    ("Content-Type", "application/x-protobuf"),
                    ("X-Prometheus-Remote-Write-Version", "0.1.0"),
                ],
            );
            assert!(
                code == 0 || code == 204 || code >= 500,
                "remote write answered {code}: {}",
                String::from_utf8_lossy(&text)
            );
            code == 204
        }
        Proto::Graphite | Proto::Pickle => {
            let addr = if p == Proto::Graphite {
                &addrs.graphite
            } else {
                &addrs.pickle
            };
            let Some(mut s) = connect(addr) else {
                return false;
            };
            let path = format!("{metric};w={w}"); // a tagged path: metric + tag w
            let bytes = if p == Proto::Graphite {
                let mut t = String::new();
                for (ts, v) in points {
                    t.push_str(&format!("{path} {v} {ts}\n"));
                }
                t.into_bytes()
            } else {
                tsgate_graphite::frame::encode(&pickle_list(&path, points))
            };
            if s.write_all(&bytes).is_err() || s.shutdown(Shutdown::Write).is_err() {
                return false;
            }
            let mut rest = Vec::new();
            match s.read_to_end(&mut rest) {
                Ok(_) => confirm(),
                Err(_) => false,
            }
        }
    }
}

/// A protocol-2 pickle of `[(path, (ts, value)), …]`, as carbon-relay sends.
fn pickle_list(path: &str, points: &[(u64, i64)]) -> Vec<u8> {
    let mut p = b"\x80\x02]".to_vec();
    for (ts, v) in points {
        p.push(b'X');
        p.extend_from_slice(&(path.len() as u32).to_le_bytes());
        p.extend_from_slice(path.as_bytes());
        p.push(b'J');
        p.extend_from_slice(&(*ts as i32).to_le_bytes());
        p.push(b'J');
        p.extend_from_slice(&(*v as i32).to_le_bytes());
        p.extend_from_slice(b"\x86\x86a");
    }
    p.push(b'.');
    p
}

fn writer(
    p: Proto,
    w: u32,
    live: Arc<Mutex<Live>>,
    ledger: Arc<Mutex<Ledger>>,
    stop: Arc<AtomicBool>,
) {
    let mut seq = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let addrs = live.lock().unwrap().clone();
        if !addrs.alive {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        let points: Vec<(u64, i64)> = (seq..seq + BATCH)
            .map(|s| (T0 + s, value_of(w, s)))
            .collect();
        seq += BATCH;
        {
            let mut l = ledger.lock().unwrap();
            l.sent
                .entry((p, w))
                .or_default()
                .extend(points.iter().copied());
        }
        if send_batch(p, w, &addrs, &live, &points) {
            ledger
                .lock()
                .unwrap()
                .acked
                .entry((p, w))
                .or_default()
                .extend(points.iter().copied());
        }
    }
}

fn write_config(path: &Path, graphite: &str, pickle: &str) {
    std::fs::write(
        path,
        format!(
            "[server]\ngraphite_listen = \"{graphite}\"\npickle_listen = \"{pickle}\"\n\
             [write]\nflush_interval_ms = 150\ncompaction_delay_ms = 100\nshards = 2\n"
        ),
    )
    .unwrap();
}

/// `metric timestamp value tag=v…` lines of `tsgate query` → (writer, ts) → value.
/// The points of `p`'s metric stored from T0 up to `end` (seconds, inclusive).
fn stored_points(data: &Path, p: Proto, end: u64) -> HashMap<(u32, u64), f64> {
    let q = format!("none:{}{{w=*}}", p.metric());
    let end = end.to_string();
    let o = tsgate(&[
        "query",
        "--data-dir",
        data.to_str().unwrap(),
        "--start",
        &T0.to_string(),
        "--end",
        &end,
        &q,
    ]);
    assert!(
        o.status.success(),
        "tsgate query failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut out = HashMap::new();
    for line in stdout(&o).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let ts: u64 = f[1].parse().unwrap();
        let v: f64 = f[2].parse().unwrap();
        let w: u32 = f
            .iter()
            .find_map(|t| t.strip_prefix("w="))
            .map(|s| s.trim_start_matches('w').parse().unwrap())
            .expect("w tag");
        assert!(
            out.insert((w, ts), v).is_none(),
            "point {ts} of {} w={w} returned twice",
            p.metric()
        );
    }
    out
}

/// Offsets of every qualifier in a (possibly compacted) column qualifier.
fn qualifier_offsets(q: &[u8]) -> Vec<u64> {
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < q.len() {
        if q[i] & 0xF0 == 0xF0 && i + 3 < q.len() {
            let v = u32::from_be_bytes([q[i], q[i + 1], q[i + 2], q[i + 3]]);
            out.push(((v & 0x0FFF_FFC0) >> 6) as u64); // ms offset
            i += 4;
        } else {
            let v = u16::from_be_bytes([q[i], q[i + 1]]);
            out.push((v >> 4) as u64 * 1000);
            i += 2;
        }
    }
    out
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Starts a server whose Graphite and pickle ports are new each time; when one of them was taken
/// before the server bound it, the server exits and this tries other ports.
fn start_with_fresh_ports(
    data: &std::path::Path,
    cfg: &std::path::Path,
) -> (Server, String, String) {
    let mut last = None;
    for _ in 0..5 {
        let (g, pk) = (
            format!("127.0.0.1:{}", free_port()),
            format!("127.0.0.1:{}", free_port()),
        );
        write_config(cfg, &g, &pk);
        match Server::try_start_with(data, Some(cfg)) {
            Ok(s) => return (s, g, pk),
            Err(status) => last = Some(status),
        }
    }
    panic!("tsgate did not start on five sets of ports: {last:?}");
}

#[test]
fn kill9_many_times_loses_no_acknowledged_point() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let cfg = dir.path().join("tsgate.toml");
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    eprintln!("crash test seed {seed}");
    let mut rng = Rng(seed);
    let live = Arc::new(Mutex::new(Live::default()));
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for p in [
        Proto::Telnet,
        Proto::Put,
        Proto::Prom,
        Proto::Graphite,
        Proto::Pickle,
    ] {
        for w in 0..2 {
            let (live, ledger, stop) = (live.clone(), ledger.clone(), stop.clone());
            threads.push(std::thread::spawn(move || writer(p, w, live, ledger, stop)));
        }
    }
    let started = Instant::now();
    const CYCLES: u32 = 14;
    for cycle in 0..CYCLES {
        if cycle % 5 == 4 {
            let (g, pk) = (
                format!("127.0.0.1:{}", free_port()),
                format!("127.0.0.1:{}", free_port()),
            );
            write_config(&cfg, &g, &pk);
            // Kill one during start-up (WAL replay, compaction of replayed rows).
            let mut c = std::process::Command::new(bin())
                .args([
                    "serve",
                    "--data-dir",
                    data.to_str().unwrap(),
                    "--config",
                    cfg.to_str().unwrap(),
                    "--listen",
                    "127.0.0.1:0",
                    "--log-level",
                    "error",
                ])
                .spawn()
                .unwrap();
            std::thread::sleep(Duration::from_millis(rng.below(300)));
            let _ = c.kill();
            let _ = c.wait();
        }
        let (server, g, pk) = start_with_fresh_ports(&data, &cfg);
        {
            let mut l = live.lock().unwrap();
            *l = Live {
                epoch: cycle as u64 + 1,
                alive: true,
                http: server.addr.clone(),
                graphite: g,
                pickle: pk,
            };
        }
        std::thread::sleep(Duration::from_millis(300 + rng.below(2500)));
        // Kill while holding the lock: a writer that sees `alive` saw the server before the kill.
        let mut l = live.lock().unwrap();
        l.alive = false;
        server.kill9();
        drop(l);
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    // One last start replays the last WAL; a clean stop flushes and compacts.
    start_with_fresh_ports(&data, &cfg).0.stop();
    eprintln!("{CYCLES} kill -9 cycles in {:?}", started.elapsed());

    let ledger = ledger.lock().unwrap();
    let mut acked_total = 0;
    for p in [
        Proto::Telnet,
        Proto::Put,
        Proto::Prom,
        Proto::Graphite,
        Proto::Pickle,
    ] {
        // Up to the last second any writer sent: each point is a second after the one before,
        // and a writer of a fast server sends more than 864,000 of them (ten days).
        let last = ledger
            .sent
            .values()
            .filter_map(|m| m.keys().next_back())
            .max()
            .copied()
            .unwrap_or(T0);
        let stored = stored_points(&data, p, last);
        let mut acked_here = 0;
        for w in 0..2u32 {
            let acked = ledger.acked.get(&(p, w)).cloned().unwrap_or_default();
            let sent = ledger.sent.get(&(p, w)).cloned().unwrap_or_default();
            for (ts, v) in &acked {
                let got = stored.get(&(w, *ts));
                assert_eq!(
                    got,
                    Some(&(*v as f64)),
                    "{} w={w}: acknowledged point {ts}={v} lost or altered",
                    p.metric()
                );
            }
            acked_here += acked.len();
            for ((sw, ts), v) in &stored {
                if *sw == w {
                    assert_eq!(
                        sent.get(ts).map(|v| *v as f64),
                        Some(*v),
                        "{} w={w}: stored point {ts}={v} was never sent",
                        p.metric()
                    );
                }
            }
        }
        eprintln!(
            "{:?}: {acked_here} acknowledged, {} stored",
            p,
            stored.len()
        );
        assert!(
            acked_here > 0,
            "no {p:?} batch was ever acknowledged: the test proves nothing for it"
        );
        acked_total += acked_here;
    }
    assert!(
        acked_total > 1000,
        "too few acknowledged points ({acked_total})"
    );

    // Raw cells: no timestamp stored twice within a row (a replay after a compaction, say).
    let mut offsets: HashMap<String, Vec<u64>> = HashMap::new();
    for line in scan(&data, "data") {
        let f: Vec<&str> = line.split_whitespace().collect();
        let q = f[2].strip_prefix("t:").unwrap();
        if !q.len().is_multiple_of(4) || q.is_empty() {
            continue; // annotations and other non-point columns
        }
        offsets
            .entry(f[1].to_string())
            .or_default()
            .extend(qualifier_offsets(&unhex(q)));
    }
    for (row, mut offs) in offsets {
        let n = offs.len();
        offs.sort_unstable();
        offs.dedup();
        assert_eq!(offs.len(), n, "row {row} stores a timestamp in two cells");
    }

    let o = tsgate(&["fsck", "--data-dir", data.to_str().unwrap()]);
    assert!(
        o.status.success(),
        "fsck found problems:\n{}{}",
        stdout(&o),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Rollup and histogram points: the writes that go straight to the store instead of through
/// the WAL (README, "Durability and limits").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Direct {
    RollupHttp,
    RollupTelnet,
    HistogramHttp,
    HistogramTelnet,
}

impl Direct {
    const ALL: [Direct; 4] = [
        Direct::RollupHttp,
        Direct::RollupTelnet,
        Direct::HistogramHttp,
        Direct::HistogramTelnet,
    ];

    fn metric(self) -> &'static str {
        match self {
            Direct::RollupHttp => "crash.rollup.http",
            Direct::RollupTelnet => "crash.rollup.telnet",
            Direct::HistogramHttp => "crash.histogram.http",
            Direct::HistogramTelnet => "crash.histogram.telnet",
        }
    }

    fn rollup(self) -> bool {
        matches!(self, Direct::RollupHttp | Direct::RollupTelnet)
    }

    /// Point `seq` of writer `w`: its timestamp and what it carries (a rollup's value, a
    /// histogram's bucket `[lo, lo+1)` count).
    fn point(self, w: u32, seq: u64) -> (u64, u64) {
        if self.rollup() {
            // A new hour each: one 1h cell per point, 24 to a row (a day).
            (T0 + seq * 3600, 1000 + (seq * 7 + w as u64) % 30000)
        } else {
            (T0 + seq, 1 + (seq + w as u64) % 60)
        }
    }

    /// The stored cell of point `seq`, as `tsgate scan` prints it after the row key: OpenTSDB's
    /// bytes, computed here from its formats rather than by tsgate's encoders.
    fn cell(self, w: u32, seq: u64) -> (u64, String) {
        let (ts, v) = self.point(w, seq);
        if self.rollup() {
            // tsdb-rollup-1h: rows of a day; qualifier = aggregator id (sum = 0), then the
            // hour of the day << 4 | flags (an integer on 2 bytes = 1); the value on 2 bytes.
            let hour = (ts % 86400) / 3600;
            (
                ts - ts % 86400,
                format!("t:00{:04x} {:04x}", (hour << 4) | 1, v),
            )
        } else {
            // tsdb: rows of an hour; qualifier 0x06 + the second in the hour; value = codec id
            // 0, one bucket (i16), its bounds as f32, the count and under/overflow as varints.
            let lo = (seq % 1000) as f32;
            (
                ts - ts % 3600,
                format!(
                    "t:06{:04x} 000001{:08x}{:08x}{v:02x}0000",
                    ts % 3600,
                    lo.to_bits(),
                    (lo + 1.0).to_bits()
                ),
            )
        }
    }
}

/// Sends points `seqs` of writer `w`; true when acknowledged (a 204, or on telnet the answer to
/// a `version` after the lines with no error before it).
fn send_direct(k: Direct, w: u32, addrs: &Live, seqs: std::ops::Range<u64>) -> bool {
    let metric = k.metric();
    let tag = format!("w{w}");
    match k {
        Direct::RollupHttp | Direct::HistogramHttp => {
            let body: Vec<serde_json::Value> = seqs
                .map(|s| {
                    let (ts, v) = k.point(w, s);
                    if k.rollup() {
                        serde_json::json!({"metric": metric, "timestamp": ts, "value": v,
                            "tags": {"w": tag}, "interval": "1h", "aggregator": "sum"})
                    } else {
                        let lo = s % 1000;
                        let mut buckets = serde_json::Map::new();
                        buckets.insert(format!("{lo},{}", lo + 1), v.into());
                        serde_json::json!({"metric": metric, "timestamp": ts, "tags": {"w": tag},
                            "buckets": buckets})
                    }
                })
                .collect();
            let path = if k.rollup() {
                "/api/rollup"
            } else {
                "/api/histogram"
            };
            let (code, text) = http(
                &addrs.http,
                "POST",
                path,
                &serde_json::Value::from(body).to_string(),
                &[],
            );
            assert!(
                code == 0 || code == 204 || code >= 500,
                "{path} answered {code}: {text}"
            );
            code == 204
        }
        Direct::RollupTelnet | Direct::HistogramTelnet => {
            let Some(mut sock) = connect(&addrs.http) else {
                return false;
            };
            let mut text = String::new();
            for s in seqs {
                let (ts, v) = k.point(w, s);
                if k.rollup() {
                    text.push_str(&format!("rollup 1h-sum {metric} {ts} {v} w={tag}\n"));
                } else {
                    let lo = s % 1000;
                    text.push_str(&format!(
                        "histogram {metric} {ts} {lo},{}={v}:u=0:o=0 w={tag}\n",
                        lo + 1
                    ));
                }
            }
            text.push_str("version\n");
            if sock.write_all(text.as_bytes()).is_err() {
                return false;
            }
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            while !String::from_utf8_lossy(&got).contains("net.opentsdb") {
                match sock.read(&mut buf) {
                    Ok(0) | Err(_) => return false,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            let text = String::from_utf8_lossy(&got);
            assert!(
                text.starts_with("net.opentsdb"),
                "telnet {k:?} answered with errors: {text}"
            );
            true
        }
    }
}

/// The cells of `table` as (row, "t:qualifier value").
fn direct_cells(data: &Path, cfg: &Path, table: &str) -> Vec<(String, String)> {
    let o = tsgate(&[
        "scan",
        "--data-dir",
        data.to_str().unwrap(),
        "--config",
        cfg.to_str().unwrap(),
        "--table",
        table,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    stdout(&o)
        .lines()
        .filter_map(|l| {
            let mut f = l.splitn(3, ' ');
            let (_, row, rest) = (f.next()?, f.next()?, f.next()?);
            Some((row.to_string(), rest.to_string()))
        })
        .collect()
}

/// Rollup (`/api/rollup`, telnet `rollup`) and histogram (`/api/histogram`, telnet
/// `histogram`) points skip the WAL: they are acknowledged once the store holds them and a
/// store sync made them durable. Killed with SIGKILL at random moments while two writers of
/// each kind run, the server keeps every acknowledged point, byte for byte as OpenTSDB stores
/// it, and every stored cell is one that was sent.
#[test]
fn kill9_loses_no_acknowledged_rollup_or_histogram_point() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let cfg = dir.path().join("tsgate.toml");
    std::fs::write(
        &cfg,
        "[write]\nflush_interval_ms = 150\ncompaction_delay_ms = 100\n\n[rollups]\nenabled = true\n",
    )
    .unwrap();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    eprintln!("direct crash test seed {seed}");
    let mut rng = Rng(seed);

    // The UIDs, assigned once (durably) so that rows can be named: metric + base + w=wN.
    let server = Server::start_with(&data, Some(&cfg));
    let metrics: Vec<&str> = Direct::ALL.iter().map(|k| k.metric()).collect();
    let (code, body) = server.http(
        "POST",
        "/api/uid/assign",
        &serde_json::json!({"metric": metrics, "tagk": ["w"], "tagv": ["w0", "w1"]}).to_string(),
    );
    assert_eq!(code, 200, "{body}");
    let uids: serde_json::Value = serde_json::from_str(&body).unwrap();
    let uid = |kind: &str, name: &str| uids[kind][name].as_str().unwrap().to_lowercase();
    let row = |k: Direct, w: u32, base: u64| {
        format!(
            "{}{base:08x}{}{}",
            uid("metric", k.metric()),
            uid("tagk", "w"),
            uid("tagv", &format!("w{w}"))
        )
    };

    let live = Arc::new(Mutex::new(Live {
        epoch: 1,
        alive: true,
        http: server.addr.clone(),
        ..Live::default()
    }));
    // Per (kind, writer): the sequence numbers sent and acknowledged.
    type Seqs = BTreeMap<(Direct, u32), Vec<std::ops::Range<u64>>>;
    let acked: Arc<Mutex<Seqs>> = Arc::default();
    let sent: Arc<Mutex<Seqs>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for k in Direct::ALL {
        for w in 0..2 {
            let (live, acked, sent, stop) =
                (live.clone(), acked.clone(), sent.clone(), stop.clone());
            threads.push(std::thread::spawn(move || {
                let mut seq = 0;
                while !stop.load(Ordering::Relaxed) {
                    let addrs = live.lock().unwrap().clone();
                    if !addrs.alive {
                        std::thread::sleep(Duration::from_millis(20));
                        continue;
                    }
                    let r = seq..seq + 20;
                    seq += 20;
                    sent.lock()
                        .unwrap()
                        .entry((k, w))
                        .or_default()
                        .push(r.clone());
                    if send_direct(k, w, &addrs, r.clone()) {
                        acked.lock().unwrap().entry((k, w)).or_default().push(r);
                    }
                }
            }));
        }
    }
    let mut server = Some(server);
    const CYCLES: u64 = 6;
    for cycle in 0..CYCLES {
        if server.is_none() {
            let s = Server::start_with(&data, Some(&cfg));
            *live.lock().unwrap() = Live {
                epoch: cycle + 1,
                alive: true,
                http: s.addr.clone(),
                ..Live::default()
            };
            server = Some(s);
        }
        std::thread::sleep(Duration::from_millis(500 + rng.below(2500)));
        let mut l = live.lock().unwrap();
        l.alive = false;
        server.take().unwrap().kill9();
        drop(l);
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    Server::start_with(&data, Some(&cfg)).stop();

    let stored: HashMap<(String, String), ()> = direct_cells(&data, &cfg, "tsdb-rollup-1h")
        .into_iter()
        .chain(direct_cells(&data, &cfg, "tsdb"))
        .map(|c| (c, ()))
        .collect();
    let (acked, sent) = (acked.lock().unwrap(), sent.lock().unwrap());
    for k in Direct::ALL {
        let mut acked_here = 0;
        for w in 0..2u32 {
            let cell = |s: u64| {
                let (base, c) = k.cell(w, s);
                (row(k, w, base), c)
            };
            for s in acked
                .get(&(k, w))
                .into_iter()
                .flatten()
                .flat_map(|r| r.clone())
            {
                assert!(
                    stored.contains_key(&cell(s)),
                    "{k:?} w{w}: acknowledged point {s} lost or altered: want {:?}",
                    cell(s)
                );
                acked_here += 1;
            }
            // Whatever of this series is stored was sent, with the bytes sent.
            let all: std::collections::HashSet<(String, String)> = sent
                .get(&(k, w))
                .into_iter()
                .flatten()
                .flat_map(|r| r.clone())
                .map(cell)
                .collect();
            let prefix = uid("metric", k.metric());
            let tags = format!("{}{}", uid("tagk", "w"), uid("tagv", &format!("w{w}")));
            for (r, c) in stored.keys() {
                if r.starts_with(&prefix) && r.ends_with(&tags) {
                    assert!(
                        all.contains(&(r.clone(), c.clone())),
                        "{k:?} w{w}: stored cell {r} {c} was never sent"
                    );
                }
            }
        }
        eprintln!("{k:?}: {acked_here} acknowledged");
        assert!(
            acked_here > 0,
            "no {k:?} batch was ever acknowledged: the test proves nothing for it"
        );
    }
}
