//! The timed runs of the key-filter benchmark and the table they print.
//!
//! For each case (distribution, build keys, hit fraction) both filters are
//! built from the same distinct hashes and probed with the same batches;
//! each round times one filter then the other, the next round the other way
//! round, and the figures are the medians over the rounds. What is not
//! timed is checked: no false negatives, the batch path and the filter
//! alone agree, and the filter decoded from its bytes answers as the
//! original does.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use squall_core::key_filter::key_hashes;

use crate::contestants::{Contestant, Kind};
use crate::keys::{BATCH_ROWS, CaseData, Distribution};
use crate::{BenchError, Result};

/// What to run.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    pub distributions: Vec<Distribution>,
    /// Build-side key counts.
    pub keys: Vec<usize>,
    /// Fractions of probe rows whose key is a build key.
    pub hit_fractions: Vec<f64>,
    pub probe_rows: usize,
    /// Timed rounds per case (each times both filters).
    pub rounds: usize,
    /// Target false-positive rate of both filters.
    pub fpp: f64,
    pub seed: u64,
}

/// One filter's figures in one case.
#[derive(Debug, Clone)]
pub struct FilterFigures {
    pub kind: Kind,
    pub build: Duration,
    /// Serialized size.
    pub bytes: usize,
    /// Measured false-positive rate over the probe's miss rows.
    pub fpp: f64,
    /// Probe rows per second through the batch path (hashing included).
    pub probe_rows_per_s: f64,
    /// Checks per second of the filter alone, over precomputed hashes.
    pub checks_per_s: f64,
}

/// Both filters' figures in one case.
#[derive(Debug, Clone)]
pub struct CaseResult {
    pub distribution: Distribution,
    /// Distinct build keys.
    pub keys: usize,
    pub hit_fraction: f64,
    pub probe_rows: usize,
    pub filters: Vec<FilterFigures>,
    /// The crate's filter sized for the false-positive rate squall's filter
    /// measured (not timed): bytes at an equal measured rate.
    pub crate_at_squall_fpp: Option<EqualFpp>,
}

/// A filter's size and measured rate (see [`CaseResult::crate_at_squall_fpp`]).
#[derive(Debug, Clone, Copy)]
pub struct EqualFpp {
    pub bytes: usize,
    pub fpp: f64,
}

impl CaseResult {
    fn figures(&self, kind: Kind) -> Option<&FilterFigures> {
        self.filters.iter().find(|f| f.kind == kind)
    }
}

/// Run every case of `options`, calling `on_case` as each one finishes.
pub fn run(
    options: &BenchOptions,
    mut on_case: impl FnMut(&CaseResult),
) -> Result<Vec<CaseResult>> {
    if options.rounds == 0 || options.probe_rows == 0 {
        return Err(BenchError::Option {
            option: "rounds/probe-rows",
            message: "must be at least 1".into(),
        });
    }
    if !(options.fpp > 0.0 && options.fpp < 1.0) {
        return Err(BenchError::Option {
            option: "fpp",
            message: format!("{} is not in (0, 1)", options.fpp),
        });
    }
    let mut results = Vec::new();
    for &dist in &options.distributions {
        for &n in &options.keys {
            for &hit in &options.hit_fractions {
                let case = run_case(options, dist, n, hit)?;
                on_case(&case);
                results.push(case);
            }
        }
    }
    Ok(results)
}

fn run_case(options: &BenchOptions, dist: Distribution, n: usize, hit: f64) -> Result<CaseResult> {
    let data = CaseData::generate(dist, n, options.probe_rows, hit, options.seed);
    let mut build = Vec::new();
    key_hashes(&data.build, &mut build)?;
    build.sort_unstable();
    build.dedup();
    let mut probe = Vec::with_capacity(options.probe_rows);
    let mut scratch = Vec::with_capacity(BATCH_ROWS);
    for batch in &data.probe {
        key_hashes(batch, &mut scratch)?;
        probe.extend_from_slice(&scratch);
    }
    let label = format!("{dist} n={} hit={hit}", build.len());
    let mut timings: Vec<(Kind, Vec<[Duration; 3]>)> =
        Kind::ALL.iter().map(|k| (*k, Vec::new())).collect();
    let mut last: Vec<Option<(Box<dyn Contestant>, usize)>> =
        Kind::ALL.iter().map(|_| None).collect();
    for round in 0..options.rounds {
        for slot in order(round) {
            let kind = Kind::ALL[slot];
            // Drop the previous round's filter before building the next.
            last[slot] = None;
            let started = Instant::now();
            let filter = kind.build(&build, options.fpp)?;
            let build_time = started.elapsed();
            let started = Instant::now();
            let mut kept = 0;
            for batch in &data.probe {
                kept += filter.evaluate(batch, &mut scratch)?.true_count();
            }
            let probe_time = started.elapsed();
            let started = Instant::now();
            let contained = filter.count_contained(std::hint::black_box(&probe));
            let check_time = started.elapsed();
            if kept != contained {
                return Err(wrong(
                    kind,
                    &label,
                    format!("batch path kept {kept} rows, the filter alone {contained}"),
                ));
            }
            timings[slot].1.push([build_time, probe_time, check_time]);
            last[slot] = Some((filter, contained));
        }
    }
    let mut filters = Vec::new();
    for (slot, (kind, rounds)) in timings.into_iter().enumerate() {
        let Some((filter, contained)) = last[slot].take() else {
            continue;
        };
        let bytes = filter.encode();
        let size = bytes.len();
        let decoded = filter.decode(bytes)?;
        if decoded.count_contained(&probe) != contained {
            return Err(wrong(
                kind,
                &label,
                "the decoded filter answers differently".into(),
            ));
        }
        let fpp = false_positive_rate(filter.as_ref(), &probe, &data.is_hit)
            .map_err(|message| wrong(kind, &label, message))?;
        let rows = probe.len() as f64;
        filters.push(FilterFigures {
            kind,
            build: median(rounds.iter().map(|t| t[0]).collect()),
            bytes: size,
            fpp,
            probe_rows_per_s: rows / median(rounds.iter().map(|t| t[1]).collect()).as_secs_f64(),
            checks_per_s: rows / median(rounds.iter().map(|t| t[2]).collect()).as_secs_f64(),
        });
    }
    let squall_fpp = filters
        .iter()
        .find(|f| f.kind == Kind::Squall)
        .map(|f| f.fpp)
        .filter(|p| *p > 0.0);
    let crate_at_squall_fpp = match squall_fpp {
        Some(target) => {
            let filter = Kind::Crate.build(&build, target)?;
            let fpp = false_positive_rate(filter.as_ref(), &probe, &data.is_hit)
                .map_err(|message| wrong(Kind::Crate, &label, message))?;
            Some(EqualFpp {
                bytes: filter.encode().len(),
                fpp,
            })
        }
        None => None,
    };
    Ok(CaseResult {
        distribution: dist,
        keys: build.len(),
        hit_fraction: hit,
        probe_rows: probe.len(),
        filters,
        crate_at_squall_fpp,
    })
}

/// Which filter goes first in a round: A B, then B A, and so on.
fn order(round: usize) -> [usize; 2] {
    if round.is_multiple_of(2) {
        [0, 1]
    } else {
        [1, 0]
    }
}

fn wrong(kind: Kind, case: &str, message: String) -> BenchError {
    BenchError::Wrong {
        filter: kind.name(),
        case: case.to_string(),
        message,
    }
}

/// False positives among the miss rows, or an error on a false negative.
fn false_positive_rate(
    filter: &dyn Contestant,
    hashes: &[u64],
    is_hit: &[bool],
) -> std::result::Result<f64, String> {
    let (mut misses, mut false_positives) = (0u64, 0u64);
    for (h, hit) in hashes.iter().zip(is_hit) {
        let contained = filter.contains(*h);
        if *hit && !contained {
            return Err(format!("false negative for hash {h:#x}"));
        }
        if !*hit {
            misses += 1;
            false_positives += u64::from(contained);
        }
    }
    Ok(if misses == 0 {
        0.0
    } else {
        false_positives as f64 / misses as f64
    })
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

/// The table's title and column heads.
pub fn header(options: &BenchOptions) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "key filters: squall-sbbf (squall_core::key_filter::SplitBlockBloom) vs bloomfilter (crate), \
         target fpp {}, {} probe rows in batches of {BATCH_ROWS}, median of {} alternating rounds, \
         debug assertions {}",
        options.fpp,
        options.probe_rows,
        options.rounds,
        if cfg!(debug_assertions) { "on" } else { "off" },
    );
    let _ = write!(
        s,
        "{:<9} {:>8} {:>5} {:<12} {:>9} {:>10} {:>8} {:>8} {:>11} {:>11}",
        "keys",
        "n",
        "hit",
        "filter",
        "build ms",
        "bytes",
        "bits/key",
        "fpp %",
        "probe Mrow/s",
        "check M/s"
    );
    s
}

/// One case: a line per filter, the crate at squall's measured rate, then
/// the ratios squall-sbbf / bloomfilter.
pub fn lines(case: &CaseResult) -> String {
    let mut s = String::new();
    let per_key = |bytes: usize| bytes as f64 * 8.0 / case.keys.max(1) as f64;
    let hit = case.hit_fraction * 100.0;
    for f in &case.filters {
        let _ = writeln!(
            s,
            "{:<9} {:>8} {hit:>4.0}% {:<12} {:>9.2} {:>10} {:>8.2} {:>8.3} {:>11.1} {:>11.1}",
            case.distribution.to_string(),
            case.keys,
            f.kind.name(),
            f.build.as_secs_f64() * 1e3,
            f.bytes,
            per_key(f.bytes),
            f.fpp * 100.0,
            f.probe_rows_per_s / 1e6,
            f.checks_per_s / 1e6,
        );
    }
    if let Some(e) = case.crate_at_squall_fpp {
        let _ = writeln!(
            s,
            "{:<9} {:>8} {hit:>4.0}% {:<12} {:>9} {:>10} {:>8.2} {:>8.3} {:>11} {:>11}",
            "",
            "",
            "crate@=fpp",
            "-",
            e.bytes,
            per_key(e.bytes),
            e.fpp * 100.0,
            "-",
            "-",
        );
    }
    if let Some(r) = ratios(case) {
        let _ = write!(
            s,
            "{:<9} {:>8} {hit:>4.0}% {:<12} {:>8.2}x {:>9.2}x {:>8} {:>7.2}x {:>10.2}x {:>10.2}x",
            "", "", "sbbf/crate", r.build, r.bytes, "", r.fpp, r.probe, r.checks
        );
        if let Some(b) = r.bytes_equal_fpp {
            let _ = write!(
                s,
                "\n{:<9} {:>8} {hit:>4.0}% {:<12} {:>9} {:>9.2}x",
                "", "", "sbbf/crate@=", "", b
            );
        }
    }
    s
}

/// squall-sbbf over bloomfilter, per figure (speeds: higher is faster for squall).
#[derive(Debug, Clone, Copy)]
struct Ratios {
    build: f64,
    bytes: f64,
    fpp: f64,
    probe: f64,
    checks: f64,
    /// Bytes over the crate's at the rate squall's filter measured.
    bytes_equal_fpp: Option<f64>,
}

fn ratios(case: &CaseResult) -> Option<Ratios> {
    let (a, b) = (case.figures(Kind::Squall)?, case.figures(Kind::Crate)?);
    Some(Ratios {
        build: a.build.as_secs_f64() / b.build.as_secs_f64().max(1e-12),
        bytes: a.bytes as f64 / b.bytes.max(1) as f64,
        fpp: a.fpp / b.fpp.max(1e-12),
        probe: a.probe_rows_per_s / b.probe_rows_per_s.max(1e-12),
        checks: a.checks_per_s / b.checks_per_s.max(1e-12),
        bytes_equal_fpp: case
            .crate_at_squall_fpp
            .map(|e| a.bytes as f64 / e.bytes.max(1) as f64),
    })
}

fn geometric_mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v.max(1e-12).ln(), n + 1));
    (n > 0).then(|| (sum / n as f64).exp())
}

/// Geometric means of the ratios over all cases.
pub fn summary(cases: &[CaseResult]) -> String {
    let all: Vec<Ratios> = cases.iter().filter_map(ratios).collect();
    let geo = |f: fn(&Ratios) -> f64| geometric_mean(all.iter().map(f)).unwrap_or(f64::NAN);
    if all.is_empty() {
        return "no cases".into();
    }
    let equal = geometric_mean(all.iter().filter_map(|r| r.bytes_equal_fpp))
        .map_or_else(|| "-".to_string(), |g| format!("{g:.2}x"));
    format!(
        "squall-sbbf / bloomfilter over {} cases (geometric mean): probe rows/s {:.2}x, \
         checks/s {:.2}x, build time {:.2}x, bytes at the same target fpp {:.2}x \
         (measured fpp {:.2}x), bytes at the same measured fpp {equal}",
        all.len(),
        geo(|r| r.probe),
        geo(|r| r.checks),
        geo(|r| r.build),
        geo(|r| r.bytes),
        geo(|r| r.fpp),
    )
}
