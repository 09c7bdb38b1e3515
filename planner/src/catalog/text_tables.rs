//! Tables of text files: a catalog folder whose files are CSV (`*.csv`,
//! `*.tsv`, with a header row) or newline-delimited JSON (`*.json`,
//! `*.jsonl`, `*.ndjson`), flat or partitioned Hive-style, is a table as a
//! folder of Parquet files is. Their columns' types are inferred from the
//! files' first rows (DataFusion's inference); a file that is neither
//! Parquet nor one of these is still named as no table, saying why.

use datafusion::arrow::datatypes::DataType;
use datafusion::error::Result;
use datafusion::prelude::{CsvReadOptions, JsonReadOptions, SessionContext};

/// The text formats a table's files may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextFormat {
    /// Delimited text with a header row, its delimiter and file extension.
    Delimited(u8, &'static str),
    /// One JSON object per line, its file extension.
    Json(&'static str),
}

/// The format of a table whose files are named like `file`, if text.
pub fn format_of(file: &str) -> Option<TextFormat> {
    let lower = file.to_ascii_lowercase();
    let ends = |ext: &str| lower.ends_with(ext);
    if ends(".csv") {
        Some(TextFormat::Delimited(b',', ".csv"))
    } else if ends(".tsv") {
        Some(TextFormat::Delimited(b'\t', ".tsv"))
    } else if ends(".ndjson") {
        Some(TextFormat::Json(".ndjson"))
    } else if ends(".jsonl") {
        Some(TextFormat::Json(".jsonl"))
    } else if ends(".json") {
        Some(TextFormat::Json(".json"))
    } else {
        None
    }
}

/// Registers `name`: the files of `format` under `url`, with the partition
/// columns its folders give.
pub async fn register(
    ctx: &SessionContext,
    name: &str,
    url: &str,
    format: TextFormat,
    partitions: Vec<(String, DataType)>,
) -> Result<()> {
    match format {
        TextFormat::Delimited(delimiter, extension) => {
            let options = CsvReadOptions::new()
                .has_header(true)
                .delimiter(delimiter)
                .file_extension(extension)
                .table_partition_cols(partitions);
            ctx.register_csv(name, url, options).await
        }
        TextFormat::Json(extension) => {
            let options = JsonReadOptions::default()
                .file_extension(extension)
                .table_partition_cols(partitions);
            ctx.register_json(name, url, options).await
        }
    }
}
