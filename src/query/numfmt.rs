//! Number formatting as OpenTSDB's JSON shows it: integers plain, doubles as Java's
//! `Double.toString` (`2.5`, `45150.0`, `1.5E7`, `1.0E-4`), NaN as the string "NaN".

pub fn java_double(d: f64) -> String {
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
}
