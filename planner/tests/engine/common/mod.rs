//! Shared fixtures: generated TPC-H data sets and result comparison.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use arrow::datatypes::SchemaRef;
use datafusion::prelude::{SessionConfig, SessionContext};
use squall_planner::catalog::register_catalog;
use squall_planner::{Engine, EngineOptions};
use squall_tpch::compare::compare_csv;
use squall_tpch::datagen::{GenOptions, generate};
use squall_tpch::run::to_csv;

/// A generated data set that lives as long as the test binary.
pub struct DataSet {
    _dir: tempfile::TempDir,
    pub path: PathBuf,
}

fn make(sf: f64, row_group_rows: usize) -> DataSet {
    let dir = tempfile::Builder::new()
        .prefix("squall-tpch-")
        .tempdir()
        .expect("tempdir");
    let path = dir.path().join(format!("sf{sf}"));
    let mut opts = GenOptions::new(sf, &path);
    opts.row_group_rows = row_group_rows;
    opts.progress = false;
    generate(&opts).expect("generate TPC-H");
    DataSet { _dir: dir, path }
}

/// TPC-H SF 0.1 with the default row-group size.
pub fn sf01() -> &'static DataSet {
    static D: OnceLock<DataSet> = OnceLock::new();
    static LOCK: Mutex<()> = Mutex::new(());
    let _g = LOCK.lock();
    D.get_or_init(|| make(0.1, squall_tpch::datagen::DEFAULT_ROW_GROUP_ROWS))
}

/// TPC-H SF 0.01 with 2,000-row row groups: many row groups per table.
pub fn sf001_small_groups() -> &'static DataSet {
    static D: OnceLock<DataSet> = OnceLock::new();
    static LOCK: Mutex<()> = Mutex::new(());
    let _g = LOCK.lock();
    D.get_or_init(|| make(0.01, 2_000))
}

pub fn settings(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

pub async fn engine(data: &Path, pairs: &[(&str, &str)]) -> Engine {
    Engine::local(EngineOptions {
        catalog: Some(data.to_string_lossy().to_string()),
        settings: settings(pairs),
    })
    .await
    .expect("engine")
}

/// Single-node DataFusion (default configuration) over the same files.
pub async fn single_node(data: &Path) -> SessionContext {
    let ctx = SessionContext::new_with_config(SessionConfig::new());
    register_catalog(&ctx, &data.to_string_lossy())
        .await
        .expect("catalog");
    ctx
}

pub async fn single_node_csv(ctx: &SessionContext, sql: &str) -> String {
    let df = ctx.sql(sql).await.expect("single-node plan");
    let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
    let batches = df.collect().await.expect("single-node run");
    to_csv(&schema, &batches).expect("csv")
}

pub async fn squall_csv(engine: &Engine, sql: &str) -> String {
    let r = engine
        .sql(sql)
        .await
        .unwrap_or_else(|e| panic!("squall failed: {e}\n{sql}"));
    to_csv(&r.schema, &r.batches).expect("csv")
}

/// Panics with the comparison message when `actual` differs from `expected`.
pub fn assert_same(what: &str, expected: &str, actual: &str, sql: &str) {
    let c = compare_csv(expected, actual, Some(sql)).expect("comparable CSV");
    assert!(c.ok, "{what}: {}", c.message);
}

/// Number of files under `dir`, recursively.
pub fn count_files(dir: &Path) -> usize {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    rd.flatten()
        .map(|e| {
            let p = e.path();
            if p.is_dir() { count_files(&p) } else { 1 }
        })
        .sum()
}
