//! A table's listing made when a statement names it, read again by that
//! statement's planning rather than listed a third time.
//!
//! Registering a table lists its folder (its layout: partition columns,
//! which files hold rows); its schema inference and planning's scan then
//! listed it again, each with DataFusion's own LIST. The aws backend
//! registers every table a request names, so each query listed its tables
//! three times: at 100,000 files, 300 sequential LIST pages (seconds)
//! before planning could start. Now the registration's listing is kept
//! in the registration's list cache ([`RecentListings`]), where schema
//! inference reads it, and each statement's planning reads the listings
//! made since the statement began, in a list cache of its own that lives
//! as long as its planning ([`RecentListings::for_statement`]).
//!
//! Nothing is read from an older listing: a statement naming a table
//! registered by an earlier one lists it at planning, as before, so files
//! other jobs add or remove are seen by the next statement. A statement
//! reading a table twice (a self-join, a subquery) reads one listing of
//! it, as it would read one snapshot of a table in a database.

use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::common::{HashMap, TableReference};
use datafusion::datasource::listing::ListingTableUrl;
use datafusion::error::Result;
use datafusion::execution::cache::cache_manager::{CachedFileList, ListFilesCache};
use datafusion::execution::cache::default_cache::DefaultCache;
use datafusion::execution::cache::{Cache, CacheEntryInfo, TableScopedPath};
use datafusion::prelude::SessionContext;
use object_store::ObjectMeta;

/// How long a registration's listing is kept for the statement that made
/// it (a statement plans within moments of naming its tables; an entry
/// not taken by then is dropped).
const KEPT_FOR: Duration = Duration::from_secs(60);

/// The bytes of listings kept (DataFusion counts about 100 bytes per
/// listed object: some 2.5 million objects).
const LISTED_BYTES: usize = 256 * 1024 * 1024;

/// The listings registrations made, each kept [`KEPT_FOR`].
#[derive(Clone)]
pub struct RecentListings(Arc<Registrations>);

impl Default for RecentListings {
    fn default() -> Self {
        Self(Arc::new(Registrations(
            DefaultCache::new_with_ttl(LISTED_BYTES, Some(KEPT_FOR))
                .with_name("squall registrations' listings"),
        )))
    }
}

/// The list cache of the runtime tables are registered with: DataFusion's,
/// except that a table deregistered keeps its listing (registering a
/// table deregisters it to wrap it, and to hand it to the catalog; the
/// listing is still the table's).
struct Registrations(DefaultCache<TableScopedPath, CachedFileList>);

impl Cache<TableScopedPath, CachedFileList> for Registrations {
    fn get(&self, key: &TableScopedPath) -> Option<CachedFileList> {
        self.0.get(key)
    }
    fn put(&self, key: &TableScopedPath, value: CachedFileList) -> Option<CachedFileList> {
        self.0.put(key, value)
    }
    fn remove(&self, key: &TableScopedPath) -> Option<CachedFileList> {
        self.0.remove(key)
    }
    fn contains_key(&self, key: &TableScopedPath) -> bool {
        self.0.contains_key(key)
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn clear(&self) {
        self.0.clear()
    }
    fn name(&self) -> String {
        self.0.name()
    }
    fn cache_limit(&self) -> usize {
        self.0.cache_limit()
    }
    fn update_cache_limit(&self, limit: usize) {
        self.0.update_cache_limit(limit)
    }
    fn cache_ttl(&self) -> Option<Duration> {
        self.0.cache_ttl()
    }
    fn update_cache_ttl(&self, ttl: Option<Duration>) {
        self.0.update_cache_ttl(ttl)
    }
    fn drop_table_entries(&self, _table: &TableReference) -> Result<()> {
        Ok(())
    }
    fn list_entries(&self) -> HashMap<TableScopedPath, CacheEntryInfo<CachedFileList>> {
        self.0.list_entries()
    }
}

impl RecentListings {
    /// The list cache of the runtime tables are registered with.
    pub fn cache(&self) -> Arc<ListFilesCache> {
        Arc::clone(&self.0) as Arc<ListFilesCache>
    }

    /// A list cache for the planning of a statement that began at
    /// `began`, holding the listings made since then; `None` when there is
    /// none (planning lists its tables as DataFusion does, a prefix when a
    /// filter fixes leading partition columns). Listings no statement can
    /// take any more are dropped.
    pub fn for_statement(&self, began: Instant) -> Option<Arc<ListFilesCache>> {
        let now = Instant::now();
        let made_since: Vec<_> = self
            .0
            .list_entries()
            .into_iter()
            .filter_map(|(key, entry)| {
                let made = entry.expires.map(|at| at - KEPT_FOR)?;
                if entry.expires.is_some_and(|at| at <= now) {
                    self.0.0.remove(&key);
                    return None;
                }
                (made >= began).then_some((key, entry.value))
            })
            .collect();
        if made_since.is_empty() {
            return None;
        }
        let statement = DefaultCache::new(LISTED_BYTES).with_name("squall statement's listings");
        for (key, listing) in made_since {
            statement.put(&key, listing);
        }
        Some(Arc::new(statement))
    }
}

/// Keeps `objects`, a table's folder listed (recursively, as DataFusion
/// lists it), as the listing of each of the table's listing `paths` in
/// `ctx`'s list cache, if it has one.
pub(super) fn keep(ctx: &SessionContext, paths: &[ListingTableUrl], objects: &[ObjectMeta]) {
    let Some(cache) = ctx.runtime_env().cache_manager.get_list_files_cache() else {
        return;
    };
    for path in paths {
        let files: Vec<ObjectMeta> = objects
            .iter()
            .filter(|m| m.location.prefix_matches(path.prefix()))
            .cloned()
            .collect();
        let key = TableScopedPath {
            table: path.get_table_ref().clone(),
            path: path.prefix().clone(),
        };
        cache.put(&key, CachedFileList::new(files));
    }
}
