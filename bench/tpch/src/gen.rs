//! TPC-H data generation into Parquet: the machinery behind `squall tpch gen --sf SF --out DIR`.
//! This module owns turning a scale factor into a directory of Parquet files — splitting each
//! table into parts, running the parts on a pool of std threads, the Parquet writer settings,
//! the on-disk layout, the `_SUCCESS` completion marker and the progress bar. It does not own
//! the data itself (rows and Arrow schemas come from `tpchgen` / `tpchgen-arrow` and are
//! identical to dbgen's, including when a table is split into parts), command-line parsing,
//! registering the tables with a query session, or the TPC-H queries. (`gen` is a reserved
//! word in edition 2024, so the parent declares this file under another name, e.g.
//! `#[path = "gen.rs"] pub mod datagen;`, or as `r#gen`; the test filter `gen::tests` matches
//! either.)
//!
//! # Layout
//!
//! ```text
//! DIR/_SUCCESS                      written last, when every table is complete
//! DIR/lineitem/part-0000.parquet    one folder per table, files numbered from 0
//! DIR/lineitem/part-0001.parquet
//! DIR/nation/part-0000.parquet
//! ...
//! ```
//!
//! A table is split into `ceil(rows / 2_000_000)` parts (using tpchgen's `part`/`num_parts`,
//! so the concatenation of the parts is exactly the single-part table); `nation` and `region`
//! are always one file. At SF 1 that gives three lineitem files of 2M rows; SF 10 gives 30
//! lineitem and 8 orders files. The layout depends on the scale factor only, never on the
//! thread count. Each part is written to a hidden temporary name (`.part-NNNN.parquet.tmp`)
//! and renamed into place when complete. [`generate`] first removes a stale `_SUCCESS` and any
//! `part-NNNN.parquet` / `.part-NNNN.parquet.tmp` files of an earlier (possibly interrupted,
//! possibly different-SF) run in the table folders, so an interrupted run is detected by
//! [`is_complete`] and simply redone. A table folder holding anything else (a user's own
//! files, hive partitions) is refused before anything is touched ([`foreign`]); other files
//! at `DIR`'s root are left alone.
//!
//! # Writer settings
//!
//! Compression is ZSTD level 1. Measured at SF 0.1 when it was chosen (2026-11, a one-off
//! measurement since removed from the tests; dev profile, dependencies at opt-level 1,
//! 2 cores, 2 threads, three runs): ZSTD(1) wrote
//! 25.1 MB in 0.53-0.60 s, SNAPPY 32.4 MB in 0.48-0.75 s, uncompressed 60.2 MB in 0.67-0.84 s.
//! Generation dominates the time: the codecs' write times differ by less than the run-to-run
//! noise, so ZSTD(1)'s 23% smaller files (than SNAPPY) come at no measurable cost.
//! Row groups hold [`GenOptions::row_group_rows`] rows (default 122 880); column chunk and page
//! statistics plus the page index are written (parquet's `EnabledStatistics::Page`), which is
//! what row-group and page pruning need. The Arrow schema is the one `tpchgen-arrow` produces
//! (`Decimal128(15, 2)` for money, `Date32` for dates, `Utf8View` for strings) and is stored in
//! the file, so readers get the same types back.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use arrow::record_batch::RecordBatchReader;
use indicatif::{ProgressBar, ProgressStyle};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::errors::ParquetError;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator,
    PartSuppGenerator, RegionGenerator, SupplierGenerator,
};
use tpchgen_arrow::{
    CustomerArrow, LineItemArrow, NationArrow, OrderArrow, PartArrow, PartSuppArrow, RegionArrow,
    SupplierArrow,
};

/// The eight TPC-H tables, in the order they are reported in [`GenSummary`].
pub const TABLES: [&str; 8] = [
    "nation", "region", "part", "supplier", "partsupp", "customer", "orders", "lineitem",
];

/// Name of the completion marker written at the output directory's root.
pub const SUCCESS_MARKER: &str = "_SUCCESS";

/// Default number of rows per Parquet row group.
pub const DEFAULT_ROW_GROUP_ROWS: usize = 122_880;

/// A table is split into parts of at most about this many rows.
const TARGET_ROWS_PER_FILE: u64 = 2_000_000;

/// Rows per Arrow batch handed from the generator to the writer (and per progress update).
const BATCH_ROWS: usize = 8192;

/// The codec every column is written with; see the module documentation for the measurement.
fn default_compression() -> Compression {
    Compression::ZSTD(ZstdLevel::default()) // level 1
}

/// What to generate and where.
#[derive(Debug, Clone, PartialEq)]
pub struct GenOptions {
    /// TPC-H scale factor (1.0 is about 1 GB of dbgen text); must be finite and > 0.
    pub scale_factor: f64,
    /// Output directory; created if missing.
    pub out: PathBuf,
    /// Rows per Parquet row group (default [`DEFAULT_ROW_GROUP_ROWS`]); must be > 0.
    pub row_group_rows: usize,
    /// Show a progress bar on stderr.
    pub progress: bool,
    /// Worker threads (default: available parallelism); 0 means the default.
    pub threads: usize,
}

impl GenOptions {
    /// Options with the defaults: 122 880-row row groups, progress bar shown, one thread per core.
    pub fn new(scale_factor: f64, out: impl Into<PathBuf>) -> Self {
        Self {
            scale_factor,
            out: out.into(),
            row_group_rows: DEFAULT_ROW_GROUP_ROWS,
            progress: true,
            threads: default_threads(),
        }
    }
}

fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// What [`generate`] wrote.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GenSummary {
    /// `(table, rows, bytes on disk)` for each table, in [`TABLES`] order.
    pub tables: Vec<(String, u64, u64)>,
}

impl GenSummary {
    /// Rows over all tables.
    pub fn total_rows(&self) -> u64 {
        self.tables.iter().map(|(_, rows, _)| rows).sum()
    }

    /// Bytes on disk over all tables.
    pub fn total_bytes(&self) -> u64 {
        self.tables.iter().map(|(_, _, bytes)| bytes).sum()
    }
}

/// Why generation failed.
#[derive(Debug, thiserror::Error)]
pub enum GenError {
    #[error("invalid TPC-H scale factor {0}: it must be a finite number greater than 0")]
    InvalidScaleFactor(f64),
    #[error("invalid row group size 0: row_group_rows must be at least 1")]
    InvalidRowGroupRows,
    #[error(
        "{} was not written by squall tpch gen: generating into {} would mix the \
         generated tables with the data there; choose an empty or new folder",
        path.display(), out.display()
    )]
    NotGenerated { path: PathBuf, out: PathBuf },
    #[error("cannot create output directory {}: {source}", path.display())]
    OutDir {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot create directory {} for table {table}: {source}", path.display())]
    CreateDir {
        table: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot remove stale file {} of table {table}: {source}", path.display())]
    Clean {
        table: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("I/O error on {} (table {table}): {source}", path.display())]
    Io {
        table: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("generating table {table} for {} failed: {source}", path.display())]
    Generate {
        table: &'static str,
        path: PathBuf,
        #[source]
        source: ArrowError,
    },
    #[error("writing Parquet file {} (table {table}) failed: {source}", path.display())]
    Parquet {
        table: &'static str,
        path: PathBuf,
        #[source]
        source: ParquetError,
    },
    #[error("cannot write completion marker {}: {source}", path.display())]
    Marker {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot start generator thread: {0}")]
    Spawn(#[source] io::Error),
    #[error("a generator thread panicked")]
    WorkerPanicked,
}

/// True when `dir` holds a finished data set: the `_SUCCESS` marker at `dir` and, for every
/// table in [`TABLES`], a folder with at least one `.parquet` file.
pub fn is_complete(dir: &Path) -> bool {
    dir.join(SUCCESS_MARKER).is_file()
        && TABLES
            .iter()
            .all(|table| has_parquet_file(&dir.join(table)))
}

/// The scale factor recorded in the `_SUCCESS` marker of a complete data set at `dir`, if any.
/// Lets a caller tell "complete, but at another scale factor" from "complete".
pub fn completed_scale_factor(dir: &Path) -> Option<f64> {
    if !is_complete(dir) {
        return None;
    }
    let marker = fs::read_to_string(dir.join(SUCCESS_MARKER)).ok()?;
    marker
        .lines()
        .find_map(|line| line.strip_prefix("scale_factor="))
        .and_then(|value| value.trim().parse().ok())
}

fn has_parquet_file(table_dir: &Path) -> bool {
    let Ok(entries) = fs::read_dir(table_dir) else {
        return false;
    };
    entries.filter_map(Result::ok).any(|entry| {
        let path = entry.path();
        path.extension().is_some_and(|ext| ext == "parquet") && path.is_file()
    })
}

/// Generate all eight tables at `opts.scale_factor` into `opts.out`. Blocking: runs the parts
/// on `opts.threads` std threads and returns when every file and the `_SUCCESS` marker are
/// written. Always regenerates; callers that want to skip a finished directory check
/// [`is_complete`] first.
pub fn generate(opts: &GenOptions) -> Result<GenSummary, GenError> {
    generate_with(opts, &Settings::default())
}

/// Knobs fixed in production and varied by the tests and the compression measurement.
#[derive(Debug, Clone)]
struct Settings {
    compression: Compression,
    target_rows_per_file: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            compression: default_compression(),
            target_rows_per_file: TARGET_ROWS_PER_FILE,
        }
    }
}

fn generate_with(opts: &GenOptions, settings: &Settings) -> Result<GenSummary, GenError> {
    let sf = opts.scale_factor;
    if !sf.is_finite() || sf <= 0.0 {
        return Err(GenError::InvalidScaleFactor(sf));
    }
    if opts.row_group_rows == 0 {
        return Err(GenError::InvalidRowGroupRows);
    }
    if let Some(path) = foreign::first_foreign(&opts.out) {
        return Err(GenError::NotGenerated {
            path,
            out: opts.out.clone(),
        });
    }
    let started = Instant::now();

    fs::create_dir_all(&opts.out).map_err(|source| GenError::OutDir {
        path: opts.out.clone(),
        source,
    })?;
    // Invalidate the old data set before touching any of its files.
    let marker = opts.out.join(SUCCESS_MARKER);
    match fs::remove_file(&marker) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(GenError::Marker {
                path: marker,
                source,
            });
        }
    }
    for table in Table::ALL {
        prepare_table_dir(table, &opts.out.join(table.name()))?;
    }

    let mut units = plan(sf, settings.target_rows_per_file);
    // Biggest first, so the long lineitem parts don't end up last on one thread.
    units.sort_by_key(|unit| std::cmp::Reverse(unit.expected_rows));
    let expected_total: u64 = units.iter().map(|unit| unit.expected_rows).sum();

    // Build tpchgen's shared 300 MB text pool (about a second) before the clock of the bar starts.
    let _ = tpchgen::text::TextPool::get_or_init_default();
    let bar = progress_bar(opts, expected_total);
    let props = WriterProperties::builder()
        .set_compression(settings.compression)
        .set_max_row_group_row_count(Some(opts.row_group_rows))
        .set_statistics_enabled(EnabledStatistics::Page)
        .build();
    let threads = if opts.threads == 0 {
        default_threads()
    } else {
        opts.threads
    };
    tracing::info!(
        scale_factor = sf,
        out = %opts.out.display(),
        files = units.len(),
        threads,
        "generating TPC-H data"
    );

    let ctx = WorkerCtx {
        sf,
        out: &opts.out,
        props: &props,
        bar: &bar,
        units: &units,
        next: AtomicUsize::new(0),
        cancel: AtomicBool::new(false),
    };
    let done = run_workers(&ctx, threads.clamp(1, units.len().max(1)));
    let done = match done {
        Ok(done) => done,
        Err(e) => {
            bar.abandon();
            return Err(e);
        }
    };

    let mut summary = GenSummary::default();
    for table in Table::ALL {
        let (rows, bytes) = done
            .iter()
            .filter(|d| units.get(d.unit).is_some_and(|u| u.table == table))
            .fold((0, 0), |(rows, bytes), d| (rows + d.rows, bytes + d.bytes));
        summary.tables.push((table.name().to_string(), rows, bytes));
    }

    write_marker(&opts.out, sf, &summary)?;
    bar.finish();
    tracing::info!(
        scale_factor = sf,
        rows = summary.total_rows(),
        bytes = summary.total_bytes(),
        seconds = started.elapsed().as_secs_f64(),
        "TPC-H data complete"
    );
    Ok(summary)
}

fn progress_bar(opts: &GenOptions, total_rows: u64) -> ProgressBar {
    if !opts.progress {
        return ProgressBar::hidden();
    }
    let style = ProgressStyle::with_template(
        "{msg} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} rows ({per_sec:0}, eta {eta})",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    let bar = ProgressBar::new(total_rows).with_style(style);
    bar.set_message(format!("tpch sf {}", opts.scale_factor));
    bar
}

/// Create the table folder and remove what an earlier run left in it.
fn write_marker(out: &Path, sf: f64, summary: &GenSummary) -> Result<(), GenError> {
    let mut text = format!(
        "scale_factor={sf}\ngenerator=tpchgen-4.0\nrows={}\nbytes={}\n",
        summary.total_rows(),
        summary.total_bytes()
    );
    for (table, rows, bytes) in &summary.tables {
        text.push_str(&format!("{table}.rows={rows}\n{table}.bytes={bytes}\n"));
    }
    let tmp = out.join(format!(".{SUCCESS_MARKER}.tmp"));
    let path = out.join(SUCCESS_MARKER);
    fs::write(&tmp, text).map_err(|source| GenError::Marker {
        path: tmp.clone(),
        source,
    })?;
    fs::rename(&tmp, &path).map_err(|source| GenError::Marker { path, source })
}

struct WorkerCtx<'a> {
    sf: f64,
    out: &'a Path,
    props: &'a WriterProperties,
    bar: &'a ProgressBar,
    units: &'a [Unit],
    /// Index of the next unit to take.
    next: AtomicUsize,
    /// Set on the first failure: workers stop taking units and abandon the one in hand.
    cancel: AtomicBool,
}

/// A finished file.
#[derive(Debug, Clone, Copy)]
struct Done {
    unit: usize,
    rows: u64,
    bytes: u64,
}

fn run_workers(ctx: &WorkerCtx<'_>, threads: usize) -> Result<Vec<Done>, GenError> {
    let first_error: Mutex<Option<GenError>> = Mutex::new(None);
    let record_error = |e: GenError| {
        ctx.cancel.store(true, Ordering::SeqCst);
        if let Ok(mut slot) = first_error.lock()
            && slot.is_none()
        {
            *slot = Some(e);
        }
    };

    let mut done = Vec::with_capacity(ctx.units.len());
    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(threads);
        for i in 0..threads {
            let spawned = std::thread::Builder::new()
                .name(format!("tpchgen-{i}"))
                .spawn_scoped(scope, || worker(ctx));
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(e) => {
                    record_error(GenError::Spawn(e));
                    break;
                }
            }
        }
        for handle in handles {
            match handle.join() {
                Ok(Ok(finished)) => done.extend(finished),
                Ok(Err(e)) => record_error(e),
                Err(_) => record_error(GenError::WorkerPanicked),
            }
        }
    });

    let error = match first_error.into_inner() {
        Ok(error) => error,
        Err(poisoned) => poisoned.into_inner(),
    };
    match error {
        Some(e) => Err(e),
        None => Ok(done),
    }
}

fn worker(ctx: &WorkerCtx<'_>) -> Result<Vec<Done>, GenError> {
    let mut finished = Vec::new();
    while !ctx.cancel.load(Ordering::SeqCst) {
        let index = ctx.next.fetch_add(1, Ordering::SeqCst);
        let Some(unit) = ctx.units.get(index) else {
            break;
        };
        match write_unit(ctx, unit) {
            Ok(Some((rows, bytes))) => finished.push(Done {
                unit: index,
                rows,
                bytes,
            }),
            Ok(None) => break, // cancelled
            Err(e) => {
                ctx.cancel.store(true, Ordering::SeqCst);
                return Err(e);
            }
        }
    }
    Ok(finished)
}

/// Generate one part into its temporary file and rename it into place. Returns `(rows, bytes)`,
/// or `None` when cancelled because another part failed.
fn write_unit(ctx: &WorkerCtx<'_>, unit: &Unit) -> Result<Option<(u64, u64)>, GenError> {
    let table = unit.table.name();
    let dir = ctx.out.join(table);
    let file_name = unit.file_name();
    let path = dir.join(&file_name);
    let tmp = dir.join(format!(".{file_name}.tmp"));
    let started = Instant::now();

    let rows = match write_parquet(ctx, unit, &tmp) {
        Ok(Some(rows)) => rows,
        other => {
            // Failed or cancelled: leave no temporary behind (best effort).
            let _ = fs::remove_file(&tmp);
            return other.map(|_| None);
        }
    };
    fs::rename(&tmp, &path).map_err(|source| GenError::Io {
        table,
        path: path.clone(),
        source,
    })?;
    let bytes = fs::metadata(&path)
        .map_err(|source| GenError::Io {
            table,
            path: path.clone(),
            source,
        })?
        .len();

    // Lineitem's expected row count is an estimate: correct the bar's length.
    if rows > unit.expected_rows {
        ctx.bar.inc_length(rows - unit.expected_rows);
    } else if rows < unit.expected_rows {
        ctx.bar.dec_length(unit.expected_rows - rows);
    }
    tracing::debug!(
        table,
        part = unit.part,
        num_parts = unit.num_parts,
        rows,
        bytes,
        seconds = started.elapsed().as_secs_f64(),
        path = %path.display(),
        "wrote TPC-H part"
    );
    Ok(Some((rows, bytes)))
}

/// Write the part's rows to `tmp`; `None` when cancelled.
fn write_parquet(ctx: &WorkerCtx<'_>, unit: &Unit, tmp: &Path) -> Result<Option<u64>, GenError> {
    let table = unit.table.name();
    let parquet_err = |source| GenError::Parquet {
        table,
        path: tmp.to_path_buf(),
        source,
    };
    let batches = unit.table.batches(ctx.sf, unit.part, unit.num_parts);
    let schema: SchemaRef = batches.schema();
    // ArrowWriter buffers internally (parquet's TrackedWrite wraps a BufWriter).
    let file = File::create(tmp).map_err(|source| GenError::Io {
        table,
        path: tmp.to_path_buf(),
        source,
    })?;
    let mut writer =
        ArrowWriter::try_new(file, schema, Some(ctx.props.clone())).map_err(parquet_err)?;
    let mut rows = 0u64;
    for batch in batches {
        if ctx.cancel.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let batch = batch.map_err(|source| GenError::Generate {
            table,
            path: tmp.to_path_buf(),
            source,
        })?;
        writer.write(&batch).map_err(parquet_err)?;
        let n = batch.num_rows() as u64;
        rows += n;
        ctx.bar.inc(n);
    }
    writer.close().map_err(parquet_err)?;
    Ok(Some(rows))
}

#[path = "gen/foreign.rs"]
pub mod foreign;
#[path = "gen/tables.rs"]
mod tables;
use foreign::prepare_table_dir;
use tables::{Table, Unit, plan};

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#[path = "gen/tests.rs"]
mod tests;
