//! Number formatting as OpenTSDB's JSON shows it: integers plain, doubles as Java's
//! `Double.toString` (`2.5`, `45150.0`, `1.5E7`, `1.0E-4`), NaN as the string "NaN".

/// The shortest digits that read back as `v`, in plain decimal with `.0` on integral values
/// (`62.04`, `45150.0`), for magnitudes in [1e-4, 1e15), where Rust's `{:?}`, Java's
/// `Double.toString` and (less the `.0`) Go's `'f'` and Rust's `{}` all print this form; `None`
/// elsewhere (zero, tiny, huge, not finite), for the callers' own rules. Ryū writes it without
/// the formatting machinery: a `/api/v1/query_range` of 360 points spent about 7 % of its CPU
/// formatting values.
///
/// Also `None` past 15 significant digits: there two digit strings of the shortest length can
/// both read back as `v`, and Ryū breaks an exact tie toward an even last digit where the
/// standard formatters round up (8 + 2^-16 is `8.000015258789062` against `8.000015258789063`).
/// Up to 15 digits the shortest string is the only one (decimals that short are further apart
/// than doubles), so the two agree.
pub fn plain_shortest(v: f64, buf: &mut ryu::Buffer) -> Option<&str> {
    let a = v.abs();
    if !(1e-4..1e15).contains(&a) {
        return None;
    }
    let s = buf.format_finite(v);
    (significant_digits(s) <= 15).then_some(s)
}

/// The digits of a plain decimal from its first non-zero one, less an integral value's `.0`.
fn significant_digits(s: &str) -> usize {
    s.strip_suffix(".0")
        .unwrap_or(s)
        .bytes()
        .filter(u8::is_ascii_digit)
        .skip_while(|&d| d == b'0')
        .count()
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
        let s = format!("{d}");
        return if s.contains('.') { s } else { format!("{s}.0") };
    }
    // Scientific: shortest digits, mantissa with at least one decimal.
    let s = format!("{d:e}");
    let (mant, exp) = s.split_once('e').expect("{:e} has an exponent");
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

    #[test]
    fn ties_round_as_the_standard_formatters_do() {
        for (v, want) in [
            (8.0 + 2f64.powi(-16), "8.000015258789063"),
            (2f64.powi(46) + 0.125, "70368744177664.13"),
            (2f64.powi(49) + 0.25, "562949953421312.3"),
        ] {
            assert_eq!(format!("{v}"), want);
            assert_eq!(plain_shortest(v, &mut ryu::Buffer::new()), None, "{v}");
        }
        assert_eq!(java_double(8.0 + 2f64.powi(-16)), "8.000015258789063");
        assert_eq!(
            plain_shortest(62.04, &mut ryu::Buffer::new()),
            Some("62.04")
        );
    }

    /// What `plain_shortest` gives, as the standard formatters print it.
    fn plain_by_std(v: f64) -> String {
        format!("{v:?}")
    }

    proptest::proptest! {
        #[test]
        fn plain_shortest_is_the_standard_shortest(bits in proptest::prelude::any::<u64>(), m in -1_000_000_000i64..1_000_000_000, e in -6i32..17,
                                                   odd in 1u64..(1 << 40), shift in -60i32..20) {
            let mut buf = ryu::Buffer::new();
            // Any double; decimal-looking ones (as measurements are) across the range's edges;
            // and binary fractions with few bits (fixed-point sensor data), which land exactly
            // between two shortest decimals.
            let binary = (odd | 1) as f64 * 2f64.powi(shift);
            for v in [f64::from_bits(bits), m as f64 * 10f64.powi(e - 9), m as f64, (m as f64) / 100.0, binary, 8.0 + binary.fract()] {
                match plain_shortest(v, &mut buf) {
                    Some(s) => {
                        proptest::prop_assert_eq!(s, plain_by_std(v));
                        proptest::prop_assert_eq!(s.trim_end_matches(".0"), format!("{v}"));
                    }
                    // Out of range, or too many digits to be sure of a tie.
                    None => {
                        let std = plain_by_std(v);
                        proptest::prop_assert!(!(1e-4..1e15).contains(&v.abs()) || significant_digits(&std) > 15, "{} {}", v, std);
                    }
                }
                let java = java_double(v);
                proptest::prop_assert_eq!(java, java_double_slow(v));
            }
        }
    }
}
