//! Where a graph is drawn: a raster (tiny-skia, encoded as PNG) or an SVG document, behind one
//! small set of operations, so the layout is written once. Coordinates are pixels, y down.

use super::font;
use std::fmt::Write;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Color {
    pub r: u8,
    pub g: u8,
    pub b: u8,
    /// Opacity, 0 (invisible) to 1.
    pub a: f64,
}

impl Color {
    pub const fn rgb(r: u8, g: u8, b: u8) -> Color {
        Color { r, g, b, a: 1.0 }
    }

    pub fn with_alpha(self, a: f64) -> Color {
        Color {
            a: a.clamp(0.0, 1.0),
            ..self
        }
    }

    fn skia(self) -> tiny_skia::Color {
        tiny_skia::Color::from_rgba8(self.r, self.g, self.b, (self.a * 255.0).round() as u8)
    }

    fn css(self) -> String {
        format!("#{:02x}{:02x}{:02x}", self.r, self.g, self.b)
    }
}

/// One step of a polyline path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum P {
    M(f64, f64),
    L(f64, f64),
}

pub trait Canvas {
    fn fill_rect(&mut self, x: f64, y: f64, w: f64, h: f64, c: Color);
    /// Strokes `path` (butt caps, miter joins, as graphite-web's cairo does); `dash` is the
    /// length of each dash and gap.
    fn stroke(&mut self, path: &[P], c: Color, width: f64, dash: Option<f64>);
    /// Fills `path`, each sub-path closed (non-zero winding).
    fn fill(&mut self, path: &[P], c: Color);
    /// `text` with its baseline starting at (x, y), turned by `angle` radians about that point.
    fn text(&mut self, text: &str, x: f64, y: f64, size: f64, c: Color, angle: f64);
    /// Draws only inside this rectangle from now on.
    fn clip_rect(&mut self, x: f64, y: f64, w: f64, h: f64);
    /// Draws no more inside the polygon `poly` (within the clip rectangle): what graphite-web
    /// does after filling a stacked area, so the next area only shows above it.
    fn clip_out(&mut self, poly: &[P]);
    fn reset_clip(&mut self);
    /// Starts a named part of the drawing (SVG `<g class>`, as graphite-web's SVG headers).
    fn group(&mut self, _class: &str) {}
    /// The series the following paths belong to (SVG `data-series`).
    fn series(&mut self, _name: Option<&str>) {}
    fn finish(self: Box<Self>) -> Result<Vec<u8>, super::GraphError>;
}

// ---------------------------------------------------------------------------------------------
// Raster

pub struct Raster {
    pixmap: tiny_skia::Pixmap,
    mask: Option<tiny_skia::Mask>,
    rect: Option<tiny_skia::Rect>,
}

impl Raster {
    pub fn new(width: u32, height: u32) -> Option<Raster> {
        Some(Raster {
            pixmap: tiny_skia::Pixmap::new(width, height)?,
            mask: None,
            rect: None,
        })
    }

    fn paint(c: Color) -> tiny_skia::Paint<'static> {
        let mut p = tiny_skia::Paint::default();
        p.set_color(c.skia());
        p.anti_alias = true;
        p
    }
}

fn skia_path(path: &[P]) -> Option<tiny_skia::Path> {
    let mut b = tiny_skia::PathBuilder::new();
    for p in path {
        match *p {
            P::M(x, y) => b.move_to(x as f32, y as f32),
            P::L(x, y) => b.line_to(x as f32, y as f32),
        }
    }
    b.finish()
}

impl Canvas for Raster {
    fn fill_rect(&mut self, x: f64, y: f64, w: f64, h: f64, c: Color) {
        if let Some(r) = tiny_skia::Rect::from_xywh(x as f32, y as f32, w as f32, h as f32) {
            self.pixmap.fill_rect(
                r,
                &Self::paint(c),
                tiny_skia::Transform::identity(),
                self.mask.as_ref(),
            );
        }
    }

    fn stroke(&mut self, path: &[P], c: Color, width: f64, dash: Option<f64>) {
        let Some(p) = skia_path(path) else { return };
        let stroke = tiny_skia::Stroke {
            width: width as f32,
            dash: dash
                .filter(|d| *d > 0.0)
                .and_then(|d| tiny_skia::StrokeDash::new(vec![d as f32, d as f32], 0.0)),
            ..Default::default()
        };
        self.pixmap.stroke_path(
            &p,
            &Self::paint(c),
            &stroke,
            tiny_skia::Transform::identity(),
            self.mask.as_ref(),
        );
    }

    fn fill(&mut self, path: &[P], c: Color) {
        let Some(p) = skia_path(path) else { return };
        self.pixmap.fill_path(
            &p,
            &Self::paint(c),
            tiny_skia::FillRule::Winding,
            tiny_skia::Transform::identity(),
            self.mask.as_ref(),
        );
    }

    fn text(&mut self, text: &str, x: f64, y: f64, size: f64, c: Color, angle: f64) {
        let mut b = tiny_skia::PathBuilder::new();
        for s in font::outline(text, size) {
            match s {
                font::Seg::Move(x, y) => b.move_to(x as f32, y as f32),
                font::Seg::Line(x, y) => b.line_to(x as f32, y as f32),
                font::Seg::Quad(x1, y1, x, y) => {
                    b.quad_to(x1 as f32, y1 as f32, x as f32, y as f32)
                }
                font::Seg::Cubic(x1, y1, x2, y2, x, y) => b.cubic_to(
                    x1 as f32, y1 as f32, x2 as f32, y2 as f32, x as f32, y as f32,
                ),
                font::Seg::Close => b.close(),
            }
        }
        let Some(p) = b.finish() else { return };
        let (s, co) = angle.sin_cos();
        let t = tiny_skia::Transform::from_row(
            co as f32, s as f32, -s as f32, co as f32, x as f32, y as f32,
        );
        self.pixmap.fill_path(
            &p,
            &Self::paint(c),
            tiny_skia::FillRule::Winding,
            t,
            self.mask.as_ref(),
        );
    }

    fn clip_rect(&mut self, x: f64, y: f64, w: f64, h: f64) {
        let Some(r) = tiny_skia::Rect::from_xywh(x as f32, y as f32, w as f32, h as f32) else {
            return;
        };
        let Some(mut m) = tiny_skia::Mask::new(self.pixmap.width(), self.pixmap.height()) else {
            return;
        };
        m.fill_path(
            &tiny_skia::PathBuilder::from_rect(r),
            tiny_skia::FillRule::Winding,
            false,
            tiny_skia::Transform::identity(),
        );
        self.mask = Some(m);
        self.rect = Some(r);
    }

    fn clip_out(&mut self, poly: &[P]) {
        let (Some(m), Some(r)) = (self.mask.as_mut(), self.rect) else {
            return;
        };
        // The rectangle with the polygon cut out of it (even-odd).
        let mut full = vec![
            P::M(r.left() as f64, r.top() as f64),
            P::L(r.right() as f64, r.top() as f64),
            P::L(r.right() as f64, r.bottom() as f64),
            P::L(r.left() as f64, r.bottom() as f64),
        ];
        full.extend_from_slice(poly);
        if let Some(p) = skia_path(&full) {
            m.intersect_path(
                &p,
                tiny_skia::FillRule::EvenOdd,
                true,
                tiny_skia::Transform::identity(),
            );
        }
    }

    fn reset_clip(&mut self) {
        self.mask = None;
        self.rect = None;
    }

    fn finish(self: Box<Self>) -> Result<Vec<u8>, super::GraphError> {
        self.pixmap
            .encode_png()
            .map_err(|e| super::GraphError::Png(e.to_string()))
    }
}

// ---------------------------------------------------------------------------------------------
// SVG

pub struct Svg {
    out: String,
    /// Open `<g clip-path>` elements.
    clips: usize,
    group_open: bool,
    next_id: usize,
    rect: Option<(f64, f64, f64, f64)>,
    series: Option<String>,
}

/// A coordinate with at most two decimals, trailing zeros dropped.
fn n(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '&' => o.push_str("&amp;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            // Not allowed in XML 1.0.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

fn d(path: &[P]) -> String {
    let mut s = String::with_capacity(path.len() * 14);
    for p in path {
        let _ = match *p {
            P::M(x, y) => write!(s, "M{} {}", n(x), n(y)),
            P::L(x, y) => write!(s, "L{} {}", n(x), n(y)),
        };
    }
    s
}

impl Svg {
    pub fn new(width: u32, height: u32) -> Svg {
        let out = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" \
             width=\"{width}px\" height=\"{height}px\" viewBox=\"0 0 {width} {height}\" \
             version=\"1.1\">\n<g class=\"graphite\">\n"
        );
        Svg {
            out,
            clips: 0,
            group_open: false,
            next_id: 0,
            rect: None,
            series: None,
        }
    }

    fn paint(c: Color, attr: &str) -> String {
        if c.a < 1.0 {
            format!("{attr}=\"{}\" {attr}-opacity=\"{}\"", c.css(), n(c.a))
        } else {
            format!("{attr}=\"{}\"", c.css())
        }
    }

    fn series_attr(&self) -> String {
        match &self.series {
            Some(s) => format!(" data-series=\"{}\"", escape(s)),
            None => String::new(),
        }
    }

    fn close_clips(&mut self) {
        for _ in 0..self.clips {
            self.out.push_str("</g>\n");
        }
        self.clips = 0;
    }

    fn open_clip(&mut self, shape: &str) {
        self.next_id += 1;
        let id = self.next_id;
        let _ = writeln!(
            self.out,
            "<clipPath id=\"c{id}\">{shape}</clipPath><g clip-path=\"url(#c{id})\">"
        );
        self.clips += 1;
    }
}

impl Canvas for Svg {
    fn fill_rect(&mut self, x: f64, y: f64, w: f64, h: f64, c: Color) {
        let _ = writeln!(
            self.out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" {}/>",
            n(x),
            n(y),
            n(w),
            n(h),
            Self::paint(c, "fill")
        );
    }

    fn stroke(&mut self, path: &[P], c: Color, width: f64, dash: Option<f64>) {
        if path.len() < 2 {
            return;
        }
        let dash = match dash.filter(|d| *d > 0.0) {
            Some(v) => format!(" stroke-dasharray=\"{0},{0}\"", n(v)),
            None => String::new(),
        };
        let _ = writeln!(
            self.out,
            "<path d=\"{}\" fill=\"none\" {} stroke-width=\"{}\"{dash}{}/>",
            d(path),
            Self::paint(c, "stroke"),
            n(width),
            self.series_attr()
        );
    }

    fn fill(&mut self, path: &[P], c: Color) {
        if path.len() < 3 {
            return;
        }
        let _ = writeln!(
            self.out,
            "<path d=\"{}Z\" {}{}/>",
            d(path),
            Self::paint(c, "fill"),
            self.series_attr()
        );
    }

    fn text(&mut self, text: &str, x: f64, y: f64, size: f64, c: Color, angle: f64) {
        let rotate = if angle != 0.0 {
            format!(
                " transform=\"rotate({} {} {})\"",
                n(angle.to_degrees()),
                n(x),
                n(y)
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            self.out,
            "<text x=\"{}\" y=\"{}\" font-family=\"{}\" font-size=\"{}\" {}{rotate} \
             xml:space=\"preserve\">{}</text>",
            n(x),
            n(y),
            font::FAMILY,
            n(size),
            Self::paint(c, "fill"),
            escape(text)
        );
    }

    fn clip_rect(&mut self, x: f64, y: f64, w: f64, h: f64) {
        self.close_clips();
        self.rect = Some((x, y, w, h));
        let shape = format!(
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
            n(x),
            n(y),
            n(w),
            n(h)
        );
        self.open_clip(&shape);
    }

    fn clip_out(&mut self, poly: &[P]) {
        let Some((x, y, w, h)) = self.rect else {
            return;
        };
        let mut full = vec![
            P::M(x, y),
            P::L(x + w, y),
            P::L(x + w, y + h),
            P::L(x, y + h),
        ];
        full.extend_from_slice(poly);
        let shape = format!("<path d=\"{}Z\" clip-rule=\"evenodd\"/>", d(&full));
        self.open_clip(&shape);
    }

    fn reset_clip(&mut self) {
        self.close_clips();
        self.rect = None;
    }

    fn group(&mut self, class: &str) {
        self.close_clips();
        if self.group_open {
            self.out.push_str("</g>\n");
        }
        let _ = writeln!(self.out, "<g class=\"{}\">", escape(class));
        self.group_open = true;
    }

    fn series(&mut self, name: Option<&str>) {
        self.series = name.map(str::to_string);
    }

    fn finish(mut self: Box<Self>) -> Result<Vec<u8>, super::GraphError> {
        self.close_clips();
        if self.group_open {
            self.out.push_str("</g>\n");
        }
        self.out.push_str("</g>\n</svg>\n");
        Ok(self.out.into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn svg_numbers_and_escapes() {
        assert_eq!(n(1.0), "1");
        assert_eq!(n(1.256), "1.26");
        assert_eq!(n(-0.001), "0");
        assert_eq!(escape("a<b&\"c\"\u{1}"), "a&lt;b&amp;&quot;c&quot; ");
        let mut s = Box::new(Svg::new(10, 10));
        s.group("lines");
        s.clip_rect(0.0, 0.0, 10.0, 10.0);
        s.clip_out(&[P::M(0.0, 5.0), P::L(10.0, 5.0), P::L(10.0, 10.0)]);
        s.series(Some("a&b"));
        s.stroke(
            &[P::M(0.0, 0.0), P::L(5.0, 5.0)],
            Color::rgb(255, 0, 0),
            1.2,
            Some(5.0),
        );
        let out = String::from_utf8(s.finish().unwrap()).unwrap();
        assert!(out.contains("<path d=\"M0 0L5 5\" fill=\"none\" stroke=\"#ff0000\" stroke-width=\"1.2\" stroke-dasharray=\"5,5\" data-series=\"a&amp;b\"/>"), "{out}");
        // Every <g> is closed.
        assert_eq!(out.matches("<g").count(), out.matches("</g>").count());
    }

    #[test]
    fn raster_clip_out_keeps_the_cut_area_untouched() {
        let mut r = Raster::new(20, 20).unwrap();
        r.clip_rect(0.0, 0.0, 20.0, 20.0);
        // Cut out the bottom half, then paint everything red.
        r.clip_out(&[
            P::M(0.0, 10.0),
            P::L(20.0, 10.0),
            P::L(20.0, 20.0),
            P::L(0.0, 20.0),
        ]);
        r.fill_rect(0.0, 0.0, 20.0, 20.0, Color::rgb(255, 0, 0));
        let top = r.pixmap.pixel(5, 2).unwrap();
        let bottom = r.pixmap.pixel(5, 17).unwrap();
        assert_eq!((top.red(), top.alpha()), (255, 255));
        assert_eq!(bottom.alpha(), 0);
    }
}
