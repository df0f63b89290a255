//! The line graph, laid out as graphite-web 1.1's `LineGraph` lays it out: background; title
//! and vertical titles; legend below (columns of colour boxes and names); room for the time
//! labels; series consolidated to the pixels they get; the y axis sized until its labels fit;
//! labels and grid; then the lines, stacked areas first, each clipped so the next area only
//! shows above it.

use super::axis::{self, Tics};
use super::canvas::{Canvas, Color, Raster, Svg, P};
use super::GraphError;
use super::{color, font, AreaMode, Format, Legend, Line, LineMode, Options, LEGEND_MAX_ITEMS};
use chrono::TimeZone;

type R<T> = Result<T, GraphError>;

#[derive(Debug, Clone, Copy)]
struct Area {
    xmin: f64,
    xmax: f64,
    ymin: f64,
    ymax: f64,
}

/// A series being drawn: its data, its resolved colour, and its place on the x axis.
struct Ln {
    l: Line,
    color: Color,
    /// Alpha from an eight-digit colour, which wins over `alpha()` (as in graphite-web).
    color_alpha: Option<f64>,
    /// Raw values per drawn value.
    vpp: usize,
    x_step: f64,
}

impl Ln {
    /// The values as drawn: consolidated `vpp` at a time.
    fn drawn(&self) -> Vec<Option<f64>> {
        if self.vpp <= 1 {
            return self.l.values.clone();
        }
        self.l
            .values
            .chunks(self.vpp)
            .map(|c| self.l.consolidate.apply(c))
            .collect()
    }
}

fn parse_color(s: &str) -> R<Color> {
    color::parse(s).ok_or_else(|| GraphError::Color(s.into()))
}

/// A colour and the alpha its hex spelled out, if it had eight digits.
fn parse_color_alpha(s: &str) -> R<(Color, Option<f64>)> {
    let c = parse_color(s)?;
    let h = s.trim().trim_start_matches('#').trim_start_matches("%23");
    Ok((c, (h.len() == 8).then_some(c.a)))
}

#[derive(Clone, Copy)]
enum Align {
    Left,
    Center,
    Right,
}

#[derive(Clone, Copy)]
enum VAlign {
    Top,
    Middle,
    Baseline,
}

/// The y axis (or one of two) once sized.
#[derive(Default, Clone)]
struct YAxis {
    tics: Option<Tics>,
    values: Vec<f64>,
    labels: Vec<String>,
    label_width: f64,
}

struct Graph<'o> {
    o: &'o Options,
    c: Box<dyn Canvas>,
    w: f64,
    h: f64,
    margin: f64,
    area: Area,
    fg: Color,
    font_size: f64,
    line_mode: LineMode,
    line_width: f64,
    second: bool,
    hide_axes: bool,
    hide_grid: bool,
    hide_legend: bool,
    lines: Vec<Ln>,
    start: i64,
    end: i64,
    range: i64,
    y: YAxis,
    yl: YAxis,
    yr: YAxis,
}

pub fn draw(lines: Vec<Line>, o: &Options) -> R<Vec<u8>> {
    let (w, h) = (o.width.max(1), o.height.max(1));
    let mut c: Box<dyn Canvas> = match o.format {
        Format::Png => Box::new(Raster::new(w, h).ok_or(GraphError::Canvas {
            width: w,
            height: h,
        })?),
        Format::Svg => Box::new(Svg::new(w, h)),
    };
    let bg = parse_color(&o.background)?;
    c.fill_rect(0.0, 0.0, w as f64, h as f64, bg);
    let mut g = Graph {
        o,
        c,
        w: w as f64,
        h: h as f64,
        margin: if o.graph_only { 0.0 } else { o.margin },
        area: Area {
            xmin: 0.0,
            xmax: 0.0,
            ymin: 0.0,
            ymax: 0.0,
        },
        fg: parse_color(&o.foreground)?,
        font_size: o.font_size,
        line_mode: o.line_mode,
        line_width: o.line_width,
        second: lines.iter().any(|l| l.second_y),
        hide_axes: o.hide_axes || o.graph_only,
        hide_grid: o.hide_grid || o.hide_axes || o.graph_only,
        hide_legend: o.graph_only || o.hide_legend.unwrap_or(lines.len() > LEGEND_MAX_ITEMS),
        lines: Vec::new(),
        start: 0,
        end: 0,
        range: 0,
        y: YAxis::default(),
        yl: YAxis::default(),
        yr: YAxis::default(),
    };
    g.area = Area {
        xmin: g.margin + if o.graph_only { 0.0 } else { 10.0 },
        xmax: g.w - g.margin,
        ymin: g.margin,
        ymax: g.h - g.margin,
    };
    let start = lines.iter().map(|l| l.start).min();
    let end = lines.iter().map(|l| l.end).max();
    match (start, end) {
        (Some(s), Some(e)) if e > s => {}
        _ => {
            g.no_data();
            return g.c.finish();
        }
    }
    // Colours: a series' own, else the next of the list (cycling).
    let mut next = 0usize;
    let colors: Vec<(Color, Option<f64>)> = o
        .colors
        .iter()
        .map(|c| parse_color_alpha(c))
        .collect::<R<_>>()?;
    for l in lines {
        let (color, color_alpha) = match &l.color {
            Some(c) => parse_color_alpha(c)?,
            None if colors.is_empty() => (Color::rgb(0, 0, 0), None),
            None => {
                let c = colors[next % colors.len()];
                next += 1;
                c
            }
        };
        g.lines.push(Ln {
            l,
            color,
            color_alpha,
            vpp: 1,
            x_step: 1.0,
        });
    }
    // A single point cannot slope.
    if g.line_mode == LineMode::Slope && g.lines.iter().any(|l| l.l.values.len() == 1) {
        g.line_mode = LineMode::Staircase;
    }
    g.layout()?;
    g.c.finish()
}

impl Graph<'_> {
    fn no_data(&mut self) {
        let size = (self.w * self.h).ln();
        self.text(
            "No Data",
            self.w / 2.0,
            self.h / 2.0,
            size,
            Color::rgb(200, 0, 50),
            Align::Center,
            VAlign::Top,
            0.0,
        );
    }

    /// graphite-web's `drawText`: `(x, y)` is the anchor that `align`/`valign` name.
    #[allow(clippy::too_many_arguments)]
    fn text(
        &mut self,
        s: &str,
        x: f64,
        y: f64,
        size: f64,
        c: Color,
        align: Align,
        valign: VAlign,
        degrees: f64,
    ) {
        let e = font::extents(size);
        let w = font::width(s, size);
        let hoff = match align {
            Align::Left => 0.0,
            Align::Center => w / 2.0,
            Align::Right => w,
        };
        let voff = match valign {
            VAlign::Top => e.ascent,
            VAlign::Middle => e.height / 2.0 - e.descent,
            VAlign::Baseline => 0.0,
        };
        let a = degrees.to_radians();
        let (sn, cs) = a.sin_cos();
        let ox = x - sn * voff - cs * hoff;
        let oy = y + cs * voff - sn * hoff;
        self.c.text(s, ox, oy, size, c, a);
    }

    fn title_size(&self) -> f64 {
        self.font_size + self.font_size.ln().floor()
    }

    fn layout(&mut self) -> R<()> {
        let o = self.o;
        let ts = self.title_size();
        if !o.title.is_empty() && !o.graph_only {
            self.c.group("title");
            let lh = font::extents(ts).height;
            let mut y = self.area.ymin;
            for line in o.title.split('\n') {
                self.text(
                    line,
                    self.w / 2.0,
                    y,
                    ts,
                    self.fg,
                    Align::Center,
                    VAlign::Top,
                    0.0,
                );
                y += lh;
            }
            self.area.ymin = y + self.margin;
        }
        if !o.vtitle.is_empty() && !o.graph_only {
            self.c.group("vtitle");
            let lh = font::extents(ts).height;
            let mut x = self.area.xmin + lh;
            for line in o.vtitle.split('\n') {
                self.text(
                    line,
                    x,
                    self.h / 2.0,
                    ts,
                    self.fg,
                    Align::Center,
                    VAlign::Baseline,
                    270.0,
                );
                x += lh;
            }
            self.area.xmin = x + self.margin + lh;
        }
        if self.second && !o.vtitle_right.is_empty() && !o.graph_only {
            self.c.group("vtitleRight");
            let lh = font::extents(ts).height;
            let mut x = self.area.xmax - lh;
            for line in o.vtitle_right.split('\n') {
                self.text(
                    line,
                    x,
                    self.h / 2.0,
                    ts,
                    self.fg,
                    Align::Center,
                    VAlign::Baseline,
                    90.0,
                );
                x -= lh;
            }
            self.area.xmax = x - self.margin - lh;
        }
        if !self.hide_legend && o.legend == Legend::Below {
            self.legend_below();
        }
        if !self.hide_axes && !o.hide_x_axis {
            self.area.ymax -= font::extents(self.font_size).ascent * 2.0;
        }
        self.start = self.lines.iter().map(|l| l.l.start).min().unwrap_or(0);
        self.end = self
            .lines
            .iter()
            .map(|l| match self.line_mode {
                LineMode::Staircase => l.l.end,
                _ => l.l.end - l.l.step,
            })
            .max()
            .unwrap_or(0);
        self.range = (self.end - self.start).max(1);
        self.consolidate();
        self.c.group("axes");
        // Sizing the y labels narrows the plot, which can change the consolidation and so the
        // values: repeat until the plot's width settles.
        for _ in 0..10 {
            let (xmin, xmax) = (self.area.xmin, self.area.xmax);
            self.setup_y()?;
            if xmin == self.area.xmin && xmax == self.area.xmax {
                break;
            }
            self.consolidate();
        }
        if !self.hide_axes {
            self.draw_labels();
            if !self.hide_grid {
                self.c.group("grid");
                self.draw_grid();
            }
        }
        self.c.group("lines");
        self.draw_lines()?;
        if let Legend::Inside { right, top, boxed } = o.legend {
            if !self.hide_legend {
                self.c.group("legend");
                self.legend_inside(right, top, boxed);
            }
        }
        Ok(())
    }

    fn legend_entries(&self) -> Vec<(String, Color, bool)> {
        let mut out: Vec<(String, Color, bool)> = Vec::new();
        for l in &self.lines {
            if l.l.name.is_empty()
                || (self.o.hide_null_from_legend && l.l.values.iter().all(|v| v.is_none()))
                || (self.o.unique_legend && out.iter().any(|e| e.0 == l.l.name))
            {
                continue;
            }
            out.push((l.l.name.clone(), l.color, l.l.second_y));
        }
        out
    }

    fn legend_below(&mut self) {
        let items = self.legend_entries();
        if items.is_empty() {
            return;
        }
        self.c.group("legend");
        let size = self.font_size;
        let padding = 5.0;
        let longest = items
            .iter()
            .map(|e| e.0.as_str())
            .max_by_key(|n| n.chars().count())
            .unwrap_or("");
        let e = font::extents(size);
        let box_size = e.height - 1.0;
        let line_height = e.height + 1.0;
        let label_width = font::width(longest, size) + 2.0 * (box_size + padding);
        let columns = ((self.w / label_width).floor() as usize).max(1);
        let lines = items.len().div_ceil(columns);
        self.area.ymax -= lines as f64 * line_height + padding;
        let mut x = self.area.xmin;
        let mut y = self.area.ymax + 2.0 * padding;
        let border = Color::rgb(111, 111, 111);
        for (i, (name, color, right)) in items.iter().enumerate() {
            let (bx, tx, align) = if *right {
                (x + label_width + padding, x + label_width, Align::Right)
            } else {
                (x, x + box_size + padding, Align::Left)
            };
            self.c.fill_rect(bx, y, box_size, box_size, *color);
            self.c.stroke(
                &[
                    P::M(bx + 0.5, y + 0.5),
                    P::L(bx + box_size, y + 0.5),
                    P::L(bx + box_size, y + box_size),
                    P::L(bx + 0.5, y + box_size),
                    P::L(bx + 0.5, y + 0.5),
                ],
                border,
                1.0,
                None,
            );
            self.text(name, tx, y, size, self.fg, align, VAlign::Top, 0.0);
            x += label_width;
            if (i + 1) % columns == 0 {
                x = self.area.xmin;
                y += line_height;
            }
        }
    }

    /// gnuplot's key: names right-aligned beside a sample of each line, in a box in a corner
    /// of the plot.
    fn legend_inside(&mut self, right: bool, top: bool, boxed: bool) {
        let items = self.legend_entries();
        if items.is_empty() {
            return;
        }
        let size = self.font_size;
        let e = font::extents(size);
        let sample = 30.0;
        let pad = 4.0;
        let text_w = items
            .iter()
            .map(|i| font::width(&i.0, size))
            .fold(0.0, f64::max);
        let bw = text_w + sample + 3.0 * pad;
        let bh = items.len() as f64 * e.height + 2.0 * pad;
        let a = self.area;
        let bx = if right {
            a.xmax - bw - 4.0
        } else {
            a.xmin + 4.0
        };
        let by = if top { a.ymin + 4.0 } else { a.ymax - bh - 4.0 };
        if boxed {
            let bg = parse_color(&self.o.background).unwrap_or(Color::rgb(255, 255, 255));
            self.c.fill_rect(bx, by, bw, bh, bg);
            self.c.stroke(
                &[
                    P::M(bx, by),
                    P::L(bx + bw, by),
                    P::L(bx + bw, by + bh),
                    P::L(bx, by + bh),
                    P::L(bx, by),
                ],
                self.fg,
                1.0,
                None,
            );
        }
        for (i, (name, color, _)) in items.iter().enumerate() {
            let y = by + pad + i as f64 * e.height;
            let tx = bx + pad + text_w;
            self.text(name, tx, y, size, self.fg, Align::Right, VAlign::Top, 0.0);
            let ly = y + e.height / 2.0;
            let lx = tx + pad;
            self.c.series(Some(name));
            self.c
                .stroke(&[P::M(lx, ly), P::L(lx + sample, ly)], *color, 1.5, None);
            self.c.series(None);
        }
    }

    fn consolidate(&mut self) {
        let pixels = self.area.xmax - self.area.xmin - (self.line_width + 1.0);
        for l in &mut self.lines {
            let n = self.range as f64 / l.l.step as f64;
            let best = pixels / n;
            if best < self.o.min_x_step {
                let drawable = ((pixels / self.o.min_x_step) as i64).max(1) as f64;
                let ppp = (n / drawable).ceil().max(1.0);
                l.vpp = ppp as usize;
                l.x_step = pixels * ppp / n;
            } else {
                l.vpp = 1;
                l.x_step = best;
            }
        }
    }

    /// The extremes of the finite series' drawn values (graphite-web's `dataLimits`).
    fn data_limits(&self, right: Option<bool>) -> (f64, f64) {
        let finite: Vec<Vec<Option<f64>>> = self
            .lines
            .iter()
            .filter(|l| !l.l.infinite && right.is_none_or(|r| l.l.second_y == r))
            .map(|l| l.drawn())
            .collect();
        let real = |v: &&f64| v.is_finite();
        let min = finite
            .iter()
            .flat_map(|s| s.iter().flatten())
            .filter(real)
            .copied()
            .reduce(f64::min);
        let Some(mut min) = min else {
            return (0.0, 1.0);
        };
        let missing = finite.iter().any(|s| s.contains(&None));
        let nulls_zero = self.o.draw_null_as_zero && missing;
        if min > 0.0 && nulls_zero {
            min = 0.0;
        }
        let mut max = if self.o.area_mode == AreaMode::Stacked {
            let len = finite.iter().map(|s| s.len()).min().unwrap_or(0);
            (0..len)
                .map(|i| {
                    finite
                        .iter()
                        .filter_map(|s| s[i])
                        .filter(|v| v.is_finite())
                        .sum::<f64>()
                })
                .reduce(f64::max)
                .unwrap_or(min)
        } else {
            finite
                .iter()
                .flat_map(|s| s.iter().flatten())
                .filter(real)
                .copied()
                .reduce(f64::max)
                .unwrap_or(min)
        };
        if max < 0.0 && nulls_zero {
            max = 0.0;
        }
        (min, max)
    }

    fn axis(&mut self, right: Option<bool>) -> R<YAxis> {
        let (min, max) = self.data_limits(right);
        let bounds = match right {
            None => self.o.y,
            Some(false) => self.o.y_left,
            Some(true) => self.o.y_right,
        };
        let mut tics = Tics::new(min, max, self.o.units, self.o.log_base, &bounds)?;
        let mut ax = YAxis::default();
        if !self.hide_axes {
            ax.values = tics.label_values();
            ax.labels = ax.values.iter().map(|v| tics.label(*v)).collect();
            ax.label_width = ax
                .labels
                .iter()
                .map(|l| font::width(l, self.font_size))
                .fold(0.0, f64::max);
        }
        ax.tics = Some(tics);
        Ok(ax)
    }

    fn setup_y(&mut self) -> R<()> {
        if self.second {
            self.yl = self.axis(Some(false))?;
            self.yr = self.axis(Some(true))?;
            let xmin = self.margin + self.yl.label_width * 1.02;
            self.area.xmin = self.area.xmin.max(xmin);
            let xmax = self.w - self.yr.label_width * 1.02;
            if self.area.xmax >= xmax {
                self.area.xmax = xmax;
            }
        } else {
            self.y = self.axis(None)?;
            if !self.hide_axes && !self.o.hide_y_axis {
                let xmin = self.margin + self.y.label_width * 1.02;
                self.area.xmin = self.area.xmin.max(xmin);
            }
        }
        Ok(())
    }

    /// The pixel row of `value` on an axis (`None` for a non-positive value on a log scale).
    fn y_coord(&self, value: f64, right: Option<bool>) -> Option<f64> {
        let ax = match right {
            None => &self.y,
            Some(false) => &self.yl,
            Some(true) => &self.yr,
        };
        let t = ax.tics.as_ref()?;
        let (hi, lo) = if ax.values.is_empty() {
            (t.top, t.bottom)
        } else {
            (
                ax.values.iter().copied().fold(f64::MIN, f64::max),
                ax.values.iter().copied().fold(f64::MAX, f64::min),
            )
        };
        let pixels = self.area.ymax - self.area.ymin;
        let (rel, range) = match self.o.log_base {
            Some(b) => {
                if value <= 0.0 {
                    return None;
                }
                (value.log(b) - lo.log(b), hi.log(b) - lo.log(b))
            }
            None => (value - lo, hi - lo),
        };
        let range = if range == 0.0 { 1.0 } else { range };
        Some(self.area.ymax - pixels / range * rel)
    }

    fn side(&self, l: &Ln) -> Option<bool> {
        self.second.then_some(l.l.second_y)
    }

    fn x_scale(&self) -> f64 {
        let graph_width = self.area.xmax - self.area.xmin - (self.line_width + 1.0);
        graph_width / self.range as f64
    }

    fn x_conf(&self) -> axis::XConf {
        let graph_width = self.area.xmax - self.area.xmin - (self.line_width + 1.0);
        axis::x_conf(self.range as f64 / graph_width, self.range)
    }

    fn times(&self, unit: (i64, f64)) -> Vec<i64> {
        let start = self.o.tz.timestamp_opt(self.start, 0).single();
        match start {
            Some(s) => axis::x_times(&s, self.end, unit.0, unit.1),
            None => Vec::new(),
        }
    }

    fn draw_labels(&mut self) {
        let size = self.font_size;
        let fg = self.fg;
        if !self.o.hide_y_axis {
            let sides: Vec<(Option<bool>, YAxis)> = if self.second {
                vec![
                    (Some(false), self.yl.clone()),
                    (Some(true), self.yr.clone()),
                ]
            } else {
                vec![(None, self.y.clone())]
            };
            for (side, ax) in sides {
                for (v, label) in ax.values.iter().zip(&ax.labels) {
                    let Some(y) = self.y_coord(*v, side) else {
                        continue;
                    };
                    let y = y.max(0.0);
                    if side == Some(true) {
                        let x = self.area.xmax + ax.label_width * 0.02 + 3.0;
                        self.text(label, x, y, size, fg, Align::Left, VAlign::Middle, 0.0);
                    } else {
                        let x = self.area.xmin - ax.label_width * 0.02;
                        self.text(label, x, y, size, fg, Align::Right, VAlign::Middle, 0.0);
                    }
                }
            }
        }
        if !self.o.hide_x_axis {
            let conf = self.x_conf();
            let fmt = self.o.x_format.clone().unwrap_or(conf.format.to_string());
            let scale = self.x_scale();
            let y = self.area.ymax + font::extents(size).ascent;
            for t in self.times(conf.label) {
                let Some(dt) = self.o.tz.timestamp_opt(t, 0).single() else {
                    continue;
                };
                let label = dt.format(&fmt).to_string();
                let x = self.area.xmin + (t - self.start) as f64 * scale;
                self.text(&label, x, y, size, fg, Align::Center, VAlign::Top, 0.0);
            }
        }
    }

    fn draw_grid(&mut self) {
        let major = parse_color(&self.o.major_grid).unwrap_or(Color::rgb(200, 150, 200));
        let minor = parse_color(&self.o.minor_grid).unwrap_or(Color::rgb(175, 175, 175));
        let (left, right) = (self.area.xmin, self.area.xmax);
        let (side, ax) = if self.second {
            (Some(false), self.yl.clone())
        } else {
            (None, self.y.clone())
        };
        let top_factor = self.o.log_base.map(|b| b * b).unwrap_or(1.0);
        let y_top = ax.tics.as_ref().map(|t| t.top).unwrap_or(0.0);
        for (i, v) in ax.values.iter().enumerate() {
            if let Some(y) = self.y_coord(*v, side).filter(|y| *y >= 0.0) {
                self.c
                    .stroke(&[P::M(left, y), P::L(right, y)], major, 0.4, None);
            }
            if self.o.minor_y >= 1 && i + 1 < ax.values.len() {
                let (lo, hi) = (v.min(ax.values[i + 1]), v.max(ax.values[i + 1]));
                let d = (hi - lo) / (1 + self.o.minor_y) as f64;
                for m in 0..self.o.minor_y {
                    let mv = lo + (1 + m) as f64 * d;
                    if mv >= top_factor * y_top {
                        continue;
                    }
                    if let Some(y) = self.y_coord(mv, side).filter(|y| *y >= 0.0) {
                        self.c
                            .stroke(&[P::M(left, y), P::L(right, y)], minor, 0.3, None);
                    }
                }
            }
        }
        let (top, bottom) = (self.area.ymin, self.area.ymax);
        let conf = self.x_conf();
        let scale = self.x_scale();
        for (unit, color, width) in [(conf.minor, minor, 0.25), (conf.major, major, 0.33)] {
            for t in self.times(unit) {
                let x = self.area.xmin + (t - self.start) as f64 * scale;
                if x < self.area.xmax {
                    self.c
                        .stroke(&[P::M(x, bottom), P::L(x, top)], color, width, None);
                }
            }
        }
        self.c.stroke(
            &[
                P::M(self.area.xmax, bottom),
                P::L(self.area.xmax, top),
                P::M(self.area.xmin, bottom),
                P::L(self.area.xmin, top),
            ],
            major,
            0.5,
            None,
        );
    }

    fn draw_lines(&mut self) -> R<()> {
        let o = self.o;
        // Stacked series are drawn first, so lines show on top of the areas.
        if self.lines.iter().any(|l| l.l.stacked) {
            let (mut s, n): (Vec<Ln>, Vec<Ln>) = std::mem::take(&mut self.lines)
                .into_iter()
                .partition(|l| l.l.stacked);
            s.extend(n);
            self.lines = s;
        }
        match o.area_mode {
            AreaMode::Stacked if !self.second => {
                let mut total: Vec<f64> = Vec::new();
                for l in self.lines.iter_mut().filter(|l| !l.l.infinite) {
                    l.l.stacked = true;
                    for (i, v) in l.l.values.iter_mut().enumerate() {
                        if total.len() <= i {
                            total.push(0.0);
                        }
                        if let Some(x) = v {
                            let orig = *x;
                            *x += total[i];
                            total[i] += orig;
                        }
                    }
                }
            }
            AreaMode::First => {
                if let Some(l) = self.lines.first_mut() {
                    l.l.stacked = true;
                }
            }
            AreaMode::All => {
                for l in self.lines.iter_mut().filter(|l| !l.l.infinite) {
                    l.l.stacked = true;
                }
            }
            _ => {}
        }
        // areaAlpha: translucent areas, each with an opaque line along its top.
        if let Some(a) = o.area_alpha {
            let mut strokes = Vec::new();
            for l in self.lines.iter_mut().filter(|l| l.l.stacked) {
                l.l.alpha = Some(a);
                let mut copy = l.l.clone();
                copy.stacked = false;
                copy.alpha = None;
                copy.invisible = false;
                strokes.push(Ln {
                    l: copy,
                    color: l.color,
                    color_alpha: l.color_alpha,
                    vpp: l.vpp,
                    x_step: l.x_step,
                });
            }
            self.lines.extend(strokes);
        }
        let a = self.area;
        self.c
            .clip_rect(a.xmin, a.ymin, a.xmax - a.xmin, a.ymax - a.ymin);
        let mut clip_restored = false;
        let lines = std::mem::take(&mut self.lines);
        for l in &lines {
            if !l.l.stacked && !clip_restored {
                clip_restored = true;
                self.c
                    .clip_rect(a.xmin, a.ymin, a.xmax - a.xmin, a.ymax - a.ymin);
            }
            self.draw_series(l);
        }
        self.lines = lines;
        self.c.reset_clip();
        Ok(())
    }

    fn draw_series(&mut self, l: &Ln) {
        let side = self.side(l);
        let width = l.l.line_width.unwrap_or(self.line_width);
        let dash = l.l.dashed;
        let color = if l.l.invisible {
            l.color.with_alpha(0.0)
        } else {
            l.color
                .with_alpha(l.color_alpha.or(l.l.alpha).unwrap_or(1.0))
        };
        self.c.series(Some(&l.l.name));
        let missing = (l.l.start - self.start) as f64 / l.l.step as f64;
        let start_shift = l.x_step * (missing / l.vpp as f64);
        let mut x = self.area.xmin + start_shift + self.line_width / 2.0;
        let mut y = self.area.ymin;
        let mut start_x = x;
        let zero = self.y_coord(0.0, side);
        let mut path = PathB::default();
        let mut nones = 0usize;
        let stacked = l.l.stacked;
        let mut marks: Vec<(f64, f64)> = Vec::new();
        let values = l.drawn();
        for (index, v) in values.iter().enumerate() {
            let mut v = v.filter(|x| !x.is_nan());
            if v.is_none() && self.o.draw_null_as_zero {
                v = Some(0.0);
            }
            let coord = v.and_then(|v| self.y_coord(v, side).map(|y| (v, y)));
            let Some((value, yc)) = coord else {
                if nones == 0 {
                    path.line_to(x, y);
                    if stacked {
                        self.fill_and_clip(&mut path, x, start_x, zero, color);
                    }
                }
                x += l.x_step;
                nones += 1;
                continue;
            };
            y = yc.max(0.0);
            if l.l.infinite && value > 0.0 {
                path.move_to(x, self.area.ymax);
                path.line_to(x, self.area.ymin);
                self.c.stroke(&path.segs, color, width, dash);
                path.clear();
                x += l.x_step;
                continue;
            }
            if nones > 0 {
                start_x = x;
            }
            match self.line_mode {
                LineMode::Staircase => {
                    if nones > 0 {
                        path.move_to(x, y);
                    } else {
                        path.line_to(x, y);
                    }
                    x += l.x_step;
                    path.line_to(x, y);
                }
                LineMode::Slope => {
                    if nones > 0 {
                        path.move_to(x, y);
                    }
                    path.line_to(x, y);
                    x += l.x_step;
                }
                LineMode::Connected => {
                    let limit = self.o.connected_limit.unwrap_or(usize::MAX);
                    if nones > limit || nones == index {
                        path.move_to(x, y);
                    }
                    path.line_to(x, y);
                    x += l.x_step;
                }
            }
            if self.o.markers {
                marks.push((x - l.x_step, y));
            }
            nones = 0;
        }
        if stacked {
            let xpos = if self.line_mode == LineMode::Staircase {
                x
            } else {
                x - l.x_step
            };
            self.fill_and_clip(&mut path, xpos, start_x, zero, color);
        } else {
            self.c.stroke(&path.segs, color, width, dash);
        }
        if !marks.is_empty() && !l.l.invisible {
            let mut m = Vec::with_capacity(marks.len() * 4);
            for (mx, my) in marks {
                m.extend([
                    P::M(mx - 3.0, my),
                    P::L(mx + 3.0, my),
                    P::M(mx, my - 3.0),
                    P::L(mx, my + 3.0),
                ]);
            }
            self.c.stroke(&m, color, 1.0, None);
        }
        self.c.series(None);
    }

    /// Fills from the path down (or up) to the zero line, then keeps what follows out of the
    /// filled area (graphite-web's `fillAreaAndClip`).
    fn fill_and_clip(
        &mut self,
        path: &mut PathB,
        x: f64,
        start_x: f64,
        zero: Option<f64>,
        color: Color,
    ) {
        let start_x = if start_x == 0.0 {
            self.area.xmin
        } else {
            start_x
        };
        let base = zero.filter(|z| *z != 0.0).unwrap_or(self.area.ymax);
        path.line_to(x, base);
        path.line_to(start_x, base);
        let poly = std::mem::take(&mut path.segs);
        if poly.len() >= 3 {
            if color.a > 0.0 {
                self.c.fill(&poly, color);
            }
            self.c.clip_out(&poly);
        }
        path.clear();
    }
}

/// A path with cairo's notion of a current point: a `line_to` without one starts the path.
#[derive(Default)]
struct PathB {
    segs: Vec<P>,
    current: bool,
}

impl PathB {
    fn move_to(&mut self, x: f64, y: f64) {
        self.segs.push(P::M(x, y));
        self.current = true;
    }

    fn line_to(&mut self, x: f64, y: f64) {
        if self.current {
            self.segs.push(P::L(x, y));
        } else {
            self.move_to(x, y);
        }
    }

    fn clear(&mut self) {
        self.segs.clear();
        self.current = false;
    }
}

#[cfg(test)]
mod tests {
    use super::super::{draw, Format, Line, Options};

    fn svg(lines: Vec<Line>, o: &mut Options) -> String {
        o.format = Format::Svg;
        String::from_utf8(draw(lines, o).unwrap()).unwrap()
    }

    #[test]
    fn svg_has_the_series_legend_and_labels() {
        let l = Line::new(
            "a.b",
            1_700_000_000,
            60,
            (0..60).map(|i| Some(i as f64)).collect(),
        );
        let out = svg(vec![l], &mut Options::default());
        assert!(out.contains("data-series=\"a.b\""), "{out}");
        assert!(out.contains(">a.b</text>"), "{out}");
        assert!(out.contains("<g class=\"legend\">"));
        // The y axis reaches 60 (labels 0 to 60).
        assert!(out.contains(">60.0 </text>"), "{out}");
    }

    #[test]
    fn no_data_and_bad_colours() {
        let out = svg(vec![], &mut Options::default());
        assert!(out.contains(">No Data</text>"));
        let mut l = Line::new("a", 0, 60, vec![Some(1.0), Some(2.0)]);
        l.color = Some("nosuch".into());
        let e = draw(vec![l], &Options::default()).unwrap_err();
        assert_eq!(e.to_string(), "invalid color \"nosuch\"");
    }

    #[test]
    fn stacked_areas_fill_and_every_mode_draws() {
        for mode in [
            super::AreaMode::None,
            super::AreaMode::First,
            super::AreaMode::All,
            super::AreaMode::Stacked,
        ] {
            for lm in [
                super::LineMode::Slope,
                super::LineMode::Staircase,
                super::LineMode::Connected,
            ] {
                let a = Line::new("a", 0, 60, vec![Some(1.0), None, Some(3.0), Some(2.0)]);
                let b = Line::new("b", 0, 60, vec![Some(2.0), Some(2.0), None, Some(1.0)]);
                let mut o = Options {
                    area_mode: mode,
                    line_mode: lm,
                    ..Options::default()
                };
                let out = svg(vec![a, b], &mut o);
                let fills = out.matches("Z\" fill=").count();
                if mode == super::AreaMode::None {
                    assert_eq!(fills, 0, "{mode:?} {lm:?}");
                } else {
                    assert!(fills > 0, "{mode:?} {lm:?}: {out}");
                }
                assert_eq!(out.matches("<g").count(), out.matches("</g>").count());
            }
        }
    }
}
