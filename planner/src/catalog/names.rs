//! The names SQL gives a catalog's tables.

use datafusion::common::TableReference;

/// The table `name` exactly as written: a folder named `events.v2` is the
/// table `"events.v2"`, not `v2` of a schema `events` (DataFusion reads a
/// name given as text as SQL).
pub fn bare(name: &str) -> TableReference {
    TableReference::bare(name.to_string())
}

/// The SQL names of a catalog's table folders (or files): each in
/// lowercase, as Trino, Hive and Athena present tables, unless two would
/// collide once lowercased (`Orders` and `orders`), which keep their names
/// as they are.
pub fn sql_names(folders: &[String]) -> Vec<String> {
    let mut seen = std::collections::HashMap::<String, usize>::new();
    for f in folders {
        *seen.entry(f.to_lowercase()).or_default() += 1;
    }
    folders
        .iter()
        .map(|f| {
            let lower = f.to_lowercase();
            if seen[&lower] > 1 { f.clone() } else { lower }
        })
        .collect()
}
