//! The one font images are drawn with: DejaVu Sans, compiled into the binary (no system fonts
//! are looked up at run time; `LICENSE-DejaVu.txt` beside it is its licence). Sizes are em
//! sizes in pixels, as cairo's `set_font_size` takes them, so graphite-web's layout arithmetic
//! (`fontSize` 10, titles 12) carries over.

use ab_glyph::{Font, FontRef, GlyphId, OutlineCurve};
use std::sync::OnceLock;

static BYTES: &[u8] = include_bytes!("DejaVuSans.ttf");

/// The CSS family SVG output names, so a viewer with DejaVu installed matches the PNG.
pub const FAMILY: &str = "DejaVu Sans, Bitstream Vera Sans, Verdana, sans-serif";

fn font() -> &'static FontRef<'static> {
    static FONT: OnceLock<FontRef<'static>> = OnceLock::new();
    FONT.get_or_init(|| FontRef::try_from_slice(BYTES).expect("the embedded font parses"))
}

fn units_per_em() -> f32 {
    font().units_per_em().unwrap_or(2048.0)
}

/// Vertical metrics at one size (cairo's `font_extents`).
#[derive(Debug, Clone, Copy)]
pub struct Extents {
    pub ascent: f64,
    pub descent: f64,
    /// Baseline to baseline.
    pub height: f64,
}

pub fn extents(size: f64) -> Extents {
    let f = font();
    let s = size / units_per_em() as f64;
    let ascent = f.ascent_unscaled() as f64 * s;
    let descent = -f.descent_unscaled() as f64 * s;
    Extents {
        ascent,
        descent,
        height: ascent + descent + f.line_gap_unscaled() as f64 * s,
    }
}

/// Each character's glyph and its pen position (x offset from the start, unscaled units).
fn layout(text: &str) -> (Vec<(GlyphId, f32)>, f32) {
    let f = font();
    let mut out = Vec::with_capacity(text.len());
    let mut x = 0.0f32;
    let mut prev: Option<GlyphId> = None;
    for c in text.chars() {
        let id = f.glyph_id(c);
        if let Some(p) = prev {
            x += f.kern_unscaled(p, id);
        }
        out.push((id, x));
        x += f.h_advance_unscaled(id);
        prev = Some(id);
    }
    (out, x)
}

/// The advance width of `text` at `size`.
pub fn width(text: &str, size: f64) -> f64 {
    layout(text).1 as f64 * size / units_per_em() as f64
}

/// One step of a glyph outline, in pixels with y down.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Seg {
    Move(f64, f64),
    Line(f64, f64),
    Quad(f64, f64, f64, f64),
    Cubic(f64, f64, f64, f64, f64, f64),
    Close,
}

/// The outlines of `text` at `size` with its baseline starting at the origin (x right, y
/// down), for the caller to place and rotate.
pub fn outline(text: &str, size: f64) -> Vec<Seg> {
    let f = font();
    let s = size / units_per_em() as f64;
    let mut out = Vec::new();
    for (id, pen) in layout(text).0 {
        let Some(o) = f.outline(id) else { continue };
        let p = |q: ab_glyph::Point| ((pen + q.x) as f64 * s, -(q.y as f64) * s);
        let mut last: Option<ab_glyph::Point> = None;
        for c in &o.curves {
            let (start, end) = match c {
                OutlineCurve::Line(a, b) => (*a, *b),
                OutlineCurve::Quad(a, _, b) => (*a, *b),
                OutlineCurve::Cubic(a, _, _, b) => (*a, *b),
            };
            if last != Some(start) {
                if last.is_some() {
                    out.push(Seg::Close);
                }
                let (x, y) = p(start);
                out.push(Seg::Move(x, y));
            }
            out.push(match c {
                OutlineCurve::Line(_, b) => {
                    let (x, y) = p(*b);
                    Seg::Line(x, y)
                }
                OutlineCurve::Quad(_, c1, b) => {
                    let ((x1, y1), (x, y)) = (p(*c1), p(*b));
                    Seg::Quad(x1, y1, x, y)
                }
                OutlineCurve::Cubic(_, c1, c2, b) => {
                    let ((x1, y1), (x2, y2), (x, y)) = (p(*c1), p(*c2), p(*b));
                    Seg::Cubic(x1, y1, x2, y2, x, y)
                }
            });
            last = Some(end);
        }
        if last.is_some() {
            out.push(Seg::Close);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_scale_with_size() {
        let e = extents(10.0);
        // DejaVu Sans: ascent 0.928 em, descent 0.236 em.
        assert!((e.ascent - 9.28).abs() < 0.05, "{e:?}");
        assert!((e.descent - 2.36).abs() < 0.05, "{e:?}");
        assert!(width("MMMM", 10.0) > width("iiii", 10.0));
        assert!((width("abc", 20.0) - 2.0 * width("abc", 10.0)).abs() < 1e-9);
        assert_eq!(width("", 10.0), 0.0);
        let o = outline("A", 10.0);
        assert!(matches!(o[0], Seg::Move(..)) && o.contains(&Seg::Close));
        assert!(outline(" ", 10.0).is_empty());
    }
}
