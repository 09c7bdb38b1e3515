//! Data the generator did not write. `squall tpch run --data DIR` generates
//! the tables into DIR when DIR holds no finished data set; a folder of a
//! user's own TPC-H tables (written by DuckDB, Spark, an earlier tool) has
//! no `_SUCCESS` marker of squall's, and generating into it removed its
//! `part-*.parquet` files and mixed the generated files with its others
//! (hive partitions beside flat files: the table could not be read, or
//! answered twice the rows). Now generation refuses a folder holding files
//! it would not have written, and `tpch run` reads such a folder as it is.

use std::fs;
use std::path::{Path, PathBuf};

use super::tables::Table;
use super::{GenError, TABLES};

/// Whether `name` is a file of a table folder the generator writes: a part
/// (`part-0000.parquet`, four digits or more) or its temporary name.
pub fn is_generated_name(name: &str) -> bool {
    let part = |s: &str| {
        s.strip_prefix("part-")
            .and_then(|s| s.strip_suffix(".parquet"))
            .is_some_and(|digits| digits.len() >= 4 && digits.bytes().all(|b| b.is_ascii_digit()))
    };
    part(name)
        || name
            .strip_prefix('.')
            .and_then(|s| s.strip_suffix(".tmp"))
            .is_some_and(part)
}

/// The first entry of a table folder under `dir` that the generator would
/// not have written (another file, a sub-folder), if any.
pub fn first_foreign(dir: &Path) -> Option<PathBuf> {
    TABLES.iter().find_map(|table| {
        let entries = fs::read_dir(dir.join(table)).ok()?;
        let mut foreign: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| !is_generated_name(&e.file_name().to_string_lossy()))
            .map(|e| e.path())
            .collect();
        foreign.sort();
        foreign.into_iter().next()
    })
}

/// The tables of [`TABLES`] with no folder under `dir`.
pub fn missing_tables(dir: &Path) -> Vec<&'static str> {
    TABLES
        .iter()
        .copied()
        .filter(|table| !dir.join(table).is_dir())
        .collect()
}

/// `dir`, the folder of `table`, made if missing, with the files of an
/// earlier generation removed.
pub(super) fn prepare_table_dir(table: Table, dir: &Path) -> Result<(), GenError> {
    let create_err = |source| GenError::CreateDir {
        table: table.name(),
        path: dir.to_path_buf(),
        source,
    };
    fs::create_dir_all(dir).map_err(create_err)?;
    for entry in fs::read_dir(dir).map_err(create_err)? {
        let entry = entry.map_err(create_err)?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if is_generated_name(&name) {
            let path = entry.path();
            fs::remove_file(&path).map_err(|source| GenError::Clean {
                table: table.name(),
                path,
                source,
            })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_names_and_the_rest() {
        for name in [
            "part-0000.parquet",
            "part-12345.parquet",
            ".part-0001.parquet.tmp",
        ] {
            assert!(is_generated_name(name), "{name}");
        }
        for name in [
            "part-015.parquet",
            "part-00000-1b2c.snappy.parquet",
            "data_0.parquet",
            "l_returnflag=A",
            "part-0000.csv",
            "_SUCCESS",
        ] {
            assert!(!is_generated_name(name), "{name}");
        }
    }

    #[test]
    fn a_folder_of_other_files_is_found_out() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(first_foreign(dir.path()), None);
        assert_eq!(missing_tables(dir.path()).len(), 8);
        fs::create_dir_all(dir.path().join("orders")).unwrap();
        fs::write(dir.path().join("orders/part-0000.parquet"), b"").unwrap();
        assert_eq!(first_foreign(dir.path()), None);
        fs::create_dir_all(dir.path().join("lineitem/l_returnflag=A")).unwrap();
        assert_eq!(
            first_foreign(dir.path()),
            Some(dir.path().join("lineitem/l_returnflag=A"))
        );
    }
}
