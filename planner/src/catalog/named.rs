//! A catalog's tables registered when a statement first names them.
//!
//! Registering a table lists its files and reads their schemas (a Parquet
//! file's footer, a text file's first rows). The aws backend builds an
//! engine for every request, and at SF1000 a catalog holds thousands of
//! files: registering every table up front read every footer of every
//! table for each query, whichever tables it named. The catalog's folders
//! are listed up front (one listing of its location); each table is
//! registered the first time a statement names it, once per engine, and
//! its reads are the naming query's planning requests. A table that
//! cannot be read fails the statement naming it with why (the table, its
//! location, the file), and is left out of listings of the catalog; the
//! catalog's other tables answer. A statement naming it 30 s later tries
//! again.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use datafusion::catalog::{SchemaProvider, TableProvider};
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

use super::delta_log::TravelTo;
use super::logged_table::LoggedTable;
use super::{bare, message, present_lowercase, register_table, table_error};
use crate::partitions::PartitionRegistry;

/// Where a catalog table's files are.
#[derive(Debug, Clone)]
pub(super) enum Source {
    /// A folder of files (`url`, in the store `store_url` under `root`).
    Folder {
        url: String,
        store_url: ObjectStoreUrl,
        root: object_store::path::Path,
    },
    /// A single local Parquet file.
    File { location: String },
    /// A table another catalog registers (the aws backend's Glue).
    Deferred(Arc<dyn DeferredTable>),
}

/// A table of a catalog registered by code outside this crate (Glue's
/// tables, where the AWS SDK is) when a statement first names it.
#[async_trait]
pub trait DeferredTable: std::fmt::Debug + Send + Sync {
    /// Registers the table as `name` in `ctx`, a session of the engine's
    /// configuration and runtime holding this table alone, recording its
    /// partitions in `registry`.
    async fn register(
        &self,
        ctx: &SessionContext,
        name: &str,
        registry: &PartitionRegistry,
    ) -> Result<()>;
}

/// The name time travel gives table `base` as of `at` (the SQL's `base
/// FOR VERSION AS OF 3` is read as the table `"base@v3"`,
/// `crate::trino_sql`): `base@v<version>` or `base@t<milliseconds since the
/// epoch>`.
pub(crate) fn travel_name(name: &str) -> Option<(&str, TravelTo)> {
    let (base, point) = name.rsplit_once('@')?;
    let at = match point.split_at_checked(1)? {
        ("v", n) => TravelTo::Version(n.parse().ok()?),
        ("t", ms) => TravelTo::Millis(ms.parse().ok()?),
        _ => return None,
    };
    (!base.is_empty()).then_some((base, at))
}

/// A table of the catalog and, once named, its registration.
struct Named {
    source: Source,
    /// Its registration, and when it was made: a failure is tried again
    /// once [`RETRY_FAILED_AFTER`] has passed (a store's passing refusal
    /// must not set a table aside for a long-running server's life).
    registered: Mutex<Option<(Registration, Instant)>>,
}

type Registration = std::result::Result<Arc<dyn TableProvider>, String>;

/// How long a table whose registration failed stays set aside before a
/// statement naming it tries again.
const RETRY_FAILED_AFTER: Duration = Duration::from_secs(30);

impl Named {
    /// Its registration so far, if any (without waiting for one under way).
    fn known(&self) -> Option<Registration> {
        let registered = self.registered.try_lock().ok()?;
        registered.as_ref().map(|(r, _)| r.clone())
    }
}

/// What registering a table needs: the engine's configuration, runtime
/// (whose stores count the requests) and partition registry.
pub(super) struct Registrar {
    pub config: SessionConfig,
    pub runtime: Arc<RuntimeEnv>,
    pub registry: Arc<PartitionRegistry>,
}

/// The session's schema and the catalog's tables, each registered when
/// first named.
pub(super) struct CatalogTables {
    inner: Arc<dyn SchemaProvider>,
    tables: RwLock<HashMap<String, Arc<Named>>>,
    registrar: Registrar,
    /// Delta and Iceberg tables as of points in their history, by the
    /// names time travel gives them (`orders@v3`: [`travel_name`]).
    travelled: RwLock<HashMap<String, Arc<dyn TableProvider>>>,
}

impl std::fmt::Debug for CatalogTables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = self.tables.read().map(|t| t.len()).unwrap_or_default();
        f.debug_struct("CatalogTables")
            .field("inner", &self.inner)
            .field("catalog_tables", &names)
            .finish()
    }
}

impl CatalogTables {
    pub(super) fn new(
        inner: Arc<dyn SchemaProvider>,
        tables: Vec<(String, Source)>,
        registrar: Registrar,
    ) -> Self {
        let tables = tables
            .into_iter()
            .map(|(name, source)| {
                let named = Named {
                    source,
                    registered: Mutex::new(None),
                };
                (name, Arc::new(named))
            })
            .collect();
        Self {
            inner,
            tables: RwLock::new(tables),
            registrar,
            travelled: RwLock::new(HashMap::new()),
        }
    }

    /// The table `base` as of `at`, under the name `name` time travel gave
    /// it (read once per engine).
    async fn travelled(
        &self,
        name: &str,
        base: &str,
        at: TravelTo,
    ) -> Result<Option<Arc<dyn TableProvider>>> {
        if let Some(table) = self
            .travelled
            .read()
            .ok()
            .and_then(|t| t.get(name).cloned())
        {
            return Ok(Some(table));
        }
        let Some(table) = Box::pin(self.table(base)).await? else {
            return Ok(None);
        };
        // A table presenting its columns in lowercase wraps the table.
        let lowercase = table.downcast_ref::<crate::any_case::LowercaseColumns>();
        let inner = lowercase.map_or(&table, |l| l.inner());
        let Some(logged) = inner.downcast_ref::<LoggedTable>() else {
            return Err(DataFusionError::Plan(format!(
                "table {base} has no history to read: time travel (FOR VERSION AS OF, FOR \
                 TIMESTAMP AS OF) reads Delta and Iceberg tables"
            )));
        };
        let store = self.registrar.runtime.object_store(logged.store_url())?;
        let pinned: Arc<dyn TableProvider> = Arc::new(logged.travelled(store.as_ref(), at).await?);
        let pinned = match lowercase {
            Some(_) => crate::any_case::LowercaseColumns::wrap(Arc::clone(&pinned))
                .map_or(pinned, |l| Arc::new(l) as Arc<dyn TableProvider>),
            None => pinned,
        };
        // A version never changes, nor the table as of a time past; as of
        // a time still to come (or just gone) it may, and is read again.
        let settled = match at {
            TravelTo::Version(_) => true,
            TravelTo::Millis(ms) => ms < chrono::Utc::now().timestamp_millis() - 60_000,
        };
        if settled && let Ok(mut travelled) = self.travelled.write() {
            travelled.insert(name.to_string(), Arc::clone(&pinned));
        }
        Ok(Some(pinned))
    }

    fn named(&self, name: &str) -> Option<Arc<Named>> {
        self.tables.read().ok()?.get(name).cloned()
    }

    /// The table `name`, registered once (a failure again after a while):
    /// its provider, or why it cannot be read.
    async fn registered(&self, name: &str, named: &Named) -> Registration {
        let mut registered = named.registered.lock().await;
        match &*registered {
            Some((Ok(table), _)) => return Ok(Arc::clone(table)),
            Some((Err(why), at)) if at.elapsed() < RETRY_FAILED_AFTER => return Err(why.clone()),
            _ => {}
        }
        let registration = self.register(name, &named.source).await;
        *registered = Some((registration.clone(), Instant::now()));
        registration
    }

    async fn register(
        &self,
        name: &str,
        source: &Source,
    ) -> std::result::Result<Arc<dyn TableProvider>, String> {
        let r = &self.registrar;
        // Registered alone in a session of the engine's configuration, then
        // taken from it.
        let mut config = r.config.clone();
        config
            .options_mut()
            .catalog
            .create_default_catalog_and_schema = true;
        let scratch = SessionContext::new_with_config_rt(config, Arc::clone(&r.runtime));
        let outcome = match source {
            Source::Folder {
                url,
                store_url,
                root,
            } => register_table(&scratch, name, url, store_url, root, &r.registry).await,
            Source::File { location } => scratch
                .register_parquet(bare(name), location, ParquetReadOptions::default())
                .await
                .map_err(|e| table_error(name, location, e))
                .and_then(|()| present_lowercase(&scratch, name))
                .map(|()| None),
            Source::Deferred(table) => table
                .register(&scratch, name, &r.registry)
                .await
                .map(|()| None),
        };
        match outcome {
            Ok(None) => scratch
                .table_provider(bare(name))
                .await
                .map_err(|e| message(&e)),
            Ok(Some(why)) => {
                tracing::debug!(folder = name, %why, "a folder of the catalog is not a table");
                Err(why)
            }
            Err(e) => {
                let why = message(&e);
                tracing::warn!(table = name, %why, "a table of the catalog cannot be read; queries naming it fail");
                Err(why)
            }
        }
    }

    /// Whether `name` is a catalog table not known to be unreadable.
    fn may_be_table(named: &Named) -> bool {
        !matches!(named.known(), Some(Err(_)))
    }
}

#[async_trait]
impl SchemaProvider for CatalogTables {
    fn owner_name(&self) -> Option<&str> {
        self.inner.owner_name()
    }

    fn table_names(&self) -> Vec<String> {
        let mut names = self.inner.table_names();
        if let Ok(tables) = self.tables.read() {
            names.extend(
                tables
                    .iter()
                    .filter(|(n, t)| Self::may_be_table(t) && !self.inner.table_exist(n))
                    .map(|(n, _)| n.clone()),
            );
        }
        names.sort();
        names
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        if let Some(table) = self.inner.table(name).await? {
            return Ok(Some(table));
        }
        if let Some((base, at)) = travel_name(name) {
            return self.travelled(name, base, at).await;
        }
        let Some(named) = self.named(name) else {
            return Ok(None);
        };
        match self.registered(name, &named).await {
            Ok(table) => Ok(Some(table)),
            Err(why) => Err(DataFusionError::Plan(why)),
        }
    }

    /// A table that cannot be read has no type: listings of the catalog
    /// (`SHOW TABLES`, `information_schema.tables`) leave it out.
    async fn table_type(&self, name: &str) -> Result<Option<TableType>> {
        if let Some(table) = self.inner.table(name).await? {
            return Ok(Some(table.table_type()));
        }
        let Some(named) = self.named(name) else {
            return Ok(None);
        };
        Ok(self
            .registered(name, &named)
            .await
            .ok()
            .map(|t| t.table_type()))
    }

    fn register_table(
        &self,
        name: String,
        table: Arc<dyn TableProvider>,
    ) -> Result<Option<Arc<dyn TableProvider>>> {
        let named = self.tables.write().ok().and_then(|mut t| t.remove(&name));
        let earlier = self.inner.register_table(name, table)?;
        Ok(earlier.or_else(|| named.and_then(|n| n.known()?.ok())))
    }

    fn deregister_table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        if let Some(table) = self.inner.deregister_table(name)? {
            return Ok(Some(table));
        }
        let Some(named) = self.tables.write().ok().and_then(|mut t| t.remove(name)) else {
            return Ok(None);
        };
        Ok(match named.known() {
            Some(Ok(table)) => Some(table),
            Some(Err(_)) => None,
            // Not registered yet: gone before it was read.
            None => Some(Arc::new(datafusion::datasource::empty::EmptyTable::new(
                Arc::new(arrow::datatypes::Schema::empty()),
            ))),
        })
    }

    fn table_exist(&self, name: &str) -> bool {
        self.inner.table_exist(name) || self.named(name).is_some_and(|n| Self::may_be_table(&n))
    }
}
