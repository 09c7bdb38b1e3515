//! [`Engine`]: the embedded entry point. It owns a session (catalog and
//! settings; `SET` persists across statements), plans each query with
//! DataFusion, cuts it into stages, splits scans into row-group tasks and
//! hands the job to the coordinator over the configured backend.
//!
//! ```text
//! SQL -> LogicalPlan -> physical plan -> stages (stages.rs) -> key filters (key_filter.rs)
//!     -> tasks (split.rs) -> combine stages (two_level.rs)
//!     -> encoded and checked stage plans (plan_check.rs)
//!     -> coordinator (run_query) -> result batches + profile
//! ```
//!
//! `EXPLAIN` is the staged plan with task counts; `EXPLAIN ANALYZE` runs the
//! query and returns its profile. DDL and `SET` run in the session.
//!
//! A coordinator run that reaches `squall.coordinator.max_run_secs` hands
//! its query over (`coordinator::checkpoint`): the engine plans the same
//! statement again and resumes it in process, unless the caller resumes
//! hand-offs itself ([`RunOptions::return_handoffs`]: the coordinator
//! function, which invokes itself with [`RunOptions::resume`]).
//!
//! Planning (and DDL, which DataFusion runs itself) is CPU work: it runs on
//! the CPU executor ([`squall_core::executor`]); the coordinator's loop
//! stays on the caller's runtime, where cancels, timers and task reports
//! are never kept waiting by a busy plan.

mod catalog_requests;
#[path = "engine/config.rs"]
mod config;
#[path = "engine/dml.rs"]
mod dml;
#[path = "engine/here.rs"]
mod here;
#[path = "engine/prepare.rs"]
mod prepare;
mod request_scope;
use crate::error::PlannerError;
use crate::explain;
pub use config::{BROADCAST_MAX_BYTES, BROADCAST_MAX_ROWS, runtime_builder, session_config};
use here::reads_only_information_schema;
pub(crate) use here::show_as_query;
use prepare::{on_cpu, planning_cancel};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use datafusion::error::Result;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::execution::{SessionState, SessionStateBuilder, TaskContext};
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::Statement;
use squall_core::allocator::QueryMemory;
use squall_core::config::SquallConfig;
use squall_core::executor::{join_error_text, spawn_cpu};
use squall_core::requests::{RequestCounter, RequestCounts};
use squall_core::scan::{Leaf, leaves};

use crate::backend::Backend;
use crate::backend::local::LocalBackend;
use crate::catalog::{RecentListings, register_catalog_with};
use crate::coordinator::{
    FilterShipping, HandedOver, Handoff, QueryJob, QueryProgress, QueryRun, Resume,
    run_query_or_hand_over,
};
use crate::key_filter::place_key_filters;
use crate::limits::{
    Deadline, apply_session_settings, check_session_setting, statement_timeout, timeout_error,
    until_cancelled,
};
use crate::locations::AllowedRoots;
use crate::partitions::{PartitionCount, PartitionRegistry};
use crate::plan_check::encode_checked;
use crate::profile::QueryProfile;
pub use crate::result_stream::{ResultBatches, StreamedResult};
use crate::split::{FooterCache, assign_tasks, scan_units};
use crate::stages::{StagedPlan, TaskLayout, split_stages};
use crate::task_settings::changed_settings;
use crate::two_level::place_combine_stages;
pub use tokio_util::sync::CancellationToken;

/// How to build an engine.
#[derive(Debug, Clone, Default)]
pub struct EngineOptions {
    /// Catalog location: a folder whose sub-folders are tables.
    pub catalog: Option<String>,
    /// `key=value` settings (`squall.*`, `datafusion.*`), applied after the environment.
    pub settings: Vec<(String, String)>,
}

/// Per-query options of [`Engine::sql_with`].
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Settings for this query only (`squall.*`, `datafusion.*`).
    pub settings: Vec<(String, String)>,
    /// Cancels the query and stops its tasks.
    pub cancel: CancellationToken,
    /// Updated while the query runs.
    pub progress: Arc<QueryProgress>,
    /// The id the query runs under (its queue, exchange objects, stop marker
    /// and task logs) when the SQL is one statement; a fresh id otherwise.
    pub query_id: Option<String>,
    /// Resume the query (`query_id`) from the checkpoint a run of it handed
    /// over: its finished tasks are not run again.
    pub resume: Option<Resume>,
    /// A run that hands its query over returns [`Outcome::HandedOver`] (a
    /// single statement's) instead of being resumed in process.
    pub return_handoffs: bool,
    /// The client's user, catalog and schema (`current_user`, ...).
    pub identity: crate::trino_functions::SessionIdentity,
}

/// How a statement ended.
// One per query run, moved a few times: its size does not matter.
#[allow(clippy::large_enum_variant)]
pub enum Outcome {
    Finished(StreamedResult),
    /// Its coordinator run handed the query over (see [`RunOptions::return_handoffs`]).
    HandedOver(HandedOver),
}

/// The result of one statement.
#[derive(Debug, Clone)]
pub struct QueryResult {
    pub schema: SchemaRef,
    pub batches: Vec<RecordBatch>,
    /// Present when the statement ran distributed.
    pub profile: Option<QueryProfile>,
}

/// A squall engine: a session plus the backend its queries run on.
pub struct Engine {
    ctx: SessionContext,
    backend: Backend,
    /// The embedded backend's own parts, when it runs on that backend.
    local: Option<LocalBackend>,
    footers: Arc<FooterCache>,
    /// The requests registering the catalog makes (its listing, and each
    /// table's listings, footers and text rows when a statement first
    /// names it), and how many of them queries were charged: each query's
    /// planning counts those made since the last query was planned.
    catalog_requests: Arc<RequestCounter>,
    catalog_charged: std::sync::Mutex<RequestCounts>,
    /// The listings registering tables made, read by the planning of the
    /// statement that named them.
    listings: RecentListings,
    /// How many partitions each partitioned table has (EXPLAIN, the profile).
    partitions: Arc<PartitionRegistry>,
    /// Where SQL may name locations (`squall.catalog.allowed_roots`).
    roots: AllowedRoots,
    /// Whether the engine lives for one request only (the aws backend's
    /// coordinator): a request's last statement whose effect would live
    /// only in its memory is refused ([`request_scope`]).
    one_request: bool,
}

impl Engine {
    /// An engine on the embedded backend.
    pub async fn local(options: EngineOptions) -> Result<Self> {
        Self::local_with_stores(options, None).await
    }

    /// An engine on the embedded backend whose tables' object stores
    /// `stores` resolves (`s3://` ones for a catalog in S3, see
    /// `squall_aws::embedded_engine`); DataFusion's default (local files)
    /// when `None`.
    pub async fn local_with_stores(
        options: EngineOptions,
        stores: Option<Arc<dyn datafusion::execution::object_store::ObjectStoreRegistry>>,
    ) -> Result<Self> {
        let config = session_config(&options.settings)?;
        let squall = SquallConfig::from_session(&config);
        let mut runtime = runtime_builder().with_memory_pool(squall_core::memory::process_pool(
            squall.process_memory_bytes,
        ));
        runtime = runtime.with_object_store_registry(
            stores.unwrap_or_else(|| Arc::new(config::LocalStores::default())),
        );
        let runtime = runtime.build_arc()?;
        let local = LocalBackend::create(&squall, Arc::clone(&runtime))?;
        Self::build(options, runtime, local.backend.clone(), Some(local)).await
    }

    /// An engine over another backend (the aws one is `squall_aws::aws_engine`).
    /// `runtime` must resolve the object store URLs of the catalog and of the
    /// exchange.
    pub async fn with_backend(
        options: EngineOptions,
        runtime: Arc<RuntimeEnv>,
        backend: Backend,
    ) -> Result<Self> {
        Self::build(options, runtime, backend, None).await
    }

    async fn build(
        options: EngineOptions,
        runtime: Arc<RuntimeEnv>,
        backend: Backend,
        local: Option<LocalBackend>,
    ) -> Result<Self> {
        let config = session_config(&options.settings)?;
        let squall = SquallConfig::from_session(&config);
        let roots =
            AllowedRoots::from_setting(&squall.catalog.allowed_roots, options.catalog.as_deref())?;
        let ctx = SessionContext::new_with_state(config::session_state(config, runtime));
        config::extend_session(&ctx)?;
        let partitions = Arc::new(PartitionRegistry::default());
        let requests = RequestCounter::new();
        let listings = RecentListings::default();
        if let Some(catalog) = &options.catalog {
            // Registered through a session sharing `ctx`'s catalog whose
            // stores count requests, its listings kept for the statement
            // naming the table.
            let runtime =
                config::counting_runtime(&ctx.runtime_env(), &requests, Some(listings.cache()))?;
            let state = SessionStateBuilder::new_from_existing(ctx.state())
                .with_runtime_env(runtime)
                .build();
            register_catalog_with(&SessionContext::new_with_state(state), catalog, &partitions)
                .await?;
        }
        Ok(Self {
            ctx,
            backend,
            local,
            footers: FooterCache::shared(),
            catalog_requests: requests,
            catalog_charged: std::sync::Mutex::default(),
            listings,
            partitions,
            roots,
            one_request: false,
        })
    }

    /// This engine, built for one request only (the aws backend builds one
    /// per request): a request's last statement that would change only
    /// its memory (create a table, change a created table's rows) is
    /// refused rather than reported done.
    pub fn for_one_request(mut self) -> Self {
        self.one_request = true;
        self
    }

    /// The session (catalog, settings).
    /// How many partitions each partitioned table has (for a catalog
    /// registered from outside the engine, such as Glue's).
    pub fn partition_registry(&self) -> &PartitionRegistry {
        &self.partitions
    }

    pub fn context(&self) -> &SessionContext {
        &self.ctx
    }

    /// Embedded backend: the folder holding exchange objects (empty on others).
    pub fn exchange_root(&self) -> &std::path::Path {
        self.local
            .as_ref()
            .map(|l| l.exchange_root())
            .unwrap_or(std::path::Path::new(""))
    }

    /// Embedded backend: completion queues currently open (one per running query).
    pub fn open_queues(&self) -> usize {
        self.local
            .as_ref()
            .map(|l| l.queue.open_queues())
            .unwrap_or(0)
    }

    /// Embedded backend: tasks invoked and not finished.
    pub fn running_tasks(&self) -> usize {
        self.local
            .as_ref()
            .map(|l| l.invoker.running())
            .unwrap_or(0)
    }

    /// The backend's seams.
    pub fn backend(&self) -> &Backend {
        &self.backend
    }

    /// Run one or more `;`-separated statements; returns the last one's result.
    pub async fn sql(&self, sql: &str) -> Result<QueryResult> {
        self.sql_with(sql, &RunOptions::default()).await
    }

    /// [`Engine::sql`] with per-query settings, cancellation and progress.
    pub async fn sql_with(&self, sql: &str, options: &RunOptions) -> Result<QueryResult> {
        self.sql_stream(sql, options).await?.collect().await
    }

    /// [`Engine::sql_with`], the last statement's rows left where the query
    /// wrote them, to be read one batch at a time: a result far larger than
    /// memory is never held whole.
    pub async fn sql_stream(&self, sql: &str, options: &RunOptions) -> Result<StreamedResult> {
        match self.sql_or_hand_over(sql, options).await? {
            Outcome::Finished(result) => Ok(result),
            Outcome::HandedOver(h) => {
                let query_id = h.query_id().to_string();
                h.abandon().await;
                Err(PlannerError::Internal(format!(
                    "query {query_id}: handed over to a caller of sql_stream, which does not resume it"
                ))
                .into())
            }
        }
    }

    /// [`Engine::sql_stream`], or the statement's query handed over when
    /// `options.return_handoffs` asks for it.
    pub async fn sql_or_hand_over(&self, sql: &str, options: &RunOptions) -> Result<Outcome> {
        // A prepared statement's DESCRIBE, as the HTTP API sends it.
        if let Some(query) = crate::describe_prepared::answering(&self.ctx, sql, options).await? {
            return Box::pin(self.sql_or_hand_over(&query, options)).await;
        }
        let statements = crate::trino_sql::parse(sql)?;
        if statements.is_empty() {
            return Err(PlannerError::NoStatement.into());
        }
        let single = statements.len() == 1;
        // Only a single statement is handed over to the caller, or resumed
        // from a checkpoint.
        let options = &RunOptions {
            return_handoffs: options.return_handoffs && single,
            resume: options.resume.clone().filter(|_| single),
            ..options.clone()
        };
        let mut last = None;
        let count = statements.len();
        for (i, statement) in statements.into_iter().enumerate() {
            // A run that resumes plans its query whatever: its coordinator
            // loop ends it, stopping the tasks and deleting its objects.
            if options.cancel.is_cancelled() && options.resume.is_none() {
                return Err(PlannerError::Cancelled { query_id: None }.into());
            }
            let query_id = options
                .query_id
                .clone()
                .filter(|_| single)
                .unwrap_or_else(new_query_id);
            match last.take() {
                Some(Outcome::Finished(earlier)) => earlier.batches.discard().await,
                Some(handed @ Outcome::HandedOver(_)) => return Ok(handed),
                None => {}
            }
            if self.one_request
                && i + 1 == count
                && let Some(refused) =
                    request_scope::lost_with_the_request(&self.ctx, &statement).await
            {
                return Err(refused);
            }
            // On the heap: a statement's future is large (planning, the
            // coordinator loop), and callers' own futures hold this one.
            last = Some(Box::pin(self.statement(statement, options, &query_id)).await?);
        }
        last.ok_or_else(|| PlannerError::NoStatement.into())
    }

    /// One statement under its limits: the session's settings checked and
    /// applied, then planning and execution under the statement timeout.
    async fn statement(
        &self,
        statement: Statement,
        options: &RunOptions,
        query_id: &str,
    ) -> Result<Outcome> {
        let mut state = self.ctx.state();
        apply_session_settings(state.config_mut(), &options.settings)?;
        let timeout = statement_timeout(state.config());
        // A query resumed from a checkpoint has used some of its time.
        let used = Duration::from_millis(options.resume.as_ref().map_or(0, |r| r.elapsed_ms));
        let deadline = Deadline::new(&options.cancel, timeout.map(|t| t.saturating_sub(used)));
        let options = RunOptions {
            cancel: deadline.token.clone(),
            ..options.clone()
        };
        let started = Instant::now();
        let result = self
            .run_statement(state, statement, &options, query_id, started)
            .await;
        match (result, timeout) {
            (Err(_), Some(timeout)) if deadline.expired() => Err(timeout_error(query_id, timeout)),
            // The timeout covers reading the result too.
            (Ok(Outcome::Finished(mut r)), Some(timeout)) => {
                let at = started + timeout.saturating_sub(used);
                r.batches = r.batches.with_deadline(at, query_id, timeout);
                Ok(Outcome::Finished(r))
            }
            (result, _) => result,
        }
    }

    /// `began`: when the statement began (listings made since are its own).
    async fn run_statement(
        &self,
        state: SessionState,
        statement: Statement,
        options: &RunOptions,
        query_id: &str,
        began: Instant,
    ) -> Result<Outcome> {
        let cancel = &planning_cancel(options);
        // Statements squall answers itself, Trino's SQL written as
        // DataFusion's, then DataFusion's plan: on the CPU pool.
        let planned = on_cpu(cancel, {
            let state = state.clone();
            let ctx = self.ctx.clone();
            let identity = options.identity.clone();
            async move {
                if let Some(refused) = request_scope::transaction(&statement) {
                    return Err(refused);
                }
                if let Some(done) = here::rename_table(&ctx, &statement).await {
                    return done.map(Err);
                }
                if let Some(done) = dml::change_with_subquery(&ctx, &statement).await {
                    return done.map(Err);
                }
                crate::replan::plan_as_trino(&ctx, &state, statement, &identity)
                    .await
                    .map(Ok)
                    .map_err(crate::signature_errors::plain)
            }
        })
        .await?;
        let plan = match planned {
            Ok(plan) => plan,
            Err(done) => return Ok(done),
        };
        self.roots.check_plan(&plan)?;
        if let LogicalPlan::Statement(datafusion::logical_expr::Statement::SetVariable(set)) = &plan
            && let Some((key, _)) = crate::trino_session::as_setting(&set.variable, &set.value)?
        {
            check_session_setting(&key)?;
        }
        match plan {
            LogicalPlan::Explain(explain) => {
                let input = explain.plan.as_ref().clone();
                let (staged, job) = self
                    .prepare(state.clone(), input, options, query_id, began)
                    .await?;
                explain::text_result(vec![("distributed_plan", explain::planned(&staged, &job))])
                    .map(Outcome::Finished)
            }
            LogicalPlan::Analyze(analyze) => {
                let input = analyze.input.as_ref().clone();
                let (staged, out) = match self
                    .run_plan(state, input, options, query_id, began)
                    .await?
                {
                    (staged, QueryRun::Finished(out)) => (staged, out),
                    (_, QueryRun::HandedOver(h)) => return Ok(Outcome::HandedOver(h)),
                };
                out.result.discard().await;
                explain::text_result(vec![
                    ("distributed_plan", explain::analyzed(&staged, &out.profile)),
                    ("profile", out.profile.display()),
                ])
                .map(Outcome::Finished)
            }
            LogicalPlan::Copy(copy) => {
                let keep = state.config_options().execution.keep_partition_by_columns;
                let plan = crate::partitions::nulls_as_hive_folders(copy, keep)?;
                self.run_here(plan, cancel).await
            }
            LogicalPlan::Ddl(datafusion::logical_expr::DdlStatement::CreateCatalogSchema(
                create,
            )) => self.create_schema(&create),
            // Trino answers INSERT, UPDATE and DELETE with one BIGINT,
            // `rows` (DataFusion: an unsigned `count`, a DECIMAL(20,0) to
            // Trino's clients).
            plan @ LogicalPlan::Dml(_) => {
                let rows = datafusion::logical_expr::LogicalPlanBuilder::from(plan)
                    .project([datafusion::prelude::cast(
                        datafusion::prelude::col("count"),
                        arrow::datatypes::DataType::Int64,
                    )
                    .alias("rows")])?
                    .build()?;
                self.run_here(rows, cancel).await
            }
            plan @ (LogicalPlan::Ddl(_) | LogicalPlan::Statement(_)) => {
                self.run_here(plan, cancel).await
            }
            plan if reads_only_information_schema(&plan) => {
                self.run_read_here(state, plan, cancel).await
            }
            // Constants (`SELECT 1`, `VALUES`, `SELECT NULL UNION ALL ...`)
            // read nothing for a worker to share: answered here.
            plan if here::reads_no_table(&plan) => self.run_read_here(state, plan, cancel).await,
            plan => {
                let (staged, out) =
                    match self.run_plan(state, plan, options, query_id, began).await? {
                        (staged, QueryRun::Finished(out)) => (staged, out),
                        (_, QueryRun::HandedOver(h)) => return Ok(Outcome::HandedOver(h)),
                    };
                let schema = staged
                    .final_stage()
                    .and_then(|s| s.plan.children().first().map(|c| c.schema()))
                    .ok_or_else(|| PlannerError::Internal("empty staged plan".into()))?;
                Ok(Outcome::Finished(StreamedResult {
                    schema,
                    batches: ResultBatches::Objects(out.result),
                    profile: Some(out.profile),
                }))
            }
        }
    }

    /// Plans `plan` and runs it; a run that hands the query over is resumed
    /// here (the same statement planned again, its checkpoint restored)
    /// unless `options.return_handoffs` gives it to the caller.
    async fn run_plan(
        &self,
        state: SessionState,
        plan: LogicalPlan,
        options: &RunOptions,
        query_id: &str,
        began: Instant,
    ) -> Result<(StagedPlan, QueryRun)> {
        // Once no query runs, the memory this one freed goes back to the system.
        let _memory = QueryMemory::enter(
            SquallConfig::from_session(state.config())
                .query
                .release_free_bytes,
        );
        let mut options = options.clone();
        loop {
            let started = Instant::now();
            let (staged, mut job) = self
                .prepare(state.clone(), plan.clone(), &options, query_id, began)
                .await?;
            job.handoff = Handoff::new(&job.config, started, options.resume.clone());
            match run_query_or_hand_over(job, &self.backend).await? {
                QueryRun::HandedOver(h) if !options.return_handoffs => {
                    tracing::info!(
                        query_id,
                        generation = h.resume.generation,
                        "resuming the query in process"
                    );
                    options.resume = Some(h.resume.clone());
                }
                run => return Ok((staged, run)),
            }
        }
    }
}

fn new_query_id() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("q{}", &id[..16])
}
