//! How the engine configures DataFusion: the session's options squall's
//! distributed plans rely on, and the runtime it plans with.

use datafusion::error::Result;
use datafusion::execution::cache::cache_manager::ListFilesCache;
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::prelude::{SessionConfig, SessionContext};
use squall_core::config::SquallConfig;
use squall_core::requests::{CountingRegistry, RequestCounter};
use std::sync::Arc;

use crate::limits::setting_error;

/// Largest estimated build side (bytes) of a join planned as a broadcast.
pub const BROADCAST_MAX_BYTES: usize = 16 * 1024 * 1024;
/// Largest estimated build side (rows) of a join planned as a broadcast.
pub const BROADCAST_MAX_ROWS: usize = 512 * 1024;

/// DataFusion's runtime as squall plans with it: without DataFusion 55's
/// cache of table listings, which keeps a listing for the process's life
/// by default, so that files and partitions other jobs add (or remove)
/// are read (or not) by the next query, as in Athena. Footers and file
/// statistics stay cached: their caches check each file's size and
/// modification time.
pub fn runtime_builder() -> RuntimeEnvBuilder {
    RuntimeEnvBuilder::new().with_cache_manager(
        datafusion::execution::cache::cache_manager::CacheManagerConfig::default()
            .with_list_files_cache_limit(0),
    )
}

/// DataFusion's object stores (local files, and any registered), saying
/// plainly why a location of another kind cannot be read: DataFusion's
/// own answer to `s3://...` on the embedded backend was an internal error
/// calling itself a bug.
#[derive(Debug, Default)]
pub struct LocalStores(datafusion::execution::object_store::DefaultObjectStoreRegistry);

impl datafusion::execution::object_store::ObjectStoreRegistry for LocalStores {
    fn register_store(
        &self,
        url: &url::Url,
        store: Arc<dyn object_store::ObjectStore>,
    ) -> Option<Arc<dyn object_store::ObjectStore>> {
        self.0.register_store(url, store)
    }

    fn deregister_store(&self, url: &url::Url) -> Result<Arc<dyn object_store::ObjectStore>> {
        self.0.deregister_store(url)
    }

    fn get_store(&self, url: &url::Url) -> Result<Arc<dyn object_store::ObjectStore>> {
        self.0.get_store(url).map_err(|_| {
            let how = match url.scheme() {
                "s3" => {
                    "the embedded backend reads s3:// locations when the catalog is one \
                     (--catalog s3://bucket/prefix) or squall.catalog.allowed_roots names \
                     one, with the environment's AWS configuration; or use --backend aws"
                }
                _ => "the embedded backend reads local files and s3:// locations",
            };
            datafusion::error::DataFusionError::Plan(format!("cannot read {url}: {how}"))
        })
    }
}

/// Session config: squall defaults, the planning options distributed
/// execution relies on, `SQUALL_*` environment variables, then `settings`.
pub fn session_config(settings: &[(String, String)]) -> Result<SessionConfig> {
    let squall = SquallConfig::from_env()?;
    let mut config = SessionConfig::new().with_option_extension(squall);
    {
        let opts = config.options_mut();
        // Scans are split by squall, never by DataFusion at run time; every
        // scan is planned as several partitions so exchanges are always planned.
        opts.optimizer.repartition_file_min_size = 0;
        opts.optimizer.repartition_file_scans = true;
        opts.optimizer.enable_round_robin_repartition = false;
        // Dynamic filters link operators inside one process; squall's stages
        // run in different processes.
        opts.optimizer.enable_dynamic_filter_pushdown = false;
        opts.optimizer.enable_join_dynamic_filter_pushdown = false;
        opts.optimizer.enable_topk_dynamic_filter_pushdown = false;
        opts.optimizer.enable_aggregate_dynamic_filter_pushdown = false;
        // An uncorrelated scalar subquery planned as a physical node shares its
        // result with expressions that may land in other stages; as a join it
        // is an ordinary broadcast.
        opts.optimizer.enable_physical_uncorrelated_scalar_subquery = false;
        // SHOW TABLES, SHOW COLUMNS and information_schema: what clients
        // browse a catalog with. squall registers its own, in Trino's shape
        // (crate::information_schema); DataFusion's would shadow it. Queries
        // reading only it run here (see `reads_only_information_schema`).
        opts.catalog.information_schema = false;
        // Planning's statistics read the footers of a scan's files not yet
        // cached (`catalog::footer_format`): at thousands of files their
        // time is their bytes at the coordinator's network, kept busy by
        // 128 reads in flight (as `split` reads them), not DataFusion's 32.
        opts.set("datafusion.execution.meta_fetch_concurrency", "128")?;
        // `TIMESTAMP WITH TIME ZONE` (a cast, a column type) is a timestamp
        // with a zone, UTC unless it says otherwise, as Trino's session
        // zone is UTC here: DataFusion's default (none) made it a
        // timestamp without a zone, which clients read as a local time.
        opts.execution.time_zone = Some("UTC".to_string());
        // The catalog clients see (SHOW CATALOGS, information_schema's
        // table_catalog, error messages) is squall's, the name Trino
        // clients connect with; any other qualifier resolves to it too.
        opts.catalog.default_catalog = "squall".to_string();
        // NULLs sort last whatever the direction, as Trino and DuckDB sort
        // them (`ORDER BY x DESC` put them first, PostgreSQL's rule): in
        // ORDER BY, windows' and aggregates' orders alike.
        opts.sql_parser.default_null_ordering = "nulls_last".to_string();
        // `0.1` is a DECIMAL, as in Trino (`crate::decimal_literals`).
        opts.sql_parser.parse_float_as_decimal = true;
        // A partitioned join costs squall a shuffle of BOTH sides through the
        // exchange; a broadcast (`CollectLeft`) join costs one read of the
        // small side per probe task and none of the big side, which then
        // joins right after its scan. So squall broadcasts build sides up to
        // larger estimates than single-node DataFusion (1 MiB / 128 Ki rows),
        // where a partitioned join only repartitions in memory. Bounded in
        // absolute terms, so big build sides at any scale stay partitioned.
        opts.optimizer.hash_join_single_partition_threshold = BROADCAST_MAX_BYTES;
        opts.optimizer.hash_join_single_partition_threshold_rows = BROADCAST_MAX_ROWS;
    }
    for (k, v) in settings {
        config
            .options_mut()
            .set(k, v)
            .map_err(|e| setting_error(k, v, e))?;
    }
    Ok(config)
}

/// DataFusion's session with squall's planners ahead of DataFusion's: a
/// row's field by position (DataFusion reads every `[i]` as an array's),
/// `sum` / `avg` of a NULL-typed value,
/// and, before type coercion, the check that a field is read of a row, a
/// difference of dates as days and the check that an interval is not
/// compared with a number.
pub fn session_state(
    config: datafusion::prelude::SessionConfig,
    runtime: std::sync::Arc<datafusion::execution::runtime_env::RuntimeEnv>,
) -> datafusion::execution::SessionState {
    use std::sync::Arc;
    let mut state = datafusion::execution::SessionStateBuilder::new()
        .with_config(config)
        .with_runtime_env(runtime)
        .with_default_features()
        .with_physical_optimizer_rules(crate::scalar_build::physical_optimizer_rules());
    // Delta and Iceberg tables: `STORED AS DELTA` / `ICEBERG`, and a
    // Parquet location holding a Delta log or Iceberg metadata, read as
    // their metadata says.
    if let Some(factories) = state.table_factories() {
        let parquet = factories.get("PARQUET").cloned().unwrap_or_else(|| {
            Arc::new(datafusion::datasource::listing_table_factory::ListingTableFactory::new())
        });
        let logged = Arc::new(crate::catalog::LoggedTableFactory { inner: parquet });
        factories.insert("PARQUET".into(), logged.clone());
        factories.insert("DELTA".into(), logged.clone());
        factories.insert("ICEBERG".into(), logged);
    }
    if let Some(planners) = state.expr_planners() {
        planners.insert(0, Arc::new(crate::row_fields::RowFieldByPosition));
    }
    let mut analyzer = datafusion::optimizer::Analyzer::new();
    analyzer
        .rules
        .insert(0, Arc::new(crate::row_fields::FieldsOfRows));
    analyzer
        .rules
        .insert(1, Arc::new(crate::interval_compare::DateDifferences));
    analyzer
        .rules
        .insert(2, Arc::new(crate::interval_compare::IntervalComparisons));
    analyzer
        .rules
        .insert(3, Arc::new(crate::decimal_literals::FloatsOverDecimals));

    *state.analyzer() = Some(analyzer);
    // Sort keys a functional dependency seems to determine are kept
    // (`crate::sort_keys`); shortcuts apply where they succeed
    // (`crate::shortcuts`).
    let mut optimizer =
        datafusion::optimizer::Optimizer::with_rules(crate::shortcuts::logical_optimizer_rules());
    for rule in optimizer.rules.iter_mut() {
        if rule.name() == crate::sort_keys::REPLACES {
            *rule = Arc::new(crate::sort_keys::DuplicatedExprs);
        }
    }
    *state.optimizer() = Some(optimizer);
    state.build()
}

/// squall's functions, catalog tables and analyzer rules in `ctx`: the
/// SQL squall reads beyond DataFusion's (Trino's functions and values,
/// checked integer arithmetic, `EXISTS` and `UNNEST` as values and rows,
/// one-row subqueries), and its `information_schema` and `system` catalog.
pub fn extend_session(ctx: &SessionContext) -> Result<()> {
    use std::sync::Arc;
    squall_core::scalar_subquery::register(ctx);
    squall_core::series_limit::register(ctx);
    squall_core::value_limit::register(ctx);
    squall_core::trino_udfs::register(ctx);
    crate::series::register(ctx);
    crate::type_of::register(ctx);
    crate::any_name::register(ctx);
    crate::information_schema::register(ctx)?;
    ctx.add_analyzer_rule(Arc::new(crate::ordered_subqueries::OrderedSubqueries));
    // After the rule above, so the sort keys it computes are columns.
    crate::with_ties::register(ctx);
    ctx.add_analyzer_rule(Arc::new(crate::exists_value::ExistsAsValues));
    ctx.add_analyzer_rule(Arc::new(crate::lateral_unnest::LateralUnnest));
    ctx.add_analyzer_rule(Arc::new(crate::nested_correlation::NestedCorrelation));
    ctx.add_analyzer_rule(Arc::new(crate::outer_in_select::OuterInSelect));
    ctx.add_analyzer_rule(Arc::new(crate::outer_in_select::OuterInLateralSelect));
    ctx.add_analyzer_rule(Arc::new(crate::compared_aggregates::ComparedAggregates));
    ctx.add_analyzer_rule(Arc::new(crate::correlated_limit::CorrelatedLimits));
    ctx.add_analyzer_rule(Arc::new(crate::map_keys::MapKeyTypes));
    ctx.add_analyzer_rule(Arc::new(crate::trino_values::TrinoValues));
    crate::decimal_division::register(ctx);
    crate::distinct_keys::register(ctx);
    crate::ignore_nulls::register(ctx);
    ctx.add_analyzer_rule(Arc::new(crate::scalar_subquery::OneRowSubqueries));
    // After type coercion and the rules above, so every operand is typed.
    crate::checked_arithmetic::register(ctx)
}

/// `base` with every object store request counted in `requests`, and
/// table listings read from and kept in `listings` if given (see
/// [`crate::catalog::RecentListings`]; `base` has no list cache).
pub(super) fn counting_runtime(
    base: &Arc<RuntimeEnv>,
    requests: &Arc<RequestCounter>,
    listings: Option<Arc<ListFilesCache>>,
) -> Result<Arc<RuntimeEnv>> {
    let mut builder = RuntimeEnvBuilder::from_runtime_env(base).with_object_store_registry(
        Arc::new(CountingRegistry::new(
            Arc::clone(&base.object_store_registry),
            Arc::clone(requests),
        )),
    );
    if let Some(cache) = listings {
        let limit = cache.cache_limit();
        builder.cache_manager = builder
            .cache_manager
            .with_list_files_cache(Some(cache))
            .with_list_files_cache_limit(limit);
    }
    builder.build_arc()
}
