//! `squall tpch run --compare bloom` (or `--compare KEY=ON,OFF`, any setting
//! at two values): each query with a feature on and off,
//! side by side in one process.
//!
//! Per query: one warm-up run of each side, then `repeat` timed runs that
//! alternate on/off (so drift of the machine hits both alike); the median
//! time of each side, the exchange bytes and rows of each side, the rows the
//! filters dropped, and the time ratio on/off. Both sides' answers are
//! checked; a wrong answer is reported, never timed.

use std::time::Instant;

use datafusion::error::{DataFusionError, Result};
use serde::Serialize;

use super::run::{RunOptions, prepared_catalog, to_csv};
use squall_planner::engine::{Engine, EngineOptions};

/// A feature that can be compared on and off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Feature {
    /// Join-key filters (`squall.bloom.enabled`).
    Bloom,
    /// Any setting at two values, `KEY=ON,OFF` (e.g.
    /// `squall.shuffle.compression=none,lz4`): "on" is the first.
    Setting {
        key: String,
        on: String,
        off: String,
    },
}

impl std::str::FromStr for Feature {
    type Err = DataFusionError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "bloom" => Ok(Self::Bloom),
            other => match other.split_once('=') {
                Some((key, values)) => match values.split_once(',') {
                    Some((on, off)) if !key.trim().is_empty() => Ok(Self::Setting {
                        key: key.trim().to_string(),
                        on: on.trim().to_string(),
                        off: off.trim().to_string(),
                    }),
                    _ => Err(DataFusionError::Configuration(format!(
                        "--compare {other:?}: expected KEY=ON,OFF (two values of one setting)"
                    ))),
                },
                None => Err(DataFusionError::Configuration(format!(
                    "--compare {other:?}: unknown feature (expected: bloom, or KEY=ON,OFF)"
                ))),
            },
        }
    }
}

impl Feature {
    fn setting(&self, on: bool) -> (String, String) {
        match self {
            Self::Bloom => ("squall.bloom.enabled".into(), on.to_string()),
            Self::Setting { key, on: a, off: b } => {
                (key.clone(), if on { a.clone() } else { b.clone() })
            }
        }
    }
}

/// One query, on and off.
#[derive(Debug, Clone, Serialize)]
pub struct AbRow {
    pub query: usize,
    pub on_ms: f64,
    pub off_ms: f64,
    pub on_exchange_bytes: u64,
    pub off_exchange_bytes: u64,
    pub on_exchange_rows: u64,
    pub off_exchange_rows: u64,
    pub rows_dropped: u64,
    pub filters: usize,
    /// `ok`, or what was wrong with either side.
    pub check: String,
}

impl AbRow {
    pub fn ratio(&self) -> f64 {
        if self.off_ms > 0.0 {
            self.on_ms / self.off_ms
        } else {
            1.0
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Run the comparison; `on_row` sees each query's row as it completes.
pub async fn compare(
    opts: &RunOptions,
    feature: Feature,
    repeat: usize,
    mut on_row: impl FnMut(&AbRow),
) -> Result<Vec<AbRow>> {
    let catalog = prepared_catalog(opts)?;
    let make = |on: bool| {
        let mut settings = opts.settings.clone();
        settings.push(feature.setting(on));
        Engine::local(EngineOptions {
            catalog: Some(catalog.clone()),
            settings,
        })
    };
    let engines = [make(true).await?, make(false).await?];
    let queries: Vec<usize> = if opts.queries.is_empty() {
        (1..=22).collect()
    } else {
        opts.queries.clone()
    };
    let mut rows = Vec::new();
    for q in queries {
        let sql = super::query(q)
            .ok_or_else(|| DataFusionError::Plan(format!("no TPC-H query {q} (1..=22)")))?;
        let mut times: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
        let mut profiles = [None, None];
        let mut check = String::from("ok");
        // Warm-up (checked), then alternating timed runs.
        for round in 0..=repeat.max(1) {
            for (side, engine) in engines.iter().enumerate() {
                let started = Instant::now();
                let result = engine.sql(sql).await;
                let ms = started.elapsed().as_secs_f64() * 1000.0;
                let result = match result {
                    Ok(r) => r,
                    Err(e) => {
                        check = format!("ERROR ({}): {e}", if side == 0 { "on" } else { "off" });
                        continue;
                    }
                };
                if round == 0 {
                    if let Some(expected) = super::expected_answer(opts.scale_factor, q) {
                        let actual = to_csv(&result.schema, &result.batches)?;
                        let c = super::compare::compare_csv(expected, &actual, Some(sql)).map_err(
                            |e| {
                                DataFusionError::Execution(format!(
                                    "q{q:02}: comparing answers: {e}"
                                ))
                            },
                        )?;
                        if !c.ok {
                            check = format!(
                                "MISMATCH ({}): {}",
                                if side == 0 { "on" } else { "off" },
                                c.message
                            );
                        }
                    }
                    profiles[side] = result.profile;
                } else {
                    times[side].push(ms);
                }
            }
        }
        let [on, off] = profiles;
        let (on, off) = (on.unwrap_or_default(), off.unwrap_or_default());
        let [t_on, t_off] = times;
        let row = AbRow {
            query: q,
            on_ms: median(t_on),
            off_ms: median(t_off),
            on_exchange_bytes: on.exchange_bytes,
            off_exchange_bytes: off.exchange_bytes,
            on_exchange_rows: on.exchange_rows,
            off_exchange_rows: off.exchange_rows,
            rows_dropped: on.bloom_rows_dropped,
            filters: on.filters.iter().filter(|f| f.skipped.is_none()).count(),
            check,
        };
        on_row(&row);
        rows.push(row);
    }
    Ok(rows)
}

/// The table `--compare` prints.
pub fn header() -> String {
    format!(
        "{:>5} {:>14} {:>14} {:>12} {:>12} {:>12} {:>7} {:>9} {:>9} {:>6}  check",
        "query",
        "xchg_bytes_on",
        "xchg_bytes_off",
        "xchg_rows_on",
        "xchg_rows_off",
        "dropped",
        "filters",
        "on_ms",
        "off_ms",
        "ratio"
    )
}

pub fn line(r: &AbRow) -> String {
    format!(
        "{:>5} {:>14} {:>14} {:>12} {:>12} {:>12} {:>7} {:>9.1} {:>9.1} {:>6.2}  {}",
        format!("q{:02}", r.query),
        r.on_exchange_bytes,
        r.off_exchange_bytes,
        r.on_exchange_rows,
        r.off_exchange_rows,
        r.rows_dropped,
        r.filters,
        r.on_ms,
        r.off_ms,
        r.ratio(),
        r.check
    )
}

/// Totals: exchange bytes on/off and their reduction, geomean and worst time ratio.
pub fn summary(rows: &[AbRow]) -> String {
    let on: u64 = rows.iter().map(|r| r.on_exchange_bytes).sum();
    let off: u64 = rows.iter().map(|r| r.off_exchange_bytes).sum();
    let reduction = if off > 0 {
        100.0 * (1.0 - on as f64 / off as f64)
    } else {
        0.0
    };
    let n = rows.len().max(1) as f64;
    let geo = (rows.iter().map(|r| r.ratio().max(1e-9).ln()).sum::<f64>() / n).exp();
    let worst = rows
        .iter()
        .max_by(|a, b| a.ratio().total_cmp(&b.ratio()))
        .map(|r| format!("q{:02} {:.2}", r.query, r.ratio()))
        .unwrap_or_default();
    let bad = rows.iter().filter(|r| r.check != "ok").count();
    format!(
        "exchange bytes on {on} / off {off}: {reduction:.1}% less with the feature; time on/off geomean {geo:.3}, worst {worst}; {bad} wrong answers"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(on_ms: f64, off_ms: f64, on_b: u64, off_b: u64) -> AbRow {
        AbRow {
            query: 1,
            on_ms,
            off_ms,
            on_exchange_bytes: on_b,
            off_exchange_bytes: off_b,
            on_exchange_rows: 0,
            off_exchange_rows: 0,
            rows_dropped: 0,
            filters: 0,
            check: "ok".into(),
        }
    }

    #[test]
    fn medians_and_summary() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        let s = summary(&[row(50.0, 100.0, 30, 100), row(200.0, 100.0, 70, 100)]);
        assert!(s.contains("on 100 / off 200: 50.0% less"), "{s}");
        assert!(s.contains("geomean 1.000"), "{s}");
        assert!(s.contains("worst q01 2.00"), "{s}");
    }

    #[test]
    fn unknown_feature_is_named() {
        let e = "nope".parse::<Feature>().unwrap_err().to_string();
        assert!(e.contains("nope") && e.contains("bloom"), "{e}");
        let e = "squall.shuffle.compression=none"
            .parse::<Feature>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("KEY=ON,OFF"), "{e}");
    }

    #[test]
    fn a_setting_compares_its_two_values() {
        let f: Feature = "squall.shuffle.compression = none,lz4".parse().unwrap();
        assert_eq!(
            f.setting(true),
            ("squall.shuffle.compression".into(), "none".into())
        );
        assert_eq!(
            f.setting(false),
            ("squall.shuffle.compression".into(), "lz4".into())
        );
    }
}
