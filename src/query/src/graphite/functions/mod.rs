//! The render function library, one module per family (graphite-web's groups). `call` finds a
//! function by name; `NAMES` is what `/functions` describes (see `meta`).

pub mod alias;
pub mod calculate;
pub mod combine;
pub mod filter;
pub mod graph;
pub mod more_calculate;
pub mod more_combine;
pub mod more_filter;
pub mod more_spec;
pub mod more_special;
pub mod more_template;
pub mod more_transform;
pub mod sort;
pub mod special;
pub mod transform;

use super::eval::{err, Args, Ctx, R};
use super::parser::Call;
use super::series::Series;

/// A family's dispatcher: `None` when the name is not one of its functions.
type Family = fn(&Ctx, &str, &Args) -> Option<R<Vec<Series>>>;

const FAMILIES: &[Family] = &[
    combine::call,
    transform::call,
    calculate::call,
    filter::call,
    sort::call,
    alias::call,
    special::call,
    graph::call,
    more_combine::call,
    more_transform::call,
    more_calculate::call,
    more_filter::call,
    more_template::call,
    more_special::call,
];

pub fn call(ctx: &Ctx, c: &Call) -> R<Vec<Series>> {
    let args = Args { call: c };
    for f in FAMILIES {
        if let Some(r) = f(ctx, &c.name, &args) {
            return r;
        }
    }
    err(format!("Received request for unknown function: {}", c.name))
}

/// The per-series step of a call whose output series are each made from one series of its
/// argument (see [`Ctx::stream`]); `None` for other functions.
pub fn per_series(c: &Call) -> Option<R<super::eval::PerSeries>> {
    transform::per_series(&c.name, &Args { call: c })
}

/// Applies `f` to every value, renaming each series with `name(series_name)`.
pub fn map_values(
    list: Vec<Series>,
    name: impl Fn(&Series) -> String,
    f: impl Fn(Option<f64>) -> Option<f64>,
) -> Vec<Series> {
    list.into_iter()
        .map(|mut s| {
            let n = name(&s);
            s.values = s.values.iter().map(|v| f(*v)).collect();
            s.rename(n);
            s
        })
        .collect()
}

/// Python's slice bound `i` over `len` items: from the end when negative, clamped to the list.
pub fn py_slice_bound(i: i64, len: usize) -> usize {
    let n = len as i64;
    (if i < 0 { n + i } else { i }).clamp(0, n) as usize
}

/// `x.round()` (half away from zero, the sign of a zero kept) without the call into libm that
/// `f64::round` is on baseline x86-64: `perSecond` rounds every point of thousands of series.
pub fn round_half_away(x: f64) -> f64 {
    // From 2^52 on every f64 is an integer already (the infinities too); NaN stays NaN.
    const TWO_52: f64 = 4_503_599_627_370_496.0;
    let a = x.abs();
    if a.is_nan() || a >= TWO_52 {
        return x;
    }
    // Adding and taking away 2^52 rounds `a` to an integer, half to even (the FPU's rounding),
    // in two adds: no conversion to an integer and back, which cost more than the rest of
    // `perSecond`. `a - even` is exact; where it is 0.5, `a` was a half that went down to the
    // even neighbour, and away from zero is one more. The result has x's sign, as C's round
    // gives it (-0.3 rounds to -0.0).
    let even = (a + TWO_52) - TWO_52;
    let up = if a - even == 0.5 { 1.0 } else { 0.0 };
    (even + up).copysign(x)
}

/// A value that is a real number (graphite turns NaN/inf results of math into nulls).
pub fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

#[cfg(test)]
pub mod testutil {
    use super::super::eval::{Ctx, MemSource};
    use super::super::parser::parse;
    use super::super::series::Series;

    /// Series `name` with one point per 60 s from t=60: values in order (None = missing).
    pub fn mem(series: &[(&str, &[Option<f64>])]) -> MemSource {
        MemSource(
            series
                .iter()
                .map(|(n, vals)| {
                    (
                        n.to_string(),
                        vals.iter()
                            .enumerate()
                            .filter_map(|(i, v)| v.map(|v| (60 + i as i64 * 60, v)))
                            .collect(),
                    )
                })
                .collect(),
        )
    }

    /// Evaluates `target` over `(0, 60*n]` (so the grid starts at 60).
    pub fn eval(src: &MemSource, target: &str, n: i64) -> Vec<Series> {
        let ctx = Ctx {
            source: src,
            from: 0,
            until: 60 * n,
            now: 60 * n,
            xff: 0.0,
            tz: chrono_tz::UTC,
            xff_set: Default::default(),
        };
        ctx.eval(&parse(target).unwrap()).unwrap()
    }

    pub fn vals(s: &Series) -> Vec<Option<f64>> {
        s.values.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::round_half_away;

    proptest::proptest! {
        /// The same bits as `f64::round` for any f64 (any bit pattern: NaNs, infinities,
        /// subnormals, negative zero, huge integers).
        #[test]
        fn round_half_away_is_f64_round(bits: u64) {
            let x = f64::from_bits(bits);
            let (got, want) = (round_half_away(x), x.round());
            proptest::prop_assert!(got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()), "{x:e}: {got:e} != {want:e}");
        }

        /// Values near halves, where rounding turns.
        #[test]
        fn round_half_away_near_halves(n in -1_000_000i64..1_000_000, k in -3i64..=3) {
            for base in [n as f64 + 0.5, n as f64 * 1e6 + 0.5, n as f64 / 7.0] {
                let x = f64::from_bits((base.to_bits() as i64 + k) as u64);
                proptest::prop_assert_eq!(round_half_away(x).to_bits(), x.round().to_bits(), "{:e}", x);
            }
        }
    }

    #[test]
    fn round_half_away_edges() {
        for x in [
            0.0,
            -0.0,
            0.5,
            -0.5,
            0.49999999999999994,
            -0.49999999999999994,
            1.5,
            2.5,
            -2.5,
            4503599627370495.5,
            -4503599627370495.5,
            9007199254740993.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -0.3,
            1e-300,
        ] {
            assert_eq!(round_half_away(x).to_bits(), x.round().to_bits(), "{x:e}");
        }
        assert!(round_half_away(f64::NAN).is_nan());
    }
}
