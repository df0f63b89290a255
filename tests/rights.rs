//! Rights and admission against real servers: every route of `server::routes::ROUTES` ×
//! {no credentials, read, write, admin} with auth on (none reachable without its right, no
//! secret in any answer) and the same requests with auth off (answered as the admin is);
//! deletes and UID assignment; silent sockets that must not lock authenticated clients out.

mod common;
use common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};
use tsgate::server::auth::config::{hash_password, hex, token_sha256};
use tsgate::server::routes::{Need, When, ROUTES};

const READ: &str = "reader-token-1111";
const WRITE: &str = "writer-token-2222";
const ASSIGN: &str = "assigner-token-3333";
const ADMIN: &str = "admin-token-4444";

/// `[auth]` with one token per right, and a Basic user whose hash must never be shown.
fn auth_section(password_hash: &str) -> String {
    let tok = |name: &str, t: &str, rights: &str| {
        format!(
            "[[auth.tokens]]\nname = \"{name}\"\ntoken_sha256 = \"{}\"\nrights = {rights}\n",
            hex(&token_sha256(t))
        )
    };
    format!(
        "[auth]\nenabled = true\n[[auth.users]]\nname = \"carol\"\npassword_hash = \"{password_hash}\"\nrights = [\"read\"]\n{}{}{}{}",
        tok("reader", READ, "[\"read\"]"),
        tok("writer", WRITE, "[\"write\"]"),
        tok("assigner", ASSIGN, "[\"write\", \"assign\"]"),
        tok("admin", ADMIN, "[\"admin\"]"),
    )
}

fn start(dir: &Path, name: &str, config: &str) -> Server {
    let cfg = dir.join(format!("{name}.toml"));
    std::fs::write(&cfg, config).unwrap();
    Server::start_with(&dir.join(name), Some(&cfg))
}

fn call(s: &Server, method: &str, path: &str, body: &str, token: Option<&str>) -> (u16, String) {
    let auth = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = auth
        .as_deref()
        .map(|a| vec![("Authorization", a)])
        .unwrap_or_default();
    http(&s.addr, method, path, body, &headers)
}

/// The request that reaches a route: one of its methods, a path it matches, and (for a GET of
/// a graphite-web `/metrics` path) the `query` that keeps it from being the exposition.
fn request_for(r: &tsgate::server::routes::Route) -> (String, String) {
    let method = r.methods.example().to_string();
    let mut path = r.path.example();
    if r.when == When::Always && method == "GET" {
        path.push_str("?query=x");
    }
    (method, path)
}

#[test]
fn every_route_needs_its_right_and_answers_as_before_without_auth() {
    let dir = tempfile::tempdir().unwrap();
    let hash = hash_password("carol-pw").unwrap();
    let on = start(
        dir.path(),
        "on",
        &format!(
            "[query]\nallow_delete = true\n[admin]\nenabled = true\n{}",
            auth_section(&hash)
        ),
    );
    let off = start(
        dir.path(),
        "off",
        "[query]\nallow_delete = true\n[admin]\nenabled = true\n",
    );
    let secrets: Vec<String> = [READ, WRITE, ASSIGN, ADMIN]
        .iter()
        .flat_map(|t| [t.to_string(), hex(&token_sha256(t))])
        .chain([hash.clone()])
        .collect();
    let holds = |token: &str, need: Need| match need {
        Need::Open => true,
        Need::Read => [READ, ADMIN].contains(&token),
        Need::Write => [WRITE, ASSIGN, ADMIN].contains(&token),
        Need::Assign => [ASSIGN, ADMIN].contains(&token),
        Need::Admin => token == ADMIN,
    };
    let mut checked = Vec::new();
    for (i, r) in ROUTES.iter().enumerate() {
        let (method, path) = request_for(r);
        let what = format!("route {i}: {method} {path} ({:?})", r.need);
        let (code, body) = call(&on, &method, &path, "", None);
        if r.need == Need::Open {
            assert!(code != 401 && code != 403 && code != 0, "{what}: {code}");
        } else {
            assert_eq!(code, 401, "{what} without credentials: {body}");
        }
        for token in [READ, WRITE, ASSIGN, ADMIN] {
            let (code, body) = call(&on, &method, &path, "", Some(token));
            if holds(token, r.need) {
                assert!(
                    code != 401 && code != 403 && code != 0,
                    "{what} with {token}: {code} {body}"
                );
            } else {
                assert_eq!(code, 403, "{what} with {token}: {body}");
            }
            for s in &secrets {
                assert!(
                    !body.contains(s.as_str()),
                    "{what} with {token} shows a secret"
                );
            }
        }
        // Auth off: the same request without credentials is answered as the admin's was
        // (dispatch does not depend on auth).
        let (admin_code, _) = call(&on, &method, &path, "", Some(ADMIN));
        let (code, body) = call(&off, &method, &path, "", None);
        assert_eq!(code, admin_code, "{what} with auth off: {body}");
        checked.push(r.need);
    }
    // The walk met every kind of right.
    for need in [
        Need::Open,
        Need::Read,
        Need::Write,
        Need::Assign,
        Need::Admin,
    ] {
        assert!(checked.contains(&need), "no route needs {need:?}");
    }

    // The logical method: an override on GET and a parsed delete need what they do.
    let (code, _) = call(
        &on,
        "GET",
        "/api/annotation?start_time=1&method_override=delete",
        "",
        Some(READ),
    );
    assert_eq!(code, 403);
    let (code, _) = call(
        &on,
        "GET",
        "/api/tree?method_override=post",
        "",
        Some(WRITE),
    );
    assert_ne!(code, 403);
}

#[test]
fn no_secret_leaves_and_deletes_and_assignment_need_their_rights() {
    let dir = tempfile::tempdir().unwrap();
    let hash = hash_password("carol-pw").unwrap();
    let s = start(
        dir.path(),
        "d",
        &format!(
            "[write]\nflush_interval_ms = 100\n[query]\nallow_delete = true\n{}",
            auth_section(&hash)
        ),
    );
    // /api/config with the read right: everything but the secrets.
    let (code, body) = call(&s, "GET", "/api/config", "", Some(READ));
    assert_eq!(code, 200);
    assert!(body.contains("tsgate.auth.enabled"), "{body}");
    assert!(body.contains("<redacted>"), "{body}");
    assert!(!body.contains("$argon2"), "{body}");
    for t in [READ, WRITE, ASSIGN, ADMIN] {
        assert!(!body.contains(&hex(&token_sha256(t))), "{body}");
    }

    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        - 60;
    let put =
        format!(r#"[{{"metric":"rights.m","timestamp":{t},"value":5,"tags":{{"host":"a"}}}}]"#);
    assert_eq!(call(&s, "POST", "/api/put", &put, Some(WRITE)).0, 204);
    let q = format!("/api/query?start={}&m=sum:rights.m", t - 10);
    let points = |who: &str| -> usize {
        let (code, body) = call(&s, "GET", &q, "", Some(who));
        assert_eq!(code, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| s["dps"].as_object().unwrap().len())
            .sum()
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while points(READ) == 0 {
        assert!(Instant::now() < deadline, "the point never became readable");
        std::thread::sleep(Duration::from_millis(100));
    }

    // A reader cannot delete, however `delete` is spelled; a writer cannot either, and learns
    // nothing from trying.
    let del = |spelled: &str| {
        format!(
            r#"{{"start":{},"{spelled}":true,"queries":[{{"aggregator":"sum","metric":"rights.m"}}]}}"#,
            t - 10
        )
    };
    for spelled in [
        "delete",
        r"d\u0065lete",
        r"\u0064\u0065\u006c\u0065\u0074\u0065",
    ] {
        let (code, body) = call(&s, "POST", "/api/query", &del(spelled), Some(READ));
        assert_eq!(code, 403, "{spelled}: {body}");
    }
    let (code, body) = call(&s, "DELETE", "/api/query", &del("x"), Some(WRITE));
    assert_eq!(code, 403, "{body}");
    assert!(
        !body.contains("dps") && !body.contains("rights.m"),
        "{body}"
    );
    assert_eq!(points(READ), 1, "nothing was deleted");

    // The admin deletes, and is told how much, not what.
    let (code, body) = call(&s, "POST", "/api/query", &del(r"d\u0065lete"), Some(ADMIN));
    assert_eq!(code, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"deleted": {"series": 1, "datapoints": 1}})
    );
    assert_eq!(points(READ), 0);

    // UID assignment says which names exist: a writer alone may not ask.
    let (code, body) = call(
        &s,
        "GET",
        "/api/uid/assign?metric=rights.m",
        "",
        Some(WRITE),
    );
    assert_eq!(code, 403, "{body}");
    assert!(!body.contains("rights.m"), "{body}");
    let (code, body) = call(
        &s,
        "GET",
        "/api/uid/assign?metric=rights.new",
        "",
        Some(ASSIGN),
    );
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("rights.new"), "{body}");
    let (code, _) = call(&s, "GET", "/api/dropcaches", "", Some(WRITE));
    assert_eq!(code, 403);
    let (code, _) = call(&s, "GET", "/api/dropcaches", "", Some(ADMIN));
    assert_eq!(code, 200);
}

/// An HTTP/1.1 keep-alive exchange on an open socket: the status and body of one answer.
fn keepalive(c: &mut TcpStream, path: &str, token: &str) -> (u16, String) {
    c.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n")
            .as_bytes(),
    )
    .unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map(|v| v.trim().parse().unwrap())
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                let code = head.split_whitespace().nth(1).unwrap().parse().unwrap();
                return (
                    code,
                    String::from_utf8_lossy(&buf[end + 4..end + 4 + len]).into_owned(),
                );
            }
        }
        let n = c.read(&mut chunk).unwrap_or(0);
        if n == 0 {
            return (0, String::from_utf8_lossy(&buf).into_owned());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Whether the server closed a socket within `within` (whatever it said first).
fn closed_within(c: &mut TcpStream, within: Duration) -> bool {
    c.set_read_timeout(Some(within)).unwrap();
    let mut b = [0u8; 256];
    loop {
        match c.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return false
            }
            Err(_) => return true,
        }
    }
}

#[test]
fn silent_sockets_do_not_lock_authenticated_clients_out() {
    let dir = tempfile::tempdir().unwrap();
    let graphite = format!("127.0.0.1:{}", free_port());
    let s = start(
        dir.path(),
        "a",
        &format!(
            "[server]\ngraphite_listen = \"{graphite}\"\npickle_listen = \"\"\n[write]\nflush_interval_ms = 100\n\
             [limits]\nmax_connections = 50\ncarbon_max_connections = 20\nmax_connections_per_ip = 40\n\
             handshake_timeout_ms = 4000\n{}",
            auth_section(&hash_password("carol-pw").unwrap())
        ),
    );
    // Anyone fills every slot of both ports with sockets that never speak.
    let opened = Instant::now();
    let mut silent: Vec<TcpStream> = (0..120)
        .filter_map(|_| TcpStream::connect(&s.addr).ok())
        .collect();
    let mut silent_g: Vec<TcpStream> = (0..40)
        .filter_map(|_| TcpStream::connect(&graphite).ok())
        .collect();
    assert!(silent.len() >= 100 && silent_g.len() >= 30);
    std::thread::sleep(Duration::from_millis(1200));

    // An authenticated client is served at once, well before the silent ones time out.
    let t0 = Instant::now();
    let (code, body) = call(&s, "GET", "/api/suggest?type=metrics", "", Some(READ));
    assert_eq!((code, body.as_str()), (200, "[]"));
    let took = t0.elapsed();
    eprintln!(
        "authenticated request behind {} silent sockets: {took:?}",
        silent.len()
    );
    assert!(took < Duration::from_secs(2), "{took:?}");
    // So is a carbon sender on its own port, and its point lands.
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        - 60;
    let mut g = TcpStream::connect(&graphite).unwrap();
    g.write_all(format!("admission.carbon 3 {t}\n").as_bytes())
        .unwrap();
    g.shutdown(std::net::Shutdown::Write).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (code, body) = call(
            &s,
            "GET",
            &format!("/api/query?start={}&m=sum:admission.carbon", t - 10),
            "",
            Some(READ),
        );
        if code == 200 && body.contains(&format!("\"{t}\":3")) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "carbon point missing: {code} {body}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // Unproven sockets are closed at limits.handshake_timeout_ms (4 s), not idle_timeout_ms
    // (300 s). The carbon sender displaced only the first silent carbon socket, so the second
    // one times it; HTTP clients above may have displaced some of the port's silent sockets.
    assert!(closed_within(&mut silent_g[1], Duration::from_secs(8)));
    let took = opened.elapsed();
    assert!(
        took >= Duration::from_millis(3500) && took < Duration::from_secs(9),
        "silent sockets closed after {took:?}"
    );
    assert!(closed_within(&mut silent[39], Duration::from_secs(2)));
    drop(silent);
    drop(silent_g);
    std::thread::sleep(Duration::from_millis(300));

    // Proven connections keep their slots: 40 authenticated keep-alive clients from one address
    // hold limits.max_connections_per_ip, and the next one from it is refused, by name.
    let mut held: Vec<TcpStream> = Vec::new();
    for _ in 0..40 {
        let mut c = TcpStream::connect(&s.addr).unwrap();
        // An open route proves the connection too when its credentials are valid.
        let path = ["/api/version", "/api/suggest?type=metrics"][held.len() % 2];
        assert_eq!(keepalive(&mut c, path, READ).0, 200);
        held.push(c);
    }
    // Past the handshake deadline: authenticated connections are proven, so they stay and
    // none of them can be displaced.
    std::thread::sleep(Duration::from_millis(4500));
    let (code, body) = call(&s, "GET", "/api/version", "", None);
    assert_eq!(code, 503, "{body}");
    assert!(
        body.contains("limits.max_connections_per_ip = 40"),
        "{body}"
    );
    for c in [0, 39] {
        let (code, body) = keepalive(&mut held[c], "/api/suggest?type=metrics", READ);
        assert_eq!(code, 200, "{body}");
    }
    drop(held);
}
