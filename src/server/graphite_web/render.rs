//! `/render` (spec §2.3): parameters, evaluation of every target, `maxDataPoints`
//! consolidation exactly as graphite-web's JSON renderer does it, and the json / csv / raw /
//! pickle formats; png and svg (the default, as in graphite-web, is png) are drawn by `image`.

use super::error::Error;
use super::{json_or_jsonp, now_s, Params};
use crate::query::graphite::attime::parse_attime_in;
use crate::query::graphite::eval::{with_want, Ctx, StoreSource};
use crate::query::graphite::parser::parse_bounded;
use crate::query::graphite::series::{consolidate_with, py_float, Series};
use crate::query::rollup_read::{Fit, GraphiteWant};
use crate::server::http::Reply;
use crate::server::state::GraphiteWeb;
use http::{Response, StatusCode};

pub fn render(state: &GraphiteWeb, p: &Params) -> Result<Reply, Error> {
    // Absolute times are read, and CSV timestamps written, on this zone's clock; an unknown
    // zone is ignored (graphite-web's default `TIME_ZONE` is UTC).
    let tz = request_tz(p);
    let now = match p.get("now") {
        Some(n) => parse_attime_in(n, now_s(), tz)?,
        None => now_s(),
    };
    // `undefined` (what some clients send for an unset bound) is ignored.
    let time = |k: &str, d: &str| {
        parse_attime_in(
            p.get(k)
                .filter(|v| !v.is_empty() && *v != "undefined")
                .unwrap_or(d),
            now,
            tz,
        )
    };
    let (mut from, mut until) = (time("from", "-1d")?, time("until", "now")?);
    if from > until {
        std::mem::swap(&mut from, &mut until);
    }
    if from == until {
        return Err(Error::Param("Invalid empty time range".into()));
    }
    let xff = match p.get("xFilesFactor").map(str::parse::<f64>) {
        None => 0.0,
        Some(Ok(x)) => x,
        Some(Err(_)) => return Err(Error::Param("Invalid xFilesFactor".into())),
    };
    let format = if p.has("rawData") {
        "raw"
    } else if p.has("pickle") {
        "pickle"
    } else {
        p.get("format").unwrap_or("png")
    };
    let source = StoreSource::new(&state.engine);
    let ctx = Ctx {
        source: &source,
        from,
        until,
        now,
        xff,
        tz,
        xff_set: Default::default(),
    };
    // graphite-web reads maxDataPoints only when it is all digits (anything else is ignored);
    // 0 fails there (a division by zero), a 400 here.
    let mdp = match p
        .get("maxDataPoints")
        .filter(|m| !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit()))
        .map(|m| m.parse::<usize>())
    {
        None => None,
        Some(Ok(0)) if format == "json" => {
            return Err(Error::Param(
                "maxDataPoints must be a positive integer".into(),
            ))
        }
        Some(Ok(m)) if m > 0 => Some(m),
        // Zero outside JSON, or more than fits: nothing to consolidate.
        Some(_) => None,
    };
    // A JSON answer consolidated to `maxDataPoints` may read a rollup of at most the window
    // over that many points (a target that is a path, or `consolidateBy` of one).
    let want = mdp.filter(|_| format == "json").map(|m| GraphiteWant {
        func: "average".into(),
        fit: Fit::AtMost((until - from).max(0) as u64 / m as u64),
    });
    let mut out: Vec<Series> = Vec::new();
    // `stacked()` keeps running totals across this request's targets.
    let _stacks = crate::query::graphite::functions::graph::StackScope::new();
    // `template()` reads the request's `template[name]=value` parameters.
    let _templates = crate::query::graphite::functions::more_template::TemplateScope::new(
        p.0.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    );
    if p.get("graphType") == Some("pie") {
        return super::pie::render(state, p, &ctx);
    }
    for t in p.all("target") {
        if t.trim().is_empty() {
            continue;
        }
        let expr = parse_bounded(t.trim(), state.settings.max_depth)?;
        out.extend(with_want(want.clone(), || ctx.eval(&expr))?);
    }
    if matches!(format, "png" | "svg") {
        return super::image::render(state, p, format, out);
    }
    let max = state.settings.max_answer_bytes;
    // Every format spends at least this much per point written: refused before it is built.
    let least =
        answer_points(&out, mdp.filter(|_| format == "json")).saturating_mul(POINT_BYTES_MIN);
    if max > 0 && least > max {
        return Err(Error::TooLarge { bytes: least, max });
    }
    let reply = match format {
        "json" => json_or_jsonp(
            StatusCode::OK,
            to_json(&out, mdp, p.has("noNullPoints")),
            p.get("jsonp"),
        ),
        "csv" => body("text/csv", to_csv(&out, tz).into_bytes()),
        "raw" => body("text/plain", to_raw(&out).into_bytes()),
        "pickle" => body("application/pickle", to_pickle(&out)),
        "msgpack" => body("application/x-msgpack", to_msgpack(&out)),
        "dygraph" => json_or_jsonp(StatusCode::OK, to_dygraph(&out)?, p.get("jsonp")),
        "rickshaw" => json_or_jsonp(StatusCode::OK, to_rickshaw(&out), p.get("jsonp")),
        f => {
            return Err(Error::Param(format!(
                "unsupported format {f:?} (json, csv, raw, pickle, msgpack, dygraph, rickshaw, png and svg are served)"
            )))
        }
    };
    if max > 0 && reply.body().len() > max {
        return Err(Error::TooLarge {
            bytes: reply.body().len(),
            max,
        });
    }
    Ok(reply)
}

/// The fewest bytes any format writes for a point (`[1,1700000000],` in JSON, more elsewhere).
const POINT_BYTES_MIN: usize = 15;

/// Points an answer writes: every value, or about `maxDataPoints` per series in JSON.
fn answer_points(list: &[Series], mdp: Option<usize>) -> usize {
    list.iter()
        .map(|s| match mdp {
            Some(m) => s.values.len().min(m),
            None => s.values.len(),
        })
        .sum()
}

fn body(ct: &str, b: Vec<u8>) -> Reply {
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", ct)
        .body(b)
        .expect("valid")
}

/// A point's value as JSON numbers strict parsers (Go's, Grafana's backend) accept, appended to
/// `out`: ±inf become ±max f64 (graphite writes `1e9999`, which Go rejects), NaN and no value
/// become null, anything else as Python's `repr` writes it (graphite-web's `json.dumps`).
fn push_json_num(out: &mut String, v: Option<f64>) {
    match v {
        None => out.push_str("null"),
        Some(x) if x.is_nan() => out.push_str("null"),
        Some(x) if x == f64::INFINITY => out.push_str("1.7976931348623157e308"),
        Some(x) if x == f64::NEG_INFINITY => out.push_str("-1.7976931348623157e308"),
        Some(x) => {
            let mut buf = ryu::Buffer::new();
            match tsgate_common::numfmt::plain_shortest(x, &mut buf) {
                Some(s) => out.push_str(s),
                None => out.push_str(&py_float(x)),
            }
        }
    }
}

/// graphite-web's `renderViewJson` consolidation (§2.3.3): returns `(timestamps, values)`.
pub fn consolidate_for_json(
    s: &Series,
    mdp: Option<usize>,
    time_range: i64,
) -> Vec<(i64, Option<f64>)> {
    let (mut start, mut values, mut step) = (s.start, s.values.clone(), s.step);
    match mdp {
        Some(1) => {
            let v = consolidate_with(&s.consolidation, &values, values.len().max(1), s.xff);
            return vec![(start, v)];
        }
        Some(m) => {
            let n = time_range as f64 / step as f64;
            if (m as f64) < n {
                let vpp = (n / m as f64).ceil() as i64;
                let spp = vpp * step;
                let nudge = spp + start.rem_euclid(step) - start.rem_euclid(spp);
                start += nudge;
                // graphite's loop `range(1, valuesToLose)` drops one value fewer than the nudge.
                let lose = ((nudge / step) - 1).max(0) as usize;
                values.drain(..lose.min(values.len()));
                values = values
                    .chunks(vpp as usize)
                    .map(|c| consolidate_with(&s.consolidation, c, vpp as usize, s.xff))
                    .collect();
                step = spp;
            }
        }
        None => {}
    }
    let mut out = Vec::new();
    let mut t = start;
    let mut it = values.into_iter();
    while t <= s.end {
        let Some(v) = it.next() else { break };
        out.push((t, v));
        t += step;
    }
    out
}

pub fn to_json(list: &[Series], mdp: Option<usize>, no_nulls: bool) -> String {
    let time_range = match (
        list.iter().map(|s| s.end).max(),
        list.iter().map(|s| s.start).min(),
    ) {
        (Some(e), Some(s)) => e - s,
        _ => 0,
    };
    let mut parts = Vec::new();
    for s in list {
        let mut pts = consolidate_for_json(s, mdp, time_range);
        if no_nulls {
            pts.retain(|(_, v)| v.is_some_and(|x| !x.is_nan()));
            if pts.is_empty() {
                continue;
            }
        }
        // One string for all the points (a render writes thousands).
        let mut dps = String::with_capacity(pts.len() * 16);
        for (i, (t, v)) in pts.iter().enumerate() {
            if i > 0 {
                dps.push(',');
            }
            dps.push('[');
            push_json_num(&mut dps, *v);
            dps.push(',');
            dps.push_str(itoa::Buffer::new().format(*t));
            dps.push(']');
        }
        // Tag values are always strings; `name` is always there.
        let mut tags = s.tags.clone();
        tags.entry("name".into()).or_insert_with(|| s.name.clone());
        parts.push(format!(
            "{{\"target\":{},\"tags\":{},\"datapoints\":[{}]}}",
            serde_json::to_string(&s.name).expect("string"),
            serde_json::to_string(&tags).expect("map"),
            dps
        ));
    }
    format!("[{}]", parts.join(","))
}

/// The request's `tz` zone, UTC when absent or unknown.
pub fn request_tz(p: &Params) -> chrono_tz::Tz {
    p.get("tz")
        .and_then(|t| t.parse::<chrono_tz::Tz>().ok())
        .unwrap_or(chrono_tz::UTC)
}

fn to_csv(list: &[Series], tz: chrono_tz::Tz) -> String {
    let mut out = String::new();
    for s in list {
        for (t, v) in s.timestamps().zip(&s.values) {
            let ts = chrono::DateTime::from_timestamp(t, 0)
                .map(|d| d.with_timezone(&tz).format("%Y-%m-%d %H:%M:%S").to_string())
                .unwrap_or_default();
            let name = if s.name.contains([',', '"']) {
                format!("\"{}\"", s.name.replace('"', "\"\""))
            } else {
                s.name.clone()
            };
            out.push_str(&format!(
                "{name},{ts},{}\r\n",
                v.map(py_float).unwrap_or_default()
            ));
        }
    }
    out
}

fn to_raw(list: &[Series]) -> String {
    let mut out = String::new();
    for s in list {
        let vals: Vec<String> = s
            .values
            .iter()
            .map(|v| v.map(py_float).unwrap_or_else(|| "None".into()))
            .collect();
        out.push_str(&format!(
            "{},{},{},{}|{}\n",
            s.name,
            s.start,
            s.end,
            s.step,
            vals.join(",")
        ));
    }
    out
}

/// A value as Python's `str()` writes it inside graphite-web's hand-made dygraph JSON.
fn dygraph_value(v: Option<f64>) -> String {
    match v {
        None => "null".into(),
        Some(x) if x.is_nan() => "null".into(),
        Some(x) if x == f64::INFINITY => "Infinity".into(),
        Some(x) if x == f64::NEG_INFINITY => "-Infinity".into(),
        Some(x) => py_float(x),
    }
}

/// graphite-web's `format=dygraph`: `{"labels" : ["Time", names…], "data" : [[t000, v…], …]}`,
/// one row per step of the first series (its times in ms). A series of another length fails
/// there (a Python IndexError or TypeError, a 500): an internal error here too.
fn to_dygraph(list: &[Series]) -> Result<String, Error> {
    let Some(first) = list.first() else {
        return Ok("{}".into());
    };
    let rows = if first.step > 0 && first.end > first.start {
        ((first.end - first.start + first.step - 1) / first.step) as usize
    } else {
        0
    };
    if let Some(s) = list.iter().find(|s| s.values.len() != rows) {
        return Err(Error::Internal(format!(
            "dygraph: series {} has {} values, the first series {} rows",
            s.name,
            s.values.len(),
            rows
        )));
    }
    let labels: Vec<String> = std::iter::once("Time")
        .chain(list.iter().map(|s| s.name.as_str()))
        .map(|l| serde_json::to_string(l).expect("string"))
        .collect();
    let lines: Vec<String> = (0..rows)
        .map(|i| {
            let mut line = format!("[{}000", first.start + i as i64 * first.step);
            for s in list {
                line.push_str(", ");
                line.push_str(&dygraph_value(s.values[i]));
            }
            line.push(']');
            line
        })
        .collect();
    Ok(format!(
        "{{\"labels\" : [{}], \"data\" : [{}]}}",
        labels.join(", "),
        lines.join(", ")
    ))
}

/// graphite-web's `format=rickshaw`: `[{"target": name, "datapoints": [{"x": t, "y": v}, …]}]`
/// (Python's `json.dumps`: NaN and infinities as `NaN`, `Infinity`).
fn to_rickshaw(list: &[Series]) -> String {
    let parts: Vec<String> = list
        .iter()
        .map(|s| {
            let pts: Vec<String> = s
                .timestamps()
                .zip(&s.values)
                .map(|(t, v)| {
                    let y = match v {
                        None => "null".to_string(),
                        Some(x) if x.is_nan() => "NaN".to_string(),
                        Some(x) if x.is_infinite() => {
                            if *x > 0.0 { "Infinity" } else { "-Infinity" }.to_string()
                        }
                        Some(x) => py_float(*x),
                    };
                    format!("{{\"x\": {t}, \"y\": {y}}}")
                })
                .collect();
            format!(
                "{{\"target\": {}, \"datapoints\": [{}]}}",
                serde_json::to_string(&s.name).expect("string"),
                pts.join(", ")
            )
        })
        .collect();
    format!("[{}]", parts.join(", "))
}

/// MessagePack of graphite-web's series list (`format=msgpack`): the same dicts as pickle's,
/// in `getInfo`'s key order, integers in their smallest form, floats as float64.
fn to_msgpack(list: &[Series]) -> Vec<u8> {
    fn len_head(out: &mut Vec<u8>, n: usize, fix: u8, fix_max: usize, m16: u8, m32: u8) {
        if n <= fix_max {
            out.push(fix | n as u8);
        } else if n <= u16::MAX as usize {
            out.push(m16);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        } else {
            out.push(m32);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
    }
    fn s(out: &mut Vec<u8>, v: &str) {
        let n = v.len();
        if n < 32 {
            out.push(0xa0 | n as u8);
        } else if n <= u8::MAX as usize {
            out.extend_from_slice(&[0xd9, n as u8]);
        } else if n <= u16::MAX as usize {
            out.push(0xda);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        } else {
            out.push(0xdb);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
        out.extend_from_slice(v.as_bytes());
    }
    fn int(out: &mut Vec<u8>, v: i64) {
        match v {
            0..=127 => out.push(v as u8),
            128..=0xff => out.extend_from_slice(&[0xcc, v as u8]),
            0x100..=0xffff => {
                out.push(0xcd);
                out.extend_from_slice(&(v as u16).to_be_bytes());
            }
            0x1_0000..=0xffff_ffff => {
                out.push(0xce);
                out.extend_from_slice(&(v as u32).to_be_bytes());
            }
            _ if v > 0 => {
                out.push(0xcf);
                out.extend_from_slice(&(v as u64).to_be_bytes());
            }
            -32..=-1 => out.push(v as i8 as u8),
            -128..=-33 => out.extend_from_slice(&[0xd0, v as i8 as u8]),
            -32768..=-129 => {
                out.push(0xd1);
                out.extend_from_slice(&(v as i16).to_be_bytes());
            }
            -2_147_483_648..=-32769 => {
                out.push(0xd2);
                out.extend_from_slice(&(v as i32).to_be_bytes());
            }
            _ => {
                out.push(0xd3);
                out.extend_from_slice(&v.to_be_bytes());
            }
        }
    }
    fn float(out: &mut Vec<u8>, v: f64) {
        out.push(0xcb);
        out.extend_from_slice(&v.to_be_bytes());
    }
    let mut out = Vec::new();
    len_head(&mut out, list.len(), 0x90, 15, 0xdc, 0xdd);
    for se in list {
        out.push(0x80 | 9);
        s(&mut out, "name");
        s(&mut out, &se.name);
        for (k, v) in [("start", se.start), ("end", se.end), ("step", se.step)] {
            s(&mut out, k);
            int(&mut out, v);
        }
        s(&mut out, "values");
        len_head(&mut out, se.values.len(), 0x90, 15, 0xdc, 0xdd);
        for v in &se.values {
            match v {
                Some(x) => float(&mut out, *x),
                None => out.push(0xc0),
            }
        }
        s(&mut out, "pathExpression");
        s(&mut out, &se.path_expr);
        s(&mut out, "valuesPerPoint");
        int(&mut out, 1);
        s(&mut out, "consolidationFunc");
        s(&mut out, &se.consolidation);
        s(&mut out, "xFilesFactor");
        float(&mut out, se.xff);
    }
    out
}

/// Pickle protocol 2 of graphite's list of dicts, with only data opcodes.
fn to_pickle(list: &[Series]) -> Vec<u8> {
    fn s(out: &mut Vec<u8>, v: &str) {
        out.push(b'X');
        out.extend_from_slice(&(v.len() as u32).to_le_bytes());
        out.extend_from_slice(v.as_bytes());
    }
    fn int(out: &mut Vec<u8>, v: i64) {
        if let Ok(x) = i32::try_from(v) {
            out.push(b'J');
            out.extend_from_slice(&x.to_le_bytes());
        } else {
            out.push(0x8a);
            out.push(8);
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    fn float(out: &mut Vec<u8>, v: f64) {
        out.push(b'G');
        out.extend_from_slice(&v.to_be_bytes());
    }
    let mut out = vec![0x80, 2, b']'];
    if !list.is_empty() {
        out.push(b'(');
        for se in list {
            out.extend_from_slice(b"}(");
            s(&mut out, "name");
            s(&mut out, &se.name);
            s(&mut out, "pathExpression");
            s(&mut out, &se.path_expr);
            for (k, v) in [
                ("start", se.start),
                ("end", se.end),
                ("step", se.step),
                ("valuesPerPoint", 1),
            ] {
                s(&mut out, k);
                int(&mut out, v);
            }
            s(&mut out, "consolidationFunc");
            s(&mut out, &se.consolidation);
            s(&mut out, "xFilesFactor");
            float(&mut out, se.xff);
            s(&mut out, "values");
            out.push(b']');
            if !se.values.is_empty() {
                out.push(b'(');
                for v in &se.values {
                    match v {
                        Some(x) => float(&mut out, *x),
                        None => out.push(b'N'),
                    }
                }
                out.push(b'e');
            }
            out.push(b'u');
        }
        out.push(b'e');
    }
    out.push(b'.');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_data_points_nudge_and_consolidate() {
        // 10 values at step 60 from 60; maxDataPoints 3 over a 600 s range: n = 10,
        // vpp = ceil(10/3) = 4, spp = 240, nudge = 240 + 0 - 60 = 180 → start 240, and
        // int(180/60) - 1 = 2 values dropped.
        let s = Series::new("x", 60, 60, (1..=10).map(|v| Some(v as f64)).collect());
        let pts = consolidate_for_json(&s, Some(3), 600);
        assert_eq!(pts, vec![(240, Some(4.5)), (480, Some(8.5))]);
        assert_eq!(
            consolidate_for_json(&s, Some(1), 600),
            vec![(60, Some(5.5))]
        );
        // Enough points: untouched.
        assert_eq!(consolidate_for_json(&s, Some(100), 600).len(), 10);
    }

    #[test]
    fn json_shape_and_infinities() {
        let mut s = Series::new("a.b", 60, 60, vec![Some(1.0), None, Some(f64::INFINITY)]);
        s.set_tag("scale", "2");
        let j = to_json(&[s], None, false);
        assert_eq!(
            j,
            r#"[{"target":"a.b","tags":{"name":"a.b","scale":"2"},"datapoints":[[1.0,60],[null,120],[1.7976931348623157e308,180]]}]"#
        );
        let v: serde_json::Value = serde_json::from_str(&j).unwrap();
        assert!(v[0]["datapoints"][2][0].is_f64());
        let s = Series::new("a.b", 60, 60, vec![None, Some(2.0)]);
        assert_eq!(
            to_json(std::slice::from_ref(&s), None, true),
            r#"[{"target":"a.b","tags":{"name":"a.b"},"datapoints":[[2.0,120]]}]"#
        );
        assert_eq!(to_raw(&[s]), "a.b,60,180,60|None,2.0\n");
    }

    /// graphite-web 1.1.8's dygraph, rickshaw and msgpack answers (bytes from its
    /// renderViewDygraph / renderViewRickshaw / renderViewMsgPack on the same series).
    #[test]
    fn dygraph_rickshaw_msgpack() {
        let a = Series::new("a.b", 60, 60, vec![Some(1.0), None, Some(f64::INFINITY)]);
        let b = Series::new("c", 60, 60, vec![Some(0.5), Some(f64::NAN), Some(-2.0)]);
        assert_eq!(
            to_dygraph(&[a.clone(), b.clone()]).unwrap(),
            r#"{"labels" : ["Time", "a.b", "c"], "data" : [[60000, 1.0, 0.5], [120000, null, null], [180000, Infinity, -2.0]]}"#
        );
        assert_eq!(to_dygraph(&[]).unwrap(), "{}");
        let short = Series::new("s", 60, 120, vec![Some(1.0)]);
        assert!(to_dygraph(&[a.clone(), short]).is_err());
        assert_eq!(
            to_rickshaw(&[b]),
            r#"[{"target": "c", "datapoints": [{"x": 60, "y": 0.5}, {"x": 120, "y": NaN}, {"x": 180, "y": -2.0}]}]"#
        );
        let one = Series::new("x", 300, 60, vec![Some(1.5), None]);
        let mut want = vec![0x91, 0x89, 0xa4];
        want.extend_from_slice(b"name");
        want.extend_from_slice(&[0xa1, b'x', 0xa5]);
        want.extend_from_slice(b"start");
        want.extend_from_slice(&[0xcd, 0x01, 0x2c, 0xa3]);
        want.extend_from_slice(b"end");
        want.extend_from_slice(&[0xcd, 0x01, 0xa4, 0xa4]);
        want.extend_from_slice(b"step");
        want.extend_from_slice(&[0x3c, 0xa6]);
        want.extend_from_slice(b"values");
        want.extend_from_slice(&[0x92, 0xcb]);
        want.extend_from_slice(&1.5f64.to_be_bytes());
        want.extend_from_slice(&[0xc0, 0xae]);
        want.extend_from_slice(b"pathExpression");
        want.extend_from_slice(&[0xa1, b'x', 0xae]);
        want.extend_from_slice(b"valuesPerPoint");
        want.extend_from_slice(&[0x01, 0xb1]);
        want.extend_from_slice(b"consolidationFunc");
        want.extend_from_slice(&[0xa7]);
        want.extend_from_slice(b"average");
        want.extend_from_slice(&[0xac]);
        want.extend_from_slice(b"xFilesFactor");
        want.push(0xcb);
        want.extend_from_slice(&0.0f64.to_be_bytes());
        assert_eq!(to_msgpack(&[one]), want);
    }

    /// graphite-web writes CSV timestamps on the request zone's clock.
    #[test]
    fn csv_timestamps_in_the_request_zone() {
        let s = Series::new("a.b", 1795262400, 60, vec![Some(1.5), None]);
        assert_eq!(
            to_csv(std::slice::from_ref(&s), chrono_tz::UTC),
            "a.b,2026-11-21 12:00:00,1.5\r\na.b,2026-11-21 12:01:00,\r\n"
        );
        let berlin = request_tz(&Params::from_pairs(&[("tz", "Europe/Berlin")]));
        assert_eq!(
            to_csv(&[s], berlin),
            "a.b,2026-11-21 13:00:00,1.5\r\na.b,2026-11-21 13:01:00,\r\n"
        );
        assert_eq!(
            request_tz(&Params::from_pairs(&[("tz", "Nowhere/X")])),
            chrono_tz::UTC
        );
    }
}
