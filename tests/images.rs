//! Graph images over HTTP: graphite-web's `/render?format=png|svg` and OpenTSDB's `/q` (png,
//! ascii, json), against a real server: sizes, pixels that follow the data and the options,
//! well-formed SVG, exact ascii lines, the error conventions and the memory limits.

mod common;
use common::*;
use serde_json::{json, Value};

/// A day-old hour, so `from`/`until` are absolute and the data fixed.
const T0: u64 = 1_700_000_000 - 1_700_000_000 % 3600;

fn put(s: &Server, metric: &str, vals: &[(u64, Value)]) {
    let body: Vec<Value> = vals
        .iter()
        .map(|(t, v)| json!({"metric": metric, "timestamp": t, "value": v, "tags": {"host": "h1"}}))
        .collect();
    let (code, resp) = s.http("POST", "/api/put?sync", &Value::Array(body).to_string());
    assert_eq!(code, 204, "{resp}");
}

/// Two hours of a ramp (`img.a`) and of a wave (`img.b`), one point a minute.
fn seed(s: &Server) {
    let ramp: Vec<(u64, Value)> = (0..120).map(|i| (T0 + i * 60, json!(i as f64))).collect();
    let wave: Vec<(u64, Value)> = (0..120)
        .map(|i| (T0 + i * 60, json!(50.0 + 40.0 * (i as f64 / 10.0).sin())))
        .collect();
    put(s, "img.a", &ramp);
    put(s, "img.b", &wave);
}

fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

fn render(s: &Server, target: &str, extra: &str) -> (u16, Vec<u8>) {
    let path = format!(
        "/render?target={}&from={T0}&until={}{extra}",
        enc(target),
        T0 + 7200
    );
    http_bytes(&s.addr, "GET", &path, b"", &[])
}

struct Image {
    w: u32,
    h: u32,
    rgba: Vec<u8>,
}

impl Image {
    fn px(&self, x: u32, y: u32) -> [u8; 4] {
        let i = ((y * self.w + x) * 4) as usize;
        [
            self.rgba[i],
            self.rgba[i + 1],
            self.rgba[i + 2],
            self.rgba[i + 3],
        ]
    }

    /// Pixels of exactly this colour in rows `rows`.
    fn count(&self, rgb: [u8; 3], rows: std::ops::Range<u32>) -> usize {
        rows.flat_map(|y| (0..self.w).map(move |x| (x, y)))
            .filter(|(x, y)| self.px(*x, *y)[..3] == rgb)
            .count()
    }

    fn distinct(&self) -> usize {
        let mut c: Vec<[u8; 4]> = self
            .rgba
            .chunks(4)
            .map(|p| [p[0], p[1], p[2], p[3]])
            .collect();
        c.sort();
        c.dedup();
        c.len()
    }
}

fn decode(bytes: &[u8]) -> Image {
    let mut dec = png::Decoder::new(bytes);
    dec.set_transformations(png::Transformations::EXPAND);
    let mut r = dec.read_info().expect("a PNG");
    let mut buf = vec![0; r.output_buffer_size()];
    let info = r.next_frame(&mut buf).expect("a frame");
    assert_eq!(info.color_type, png::ColorType::Rgba);
    buf.truncate(info.buffer_size());
    Image {
        w: info.width,
        h: info.height,
        rgba: buf,
    }
}

fn png_of(s: &Server, target: &str, extra: &str) -> Image {
    let (code, body) = render(s, target, &format!("&format=png{extra}"));
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    decode(&body)
}

const A: &str = "seriesByTag('name=img.a')";
const B: &str = "seriesByTag('name=img.b')";
/// graphite-web's first default colour (`blue`) and `red`.
const BLUE: [u8; 3] = [100, 100, 255];

#[test]
fn render_png_size_pixels_and_options() {
    let d = tempfile::tempdir().unwrap();
    let s = Server::start(d.path());
    seed(&s);
    let a = png_of(&s, A, "&width=800&height=400");
    assert_eq!((a.w, a.h), (800, 400));
    // Not blank: background, text, grid, the line.
    assert!(a.distinct() > 20, "{} colours", a.distinct());
    assert_eq!(a.px(0, 0), [255, 255, 255, 255]);
    let b = png_of(&s, B, "&width=800&height=400");
    assert_eq!((b.w, b.h), (800, 400));
    assert_ne!(a.rgba, b.rgba, "two data sets drew the same picture");
    // The line's own colour fills pixels in the plot (anti-aliasing keeps the core exact).
    assert!(a.count(BLUE, 0..350) > 100);
    // The default format is png too (graphite-web's default), and the size is graphite-web's.
    let (code, body) = render(&s, A, "");
    assert_eq!(code, 200);
    let d330 = decode(&body);
    assert_eq!((d330.w, d330.h), (330, 250));

    // bgcolor paints the corners; the default is white.
    let black = png_of(&s, A, "&width=800&height=400&bgcolor=000000");
    assert_eq!(black.px(0, 0), [0, 0, 0, 255]);
    assert_eq!(black.px(799, 399), [0, 0, 0, 255]);
    // The legend (a box of the series' colour near the bottom) goes with hideLegend.
    let bottom = 388..400;
    assert!(a.count(BLUE, bottom.clone()) > 20, "no legend box");
    let no_legend = png_of(&s, A, "&width=800&height=400&hideLegend=true");
    assert_eq!(no_legend.count(BLUE, bottom), 0);
    // colorList takes the series' colour: pure red lines, no default blue left.
    let red = png_of(&s, A, "&width=800&height=400&colorList=ff0000");
    assert!(red.count([255, 0, 0], 0..400) > 100);
    assert_eq!(red.count(BLUE, 0..400), 0);
    // color() beats the list; graphOnly leaves no text or legend: fewer colours.
    let green = png_of(&s, &format!("color({A},'00ff00')"), "&width=800&height=400");
    assert!(green.count([0, 255, 0], 0..400) > 100);
    let bare = png_of(&s, A, "&width=800&height=400&graphOnly=true");
    assert!(bare.distinct() < a.distinct());
    // Stacking fills the area under the lines.
    let plain = png_of(&s, &format!("group({A},{B})"), "&width=800&height=400");
    let stacked = png_of(
        &s,
        &format!("group({A},{B})"),
        "&width=800&height=400&areaMode=stacked",
    );
    assert!(stacked.count(BLUE, 0..350) > 10 * plain.count(BLUE, 0..350));
    s.stop();
}

#[test]
fn render_svg_is_well_formed_with_paths_and_legend() {
    let d = tempfile::tempdir().unwrap();
    let s = Server::start(d.path());
    seed(&s);
    let (code, body) = render(
        &s,
        &format!("alias({A},'ramp <a&b>')"),
        "&format=svg&width=800&height=400&title=Ramp",
    );
    assert_eq!(code, 200);
    let text = String::from_utf8(body).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("well-formed SVG");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(root.attribute("width"), Some("800px"));
    let path = doc
        .descendants()
        .find(|n| n.has_tag_name("path") && n.attribute("data-series") == Some("ramp <a&b>"))
        .expect("the series' path");
    // One segment per point at 800 px (120 points fit).
    assert!(path.attribute("d").unwrap().matches('L').count() >= 100);
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .collect();
    assert!(texts.contains(&"ramp <a&b>"), "{texts:?}");
    assert!(texts.contains(&"Ramp"), "{texts:?}");
    // The y axis reaches the ramp's top (119 → labels up to 120).
    assert!(texts.contains(&"120.0 "), "{texts:?}");
    s.stop();
}

#[test]
fn graph_functions_in_json_and_errors() {
    let d = tempfile::tempdir().unwrap();
    let s = Server::start(d.path());
    seed(&s);
    let json_of = |target: &str| -> Value {
        let (code, body) = render(&s, target, "&format=json");
        assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
        serde_json::from_slice(&body).unwrap()
    };
    let v = json_of(&format!("dashed(secondYAxis({A}))"));
    assert_eq!(v[0]["target"], "dashed(secondYAxis(img.a;host=h1), 5)");
    assert_eq!(v[0]["tags"]["secondYAxis"], "1");
    // stacked() adds up across the targets of one request.
    let (code, body) = render(
        &s,
        &format!("stacked({A})"),
        &format!("&target={}&format=json", enc(&format!("stacked({A})"))),
    );
    assert_eq!(code, 200);
    let v: Value = serde_json::from_slice(&body).unwrap();
    let at = |i: usize, j: usize| v[i]["datapoints"][j][0].as_f64().unwrap();
    assert_eq!(v[1]["target"], "stacked(img.a;host=h1)");
    assert!(at(0, 5) > 0.0);
    assert_eq!(at(1, 5), 2.0 * at(0, 5));
    let v = json_of("threshold(42,'limit','red')");
    assert_eq!(v[0]["target"], "limit");
    assert_eq!(v[0]["datapoints"][0][0], json!(42.0));

    // graphite-web's 400 for what it cannot draw.
    let bad = |extra: &str| {
        let (code, body) = render(&s, A, extra);
        (code, String::from_utf8_lossy(&body).into_owned())
    };
    assert_eq!(
        bad("&format=png&width=wide"),
        (
            400,
            "Invalid parameters (width must be a number, got \"wide\")".into()
        )
    );
    assert_eq!(
        bad("&format=png&lineMode=zigzag"),
        (400, "Invalid parameters (Invalid line mode!)".into())
    );
    assert_eq!(
        bad("&format=svg&bgcolor=nosuch"),
        (
            400,
            "Invalid parameters (invalid color \"nosuch\" for bgcolor)".into()
        )
    );
    let (code, msg) = bad("&format=png&width=100000&height=100000");
    assert_eq!(code, 400);
    assert!(
        msg.contains(
            "10000000000 pixels (100000x100000), more than 8000000 (query.max_image_pixels)"
        ),
        "{msg}"
    );
    // The data an image reads is charged to query.max_cells as any render's: two series of a
    // minute's step over ten years would hold 10.5 million values.
    let (code, body) = http_bytes(
        &s.addr,
        "GET",
        &format!(
            "/render?target={}&from=-10y&format=png",
            enc(&format!("group({A},{B})"))
        ),
        b"",
        &[],
    );
    let msg = String::from_utf8_lossy(&body);
    assert_eq!(code, 400, "{msg}");
    assert!(msg.contains("(query.max_cells)"), "{msg}");
    let (code, msg) = bad("&format=pdf");
    assert_eq!(code, 400);
    assert!(msg.contains("png and svg are served"), "{msg}");
    s.stop();
}

#[test]
fn image_limits_are_config_keys() {
    let d = tempfile::tempdir().unwrap();
    let cfg = d.path().join("tsgate.toml");
    std::fs::write(
        &cfg,
        "[query]\nmax_image_pixels = 20000\nmax_answer_bytes = 3000\n",
    )
    .unwrap();
    let s = Server::start_with(&d.path().join("data"), Some(&cfg));
    seed(&s);
    let (code, body) = render(&s, A, "&format=png&width=200&height=200");
    let msg = String::from_utf8_lossy(&body);
    assert_eq!(code, 400, "{msg}");
    assert!(
        msg.contains("more than 20000 (query.max_image_pixels)"),
        "{msg}"
    );
    // Fits the pixels, not the answer's bytes: graphite-web's 413 in plain text.
    let (code, body) = render(&s, A, "&format=png&width=150&height=130");
    let msg = String::from_utf8_lossy(&body);
    assert_eq!(code, 413, "{msg}");
    assert!(msg.contains("(query.max_answer_bytes)"), "{msg}");
    let (code, body) = render(&s, A, "&format=svg&width=150&height=130");
    assert_eq!(code, 413, "{}", String::from_utf8_lossy(&body));
    // /q: the same keys, in /q's own error forms.
    let (code, body) = s.http(
        "GET",
        &format!(
            "/q?start={T0}&end={}&m=sum:img.a&wxh=2000x2000&png&json",
            T0 + 7200
        ),
        "",
    );
    // json only summarises (no image is drawn), so the pixel cap does not apply to it.
    assert_eq!(code, 200, "{body}");
    let (code, body) = s.http(
        "GET",
        &format!(
            "/q?start={T0}&end={}&m=sum:img.a&wxh=2000x2000&png",
            T0 + 7200
        ),
        "",
    );
    assert_eq!(code, 400);
    assert!(
        body.contains("(query.max_image_pixels)") && body.contains("<html>"),
        "{body}"
    );
    s.stop();
}

#[test]
fn opentsdb_q_ascii_json_png_and_errors() {
    let d = tempfile::tempdir().unwrap();
    let s = Server::start(d.path());
    put(
        &s,
        "img.q",
        &[(T0, json!(1)), (T0 + 60, json!(2)), (T0 + 120, json!(2.5))],
    );
    let q = |rest: &str| {
        format!(
            "/q?start={}&end={}&m=sum:img.q{{host=h1}}{rest}",
            T0 - 10,
            T0 + 300
        )
    };
    let (code, body) = s.http("GET", &q("&ascii"), "");
    assert_eq!(code, 200);
    assert_eq!(
        body,
        format!(
            "img.q {T0} 1 host=h1\nimg.q {} 2 host=h1\nimg.q {} 2.5 host=h1\n",
            T0 + 60,
            T0 + 120
        )
    );
    let (code, body) = s.http("GET", &q("&json"), "");
    assert_eq!(code, 200);
    assert!(body.starts_with("{\"plotted\":3,\"timing\":"), "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (v["points"].clone(), v["etags"].clone()),
        (json!(3), json!([[]]))
    );
    // Two m's: the second aggregates host away.
    let (_, body) = s.http(
        "GET",
        &format!(
            "/q?start={}&m=sum:img.q&m=sum:img.q{{host=h1}}&json",
            T0 - 10
        ),
        "",
    );
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["etags"], json!([[], []]), "{body}");

    let (code, png) = http_bytes(&s.addr, "GET", &q("&png"), b"", &[]);
    assert_eq!(code, 200);
    let img = decode(&png);
    assert_eq!((img.w, img.h), (1024, 768));
    assert!(img.distinct() > 10);
    let (_, png) = http_bytes(
        &s.addr,
        "GET",
        &q("&png&wxh=400x300&ylabel=load&yrange=[0:10]&nokey"),
        b"",
        &[],
    );
    let small = decode(&png);
    assert_eq!((small.w, small.h), (400, 300));

    // Errors: the HTML page, or {"err":…} with json.
    let (code, body) = s.http("GET", "/q?m=sum:img.q&png", "");
    assert_eq!(code, 400);
    assert!(
        body.contains("Missing parameter") && body.contains("<h1>Bad Request</h1>"),
        "{body}"
    );
    let (code, body) = s.http("GET", "/q?m=sum:img.q&json", "");
    assert_eq!(code, 400);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert!(
        v["err"].as_str().unwrap().contains("Missing parameter"),
        "{body}"
    );
    let (code, body) = s.http("GET", &q("&png&wxh=80x60"), "");
    assert_eq!(code, 400);
    assert!(body.contains("Parameter wxh too short: 80x60"), "{body}");
    let (code, body) = s.http("GET", &q("&json&o=&o="), "");
    assert_eq!(code, 400);
    assert!(
        body.contains("2 `o' parameters, but 1 `m' parameters."),
        "{body}"
    );
    let (code, body) = s.http("GET", &q("&json&smooth=wiggly"), "");
    assert_eq!(code, 400, "{body}");
    // Without png, ascii or json: to the UI, with the query.
    let (code, _) = s.http("GET", "/q?start=1h-ago&m=sum:img.q", "");
    assert_eq!(code, 302);
    s.stop();
}
