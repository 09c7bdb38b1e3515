//! Cell equality with the script's tolerances.

use super::*;

/// `CellCmp`: per-column money flags and the cell equality rules.
pub(super) struct CellCmp {
    pub(super) money: Vec<bool>,
}

impl CellCmp {
    pub(super) fn new(expected_rows: &[Row], ncols: usize) -> CellCmp {
        let money = (0..ncols)
            .map(|j| {
                let vals: Vec<&str> = expected_rows
                    .iter()
                    .map(|r| r[j].as_str())
                    .filter(|v| !is_null(v))
                    .collect();
                let nums: Vec<&str> = vals
                    .iter()
                    .copied()
                    .filter(|v| num_re(py_strip(v)))
                    .collect();
                !vals.is_empty()
                    && nums.len() == vals.len()
                    && nums.iter().any(|v| v.contains('.'))
                    && nums.iter().all(|v| scale(v).unwrap_or(0) <= 2)
            })
            .collect();
        CellCmp { money }
    }

    pub(super) fn eq(&self, j: usize, e: &str, a: &str) -> Result<bool, String> {
        let (en, an) = (is_null(e), is_null(a));
        if en || an {
            return Ok(en && an);
        }
        if e == a {
            return Ok(true);
        }
        if let (Some(ev), Some(av)) = (num(e), num(a)) {
            let (ev, av) = match (ev, av) {
                (Num::Decimal(x), Num::Decimal(y)) => (x, y),
                (x, y) => {
                    let (ef, af) = (x.to_f64(), y.to_f64());
                    if ef.is_nan() || af.is_nan() {
                        return Ok(ef.is_nan() && af.is_nan());
                    }
                    return Ok(ef == af);
                }
            };
            if int_re(py_strip(e)) {
                return Ok(dec_cmp(&ev, &av) == Ordering::Equal);
            }
            let overflow =
                |err: String| format!("{err} comparing {} with {}", py_repr(e), py_repr(a));
            let diff = dec_abs(&dec_sub(&ev, &av).map_err(overflow)?).map_err(overflow)?;
            let (ea, aa) = (
                dec_abs(&ev).map_err(overflow)?,
                dec_abs(&av).map_err(overflow)?,
            );
            let larger = if dec_cmp(&aa, &ea) == Ordering::Greater {
                aa
            } else {
                ea
            };
            let tolerance = round_ctx(false, larger.coef, larger.exp - 6).map_err(overflow)?;
            if dec_cmp(&diff, &tolerance) != Ordering::Greater {
                return Ok(true);
            }
            if self.money.get(j).copied().unwrap_or(false)
                && dec_cmp(&diff, &Dec::unit(-2)) != Ordering::Greater
            {
                return Ok(true);
            }
            if let (Some(se), Some(sa)) = (scale(e), scale(a)) {
                let s = se.min(sa);
                if s >= 4 && dec_cmp(&diff, &Dec::unit(-(s as i128))) != Ordering::Greater {
                    return Ok(true);
                }
            }
            return Ok(false);
        }
        if let (Some(x), Some(y)) = (py_bool(e), py_bool(a)) {
            return Ok(x == y);
        }
        if matches!(e.to_lowercase().as_str(), "0" | "1")
            && let Some(y) = py_bool(a)
        {
            return Ok((e == "1") == y);
        }
        if let (Some(de), Some(da)) = (dt(e), dt(a)) {
            return Ok(de.same_instant(&da));
        }
        Ok(false)
    }

    pub(super) fn row_eq(&self, er: &[String], ar: &[String]) -> Result<bool, String> {
        for j in 0..er.len() {
            if !self.eq(j, &er[j], &ar[j])? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    pub(super) fn row_eq_on(
        &self,
        er: &[String],
        ar: &[String],
        cols: &[usize],
    ) -> Result<bool, String> {
        for &j in cols {
            if !self.eq(j, &er[j], &ar[j])? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}
