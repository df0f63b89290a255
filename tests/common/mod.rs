//! Starts real `tsgate` processes on loopback for the integration tests.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Instantiates each named `fn(&Backend)` as a test on every backend (`embedded::…`, `hbase::…`,
/// and `bigtable::…`, which Google's emulator runs: skipped loudly without it, failed under CI).
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod embedded {
            $(#[test] fn $name() { super::$name(&super::Backend::embedded()); })*
        }
        mod hbase {
            $(#[test] fn $name() { super::$name(&super::Backend::hbase()); })*
        }
        mod bigtable {
            $(#[test] fn $name() {
                if let Some(b) = super::Backend::bigtable("suite") { super::$name(&b); }
            })*
        }
    };
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_tsgate")
}

/// A loopback port nothing listens on, picked below the kernel's ephemeral range: a port the
/// kernel handed out by `bind(:0)` can be reused at once as the source port of any outgoing
/// connection (the crash test's writers make thousands), and then the server cannot bind it.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .next()
                .and_then(|v| v.parse::<u32>().ok())
        })
        .unwrap_or(32768);
    const FLOOR: u32 = 10_000;
    if low > FLOOR + 1000 {
        let span = low - FLOOR;
        // Each test process starts at its own offset, so parallel test binaries rarely meet.
        let start = (std::process::id().wrapping_mul(2_654_435_761)) % span;
        for _ in 0..span {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let port = (FLOOR + (start + n.wrapping_mul(7)) % span) as u16;
            if TcpListener::bind(("127.0.0.1", port)).is_ok() {
                return port;
            }
        }
    }
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Where a test's servers keep their data: the embedded engine, or HBase through its Thrift
/// gateway — here the in-process test double, which outlives the `tsgate` processes.
pub struct Backend {
    pub name: &'static str,
    double: Option<tsgate_testkit::hbase_double::TestDouble>,
    _dir: Option<tempfile::TempDir>,
    /// Google's Bigtable emulator and the instance in it.
    bigtable: Option<(tsgate_testkit::bigtable_emulator::Emulator, String)>,
}

impl Backend {
    pub fn embedded() -> Backend {
        Backend {
            name: "embedded",
            double: None,
            _dir: None,
            bigtable: None,
        }
    }

    /// Starts a double and creates tsgate's tables in it (what `tsgate hbase create-tables` does).
    pub fn hbase() -> Backend {
        use tsgate::store::hbase::{tables, HBaseConfig, HBaseStore};
        let dir = tempfile::tempdir().unwrap();
        let double =
            tsgate_testkit::hbase_double::TestDouble::start(dir.path(), "127.0.0.1:0").unwrap();
        let cfg = HBaseConfig {
            thrift: double.addr(),
            ..Default::default()
        };
        let names = tsgate::store::TableNames::default();
        tables::create_tables(HBaseStore::new(&cfg, &names.specs()).pool(), &names, "NONE")
            .unwrap();
        Backend {
            name: "hbase",
            double: Some(double),
            _dir: Some(dir),
            bigtable: None,
        }
    }

    /// Starts Google's Bigtable emulator and creates tsgate's tables in instance `instance`
    /// of project `p` (what `tsgate bigtable create-tables` does); `None` (said loudly) when
    /// the emulator is not installed and `CI` is not set.
    pub fn bigtable(instance: &str) -> Option<Backend> {
        use tsgate::store::bigtable::{tables, BigtableConfig, BigtableStore};
        let emu = tsgate_testkit::bigtable_emulator::Emulator::start()?;
        let cfg = BigtableConfig {
            project: "p".into(),
            instance: instance.into(),
            emulator_host: emu.addr().to_string(),
            ..Default::default()
        };
        let names = tsgate::store::TableNames::default();
        tables::create_tables(&BigtableStore::new(&cfg).unwrap(), &names, None).unwrap();
        Some(Backend {
            name: "bigtable",
            double: None,
            _dir: None,
            bigtable: Some((emu, instance.to_string())),
        })
    }

    /// Whether other processes may write the same tables (HBase, Bigtable): the compactor then
    /// waits for a row's newest cell to settle.
    pub fn is_shared(&self) -> bool {
        self.double.is_some() || self.bigtable.is_some()
    }

    /// The Bigtable instance, if this is the Bigtable backend.
    pub fn bigtable_instance(&self) -> Option<&str> {
        self.bigtable.as_ref().map(|(_, i)| i.as_str())
    }

    /// The emulator's `host:port` (for `BIGTABLE_EMULATOR_HOST`).
    pub fn emulator_addr(&self) -> Option<&str> {
        self.bigtable.as_ref().map(|(e, _)| e.addr())
    }

    /// Environment every `tsgate` (or `cbt`) command gets for this backend.
    pub fn envs(&self) -> Vec<(String, String)> {
        match self.emulator_addr() {
            Some(a) => vec![("BIGTABLE_EMULATOR_HOST".into(), a.to_string())],
            None => Vec::new(),
        }
    }

    pub fn is_hbase(&self) -> bool {
        self.double.is_some()
    }

    pub fn thrift_addr(&self) -> Option<String> {
        self.double.as_ref().map(|d| d.addr())
    }

    pub fn double(&self) -> Option<&tsgate_testkit::hbase_double::TestDouble> {
        self.double.as_ref()
    }

    /// The flags every `tsgate` command gets for this backend.
    pub fn args(&self) -> Vec<String> {
        if let Some((_, instance)) = &self.bigtable {
            return vec![
                "--bigtable-project".into(),
                "p".into(),
                "--bigtable-instance".into(),
                instance.clone(),
            ];
        }
        match &self.double {
            Some(d) => vec![
                "--backend".into(),
                "hbase".into(),
                "--hbase-thrift".into(),
                d.addr(),
            ],
            None => Vec::new(),
        }
    }
}

pub struct Server {
    pub child: Option<Child>,
    pub addr: String,
    pub data: PathBuf,
    pub config: Option<PathBuf>,
}

impl Server {
    pub fn start(data: &Path) -> Server {
        Self::start_with(data, None)
    }

    /// Starts a server with an optional config file and waits until it answers HTTP.
    pub fn start_with(data: &Path, config: Option<&Path>) -> Server {
        Self::start_on(&Backend::embedded(), data, config)
    }

    /// Starts a server and waits until it answers HTTP; picks another HTTP port when the
    /// chosen one was taken between `free_port` and the server's bind.
    pub fn start_on(backend: &Backend, data: &Path, config: Option<&Path>) -> Server {
        let mut last = None;
        for _ in 0..5 {
            match Self::try_start_on(backend, data, config) {
                Ok(s) => return s,
                Err(status) => last = Some(status),
            }
        }
        panic!("tsgate did not start: it exited with {last:?} on five ports");
    }

    /// Like `start_with`, but reports a server that exited at start-up (a port in use, say)
    /// instead of panicking, so the caller can retry with other ports.
    pub fn try_start_with(
        data: &Path,
        config: Option<&Path>,
    ) -> Result<Server, std::process::ExitStatus> {
        Self::try_start_on(&Backend::embedded(), data, config)
    }

    pub fn try_start_on(
        backend: &Backend,
        data: &Path,
        config: Option<&Path>,
    ) -> Result<Server, std::process::ExitStatus> {
        let addr = format!("127.0.0.1:{}", free_port());
        let mut cmd = Command::new(bin());
        cmd.args(["serve", "--data-dir"]).arg(data).args([
            "--listen",
            &addr,
            "--log-level",
            "warn",
        ]);
        // Graphite ports off unless a test asks for them: parallel servers would fight over :2003.
        if !extra_args_have_graphite(config) {
            cmd.args(["--graphite-listen", "", "--pickle-listen", ""]);
        }
        cmd.args(backend.args()).envs(backend.envs());
        if let Some(c) = config {
            cmd.arg("--config").arg(c);
        }
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn tsgate");
        let mut s = Server {
            child: Some(child),
            addr,
            data: data.to_path_buf(),
            config: config.map(|c| c.to_path_buf()),
        };
        // The exit status of a server that already stopped (it is then no longer ours to kill).
        let exited = |s: &mut Server| {
            let status = s.child.as_mut().unwrap().try_wait().unwrap()?;
            s.child = None;
            Some(status)
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Some(status) = exited(&mut s) {
                return Err(status);
            }
            if http(&s.addr, "GET", "/api/version", "", &[]).0 == 200 {
                // Another test's server may hold the port and have answered: ours, failing to
                // bind, exits right after start-up.
                std::thread::sleep(Duration::from_millis(100));
                return match exited(&mut s) {
                    Some(status) => Err(status),
                    None => Ok(s),
                };
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("tsgate did not start on {}", s.addr);
    }

    fn signal(&self, sig: &str) {
        let pid = self.child.as_ref().unwrap().id().to_string();
        assert!(Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap()
            .success());
    }

    /// SIGINT and wait: the clean stop path.
    pub fn stop(self) {
        self.stop_with("-INT")
    }

    pub fn stop_with(mut self, sig: &str) {
        self.signal(sig);
        let status = self.child.take().unwrap().wait().unwrap();
        assert!(status.success(), "clean stop exited with {status}");
    }

    /// SIGKILL: nothing gets flushed.
    pub fn kill9(mut self) {
        self.signal("-KILL");
        let _ = self.child.take().unwrap().wait();
    }

    pub fn telnet(&self) -> Telnet {
        Telnet::connect(&self.addr)
    }

    pub fn http(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        http(&self.addr, method, path, body, &[])
    }

    /// Waits until a query returns `want` points in total (the flush interval is 1 s).
    pub fn wait_points(&self, path: &str, want: usize) -> serde_json::Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let (code, body) = self.http("GET", path, "");
            if code == 200 {
                let v: serde_json::Value = serde_json::from_str(&body).unwrap();
                let n: usize = v
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|s| s["dps"].as_object().unwrap().len())
                    .sum();
                if n >= want || Instant::now() > deadline {
                    return v;
                }
            } else if Instant::now() > deadline {
                panic!("query {path} failed: {code} {body}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A minimal HTTP/1.1 client over a raw socket: (status, body).
pub fn http(
    addr: &str,
    method: &str,
    path: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> (u16, String) {
    let (code, body) = http_bytes(addr, method, path, body.as_bytes(), headers);
    (code, String::from_utf8_lossy(&body).into_owned())
}

pub fn http_bytes(
    addr: &str,
    method: &str,
    path: &str,
    body: &[u8],
    headers: &[(&str, &str)],
) -> (u16, Vec<u8>) {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return (0, Vec::new());
    };
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    if s.write_all(req.as_bytes())
        .and_then(|_| s.write_all(body))
        .is_err()
    {
        return (0, Vec::new());
    }
    let mut resp = Vec::new();
    let _ = s.read_to_end(&mut resp);
    let Some(split) = resp.windows(4).position(|w| w == b"\r\n\r\n") else {
        return (0, Vec::new());
    };
    let head = String::from_utf8_lossy(&resp[..split]).to_string();
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let mut body = resp[split + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = dechunk(&body);
    }
    (code, body)
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(nl) = b.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let n = usize::from_str_radix(String::from_utf8_lossy(&b[..nl]).trim(), 16).unwrap_or(0);
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&b[nl + 2..nl + 2 + n]);
        b = &b[nl + 2 + n + 2..];
    }
}

pub struct Telnet {
    stream: TcpStream,
    reader: BufReader<TcpStream>,
}

impl Telnet {
    pub fn connect(addr: &str) -> Telnet {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let reader = BufReader::new(stream.try_clone().unwrap());
        Telnet { stream, reader }
    }

    pub fn send(&mut self, text: &str) {
        self.stream.write_all(text.as_bytes()).unwrap();
    }

    pub fn send_bytes(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    pub fn read_line(&mut self) -> String {
        let mut l = String::new();
        self.reader.read_line(&mut l).unwrap();
        l
    }

    /// Sends `version` and reads up to its two lines: proves every earlier line was processed.
    pub fn sync(&mut self) -> Vec<String> {
        self.send_and_sync("")
    }

    /// Sends `text` and `version` in one write, then reads as `sync` does. For a server that may
    /// stop reading between two writes (a store going down pauses TCP listeners), one write
    /// arrives in one read.
    pub fn send_and_sync(&mut self, text: &str) -> Vec<String> {
        self.send(&format!("{text}version\n"));
        let mut before = Vec::new();
        loop {
            let l = self.read_line();
            assert!(!l.is_empty(), "connection closed");
            if l.starts_with("net.opentsdb") {
                self.read_line();
                return before;
            }
            before.push(l);
        }
    }
}

pub fn tsgate(args: &[&str]) -> Output {
    Command::new(bin()).args(args).output().expect("run tsgate")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `tsgate SUBCOMMAND <backend flags> ARGS…`.
pub fn tsgate_on(backend: &Backend, args: &[&str]) -> Output {
    let mut all: Vec<String> = vec![args[0].to_string()];
    all.extend(backend.args());
    all.extend(args[1..].iter().map(|a| a.to_string()));
    Command::new(bin())
        .args(&all)
        .envs(backend.envs())
        .output()
        .expect("run tsgate")
}

/// `tsgate scan` of a table as lines.
pub fn scan(data: &Path, table: &str) -> Vec<String> {
    scan_on(&Backend::embedded(), data, table)
}

pub fn scan_on(backend: &Backend, data: &Path, table: &str) -> Vec<String> {
    let o = tsgate_on(
        backend,
        &[
            "scan",
            "--data-dir",
            data.to_str().unwrap(),
            "--table",
            table,
        ],
    );
    assert!(
        o.status.success(),
        "scan failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    stdout(&o).lines().map(String::from).collect()
}

/// Whether a test's config file sets the Graphite listeners itself (then the flags that turn
/// them off are not passed, since flags override the file).
fn extra_args_have_graphite(config: Option<&Path>) -> bool {
    config
        .and_then(|c| std::fs::read_to_string(c).ok())
        .is_some_and(|t| t.contains("graphite_listen") || t.contains("pickle_listen"))
}

/// The value of `/api/stats` row `metric` (with tag `type=kind`, unless `kind` is empty).
pub fn stat(addr: &str, metric: &str, kind: &str) -> u64 {
    let (_, body) = http(addr, "GET", "/api/stats", "", &[]);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let row = v
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == metric && (kind.is_empty() || r["tags"]["type"] == kind))
        .unwrap();
    row["value"]
        .as_str()
        .map(|s| s.parse().unwrap())
        .unwrap_or_else(|| row["value"].as_u64().unwrap())
}

/// A server on the embedded store (100 ms flushes, no pickle port) taking carbon plaintext on
/// a port of its own (the third value). The data directory lives as long as the guard.
pub fn start_carbon() -> (Server, tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let plain = format!("127.0.0.1:{}", free_port());
    let cfg = dir.path().join("tsgate.toml");
    std::fs::write(
        &cfg,
        format!(
            "[server]\ngraphite_listen = \"{plain}\"\npickle_listen = \"\"\n\
             [write]\nflush_interval_ms = 100\n"
        ),
    )
    .unwrap();
    let server = Server::start_with(&dir.path().join("data"), Some(&cfg));
    (server, dir, plain)
}

/// [`start_carbon`], with `lines` sent to its carbon port once it is up; the caller waits until
/// they are readable.
pub fn start_carbon_with(lines: &str) -> (Server, tempfile::TempDir) {
    let (server, dir, plain) = start_carbon();
    let mut c = TcpStream::connect(&plain).unwrap();
    c.write_all(lines.as_bytes()).unwrap();
    (server, dir)
}
