//! Exact decimals with Python `Decimal` semantics (28 digits, half-even).

use super::*;

/// A finite decimal: `(-1)^neg * coef * 10^exp`, `coef` as decimal digits
/// (most significant first, no leading zeros; empty is zero).
#[derive(Clone, Debug)]
pub(super) struct Dec {
    pub(super) neg: bool,
    pub(super) coef: Vec<u8>,
    pub(super) exp: i128,
}

/// Python's default decimal context: 28 digits, Emax 999999, Emin -999999.
pub(super) const PREC: i128 = 28;
pub(super) const EMAX: i128 = 999_999;
pub(super) const ETINY: i128 = -999_999 - (PREC - 1);
/// Limits of `Decimal(str)` (libmpdec's maximal context, 64-bit).
pub(super) const MAX_EMAX: i128 = 999_999_999_999_999_999;
pub(super) const MAX_ETINY: i128 = -MAX_EMAX - (MAX_EMAX - 1);

impl Dec {
    pub(super) fn new(neg: bool, mut coef: Vec<u8>, exp: i128) -> Dec {
        let lead = coef.iter().take_while(|&&d| d == 0).count();
        coef.drain(..lead);
        Dec { neg, coef, exp }
    }

    pub(super) fn unit(exp: i128) -> Dec {
        Dec {
            neg: false,
            coef: vec![1],
            exp,
        }
    }

    pub(super) fn is_zero(&self) -> bool {
        self.coef.is_empty()
    }

    pub(super) fn digits(&self) -> i128 {
        self.coef.len() as i128
    }

    pub(super) fn adjexp(&self) -> i128 {
        self.exp + self.digits() - 1
    }

    /// `float(d)`: correctly rounded, like `float(str(d))`.
    pub(super) fn to_f64(&self) -> f64 {
        let mut s = String::with_capacity(self.coef.len() + 48);
        if self.neg {
            s.push('-');
        }
        if self.coef.is_empty() {
            s.push('0');
        }
        s.extend(self.coef.iter().map(|&d| char::from(b'0' + d)));
        let _ = write!(s, "e{}", self.exp);
        s.parse().unwrap_or(f64::NAN)
    }
}

/// Exact comparison by value.
pub(super) fn dec_cmp(a: &Dec, b: &Dec) -> Ordering {
    match (a.is_zero(), b.is_zero()) {
        (true, true) => Ordering::Equal,
        (true, false) => {
            if b.neg {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
        (false, true) => {
            if a.neg {
                Ordering::Less
            } else {
                Ordering::Greater
            }
        }
        (false, false) if a.neg != b.neg => {
            if a.neg {
                Ordering::Less
            } else {
                Ordering::Greater
            }
        }
        (false, false) => {
            let m = a.adjexp().cmp(&b.adjexp()).then_with(|| {
                let n = a.coef.len().max(b.coef.len());
                (0..n)
                    .map(|i| {
                        let x = a.coef.get(i).copied().unwrap_or(0);
                        x.cmp(&b.coef.get(i).copied().unwrap_or(0))
                    })
                    .find(|o| o.is_ne())
                    .unwrap_or(Ordering::Equal)
            });
            if a.neg { m.reverse() } else { m }
        }
    }
}

/// Rounds an exact result into the default context (half-even), as
/// libmpdec's finalize step does; overflow is trapped there, so it is an error.
pub(super) fn round_ctx(neg: bool, coef: Vec<u8>, exp: i128) -> Result<Dec, String> {
    let d = Dec::new(neg, coef, exp);
    if d.is_zero() {
        return Ok(d);
    }
    let min_exp = (d.adjexp() - (PREC - 1)).max(ETINY);
    let mut out = d;
    if out.exp < min_exp {
        let drop = min_exp - out.exp;
        let len = out.digits();
        let (mut kept, first, rest_nonzero) = if drop <= len {
            let keep = (len - drop) as usize;
            let first = out.coef[keep];
            let rest = out.coef[keep + 1..].iter().any(|&x| x != 0);
            (out.coef[..keep].to_vec(), first, rest)
        } else {
            (Vec::new(), 0, true)
        };
        let odd = kept.last().is_some_and(|&x| x % 2 == 1);
        let up = first > 5 || (first == 5 && (rest_nonzero || odd));
        let mut exp = min_exp;
        if up {
            let mut carry = true;
            for x in kept.iter_mut().rev() {
                if *x == 9 {
                    *x = 0;
                } else {
                    *x += 1;
                    carry = false;
                    break;
                }
            }
            if carry {
                kept.insert(0, 1);
            }
            if kept.len() as i128 > PREC {
                kept.pop();
                exp += 1;
            }
        }
        out = Dec::new(out.neg, kept, exp);
    }
    if !out.is_zero() && out.adjexp() > EMAX {
        return Err("decimal overflow".to_string());
    }
    Ok(out)
}

pub(super) fn mag_cmp(a: &[u8], b: &[u8]) -> Ordering {
    let a = &a[a.iter().take_while(|&&d| d == 0).count()..];
    let b = &b[b.iter().take_while(|&&d| d == 0).count()..];
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

pub(super) fn mag_add(a: &[u8], b: &[u8]) -> Vec<u8> {
    let n = a.len().max(b.len());
    let mut out = Vec::with_capacity(n + 1);
    let mut carry = 0u8;
    for i in 0..n {
        let x = if i < a.len() { a[a.len() - 1 - i] } else { 0 };
        let y = if i < b.len() { b[b.len() - 1 - i] } else { 0 };
        let s = x + y + carry;
        out.push(s % 10);
        carry = s / 10;
    }
    out.push(carry);
    out.reverse();
    out
}

/// `a - b` for `a >= b`.
pub(super) fn mag_sub(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(a.len());
    let mut borrow = 0u8;
    for i in 0..a.len() {
        let x = a[a.len() - 1 - i];
        let y = if i < b.len() { b[b.len() - 1 - i] } else { 0 } + borrow;
        if x >= y {
            out.push(x - y);
            borrow = 0;
        } else {
            out.push(x + 10 - y);
            borrow = 1;
        }
    }
    out.reverse();
    out
}

/// `a + b` in the default context (libmpdec's `_mpd_qaddsub`, including its
/// substitution of a tiny operand that lies wholly below the rounding digit).
pub(super) fn dec_add(a: &Dec, b: &Dec) -> Result<Dec, String> {
    if a.is_zero() {
        return round_ctx(b.neg, b.coef.clone(), b.exp);
    }
    if b.is_zero() {
        return round_ctx(a.neg, a.coef.clone(), a.exp);
    }
    let (big, mut small) = if a.exp >= b.exp {
        (a, b.clone())
    } else {
        (b, a.clone())
    };
    if big.exp != small.exp {
        let lim = big.exp - 1
            + if big.digits() > PREC {
                0
            } else {
                big.digits() - PREC - 1
            };
        if small.adjexp() < lim {
            small = Dec {
                neg: small.neg,
                coef: vec![1],
                exp: lim,
            };
        }
    }
    let shift = (big.exp - small.exp) as usize;
    let mut aligned = big.coef.clone();
    aligned.resize(aligned.len() + shift, 0);
    let (neg, mag) = if big.neg == small.neg {
        (big.neg, mag_add(&aligned, &small.coef))
    } else {
        match mag_cmp(&aligned, &small.coef) {
            Ordering::Greater => (big.neg, mag_sub(&aligned, &small.coef)),
            Ordering::Less => (small.neg, mag_sub(&small.coef, &aligned)),
            Ordering::Equal => (false, Vec::new()),
        }
    };
    round_ctx(neg, mag, small.exp)
}

pub(super) fn dec_sub(a: &Dec, b: &Dec) -> Result<Dec, String> {
    dec_add(
        a,
        &Dec {
            neg: !b.neg,
            coef: b.coef.clone(),
            exp: b.exp,
        },
    )
}

pub(super) fn dec_abs(a: &Dec) -> Result<Dec, String> {
    round_ctx(false, a.coef.clone(), a.exp)
}
