//! The AWS Glue Data Catalog as a catalog: `--catalog glue://DATABASE`.
//!
//! Every Parquet table of the database is registered under its Glue name:
//! an unpartitioned one as a listing table over its location, a partitioned
//! one as a [`ListedPartitionsTable`] over the partitions Glue lists, with
//! the partition keys' Glue types (so, as in Athena, only registered
//! partitions are read, wherever their locations are). As in Athena, a
//! table's files are all the files at its location but hidden (`.x`) and
//! bookkeeping (`_x`) ones, whatever their names: Athena's CTAS and INSERT
//! write names without `.parquet`. A Delta Lake table (`table_type`
//! `DELTA`, as Athena registers one) is read as its log says, an Iceberg
//! one (`ICEBERG`) as its latest metadata in its folder says (their
//! folders hold deleted rows' files too). Tables of other formats are left
//! out, each named in a warning. The client comes from
//! the process's AWS configuration like S3's and SQS's (region,
//! credentials, `AWS_ENDPOINT_URL` for an emulator).
//!
//! Requests: one `GetTables` page per 100 tables when the engine starts,
//! and one `GetPartitions` page per 1,000 partitions of a partitioned table
//! when a statement first names it (the aws backend builds an engine per
//! request: a query reads nothing of the tables it does not name);
//! planning a scan then lists only the kept partitions.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use aws_sdk_glue::types::{Column, Table};
use datafusion::error::Result;
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use squall_planner::Engine;
use squall_planner::catalog::{DeferredTable, present_lowercase, register_files};
use squall_planner::partitions::{
    DataFiles, ListedPartition, ListedPartitionsTable, PartitionRegistry, is_null_folder,
};

use crate::env::AwsEnv;
use crate::error::AwsError;

/// Registers the Parquet tables of Glue database `database` with
/// `engine`, each when a statement first names it (its partitions listed
/// then); returns their names, sorted.
pub async fn register_glue_catalog(
    env: &AwsEnv,
    engine: &Engine,
    database: &str,
) -> Result<Vec<String>> {
    let client = aws_sdk_glue::Client::new(&env.sdk);
    let mut tables = Vec::new();
    let mut pages = client
        .get_tables()
        .database_name(database)
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| glue_error(database, None, crate::error_chain(&e)))?;
        tables.extend(page.table_list().iter().cloned());
    }
    let mut deferred: Vec<(String, Arc<dyn DeferredTable>)> = Vec::new();
    for table in tables {
        let name = table.name().to_string();
        let Some(location) = parquet_location(&table).or_else(|| match table_format(&table) {
            Some(TableFormat::Delta | TableFormat::Iceberg) => {
                table.storage_descriptor().and_then(|sd| sd.location())
            }
            None => None,
        }) else {
            tracing::warn!(database, table = name, "not a Parquet table; left out");
            continue;
        };
        let location = format!("{}/", location.trim_end_matches('/'));
        let glue = GlueTable {
            client: client.clone(),
            database: database.to_string(),
            table,
            location,
        };
        deferred.push((name, Arc::new(glue)));
    }
    if deferred.is_empty() {
        return Err(glue_error(database, None, "no Parquet tables".to_string()).into());
    }
    let mut names: Vec<String> = deferred.iter().map(|(n, _)| n.clone()).collect();
    names.sort();
    engine.register_deferred(deferred)?;
    Ok(names)
}

fn glue_error(database: &str, table: Option<&str>, message: String) -> AwsError {
    AwsError::Glue {
        database: database.to_string(),
        table: table.map(str::to_string),
        message,
    }
}

/// A Parquet table of a Glue database, registered when first named.
struct GlueTable {
    client: aws_sdk_glue::Client,
    database: String,
    table: Table,
    /// Its location, ending with `/`.
    location: String,
}

impl std::fmt::Debug for GlueTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GlueTable")
            .field("database", &self.database)
            .field("table", &self.table.name())
            .field("location", &self.location)
            .finish()
    }
}

#[async_trait::async_trait]
impl DeferredTable for GlueTable {
    async fn register(
        &self,
        ctx: &SessionContext,
        name: &str,
        registry: &PartitionRegistry,
    ) -> Result<()> {
        let (database, table, location) = (&self.database, &self.table, &self.location);
        match table_format(table) {
            Some(TableFormat::Delta) => {
                return squall_planner::catalog::register_delta(ctx, name, location).await;
            }
            Some(TableFormat::Iceberg) => {
                return squall_planner::catalog::register_iceberg(ctx, name, location).await;
            }
            None => {}
        }
        let keys = table
            .partition_keys()
            .iter()
            .map(|c| Ok((c.name().to_string(), arrow_type(database, name, c)?)))
            .collect::<Result<Vec<_>>>()?;
        if keys.is_empty() {
            // Every file but hidden ones, as Athena reads the table (its
            // CTAS writes file names without `.parquet`).
            register_files(
                ctx,
                name,
                location,
                ParquetReadOptions::default(),
                DataFiles::AllVisible,
                &[],
                None,
            )
            .await?;
        } else {
            let mut partitions = Vec::new();
            let mut pages = self
                .client
                .get_partitions()
                .database_name(database)
                .table_name(name)
                .into_paginator()
                .send();
            while let Some(page) = pages.next().await {
                let page =
                    page.map_err(|e| glue_error(database, Some(name), crate::error_chain(&e)))?;
                for p in page.partitions() {
                    let at = p
                        .storage_descriptor()
                        .and_then(|sd| sd.location())
                        .ok_or_else(|| {
                            glue_error(
                                database,
                                Some(name),
                                format!("partition {:?} has no location", p.values()),
                            )
                        })?;
                    partitions.push(ListedPartition {
                        // Hive's folder for a null value, as Athena reads it.
                        values: p
                            .values()
                            .iter()
                            .map(|v| (!is_null_folder(v)).then(|| v.clone()))
                            .collect(),
                        location: format!("{}/", at.trim_end_matches('/')),
                    });
                }
            }
            let declared = declared_schema(database, table)?;
            let provider =
                ListedPartitionsTable::try_new(ctx, name, &keys, &partitions, declared).await?;
            let url = datafusion::datasource::listing::ListingTableUrl::parse(location)?;
            registry.record(
                url.object_store().as_str(),
                url.prefix().as_ref(),
                provider.partitions(),
            );
            ctx.register_table(squall_planner::catalog::bare(name), Arc::new(provider))?;
        }
        // Glue's names are lowercase; the files' may not be.
        present_lowercase(ctx, name)
    }
}

/// A table format whose files its metadata names (a folder of such a
/// table holds removed files too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TableFormat {
    Delta,
    Iceberg,
}

/// The table's format as Athena and Spark mark it in its parameters
/// (`table_type`, `spark.sql.sources.provider`).
fn table_format(table: &Table) -> Option<TableFormat> {
    let parameters = table.parameters()?;
    ["table_type", "spark.sql.sources.provider"]
        .iter()
        .filter_map(|k| parameters.get(*k))
        .find_map(|v| match v.to_ascii_lowercase().as_str() {
            "delta" => Some(TableFormat::Delta),
            "iceberg" => Some(TableFormat::Iceberg),
            _ => None,
        })
}

/// The location of a Parquet table, by its input format or SerDe.
fn parquet_location(table: &Table) -> Option<&str> {
    let sd = table.storage_descriptor()?;
    let parquet = |s: Option<&str>| s.is_some_and(|s| s.to_ascii_lowercase().contains("parquet"));
    let is_parquet = parquet(sd.input_format())
        || parquet(sd.serde_info().and_then(|s| s.serialization_library()));
    is_parquet.then(|| sd.location()).flatten()
}

/// The table's columns as Glue declares them (used when no file exists yet).
fn declared_schema(database: &str, table: &Table) -> Result<Arc<Schema>> {
    let columns = table
        .storage_descriptor()
        .map(|sd| sd.columns())
        .unwrap_or_default();
    let fields = columns
        .iter()
        .map(|c| {
            Ok(Field::new(
                c.name(),
                arrow_type(database, table.name(), c)?,
                true,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Arc::new(Schema::new(fields)))
}

/// A Glue (Hive) column type as an Arrow type.
fn arrow_type(database: &str, table: &str, column: &Column) -> Result<DataType> {
    let glue = column.r#type().unwrap_or("string");
    hive_type(glue).ok_or_else(|| {
        AwsError::Glue {
            database: database.to_string(),
            table: Some(table.to_string()),
            message: format!(
                "column {} has type {glue}, which squall does not read",
                column.name()
            ),
        }
        .into()
    })
}

/// `int`, `bigint`, `decimal(15,2)`, `varchar(10)`, ... as Arrow types.
pub fn hive_type(glue: &str) -> Option<DataType> {
    let t = glue.trim().to_ascii_lowercase();
    let (base, args) = match t.split_once('(') {
        Some((b, rest)) => (b.trim(), Some(rest.trim_end_matches(')'))),
        None => (t.as_str(), None),
    };
    Some(match base {
        "tinyint" => DataType::Int8,
        "smallint" => DataType::Int16,
        "int" | "integer" => DataType::Int32,
        "bigint" => DataType::Int64,
        "float" | "real" => DataType::Float32,
        "double" => DataType::Float64,
        "boolean" => DataType::Boolean,
        "string" | "varchar" | "char" => DataType::Utf8,
        "date" => DataType::Date32,
        "timestamp" => DataType::Timestamp(TimeUnit::Microsecond, None),
        "binary" => DataType::Binary,
        "decimal" => {
            let (p, s) = args?.split_once(',').unwrap_or((args?, "0"));
            DataType::Decimal128(p.trim().parse().ok()?, s.trim().parse().ok()?)
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glue_types_map_to_arrow() {
        assert_eq!(hive_type("int"), Some(DataType::Int32));
        assert_eq!(hive_type("BIGINT"), Some(DataType::Int64));
        assert_eq!(hive_type("varchar(25)"), Some(DataType::Utf8));
        assert_eq!(
            hive_type("decimal(15, 2)"),
            Some(DataType::Decimal128(15, 2))
        );
        assert_eq!(hive_type("decimal(10)"), Some(DataType::Decimal128(10, 0)));
        assert_eq!(hive_type("date"), Some(DataType::Date32));
        assert_eq!(hive_type("array<int>"), None);
        assert_eq!(hive_type("map<string,int>"), None);
    }
}
