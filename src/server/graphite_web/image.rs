//! `/render?format=png|svg`: graphite-web's graph parameters read as its `parseOptions` and
//! `LineGraph` read them (numbers, `true`/`false`, empty or `default` ignored), the evaluated
//! series handed to the drawing (`server::graph`) with their styles, and the image answered.

use super::error::Error;
use super::{json_or_jsonp, text_reply, Params};
use crate::query::graphite::series::Series;
use crate::server::graph::{self, AreaMode, Bounds, Format, Line, LineMode, Options, Units};
use crate::server::http::Reply;
use crate::server::state::GraphiteWeb;
use http::{Response, StatusCode};

/// A parameter as graphite-web keeps it: absent, empty and `default` are the same.
fn get<'p>(p: &'p Params, k: &str) -> Option<&'p str> {
    p.get(k).filter(|v| !v.is_empty() && *v != "default")
}

/// Python's truth of the converted value: `false`, `0`, `0.0` are false, any other text true.
fn flag(p: &Params, k: &str) -> Option<bool> {
    let v = get(p, k)?;
    Some(match v.to_ascii_lowercase().as_str() {
        "false" => false,
        "true" => true,
        t => t.parse::<f64>().map(|n| n != 0.0).unwrap_or(true),
    })
}

/// A graph parameter graphite-web would refuse (400, `Invalid parameters (…)`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OptionError {
    #[error("{key} must be a number, got {value:?}")]
    NotANumber { key: String, value: String },
    #[error("{key} must be a positive integer, got {value}")]
    NotACount { key: String, value: f64 },
    #[error("Invalid graphType '{0}': line and pie graphs are drawn")]
    GraphType(String),
    #[error("invalid color {value:?} for {key}")]
    Color { key: &'static str, value: String },
    #[error("invalid color {0:?} in colorList")]
    ColorList(String),
    #[error("Invalid line mode!")]
    LineMode,
    #[error("Invalid area mode!")]
    AreaMode,
    #[error("Logarithmic base must be greater than one")]
    LogBase,
}

fn num(p: &Params, k: &str) -> Result<Option<f64>, OptionError> {
    match get(p, k) {
        None => Ok(None),
        Some(v) => v
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite())
            .map(Some)
            .ok_or_else(|| OptionError::NotANumber {
                key: k.into(),
                value: v.into(),
            }),
    }
}

fn int(p: &Params, k: &str, default: u32) -> Result<u32, OptionError> {
    match num(p, k)? {
        None => Ok(default),
        Some(n) if n >= 0.0 && n <= u32::MAX as f64 => Ok(n as u32),
        Some(n) => Err(OptionError::NotACount {
            key: k.into(),
            value: n,
        }),
    }
}

fn bounds(
    p: &Params,
    min: &str,
    max: &str,
    limit: &str,
    step: &str,
) -> Result<Bounds, OptionError> {
    let extremum = get(p, max) == Some("max");
    Ok(Bounds {
        min: num(p, min)?,
        max: if extremum { None } else { num(p, max)? },
        max_extremum: extremum,
        limit: num(p, limit)?,
        step: num(p, step)?,
    })
}

/// graphite-web's `unquote_plus` on titles and colour lists.
fn unquote(s: &str) -> String {
    form_urlencoded::parse(format!("x={s}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// The drawing options of a `/render` request.
pub fn options(p: &Params, format: Format) -> Result<Options, OptionError> {
    if let Some(t) = get(p, "graphType").filter(|t| *t != "line" && *t != "pie") {
        return Err(OptionError::GraphType(t.into()));
    }
    let mut o = Options {
        format,
        ..Options::default()
    };
    if let Some(t) = get(p, "template") {
        o.template(t);
    }
    o.width = int(p, "width", 330)?;
    o.height = int(p, "height", 250)?;
    if let Some(m) = num(p, "margin")? {
        o.margin = if m < 0.0 { 10.0 } else { m.trunc() };
    }
    for (k, slot) in [
        ("title", &mut o.title),
        ("vtitle", &mut o.vtitle),
        ("vtitleRight", &mut o.vtitle_right),
    ] {
        if let Some(v) = get(p, k) {
            *slot = unquote(v);
        }
    }
    for (k, slot) in [
        ("bgcolor", &mut o.background),
        ("fgcolor", &mut o.foreground),
        ("majorGridLineColor", &mut o.major_grid),
        ("minorGridLineColor", &mut o.minor_grid),
    ] {
        if let Some(v) = get(p, k) {
            if graph::color::parse(v).is_none() {
                return Err(OptionError::Color {
                    key: k,
                    value: v.into(),
                });
            }
            *slot = v.to_string();
        }
    }
    if let Some(v) = get(p, "colorList") {
        o.colors = unquote(v)
            .split(',')
            .map(|c| c.trim().to_string())
            .collect();
        if let Some(bad) = o.colors.iter().find(|c| graph::color::parse(c).is_none()) {
            return Err(OptionError::ColorList(bad.clone()));
        }
    }
    if let Some(s) = num(p, "fontSize")? {
        o.font_size = s.trunc().clamp(1.0, 200.0);
    }
    o.line_mode = match get(p, "lineMode").map(str::to_ascii_lowercase).as_deref() {
        None | Some("slope") => LineMode::Slope,
        Some("staircase") => LineMode::Staircase,
        Some("connected") => LineMode::Connected,
        Some(_) => return Err(OptionError::LineMode),
    };
    o.area_mode = match get(p, "areaMode").map(str::to_ascii_lowercase).as_deref() {
        None | Some("none") => AreaMode::None,
        Some("first") => AreaMode::First,
        Some("all") => AreaMode::All,
        Some("stacked") => AreaMode::Stacked,
        Some(_) => return Err(OptionError::AreaMode),
    };
    if let Some(w) = num(p, "lineWidth")?.or(num(p, "thickness")?) {
        o.line_width = w.max(0.0);
    }
    if get(p, "areaAlpha").is_some() {
        // graphite-web takes 0.5 for an alpha it cannot read.
        o.area_alpha = Some(num(p, "areaAlpha").ok().flatten().unwrap_or(0.5));
    }
    o.y = Bounds {
        min: num(p, "yMin")?.or(num(p, "min")?),
        ..bounds(p, "yMin", "yMax", "yLimit", "yStep")?
    };
    if get(p, "yMax").is_none() {
        o.y.max = num(p, "max")?;
    }
    o.y_left = bounds(p, "yMinLeft", "yMaxLeft", "yLimitLeft", "yStepLeft")?;
    o.y_right = bounds(p, "yMinRight", "yMaxRight", "yLimitRight", "yStepRight")?;
    o.log_base = match get(p, "logBase") {
        None => None,
        Some("e") => Some(std::f64::consts::E),
        Some(_) => match num(p, "logBase")? {
            Some(b) if b < 1.0 => None,
            Some(1.0) => return Err(OptionError::LogBase),
            b => b,
        },
    };
    if let Some(u) = get(p, "yUnitSystem") {
        o.units = Units::parse(u);
    }
    o.hide_legend = flag(p, "hideLegend");
    o.hide_axes = flag(p, "hideAxes").unwrap_or(false);
    o.hide_grid = flag(p, "hideGrid").unwrap_or(false);
    o.hide_x_axis = flag(p, "hideXAxis").unwrap_or(false);
    o.hide_y_axis = flag(p, "hideYAxis").unwrap_or(false);
    o.graph_only = flag(p, "graphOnly").unwrap_or(false);
    o.unique_legend = flag(p, "uniqueLegend").unwrap_or(false);
    o.hide_null_from_legend = flag(p, "hideNullFromLegend").unwrap_or(false);
    o.draw_null_as_zero = flag(p, "drawNullAsZero").unwrap_or(false);
    o.connected_limit = num(p, "connectedLimit")?.map(|n| n.max(0.0) as usize);
    if let Some(m) = num(p, "minorY")? {
        o.minor_y = m.max(0.0) as u32;
    }
    if let Some(m) = num(p, "minXStep")? {
        o.min_x_step = m.max(0.01);
    }
    o.x_format = get(p, "xFormat").map(unquote);
    // An unknown zone is ignored, as graphite-web ignores it.
    if let Some(tz) = get(p, "tz").and_then(|t| t.parse::<chrono_tz::Tz>().ok()) {
        o.tz = tz;
    }
    Ok(o)
}

/// A graphite series as a line to draw, with its style and the request's left/right overrides.
fn to_line(s: Series, p: &Params) -> Line {
    let side = if s.style.second_y_axis {
        "right"
    } else {
        "left"
    };
    let st = s.style;
    let mut l = Line {
        name: s.name,
        start: s.start,
        end: s.end,
        step: s.step.max(1),
        values: s.values,
        consolidate: graph::Consolidate::parse(&s.consolidation),
        color: st.color,
        alpha: st.alpha,
        dashed: st.dashed,
        line_width: st.line_width,
        second_y: st.second_y_axis,
        stacked: st.stacked,
        infinite: st.draw_as_infinite,
        invisible: st.invisible,
    };
    if let Some(c) = get(p, &format!("{side}Color")) {
        l.color = Some(c.to_string());
    }
    if let Some(w) = get(p, &format!("{side}Width")).and_then(|w| w.parse().ok()) {
        l.line_width = Some(w);
    }
    if let Some(d) = get(p, &format!("{side}Dashed")).and_then(|d| d.parse().ok()) {
        l.dashed = Some(d);
    }
    l
}

/// Draws the evaluated `series` as the request asks: the PNG or SVG answer.
pub fn render(
    state: &GraphiteWeb,
    p: &Params,
    format: &str,
    series: Vec<Series>,
) -> Result<Reply, Error> {
    let format = if format == "svg" {
        Format::Svg
    } else {
        Format::Png
    };
    let o = options(p, format)?;
    let q = &state.settings;
    graph::check_pixels(o.width, o.height, q.max_image_pixels)?;
    let second = series.iter().any(|s| s.style.second_y_axis);
    let lines: Vec<Line> = series
        .into_iter()
        .map(|s| {
            if second {
                to_line(s, p)
            } else {
                to_line(s, &Params::default())
            }
        })
        .collect();
    let max = q.max_answer_bytes;
    if format == Format::Svg {
        let least = graph::drawn_points(&lines, o.width).saturating_mul(graph::SVG_POINT_BYTES_MIN);
        if max > 0 && least > max {
            return Err(Error::TooLarge { bytes: least, max });
        }
    }
    let bytes = graph::draw(lines, &o)?;
    if max > 0 && bytes.len() > max {
        return Err(Error::TooLarge {
            bytes: bytes.len(),
            max,
        });
    }
    Ok(match format {
        Format::Png => image_reply("image/png", bytes),
        Format::Svg => match p.get("jsonp").filter(|j| !j.is_empty()) {
            // graphite-web answers an SVG with `jsonp` as a JSON string passed to the callback.
            Some(cb) => json_or_jsonp(
                StatusCode::OK,
                serde_json::Value::String(String::from_utf8_lossy(&bytes).into_owned()).to_string(),
                Some(cb),
            ),
            None => image_reply("image/svg+xml", bytes),
        },
    })
}

fn image_reply(ct: &str, bytes: Vec<u8>) -> Reply {
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", ct)
        .body(bytes)
        .unwrap_or_else(|_| text_reply(StatusCode::INTERNAL_SERVER_ERROR, "image reply"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_as_graphite_web_reads_them() {
        let p = Params::from_pairs(&[
            ("width", "800"),
            ("height", "400.7"),
            ("title", "CPU+load"),
            ("hideLegend", "false"),
            ("graphOnly", "1"),
            ("yMax", "max"),
            ("min", "3"),
            ("colorList", "red%2C%2300ff00"),
            ("lineMode", "Staircase"),
            ("bgcolor", "default"),
            ("logBase", "e"),
        ]);
        let o = options(&p, Format::Png).unwrap();
        assert_eq!((o.width, o.height), (800, 400));
        assert_eq!(o.title, "CPU load");
        assert_eq!(o.hide_legend, Some(false));
        assert!(o.graph_only);
        assert!(o.y.max_extremum && o.y.max.is_none());
        assert_eq!(o.y.min, Some(3.0));
        assert_eq!(o.colors, vec!["red", "#00ff00"]);
        assert_eq!(o.line_mode, LineMode::Staircase);
        assert_eq!(o.background, "white");
        assert_eq!(o.log_base, Some(std::f64::consts::E));
        let bad = |k: &str, v: &str| {
            options(&Params::from_pairs(&[(k, v)]), Format::Png)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(bad("lineMode", "zigzag"), "Invalid line mode!");
        assert_eq!(bad("areaMode", "x"), "Invalid area mode!");
        assert_eq!(
            bad("bgcolor", "nosuch"),
            "invalid color \"nosuch\" for bgcolor"
        );
        assert_eq!(bad("width", "wide"), "width must be a number, got \"wide\"");
        assert!(bad("graphType", "bar").contains("bar"));
        let o = options(&Params::from_pairs(&[("template", "noc")]), Format::Png).unwrap();
        assert_eq!(o.background, "black");
    }
}
