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

/// A generated data set that lives as long as the test binary (in a
/// process directory: the next run removes it).
pub struct DataSet {
    pub path: PathBuf,
}

fn make(sf: f64, row_group_rows: usize) -> DataSet {
    let dir = squall_tpch::scratch::process_dir("squall-tpch-").expect("tempdir");
    let path = dir.join(format!("sf{sf}"));
    let mut opts = GenOptions::new(sf, &path);
    opts.row_group_rows = row_group_rows;
    opts.progress = false;
    generate(&opts).expect("generate TPC-H");
    DataSet { path }
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

/// TPC-H SF 0.01 with 400-row row groups: 150 lineitem row groups, so a
/// scan of it can have 150 tasks (the two-level exchange's tests).
pub fn sf001_tiny_groups() -> &'static DataSet {
    static D: OnceLock<DataSet> = OnceLock::new();
    static LOCK: Mutex<()> = Mutex::new(());
    let _g = LOCK.lock();
    D.get_or_init(|| make(0.01, 400))
}

/// `pairs` as settings, after one that makes every query run staged: these
/// tests exercise the distributed path, which the test data's small size
/// would otherwise skip (`squall.query.single_task_bytes`). A test that sets
/// it itself wins, as later settings do.
pub fn settings(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    std::iter::once(("squall.query.single_task_bytes", "0"))
        .chain(pairs.iter().copied())
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The engines' logs go to stderr, uncaptured: the coordinator's warning
/// of a long silence (what a stalled query waits for), or what
/// `SQUALL_TEST_LOG` asks for (a tracing filter, e.g.
/// `squall_planner::coordinator=info`).
fn log_if_asked() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let filter = std::env::var("SQUALL_TEST_LOG")
            .unwrap_or_else(|_| "squall_planner::coordinator::drive=warn".into());
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .try_init();
    });
}

pub async fn engine(data: &Path, pairs: &[(&str, &str)]) -> Engine {
    log_if_asked();
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

/// Each pair's first SQL run by `engine` answers as single-node DataFusion
/// answers the second (the same rows written another way, where DataFusion
/// cannot run the first); `setting` names the engine's settings.
pub async fn assert_pairs(
    engine: &Engine,
    reference: &SessionContext,
    pairs: &[(&str, &str)],
    setting: &str,
) {
    for (sql, same) in pairs {
        assert_eq!(
            squall_csv(engine, sql).await,
            single_node_csv(reference, same).await,
            "{sql} ({setting})"
        );
    }
}

/// The one value of `sql`'s one row, as single-node DataFusion answers it
/// (a count, for an expected answer built from counts).
pub async fn single_node_value(ctx: &SessionContext, sql: &str) -> String {
    single_node_csv(ctx, sql)
        .await
        .lines()
        .nth(1)
        .expect("a value")
        .to_string()
}

pub async fn single_node_csv(ctx: &SessionContext, sql: &str) -> String {
    let df = ctx.sql(sql).await.expect("single-node plan");
    let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
    let batches = df.collect().await.expect("single-node run");
    to_csv(&schema, &batches).expect("csv")
}

/// How `actual`, TPC-H query `q`'s result as CSV at SF 0.1, differs from
/// the TPC-H answer and from single-node DataFusion's (`reference`): one
/// line per difference, none when it is right.
pub async fn tpch_sf01_differences(
    reference: &SessionContext,
    q: usize,
    actual: &str,
) -> Vec<String> {
    let sql = squall_tpch::query(q).expect("query");
    let answer = squall_tpch::expected_answer(0.1, q).expect("answer");
    let df = single_node_csv(reference, sql).await;
    let mut out = Vec::new();
    for (oracle, expected) in [("answers", answer), ("DataFusion", df.as_str())] {
        let c = compare_csv(expected, actual, Some(sql)).expect("comparable CSV");
        if !c.ok {
            out.push(format!("q{q:02} vs {oracle}: {}", c.message));
        }
    }
    out
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

/// Statements beyond TPC-H (the `sql` module's suite; the plan checks of
/// `windows` run over them too).
pub const ASSORTED_SQL: &[&str] = &[
    "select 1 as one, 'a' as s",
    "values (1, 'x'), (2, null)",
    "select count(*) from lineitem where l_quantity > 1000",
    "select * from nation where n_nationkey < 0",
    "select n_name, r_name from nation left join region on n_regionkey = r_regionkey and r_name like 'A%' order by n_name",
    "select r_name, (select count(*) from nation n where n.n_regionkey = r.r_regionkey) c from region r order by 1",
    "select c_mktsegment, count(*), avg(c_acctbal) from customer group by c_mktsegment order by 1",
    "select o_orderpriority, count(distinct o_custkey) from orders group by 1 order by 1",
    "select * from (select l_orderkey, row_number() over (partition by l_orderkey order by l_linenumber desc) rn from lineitem) where rn = 1 order by l_orderkey limit 20",
    "select n_name from nation union all select r_name from region order by 1",
    "select s_name from supplier where s_suppkey not in (select ps_suppkey from partsupp where ps_availqty < 10) order by 1 limit 5",
    "select c_custkey from customer where not exists (select 1 from orders where o_custkey = c_custkey) order by 1 limit 10",
    "select p_brand, sum(p_retailprice) from part full outer join partsupp on p_partkey = ps_partkey and ps_supplycost > 999 group by p_brand order by 1 limit 5",
    "select l_shipmode, min(l_shipdate), max(l_commitdate) from lineitem group by l_shipmode order by l_shipmode",
    "select count(*) from orders cross join region",
];

/// The eight TPC-H tables `reference` reads, written to `out` (one file a
/// table) with each column selected as `column` writes it (`l_tax AS
/// "L_TAX"`, `cast(l_tax as double) as l_tax`): the same rows in another
/// layout.
pub async fn write_tpch_as(
    reference: &SessionContext,
    out: &Path,
    column: impl Fn(&arrow::datatypes::Field) -> String,
) {
    for table in [
        "customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier",
    ] {
        let schema = reference
            .table_provider(table)
            .await
            .expect("table")
            .schema();
        let columns: Vec<String> = schema.fields().iter().map(|f| column(f)).collect();
        let sql = format!(
            "COPY (SELECT {} FROM {table}) TO '{}/{table}/part-0.parquet' STORED AS PARQUET",
            columns.join(", "),
            out.display()
        );
        reference
            .sql(&sql)
            .await
            .expect("copy plan")
            .collect()
            .await
            .expect("copy");
    }
}

/// The 22 queries answer on `engine` as on `reference`, within the TPC-H
/// comparison's tolerances; `what` names the layout.
pub async fn assert_tpch_as_reference(engine: &Engine, reference: &SessionContext, what: &str) {
    for q in 1..=22 {
        let sql = squall_tpch::query(q).expect("query");
        let expected = single_node_csv(reference, sql).await;
        let actual = squall_csv(engine, sql).await;
        assert_same(&format!("q{q:02} {what}"), &expected, &actual, sql);
    }
}

/// `batch` as a Parquet file at `path`, its folders made.
pub fn write_parquet(path: impl AsRef<Path>, batch: arrow::array::RecordBatch) {
    let path = path.as_ref();
    std::fs::create_dir_all(path.parent().expect("a folder")).expect("folders");
    let file = std::fs::File::create(path).expect("a file");
    let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).expect("a writer");
    w.write(&batch).expect("a batch");
    w.close().expect("written");
}

/// Settings that run a query staged, a task per row group or so.
pub const STAGED: [(&str, &str); 2] = [
    ("squall.query.single_task_bytes", "0"),
    ("squall.scan.target_task_bytes", "16"),
];

/// The folder `from`, copied to `to` (made), files and folders.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        match entry.file_type().unwrap().is_dir() {
            true => copy_dir(&entry.path(), &target),
            false => {
                std::fs::copy(entry.path(), target).unwrap();
            }
        }
    }
}
