//! `/render?graphType=pie`: graphite-web's pie path. Each target is either `name:value` (a
//! fixed slice) or an expression whose series each become a slice, valued by the `pieMode`
//! function (`average`, the default, `maximum`, `minimum`; see `/functions?type=pie`). The
//! answer is always an image (PNG, or SVG with `format=svg`), as in graphite-web, whatever
//! `format` says otherwise.

use super::error::Error;
use super::{json_or_jsonp, Params};
use crate::query::graphite::eval::Ctx;
use crate::query::graphite::functions::more_spec::pie_value;
use crate::query::graphite::parser::parse_bounded;
use crate::server::graph::pie::{self, PieOptions, ValueLabels};
use crate::server::graph::{self, Format};
use crate::server::http::Reply;
use crate::server::state::GraphiteWeb;
use http::{Response, StatusCode};

/// The slices of a pie request's targets, in order.
pub fn slices(state: &GraphiteWeb, p: &Params, ctx: &Ctx) -> Result<Vec<(String, f64)>, Error> {
    let mode = p.get("pieMode").unwrap_or("average");
    let mut out = Vec::new();
    for t in p.all("target") {
        if t.trim().is_empty() {
            continue;
        }
        if let Some((name, value)) = t.split_once(':') {
            let v: f64 = value
                .trim()
                .parse()
                .map_err(|_| Error::Param(format!("Invalid target '{t}'")))?;
            out.push((name.to_string(), v));
            continue;
        }
        let expr = parse_bounded(t.trim(), state.settings.max_depth)?;
        for s in ctx.eval(&expr)? {
            let v = pie_value(mode, &s)
                .ok_or_else(|| Error::Param(format!("Invalid pieMode '{mode}'")))?;
            out.push((s.name, v));
        }
    }
    Ok(out)
}

fn pie_options(p: &Params) -> Result<PieOptions, Error> {
    let mut o = PieOptions::default();
    if let Some(v) = p.get("valueLabels").filter(|v| !v.is_empty()) {
        o.value_labels = match v {
            "none" => ValueLabels::None,
            "number" => ValueLabels::Number,
            "percent" => ValueLabels::Percent,
            other => {
                return Err(Error::Param(format!(
                    "valueLabels={other} must be one of ('none', 'number', 'percent')"
                )))
            }
        };
    }
    if let Some(v) = p.get("valueLabelsMin").filter(|v| !v.is_empty()) {
        o.value_labels_min = v
            .trim()
            .parse()
            .map_err(|_| Error::Param(format!("valueLabelsMin must be a number, got {v:?}")))?;
    }
    if let Some(c) = p.get("valueLabelsColor").filter(|v| !v.is_empty()) {
        if graph::color::parse(c).is_none() {
            return Err(Error::Param(format!(
                "invalid color {c:?} for valueLabelsColor"
            )));
        }
        o.value_labels_color = c.to_string();
    }
    o.rotated = p.get("pieLabels") == Some("rotated");
    Ok(o)
}

pub fn render(state: &GraphiteWeb, p: &Params, ctx: &Ctx) -> Result<Reply, Error> {
    let format = if p.get("format") == Some("svg") {
        Format::Svg
    } else {
        Format::Png
    };
    let o = super::image::options(p, format)?;
    let q = &state.settings;
    graph::check_pixels(o.width, o.height, q.max_image_pixels)?;
    let po = pie_options(p)?;
    let slices = slices(state, p, ctx)?;
    let bytes = pie::draw(&slices, &o, &po)?;
    if q.max_answer_bytes > 0 && bytes.len() > q.max_answer_bytes {
        return Err(Error::TooLarge {
            bytes: bytes.len(),
            max: q.max_answer_bytes,
        });
    }
    let ct = match format {
        Format::Png => "image/png",
        Format::Svg => "image/svg+xml",
    };
    if format == Format::Svg {
        if let Some(cb) = p.get("jsonp").filter(|j| !j.is_empty()) {
            return Ok(json_or_jsonp(
                StatusCode::OK,
                serde_json::Value::String(String::from_utf8_lossy(&bytes).into_owned()).to_string(),
                Some(cb),
            ));
        }
    }
    Ok(Response::builder()
        .status(StatusCode::OK)
        .header("content-type", ct)
        .body(bytes)
        .unwrap_or_else(|_| super::text_reply(StatusCode::INTERNAL_SERVER_ERROR, "image reply")))
}
