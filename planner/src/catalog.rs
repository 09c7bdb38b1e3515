//! Catalogs: a location (a local folder, `file://` URL) whose sub-folders are
//! tables of Parquet files. Each table is a DataFusion listing table; its
//! schema comes from the files' footers.

use std::path::{Path, PathBuf};

use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::{ParquetReadOptions, SessionContext};

/// Register every table of the catalog at `location` with `ctx`.
/// Returns the table names, sorted.
pub async fn register_catalog(ctx: &SessionContext, location: &str) -> Result<Vec<String>> {
    let dir = local_dir(location)?;
    let entries = std::fs::read_dir(&dir).map_err(|e| {
        DataFusionError::Plan(format!("catalog {}: cannot list: {e}", dir.display()))
    })?;
    let mut tables = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| DataFusionError::Plan(format!("catalog {}: {e}", dir.display())))?;
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
                .map_err(|e| DataFusionError::Plan(format!("table {name} at {}: {e}", path.display())))?;
            tables.push(name);
        } else if let Some(stem) = name.strip_suffix(".parquet") {
            ctx.register_parquet(stem, &path.display().to_string(), ParquetReadOptions::default())
                .await
                .map_err(|e| DataFusionError::Plan(format!("table {stem} at {}: {e}", path.display())))?;
            tables.push(stem.to_string());
        }
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
        return Err(DataFusionError::Plan(format!(
            "catalog {location}: only local folders are supported by the embedded backend"
        )));
    }
    let path = PathBuf::from(path);
    let path = path.canonicalize().map_err(|e| {
        DataFusionError::Plan(format!("catalog {}: {e}", path.display()))
    })?;
    if !path.is_dir() {
        return Err(DataFusionError::Plan(format!(
            "catalog {}: not a folder",
            path.display()
        )));
    }
    Ok(path)
}
