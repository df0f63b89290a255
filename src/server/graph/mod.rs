//! Graph images: graphite-web's `/render?format=png|svg` and OpenTSDB's `/q?png`. One layout
//! (`line`, after graphite-web 1.1's `glyph.py` LineGraph: title, vertical titles, legend, y
//! axis with SI labels, time axis, grid, lines and stacked areas) drawn on a raster (tiny-skia →
//! PNG) or into SVG (`canvas`), with the DejaVu Sans font compiled in (`font`). The data comes
//! in as plain [`Line`]s, so this module knows neither graphite's nor OpenTSDB's series.
//!
//! `sample.png` beside this file is what
//! `/render?target=…&width=800&height=400&title=…&vtitle=…` draws (see protocols/graphite).

pub mod axis;
pub mod canvas;
pub mod color;
pub mod font;
mod line;
pub mod pie;

pub use axis::{Bounds, Units};

/// How many series get a legend by default (graphite-web's `LEGEND_MAX_ITEMS`).
pub const LEGEND_MAX_ITEMS: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Png,
    Svg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineMode {
    Slope,
    Staircase,
    Connected,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AreaMode {
    None,
    First,
    All,
    Stacked,
}

/// How values that share a pixel are combined (a series' `consolidateBy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Consolidate {
    Average,
    Sum,
    Min,
    Max,
    First,
    Last,
}

impl Consolidate {
    pub fn parse(s: &str) -> Consolidate {
        match s {
            "sum" => Consolidate::Sum,
            "min" => Consolidate::Min,
            "max" => Consolidate::Max,
            "first" => Consolidate::First,
            "last" => Consolidate::Last,
            _ => Consolidate::Average,
        }
    }

    fn apply(self, vals: &[Option<f64>]) -> Option<f64> {
        let mut it = vals.iter().flatten().copied();
        let first = it.next()?;
        Some(match self {
            Consolidate::First => first,
            Consolidate::Last => it.last().unwrap_or(first),
            Consolidate::Sum => first + it.sum::<f64>(),
            Consolidate::Min => it.fold(first, f64::min),
            Consolidate::Max => it.fold(first, f64::max),
            Consolidate::Average => {
                let (s, n) = it.fold((first, 1usize), |(s, n), v| (s + v, n + 1));
                s / n as f64
            }
        })
    }
}

/// One series to draw: values on a regular grid from `start` every `step` seconds, and how
/// to draw it (graphite-web's `series.color` and `series.options`).
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub name: String,
    pub start: i64,
    /// Exclusive.
    pub end: i64,
    pub step: i64,
    pub values: Vec<Option<f64>>,
    pub consolidate: Consolidate,
    /// A colour name or hex; `None` takes the next of the colour list.
    pub color: Option<String>,
    pub alpha: Option<f64>,
    pub dashed: Option<f64>,
    pub line_width: Option<f64>,
    pub second_y: bool,
    pub stacked: bool,
    /// Drawn as a vertical line across the graph where the value is above zero.
    pub infinite: bool,
    /// Filled with nothing (the lower series of `areaBetween`).
    pub invisible: bool,
}

impl Line {
    pub fn new(name: impl Into<String>, start: i64, step: i64, values: Vec<Option<f64>>) -> Line {
        Line {
            name: name.into(),
            start,
            end: start + step * values.len() as i64,
            step: step.max(1),
            values,
            consolidate: Consolidate::Average,
            color: None,
            alpha: None,
            dashed: None,
            line_width: None,
            second_y: false,
            stacked: false,
            infinite: false,
            invisible: false,
        }
    }
}

/// Where the legend goes: below the graph in columns (graphite-web), or in a box inside the
/// plot (gnuplot's `set key right top box`, OpenTSDB's `/q`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Legend {
    Below,
    Inside { right: bool, top: bool, boxed: bool },
}

/// Everything about the picture but the data (graphite-web's render parameters).
#[derive(Debug, Clone)]
pub struct Options {
    pub format: Format,
    pub width: u32,
    pub height: u32,
    pub margin: f64,
    pub title: String,
    pub vtitle: String,
    pub vtitle_right: String,
    pub background: String,
    pub foreground: String,
    pub colors: Vec<String>,
    pub major_grid: String,
    pub minor_grid: String,
    pub font_size: f64,
    pub line_mode: LineMode,
    pub line_width: f64,
    pub area_mode: AreaMode,
    pub area_alpha: Option<f64>,
    pub y: Bounds,
    pub y_left: Bounds,
    pub y_right: Bounds,
    pub log_base: Option<f64>,
    pub units: Units,
    /// `None`: hidden past [`LEGEND_MAX_ITEMS`] series.
    pub hide_legend: Option<bool>,
    pub hide_axes: bool,
    pub hide_grid: bool,
    pub hide_x_axis: bool,
    pub hide_y_axis: bool,
    pub graph_only: bool,
    pub unique_legend: bool,
    pub hide_null_from_legend: bool,
    pub draw_null_as_zero: bool,
    /// `connected` mode bridges at most this many missing values.
    pub connected_limit: Option<usize>,
    pub minor_y: u32,
    pub min_x_step: f64,
    pub x_format: Option<String>,
    pub tz: chrono_tz::Tz,
    pub legend: Legend,
    /// A mark at every point (gnuplot's `linespoints`).
    pub markers: bool,
}

impl Default for Options {
    fn default() -> Self {
        let t = color::template("default");
        Options {
            format: Format::Png,
            width: 330,
            height: 250,
            margin: 10.0,
            title: String::new(),
            vtitle: String::new(),
            vtitle_right: String::new(),
            background: t.background.into(),
            foreground: t.foreground.into(),
            colors: t
                .line_colors
                .split(',')
                .map(|c| c.trim().to_string())
                .collect(),
            major_grid: t.major_line.into(),
            minor_grid: t.minor_line.into(),
            font_size: t.font_size,
            line_mode: LineMode::Slope,
            line_width: 1.2,
            area_mode: AreaMode::None,
            area_alpha: None,
            y: Bounds::default(),
            y_left: Bounds::default(),
            y_right: Bounds::default(),
            log_base: None,
            units: Units::Si,
            hide_legend: None,
            hide_axes: false,
            hide_grid: false,
            hide_x_axis: false,
            hide_y_axis: false,
            graph_only: false,
            unique_legend: false,
            hide_null_from_legend: false,
            draw_null_as_zero: false,
            connected_limit: None,
            minor_y: 1,
            min_x_step: 1.0,
            x_format: None,
            tz: chrono_tz::UTC,
            legend: Legend::Below,
            markers: false,
        }
    }
}

impl Options {
    /// Applies a graph template's colours and font size (graphite-web's `template=`).
    pub fn template(&mut self, name: &str) {
        let t = color::template(name);
        self.background = t.background.into();
        self.foreground = t.foreground.into();
        self.colors = t
            .line_colors
            .split(',')
            .map(|c| c.trim().to_string())
            .collect();
        self.major_grid = t.major_line.into();
        self.minor_grid = t.minor_line.into();
        self.font_size = t.font_size;
    }
}

/// Why an image was not drawn: mostly the request's fault (a bad colour, an impossible
/// axis). The axis messages are graphite-web's.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GraphError {
    #[error("invalid color {0:?}")]
    Color(String),
    /// `what` is `data value`, `axis min`, `axis max` or `axis limit`.
    #[error("Encountered NaN {0}")]
    NaN(&'static str),
    #[error("Encountered infinite {0}")]
    Infinite(&'static str),
    /// A fixed minimum not below the fixed maximum (`max` or `limit`).
    #[error("The min must be less than the {0}")]
    MinNotBelow(&'static str),
    #[error(
        "Logarithmic scale specified with a dataset with a minimum value less than or equal \
         to zero"
    )]
    LogOfNonPositive,
    #[error("The step size must be positive")]
    Step,
    #[error("cannot make a {width}x{height} image")]
    Canvas { width: u32, height: u32 },
    #[error("the image would be {width}x{height}: width and height must be positive")]
    Empty { width: u32, height: u32 },
    #[error(
        "the image would have {pixels} pixels ({width}x{height}), more than {max} \
         (query.max_image_pixels)"
    )]
    TooManyPixels {
        pixels: u64,
        width: u32,
        height: u32,
        max: u64,
    },
    #[error("{0}")]
    Png(String),
}

/// Draws `lines` as `o` says: PNG or SVG bytes.
pub fn draw(lines: Vec<Line>, o: &Options) -> Result<Vec<u8>, GraphError> {
    line::draw(lines, o)
}

/// The values an image of `lines` at this width draws at most: each series is consolidated
/// to about one value a pixel (for sizing an answer before drawing it).
pub fn drawn_points(lines: &[Line], width: u32) -> usize {
    lines
        .iter()
        .map(|l| l.values.len().min(width as usize + 1))
        .sum()
}

/// Refuses an image larger than `query.max_image_pixels` (`max`, 0 = no limit) before any
/// memory is taken for it.
pub fn check_pixels(width: u32, height: u32, max: u64) -> Result<(), GraphError> {
    if width == 0 || height == 0 {
        return Err(GraphError::Empty { width, height });
    }
    let pixels = width as u64 * height as u64;
    if max > 0 && pixels > max {
        return Err(GraphError::TooManyPixels {
            pixels,
            width,
            height,
            max,
        });
    }
    Ok(())
}

/// The fewest bytes an SVG spends per value drawn (`L12 3`), for refusing an answer past
/// `query.max_answer_bytes` before it is built.
pub const SVG_POINT_BYTES_MIN: usize = 5;
