//! Tests of byte-split columns: the transposition's layout and round trip at
//! every width and length (blocks and tails), and batches of every column
//! kind split and joined back, sliced or not, with the columns that are not
//! split passed through untouched.

use super::*;
use crate::exchange::{Compression, MapObjectBuilder};
use arrow::array::{
    BooleanArray, Date32Array, Decimal128Array, Decimal256Array, DictionaryArray, Float32Array,
    Float64Array, Int8Array, Int16Array, Int32Array, Int64Array, IntervalMonthDayNanoArray,
    ListArray, StringViewArray, TimestampMicrosecondArray, UInt64Array,
};
use arrow::datatypes::{Field, Int32Type, IntervalMonthDayNano, Schema, SchemaRef, TimeUnit, i256};

/// Bytes that differ from value to value and plane to plane.
fn bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn a_plane_holds_one_byte_of_every_value_in_order() {
    let values = [1u8, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];
    let mut planes = [0u8; 12];
    split(&values, 4, &mut planes);
    assert_eq!(planes, [1, 5, 9, 2, 6, 10, 3, 7, 11, 4, 8, 12]);
    let mut back = [0u8; 12];
    join(&planes, 4, &mut back);
    assert_eq!(back, values);
}

#[test]
fn every_width_and_length_round_trips_and_matches_the_plain_layout() {
    for width in [2, 3, 4, 8, 12, 16, 32] {
        // Lengths below a block, at it, and with tails of every size.
        for n in [0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 5401] {
            let values = bytes(n * width, (width * 100_000 + n) as u64);
            let mut planes = vec![0u8; n * width];
            split(&values, width, &mut planes);
            let mut expected = vec![0u8; n * width];
            split_any(&values, width, &mut expected);
            assert_eq!(planes, expected, "split, width {width}, {n} values");
            let mut back = vec![0u8; n * width];
            join(&planes, width, &mut back);
            assert_eq!(back, values, "join, width {width}, {n} values");
        }
    }
}

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("i8", DataType::Int8, true),
        Field::new("i16", DataType::Int16, true),
        Field::new("i32", DataType::Int32, true),
        Field::new("i64", DataType::Int64, true),
        Field::new("u64", DataType::UInt64, false),
        Field::new("f32", DataType::Float32, true),
        Field::new("f64", DataType::Float64, true),
        Field::new("dec", DataType::Decimal128(15, 2), true),
        Field::new("dec256", DataType::Decimal256(40, 3), true),
        Field::new("date", DataType::Date32, true),
        Field::new(
            "ts",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            true,
        ),
        Field::new(
            "mdn",
            DataType::Interval(arrow::datatypes::IntervalUnit::MonthDayNano),
            true,
        ),
        Field::new("s", DataType::Utf8View, true),
        Field::new("b", DataType::Boolean, true),
        Field::new(
            "dict",
            DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
            true,
        ),
        Field::new(
            "list",
            DataType::List(Arc::new(Field::new_list_field(DataType::Int64, true))),
            true,
        ),
    ]))
}

fn batch(n: usize) -> RecordBatch {
    let null = |i: usize| i % 5 == 3;
    let opt = |i: usize, v: i64| (!null(i)).then_some(v);
    let r = 0..n;
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int8Array::from_iter(
            r.clone().map(|i| opt(i, i as i64).map(|v| v as i8)),
        )),
        Arc::new(Int16Array::from_iter(
            r.clone().map(|i| opt(i, i as i64 * 3).map(|v| v as i16)),
        )),
        Arc::new(Int32Array::from_iter(
            r.clone().map(|i| opt(i, i as i64 * 77).map(|v| v as i32)),
        )),
        Arc::new(Int64Array::from_iter(
            r.clone().map(|i| opt(i, i as i64 * 1_000_003)),
        )),
        Arc::new(UInt64Array::from_iter_values(
            r.clone().map(|i| u64::MAX - i as u64),
        )),
        Arc::new(Float32Array::from_iter(
            r.clone().map(|i| opt(i, i as i64).map(|v| v as f32 / 7.0)),
        )),
        Arc::new(Float64Array::from_iter(
            r.clone().map(|i| opt(i, i as i64).map(|v| v as f64 / 3.0)),
        )),
        Arc::new(
            Decimal128Array::from_iter(
                r.clone().map(|i| opt(i, i as i64 * 12_345).map(i128::from)),
            )
            .with_precision_and_scale(15, 2)
            .expect("decimal"),
        ),
        Arc::new(
            Decimal256Array::from_iter(
                r.clone()
                    .map(|i| opt(i, -(i as i64)).map(|v| i256::from_i128(i128::from(v)))),
            )
            .with_precision_and_scale(40, 3)
            .expect("decimal256"),
        ),
        Arc::new(Date32Array::from_iter(
            r.clone().map(|i| opt(i, 8000 + i as i64).map(|v| v as i32)),
        )),
        Arc::new(
            TimestampMicrosecondArray::from_iter(
                r.clone().map(|i| opt(i, 1_700_000_000_000_000 + i as i64)),
            )
            .with_timezone("UTC"),
        ),
        Arc::new(IntervalMonthDayNanoArray::from_iter(r.clone().map(|i| {
            opt(i, i as i64).map(|v| IntervalMonthDayNano::new(v as i32, -(v as i32), v * 1000))
        }))),
        Arc::new(StringViewArray::from_iter(
            r.clone()
                .map(|i| opt(i, i as i64).map(|v| format!("value number {v}"))),
        )),
        Arc::new(BooleanArray::from_iter(
            r.clone().map(|i| opt(i, i as i64).map(|v| v % 2 == 0)),
        )),
        Arc::new(DictionaryArray::<Int32Type>::from_iter(r.clone().map(
            |i| opt(i, i as i64 % 3).map(|v| ["a", "b", "c"][v as usize]),
        ))),
        Arc::new(ListArray::from_iter_primitive::<
            arrow::datatypes::Int64Type,
            _,
            _,
        >(r.clone().map(|i| {
            opt(i, i as i64).map(|v| vec![Some(v), None, Some(-v)])
        }))),
    ];
    RecordBatch::try_new(schema(), columns).expect("batch")
}

#[test]
fn a_batch_of_every_kind_of_column_round_trips() {
    for n in [0, 1, 9, 1000] {
        let original = batch(n);
        let split = split_batch(&original).expect("split");
        assert_eq!(split.schema(), original.schema());
        assert_eq!(split.num_rows(), n);
        let joined = join_batch(&split).expect("join");
        assert_eq!(joined, original, "{n} rows");
    }
}

#[test]
fn only_fixed_width_columns_of_two_bytes_or_more_are_split() {
    let original = batch(100);
    let split = split_batch(&original).expect("split");
    for (i, field) in original.schema().fields().iter().enumerate() {
        let (before, after) = (original.column(i), split.column(i));
        let splits = split_width(field.data_type()).is_some();
        let expected = matches!(
            field.name().as_str(),
            "i16"
                | "i32"
                | "i64"
                | "u64"
                | "f32"
                | "f64"
                | "dec"
                | "dec256"
                | "date"
                | "ts"
                | "mdn"
        );
        assert_eq!(splits, expected, "{}", field.name());
        if splits {
            // Same type, same validity, values laid out by plane.
            assert_eq!(after.data_type(), before.data_type());
            assert_eq!(after.nulls(), before.nulls(), "{}", field.name());
            assert_ne!(after.to_data(), before.to_data(), "{}", field.name());
        } else {
            assert!(
                Arc::ptr_eq(before, after),
                "{} passed through",
                field.name()
            );
        }
    }
}

#[test]
fn a_sliced_batch_splits_its_own_rows_only() {
    let whole = batch(1000);
    let slice = whole.slice(333, 77);
    let split = split_batch(&slice).expect("split");
    // The split values are exactly the slice's rows, from offset 0.
    assert_eq!(split.column(3).to_data().offset(), 0);
    assert_eq!(split.column(3).to_data().buffers()[0].len(), 77 * 8);
    assert_eq!(join_batch(&split).expect("join"), slice);
}

#[test]
fn a_batch_without_splittable_columns_is_returned_as_it_is() {
    let schema = Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8View, true)]));
    let column: ArrayRef = Arc::new(StringViewArray::from(vec![Some("a"), None]));
    let original = RecordBatch::try_new(schema, vec![column]).expect("batch");
    let split = split_batch(&original).expect("split");
    assert!(Arc::ptr_eq(split.column(0), original.column(0)));
}

/// One partition's bytes of an object holding `batch`.
fn object(batch: &RecordBatch, compression: Compression, split: bool) -> bytes::Bytes {
    let mut builder = MapObjectBuilder::new(batch.schema(), 1, compression, 8192)
        .expect("builder")
        .with_byte_split(split);
    builder.push(0, batch.clone()).expect("push");
    let (tails, _) = builder.finish().expect("finish");
    tails.into_iter().next().expect("one partition")
}

#[test]
fn split_objects_decode_to_the_same_rows_in_fewer_bytes() {
    // What a map task shuffles: ascending keys, prices, dates.
    let n = 5000;
    let noise = bytes(n * 3, 7);
    let schema = Arc::new(Schema::new(vec![
        Field::new("key", DataType::Int64, false),
        Field::new("price", DataType::Decimal128(15, 2), false),
        Field::new("day", DataType::Date32, true),
    ]));
    let mut key = 1_000_000i64;
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values((0..n).map(|i| {
            key += 1 + i64::from(noise[i] % 32);
            key
        }))),
        Arc::new(
            Decimal128Array::from_iter_values(
                (0..n).map(|i| i128::from(noise[n + i]) * 40_000 + i as i128),
            )
            .with_precision_and_scale(15, 2)
            .expect("decimal"),
        ),
        Arc::new(Date32Array::from_iter((0..n).map(|i| {
            (i % 11 != 0).then_some(8_000 + i32::from(noise[2 * n + i]) * 9)
        }))),
    ];
    let batch = RecordBatch::try_new(Arc::clone(&schema), columns).expect("batch");
    let header = crate::exchange::stream_header(&schema).expect("header");
    for compression in [Compression::Zstd(1), Compression::Lz4] {
        let plain = object(&batch, compression, false);
        let split = object(&batch, compression, true);
        assert!(
            split.len() < plain.len(),
            "{compression:?}: {} bytes split, {} plain",
            split.len(),
            plain.len()
        );
        let decoded =
            crate::exchange::decode_partition(split.clone(), &header, true).expect("decode");
        assert_eq!(decoded, vec![batch.clone()], "{compression:?}");
        // Still arrow's own IPC stream: read without joining, it holds the
        // split columns.
        let raw = crate::exchange::decode_partition(split, &header, false).expect("decode raw");
        assert_eq!(
            raw,
            vec![split_batch(&batch).expect("split")],
            "{compression:?}"
        );
    }
}

#[test]
fn uncompressed_objects_are_not_split() {
    let on = crate::config::ShuffleOptions {
        compression: "zstd:1".to_string(),
        ..Default::default()
    };
    assert!(on.byte_split, "on by default");
    assert!(crate::exchange::byte_split(&on));
    let lz4 = crate::config::ShuffleOptions::default();
    assert!(crate::exchange::byte_split(&lz4));
    let none = crate::config::ShuffleOptions {
        compression: "none".to_string(),
        ..Default::default()
    };
    assert!(!crate::exchange::byte_split(&none));
    let off = crate::config::ShuffleOptions {
        byte_split: false,
        ..on
    };
    assert!(!crate::exchange::byte_split(&off));
}
