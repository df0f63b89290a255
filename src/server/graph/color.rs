//! Colours as graphite-web names them (`glyph.py`'s aliases, `#rrggbb`, `rrggbb`, `rrggbbaa`,
//! `%23rrggbb`) and its graph templates (the sections of `graphTemplates.conf.example`).

use super::canvas::Color;

const ALIASES: &[(&str, (u8, u8, u8))] = &[
    ("black", (0, 0, 0)),
    ("white", (255, 255, 255)),
    ("blue", (100, 100, 255)),
    ("green", (0, 200, 0)),
    ("red", (200, 0, 50)),
    ("yellow", (255, 255, 0)),
    ("orange", (255, 165, 0)),
    ("purple", (200, 100, 255)),
    ("brown", (150, 100, 50)),
    ("cyan", (0, 255, 255)),
    ("aqua", (0, 150, 150)),
    ("gray", (175, 175, 175)),
    ("grey", (175, 175, 175)),
    ("magenta", (255, 0, 255)),
    ("pink", (255, 100, 100)),
    ("gold", (200, 200, 0)),
    ("rose", (200, 150, 200)),
    ("darkblue", (0, 0, 255)),
    ("darkgreen", (0, 255, 0)),
    ("darkred", (255, 0, 0)),
    ("darkgray", (111, 111, 111)),
    ("darkgrey", (111, 111, 111)),
];

/// A colour by alias or hex; eight hex digits carry an alpha (as graphite-web's `setColor`).
pub fn parse(s: &str) -> Option<Color> {
    let s = s.trim();
    if let Some((_, (r, g, b))) = ALIASES.iter().find(|(n, _)| *n == s) {
        return Some(Color::rgb(*r, *g, *b));
    }
    let h = s.strip_prefix('#').unwrap_or(s);
    let h = h.strip_prefix("%23").unwrap_or(h);
    if !(h.len() == 6 || h.len() == 8) || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let byte = |i: usize| u8::from_str_radix(&h[i..i + 2], 16).ok();
    let mut c = Color::rgb(byte(0)?, byte(2)?, byte(4)?);
    if h.len() == 8 {
        c.a = byte(6)? as f64 / 255.0;
    }
    Some(c)
}

/// A graph template: default colours and font size.
#[derive(Debug, Clone)]
pub struct Template {
    pub background: &'static str,
    pub foreground: &'static str,
    pub major_line: &'static str,
    pub minor_line: &'static str,
    pub line_colors: &'static str,
    pub font_size: f64,
}

const DEFAULT: Template = Template {
    background: "white",
    foreground: "black",
    major_line: "rose",
    minor_line: "grey",
    line_colors: "blue,green,red,purple,brown,yellow,aqua,grey,magenta,pink,gold,rose",
    font_size: 10.0,
};

/// The template named `name`; graphite-web falls back to the default for an unknown name.
pub fn template(name: &str) -> Template {
    let solarized_lines = "268bd2aa,859900aa,dc322faa,d33682aa,db4b16aa,b58900aa,2aa198aa,6c71c4aa";
    match name {
        "solarized-light" => Template {
            background: "#fdf6e3",
            foreground: "#657b83",
            major_line: "#073642",
            minor_line: "#586e75",
            line_colors: solarized_lines,
            ..DEFAULT
        },
        "solarized-dark" => Template {
            background: "#002b36",
            foreground: "#839496",
            major_line: "#fdf6e3",
            minor_line: "#eee8d5",
            line_colors: solarized_lines,
            ..DEFAULT
        },
        "classic" => Template {
            background: "black",
            foreground: "white",
            major_line: "white",
            ..DEFAULT
        },
        "noc" => Template {
            background: "black",
            foreground: "white",
            major_line: "white",
            line_colors: "blue,green,red,yellow,purple,brown,aqua,grey,magenta,pink,gold,rose",
            ..DEFAULT
        },
        "alphas" => Template {
            major_line: "grey",
            minor_line: "rose",
            line_colors: "00ff00aa,ff000077,00337799",
            ..DEFAULT
        },
        "grafana" => Template {
            line_colors: "#7eb26d,#eab839,#6ed0e0,#ef843c,#e24d42,#1f78c1,#ba43a9,#705da0,#508642,#cca300,#447ebc",
            ..DEFAULT
        },
        _ => DEFAULT,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_hex() {
        assert_eq!(parse("blue"), Some(Color::rgb(100, 100, 255)));
        assert_eq!(parse("#ff0000"), Some(Color::rgb(255, 0, 0)));
        assert_eq!(parse("%2300ff00"), Some(Color::rgb(0, 255, 0)));
        assert_eq!(parse("0000ff80").unwrap().a, 128.0 / 255.0);
        assert_eq!(parse("nosuch"), None);
        assert_eq!(parse("12345"), None);
        assert_eq!(template("noc").background, "black");
        assert_eq!(template("nosuch").background, "white");
    }
}
