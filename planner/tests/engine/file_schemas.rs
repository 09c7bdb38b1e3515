//! Tables whose files disagree on their schemas: column types widened
//! across files, columns added later, names in other cases.

use crate::common::*;

/// Files of one table written with different but compatible column types
/// (an integer as INT32 then INT64, a decimal whose precision grew,
/// timestamps in milliseconds then microseconds, a column added later) read as one table of the wider types, staged and
/// one-task; types no value fits both fail naming the column and files.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_of_a_table_with_widened_types_read_as_one_table() {
    use arrow::array::{
        Decimal128Array, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
    };
    use arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    std::fs::create_dir_all(&t).unwrap();
    let old = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int32, false),
        Field::new("price", DataType::Decimal128(8, 2), false),
    ]));
    write_parquet(
        t.join("a.parquet"),
        RecordBatch::try_new(
            old,
            vec![
                Arc::new(Int32Array::from(vec![1, 2, 3])),
                Arc::new(
                    Decimal128Array::from(vec![150, 250, 350])
                        .with_precision_and_scale(8, 2)
                        .unwrap(),
                ),
            ],
        )
        .unwrap(),
    );
    let new = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("price", DataType::Decimal128(14, 4), false),
        Field::new("note", DataType::Utf8, true),
    ]));
    write_parquet(
        t.join("b.parquet"),
        RecordBatch::try_new(
            new,
            vec![
                Arc::new(Int64Array::from(vec![4_000_000_000, 5])),
                Arc::new(
                    Decimal128Array::from(vec![12_345_678_901, 5_0000])
                        .with_precision_and_scale(14, 4)
                        .unwrap(),
                ),
                Arc::new(StringArray::from(vec![Some("new"), None])),
            ],
        )
        .unwrap(),
    );
    let bad = dir.path().join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    for (name, column) in [
        (
            "a.parquet",
            Arc::new(Int64Array::from(vec![1])) as arrow::array::ArrayRef,
        ),
        ("b.parquet", Arc::new(Float64Array::from(vec![1.5])) as _),
    ] {
        let batch = RecordBatch::try_from_iter([("v", column)]).unwrap();
        write_parquet(bad.join(name), batch);
    }
    // Timestamps in milliseconds, then microseconds.
    let ts = dir.path().join("ts");
    std::fs::create_dir_all(&ts).unwrap();
    let millis = arrow::array::TimestampMillisecondArray::from(vec![1_704_103_200_123]);
    let micros = arrow::array::TimestampMicrosecondArray::from(vec![1_704_189_600_000_456]);
    for (name, column) in [
        ("a.parquet", Arc::new(millis) as arrow::array::ArrayRef),
        ("b.parquet", Arc::new(micros) as _),
    ] {
        let batch = RecordBatch::try_from_iter([("at", column)]).unwrap();
        write_parquet(ts.join(name), batch);
    }
    let sql = "select id, price, note, arrow_typeof(id) as t from t order by id";
    let expected = "id,price,note,t\n1,1.5000,,Int64\n2,2.5000,,Int64\n3,3.5000,,Int64\n\
                    5,5.0000,,Int64\n4000000000,1234567.8901,new,Int64\n";
    for single in ["0", "1000000000000"] {
        let engine = squall_planner::Engine::local(squall_planner::EngineOptions {
            catalog: Some(dir.path().to_string_lossy().to_string()),
            settings: settings(&[
                ("squall.query.single_task_bytes", single),
                ("squall.scan.target_task_bytes", "1"),
            ]),
        })
        .await
        .unwrap();
        assert_eq!(
            squall_csv(&engine, sql).await,
            expected,
            "single_task_bytes={single}"
        );
        assert_eq!(
            squall_csv(
                &engine,
                "select at, arrow_typeof(at) as t from ts order by at"
            )
            .await,
            "at,t\n2024-01-01T10:00:00.123,Timestamp(µs)\n2024-01-02T10:00:00.000456,Timestamp(µs)\n",
            "single_task_bytes={single}"
        );
        let err = engine
            .sql("select * from bad")
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("column v") && err.contains("a.parquet") && err.contains("b.parquet"),
            "{err}"
        );
    }
}

/// A table of more files than its schema is read from (256: the first and
/// last 128 by name, so registering a table of 100,000 files does not read
/// 100,000 footers) reads a column its later files added, NULL in the
/// earlier ones; a column only files in the middle hold is not read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_of_many_files_read_their_schema_from_the_first_and_last() {
    use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    std::fs::create_dir_all(&table).unwrap();
    for f in 0..300i64 {
        let mut columns: Vec<(&str, ArrayRef)> = vec![("k", Arc::new(Int64Array::from(vec![f])))];
        if f >= 290 {
            columns.push(("note", Arc::new(StringArray::from(vec![format!("n{f}")]))));
        }
        if f == 150 {
            columns.push(("mid", Arc::new(Int64Array::from(vec![1]))));
        }
        let batch = RecordBatch::try_from_iter(columns).unwrap();
        write_parquet(table.join(format!("part-{f:04}.parquet")), batch);
    }
    for single in ["0", "1000000000000"] {
        let engine = engine(dir.path(), &[("squall.query.single_task_bytes", single)]).await;
        let sql = "select count(*), count(note), min(note), sum(k) from t";
        assert_eq!(
            squall_csv(&engine, sql).await,
            "count(*),count(t.note),min(t.note),sum(t.k)\n300,10,n290,44850\n",
            "single_task_bytes={single}"
        );
        let err = engine
            .sql("select mid from t")
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("mid"), "{err}");
    }
}

/// Files naming their columns in mixed or upper case (`L_ORDERKEY`,
/// `UserId`: Spark's, pandas' and many exports' habit) read under
/// lowercase names, as Trino and Athena present them: the 22 TPC-H
/// queries, written in lowercase, answer on SF 0.01 rewritten with
/// uppercase column names as single-node DataFusion answers on the
/// original; a mixed-case column is found written any way unquoted, and
/// filters on it prune row groups by the file's statistics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn columns_named_in_upper_case_are_read_by_lowercase_names() {
    let data = sf001_small_groups();
    let upper = tempfile::tempdir().unwrap();
    let reference = single_node(&data.path).await;
    write_tpch_as(&reference, upper.path(), |f| {
        format!("{0} AS \"{1}\"", f.name(), f.name().to_uppercase())
    })
    .await;
    let engine = engine(upper.path(), &[("squall.scan.target_task_bytes", "100000")]).await;
    let schema = squall_csv(&engine, "select * from region limit 0").await;
    assert_eq!(schema.trim(), "r_regionkey,r_name,r_comment");
    assert_tpch_as_reference(&engine, &reference, "on upper-case columns").await;
    let expected = single_node_csv(
        &reference,
        "select count(*) as n from lineitem where l_orderkey < 100 and l_quantity > 10",
    )
    .await;
    for sql in [
        "select count(*) as n from lineitem where L_ORDERKEY < 100 and l_Quantity > 10",
        "select count(*) as n from lineitem where \"l_orderkey\" < 100 and l_quantity > 10",
        // Quoted names match whatever their case, as in Trino.
        "select count(*) as n from \"LineItem\" as \"Li\" \
         where \"Li\".\"L_ORDERKEY\" < 100 and \"l_Quantity\" > 10",
    ] {
        assert_eq!(squall_csv(&engine, sql).await, expected, "{sql}");
    }
    let unknown = engine
        .sql("select \"L_NOPE\" from lineitem")
        .await
        .err()
        .map(|e| e.to_string());
    assert!(
        unknown
            .as_deref()
            .is_some_and(|e| e.contains("No field named \"L_NOPE\"")),
        "{unknown:?}"
    );
    let explained = squall_csv(
        &engine,
        "explain select count(*) from orders where o_orderkey < 10",
    )
    .await;
    assert!(explained.contains("O_ORDERKEY"), "{explained}");
}

/// Files of one table that name a column in different cases (`UserId` in
/// one, `userid` in another, as different writers do) are one column, read
/// from each file by its own name, staged and one task, filters too; a
/// file naming two columns alike but for case keeps both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn columns_files_name_in_different_cases_are_one_column() {
    use arrow::array::{Int64Array, RecordBatch};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let write = |table: &str, file: &str, columns: Vec<(&str, Vec<i64>)>| {
        let folder = dir.path().join(table);
        std::fs::create_dir_all(&folder).unwrap();
        let batch = RecordBatch::try_from_iter(
            columns
                .into_iter()
                .map(|(n, v)| (n, Arc::new(Int64Array::from(v)) as arrow::array::ArrayRef)),
        )
        .unwrap();
        write_parquet(folder.join(file), batch);
    };
    write(
        "t",
        "a.parquet",
        vec![("UserId", vec![1, 2]), ("v", vec![10, 20])],
    );
    write("t", "b.parquet", vec![("userid", vec![3]), ("V", vec![30])]);
    write(
        "both",
        "a.parquet",
        vec![("Key", vec![1]), ("key", vec![2])],
    );
    for single in ["0", "1000000000000"] {
        let engine = squall_planner::Engine::local(squall_planner::EngineOptions {
            catalog: Some(dir.path().to_string_lossy().to_string()),
            settings: settings(&[
                ("squall.query.single_task_bytes", single),
                ("squall.scan.target_task_bytes", "1"),
            ]),
        })
        .await
        .unwrap();
        for (sql, want) in [
            (
                "select userid, v from t order by v",
                "userid,v\n1,10\n2,20\n3,30\n",
            ),
            ("select sum(v) as s from t where userid >= 2", "s\n50\n"),
            ("select \"Key\" + 10 * key as k from both", "k\n21\n"),
        ] {
            assert_eq!(
                squall_csv(&engine, sql).await,
                want,
                "{sql}, single_task_bytes={single}"
            );
        }
    }
}

/// Files of one table that order its columns differently (as writers do
/// after a schema change), one with a narrower type and one naming a
/// column in another case: planning skips row groups by each file's own
/// statistics of the filtered column, wherever the file puts it. Before,
/// planning read the statistics of the column at the table's position in
/// the file: `where a = 7` skipped the file holding 7 (its first column
/// was `b`), and answered no row. And a file naming a column in another
/// case with a narrower type (`B` INT32 beside `b` BIGINT) made a second
/// column `B` of the table (`b` read NULL from it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn row_groups_are_skipped_by_the_filtered_columns_own_statistics() {
    use arrow::array::{Int32Array, Int64Array, RecordBatch};
    use arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    let batch = |fields: Vec<(&str, DataType)>, columns: Vec<arrow::array::ArrayRef>| {
        let schema = Schema::new(
            fields
                .into_iter()
                .map(|(n, ty)| Field::new(n, ty, true))
                .collect::<Vec<_>>(),
        );
        RecordBatch::try_new(Arc::new(schema), columns).unwrap()
    };
    write_parquet(
        t.join("f1.parquet"),
        batch(
            vec![("a", DataType::Int64), ("b", DataType::Int64)],
            vec![
                Arc::new(Int64Array::from(vec![1, 2, 3])),
                Arc::new(Int64Array::from(vec![100, 200, 300])),
            ],
        ),
    );
    write_parquet(
        t.join("f2.parquet"),
        batch(
            vec![("b", DataType::Int64), ("a", DataType::Int64)],
            vec![
                Arc::new(Int64Array::from(vec![1000, 2000])),
                Arc::new(Int64Array::from(vec![7, 8])),
            ],
        ),
    );
    write_parquet(
        t.join("f3.parquet"),
        batch(
            vec![("B", DataType::Int32), ("a", DataType::Int32)],
            vec![
                Arc::new(Int32Array::from(vec![5000])),
                Arc::new(Int32Array::from(vec![9])),
            ],
        ),
    );
    for pairs in [&[][..], &[("squall.query.single_task_bytes", "1000000000")]] {
        let engine = engine(dir.path(), pairs).await;
        for (sql, want) in [
            ("select a, b from t where a = 7", "a,b\n7,1000\n"),
            ("select a, b from t where b = 1000", "a,b\n7,1000\n"),
            ("select a, b from t where a = 9", "a,b\n9,5000\n"),
            ("select a, b from t where b > 4000", "a,b\n9,5000\n"),
            (
                "select count(*) as n from t where a between 2 and 8",
                "n\n4\n",
            ),
        ] {
            assert_eq!(squall_csv(&engine, sql).await, want, "{sql} {pairs:?}");
        }
    }
}

/// A column one file writes dictionary-encoded (pandas' categoricals, as
/// pyarrow writes them) and another plainly is one column of the values'
/// type; before, the table was refused ("no type holds both").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dictionary_encoded_columns_are_columns_of_their_values() {
    use arrow::array::{DictionaryArray, Int64Array, RecordBatch, StringArray};
    use arrow::datatypes::Int32Type;
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    let plain = RecordBatch::try_from_iter([
        (
            "id",
            Arc::new(Int64Array::from(vec![1, 2])) as arrow::array::ArrayRef,
        ),
        ("s", Arc::new(StringArray::from(vec!["x", "y"]))),
    ])
    .unwrap();
    let dict: DictionaryArray<Int32Type> = vec!["y", "z", "y"].into_iter().collect();
    let encoded = RecordBatch::try_from_iter([
        (
            "id",
            Arc::new(Int64Array::from(vec![3, 4, 5])) as arrow::array::ArrayRef,
        ),
        ("s", Arc::new(dict)),
    ])
    .unwrap();
    write_parquet(t.join("a.parquet"), plain);
    write_parquet(t.join("b.parquet"), encoded);
    let engine = engine(dir.path(), &[]).await;
    for (sql, want) in [
        (
            "select s, count(*) as n, sum(id) as ids from t group by s order by s",
            "s,n,ids\nx,1,1\ny,3,10\nz,1,4\n",
        ),
        ("select id from t where s = 'z'", "id\n4\n"),
    ] {
        assert_eq!(squall_csv(&engine, sql).await, want, "{sql}");
    }
}

/// A struct column whose files hold different fields (one added later,
/// fields in another order, a field's integer widened), also as the
/// element of a list, is one column of every field, read from each file
/// by field name (a field a file lacks is NULL), staged and one task;
/// before, the table was refused ("no type holds both").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn struct_columns_whose_files_hold_different_fields_are_one_column() {
    use arrow::array::{
        Array, ArrayRef, Int32Array, Int64Array, ListArray, RecordBatch, StringArray, StructArray,
    };
    use arrow::buffer::OffsetBuffer;
    use arrow::datatypes::Field;
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    let file = |name: &str, id: i64, fields: Vec<(&str, ArrayRef)>| {
        let fields: Vec<(Arc<Field>, ArrayRef)> = fields
            .into_iter()
            .map(|(n, a)| (Arc::new(Field::new(n, a.data_type().clone(), true)), a))
            .collect();
        let s = StructArray::from(fields);
        let element = Arc::new(Field::new("element", s.data_type().clone(), true));
        let list = ListArray::new(
            element,
            OffsetBuffer::from_lengths([1]),
            Arc::new(s.clone()),
            None,
        );
        let batch = RecordBatch::try_from_iter([
            ("id", Arc::new(Int64Array::from(vec![id])) as ArrayRef),
            ("s", Arc::new(s) as ArrayRef),
            ("l", Arc::new(list) as ArrayRef),
        ])
        .unwrap();
        write_parquet(t.join(name), batch);
    };
    file(
        "a.parquet",
        1,
        vec![("a", Arc::new(Int32Array::from(vec![1])))],
    );
    file(
        "b.parquet",
        2,
        vec![
            ("b", Arc::new(StringArray::from(vec!["x"]))),
            ("a", Arc::new(Int64Array::from(vec![20]))),
        ],
    );
    for pairs in [&STAGED[..], &[]] {
        let engine = engine(dir.path(), pairs).await;
        for (sql, want) in [
            (
                "select id, s.a as a, s.b as b, l[1].a as la, l[1].b as lb from t order by id",
                "id,a,b,la,lb\n1,1,,1,\n2,20,x,20,x\n",
            ),
            ("select id from t where s.b = 'x'", "id\n2\n"),
            ("select sum(s.a) as s from t", "s\n21\n"),
        ] {
            assert_eq!(squall_csv(&engine, sql).await, want, "{sql} {pairs:?}");
        }
    }
}
