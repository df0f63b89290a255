//! The web UI in a real browser: Debian's headless Chromium, driven over the DevTools protocol.
//! Data comes in through telnet, `/api/put`, remote write and carbon plaintext; then, for each
//! query language, the page draws the expected series and points, shows a bad query's error,
//! shows the same view again after a reload of its URL, and logs no console error; the explore
//! page lists the metrics and the Graphite tree; the status page counts what came in.
//! Screenshots land in `target/ui-screenshots/` (look at them after a change to the UI).
//!
//! Without Chromium the test says so and passes, unless `CI` is set: then it fails.

mod common;
use common::*;
use prost::Message;
use serde_json::{json, Value};
use std::io::Write as _;
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tsgate_prometheus::proto::{Label, Sample, TimeSeries, WriteRequest};
use tungstenite::{Message as Ws, WebSocket};

/// Chromium's binary, or `None` (said loudly) when it is missing outside CI.
fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TSGATE_CHROMIUM") {
        return Some(p.into());
    }
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "chromium is not installed and CI is set: `apt-get install chromium` (tests/run.sh does)"
    );
    eprintln!("SKIPPED: chromium is not installed (bash tests/run.sh installs it)");
    None
}

fn screenshots() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    let dir = target.join("ui-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// One headless Chromium and one page in it, attached over the DevTools protocol.
struct Browser {
    child: Child,
    ws: WebSocket<TcpStream>,
    session: String,
    next: u64,
    /// Console errors, uncaught exceptions and failed loads, as the page reported them.
    errors: Vec<Value>,
    _profile: tempfile::TempDir,
}

impl Browser {
    fn launch(bin: &PathBuf) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let child = Command::new(bin)
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-component-update",
                "--remote-debugging-port=0",
                "--window-size=1280,900",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromium");
        // Chromium writes its port and browser target's path here once it listens.
        let port_file = profile.path().join("DevToolsActivePort");
        let deadline = Instant::now() + Duration::from_secs(60);
        let (port, path) = loop {
            if let Ok(t) = std::fs::read_to_string(&port_file) {
                let mut l = t.lines();
                if let (Some(port), Some(path)) = (l.next(), l.next()) {
                    break (port.to_string(), path.to_string());
                }
            }
            assert!(Instant::now() < deadline, "chromium did not start");
            std::thread::sleep(Duration::from_millis(100));
        };
        let stream = TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let (ws, _) = tungstenite::client(format!("ws://127.0.0.1:{port}{path}"), stream)
            .expect("DevTools websocket");
        let mut b = Browser {
            child,
            ws,
            session: String::new(),
            next: 0,
            errors: Vec::new(),
            _profile: profile,
        };
        let target = b.call("Target.createTarget", json!({"url": "about:blank"}));
        let attached = b.call(
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
        );
        b.session = attached["sessionId"].as_str().unwrap().to_string();
        for domain in ["Page.enable", "Runtime.enable", "Log.enable"] {
            b.call(domain, json!({}));
        }
        b.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": false}),
        );
        b
    }

    /// Sends one command (to the page once attached) and waits for its answer, noting the
    /// error events that arrive meanwhile.
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            msg["sessionId"] = json!(self.session);
        }
        self.ws.send(Ws::text(msg.to_string())).unwrap();
        loop {
            let m = self.ws.read().expect("DevTools message");
            let Ws::Text(t) = m else { continue };
            let v: Value = serde_json::from_str(&t).unwrap();
            if v["id"] == id {
                assert!(v["error"].is_null(), "{method}: {}", v["error"]);
                return v["result"].clone();
            }
            self.note(&v);
        }
    }

    fn note(&mut self, v: &Value) {
        let p = &v["params"];
        match v["method"].as_str() {
            Some("Runtime.exceptionThrown") => self.errors.push(p["exceptionDetails"].clone()),
            Some("Runtime.consoleAPICalled") if p["type"] == "error" => {
                self.errors.push(p["args"].clone())
            }
            Some("Log.entryAdded") if p["entry"]["level"] == "error" => {
                self.errors.push(p["entry"].clone())
            }
            _ => {}
        }
    }

    /// Evaluates a JavaScript expression in the page (awaiting a promise) and returns its value.
    fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true, "awaitPromise": true}),
        );
        assert!(
            r["exceptionDetails"].is_null(),
            "{expr}: {}",
            r["exceptionDetails"]
        );
        r["result"]["value"].clone()
    }

    /// Waits until a JavaScript expression is truthy; returns its value.
    fn wait(&mut self, expr: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let v = self.eval(expr);
            if !(v.is_null() || v == json!(false) || v == json!("") || v == json!(0)) {
                return v;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {expr}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn goto(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url}));
        self.wait("document.readyState === 'complete' && !!document.querySelector('main section')");
    }

    fn reload(&mut self) {
        self.eval("window.tsgateUI = null");
        self.call("Page.reload", json!({}));
        self.wait("document.readyState === 'complete' && !!document.querySelector('main section')");
    }

    fn screenshot(&mut self, name: &str) {
        use base64::Engine as _;
        let r = self.call("Page.captureScreenshot", json!({"format": "png"}));
        let png = base64::engine::general_purpose::STANDARD
            .decode(r["data"].as_str().unwrap())
            .unwrap();
        assert!(png.starts_with(b"\x89PNG"), "{name}");
        std::fs::write(screenshots().join(format!("{name}.png")), png).unwrap();
    }

    /// Console errors since the last call, less failed loads of `allowed` URLs (a bad query's
    /// 400 is one).
    fn console_errors(&mut self, allowed: &[&str]) -> Vec<Value> {
        // Drain events already sent.
        self.eval("1");
        std::mem::take(&mut self.errors)
            .into_iter()
            .filter(|e| {
                let url = e["url"].as_str().unwrap_or("");
                !(e["source"] == "network" && allowed.iter().any(|a| url.contains(a)))
            })
            .collect()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const MINUTE: i64 = 60;
const POINTS: i64 = 10;

/// Ten points a minute apart from `t0`, through four protocols: two series by telnet, one
/// by `/api/put`, two by remote write, two carbon paths.
fn seed(s: &Server, carbon: &str, t0: i64) {
    let mut t = s.telnet();
    for i in 0..POINTS {
        let ts = t0 + i * MINUTE;
        t.send(&format!(
            "put ui.telnet.cpu {ts} {i} host=a\nput ui.telnet.cpu {ts} {} host=b\n",
            i * 2
        ));
    }
    assert!(t.sync().is_empty(), "telnet put refused");
    let puts: Vec<Value> = (0..POINTS)
        .map(|i| json!({"metric": "ui.http.mem", "timestamp": t0 + i * MINUTE, "value": 100 + i, "tags": {"host": "a"}}))
        .collect();
    assert_eq!(
        s.http("POST", "/api/put", &Value::from(puts).to_string()).0,
        204
    );
    let series = |instance: &str, scale: f64| TimeSeries {
        labels: vec![
            Label {
                name: "__name__".into(),
                value: "ui_rw_requests".into(),
            },
            Label {
                name: "instance".into(),
                value: instance.into(),
            },
            Label {
                name: "job".into(),
                value: "api".into(),
            },
        ],
        samples: (0..POINTS)
            .map(|i| Sample {
                value: scale * i as f64,
                timestamp: (t0 + i * MINUTE) * 1000,
            })
            .collect(),
        ..Default::default()
    };
    let body = WriteRequest {
        timeseries: vec![series("x", 1.0), series("y", 3.0)],
        ..Default::default()
    };
    let body = tsgate_prometheus::snappy::compress(&body.encode_to_vec());
    let (code, _) = http_bytes(
        &s.addr,
        "POST",
        "/api/v1/write",
        &body,
        &[
            ("Content-Encoding", "snappy"),
            ("Content-Type", "application/x-protobuf"),
            ("X-Prometheus-Remote-Write-Version", "0.1.0"),
        ],
    );
    assert_eq!(code, 204);
    let mut c = TcpStream::connect(carbon).unwrap();
    for i in 0..POINTS {
        let ts = t0 + i * MINUTE;
        write!(
            c,
            "ui.graphite.web01.load {} {ts}\nui.graphite.web02.load {} {ts}\n",
            i as f64 / 2.0,
            i as f64 / 4.0
        )
        .unwrap();
    }
    drop(c);
    // Every protocol's points readable (carbon is acknowledged by nothing: wait for it).
    let deadline = Instant::now() + Duration::from_secs(30);
    let want = [
        ("ui.telnet.cpu", 2),
        ("ui.http.mem", 1),
        ("ui_rw_requests", 2),
        ("ui.graphite.web01.load", 1),
        ("ui.graphite.web02.load", 1),
    ];
    for (metric, n) in want {
        let q = format!(
            "/api/query?start={t0}&end={}&m=sum:{metric}{{{}}}",
            t0 + POINTS * MINUTE,
            if n > 1 { "host=*" } else { "" }
        )
        .replace("ui_rw_requests{host=*}", "ui_rw_requests{instance=*}");
        loop {
            let (code, body) = s.http("GET", &q, "");
            let points: usize = serde_json::from_str::<Value>(&body)
                .ok()
                .and_then(|v| {
                    v.as_array().map(|a| {
                        a.iter()
                            .map(|s| s["dps"].as_object().map_or(0, |d| d.len()))
                            .sum()
                    })
                })
                .unwrap_or(0);
            if code == 200 && points == n * POINTS as usize {
                break;
            }
            assert!(Instant::now() < deadline, "{metric}: {code} {body}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// The range the queries ask for: from half a minute before the first point to half a minute
/// after the last (graphite-web, as whisper, leaves out a point at `from`; PromQL's steps each
/// find the point half a minute before them).
fn range_start(t0: i64) -> i64 {
    t0 - MINUTE / 2
}

fn range_end(t0: i64) -> i64 {
    t0 + (POINTS - 1) * MINUTE + MINUTE / 2
}

/// The query page of one language over the seeded minutes, with an empty expression.
fn query_url(base: &str, lang: &str, t0: i64) -> String {
    format!(
        "{base}/#/query?lang={lang}&start={}&end={}&step=60",
        range_start(t0),
        range_end(t0)
    )
}

/// Types an expression, runs it, and waits for the page to have drawn or failed.
fn run_query(b: &mut Browser, expr: &str) -> Value {
    b.eval(&format!(
        "window.tsgateUI = null; document.getElementById('expr').value = {}; \
         document.getElementById('run').click(); 1",
        json!(expr)
    ));
    b.wait(
        "window.tsgateUI && ['ok', 'error'].includes(window.tsgateUI.state) && \
         ['ok', 'nodata', 'error'].includes(document.getElementById('graph').dataset.state)",
    );
    b.eval(
        "({ui: window.tsgateUI, \
           legend: [...document.querySelectorAll('#graph .u-legend .u-series .u-label')].slice(1).map(e => e.textContent), \
           points: Number(document.getElementById('graph').dataset.points), \
           error: document.getElementById('error').hidden ? null : document.getElementById('error').textContent, \
           canvas: !!document.querySelector('#graph canvas'), \
           href: location.href})",
    )
}

struct Case {
    lang: &'static str,
    expr: &'static str,
    legend: &'static [&'static str],
    bad: &'static str,
    /// The API request that answers `bad`, to compare the page's error with.
    bad_api: fn(&str, i64) -> String,
    /// Part of the failed request's URL (the browser logs its 400 as a network error).
    bad_url: &'static str,
}

#[test]
fn query_explore_and_status_pages_in_chromium() {
    let Some(bin) = chromium() else { return };
    let (s, _dir, carbon) = start_carbon();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let t0 = (now - 3600) / MINUTE * MINUTE;
    seed(&s, &carbon, t0);
    let base = format!("http://{}", s.addr);
    let mut b = Browser::launch(&bin);

    let cases = [
        Case {
            lang: "promql",
            expr: "ui_rw_requests",
            legend: &[
                r#"ui_rw_requests{instance="x", job="api"}"#,
                r#"ui_rw_requests{instance="y", job="api"}"#,
            ],
            bad: "sum(ui_rw_requests",
            bad_api: |q, t0| {
                format!(
                    "/api/v1/query_range?query={}&start={}&end={}&step=60",
                    enc(q),
                    range_start(t0),
                    range_end(t0)
                )
            },
            bad_url: "api/v1/query_range",
        },
        Case {
            lang: "opentsdb",
            expr: "sum:ui.telnet.cpu{host=*}\nsum:ui.http.mem",
            legend: &[
                "ui.telnet.cpu{host=a}",
                "ui.telnet.cpu{host=b}",
                "ui.http.mem{host=a}",
            ],
            bad: "sum:ui.no.such.metric",
            bad_api: |q, t0| {
                format!(
                    "/api/query?start={}&end={}&m={}",
                    range_start(t0),
                    range_end(t0),
                    enc(q)
                )
            },
            bad_url: "api/query",
        },
        Case {
            lang: "graphite",
            expr: "ui.graphite.*.load",
            legend: &["ui.graphite.web01.load", "ui.graphite.web02.load"],
            bad: "noSuchFunction(ui.graphite.*.load)",
            bad_api: |q, t0| {
                format!(
                    "/render?target={}&from={}&until={}&format=json",
                    enc(q),
                    range_start(t0),
                    range_end(t0)
                )
            },
            bad_url: "render?",
        },
    ];
    for c in &cases {
        b.goto(&query_url(&base, c.lang, t0));
        let active = b.eval("document.querySelector('button.lang.active').dataset.lang");
        assert_eq!(active, c.lang);
        let got = run_query(&mut b, c.expr);
        assert_eq!(got["ui"]["state"], "ok", "{}: {got}", c.lang);
        let mut legend: Vec<String> = serde_json::from_value(got["legend"].clone()).unwrap();
        legend.sort();
        let mut want: Vec<String> = c.legend.iter().map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!(legend, want, "{}: the legend", c.lang);
        assert_eq!(
            got["points"],
            json!(c.legend.len() as i64 * POINTS),
            "{}: points drawn {got}",
            c.lang
        );
        assert!(got["canvas"].as_bool().unwrap(), "{}: no canvas", c.lang);
        let href = got["href"].as_str().unwrap().to_string();
        assert!(href.contains(&format!("lang={}", c.lang)), "{href}");
        b.screenshot(&format!("query-{}", c.lang));

        // A reload of the page's URL shows the same view.
        b.reload();
        b.wait("window.tsgateUI && window.tsgateUI.state === 'ok' && document.getElementById('graph').dataset.state === 'ok'");
        let again = b.eval(
            "({series: window.tsgateUI.series, expr: document.getElementById('expr').value, \
               lang: document.querySelector('button.lang.active').dataset.lang, href: location.href, \
               legend: document.querySelectorAll('#graph .u-legend .u-series').length - 1})",
        );
        assert_eq!(
            again["series"], got["ui"]["series"],
            "{}: after reload",
            c.lang
        );
        assert_eq!(again["expr"], c.expr);
        assert_eq!(again["lang"], c.lang);
        assert_eq!(again["href"], json!(href));
        assert_eq!(again["legend"], json!(c.legend.len()));

        // The table of last values and the raw JSON.
        b.eval("document.querySelector('button.tab[data-tab=table]').click(); 1");
        b.wait("!document.getElementById('table').hidden");
        let rows = b.eval("document.querySelectorAll('#table tbody tr').length");
        assert_eq!(rows, json!(c.legend.len()));
        b.eval("document.querySelector('button.tab[data-tab=json]').click(); 1");
        let raw = b.wait("!document.getElementById('json').hidden && document.getElementById('json').textContent");
        assert!(serde_json::from_str::<Value>(raw.as_str().unwrap()).is_ok());
        b.eval("document.querySelector('button.tab[data-tab=graph]').click(); 1");
        b.wait("document.querySelector('#graph canvas')");
        assert_eq!(b.console_errors(&[]), Vec::<Value>::new(), "{}", c.lang);

        // A bad query: the API's own error text, shown in place.
        let got = run_query(&mut b, c.bad);
        assert_eq!(got["ui"]["state"], "error", "{}: {got}", c.lang);
        let shown = got["error"].as_str().unwrap_or_default().to_string();
        let (code, api_body) = s.http("GET", &(c.bad_api)(c.bad, t0), "");
        assert!(code >= 400, "{}: {code} {api_body}", c.lang);
        let api_error = match serde_json::from_str::<Value>(&api_body) {
            Ok(v) if v["error"].is_string() => v["error"].as_str().unwrap().to_string(),
            Ok(v) if v["error"]["message"].is_string() => {
                v["error"]["message"].as_str().unwrap().to_string()
            }
            _ => api_body.trim().to_string(),
        };
        assert!(!api_error.is_empty());
        assert!(
            shown.contains(&api_error),
            "{}: the page shows {shown:?}, the API says {api_error:?}",
            c.lang
        );
        assert_eq!(
            got["canvas"],
            json!(false),
            "{}: a graph despite the error",
            c.lang
        );
        b.screenshot(&format!("query-{}-error", c.lang));
        assert_eq!(
            b.console_errors(&[c.bad_url]),
            Vec::<Value>::new(),
            "{}",
            c.lang
        );
    }

    // The language switch keeps what was typed in each language; a preset is a relative range.
    b.goto(&format!("{}&q=up", query_url(&base, "promql", t0)));
    b.wait("window.tsgateUI && window.tsgateUI.state === 'ok'");
    b.eval("document.querySelector('button.lang[data-lang=graphite]').click(); 1");
    b.wait(
        "location.hash.includes('lang=graphite') && document.getElementById('expr').value === ''",
    );
    b.eval("document.querySelector('button.lang[data-lang=promql]').click(); 1");
    b.wait(
        "location.hash.includes('lang=promql') && document.getElementById('expr').value === 'up'",
    );
    b.eval("const p = document.getElementById('preset'); p.value = '6h'; p.dispatchEvent(new Event('change')); 1");
    b.wait("location.hash.includes('start=now-6h') && document.getElementById('start').value === 'now-6h'");
    assert_eq!(b.console_errors(&[]), Vec::<Value>::new());

    // Legend toggling, stacking, and zoom by drag on the Graphite graph.
    b.goto(&format!(
        "{}&q={}&stacked=1",
        query_url(&base, "graphite", t0),
        enc("ui.graphite.*.load")
    ));
    b.wait("window.tsgateUI && window.tsgateUI.state === 'ok' && document.querySelector('#graph canvas')");
    assert_eq!(
        b.eval("document.getElementById('stacked').checked"),
        json!(true)
    );
    b.eval(
        "document.querySelectorAll('#graph .u-legend .u-series')[1].querySelector('th').click(); 1",
    );
    assert_eq!(
        b.eval("document.querySelectorAll('#graph .u-legend .u-series')[1].classList.contains('u-off')"),
        json!(true)
    );
    b.screenshot("query-graphite-stacked");
    let rect = b.eval("(() => { const r = document.querySelector('#graph .u-over').getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; })()");
    let r: Vec<f64> = serde_json::from_value(rect).unwrap();
    let y = r[1] + r[3] / 2.0;
    let (x1, x2) = (r[0] + r[2] * 0.25, r[0] + r[2] * 0.75);
    for (kind, x, buttons) in [
        ("mouseMoved", x1, 0),
        ("mousePressed", x1, 1),
        ("mouseMoved", (x1 + x2) / 2.0, 1),
        ("mouseMoved", x2, 1),
        ("mouseReleased", x2, 0),
    ] {
        b.call(
            "Input.dispatchMouseEvent",
            json!({"type": kind, "x": x, "y": y, "button": "left", "buttons": buttons, "clickCount": 1}),
        );
    }
    let zoomed = b.wait(&format!(
        "(() => {{ const p = new URLSearchParams(location.hash.split('?')[1]); \
          return p.get('start') !== '{}' ? [Number(p.get('start')), Number(p.get('end'))] : null; }})()",
        range_start(t0)
    ));
    let z: Vec<i64> = serde_json::from_value(zoomed).unwrap();
    let end = range_end(t0);
    assert!(
        z[0] > t0 && z[1] < end && z[0] < z[1],
        "zoomed to {z:?} within {t0}..{end}"
    );
    b.wait("window.tsgateUI && window.tsgateUI.state === 'ok'");
    assert_eq!(b.console_errors(&[]), Vec::<Value>::new());

    // Explore: the metric names, one metric's series, the Graphite tree.
    b.goto(&format!("{base}/#/explore"));
    for m in [
        "ui.telnet.cpu",
        "ui.http.mem",
        "ui_rw_requests",
        "ui.graphite.web01.load",
        "ui.graphite.web02.load",
    ] {
        b.wait(&format!(
            "document.querySelector('#metrics a[data-metric=\"{m}\"]')"
        ));
    }
    b.eval("document.querySelector('#metrics a[data-metric=\"ui.telnet.cpu\"]').click(); 1");
    let series = b.wait(
        "(() => { const t = document.getElementById('series').textContent; return t.includes('2 series') ? t : null; })()",
    );
    let series = series.as_str().unwrap();
    assert!(series.contains("host"), "{series}");
    for path in ["ui", "ui.graphite", "ui.graphite.web01"] {
        b.wait(&format!(
            "document.querySelector('#graphite-tree a.branch[data-path=\"{path}\"]')"
        ));
        b.eval(&format!(
            "document.querySelector('#graphite-tree a.branch[data-path=\"{path}\"]').click(); 1"
        ));
    }
    b.wait(
        "document.querySelector('#graphite-tree li.leaf[data-path=\"ui.graphite.web01.load\"]')",
    );
    // Label autocomplete: the names the labels API lists, then one label's values.
    let names = b.wait("document.querySelectorAll('#label-suggest option').length > 0 && [...document.querySelectorAll('#label-suggest option')].map(o => o.value)");
    assert!(
        names.as_array().unwrap().contains(&json!("instance")),
        "{names}"
    );
    b.eval("const l = document.getElementById('label-name'); l.value = 'instance'; l.dispatchEvent(new Event('change')); 1");
    let values = b.wait("document.querySelectorAll('#label-values a').length === 2 && [...document.querySelectorAll('#label-values a')].map(a => a.textContent)");
    assert_eq!(values, json!(["x", "y"]));
    b.screenshot("explore");
    assert_eq!(b.console_errors(&[]), Vec::<Value>::new());

    // Status: points by protocol, a rejected point by its reason, the series count.
    let mut t = s.telnet();
    t.send("put ui.telnet.cpu not-a-time 1 host=a\n");
    assert_eq!(t.sync().len(), 1, "the bad line is answered with an error");
    let (_, metrics) = s.http("GET", "/metrics", "");
    let reason = metrics
        .lines()
        .find(|l| {
            l.starts_with("tsgate_points_rejected_total{")
                && l.contains(r#"protocol="telnet""#)
                && l.ends_with(" 1")
        })
        .and_then(|l| l.split(r#"reason=""#).nth(1))
        .and_then(|r| r.split('"').next())
        .expect("the rejected telnet point in /metrics")
        .to_string();
    b.goto(&format!("{base}/#/status"));
    let row = b.wait("(() => { const r = document.querySelector('#rejects-table tbody tr'); return r && [...r.children].map(c => c.textContent); })()");
    assert_eq!(row, json!(["telnet", reason, "1"]));
    for p in ["telnet", "http_put", "remote_write", "graphite_plaintext"] {
        let stored = b.wait(&format!(
            "Number((document.querySelector('#ingest-table tr[data-protocol=\"{p}\"] .stored') || {{}}).textContent)"
        ));
        let want = if p == "telnet" || p == "remote_write" || p == "graphite_plaintext" {
            2 * POINTS
        } else {
            POINTS
        };
        assert_eq!(stored, json!(want), "{p}");
    }
    // Rates need two readings of /metrics; nothing comes in now, so 0 points/s.
    let rate = b.wait("(() => { const t = document.querySelector('#ingest-table tr[data-protocol=\"telnet\"] td:nth-child(2)').textContent; return t !== '…' && t; })()");
    assert_eq!(rate, json!("0"));
    let n = b.wait("document.getElementById('series-counts').dataset.series");
    assert_eq!(n, json!("7"));
    b.screenshot("status");
    assert_eq!(b.console_errors(&[]), Vec::<Value>::new());
}

fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// With auth on, the page and its files need the read right; a browser is asked for
/// credentials (Basic), and a JSON client still gets the name and version.
#[test]
fn the_ui_needs_the_read_right() {
    use tsgate::server::auth::config::hash_password;
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("auth.toml");
    std::fs::write(
        &cfg,
        format!(
            "[auth]\nenabled = true\n[[auth.users]]\nname = \"viewer\"\npassword_hash = \"{}\"\nrights = [\"read\"]\n[[auth.users]]\nname = \"writer\"\npassword_hash = \"{}\"\nrights = [\"write\"]\n",
            hash_password("viewer-pw").unwrap(),
            hash_password("writer-pw").unwrap()
        ),
    )
    .unwrap();
    let s = Server::start_with(&dir.path().join("data"), Some(&cfg));
    use base64::Engine as _;
    let basic = |u: &str| {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(u)
        )
    };
    let raw = |path: &str, auth: Option<&str>, accept: &str| {
        let mut h = vec![("Accept", accept)];
        if let Some(a) = auth {
            h.push(("Authorization", a));
        }
        let mut stream = TcpStream::connect(&s.addr).unwrap();
        let mut req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n");
        for (k, v) in h {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        stream.write_all(req.as_bytes()).unwrap();
        let mut out = String::new();
        std::io::Read::read_to_string(&mut stream, &mut out).unwrap();
        out
    };
    let page = raw("/", None, "text/html");
    assert!(page.starts_with("HTTP/1.1 401"), "{page}");
    assert!(
        page.to_ascii_lowercase()
            .contains("www-authenticate: basic"),
        "{page}"
    );
    assert!(raw("/ui/app.js", None, "*/*").starts_with("HTTP/1.1 401"));
    let writer = basic("writer:writer-pw");
    assert!(raw("/", Some(&writer), "text/html").starts_with("HTTP/1.1 403"));
    let viewer = basic("viewer:viewer-pw");
    let page = raw("/", Some(&viewer), "text/html,*/*");
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(page.contains("ui/app.js"), "{page}");
    let js = raw("/ui/vendor/uPlot.iife.min.js", Some(&viewer), "*/*");
    assert!(js.starts_with("HTTP/1.1 200"));
    assert!(js.contains("uPlot"));
    let (code, body) = http(
        &s.addr,
        "GET",
        "/",
        "",
        &[("Accept", "application/json"), ("Authorization", &viewer)],
    );
    assert_eq!(code, 200);
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["name"], "tsgate");
    // The version stays open for health checks.
    assert!(raw("/api/version", None, "*/*").starts_with("HTTP/1.1 200"));
}
