//! Authentication, TLS and the telnet switch, driven with a real client (curl) against a real
//! server: 401/403 in each endpoint family's format, rights per user and token, HTTPS with a
//! certificate made here, plain HTTP refused when TLS is required, telnet `put` refused.

mod common;
use common::*;
use prost::Message;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tsgate_prometheus::proto::{Label, Sample, TimeSeries, WriteRequest};

/// A curl run: status code (0 when curl failed), body, response headers (lower-cased), and
/// curl's stderr (for `-v`).
struct Curl {
    code: u16,
    body: String,
    headers: String,
    stderr: String,
    exit: i32,
}

fn curl(args: &[&str]) -> Curl {
    curl_stdin(args, None)
}

fn curl_stdin(args: &[&str], stdin: Option<&[u8]>) -> Curl {
    let dir = tempfile::tempdir().unwrap();
    let hdr = dir.path().join("h");
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "--max-time", "30", "-D"])
        .arg(&hdr)
        .args(["-w", "\n%{http_code}"])
        .args(args);
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .expect("curl is installed (tests/run.sh installs it)");
    if let Some(b) = stdin {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(b).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    Curl {
        code: code.trim().parse().unwrap_or(0),
        body: body.to_string(),
        headers: std::fs::read_to_string(&hdr)
            .unwrap_or_default()
            .to_ascii_lowercase(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        exit: out.status.code().unwrap_or(-1),
    }
}

/// `tsgate auth hash-password`, as a user would run it.
fn hash_password(pw: &str) -> String {
    let mut child = Command::new(bin())
        .args(["auth", "hash-password"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    writeln!(child.stdin.take().unwrap(), "{pw}").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// `tsgate auth hash-token`.
fn hash_token(token: &str) -> String {
    let mut child = Command::new(bin())
        .args(["auth", "hash-token"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    writeln!(child.stdin.take().unwrap(), "{token}").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

const READ_TOKEN: &str = "read-token-0123456789";
const WRITE_TOKEN: &str = "write-token-9876543210";

/// `[auth]` with a read+write user `alice`, a read-only user `bob`, a read token (by digest) and
/// a write token (from a file, so the secret stays out of the config).
fn auth_config(dir: &Path) -> String {
    let token_file = dir.join("write.token");
    std::fs::write(&token_file, format!("{WRITE_TOKEN}\n")).unwrap();
    format!(
        r#"
[auth]
enabled = true

[[auth.users]]
name = "alice"
password_hash = "{alice}"
rights = ["read", "write"]

[[auth.users]]
name = "bob"
password_hash = "{bob}"
rights = ["read"]

[[auth.tokens]]
name = "grafana"
token_sha256 = "{read}"
rights = ["read"]

[[auth.tokens]]
name = "prometheus"
token_file = "{file}"
rights = ["write"]
"#,
        alice = hash_password("alice-pw"),
        bob = hash_password("bob-pw"),
        read = hash_token(READ_TOKEN),
        file = token_file.display(),
    )
}

fn start(dir: &Path, config: &str) -> Server {
    let cfg = dir.join("tsgate.toml");
    std::fs::write(&cfg, config).unwrap();
    Server::start_with(&dir.join("data"), Some(&cfg))
}

fn bearer(t: &str) -> String {
    format!("Authorization: Bearer {t}")
}

fn remote_write_body(metric: &str, t_ms: i64, v: f64) -> Vec<u8> {
    let req = WriteRequest {
        timeseries: vec![TimeSeries {
            labels: vec![
                Label {
                    name: "__name__".into(),
                    value: metric.into(),
                },
                Label {
                    name: "job".into(),
                    value: "sec".into(),
                },
            ],
            samples: vec![Sample {
                value: v,
                timestamp: t_ms,
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    tsgate_prometheus::snappy::compress(&req.encode_to_vec())
}

fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Polls a curl query until `pred` holds on the body (points are queryable after a flush).
fn wait_until(args: &[&str], pred: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = curl(args);
        if r.code == 200 && pred(&r.body) {
            return r.body;
        }
        assert!(
            Instant::now() < deadline,
            "gave up waiting: {} {}",
            r.code,
            r.body
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn missing_or_wrong_credentials_get_401_in_each_family() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), &auth_config(dir.path()));
    let url = |p: &str| format!("http://{}{p}", s.addr);

    // OpenTSDB: its error JSON, and the challenge curl and browsers act on.
    let r = curl(&[&url("/api/query?start=1h-ago&m=sum:x")]);
    assert_eq!(r.code, 401, "{}", r.body);
    assert!(
        r.headers
            .contains("www-authenticate: basic realm=\"tsgate\""),
        "{}",
        r.headers
    );
    let j: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(j["error"]["code"], 401);
    // Prometheus: its error envelope.
    let r = curl(&[&url("/api/v1/query?query=up")]);
    assert_eq!(r.code, 401);
    let j: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(
        (j["status"].as_str(), j["errorType"].as_str()),
        (Some("error"), Some("unauthorized"))
    );
    // graphite-web.
    assert_eq!(curl(&[&url("/render?target=a.b&format=json")]).code, 401);
    assert_eq!(curl(&[&url("/metrics/find?query=*")]).code, 401);
    let r = curl(&[&url("/tags/autoComplete/tags")]);
    assert_eq!(r.code, 401);
    assert!(serde_json::from_str::<serde_json::Value>(&r.body).unwrap()["error"].is_string());

    // Wrong password, unknown user, unknown token, unknown scheme.
    for auth in [
        vec!["-u", "alice:wrong"],
        vec!["-u", "mallory:alice-pw"],
        vec!["-H", "Authorization: Bearer not-a-token"],
        vec!["-H", "Authorization: Digest x"],
    ] {
        let mut args = auth.clone();
        let u = url("/api/suggest?type=metrics");
        args.push(&u);
        let r = curl(&args);
        assert_eq!(r.code, 401, "{auth:?}: {}", r.body);
        assert!(r.body.contains("Authentication failed"), "{}", r.body);
    }
    // A write without credentials is refused and stores nothing.
    let r = curl(&[
        "-X",
        "POST",
        "--data-binary",
        r#"{"metric":"sec.anon","timestamp":1700000000,"value":1,"tags":{"h":"a"}}"#,
        &url("/api/put"),
    ]);
    assert_eq!(r.code, 401);
    let r = curl(&[
        "-u",
        "alice:alice-pw",
        &url("/api/suggest?type=metrics&q=sec."),
    ]);
    assert_eq!((r.code, r.body.as_str()), (200, "[]"));

    // The version stays open: health checks need no secret.
    let r = curl(&[&url("/api/version")]);
    assert_eq!(r.code, 200);
    assert!(r.body.contains("tsgate"));
}

#[test]
fn basic_and_bearer_rights_are_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), &auth_config(dir.path()));
    let url = |p: &str| format!("http://{}{p}", s.addr);
    let t = now_s() - 60;
    let put = |creds: &[&str], metric: &str, v: i64| {
        let body =
            format!(r#"{{"metric":"{metric}","timestamp":{t},"value":{v},"tags":{{"host":"a"}}}}"#);
        let mut args: Vec<&str> = creds.to_vec();
        let u = url("/api/put");
        args.extend([
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            &body,
            &u,
        ]);
        curl(&args)
    };
    let (rt, wt) = (bearer(READ_TOKEN), bearer(WRITE_TOKEN));

    // Basic with both rights: write and read.
    assert_eq!(put(&["-u", "alice:alice-pw"], "sec.basic", 7).code, 204);
    let q = url("/api/query?start=1h-ago&m=sum:sec.basic");
    wait_until(&["-u", "alice:alice-pw", &q], |b| {
        b.contains(&format!("\"{t}\":7"))
    });
    // A second request with the same credentials (served from the verified-credentials cache).
    assert_eq!(curl(&["-u", "alice:alice-pw", &q]).code, 200);

    // Read-only principals cannot write: 403 on /api/put and on remote write.
    for creds in [vec!["-u", "bob:bob-pw"], vec!["-H", rt.as_str()]] {
        let r = put(&creds, "sec.denied", 1);
        assert_eq!(r.code, 403, "{creds:?} {}", r.body);
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&r.body).unwrap()["error"]["code"],
            403
        );
        let mut args = creds.clone();
        let u = url("/api/v1/write");
        args.extend([
            "-H",
            "Content-Encoding: snappy",
            "-H",
            "Content-Type: application/x-protobuf",
            "--data-binary",
            "@-",
            &u,
        ]);
        let r = curl_stdin(&args, Some(&remote_write_body("sec_denied", t * 1000, 1.0)));
        assert_eq!(r.code, 403, "{}", r.body);
        let j: serde_json::Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(
            (j["status"].as_str(), j["errorType"].as_str()),
            (Some("error"), Some("forbidden"))
        );
    }
    // Other writes need the right too: UID assignment, annotation deletes via method_override.
    assert_eq!(
        curl(&["-H", &rt, &url("/api/uid/assign?metric=sec.uid")]).code,
        403
    );
    assert_eq!(
        curl(&[
            "-H",
            &rt,
            &url("/api/annotation?start_time=1&method_override=delete")
        ])
        .code,
        403
    );
    assert_eq!(
        curl(&[
            "-H",
            &rt,
            "-X",
            "POST",
            "--data-binary",
            "path=sec.tag;a=b",
            &url("/tags/tagSeries")
        ])
        .code,
        403
    );

    // The write token: /api/put and Prometheus remote write succeed…
    assert_eq!(put(&["-H", &wt], "sec.bearer", 42).code, 204);
    let u = url("/api/v1/write");
    let r = curl_stdin(
        &[
            "-H",
            &wt,
            "-H",
            "Content-Encoding: snappy",
            "-H",
            "Content-Type: application/x-protobuf",
            "--data-binary",
            "@-",
            &u,
        ],
        Some(&remote_write_body("sec_remote", t * 1000, 2.5)),
    );
    assert_eq!(r.code, 204, "{}", r.body);
    // …but it cannot read.
    let r = curl(&["-H", &wt, &url("/api/query?start=1h-ago&m=sum:sec.bearer")]);
    assert_eq!(r.code, 403, "{}", r.body);
    let r = curl(&["-H", &wt, &url("/api/v1/query?query=sec_remote")]);
    assert_eq!(r.code, 403);
    assert!(r.body.contains("\"forbidden\""), "{}", r.body);

    // What the write token stored, the read token reads back (OpenTSDB and PromQL).
    let q = url("/api/query?start=1h-ago&m=sum:sec.bearer");
    wait_until(&["-H", &rt, &q], |b| b.contains(&format!("\"{t}\":42")));
    let q = url(&format!("/api/v1/query?query=sec_remote&time={}", t + 1));
    wait_until(&["-H", &rt, &q], |b| b.contains("\"2.5\""));
    // Read-only basic user reads too; the rejected writes stored nothing.
    let r = curl(&["-u", "bob:bob-pw", &url("/api/suggest?type=metrics&q=sec.")]);
    assert_eq!(r.code, 200);
    let names: Vec<String> = serde_json::from_str(&r.body).unwrap();
    assert!(
        names.contains(&"sec.basic".to_string()) && names.contains(&"sec.bearer".to_string()),
        "{names:?}"
    );
    assert!(
        !names.iter().any(|n| n.contains("denied") || n == "sec.uid"),
        "{names:?}"
    );
}

#[test]
fn bad_auth_config_stops_the_server_with_a_named_error() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("bad.toml");
    std::fs::write(&cfg, "[auth]\nenabled = true\n[[auth.users]]\nname = \"x\"\npassword_hash = \"hunter2\"\nrights = [\"read\"]\n").unwrap();
    let data = dir.path().join("data");
    let out = tsgate(&[
        "serve",
        "--config",
        cfg.to_str().unwrap(),
        "--data-dir",
        data.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--graphite-listen",
        "",
        "--pickle-listen",
        "",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("auth.users[0]") && err.contains("argon2"),
        "{err}"
    );
}

#[test]
fn telnet_is_off_when_auth_is_on_unless_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), &auth_config(dir.path()));
    let mut t = s.telnet();
    t.send(&format!("put sec.telnet {} 1 host=a\n", now_s()));
    let line = t.read_line();
    assert!(line.contains("telnet is off"), "{line:?}");
    assert_eq!(t.read_line(), "", "the connection closes");
    // Nothing was stored: the metric has no UID.
    let r = curl(&[
        "-u",
        "alice:alice-pw",
        &format!("http://{}/api/suggest?type=metrics&q=sec.telnet", s.addr),
    ]);
    assert_eq!((r.code, r.body.as_str()), (200, "[]"));
    drop(s);

    // `server.telnet = true` keeps it on with auth (an explicit choice, warned about at start).
    let dir = tempfile::tempdir().unwrap();
    let cfg = format!("[server]\ntelnet = true\n{}", auth_config(dir.path()));
    let s = start(dir.path(), &cfg);
    let mut t = s.telnet();
    t.send(&format!("put sec.telnet {} 1 host=a\n", now_s()));
    assert!(t.sync().is_empty(), "put accepted silently");
}

/// A self-signed certificate for 127.0.0.1 and localhost, written as PEM files.
fn self_signed(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let ck =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    std::fs::write(&key, ck.key_pair.serialize_pem()).unwrap();
    (cert, key)
}

/// Starts a server that may not answer plain HTTP: waits on HTTPS with the test's CA.
fn start_tls(dir: &Path, config: &str, ca: &Path) -> Server {
    let cfg = dir.join("tsgate.toml");
    std::fs::write(&cfg, config).unwrap();
    let addr = format!("127.0.0.1:{}", free_port());
    let data = dir.join("data");
    let child = Command::new(bin())
        .args(["serve", "--data-dir"])
        .arg(&data)
        .args([
            "--listen",
            &addr,
            "--log-level",
            "warn",
            "--graphite-listen",
            "",
            "--pickle-listen",
            "",
            "--config",
        ])
        .arg(&cfg)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let s = Server {
        child: Some(child),
        addr,
        data,
        config: Some(cfg),
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while curl(&[
        "--cacert",
        ca.to_str().unwrap(),
        &format!("https://{}/api/version", s.addr),
    ])
    .code
        != 200
    {
        assert!(Instant::now() < deadline, "tsgate did not start with TLS");
        std::thread::sleep(Duration::from_millis(100));
    }
    s
}

#[test]
fn https_with_auth_keepalive_and_plaintext_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = self_signed(dir.path());
    let cfg = format!(
        "[server.tls]\ncert = \"{}\"\nkey = \"{}\"\n{}",
        cert.display(),
        key.display(),
        auth_config(dir.path())
    );
    let s = start_tls(dir.path(), &cfg, &cert);
    let ca = cert.to_str().unwrap();
    let https = |p: &str| format!("https://{}{p}", s.addr);
    let t = now_s() - 60;

    // Auth applies inside TLS as outside.
    assert_eq!(
        curl(&["--cacert", ca, &https("/api/query?start=1h-ago&m=sum:x")]).code,
        401
    );
    let body = format!(r#"{{"metric":"sec.tls","timestamp":{t},"value":3,"tags":{{"host":"a"}}}}"#);
    let r = curl(&[
        "--cacert",
        ca,
        "-u",
        "alice:alice-pw",
        "--data-binary",
        &body,
        &https("/api/put"),
    ]);
    assert_eq!(r.code, 204, "{} {}", r.body, r.stderr);
    let q = https("/api/query?start=1h-ago&m=sum:sec.tls");
    wait_until(&["--cacert", ca, "-H", &bearer(READ_TOKEN), &q], |b| {
        b.contains(&format!("\"{t}\":3"))
    });

    // Keep-alive over TLS: curl sends both requests on one connection.
    let v = https("/api/version");
    let r = curl(&["-v", "--cacert", ca, "-H", &bearer(READ_TOKEN), &q, &v]);
    assert_eq!(r.exit, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("Re-using existing connection"),
        "{}",
        r.stderr
    );
    assert_eq!(
        r.stderr
            .matches("TLSv1.3 (OUT), TLS handshake, Client hello")
            .count(),
        1,
        "{}",
        r.stderr
    );

    // The certificate is checked: without the CA, curl refuses it (exit 60).
    let r = curl(&[&v]);
    assert_eq!(r.exit, 60, "{}", r.stderr);

    // Plain HTTP on the TLS port: 400 saying why, and nothing stored.
    let r = curl(&[
        "-u",
        "alice:alice-pw",
        "--data-binary",
        &body.replace("sec.tls", "sec.plain"),
        &format!("http://{}/api/put", s.addr),
    ]);
    assert_eq!(r.code, 400, "{}", r.body);
    assert!(r.body.contains("requires TLS"), "{}", r.body);
    let r = curl(&[
        "--cacert",
        ca,
        "-u",
        "alice:alice-pw",
        &https("/api/suggest?type=metrics&q=sec."),
    ]);
    assert_eq!(r.body, r#"["sec.tls"]"#);
}

#[test]
fn https_and_plain_http_together_when_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = self_signed(dir.path());
    let cfg = format!(
        "[server.tls]\ncert = \"{}\"\nkey = \"{}\"\nallow_plaintext = true\n",
        cert.display(),
        key.display()
    );
    let s = start_tls(dir.path(), &cfg, &cert);
    assert_eq!(
        curl(&[&format!("http://{}/api/aggregators", s.addr)]).code,
        200
    );
    let r = curl(&[
        "--cacert",
        cert.to_str().unwrap(),
        &format!("https://{}/api/aggregators", s.addr),
    ]);
    assert_eq!(r.code, 200);
    assert!(r.body.contains("\"sum\""));
    // Without auth, telnet stays on beside both.
    let mut t = s.telnet();
    assert!(t.sync().is_empty());
}
