//! Number formatting as OpenTSDB's JSON shows it: integers plain, doubles as Java's
//! `Double.toString` (`2.5`, `45150.0`, `1.5E7`, `1.0E-4`), NaN as the string "NaN".

/// The shortest digits that read back as `v`, in plain decimal with `.0` on integral values
/// (`62.04`, `45150.0`), for magnitudes in [1e-4, 1e15), where Rust's `{:?}`, Java's
/// `Double.toString` and (less the `.0`) Go's `'f'` and Rust's `{}` all print this form; `None`
/// elsewhere (zero, tiny, huge, not finite), for the callers' own rules. Ryū writes it without
/// the formatting machinery: a `/api/v1/query_range` of 360 points spent a tenth of its time
/// formatting values.
pub fn plain_shortest(v: f64, buf: &mut ryu::Buffer) -> Option<&str> {
    let a = v.abs();
    (1e-4..1e15).contains(&a).then(|| buf.format_finite(v))
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
        return if d > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    if d == 0.0 {
        return if d.is_sign_negative() { "-0.0".into() } else { "0.0".into() };
    }
    let a = d.abs();
    if (1e-3..1e7).contains(&a) {
        let s = format!("{d}");
        return if s.contains('.') { s } else { format!("{s}.0") };
    }
    // Scientific: shortest digits, mantissa with at least one decimal.
    let s = format!("{d:e}");
    let (mant, exp) = s.split_once('e').expect("{:e} has an exponent");
    let mant = if mant.contains('.') { mant.to_string() } else { format!("{mant}.0") };
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

    /// What `plain_shortest` gives, as the standard formatters print it.
    fn plain_by_std(v: f64) -> String {
        format!("{v:?}")
    }

    proptest::proptest! {
        #[test]
        fn plain_shortest_is_the_standard_shortest(bits in proptest::prelude::any::<u64>(), m in -1_000_000_000i64..1_000_000_000, e in -6i32..17) {
            let mut buf = ryu::Buffer::new();
            // Any double, and decimal-looking ones (as measurements are) across the range's edges.
            for v in [f64::from_bits(bits), m as f64 * 10f64.powi(e - 9), m as f64, (m as f64) / 100.0] {
                match plain_shortest(v, &mut buf) {
                    Some(s) => {
                        proptest::prop_assert_eq!(s, plain_by_std(v));
                        proptest::prop_assert_eq!(s.trim_end_matches(".0"), format!("{v}"));
                    }
                    None => proptest::prop_assert!(!(1e-4..1e15).contains(&v.abs())),
                }
                let java = java_double(v);
                proptest::prop_assert_eq!(java, java_double_slow(v));
            }
        }
    }
}
