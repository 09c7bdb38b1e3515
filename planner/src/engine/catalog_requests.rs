//! The requests registering the catalog makes: its listing when the
//! engine starts, and each table's listings and footers when a statement
//! first names it. Each query's planning counts those made since the last
//! query was planned (the aws backend's engine lives for one request, so
//! its query is charged for registering what it names).

use std::sync::Arc;

use datafusion::error::Result;
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::SessionContext;
use squall_core::requests::RequestCounts;

use super::{Engine, config};

impl Engine {
    /// Registers a catalog's `tables` from outside the engine (Glue's),
    /// each when a statement first names it, its requests counted as the
    /// catalog's (charged to the naming query's planning).
    pub fn register_deferred(
        &self,
        tables: Vec<(String, Arc<dyn crate::catalog::DeferredTable>)>,
    ) -> Result<()> {
        let state = SessionStateBuilder::new_from_existing(self.ctx.state())
            .with_runtime_env(config::counting_runtime(
                &self.ctx.runtime_env(),
                &self.catalog_requests,
                Some(self.listings.cache()),
            )?)
            .build();
        crate::catalog::register_deferred(
            &SessionContext::new_with_state(state),
            tables,
            &self.partitions,
        )
    }

    /// The catalog's requests not yet charged to a query, now charged.
    pub(super) fn catalog_requests_since_charged(&self) -> RequestCounts {
        let Ok(mut charged) = self.catalog_charged.lock() else {
            return RequestCounts::default();
        };
        let now = self.catalog_requests.snapshot();
        let since = now - *charged;
        *charged = now;
        since
    }
}
