//! A real full disk under the embedded store: the data directory on a 64 MiB ext4 image
//! mounted through a loop device (tmpfs of that size where loop devices are missing), filled
//! with a ballast file until the engine's own writes fail with ENOSPC. Checks that writes are
//! answered 503 while it is full, that they resume within seconds of freeing space without a
//! restart, that SIGTERM on a full disk exits well within `server.shutdown_timeout_ms`, that a
//! start without room to replay the log stops with a message naming the directory and its free
//! space, and that every acknowledged point is there after the restart.
//!
//! Needs root (mount). Without it, or where nothing can be mounted, the test says so and passes;
//! under `CI` it fails instead.

mod common;
use common::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const T0: u64 = 1_356_998_400;
const HOSTS: u64 = 4;
/// Points per request.
const BATCH: u64 = 500;

/// A small filesystem mounted for the test; unmounted when dropped.
struct SmallFs {
    dir: PathBuf,
    _tmp: tempfile::TempDir,
}

impl SmallFs {
    fn mount() -> Option<SmallFs> {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("mnt");
        std::fs::create_dir(&dir).unwrap();
        let img = tmp.path().join("fs.img");
        let run = |cmd: &str, args: &[&str]| {
            Command::new(cmd)
                .args(args)
                .output()
                .map(|o| {
                    if !o.status.success() {
                        eprintln!("{cmd} {args:?}: {}", String::from_utf8_lossy(&o.stderr));
                    }
                    o.status.success()
                })
                .unwrap_or(false)
        };
        let (img_s, dir_s) = (img.to_str().unwrap(), dir.to_str().unwrap());
        let loop_ok = run("truncate", &["-s", "64M", img_s])
            && run("mkfs.ext4", &["-q", "-F", img_s])
            && run("mount", &["-o", "loop", img_s, dir_s]);
        if !loop_ok && !run("mount", &["-t", "tmpfs", "-o", "size=64m", "tmpfs", dir_s]) {
            return None;
        }
        Some(SmallFs { dir, _tmp: tmp })
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
    }
}

fn free(dir: &Path) -> u64 {
    tsgate::store::embedded::free_bytes(dir).unwrap()
}

/// Fills `dir`'s filesystem with a file of real blocks until `leave` bytes are free.
fn ballast(dir: &Path, leave: u64) -> PathBuf {
    let path = dir.join("ballast");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .unwrap();
    let chunk = vec![0x5au8; 1 << 20];
    loop {
        let left = free(dir);
        if left <= leave {
            break;
        }
        let n = ((left - leave) as usize).min(chunk.len());
        if f.write_all(&chunk[..n]).is_err() {
            break;
        }
        f.sync_data().unwrap();
    }
    path
}

/// One `/api/put` of points `from..from + BATCH` (point n: host h{n % HOSTS}, second T0 + n,
/// value n): (status, body).
fn put_batch(addr: &str, from: u64) -> (u16, String) {
    let points: Vec<String> = (from..from + BATCH)
        .map(|n| {
            format!(
                r#"{{"metric":"df.m","timestamp":{},"value":{n},"tags":{{"host":"h{}"}}}}"#,
                T0 + n,
                n % HOSTS
            )
        })
        .collect();
    http(
        addr,
        "POST",
        "/api/put",
        &format!("[{}]", points.join(",")),
        &[],
    )
}

/// The value of `tsgate_store_refusing_writes{reason="disk_full"}`.
fn refusing(addr: &str) -> Option<u64> {
    let (code, body) = http(addr, "GET", "/metrics", "", &[]);
    assert_eq!(code, 200);
    body.lines()
        .find(|l| l.starts_with("tsgate_store_refusing_writes{reason=\"disk_full\"}"))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

/// Writes batches from `*next` on until one is answered 503 (and the store says it refuses
/// for a full disk); acknowledged batches are added to `acked`.
fn fill_until_refused(s: &Server, next: &mut u64, acked: &mut Vec<u64>) -> String {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        assert!(Instant::now() < deadline, "the disk never filled");
        let (code, body) = put_batch(&s.addr, *next);
        match code {
            204 => acked.push(*next),
            503 => {
                if refusing(&s.addr) == Some(1) {
                    return body;
                }
            }
            // A write-ahead log that ran out of space answers 5xx too: not acknowledged.
            c if c >= 500 => {}
            c => panic!("unexpected answer {c}: {body}"),
        }
        *next += BATCH;
    }
}

/// Every point of `acked` batches, per host: second → value.
fn expected(acked: &[u64]) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = acked
        .iter()
        .flat_map(|&b| (b..b + BATCH).map(|n| (T0 + n, n)))
        .collect();
    v.sort();
    v
}

/// Every stored point of df.m: (second, value), sorted.
fn stored(s: &Server, last: u64) -> Vec<(u64, u64)> {
    let (code, body) = s.http(
        "GET",
        &format!(
            "/api/query?start={T0}&end={}&m=sum:df.m{{host=*}}",
            T0 + last + BATCH
        ),
        "",
    );
    assert_eq!(code, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let mut out: Vec<(u64, u64)> = v
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| {
            s["dps"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(t, v)| (t.parse().unwrap(), v.as_f64().unwrap() as u64))
                .collect::<Vec<_>>()
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_full_disk_refuses_writes_heals_by_itself_and_loses_nothing() {
    let Some(fs) = SmallFs::mount() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "cannot mount a small filesystem (root, a loop device or tmpfs needed) under CI"
        );
        eprintln!(
            "SKIPPED disk_full: cannot mount a small filesystem (needs root: loop device or tmpfs)"
        );
        return;
    };
    let conf_dir = tempfile::tempdir().unwrap();
    let cfg = conf_dir.path().join("tsgate.toml");
    // min_free_mb = 0: nothing refuses early, so the engine's own writes meet ENOSPC.
    std::fs::write(
        &cfg,
        // The answer bound is raised: encoded columns take ~1.6 bytes a point, so the small disk
        // holds more points than one answer may carry by default.
        "[storage]\nmin_free_mb = 0\n[write]\nflush_interval_ms = 100\n\
         [query]\nmax_answer_bytes = 4294967296\n",
    )
    .unwrap();
    let data = fs.dir.join("data");
    let mut s = Server::start_with(&data, Some(&cfg));
    let (mut next, mut acked) = (0u64, Vec::new());
    // Some data first, then the disk is filled to within 8 MiB.
    for _ in 0..4 {
        assert_eq!(put_batch(&s.addr, next).0, 204);
        acked.push(next);
        next += BATCH;
    }
    assert_eq!(refusing(&s.addr), Some(0));
    let ballast_path = ballast(&fs.dir, 8 << 20);
    let body = fill_until_refused(&s, &mut next, &mut acked);
    assert!(body.contains("Storage unavailable"), "{body}");
    assert!(body.contains("disk_full"), "the 503 says why: {body}");
    let (code, stats) = s.http("GET", "/api/stats", "");
    assert_eq!(code, 200);
    let stats: serde_json::Value = serde_json::from_str(&stats).unwrap();
    let row = stats
        .as_array()
        .unwrap()
        .iter()
        .find(|r| {
            r["metric"] == "tsd.storage.refusing_writes" && r["tags"]["reason"] == "disk_full"
        })
        .expect("tsd.storage.refusing_writes{reason=disk_full} in /api/stats");
    assert_eq!(row["value"], "1", "{row}");

    // Space back: writes resume without a restart.
    std::fs::remove_file(&ballast_path).unwrap();
    let freed = Instant::now();
    loop {
        let (code, body) = put_batch(&s.addr, next);
        if code == 204 {
            acked.push(next);
            next += BATCH;
            break;
        }
        assert!(
            freed.elapsed() < Duration::from_secs(20),
            "writes did not resume after freeing space: {code} {body}"
        );
        next += BATCH;
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!("writes resumed {:?} after freeing space", freed.elapsed());
    assert_eq!(refusing(&s.addr), Some(0));
    for _ in 0..4 {
        assert_eq!(put_batch(&s.addr, next).0, 204);
        acked.push(next);
        next += BATCH;
    }
    // Every acknowledged point is readable (the last flushes may still be under way).
    let want = expected(&acked);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = stored(&s, next);
        let missing: Vec<_> = want
            .iter()
            .filter(|p| got.binary_search(p).is_err())
            .collect();
        if missing.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{} points acknowledged, {} read back before the restart; missing {} e.g. {:?}",
            want.len(),
            got.len(),
            missing.len(),
            &missing[..missing.len().min(5)]
        );
        std::thread::sleep(Duration::from_secs(1));
    }

    // Full again, and stopped while full: SIGTERM exits well within the 30 s shutdown bound
    // (with 3: work was left in the write-ahead log).
    let ballast_path = ballast(&fs.dir, 8 << 20);
    fill_until_refused(&s, &mut next, &mut acked);
    let mut child = s.child.take().unwrap();
    let stopping = Instant::now();
    assert!(Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    let status = child.wait().unwrap();
    let took = stopping.elapsed();
    eprintln!("SIGTERM on a full disk: exited {status} after {took:?}");
    assert!(took < Duration::from_secs(10), "shutdown took {took:?}");
    assert!(
        matches!(status.code(), Some(0) | Some(3)),
        "exit status {status}"
    );
    drop(s);

    // No room to replay: the start stops at once and says where and how much is free.
    let out = Command::new(bin())
        .args(["serve", "--data-dir"])
        .arg(&data)
        .args(["--listen", &format!("127.0.0.1:{}", free_port())])
        .args(["--graphite-listen", "", "--pickle-listen", ""])
        .arg("--config")
        .arg(&cfg)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        eprintln!("start without room: {}", err.trim());
        assert!(
            err.contains("not enough free space to replay")
                && err.contains(data.to_str().unwrap())
                && err.contains("MiB free"),
            "{err}"
        );
    } else {
        // Everything had reached the store before the stop: nothing to replay.
        eprintln!("started without a log to replay");
    }

    // Room again: a restart replays the log; every acknowledged point is there, once.
    std::fs::remove_file(&ballast_path).unwrap();
    let s = Server::start_with(&data, Some(&cfg));
    let want = expected(&acked);
    let got = stored(&s, next);
    let missing: Vec<_> = want
        .iter()
        .filter(|p| got.binary_search(p).is_err())
        .take(5)
        .collect();
    assert!(
        missing.is_empty(),
        "{} points acknowledged, {} read back; missing e.g. {missing:?}",
        want.len(),
        got.len()
    );
    // Nothing unacknowledged that was stored has another value (each second holds n).
    assert!(
        got.iter().all(|(t, v)| *t == T0 + v),
        "a point with a wrong value"
    );
    s.stop();
}
