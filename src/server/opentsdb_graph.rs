//! OpenTSDB's `/q` (2.4's `GraphHandler`): the same `m=` queries as `/api/query`, answered as
//! an image (`&png`, drawn by `server::graph` where OpenTSDB runs gnuplot), as text lines
//! (`&ascii`: `metric timestamp value tag=v …`, what Nagios' `check_tsd` reads) or as the
//! summary its UI reads (`&json`: `plotted`, `points`, `etags`, `timing`). Without any of the
//! three it redirects to the UI at `/#…`, as OpenTSDB does. Errors follow `/q`'s convention:
//! `{"err":"…"}` with `&json`, a small HTML page otherwise.

use super::graph::{self, Format, Legend, Line, LineMode, Options};
use super::http::{Reply, Request};
use crate::query::aggregate::Num;
use crate::query::{parse, QueryError, ResultSeries};
use crate::server::state::OpenTsdb;
use http::{Response, StatusCode};
use std::fmt::Write;
use std::sync::Arc;
use tsgate_common::numfmt::java_double;

const SMOOTH: &[&str] = &[
    "unique",
    "frequency",
    "fnormal",
    "cumulative",
    "cnormal",
    "bins",
    "csplines",
    "acsplines",
    "mcsplines",
    "bezier",
    "sbezier",
    "unwrap",
    "zsort",
];

/// A `/q` error: 400 unless said otherwise, in the form the request asked for.
#[derive(Debug)]
struct QErr(StatusCode, String);

fn bad(msg: impl Into<String>) -> QErr {
    QErr(StatusCode::BAD_REQUEST, msg.into())
}

fn html_escape(s: &str) -> String {
    super::graph::canvas::escape(s)
}

fn error_reply(json: bool, e: QErr) -> Reply {
    let QErr(status, msg) = e;
    if json {
        let body = serde_json::json!({ "err": msg }).to_string();
        return reply(status, "application/json; charset=UTF-8", body.into_bytes());
    }
    let (title, what) = if status.is_server_error() {
        ("Internal Server Error", "the request failed on the server")
    } else {
        ("Bad Request", "the request was rejected as invalid")
    };
    let page = format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{title}</title></head>\
         <body><h1>{title}</h1><p>Sorry, {what}.</p><p>The reason provided was:</p>\
         <blockquote>{}</blockquote></body></html>",
        html_escape(&msg)
    );
    reply(status, "text/html; charset=UTF-8", page.into_bytes())
}

fn reply(status: StatusCode, ct: &str, body: Vec<u8>) -> Reply {
    Response::builder()
        .status(status)
        .header("content-type", ct)
        .body(body)
        .expect("valid response")
}

fn query_error(e: QueryError) -> QErr {
    match e {
        QueryError::BadRequest(m) => bad(m),
        QueryError::Uid(e) => bad(e.to_string()),
        QueryError::TooLarge(m) => QErr(StatusCode::PAYLOAD_TOO_LARGE, m),
        QueryError::Timeout(m) => QErr(StatusCode::SERVICE_UNAVAILABLE, m),
        e => QErr(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

pub(super) async fn q(state: &Arc<OpenTsdb>, req: Request) -> Reply {
    let params = req.params();
    let has = |k: &str| params.iter().any(|(n, _)| n == k);
    let json = has("json");
    if !json && !has("png") && !has("ascii") {
        // OpenTSDB sends a browser to its UI with the same query.
        return Response::builder()
            .status(StatusCode::FOUND)
            .header("location", format!("/#{}", req.query))
            .body(Vec::new())
            .expect("valid response");
    }
    let st = state.clone();
    let started = std::time::Instant::now();
    let res = super::blocking::run(move || answer(&st, &params, started)).await;
    match res {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => error_reply(json, e),
        Err(e) => error_reply(json, QErr(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())),
    }
}

/// The last value of a plot parameter, refused if it holds a back-tick (OpenTSDB passed them
/// to gnuplot, which runs shell commands in back-ticks; tsgate keeps the refusal).
fn plot_param<'p>(params: &'p [(String, String)], k: &str) -> Result<Option<&'p str>, QErr> {
    let v = params
        .iter()
        .rev()
        .find(|(n, _)| n == k)
        .map(|(_, v)| v.trim());
    if v.is_some_and(|v| v.contains('`') || v.contains("%60") || v.contains("&#96;")) {
        return Err(bad(format!(
            "Parameter {k} contained a back-tick. That's a no-no."
        )));
    }
    Ok(v)
}

/// `wxh`: at least 100×100, each a Java short.
fn dimensions(wxh: &str) -> Result<(u32, u32), QErr> {
    let valid = !wxh.is_empty()
        && wxh.split_once('x').is_some_and(|(w, h)| {
            !w.is_empty()
                && !h.is_empty()
                && w.bytes().all(|b| b.is_ascii_digit())
                && h.bytes().all(|b| b.is_ascii_digit())
        });
    if !valid {
        return Err(bad(
            "'wxh' was invalid. Must satisfy the pattern ^\\d+x\\d+$",
        ));
    }
    if wxh.len() < 7 {
        return Err(bad(format!("Parameter wxh too short: {wxh}")));
    }
    let (w, h) = wxh.split_once('x').expect("checked");
    let short = |s: &str| {
        s.parse::<i16>().map_err(|_| {
            bad(format!(
                "Can't parse wxh '{wxh}': For input string: \"{s}\""
            ))
        })
    };
    let (w, h) = (short(w)?, short(h)?);
    if w < 100 || h < 100 {
        let what = if w < 100 { "width" } else { "height" };
        return Err(bad(format!(
            "Invalid wxh parameter: {wxh}, {what} smaller than 100 in {w}x{h}"
        )));
    }
    Ok((w as u32, h as u32))
}

/// `yrange=[min:max]`, either end may be empty.
fn yrange(v: &str) -> Result<(Option<f64>, Option<f64>), QErr> {
    let e = || bad("'yrange' was invalid. Must be in the format [min:max].");
    let inner = v
        .trim()
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .ok_or_else(e)?;
    let (lo, hi) = inner.split_once(':').ok_or_else(e)?;
    let num = |s: &str| -> Result<Option<f64>, QErr> {
        let s = s.trim().trim_matches('"');
        if s.is_empty() || s == "*" {
            return Ok(None);
        }
        s.parse::<f64>().map(Some).map_err(|_| e())
    };
    Ok((num(lo)?, num(hi)?))
}

/// gnuplot's colour spelling `xRRGGBB` as `#rrggbb`.
fn gnuplot_color(k: &str, v: &str) -> Result<String, QErr> {
    let found = v
        .split_whitespace()
        .find(|w| {
            w.len() == 7
                && (w.starts_with('x') || w.starts_with('X'))
                && w[1..].bytes().all(|b| b.is_ascii_hexdigit())
        })
        .ok_or_else(|| {
            bad(format!(
                "'{k}' was invalid. Must be a hex value e.g. 'xFFFFFF'"
            ))
        })?;
    Ok(format!("#{}", &found[1..]))
}

/// The plot's look from `/q`'s parameters (gnuplot's defaults otherwise: 1024×768, a boxed
/// key at the top right, lines with a mark at each point).
fn options(
    params: &[(String, String)],
    start: i64,
    end: i64,
) -> Result<(Options, Option<String>), QErr> {
    let mut o = Options {
        format: Format::Png,
        width: 1024,
        height: 768,
        legend: Legend::Inside {
            right: true,
            top: true,
            boxed: true,
        },
        markers: true,
        line_mode: LineMode::Connected,
        hide_legend: Some(false),
        ..Options::default()
    };
    o.colors = [
        "#9400d3", "#009e73", "#56b4e9", "#e69f00", "#f0e442", "#0072b2", "#e51e10", "#000000",
    ]
    .iter()
    .map(|c| c.to_string())
    .collect();
    o.major_grid = "#a0a0a0".into();
    o.minor_grid = "#e0e0e0".into();
    if let Some(wxh) = plot_param(params, "wxh")?.filter(|v| !v.is_empty()) {
        (o.width, o.height) = dimensions(wxh)?;
    }
    if let Some(v) = plot_param(params, "yrange")? {
        let (lo, hi) = yrange(v)?;
        o.y.min = lo;
        o.y.max = hi;
    }
    let label_ok = |v: &str| {
        v.bytes()
            .any(|b| b.is_ascii_alphanumeric() || matches!(b, b' ' | b'-' | b'_'))
    };
    for (k, slot) in [("ylabel", &mut o.vtitle), ("title", &mut o.title)] {
        if let Some(v) = plot_param(params, k)? {
            if !label_ok(v) {
                return Err(bad(format!(
                    "'{k}' was invalid. Must satisfy the pattern [a-zA-z0-9 \\-_]"
                )));
            }
            *slot = v.to_string();
        }
    }
    if plot_param(params, "ylog")?.is_some() {
        o.log_base = Some(10.0);
    }
    if let Some(v) = plot_param(params, "bgcolor")? {
        o.background = gnuplot_color("bgcolor", v)?;
    }
    if let Some(v) = plot_param(params, "fgcolor")? {
        o.foreground = gnuplot_color("fgcolor", v)?;
    }
    if let Some(k) = plot_param(params, "key")? {
        let words: Vec<&str> = k.split_whitespace().collect();
        o.legend = if words.contains(&"out") || words.contains(&"below") {
            Legend::Below
        } else {
            Legend::Inside {
                right: !words.contains(&"left"),
                top: !words.contains(&"bottom"),
                boxed: words.contains(&"box"),
            }
        };
    }
    if plot_param(params, "nokey")?.is_some() {
        o.hide_legend = Some(true);
    }
    let smooth = match plot_param(params, "smooth")? {
        Some(s) if SMOOTH.iter().any(|w| s.contains(w)) => Some(s.to_string()),
        Some(_) => {
            return Err(bad(format!(
                "'smooth' was invalid. Must satisfy the pattern {}",
                SMOOTH.join("|")
            )))
        }
        None => None,
    };
    if let Some(tz) = plot_param(params, "tz")?.and_then(|t| t.parse::<chrono_tz::Tz>().ok()) {
        o.tz = tz;
    }
    // OpenTSDB's Plot.xFormat: the time labels by the span shown.
    let span = end - start;
    o.x_format = Some(
        match span {
            s if s < 2100 => "%H:%M:%S",
            s if s < 86400 => "%H:%M",
            s if s < 604800 => "%a %H:%M",
            s if s < 1209600 => "%a %d %H:%M",
            s if s < 7776000 => "%b %d",
            _ => "%Y/%m/%d",
        }
        .to_string(),
    );
    Ok((o, smooth))
}

fn num_f64(v: Num) -> f64 {
    match v {
        Num::Int(i) => i as f64,
        Num::Float(f) => f,
    }
}

/// A series' title as gnuplot got it from OpenTSDB: the metric and its tags map.
fn title(s: &ResultSeries) -> String {
    let tags: Vec<String> = s.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{}{{{}}}", s.metric, tags.join(", "))
}

/// gnuplot's `smooth` over one series' points (seconds, value), as drawn.
fn smoothed(kind: &str, pts: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    if pts.len() < 3 {
        return pts;
    }
    if kind.contains("cumulative") || kind.contains("cnormal") {
        let mut sum = 0.0;
        let mut out: Vec<(f64, f64)> = pts
            .iter()
            .map(|(t, v)| {
                sum += v;
                (*t, sum)
            })
            .collect();
        if kind.contains("cnormal") && sum != 0.0 {
            out.iter_mut().for_each(|p| p.1 /= sum);
        }
        return out;
    }
    let monotone = kind.contains("mcsplines") || kind.contains("bezier");
    if !(monotone || kind.contains("csplines")) {
        // unique, frequency, fnormal, bins, unwrap, zsort leave a time series' points as
        // they are (one value per distinct time, already in order).
        return pts;
    }
    let n = pts.len();
    let (x, y): (Vec<f64>, Vec<f64>) = pts.iter().copied().unzip();
    let h: Vec<f64> = (0..n - 1).map(|i| (x[i + 1] - x[i]).max(1e-9)).collect();
    let d: Vec<f64> = (0..n - 1).map(|i| (y[i + 1] - y[i]) / h[i]).collect();
    // Tangents: Fritsch–Carlson (no overshoot) or those of a natural cubic spline.
    let m: Vec<f64> = if monotone {
        let mut m = vec![0.0; n];
        m[0] = d[0];
        m[n - 1] = d[n - 2];
        for i in 1..n - 1 {
            m[i] = if d[i - 1] * d[i] <= 0.0 {
                0.0
            } else {
                let (w1, w2) = (2.0 * h[i] + h[i - 1], h[i] + 2.0 * h[i - 1]);
                (w1 + w2) / (w1 / d[i - 1] + w2 / d[i])
            };
        }
        m
    } else {
        // Second derivatives of the natural spline (tridiagonal system), then tangents.
        let mut c = vec![0.0; n];
        let mut b = vec![0.0; n];
        let mut r = vec![0.0; n];
        for i in 1..n - 1 {
            b[i] = 2.0 * (h[i - 1] + h[i]);
            r[i] = 6.0 * (d[i] - d[i - 1]);
        }
        for i in 2..n - 1 {
            let f = h[i - 1] / b[i - 1];
            b[i] -= f * h[i - 1];
            r[i] -= f * r[i - 1];
        }
        for i in (1..n - 1).rev() {
            c[i] = (r[i] - h[i] * c[i + 1]) / b[i];
        }
        (0..n)
            .map(|i| {
                if i < n - 1 {
                    d[i] - h[i] * (2.0 * c[i] + c[i + 1]) / 6.0
                } else {
                    d[n - 2] + h[n - 2] * (c[n - 2] + 2.0 * c[n - 1]) / 6.0
                }
            })
            .collect()
    };
    // Hermite segments sampled four times each.
    let mut out = Vec::with_capacity(n * 4);
    for i in 0..n - 1 {
        for k in 0..4 {
            let s = k as f64 / 4.0;
            let (s2, s3) = (s * s, s * s * s);
            let v = (2.0 * s3 - 3.0 * s2 + 1.0) * y[i]
                + (s3 - 2.0 * s2 + s) * h[i] * m[i]
                + (-2.0 * s3 + 3.0 * s2) * y[i + 1]
                + (s3 - s2) * h[i] * m[i + 1];
            out.push((x[i] + s * h[i], v));
        }
    }
    out.push((x[n - 1], y[n - 1]));
    out
}

/// Points on a regular grid for the drawing: the smallest gap between points, coarsened to
/// at most about eight slots a pixel (the drawing keeps one value a pixel anyway).
fn to_line(name: String, pts: &[(f64, f64)], width: u32) -> Line {
    let (Some(first), Some(last)) = (pts.first(), pts.last()) else {
        return Line::new(name, 0, 1, Vec::new());
    };
    let mut step = pts
        .windows(2)
        .map(|w| w[1].0 - w[0].0)
        .filter(|g| *g > 0.0)
        .fold(f64::INFINITY, f64::min);
    if !step.is_finite() {
        step = 1.0;
    }
    let span = last.0 - first.0;
    let most = (width as f64 * 8.0).max(16.0);
    if span / step > most {
        step = span / most;
    }
    let step = step.ceil().max(1.0) as i64;
    let start = first.0.floor() as i64;
    let n = ((last.0.floor() as i64 - start) / step + 1) as usize;
    let mut sums = vec![(0.0f64, 0u32); n];
    for (t, v) in pts {
        let i = (((*t).floor() as i64 - start) / step) as usize;
        if let Some(s) = sums.get_mut(i) {
            s.0 += v;
            s.1 += 1;
        }
    }
    let values = sums
        .into_iter()
        .map(|(s, c)| (c > 0).then(|| s / c as f64))
        .collect();
    Line::new(name, start, step, values)
}

fn answer(
    st: &OpenTsdb,
    params: &[(String, String)],
    started: std::time::Instant,
) -> Result<Reply, QErr> {
    let has = |k: &str| params.iter().any(|(n, _)| n == k);
    let now = tsgate_common::clock::now_ms();
    let mut q = parse::from_params(params, now).map_err(|e| bad(e.to_string()))?;
    // /q works in whole seconds.
    q.start_ms -= q.start_ms % 1000;
    q.end_ms -= q.end_ms % 1000;
    let (start, end) = ((q.start_ms / 1000) as i64, (q.end_ms / 1000) as i64);
    if start >= end {
        return Err(bad(format!(
            "start time ({start}) is greater than or equal to end time: {end}"
        )));
    }
    let opts: Vec<&str> = params
        .iter()
        .filter(|(k, _)| k == "o")
        .map(|(_, v)| v.as_str())
        .collect();
    if !opts.is_empty() && opts.len() != q.queries.len() {
        return Err(bad(format!(
            "{} `o' parameters, but {} `m' parameters.",
            opts.len(),
            q.queries.len()
        )));
    }
    let nqueries = q.queries.len();
    // The plot's parameters are checked before the query runs, as OpenTSDB checks them.
    let (mut o, smooth) = options(params, start, end)?;
    if has("png") && !has("json") && !has("ascii") {
        graph::check_pixels(o.width, o.height, st.settings.max_image_pixels)
            .map_err(|e| bad(e.to_string()))?;
    }
    let (series, summary) = st.query.run(&q).map_err(query_error)?;
    let max = st.settings.max_answer_bytes;
    if has("ascii") {
        // Each line takes at least `m 1 1\n`.
        let least = series.iter().map(|s| s.dps.len()).sum::<usize>() * 6;
        if max > 0 && least > max {
            return Err(too_large(least, max));
        }
        let mut out = String::new();
        for s in &series {
            let tags: String = s.tags.iter().map(|(k, v)| format!(" {k}={v}")).collect();
            for (t, v) in &s.dps {
                let value = match *v {
                    Num::Int(i) => i.to_string(),
                    Num::Float(f) if f.is_nan() => continue,
                    Num::Float(f) if f.is_infinite() => {
                        return Err(QErr(
                            StatusCode::INTERNAL_SERVER_ERROR,
                            format!("Infinity:{f} in {}", s.metric),
                        ))
                    }
                    Num::Float(f) => java_double(f),
                };
                let _ = writeln!(out, "{} {} {value}{tags}", s.metric, t / 1000);
            }
            if max > 0 && out.len() > max {
                return Err(too_large(out.len(), max));
            }
        }
        return Ok(reply(
            StatusCode::OK,
            "text/plain; charset=UTF-8",
            out.into_bytes(),
        ));
    }
    if has("json") {
        let plotted: usize = series
            .iter()
            .flat_map(|s| &s.dps)
            .filter(|(t, v)| {
                let t = (t / 1000) as i64;
                t >= start && t <= end && !matches!(v, Num::Float(f) if f.is_nan())
            })
            .count();
        // The tags aggregated away in each `m`'s (last) group; none for an `m` without
        // results (OpenTSDB writes null there, and [] for the first).
        let mut etags: Vec<serde_json::Value> = vec![serde_json::Value::Null; nqueries];
        for s in &series {
            let mut t = s.aggregate_tags.clone();
            t.sort();
            if let Some(slot) = etags.get_mut(s.index) {
                *slot = serde_json::json!(t);
            }
        }
        if let Some(first @ serde_json::Value::Null) = etags.first_mut() {
            *first = serde_json::json!([]);
        }
        // The key order of OpenTSDB's (Java HashMap) answer.
        let body = format!(
            "{{\"plotted\":{plotted},\"timing\":{},\"etags\":{},\"points\":{}}}",
            started.elapsed().as_millis(),
            serde_json::Value::Array(etags),
            summary.raw_datapoints
        );
        return Ok(reply(
            StatusCode::OK,
            "application/json; charset=UTF-8",
            body.into_bytes(),
        ));
    }
    // png
    let mut lines: Vec<Line> = Vec::with_capacity(series.len() + 1);
    for s in &series {
        let pts: Vec<(f64, f64)> = s
            .dps
            .iter()
            .map(|(t, v)| (*t as f64 / 1000.0, num_f64(*v)))
            .filter(|(_, v)| v.is_finite())
            .collect();
        let pts = match &smooth {
            Some(k) => smoothed(k, pts),
            None => pts,
        };
        let mut l = to_line(title(s), &pts, o.width);
        // gnuplot's `axes x1y2` in this `m`'s `o` puts it on the right axis.
        l.second_y = opts.get(s.index).is_some_and(|o| o.contains("x1y2"));
        if !l.values.is_empty() {
            lines.push(l);
        }
    }
    if lines.is_empty() {
        o.hide_legend = Some(true);
    } else {
        // The x axis spans the query's window, as gnuplot's `set xrange` makes it.
        let span = (end - start).max(1);
        let mut frame = Line::new("", start, span, vec![None, None]);
        frame.end = start + 2 * span;
        lines.push(frame);
    }
    let bytes = graph::draw(lines, &o).map_err(|e| bad(e.to_string()))?;
    if max > 0 && bytes.len() > max {
        return Err(too_large(bytes.len(), max));
    }
    Ok(reply(StatusCode::OK, "image/png", bytes))
}

fn too_large(bytes: usize, max: usize) -> QErr {
    QErr(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!(
            "The answer would take {bytes} bytes or more, more than {max} \
             (query.max_answer_bytes); filter on more tags, downsample or shorten the time range"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn plot_parameters_and_their_errors() {
        let (o, s) = options(
            &p(&[
                ("wxh", "800x400"),
                ("yrange", "[0:100]"),
                ("ylabel", "load"),
                ("nokey", ""),
                ("smooth", "csplines"),
            ]),
            0,
            3600,
        )
        .unwrap();
        assert_eq!((o.width, o.height), (800, 400));
        assert_eq!((o.y.min, o.y.max), (Some(0.0), Some(100.0)));
        assert_eq!(o.vtitle, "load");
        assert_eq!(o.hide_legend, Some(true));
        assert_eq!(s.as_deref(), Some("csplines"));
        assert_eq!(o.x_format.as_deref(), Some("%H:%M"));
        let err = |pairs: &[(&str, &str)]| options(&p(pairs), 0, 60).unwrap_err().1;
        assert_eq!(err(&[("wxh", "80x60")]), "Parameter wxh too short: 80x60");
        assert_eq!(
            err(&[("wxh", "1000x60")]),
            "Invalid wxh parameter: 1000x60, height smaller than 100 in 1000x60"
        );
        assert_eq!(
            err(&[("wxh", "big")]),
            "'wxh' was invalid. Must satisfy the pattern ^\\d+x\\d+$"
        );
        assert_eq!(
            err(&[("yrange", "0:1")]),
            "'yrange' was invalid. Must be in the format [min:max]."
        );
        assert_eq!(
            err(&[("bgcolor", "red")]),
            "'bgcolor' was invalid. Must be a hex value e.g. 'xFFFFFF'"
        );
        assert!(err(&[("smooth", "wiggly")]).starts_with("'smooth' was invalid."));
        assert_eq!(
            err(&[("ylabel", "`rm`")]),
            "Parameter ylabel contained a back-tick. That's a no-no."
        );
        let (o, _) = options(&p(&[("key", "left bottom"), ("bgcolor", "x000000")]), 0, 60).unwrap();
        assert_eq!(
            o.legend,
            Legend::Inside {
                right: false,
                top: false,
                boxed: false
            }
        );
        assert_eq!(o.background, "#000000");
    }

    #[test]
    fn smoothing_keeps_the_ends_and_the_cumulative_sums() {
        let pts: Vec<(f64, f64)> = (0..5).map(|i| (i as f64 * 10.0, (i % 2) as f64)).collect();
        let c = smoothed("cumulative", pts.clone());
        assert_eq!(
            c.iter().map(|p| p.1).collect::<Vec<_>>(),
            vec![0.0, 1.0, 1.0, 2.0, 2.0]
        );
        for k in ["csplines", "mcsplines"] {
            let s = smoothed(k, pts.clone());
            assert_eq!(s.first(), pts.first());
            assert_eq!(s.last(), pts.last());
            assert_eq!(s.len(), 17);
            // Through every point.
            assert!(pts.iter().all(|p| s.contains(p)), "{k}");
        }
        // Monotone: never past the neighbours' range.
        assert!(smoothed("mcsplines", pts)
            .iter()
            .all(|p| (0.0..=1.0).contains(&p.1)));
    }

    #[test]
    fn points_to_a_grid() {
        let l = to_line("x".into(), &[(100.0, 1.0), (110.0, 2.0), (130.0, 4.0)], 800);
        assert_eq!((l.start, l.step), (100, 10));
        assert_eq!(l.values, vec![Some(1.0), Some(2.0), None, Some(4.0)]);
    }
}
