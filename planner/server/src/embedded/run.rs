//! One query of the [`super::EmbeddedService`] from admission to its end:
//! it runs on the engine, its result is read from the final stage's
//! objects and stored page by page, and its record says how it ended.

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use datafusion::error::DataFusionError;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use squall_planner::RunOptions;
use squall_planner::query_record::{ErrorKind, QueryFailure, QueryRecord};

use super::{Entry, Inner};
use crate::admission::{Admit, Permit};
use crate::paging::paginate_stream;
use crate::service::check_one_statement;
use crate::session::{
    SessionStatement, answer_session_statement, parse_session_statement, session_statement_result,
};

/// What a finished query produced: its pages still to be read (from the
/// final stage's objects) and stored.
pub(super) struct Outcome {
    schema: SchemaRef,
    pages: BoxStream<'static, Result<arrow::array::RecordBatch, DataFusionError>>,
    profile: Option<squall_planner::profile::QueryProfile>,
    update_type: Option<String>,
    update_count: Option<u64>,
    session: crate::service::SessionUpdate,
}

/// Runs one query to its end and records the end.
pub(super) async fn run(inner: Arc<Inner>, entry: Arc<Entry>, admitted: Admit) {
    let store = &*inner.store;
    let permit: Option<Permit> = match admitted {
        Admit::Now(permit) => Some(permit),
        Admit::Queued(waiter) => waiter.wait(&entry.cancel).await,
        Admit::Full => None,
    };
    if permit.is_none() || entry.cancel.is_cancelled() {
        entry.end(store, QueryFailure::canceled()).await;
        return;
    }
    if !entry.change(store, QueryRecord::start).await {
        return;
    }
    let result = execute(&inner, &entry).await;
    let failure = match result {
        // Reading the result from the final stage's objects into the store
        // is still the query's work: its running slot is held until the
        // record says how it ended.
        Ok(outcome) => match store
            .write_result(&entry.id, &outcome.schema, outcome.pages)
            .await
        {
            Ok(index) => {
                let _ = entry.schema.set(outcome.schema);
                entry
                    .change(store, |r| {
                        r.profile = outcome.profile;
                        r.update_type = outcome.update_type;
                        r.update_count = outcome.update_count;
                        r.session_set = outcome.session.set;
                        r.session_clear = outcome.session.clear;
                        r.session_catalog = outcome.session.catalog;
                        r.session_schema = outcome.session.schema;
                        r.finish(index);
                    })
                    .await;
                drop(permit);
                return;
            }
            // The statement's timeout passed while its result was read.
            Err(e) if squall_planner::limits::is_timeout_message(&e.to_string()) => {
                QueryFailure::from_datafusion(&e)
            }
            Err(e) => QueryFailure::new(
                ErrorKind::Internal,
                format!("storing the result of query {}: {e}", entry.id),
            ),
        },
        Err(_) if entry.cancel.is_cancelled() => QueryFailure::canceled(),
        Err(e) => {
            let failure = QueryFailure::from_datafusion(&e);
            // The message can quote the SQL's literals: only at debug level.
            tracing::info!(query_id = %entry.id, kind = ?failure.kind, "query failed");
            tracing::debug!(query_id = %entry.id, error = %failure.message, "query failed");
            failure
        }
    };
    entry.end(store, failure).await;
    drop(permit);
}

async fn execute(inner: &Inner, entry: &Entry) -> Result<Outcome, DataFusionError> {
    if let Some(statement) = parse_session_statement(&entry.sql) {
        return session_statement(inner, statement);
    }
    check_one_statement(&entry.sql)?;
    let options = RunOptions {
        settings: entry.session.properties.clone(),
        identity: entry.session.identity(),
        cancel: entry.cancel.clone(),
        progress: Arc::clone(&entry.progress),
        query_id: Some(entry.id.clone()),
        ..RunOptions::default()
    };
    let result = inner.engine.sql_stream(&entry.sql, &options).await?;
    let update_type = crate::update_type::of(&entry.sql).map(str::to_string);
    let (batches, update_count) = if update_type.is_some() {
        // A statement that changes something answers with a row or none:
        // its count, read here for Trino's `updateCount`.
        let batches: Vec<_> = result.batches.into_stream().try_collect().await?;
        let count = crate::update_type::count_of(&batches);
        (
            futures::stream::iter(batches.into_iter().map(Ok)).boxed(),
            count,
        )
    } else {
        (result.batches.into_stream(), None)
    };
    let pages = paginate_stream(&result.schema, batches, inner.options.page_limits);
    Ok(Outcome {
        profile: result.profile,
        schema: result.schema,
        pages,
        update_type,
        update_count,
        session: Default::default(),
    })
}

/// `SET SESSION` / `RESET SESSION`: validated against the engine's settings,
/// answered with `result = true` and a session update for the client.
fn session_statement(
    inner: &Inner,
    statement: SessionStatement,
) -> Result<Outcome, DataFusionError> {
    let config = inner.engine.context().copied_config();
    let (update_type, session) = answer_session_statement(&config, statement)?;
    let batch = session_statement_result()?;
    Ok(Outcome {
        schema: batch.schema(),
        pages: futures::stream::iter([Ok(batch)]).boxed(),
        profile: None,
        update_type: Some(update_type.to_string()),
        update_count: None,
        session,
    })
}
