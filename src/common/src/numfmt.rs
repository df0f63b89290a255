//! Number formatting as the peers print doubles: OpenTSDB's JSON (Java's `Double.toString`:
//! `2.5`, `45150.0`, `1.5E7`, `1.0E-4`), Prometheus' (Go's `strconv`) and graphite-web's
//! (Python's `repr`).
//!
//! All three print the shortest digits that read back as the value and, where two strings of
//! that length read back, the nearer; at an exact tie, the one with an even last digit
//! (8 + 2^-16 is `8.000015258789062`). So does Ryū. Rust's `{}` and `{:e}` round such a tie
//! up (`8.000015258789063`), so nothing here prints a double through them.

/// The shortest digits that read back as `v`, in plain decimal with `.0` on integral values
/// (`62.04`, `45150.0`), for magnitudes in [1e-4, 1e15), where Java's `Double.toString` and
/// (less the `.0`) Go's `'f'` print this form; `None` elsewhere (zero, tiny, huge, not finite),
/// for the callers' own rules. Ryū writes it without the formatting machinery: a
/// `/api/v1/query_range` of 360 points spent about 7 % of its CPU formatting values.
pub fn plain_shortest(v: f64, buf: &mut ryu::Buffer) -> Option<&str> {
    let a = v.abs();
    if !(1e-4..1e15).contains(&a) {
        return None;
    }
    Some(buf.format_finite(v))
}

/// The shortest digits of a finite, non-zero double (Ryū's), laid out the ways the peers lay
/// them out.
pub struct Shortest {
    negative: bool,
    /// Without leading or trailing zeros.
    digits: String,
    /// The decimal exponent of the first digit: 120.5 is ("1205", 2).
    exp: i32,
}

impl Shortest {
    pub fn of(v: f64) -> Shortest {
        debug_assert!(v.is_finite() && v != 0.0);
        let mut buf = ryu::Buffer::new();
        let s = buf.format_finite(v.abs());
        let (mant, exp) = match s.split_once('e') {
            Some((m, e)) => (m, e.parse::<i32>().expect("Ryū's exponent")),
            None => (s, 0),
        };
        let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
        let all = format!("{int}{frac}");
        let lead = all.bytes().take_while(|&b| b == b'0').count();
        Shortest {
            negative: v < 0.0,
            digits: all[lead..].trim_end_matches('0').to_string(),
            exp: int.len() as i32 + exp - lead as i32 - 1,
        }
    }

    /// The decimal exponent of the first digit.
    pub fn exp(&self) -> i32 {
        self.exp
    }

    /// Plain decimal, as Go's `'f'` with precision -1 and Rust's `{}` lay it out (`0.00012`,
    /// `120`, `-1.5`).
    pub fn push_plain(&self, out: &mut String) {
        let (d, e) = (&self.digits, self.exp);
        if self.negative {
            out.push('-');
        }
        if e < 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-e - 1) as usize));
            out.push_str(d);
        } else if d.len() as i32 <= e + 1 {
            out.push_str(d);
            out.extend(std::iter::repeat_n('0', (e + 1) as usize - d.len()));
        } else {
            let (int, frac) = d.split_at(e as usize + 1);
            out.push_str(int);
            out.push('.');
            out.push_str(frac);
        }
    }

    pub fn plain(&self) -> String {
        let mut out = String::new();
        self.push_plain(&mut out);
        out
    }

    /// The mantissa as Rust's `{:e}` writes it (`-1.5`, `2`).
    pub fn mantissa(&self) -> String {
        let sign = if self.negative { "-" } else { "" };
        match self.digits.split_at(1) {
            (first, "") => format!("{sign}{first}"),
            (first, rest) => format!("{sign}{first}.{rest}"),
        }
    }

    /// Go's `%e` and Python's `repr` exponent form: a signed exponent of at least two digits
    /// (`1e-07`, `1.5e+21`).
    pub fn exp_form(&self) -> String {
        let sign = if self.exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", self.mantissa(), self.exp.abs())
    }
}

/// `v` in plain decimal with the shortest digits (see [`Shortest::push_plain`]), `0` and `-0`
/// included; ties to even. `v` is finite.
pub fn push_plain(out: &mut String, v: f64) {
    if v == 0.0 {
        out.push_str(if v.is_sign_negative() { "-0" } else { "0" });
    } else {
        Shortest::of(v).push_plain(out);
    }
}

/// [`push_plain`] as a string.
pub fn plain(v: f64) -> String {
    let mut out = String::new();
    push_plain(&mut out, v);
    out
}

pub fn java_double(d: f64) -> String {
    let mut out = String::new();
    push_java_double(&mut out, d);
    out
}

/// [`java_double`] appended to `out`.
pub fn push_java_double(out: &mut String, d: f64) {
    if (1e-3..1e7).contains(&d.abs()) {
        let mut buf = ryu::Buffer::new();
        if let Some(s) = plain_shortest(d, &mut buf) {
            out.push_str(s);
            return;
        }
    }
    out.push_str(&java_double_slow(d));
}

fn java_double_slow(d: f64) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    if d == 0.0 {
        return if d.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    let a = d.abs();
    if (1e-3..1e7).contains(&a) {
        let s = plain(d);
        return if s.contains('.') { s } else { format!("{s}.0") };
    }
    // Scientific: shortest digits, mantissa with at least one decimal.
    let short = Shortest::of(d);
    let (mant, exp) = (short.mantissa(), short.exp());
    let mant = if mant.contains('.') {
        mant.to_string()
    } else {
        format!("{mant}.0")
    };
    format!("{mant}E{exp}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_java() {
        assert_eq!(java_double(2.5), "2.5");
        assert_eq!(java_double(45150.0), "45150.0");
        assert_eq!(java_double(1.5e7), "1.5E7");
        assert_eq!(java_double(1.0e-4), "1.0E-4");
        assert_eq!(java_double(0.001), "0.001");
        assert_eq!(java_double(-12.3), "-12.3");
        assert_eq!(java_double(f64::NAN), "NaN");
        assert_eq!(java_double(0.0), "0.0");
        assert_eq!(java_double(1.2345678e10), "1.2345678E10");
    }

    /// Vectors printed by Java 17's `Double.toString`, Python 3.11's `repr` and Go's
    /// `strconv.FormatFloat(v, 'f', -1, 64)` (Prometheus 2.42's answer for the same sample):
    /// exact ties between two shortest strings go to the even digit in all three.
    #[test]
    fn ties_round_to_even_as_the_peers_do() {
        for (v, plain_want, java_want) in [
            (
                8.0 + 2f64.powi(-16),
                "8.000015258789062",
                "8.000015258789062",
            ),
            (
                2f64.powi(46) + 0.125,
                "70368744177664.12",
                "7.036874417766412E13",
            ),
            (
                2f64.powi(49) + 0.25,
                "562949953421312.2",
                "5.629499534213122E14",
            ),
            (
                120_170_744_384.0 + 49.0 / 64.0,
                "120170744384.76562",
                "1.2017074438476562E11",
            ),
        ] {
            assert_eq!(plain(v), plain_want);
            assert_eq!(java_double(v), java_want);
            // Rust's own formatter rounds these up: the reason nothing here uses it.
            assert_ne!(format!("{v}"), plain_want);
        }
        assert_eq!(
            plain_shortest(62.04, &mut ryu::Buffer::new()),
            Some("62.04")
        );
        assert_eq!(plain(-0.0), "-0");
        assert_eq!(plain(1e21), "1000000000000000000000");
        assert_eq!(plain(1.5e-7), "0.00000015");
        assert_eq!(Shortest::of(-1.5e-7).exp_form(), "-1.5e-07");
        assert_eq!(Shortest::of(1e23).exp_form(), "1e+23");
    }

    /// The slow twin of `Shortest::of`'s digits, from `v`'s exact decimal expansion (Rust's
    /// fixed-precision formatting is exact): for each length, the candidates just below and
    /// above `v`; those that read back; the nearer, ties to an even last digit.
    fn digits_slow(v: f64) -> (String, i32) {
        let a = v.abs();
        let exact = format!("{a:.800e}");
        let (m, e) = exact.split_once('e').unwrap();
        let e: i32 = e.parse().unwrap();
        let all: Vec<u8> = m.bytes().filter(u8::is_ascii_digit).collect();
        let trim = |d: &[u8], e: i32| {
            let s = String::from_utf8(d.to_vec()).unwrap();
            (s.trim_end_matches('0').to_string(), e)
        };
        for n in 1..=17usize {
            let floor = all[..n].to_vec();
            let rest = &all[n..];
            if rest.iter().all(|&d| d == b'0') {
                return trim(&floor, e);
            }
            let mut ceil = floor.clone();
            let mut ce = e;
            let mut i = n;
            loop {
                if i == 0 {
                    ceil.insert(0, b'1');
                    ceil.pop();
                    ce += 1;
                    break;
                }
                i -= 1;
                if ceil[i] == b'9' {
                    ceil[i] = b'0';
                } else {
                    ceil[i] += 1;
                    break;
                }
            }
            let reads_back = |d: &[u8], e: i32| {
                let t = format!(
                    "{}e{}",
                    String::from_utf8(d.to_vec()).unwrap(),
                    e - (n as i32 - 1)
                );
                t.parse::<f64>().unwrap() == a
            };
            let (f_ok, c_ok) = (reads_back(&floor, e), reads_back(&ceil, ce));
            let half = rest[0].cmp(&b'5').then_with(|| {
                if rest[1..].iter().any(|&d| d != b'0') {
                    std::cmp::Ordering::Greater
                } else {
                    std::cmp::Ordering::Equal
                }
            });
            let pick_ceil = match (f_ok, c_ok) {
                (false, false) => continue,
                (true, false) => false,
                (false, true) => true,
                (true, true) => match half {
                    std::cmp::Ordering::Less => false,
                    std::cmp::Ordering::Greater => true,
                    std::cmp::Ordering::Equal => (floor[n - 1] - b'0') % 2 == 1,
                },
            };
            return if pick_ceil {
                trim(&ceil, ce)
            } else {
                trim(&floor, e)
            };
        }
        unreachable!("17 digits always read back")
    }

    proptest::proptest! {
        #[test]
        fn shortest_digits_equal_the_slow_twin(bits in proptest::prelude::any::<u64>(), m in -1_000_000_000i64..1_000_000_000, e in -6i32..17,
                                               odd in 1u64..(1 << 40), shift in -60i32..20, p in -1074i32..1024) {
            // Any double; decimal-looking ones (as measurements are) across the range's edges;
            // binary fractions with few bits (fixed-point sensor data), which land exactly
            // between two shortest decimals; powers of two, where the interval that reads back
            // is lopsided.
            let binary = (odd | 1) as f64 * 2f64.powi(shift);
            for v in [f64::from_bits(bits), m as f64 * 10f64.powi(e - 9), m as f64, (m as f64) / 100.0, binary, 8.0 + binary.fract(), 2f64.powi(p)] {
                if !v.is_finite() || v == 0.0 {
                    continue;
                }
                let short = Shortest::of(v);
                proptest::prop_assert_eq!((short.digits, short.exp), digits_slow(v), "{:e}", v);
                proptest::prop_assert_eq!(plain(v).parse::<f64>().unwrap(), v);
                let mut buf = ryu::Buffer::new();
                if let Some(s) = plain_shortest(v, &mut buf) {
                    proptest::prop_assert_eq!(s.trim_end_matches(".0"), plain(v));
                }
                let java = java_double(v);
                proptest::prop_assert_eq!(java, java_double_slow(v));
            }
        }
    }
}
