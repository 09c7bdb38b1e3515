//! Catalogs: a location (a local folder, `file://` URL) whose sub-folders are
//! tables of Parquet files. Each table is a DataFusion listing table; its
//! schema comes from the files' footers.

use crate::error::PlannerError;
use std::path::{Path, PathBuf};

use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::{ParquetReadOptions, SessionContext};

/// Register every table of the catalog at `location` with `ctx`.
/// Returns the table names, sorted.
pub async fn register_catalog(ctx: &SessionContext, location: &str) -> Result<Vec<String>> {
    if let Some(rest) = location.strip_prefix("s3://") {
        return register_object_store_catalog(ctx, rest).await;
    }
    let dir = local_dir(location)?;
    let entries = std::fs::read_dir(&dir).map_err(|e| {
        DataFusionError::from(PlannerError::Catalog {
            location: dir.display().to_string(),
            message: format!("cannot list: {e}"),
        })
    })?;
    let mut tables = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| catalog_error(&dir.display().to_string(), e))?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().to_string();
        if name.starts_with('.') || name.starts_with('_') {
            continue;
        }
        if path.is_dir() {
            if !has_parquet(&path) {
                continue;
            }
            let url = format!("{}/", path.display());
            ctx.register_parquet(&name, &url, ParquetReadOptions::default())
                .await
                .map_err(|e| table_error(&name, &path.display().to_string(), e))?;
            tables.push(name);
        } else if let Some(stem) = name.strip_suffix(".parquet") {
            ctx.register_parquet(
                stem,
                &path.display().to_string(),
                ParquetReadOptions::default(),
            )
            .await
            .map_err(|e| table_error(stem, &path.display().to_string(), e))?;
            tables.push(stem.to_string());
        }
    }
    tables.sort();
    Ok(tables)
}

/// A catalog in S3: `bucket/prefix`, whose "sub-folders" (common prefixes) are tables.
async fn register_object_store_catalog(ctx: &SessionContext, rest: &str) -> Result<Vec<String>> {
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    let prefix = prefix.trim_matches('/');
    let url = datafusion::execution::object_store::ObjectStoreUrl::parse(format!("s3://{bucket}"))?;
    let store = ctx.runtime_env().object_store(&url)?;
    let prefix_path = object_store::path::Path::from(prefix);
    let listing = store
        .list_with_delimiter(if prefix.is_empty() {
            None
        } else {
            Some(&prefix_path)
        })
        .await
        .map_err(|e| catalog_error(&format!("s3://{rest}"), format!("cannot list: {e}")))?;
    let mut tables = Vec::new();
    for table_prefix in listing.common_prefixes {
        let Some(name) = table_prefix.filename().map(str::to_string) else {
            continue;
        };
        if name.starts_with('.') || name.starts_with('_') {
            continue;
        }
        let table_url = format!("s3://{bucket}/{table_prefix}/");
        ctx.register_parquet(&name, &table_url, ParquetReadOptions::default())
            .await
            .map_err(|e| table_error(&name, &table_url, e))?;
        tables.push(name);
    }
    if tables.is_empty() {
        return Err(catalog_error(
            &format!("s3://{rest}"),
            "no tables (sub-folders of Parquet files) found",
        ));
    }
    tables.sort();
    Ok(tables)
}

fn has_parquet(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .any(|e| e.file_name().to_string_lossy().ends_with(".parquet"))
        })
        .unwrap_or(false)
}

/// The local folder of a catalog location.
pub fn local_dir(location: &str) -> Result<PathBuf> {
    let path = location.strip_prefix("file://").unwrap_or(location);
    if location.contains("://") && !location.starts_with("file://") {
        return Err(catalog_error(
            location,
            "only local folders are supported by the embedded backend",
        ));
    }
    let path = PathBuf::from(path);
    let path = path
        .canonicalize()
        .map_err(|e| catalog_error(&path.display().to_string(), e))?;
    if !path.is_dir() {
        return Err(catalog_error(&path.display().to_string(), "not a folder"));
    }
    Ok(path)
}

fn catalog_error(location: &str, message: impl std::fmt::Display) -> DataFusionError {
    PlannerError::Catalog {
        location: location.to_string(),
        message: message.to_string(),
    }
    .into()
}

fn table_error(table: &str, location: &str, message: impl std::fmt::Display) -> DataFusionError {
    PlannerError::Table {
        table: table.to_string(),
        location: location.to_string(),
        message: message.to_string(),
    }
    .into()
}
