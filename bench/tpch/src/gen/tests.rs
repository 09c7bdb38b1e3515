//! Tests of the generator: row counts, keys, value domains and the Parquet layout.

use super::*;
use arrow::array::{Array, Int64Array, RecordBatch};
use arrow::datatypes::DataType;
use parquet::arrow::arrow_reader::{ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use parquet::file::metadata::PageIndexPolicy;

const SF: f64 = 0.01;

fn opts(out: &Path, row_group_rows: usize) -> GenOptions {
    GenOptions {
        scale_factor: SF,
        out: out.to_path_buf(),
        row_group_rows,
        progress: false,
        threads: 2,
    }
}

/// Row counts straight from tpchgen's row generators, independent of this module.
fn tpchgen_row_count(table: &str, sf: f64) -> u64 {
    let n = match table {
        "nation" => NationGenerator::new(sf, 1, 1).iter().count(),
        "region" => RegionGenerator::new(sf, 1, 1).iter().count(),
        "part" => PartGenerator::new(sf, 1, 1).iter().count(),
        "supplier" => SupplierGenerator::new(sf, 1, 1).iter().count(),
        "partsupp" => PartSuppGenerator::new(sf, 1, 1).iter().count(),
        "customer" => CustomerGenerator::new(sf, 1, 1).iter().count(),
        "orders" => OrderGenerator::new(sf, 1, 1).iter().count(),
        "lineitem" => LineItemGenerator::new(sf, 1, 1).iter().count(),
        other => panic!("unknown table {other}"),
    };
    n as u64
}

fn parquet_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .collect();
    files.sort();
    files
}

fn read_all(dir: &Path) -> Vec<RecordBatch> {
    parquet_files(dir)
        .iter()
        .flat_map(|path| {
            ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap())
                .unwrap()
                .build()
                .unwrap()
                .map(|b| b.unwrap())
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn generates_sf001_with_dbgen_row_counts() {
    let dir = tempfile::tempdir().unwrap();
    let row_group_rows = 10_000;
    let summary = generate(&opts(dir.path(), row_group_rows)).unwrap();

    // The brief's numbers, checked against tpchgen's own generators.
    let expected: [(&str, u64); 8] = [
        ("nation", 25),
        ("region", 5),
        ("part", 2000),
        ("supplier", 100),
        ("partsupp", 8000),
        ("customer", 1500),
        ("orders", 15000),
        ("lineitem", 60175),
    ];
    for (table, rows) in expected {
        assert_eq!(tpchgen_row_count(table, SF), rows, "{table}");
    }
    let names: Vec<&str> = summary.tables.iter().map(|(t, _, _)| t.as_str()).collect();
    assert_eq!(names, TABLES);
    for ((table, rows, bytes), (_, want)) in summary.tables.iter().zip(expected) {
        assert_eq!(*rows, want, "{table} rows");
        let on_disk: u64 = parquet_files(&dir.path().join(table))
            .iter()
            .map(|p| fs::metadata(p).unwrap().len())
            .sum();
        assert_eq!(*bytes, on_disk, "{table} bytes");
    }
    assert!(is_complete(dir.path()));
    assert_eq!(completed_scale_factor(dir.path()), Some(SF));

    for table in TABLES {
        let table_dir = dir.path().join(table);
        // Small scale factor: one file per table, no temporaries left behind.
        let names: Vec<String> = fs::read_dir(&table_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["part-0000.parquet"], "{table}");

        let path = table_dir.join("part-0000.parquet");
        let builder = ParquetRecordBatchReaderBuilder::try_new_with_options(
            File::open(&path).unwrap(),
            ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Required),
        )
        .unwrap();
        let metadata = builder.metadata().clone();
        let total: i64 = metadata.file_metadata().num_rows();
        assert_eq!(total as u64, tpchgen_row_count(table, SF), "{table}");
        let groups = metadata.row_groups();
        for (i, rg) in groups.iter().enumerate() {
            if i + 1 < groups.len() {
                assert_eq!(rg.num_rows() as usize, row_group_rows, "{table} rg {i}");
            } else {
                assert!(rg.num_rows() as usize <= row_group_rows);
            }
            for col in rg.columns() {
                assert!(col.statistics().is_some(), "{table} {}", col.column_path());
                assert!(matches!(col.compression(), Compression::ZSTD(_)));
            }
        }
        assert_eq!(groups.len(), (total as usize).div_ceil(row_group_rows));
        // Page index (column index + offset index) written for page pruning.
        assert!(metadata.column_index().is_some(), "{table}");
        assert!(metadata.offset_index().is_some(), "{table}");

        // The schema is tpchgen-arrow's, types included.
        let tbl = Table::ALL.into_iter().find(|t| t.name() == table).unwrap();
        assert_eq!(builder.schema(), &tbl.batches(SF, 1, 1).schema(), "{table}");
        let rows: usize = builder
            .build()
            .unwrap()
            .map(|b| b.unwrap().num_rows())
            .sum();
        assert_eq!(rows as i64, total);
    }

    let lineitem = read_all(&dir.path().join("lineitem"));
    let schema = lineitem[0].schema();
    let field = |name: &str| schema.field_with_name(name).unwrap().data_type().clone();
    assert_eq!(field("l_extendedprice"), DataType::Decimal128(15, 2));
    assert_eq!(field("l_shipdate"), DataType::Date32);
}

#[test]
fn split_parts_concatenate_to_the_single_part_table() {
    let whole = tempfile::tempdir().unwrap();
    let split = tempfile::tempdir().unwrap();
    let settings = |target| Settings {
        compression: Compression::SNAPPY,
        target_rows_per_file: target,
    };
    generate_with(&opts(whole.path(), 4096), &settings(TARGET_ROWS_PER_FILE)).unwrap();
    let summary = generate_with(&opts(split.path(), 4096), &settings(7_000)).unwrap();

    // ceil(rows / 7000) files, named from part-0000.
    for (table, files) in [
        ("nation", 1),
        ("region", 1),
        ("part", 1),
        ("supplier", 1),
        ("partsupp", 2),
        ("customer", 1),
        ("orders", 3),
        ("lineitem", 9),
    ] {
        let names: Vec<String> = parquet_files(&split.path().join(table))
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        let want: Vec<String> = (0..files).map(|i| format!("part-{i:04}.parquet")).collect();
        assert_eq!(names, want, "{table}");
    }
    assert_eq!(
        summary.total_rows(),
        25 + 5 + 2000 + 100 + 8000 + 1500 + 15000 + 60175
    );

    for table in TABLES {
        let a = arrow::compute::concat_batches(
            &read_all(&whole.path().join(table))[0].schema(),
            &read_all(&whole.path().join(table)),
        )
        .unwrap();
        let b_batches = read_all(&split.path().join(table));
        let b = arrow::compute::concat_batches(&b_batches[0].schema(), &b_batches).unwrap();
        assert_eq!(a, b, "{table}");
    }
    // Lineitem keys run in order across the parts.
    let keys = read_all(&split.path().join("lineitem"));
    let mut last = 0;
    for batch in keys {
        let col = batch
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap()
            .clone();
        assert_eq!(col.null_count(), 0);
        for key in col.values().iter() {
            assert!(*key >= last);
            last = *key;
        }
    }
}

#[test]
fn is_complete_semantics() {
    let dir = tempfile::tempdir().unwrap();
    assert!(!is_complete(dir.path()));
    assert!(!is_complete(&dir.path().join("missing")));
    assert_eq!(completed_scale_factor(dir.path()), None);

    generate(&opts(dir.path(), DEFAULT_ROW_GROUP_ROWS)).unwrap();
    assert!(is_complete(dir.path()));

    // No marker: an interrupted run.
    let marker = dir.path().join(SUCCESS_MARKER);
    fs::remove_file(&marker).unwrap();
    assert!(!is_complete(dir.path()));
    fs::write(&marker, "").unwrap();
    assert!(is_complete(dir.path()));
    assert_eq!(completed_scale_factor(dir.path()), None);

    // A table folder without parquet files (only a temporary) is not complete.
    let region = dir.path().join("region");
    fs::rename(
        region.join("part-0000.parquet"),
        region.join(".part-0000.parquet.tmp"),
    )
    .unwrap();
    assert!(!is_complete(dir.path()));
    // A missing table folder neither.
    fs::remove_dir_all(&region).unwrap();
    assert!(!is_complete(dir.path()));

    // Rerun over the debris (and a stale extra part from a "bigger" run): cleaned, complete.
    let lineitem = dir.path().join("lineitem");
    fs::write(lineitem.join("part-0007.parquet"), b"stale").unwrap();
    fs::write(lineitem.join(".part-0003.parquet.tmp"), b"partial").unwrap();
    // A file the generator would not have written: refused, nothing touched.
    fs::write(lineitem.join("README"), b"not ours").unwrap();
    let refused = generate(&opts(dir.path(), DEFAULT_ROW_GROUP_ROWS))
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("README") && refused.contains("not written by squall tpch gen"),
        "{refused}"
    );
    assert!(lineitem.join("part-0007.parquet").is_file());
    assert!(marker.is_file());
    fs::remove_file(lineitem.join("README")).unwrap();
    let summary = generate(&opts(dir.path(), DEFAULT_ROW_GROUP_ROWS)).unwrap();
    assert!(is_complete(dir.path()));
    assert_eq!(
        summary.tables[7],
        ("lineitem".to_string(), 60175, summary.tables[7].2)
    );
    let mut names: Vec<String> = fs::read_dir(&lineitem)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["part-0000.parquet"]);
    assert!(region.join("part-0000.parquet").is_file());
}

#[test]
fn rejects_bad_options() {
    let dir = tempfile::tempdir().unwrap();
    for sf in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let mut o = opts(dir.path(), 100);
        o.scale_factor = sf;
        assert!(matches!(generate(&o), Err(GenError::InvalidScaleFactor(_))));
    }
    assert!(matches!(
        generate(&opts(dir.path(), 0)),
        Err(GenError::InvalidRowGroupRows)
    ));
    // Output under a regular file: the error names the path.
    let file = dir.path().join("file");
    fs::write(&file, b"x").unwrap();
    let err = generate(&opts(&file.join("out"), 100)).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, GenError::OutDir { .. }), "{msg}");
    assert!(
        msg.contains(&file.join("out").display().to_string()),
        "{msg}"
    );
    // A table path taken by a regular file: the error names the table and the path.
    let out = dir.path().join("out");
    fs::create_dir(&out).unwrap();
    fs::write(out.join("orders"), b"x").unwrap();
    let err = generate(&opts(&out, 100)).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("table orders"), "{msg}");
    assert!(
        msg.contains(&out.join("orders").display().to_string()),
        "{msg}"
    );
    assert!(!is_complete(&out));
}

#[test]
fn plan_splits_big_tables_by_scale_factor() {
    let files = |sf: f64, table: Table| table.num_parts(sf, TARGET_ROWS_PER_FILE);
    assert_eq!(files(1.0, Table::LineItem), 3);
    assert_eq!(files(1.0, Table::Orders), 1);
    assert_eq!(files(10.0, Table::LineItem), 30);
    assert_eq!(files(10.0, Table::Orders), 8);
    assert_eq!(files(10.0, Table::PartSupp), 4);
    assert_eq!(files(100.0, Table::Nation), 1);
    assert_eq!(files(0.000_001, Table::Supplier), 1);
    // Expected rows are exact except for lineitem's 4-lines-per-order estimate.
    let units = plan(10.0, TARGET_ROWS_PER_FILE);
    let orders: u64 = units
        .iter()
        .filter(|u| u.table == Table::Orders)
        .map(|u| u.expected_rows)
        .sum();
    assert_eq!(orders, 15_000_000);
}
