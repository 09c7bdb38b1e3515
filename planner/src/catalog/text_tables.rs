//! Tables of text files: a catalog folder whose files are CSV (`*.csv`,
//! `*.tsv`, with a header row) or JSON (`*.json`, `*.jsonl`, `*.ndjson`:
//! an object per line, or one array of objects per file, see
//! `squall_core::json_files`), each also compressed (`.gz`, `.bz2`, `.xz`,
//! `.zst` after the extension: a compressed file is read whole by one
//! task), flat or partitioned Hive-style, is a table as a folder of
//! Parquet files is. Their columns' types are inferred from the
//! files' first 100,000 rows (`INFERRED_FROM_ROWS`); a file that is neither
//! Parquet nor one of these is still named as no table, saying why.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::datasource::file_format::csv::CsvFormat;
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::file_format::json::JsonFormat;
use datafusion::datasource::file_format::options::ReadOptions;
use datafusion::datasource::listing::{ListingTable, ListingTableConfig, ListingTableUrl};
use datafusion::error::Result;
use datafusion::prelude::{CsvReadOptions, JsonReadOptions, SessionContext};
use squall_core::text_compression::compression_of;

use super::text_formats::{TextFilesFormat, TextKind};
use super::{message, present, table_error};
use crate::partitions::{self, DataFiles, PartitionRegistry};
use datafusion::execution::object_store::ObjectStoreUrl;

/// The text formats a table's files may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextFormat {
    /// Delimited text with a header row, and its delimiter.
    Delimited(u8),
    /// One JSON object per line.
    Json,
    /// One JSON array of objects per file (its elements are the rows).
    JsonArrays,
}

/// A text table's files: their format, and the compression their names
/// end with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextFiles {
    pub format: TextFormat,
    pub compression: FileCompressionType,
    /// The whole ending the table's files are listed by (`.csv.gz`):
    /// DataFusion's listing keeps the files whose names end with it.
    extension: &'static str,
}

/// Every text file ending squall reads: a format's extension, then a
/// compression's, if any.
const ENDINGS: &[&str] = &[
    ".csv",
    ".csv.gz",
    ".csv.bz2",
    ".csv.xz",
    ".csv.zst",
    ".tsv",
    ".tsv.gz",
    ".tsv.bz2",
    ".tsv.xz",
    ".tsv.zst",
    ".ndjson",
    ".ndjson.gz",
    ".ndjson.bz2",
    ".ndjson.xz",
    ".ndjson.zst",
    ".jsonl",
    ".jsonl.gz",
    ".jsonl.bz2",
    ".jsonl.xz",
    ".jsonl.zst",
    ".json",
    ".json.gz",
    ".json.bz2",
    ".json.xz",
    ".json.zst",
];

/// The names of the text files squall reads, for messages.
pub const NAMES: &str = "CSV (*.csv, *.tsv) or JSON (*.json, *.jsonl, *.ndjson: an object \
                         per line, or one array of objects), each also compressed \
                         (.gz, .bz2, .xz, .zst)";

/// The format of a file named `file`, if text.
pub fn format_of(file: &str) -> Option<TextFiles> {
    let lower = file.to_ascii_lowercase();
    let extension = *ENDINGS.iter().find(|e| lower.ends_with(*e))?;
    let format = match extension.split('.').nth(1)? {
        "csv" => TextFormat::Delimited(b','),
        "tsv" => TextFormat::Delimited(b'\t'),
        _ => TextFormat::Json,
    };
    Some(TextFiles {
        format,
        compression: compression_of(extension),
        extension,
    })
}

/// Registers the table `name` of CSV or JSON files (`text_tables`) under
/// `root`, partitioned as its folders say.
#[allow(clippy::too_many_arguments)]
pub(super) async fn register_table(
    ctx: &SessionContext,
    name: &str,
    url: &str,
    store_url: &ObjectStoreUrl,
    root: &object_store::path::Path,
    objects: &[object_store::ObjectMeta],
    registry: &PartitionRegistry,
    mut files: TextFiles,
) -> Result<()> {
    let layout = partitions::layout(objects, root, name, url, DataFiles::AllVisible)?;
    let depth = root.parts().count();
    let visible = objects
        .iter()
        .filter(|m| DataFiles::AllVisible.holds(&m.location, depth))
        .map(|m| {
            m.location
                .parts()
                .skip(depth)
                .map(|p| p.as_ref().to_string())
        })
        .map(|parts| parts.collect::<Vec<_>>().join("/"));
    let (mut first, mut other) = (None, None);
    for path in visible {
        if format_of(&path) == Some(files) {
            first.get_or_insert(path);
        } else {
            other.get_or_insert(path);
        }
    }
    if let (Some(first), Some(other)) = (first, other) {
        let why = format!(
            "the folder mixes kinds of files, {first} and {other}: a table's files are \
             one format, compressed alike ({})",
            NAMES
        );
        return Err(table_error(name, url, why));
    }
    if files.format == TextFormat::Delimited(b',')
        && files.compression == FileCompressionType::UNCOMPRESSED
        && let Some(first) = objects
            .iter()
            .find(|m| DataFiles::AllVisible.holds(&m.location, depth))
        && let Some(delimiter) = sniffed_delimiter(ctx, store_url, first)
            .await
            .map_err(|e| table_error(name, url, format!("file {}: {e}", first.location)))?
    {
        files.format = TextFormat::Delimited(delimiter);
    }
    if files.format == TextFormat::Json
        && let Some(first) = objects
            .iter()
            .find(|m| DataFiles::AllVisible.holds(&m.location, depth))
        && sniffed_json_array(ctx, store_url, first, files.compression)
            .await
            .map_err(|e| table_error(name, url, format!("file {}: {e}", first.location)))?
    {
        files.format = TextFormat::JsonArrays;
    }
    register(
        ctx,
        name,
        url,
        files,
        layout.listed_columns(),
        &layout.folders,
        Some(objects),
    )
    .await
    .map_err(|e| table_error(name, url, message(&e)))?;
    present(ctx, name, store_url, root, registry, &layout)
}

/// The delimiter [`delimiter_of`] the start of `file` says (one ranged GET
/// of its first 64 KiB), remembered per process while the file stays the
/// same: the aws backend registers the catalog for every request.
async fn sniffed_delimiter(
    ctx: &SessionContext,
    store_url: &ObjectStoreUrl,
    file: &object_store::ObjectMeta,
) -> std::result::Result<Option<u8>, object_store::Error> {
    static SNIFFED: std::sync::OnceLock<super::schemas::Remembered<Option<u8>>> =
        std::sync::OnceLock::new();
    sniffed(ctx, store_url, file, &SNIFFED, delimiter_of).await
}

/// Whether the JSON file `file` (compressed as `compression` says) is one
/// JSON array (its first character `[`) rather than JSON lines: one
/// ranged GET of its first 64 KiB, remembered as long as the file stays
/// the same.
async fn sniffed_json_array(
    ctx: &SessionContext,
    store_url: &ObjectStoreUrl,
    file: &object_store::ObjectMeta,
    compression: FileCompressionType,
) -> std::result::Result<bool, object_store::Error> {
    static SNIFFED: std::sync::OnceLock<super::schemas::Remembered<bool>> =
        std::sync::OnceLock::new();
    let starts_array = |head: &[u8]| {
        let mut text = Vec::with_capacity(256);
        match compression.is_compressed() {
            // The head of a compressed file decompresses as far as it goes.
            true => {
                if let Ok(read) = compression
                    .convert_read(bytes::Buf::reader(bytes::Bytes::copy_from_slice(head)))
                {
                    let _ =
                        std::io::Read::read_to_end(&mut std::io::Read::take(read, 256), &mut text);
                }
            }
            false => text.extend_from_slice(&head[..head.len().min(256)]),
        }
        let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&text);
        text.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[')
    };
    sniffed(ctx, store_url, file, &SNIFFED, starts_array).await
}

/// What `read` says of the first 64 KiB of `file` (one ranged GET),
/// remembered in `memory` as long as the file stays the same (its name,
/// size and modification time).
async fn sniffed<T: Clone>(
    ctx: &SessionContext,
    store_url: &ObjectStoreUrl,
    file: &object_store::ObjectMeta,
    memory: &'static std::sync::OnceLock<super::schemas::Remembered<T>>,
    read: impl Fn(&[u8]) -> T,
) -> std::result::Result<T, object_store::Error> {
    use object_store::ObjectStoreExt;
    let memory = memory.get_or_init(|| super::schemas::Remembered::new(1024));
    let key = format!(
        "{store_url}{}:{}:{}",
        file.location,
        file.size,
        file.last_modified.timestamp_nanos_opt().unwrap_or_default()
    );
    if let Some(known) = memory.get(&key) {
        return Ok(known);
    }
    let store =
        ctx.runtime_env()
            .object_store(store_url)
            .map_err(|e| object_store::Error::Generic {
                store: "catalog",
                source: Box::new(e),
            })?;
    // An empty file has no range to ask for (a GET of bytes 0-0 fails).
    let head = match file.size {
        0 => bytes::Bytes::new(),
        size => store.get_range(&file.location, 0..size.min(65_536)).await?,
    };
    let known = read(&head);
    memory.put(key, known.clone());
    Ok(known)
}

/// The delimiter of a `.csv` file whose header row (the first line of
/// `head`) has no comma but semicolons, pipes or tabs (Excel's exports in
/// much of Europe write `;`): the one it has most of, outside quotes.
/// `None` for a comma-delimited header (or one of a single column).
fn delimiter_of(head: &[u8]) -> Option<u8> {
    let line = head.split(|b| *b == b'\n').next().unwrap_or(head);
    let mut counts = [(b',', 0usize), (b';', 0), (b'|', 0), (b'\t', 0)];
    let mut quoted = false;
    for b in line {
        if *b == b'"' {
            quoted = !quoted;
        } else if !quoted && let Some(c) = counts.iter_mut().find(|(d, _)| d == b) {
            c.1 += 1;
        }
    }
    if counts[0].1 > 0 {
        return None;
    }
    counts[1..]
        .iter()
        .filter(|(_, n)| *n > 0)
        .max_by_key(|(_, n)| *n)
        .map(|(d, _)| *d)
}

/// How many rows of a table's files its columns' types are inferred from
/// (DataFusion's default, 1,000, read one file's first rows: a column
/// empty there, or numbers there and text later, was typed by them).
const INFERRED_FROM_ROWS: usize = 100_000;

/// Registers `name`: the files of `format` under `url`, with the partition
/// columns its folders give (`listed`: the folder's listing, if the
/// caller made one). A column no row inferred from has a value in
/// is text (DataFusion typed it NULL, and read every value of it as NULL).
pub async fn register(
    ctx: &SessionContext,
    name: &str,
    url: &str,
    files: TextFiles,
    partitions: Vec<(String, DataType)>,
    folders: &[String],
    listed: Option<&[object_store::ObjectMeta]>,
) -> Result<()> {
    let (extension, compression) = (files.extension, files.compression);
    let (config, table_options) = (ctx.copied_config(), ctx.copied_table_options());
    let listing = match files.format {
        TextFormat::Delimited(delimiter) => {
            // A quoted value may hold line breaks: a file is read from its
            // start, never from a byte range DataFusion would begin at the
            // first line break past it (which split such a value and
            // failed, "incorrect number of fields").
            let mut listing = CsvReadOptions::new()
                .has_header(true)
                .newlines_in_values(true)
                .delimiter(delimiter)
                .file_extension(extension)
                .file_compression_type(compression)
                .schema_infer_max_records(INFERRED_FROM_ROWS)
                .table_partition_cols(partitions)
                .to_listing_options(&config, table_options);
            // Each file's columns read by the names its header gives them.
            let format: &dyn std::any::Any = listing.format.as_ref();
            if let Some(csv) = format.downcast_ref::<CsvFormat>() {
                let inner = CsvFormat::default().with_options(csv.options().clone());
                listing.format = Arc::new(TextFilesFormat(TextKind::Csv { inner, delimiter }));
            }
            listing
        }
        TextFormat::Json | TextFormat::JsonArrays => {
            let mut listing = JsonReadOptions::default()
                .file_extension(extension)
                .file_compression_type(compression)
                .schema_infer_max_records(INFERRED_FROM_ROWS)
                .table_partition_cols(partitions)
                .to_listing_options(&config, table_options);
            let arrays = files.format == TextFormat::JsonArrays;
            let format: &dyn std::any::Any = listing.format.as_ref();
            if let Some(json) = format.downcast_ref::<JsonFormat>() {
                let inner = JsonFormat::default()
                    .with_options(json.options().clone())
                    .with_newline_delimited(!arrays);
                listing.format = Arc::new(TextFilesFormat(TextKind::Json { inner, arrays }));
            }
            listing
        }
    };
    // The folders' URLs as they are (the listing keeps the files with
    // the format's extension).
    let paths: Vec<ListingTableUrl> = DataFiles::NamedParquet
        .listing_urls(url, folders)?
        .into_iter()
        .map(|p| p.with_table_ref(super::bare(name)))
        .collect();
    if let Some(objects) = listed {
        super::listings::keep(ctx, &paths, objects);
    }
    let inferred = super::inferred_schema(ctx, &listing, &paths).await?;
    let fields: Vec<_> = inferred
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Null => Arc::new(f.as_ref().clone().with_data_type(DataType::Utf8)),
            _ => Arc::clone(f),
        })
        .collect();
    let schema = Arc::new(arrow::datatypes::Schema::new_with_metadata(
        fields,
        inferred.metadata().clone(),
    ));
    let config = ListingTableConfig::new_with_multi_paths(paths)
        .with_listing_options(listing)
        .with_schema(schema);
    let table = ListingTable::try_new(config)?
        .with_cache(ctx.runtime_env().cache_manager.get_file_statistic_cache());
    ctx.register_table(super::bare(name), Arc::new(table))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::delimiter_of;

    #[test]
    fn headers_without_commas_say_their_delimiter() {
        assert_eq!(delimiter_of(b"a,b;c\n1,2"), None);
        assert_eq!(delimiter_of(b"a;b;c\n1;2;3"), Some(b';'));
        assert_eq!(delimiter_of(b"a|b\n"), Some(b'|'));
        assert_eq!(delimiter_of(b"\"x;y\"|b"), Some(b'|'));
        assert_eq!(delimiter_of(b"only"), None);
    }
}
