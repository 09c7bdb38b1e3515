//! Cell values: numbers, NULL tokens, booleans, scales.

use super::*;

/// The sign, digits, fractional digit count and exponent of a `NUM_RE` match
/// (`^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$`).
pub(super) struct NumToken {
    pub(super) neg: bool,
    pub(super) digits: Vec<u8>,
    pub(super) frac_len: usize,
    pub(super) exp: i128,
}

pub(super) fn lex_num(s: &str) -> Option<NumToken> {
    let body = s.strip_suffix('\n').unwrap_or(s);
    let chars: Vec<char> = body.chars().collect();
    let mut i = 0;
    let mut neg = false;
    if let Some(&c) = chars.first()
        && (c == '+' || c == '-')
    {
        neg = c == '-';
        i = 1;
    }
    let mut digits = Vec::new();
    let run = |i: &mut usize, out: &mut Vec<u8>| {
        while let Some(d) = chars.get(*i).and_then(|&c| digit_value(c)) {
            out.push(d);
            *i += 1;
        }
    };
    run(&mut i, &mut digits);
    let int_len = digits.len();
    let mut frac_len = 0;
    if chars.get(i) == Some(&'.') {
        i += 1;
        run(&mut i, &mut digits);
        frac_len = digits.len() - int_len;
    }
    if int_len == 0 && frac_len == 0 {
        return None;
    }
    let mut exp: i128 = 0;
    if matches!(chars.get(i), Some('e' | 'E')) {
        i += 1;
        let mut exp_neg = false;
        if let Some(&c) = chars.get(i)
            && (c == '+' || c == '-')
        {
            exp_neg = c == '-';
            i += 1;
        }
        let mut exp_digits = Vec::new();
        run(&mut i, &mut exp_digits);
        if exp_digits.is_empty() {
            return None;
        }
        // Saturated far outside the range Decimal() accepts.
        let limit: i128 = 10i128.pow(30);
        exp = exp_digits
            .iter()
            .fold(0i128, |v, &d| (v * 10 + i128::from(d)).min(limit));
        if exp_neg {
            exp = -exp;
        }
    }
    (i == chars.len()).then_some(NumToken {
        neg,
        digits,
        frac_len,
        exp,
    })
}

pub(super) fn num_re(s: &str) -> bool {
    lex_num(s).is_some()
}

/// A number as `_num` returns it: a float for the special tokens, a Decimal
/// otherwise.
#[derive(Clone, Debug)]
pub(super) enum Num {
    Float(f64),
    Decimal(Dec),
}

impl Num {
    pub(super) fn to_f64(&self) -> f64 {
        match self {
            Num::Float(f) => *f,
            Num::Decimal(d) => d.to_f64(),
        }
    }
}

/// `_num`.
pub(super) fn num(s: &str) -> Option<Num> {
    let t = py_strip(s);
    match t.to_lowercase().as_str() {
        "nan" => return Some(Num::Float(f64::NAN)),
        "inf" | "+inf" | "infinity" | "+infinity" => return Some(Num::Float(f64::INFINITY)),
        "-inf" | "-infinity" => return Some(Num::Float(f64::NEG_INFINITY)),
        _ => {}
    }
    let tok = lex_num(t)?;
    let d = Dec::new(tok.neg, tok.digits, tok.exp - tok.frac_len as i128);
    // Decimal(t) raises InvalidOperation outside libmpdec's maximal context.
    let valid = if d.is_zero() {
        (MAX_ETINY..=MAX_EMAX).contains(&d.exp)
    } else {
        d.adjexp() <= MAX_EMAX && d.exp >= MAX_ETINY
    };
    valid.then_some(Num::Decimal(d))
}

/// `_scale`: digits after the point; 0 for an integer literal; None for an
/// exponent form or anything else without a point.
pub(super) fn scale(s: &str) -> Option<usize> {
    let s = py_strip(s);
    if s.contains(['e', 'E']) || !s.contains('.') {
        return int_re(s).then_some(0);
    }
    s.split_once('.').map(|(_, frac)| frac.chars().count())
}

pub(super) fn is_null(s: &str) -> bool {
    matches!(s, "" | "NULL" | "null" | "\\N")
}

pub(super) fn py_bool(s: &str) -> Option<bool> {
    match s.to_lowercase().as_str() {
        "true" | "t" => Some(true),
        "false" | "f" => Some(false),
        _ => None,
    }
}
