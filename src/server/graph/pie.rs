//! Pie charts (`/render?graphType=pie`), after graphite-web 1.1's `glyph.py` PieGraph: title,
//! legend below, slices clockwise from the top in the colour list's order, each labelled at
//! half the radius with its percentage (`%12.34`) or value, labels under `valueLabelsMin`
//! left out.

use super::canvas::{Canvas, Color, Raster, Svg, P};
use super::{color, font, Format, GraphError, Options};
use std::f64::consts::PI;

/// What a slice's label shows (`valueLabels`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueLabels {
    None,
    Number,
    Percent,
}

/// The pie-only parameters.
#[derive(Debug, Clone)]
pub struct PieOptions {
    pub value_labels: ValueLabels,
    pub value_labels_min: f64,
    pub value_labels_color: String,
    /// `pieLabels=rotated`: labels turned along their slice's middle.
    pub rotated: bool,
}

impl Default for PieOptions {
    fn default() -> Self {
        PieOptions {
            value_labels: ValueLabels::Percent,
            value_labels_min: 5.0,
            value_labels_color: "black".into(),
            rotated: false,
        }
    }
}

fn parse_color(s: &str) -> Result<Color, GraphError> {
    color::parse(s).ok_or_else(|| GraphError::Color(s.to_string()))
}

/// `text` with `(x, y)` its centre (or its top centre when `top`), turned by `angle`.
#[allow(clippy::too_many_arguments)]
fn centered(
    c: &mut dyn Canvas,
    s: &str,
    x: f64,
    y: f64,
    size: f64,
    col: Color,
    angle: f64,
    top: bool,
) {
    let e = font::extents(size);
    let w = font::width(s, size);
    let voff = if top {
        e.ascent
    } else {
        e.height / 2.0 - e.descent
    };
    let (sn, cs) = angle.sin_cos();
    let hoff = w / 2.0;
    c.text(
        s,
        x - sn * voff - cs * hoff,
        y + cs * voff - sn * hoff,
        size,
        col,
        angle,
    );
}

/// The label of a slice, or none under the minimum (graphite-web's `drawLabels`).
pub fn label(value: f64, total: f64, p: &PieOptions) -> Option<String> {
    match p.value_labels {
        ValueLabels::None => None,
        ValueLabels::Percent => {
            let pct = value / total * 100.0;
            (pct >= p.value_labels_min).then(|| format!("%{pct:.2}"))
        }
        ValueLabels::Number => {
            if value < p.value_labels_min {
                None
            } else if value < 10.0 && value != value.trunc() {
                Some(format!("{value:.2}"))
            } else {
                Some(format!("{}", value as i64))
            }
        }
    }
}

/// Draws `slices` (name, value) as `o` and `p` say: PNG or SVG bytes.
pub fn draw(slices: &[(String, f64)], o: &Options, p: &PieOptions) -> Result<Vec<u8>, GraphError> {
    let (w, h) = (o.width.max(1) as f64, o.height.max(1) as f64);
    let mut c: Box<dyn Canvas> = match o.format {
        Format::Png => Box::new(Raster::new(w as u32, h as u32).ok_or(GraphError::Canvas {
            width: w as u32,
            height: h as u32,
        })?),
        Format::Svg => Box::new(Svg::new(w as u32, h as u32)),
    };
    c.fill_rect(0.0, 0.0, w, h, parse_color(&o.background)?);
    let fg = parse_color(&o.foreground)?;
    if slices.is_empty() {
        let size = (w * h).ln();
        centered(
            c.as_mut(),
            "No Data",
            w / 2.0,
            h / 2.0,
            size,
            parse_color("red")?,
            0.0,
            false,
        );
        return c.finish();
    }
    let (xmin, xmax) = (o.margin, (w - o.margin).max(o.margin));
    let (mut ymin, mut ymax) = (o.margin, h - o.margin);
    let ts = o.font_size + o.font_size.ln().floor();
    if !o.title.is_empty() {
        c.group("title");
        let lh = font::extents(ts).height;
        for line in o.title.split('\n') {
            centered(c.as_mut(), line, w / 2.0, ymin, ts, fg, 0.0, true);
            ymin += lh;
        }
        ymin += o.margin;
    }
    let alpha = o.area_alpha.unwrap_or(1.0);
    let colors: Vec<Color> = o
        .colors
        .iter()
        .map(|s| parse_color(s))
        .collect::<Result<_, _>>()?;
    let color_of = |i: usize| {
        colors
            .get(i % colors.len().max(1))
            .copied()
            .unwrap_or(Color::rgb(0, 0, 0))
            .with_alpha(alpha)
    };
    if !o.hide_legend.unwrap_or(false) {
        c.group("legend");
        let size = o.font_size;
        let e = font::extents(size);
        let (box_size, line_height, padding) = (e.height - 1.0, e.height + 1.0, 5.0);
        let longest = slices
            .iter()
            .map(|s| font::width(&s.0, size))
            .fold(0.0, f64::max);
        let label_width = longest + 2.0 * (box_size + padding);
        let columns = ((w / label_width).floor() as usize).max(1);
        let lines = slices.len().div_ceil(columns);
        ymax -= lines as f64 * line_height + padding;
        let (mut x, mut y) = (xmin, ymax + 2.0 * padding);
        for (i, (name, _)) in slices.iter().enumerate() {
            c.fill_rect(x, y, box_size, box_size, color_of(i));
            c.text(name, x + box_size + padding, y + e.ascent, size, fg, 0.0);
            x += label_width;
            if (i + 1) % columns == 0 {
                x = xmin;
                y += line_height;
            }
        }
    }
    let total: f64 = slices.iter().map(|s| s.1).sum();
    let (half_x, half_y) = ((xmax - xmin) / 2.0, (ymax - ymin) / 2.0);
    let (x0, y0) = (xmin + half_x, ymin + half_y);
    let radius = half_x.min(half_y).max(0.0) * 0.95;
    c.group("slices");
    let mut theta = 1.5 * PI;
    let mut mids = Vec::with_capacity(slices.len());
    for (i, (name, value)) in slices.iter().enumerate() {
        let phi = theta + 2.0 * PI * value / total;
        c.series(Some(name));
        // The arc as a polygon: a segment per degree at most.
        let steps = (((phi - theta).abs() / (PI / 180.0)).ceil() as usize).max(1);
        let mut path = vec![P::M(x0, y0)];
        for k in 0..=steps {
            let a = theta + (phi - theta) * k as f64 / steps as f64;
            path.push(P::L(x0 + radius * a.cos(), y0 + radius * a.sin()));
        }
        path.push(P::L(x0, y0));
        if total.is_finite() && total != 0.0 {
            c.fill(&path, color_of(i));
        }
        mids.push(((theta + phi) / 2.0).rem_euclid(2.0 * PI));
        theta = phi;
    }
    c.series(None);
    if p.value_labels != ValueLabels::None {
        c.group("labels");
        let lc = parse_color(&p.value_labels_color)?;
        for ((_, value), mid) in slices.iter().zip(mids) {
            let Some(text) = label(*value, total, p) else {
                continue;
            };
            let x = x0 + radius / 2.0 * mid.cos();
            let y = y0 + radius / 2.0 * mid.sin();
            let mut angle = 0.0;
            if p.rotated {
                angle = mid;
                if mid > PI / 2.0 && mid <= 1.5 * PI {
                    angle -= PI;
                }
            }
            centered(c.as_mut(), &text, x, y, o.font_size, lc, angle, false);
        }
    }
    c.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_as_graphite_web_writes_them() {
        let p = PieOptions::default();
        assert_eq!(label(25.0, 100.0, &p).as_deref(), Some("%25.00"));
        assert_eq!(label(4.0, 100.0, &p), None);
        let n = PieOptions {
            value_labels: ValueLabels::Number,
            ..PieOptions::default()
        };
        assert_eq!(label(7.25, 100.0, &n).as_deref(), Some("7.25"));
        assert_eq!(label(42.9, 100.0, &n).as_deref(), Some("42"));
        assert_eq!(label(3.0, 100.0, &n), None);
    }

    #[test]
    fn svg_has_a_slice_per_value_and_labels() {
        let o = Options {
            format: Format::Svg,
            title: "Share".into(),
            ..Options::default()
        };
        let slices = vec![("a".to_string(), 1.0), ("b".to_string(), 3.0)];
        let svg = String::from_utf8(draw(&slices, &o, &PieOptions::default()).unwrap()).unwrap();
        assert!(svg.contains(">%25.00</text>"), "{svg}");
        assert!(svg.contains(">%75.00</text>"));
        assert!(svg.contains(">Share</text>"));
        assert_eq!(svg.matches("data-series=\"a\"").count(), 1, "{svg}");
        let none = String::from_utf8(draw(&[], &o, &PieOptions::default()).unwrap()).unwrap();
        assert!(none.contains(">No Data</text>"));
        let png = draw(&slices, &Options::default(), &PieOptions::default()).unwrap();
        assert_eq!(&png[1..4], b"PNG");
    }
}
