//! Trino's statistical functions: the normal and beta distributions'
//! cumulative distribution functions and their inverses, and Wilson's score
//! interval of a binomial proportion.
//!
//! `erfc` and `lgamma` are `libm`'s; the regularized incomplete beta
//! function is the continued fraction of Numerical Recipes (Lentz's
//! method), the inverses are found by bisection to the last bit (a
//! cumulative distribution function is monotone), the normal one from
//! Acklam's rational approximation refined by Newton's method.

use datafusion::error::Result;

use super::{Arg, refused};

/// The arguments of `function` as numbers.
fn numbers<const N: usize>(function: &str, args: &[Arg]) -> Result<[f64; N]> {
    let mut out = [0.0; N];
    for (slot, arg) in out.iter_mut().zip(args) {
        *slot = arg
            .text
            .trim()
            .parse()
            .map_err(|_| refused(function, format!("not a number: {}", arg.text)))?;
    }
    Ok(out)
}

fn require(function: &str, ok: bool, why: &str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(refused(function, why))
    }
}

/// `normal_cdf(mean, sd, v)`: P(X <= v) for X normal with `mean` and `sd`.
pub(super) fn normal_cdf(args: &[Arg]) -> Result<Option<f64>> {
    let [mean, sd, v] = numbers("normal_cdf", args)?;
    require("normal_cdf", sd > 0.0, "standardDeviation must be > 0")?;
    Ok(Some(standard_normal_cdf((v - mean) / sd)))
}

/// `inverse_normal_cdf(mean, sd, p)`: the v with normal_cdf(mean, sd, v) = p.
pub(super) fn inverse_normal_cdf(args: &[Arg]) -> Result<Option<f64>> {
    let [mean, sd, p] = numbers("inverse_normal_cdf", args)?;
    require(
        "inverse_normal_cdf",
        p > 0.0 && p < 1.0,
        "p must be 0 > p > 1",
    )?;
    require("inverse_normal_cdf", sd > 0.0, "sd must be > 0")?;
    Ok(Some(mean + sd * standard_normal_quantile(p)))
}

/// `beta_cdf(a, b, v)`: P(X <= v) for X beta-distributed with shapes a, b.
pub(super) fn beta_cdf(args: &[Arg]) -> Result<Option<f64>> {
    let [a, b, v] = numbers("beta_cdf", args)?;
    require("beta_cdf", a > 0.0, "a must be > 0")?;
    require("beta_cdf", b > 0.0, "b must be > 0")?;
    require(
        "beta_cdf",
        (0.0..=1.0).contains(&v),
        "value must be in the interval [0, 1]",
    )?;
    Ok(Some(regularized_beta(v, a, b)))
}

/// `inverse_beta_cdf(a, b, p)`: the v in [0, 1] with beta_cdf(a, b, v) = p.
pub(super) fn inverse_beta_cdf(args: &[Arg]) -> Result<Option<f64>> {
    let [a, b, p] = numbers("inverse_beta_cdf", args)?;
    require("inverse_beta_cdf", a > 0.0, "a must be > 0")?;
    require("inverse_beta_cdf", b > 0.0, "b must be > 0")?;
    require(
        "inverse_beta_cdf",
        (0.0..=1.0).contains(&p),
        "p must be in the interval [0, 1]",
    )?;
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    for _ in 0..200 {
        let mid = lo + (hi - lo) / 2.0;
        if mid <= lo || mid >= hi {
            break;
        }
        if regularized_beta(mid, a, b) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(Some(if p == 0.0 { 0.0 } else { hi }))
}

/// Wilson's score interval of `successes` of `trials` at `z` standard
/// deviations: its lower bound.
pub(super) fn wilson_interval_lower(args: &[Arg]) -> Result<Option<f64>> {
    wilson("wilson_interval_lower", args, -1.0)
}

/// The same interval's upper bound.
pub(super) fn wilson_interval_upper(args: &[Arg]) -> Result<Option<f64>> {
    wilson("wilson_interval_upper", args, 1.0)
}

fn wilson(function: &str, args: &[Arg], side: f64) -> Result<Option<f64>> {
    let [successes, trials, z] = numbers(function, args)?;
    require(
        function,
        successes >= 0.0,
        "number of successes must not be negative",
    )?;
    require(function, trials > 0.0, "number of trials must be positive")?;
    require(
        function,
        successes <= trials,
        "number of successes must not be larger than number of trials",
    )?;
    require(function, z >= 0.0, "z-score must not be negative")?;
    let p = successes / trials;
    let z2 = z * z;
    let center = p + z2 / (2.0 * trials);
    let margin = z * (p * (1.0 - p) / trials + z2 / (4.0 * trials * trials)).sqrt();
    Ok(Some((center + side * margin) / (1.0 + z2 / trials)))
}

fn standard_normal_cdf(x: f64) -> f64 {
    0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
}

/// Acklam's approximation (relative error 1.15e-9), then two Newton steps
/// on the exact cdf.
fn standard_normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    let mut x = if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    };
    for _ in 0..2 {
        let density = (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
        if density > 0.0 {
            x -= (standard_normal_cdf(x) - p) / density;
        }
    }
    x
}

/// I_x(a, b), the regularized incomplete beta function.
fn regularized_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front =
        libm::lgamma(a + b) - libm::lgamma(a) - libm::lgamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let front = ln_front.exp();
    // The continued fraction converges fast for x < (a + 1) / (a + b + 2).
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(x, a, b) / a
    } else {
        1.0 - front * beta_fraction(1.0 - x, b, a) / b
    }
}

fn beta_fraction(x: f64, a: f64, b: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=10_000 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < 1e-16 {
            break;
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::DataType;

    fn call(f: fn(&[Arg]) -> Result<Option<f64>>, values: &[&str]) -> Result<f64> {
        let args: Vec<Arg> = values
            .iter()
            .map(|text| Arg {
                text,
                data_type: &DataType::Float64,
            })
            .collect();
        Ok(f(&args)?.unwrap())
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn distributions_answer_as_their_tables() {
        // Values from the distributions' closed forms and tables.
        assert!(close(call(normal_cdf, &["0", "1", "0"]).unwrap(), 0.5));
        assert!(close(
            call(normal_cdf, &["0", "1", "1.96"]).unwrap(),
            0.975_002_104_851_780_1
        ));
        assert!(close(
            call(normal_cdf, &["10", "2", "7"]).unwrap(),
            0.066_807_201_268_858_06
        ));
        assert!(close(
            call(inverse_normal_cdf, &["0", "1", "0.975"]).unwrap(),
            1.959_963_984_540_054
        ));
        assert!(close(
            call(inverse_normal_cdf, &["0", "1", "0.001"]).unwrap(),
            -3.090_232_306_167_813_5
        ));
        for p in ["0.3", "0.5", "0.9999"] {
            let x = call(inverse_normal_cdf, &["5", "3", p]).unwrap();
            let back = call(normal_cdf, &["5", "3", &x.to_string()]).unwrap();
            assert!(close(back, p.parse().unwrap()), "{p}: {back}");
        }
        // Beta(2, 3): I_x = 6x^2 - 8x^3 + 3x^4; Beta(1, 1) is uniform.
        let x: f64 = 0.3;
        let exact = 6.0 * x.powi(2) - 8.0 * x.powi(3) + 3.0 * x.powi(4);
        assert!(close(call(beta_cdf, &["2", "3", "0.3"]).unwrap(), exact));
        assert!(close(call(beta_cdf, &["1", "1", "0.7"]).unwrap(), 0.7));
        assert!(close(call(beta_cdf, &["0.5", "0.5", "0.5"]).unwrap(), 0.5));
        assert!(close(
            call(inverse_beta_cdf, &["2", "3", &exact.to_string()]).unwrap(),
            0.3
        ));
        assert_eq!(call(inverse_beta_cdf, &["2", "3", "0"]).unwrap(), 0.0);
        // 3 of 10 at 95%: Wilson's interval [0.1078, 0.6032].
        let lower = call(wilson_interval_lower, &["3", "10", "1.96"]).unwrap();
        let upper = call(wilson_interval_upper, &["3", "10", "1.96"]).unwrap();
        assert!((lower - 0.107_789_2).abs() < 1e-6, "{lower}");
        assert!((upper - 0.603_226_8).abs() < 1e-6, "{upper}");
        for (f, values, says) in [
            (
                normal_cdf as fn(&[Arg]) -> _,
                &["0", "0", "1"][..],
                "standardDeviation must be > 0",
            ),
            (inverse_normal_cdf, &["0", "1", "1"], "p must be 0 > p > 1"),
            (
                beta_cdf,
                &["1", "1", "1.5"],
                "value must be in the interval [0, 1]",
            ),
            (
                wilson_interval_lower,
                &["11", "10", "1"],
                "must not be larger than",
            ),
        ] {
            let e = call(f, values).unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
        }
    }
}
