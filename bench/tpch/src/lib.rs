//! # squall-tpch
//!
//! TPC-H for squall, as tooling: the `squall` command, the tests and the
//! benchmark use it; the engine's libraries and the Lambda functions do not
//! (`infra/ci/check-function-deps.sh` checks that their dependency trees
//! hold neither this crate nor its generator).
//!
//! # Layout
//!
//! - [`datagen`]: TPC-H Parquet from the `tpchgen` crates (`squall tpch gen`).
//! - the 22 queries with validation parameters and their expected answers at
//!   SF 0.1 and SF 1 (embedded from `queries/` and `answers/`): [`query`],
//!   [`expected_answer`].
//! - [`compare`]: the one answer checker, cell by cell (`squall tpch check`,
//!   which `bench/run.py` calls for every engine).
//! - [`run`]: the end-to-end runner behind `squall tpch run`.
//! - [`ab`]: the same queries with a feature on and off (`--compare bloom`).
//! - [`driver`]: the line-protocol driver the benchmark runner talks to.

pub mod ab;
pub mod compare;
#[path = "gen.rs"]
pub mod datagen;
pub mod driver;
pub mod run;
pub mod scratch;

macro_rules! queries {
    ($($n:literal),*) => {
        [$(include_str!(concat!("../queries/q", $n, ".sql"))),*]
    };
}

macro_rules! answers {
    ($sf:literal; $($n:literal),*) => {
        [$(include_str!(concat!("../answers/", $sf, "/q", $n, ".csv"))),*]
    };
}

const QUERIES: [&str; 22] = queries!(
    "01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11", "12", "13", "14", "15", "16",
    "17", "18", "19", "20", "21", "22"
);

const ANSWERS_SF1: [&str; 22] = answers!("sf1";
    "01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11", "12", "13", "14", "15",
    "16", "17", "18", "19", "20", "21", "22"
);

const ANSWERS_SF01: [&str; 22] = answers!("sf0.1";
    "01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11", "12", "13", "14", "15",
    "16", "17", "18", "19", "20", "21", "22"
);

/// The text of TPC-H query `n` (1..=22).
pub fn query(n: usize) -> Option<&'static str> {
    n.checked_sub(1).and_then(|i| QUERIES.get(i)).copied()
}

/// The expected answer (CSV with a header) of query `n` at scale factor
/// `sf`, for the scale factors whose answers squall carries (0.1 and 1).
pub fn expected_answer(sf: f64, n: usize) -> Option<&'static str> {
    let i = n.checked_sub(1)?;
    if (sf - 1.0).abs() < 1e-9 {
        ANSWERS_SF1.get(i).copied()
    } else if (sf - 0.1).abs() < 1e-9 {
        ANSWERS_SF01.get(i).copied()
    } else {
        None
    }
}
