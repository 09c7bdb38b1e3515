//! Tests of the exchange object format and of [`MapObjectBuilder`]: round
//! trips of every column type, empty partitions, and taking the encoded bytes
//! out midway (what a spill does) without changing the object.

use super::*;
use arrow::array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int32Array, Int64Array,
    StringArray, StringViewArray, TimestampMicrosecondArray,
};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("i32", DataType::Int32, true),
        Field::new("i64", DataType::Int64, true),
        Field::new("f64", DataType::Float64, true),
        Field::new("dec", DataType::Decimal128(15, 2), true),
        Field::new("date", DataType::Date32, true),
        Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, None), true),
        Field::new("s", DataType::Utf8, true),
        Field::new("sv", DataType::Utf8View, true),
        Field::new("b", DataType::Boolean, true),
    ]))
}

fn batch(start: i32, n: i32) -> RecordBatch {
    let r: Vec<i32> = (start..start + n).collect();
    let null = |i: &i32| i % 7 == 0;
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from_iter(
            r.iter().map(|i| (!null(i)).then_some(*i)),
        )),
        Arc::new(Int64Array::from_iter(
            r.iter()
                .map(|i| (!null(i)).then_some(*i as i64 * 1_000_000_007)),
        )),
        Arc::new(Float64Array::from_iter(
            r.iter().map(|i| (!null(i)).then_some(*i as f64 / 3.0)),
        )),
        Arc::new(
            Decimal128Array::from_iter(r.iter().map(|i| (!null(i)).then_some(*i as i128 * 101)))
                .with_precision_and_scale(15, 2)
                .unwrap(),
        ),
        Arc::new(Date32Array::from_iter(
            r.iter().map(|i| (!null(i)).then_some(9000 + *i)),
        )),
        Arc::new(TimestampMicrosecondArray::from_iter(
            r.iter()
                .map(|i| (!null(i)).then_some(*i as i64 * 1_000_000)),
        )),
        Arc::new(StringArray::from_iter(
            r.iter()
                .map(|i| (!null(i)).then(|| format!("Customer#{i:09} ünïcode"))),
        )),
        Arc::new(StringViewArray::from_iter(
            r.iter()
                .map(|i| (!null(i)).then(|| "x".repeat((*i % 40) as usize))),
        )),
        Arc::new(BooleanArray::from_iter(
            r.iter().map(|i| (!null(i)).then_some(i % 2 == 0)),
        )),
    ];
    RecordBatch::try_new(schema(), cols).unwrap()
}

/// The schema message the reader puts in front of each stream of [`schema`].
fn header() -> Vec<u8> {
    stream_header(&schema()).unwrap()
}

fn object(chunks: &[Bytes]) -> Bytes {
    Bytes::from(
        chunks
            .iter()
            .flat_map(|c| c.iter().copied())
            .collect::<Vec<u8>>(),
    )
}

#[test]
fn round_trip_all_types_and_ranges() {
    for compression in [
        Compression::None,
        Compression::Lz4,
        Compression::Zstd(3),
        Compression::Zstd(1),
        Compression::Zstd(-3),
    ] {
        let mut b = MapObjectBuilder::new(schema(), 3, compression, 100).unwrap();
        b.push(0, batch(0, 250)).unwrap();
        b.push(2, batch(250, 10)).unwrap();
        b.push(0, batch(260, 5)).unwrap();
        let (chunks, ranges) = b.finish().unwrap();
        let obj = object(&chunks);
        assert_eq!(ranges.len(), 3);
        assert_eq!(ranges[0].rows, 255);
        assert_eq!(
            ranges[1],
            PartitionRange {
                offset: ranges[0].len,
                len: 0,
                rows: 0
            }
        );
        assert_eq!(ranges[2].offset, ranges[0].len);
        assert_eq!(obj.len() as u64, ranges[2].offset + ranges[2].len);

        let p0 = decode_partition(obj.slice(0..ranges[0].len as usize), &header(), false).unwrap();
        let got = arrow::compute::concat_batches(&schema(), &p0).unwrap();
        let want =
            arrow::compute::concat_batches(&schema(), &[batch(0, 250), batch(260, 5)]).unwrap();
        assert_eq!(got, want, "{compression:?}");
        // coalesced toward 100-row batches rather than kept as pushed
        assert!(
            p0.iter().all(|b| b.num_rows() <= 100),
            "{:?}",
            p0.iter().map(|b| b.num_rows()).collect::<Vec<_>>()
        );

        let r2 = ranges[2];
        let p2 = decode_partition(
            obj.slice(r2.offset as usize..(r2.offset + r2.len) as usize),
            &header(),
            false,
        )
        .unwrap();
        assert_eq!(
            arrow::compute::concat_batches(&schema(), &p2).unwrap(),
            batch(250, 10)
        );
        assert!(
            decode_partition(Bytes::new(), &header(), false)
                .unwrap()
                .is_empty()
        );
    }
}

#[test]
fn adjacent_partitions_decode_from_one_range() {
    let mut b = MapObjectBuilder::new(schema(), 4, Compression::Lz4, 100).unwrap();
    b.push(0, batch(0, 30)).unwrap();
    b.push(1, batch(30, 20)).unwrap();
    b.push(3, batch(50, 7)).unwrap();
    let (chunks, ranges) = b.finish().unwrap();
    let obj = object(&chunks);
    let end = ranges[3].offset + ranges[3].len;
    let got = decode_partition(
        obj.slice(ranges[1].offset as usize..end as usize),
        &header(),
        false,
    )
    .unwrap();
    let got = arrow::compute::concat_batches(&schema(), &got).unwrap();
    let want = arrow::compute::concat_batches(&schema(), &[batch(30, 20), batch(50, 7)]).unwrap();
    assert_eq!(got, want);
    let all = decode_partition(obj.clone(), &header(), false).unwrap();
    assert_eq!(all.iter().map(|b| b.num_rows()).sum::<usize>(), 57);
}

#[test]
fn all_empty_object_has_no_bytes() {
    let mut b = MapObjectBuilder::new(schema(), 4, Compression::Lz4, 8192).unwrap();
    b.push(1, batch(0, 0)).unwrap();
    let (tails, ranges) = b.finish().unwrap();
    assert_eq!(tails.len(), 4);
    assert!(tails.iter().all(|t| t.is_empty()));
    assert!(ranges.iter().all(|r| r.len == 0 && r.rows == 0));
}

#[test]
fn out_of_range_partition_is_an_error() {
    let mut b = MapObjectBuilder::new(schema(), 2, Compression::None, 10).unwrap();
    assert!(b.push(2, batch(0, 3)).is_err());
}

#[test]
fn truncated_range_is_an_error() {
    let mut b = MapObjectBuilder::new(schema(), 1, Compression::Lz4, 10).unwrap();
    b.push(0, batch(0, 30)).unwrap();
    let (chunks, _) = b.finish().unwrap();
    let obj = object(&chunks);
    assert!(decode_partition(obj.slice(0..obj.len() / 2), &header(), false).is_err());
}

#[test]
fn keys_are_attempt_scoped_and_sharded() {
    let s = shard("q7", 1, 2, 16);
    assert_eq!(
        map_object_key("ex/", 16, "q7", 1, 2, 3),
        format!("ex/{s:02x}/q7/s1/t2/a3")
    );
    assert_eq!(map_object_key("", 1, "q7", 1, 2, 0), "00/q7/s1/t2/a0");
    assert_eq!(query_prefix("/a/b/", 10, "q"), "a/b/0a/q");
    let f = shard("q7", 4, 0, 16);
    assert_eq!(
        filter_object_key("ex", 16, "q7", 4),
        format!("ex/{f:02x}/q7/s4/filter")
    );
    // Every attempt of a task lands in the same shard.
    assert!(map_object_key("ex", 16, "q7", 1, 2, 0).starts_with(&query_prefix("ex", s, "q7")));
}

#[test]
fn a_stage_spreads_evenly_over_the_shards() {
    for shards in [1, 3, 16, 32, 256, 1000] {
        let n = shards.clamp(1, MAX_SHARDS);
        let mut count = vec![0u32; n as usize];
        for t in 0..(n * 5) {
            let s = shard("q1234", 3, t, shards);
            assert!(s < n, "shard {s} of {n}");
            count[s as usize] += 1;
        }
        assert!(count.iter().all(|&c| c == 5), "{shards}: {count:?}");
    }
    // A stage with fewer tasks than shards uses as many shards as tasks.
    let used = stage_shards("q1", 2, 5, 16);
    let mut distinct = used.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!((used.len(), distinct.len()), (5, 5));
    assert_eq!(stage_shards("q1", 2, 100, 16).len(), 16);
    // Stages of one query start at different shards (not all at 0).
    let starts: std::collections::HashSet<u32> =
        (0..32).map(|stage| shard("q1", stage, 0, 16)).collect();
    assert!(starts.len() > 4, "{starts:?}");
    // A fixed function: keys must not change between builds.
    assert_eq!(shard("q0123456789abcdef", 1, 0, 16), 9);
}

/// The object a builder makes when its encoded bytes are taken out after
/// the pushes listed in `take_after` (as a spill would, to disk): for each
/// partition, what was taken out of it followed by its tail.
fn object_taking_out(
    pushes: &[(usize, RecordBatch)],
    partitions: usize,
    batch_rows: usize,
    take_after: &[usize],
) -> (Bytes, Vec<PartitionRange>, usize) {
    let mut b = MapObjectBuilder::new(schema(), partitions, Compression::Lz4, batch_rows).unwrap();
    let mut taken: Vec<Vec<u8>> = vec![Vec::new(); partitions];
    let mut takes = 0;
    for (i, (p, batch)) in pushes.iter().enumerate() {
        b.push(*p, batch.clone()).unwrap();
        if take_after.contains(&i) {
            for (p, bytes) in b.take_encoded().unwrap() {
                taken[p].extend_from_slice(&bytes);
                takes += 1;
            }
            assert_eq!(b.encoded_bytes(), 0);
        }
    }
    let (tails, ranges) = b.finish().unwrap();
    let mut obj = Vec::new();
    for (p, tail) in tails.iter().enumerate() {
        assert_eq!(ranges[p].offset, obj.len() as u64);
        obj.extend_from_slice(&taken[p]);
        obj.extend_from_slice(tail);
        assert_eq!(ranges[p].offset + ranges[p].len, obj.len() as u64);
    }
    (Bytes::from(obj), ranges, takes)
}

#[test]
fn taking_encoded_bytes_out_keeps_the_object_byte_for_byte() {
    // Whole batches of `batch_rows` rows: the coalescers never hold rows,
    // so taking out flushes nothing and the object must not change at all.
    let pushes: Vec<(usize, RecordBatch)> = (0..12)
        .map(|i| ((i * 7 % 3) as usize, batch(i * 50, 50)))
        .collect();
    let (whole, whole_ranges, _) = object_taking_out(&pushes, 4, 50, &[]);
    for take_after in [vec![0], vec![2, 3, 7], (0..12).collect::<Vec<_>>()] {
        let (obj, ranges, takes) = object_taking_out(&pushes, 4, 50, &take_after);
        assert!(takes > 0);
        assert_eq!(ranges, whole_ranges, "{take_after:?}");
        assert_eq!(obj, whole, "{take_after:?}");
    }
    assert_eq!(whole_ranges[3].len, 0);
}

#[test]
fn taking_out_mid_batch_flushes_the_coalescers_and_keeps_every_row() {
    let pushes: Vec<(usize, RecordBatch)> = (0..20)
        .map(|i| ((i % 3) as usize, batch(i * 37, 37)))
        .collect();
    let (whole, whole_ranges, _) = object_taking_out(&pushes, 3, 100, &[]);
    let (obj, ranges, _) = object_taking_out(&pushes, 3, 100, &[1, 4, 5, 11, 19]);
    for p in 0..3 {
        let decode = |obj: &Bytes, r: &PartitionRange| {
            let bytes = obj.slice(r.offset as usize..(r.offset + r.len) as usize);
            let batches = decode_partition(bytes, &header(), false).unwrap();
            arrow::compute::concat_batches(&schema(), &batches).unwrap()
        };
        assert_eq!(ranges[p].rows, whole_ranges[p].rows);
        assert_eq!(
            decode(&obj, &ranges[p]),
            decode(&whole, &whole_ranges[p]),
            "partition {p}"
        );
    }
}

#[test]
fn a_coalescing_budget_shrinks_batches_of_many_partitions_and_bounds_them() {
    let unbounded = MapObjectBuilder::new(schema(), 1000, Compression::Lz4, 8192).unwrap();
    assert_eq!(unbounded.partition_batch_rows(), 8192);
    // 9 columns of about 130 bytes a row: 1 MiB over 1000 partitions is
    // under 256 rows each, so the floor applies.
    let budget = 1 << 20;
    let mut b = MapObjectBuilder::new(schema(), 1000, Compression::Lz4, 8192)
        .unwrap()
        .with_coalesce_bytes(budget);
    assert_eq!(b.partition_batch_rows(), 256);
    let few = MapObjectBuilder::new(schema(), 4, Compression::Lz4, 8192)
        .unwrap()
        .with_coalesce_bytes(64 << 20);
    assert_eq!(few.partition_batch_rows(), 8192);

    let mut most = 0;
    for i in 0..1000 {
        b.push(i, batch(i as i32 * 10, 10)).unwrap();
        assert!(b.held_bytes() >= b.coalescing_bytes());
        most = most.max(b.coalescing_bytes());
    }
    assert!(most <= budget, "coalescers held {most} bytes");
    assert!(b.encoded_bytes() > 0, "the budget never flushed");
    let (tails, ranges) = b.finish().unwrap();
    assert_eq!(ranges.iter().map(|r| r.rows).sum::<u64>(), 10_000);
    let obj = object(&tails);
    let r = ranges[999];
    let last = decode_partition(
        obj.slice(r.offset as usize..(r.offset + r.len) as usize),
        &header(),
        false,
    )
    .unwrap();
    assert_eq!(
        arrow::compute::concat_batches(&schema(), &last).unwrap(),
        batch(9990, 10)
    );
}

#[test]
fn flushing_under_a_budget_many_times_keeps_batches_long() {
    // 200 partitions, each push a few rows of a long string: the budget is
    // hit again and again. Each flush must start the partitions' string
    // blocks small again, or every coalescer soon holds a 1 MiB block for a
    // few rows, the budget is passed at every push and every batch is tiny.
    let schema = Arc::new(Schema::new(vec![Field::new(
        "s",
        DataType::Utf8View,
        false,
    )]));
    let object_bytes = |budget: usize| {
        let mut b = MapObjectBuilder::new(Arc::clone(&schema), 200, Compression::Lz4, 8192)
            .unwrap()
            .with_coalesce_bytes(budget);
        for round in 0..300 {
            for p in 0..200 {
                let rows =
                    (0..5).map(|i| format!("{round:05} {p:03} {i} {}", "comment ".repeat(4)));
                let s = StringViewArray::from_iter_values(rows);
                b.push(
                    p,
                    RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(s)]).unwrap(),
                )
                .unwrap();
            }
        }
        let (tails, ranges) = b.finish().unwrap();
        assert_eq!(ranges.iter().map(|r| r.rows).sum::<u64>(), 300_000);
        tails.iter().map(|t| t.len()).sum::<usize>()
    };
    let unbounded = object_bytes(0);
    let bounded = object_bytes(4 << 20);
    assert!(
        bounded < unbounded * 3 / 2,
        "{bounded} bytes under a budget, {unbounded} without"
    );
}

#[test]
fn compression_names_parse_and_bad_ones_are_named() {
    let parse = |s: &str| s.parse::<Compression>();
    assert_eq!(parse("lz4").unwrap(), Compression::Lz4);
    assert_eq!(parse("ZSTD").unwrap(), Compression::Zstd(3));
    assert_eq!(parse("zstd:1").unwrap(), Compression::Zstd(1));
    assert_eq!(parse("zstd:-5").unwrap(), Compression::Zstd(-5));
    assert_eq!(parse("none").unwrap(), Compression::None);
    for bad in ["zstd:", "zstd:fast", "zstd:23", "zstd:-8", "gzip"] {
        let err = parse(bad).unwrap_err().to_string();
        assert!(
            err.contains("squall.shuffle.compression") && err.contains(bad),
            "{bad}: {err}"
        );
    }
}

/// The partitions share one encoder state and leave out the schema
/// message, but each partition's bytes after the reader's header are
/// exactly the IPC stream arrow's own `StreamWriter` writes of the same
/// batches (schema, dictionaries, batches, end-of-stream), for every codec;
/// a dictionary column sends its dictionary in each partition that has
/// rows, and again when it changes.
#[test]
fn partition_streams_are_arrows_own_ipc_streams() {
    use arrow::array::{DictionaryArray, StringArray};
    use arrow::datatypes::Int32Type;
    use arrow::ipc::writer::StreamWriter;
    let dict_schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new(
            "tag",
            DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
            true,
        ),
    ]));
    let dict_batch = |start: i64, n: i64, words: &[&str]| {
        let keys: Vec<Option<i32>> = (0..n)
            .map(|i| (i % 5 != 0).then_some((i % words.len() as i64) as i32))
            .collect();
        let tags = DictionaryArray::<Int32Type>::try_new(
            keys.into_iter().collect(),
            Arc::new(StringArray::from(words.to_vec())),
        )
        .unwrap();
        RecordBatch::try_new(
            Arc::clone(&dict_schema),
            vec![
                Arc::new(Int64Array::from_iter_values(start..start + n)),
                Arc::new(tags),
            ],
        )
        .unwrap()
    };
    let cases: Vec<(SchemaRef, Vec<(usize, RecordBatch)>)> = vec![
        (
            schema(),
            vec![(0, batch(0, 40)), (2, batch(40, 40)), (0, batch(80, 40))],
        ),
        (
            Arc::clone(&dict_schema),
            vec![
                (0, dict_batch(0, 40, &["a", "bb", "ccc"])),
                (1, dict_batch(40, 40, &["a", "bb", "ccc"])),
                (0, dict_batch(80, 40, &["dddd", "e"])),
            ],
        ),
    ];
    for (schema, pushes) in cases {
        for compression in [
            Compression::None,
            Compression::Lz4,
            Compression::Zstd(1),
            Compression::Zstd(3),
        ] {
            // Batch rows equal to each push: every push is encoded as it is.
            let mut b = MapObjectBuilder::new(Arc::clone(&schema), 3, compression, 40).unwrap();
            for (p, batch) in &pushes {
                b.push(*p, batch.clone()).unwrap();
            }
            let (chunks, ranges) = b.finish().unwrap();
            let obj = object(&chunks);
            for (p, range) in ranges.iter().enumerate() {
                let got = obj.slice(range.offset as usize..(range.offset + range.len) as usize);
                let mine: Vec<&RecordBatch> = pushes
                    .iter()
                    .filter(|(q, _)| *q == p)
                    .map(|(_, b)| b)
                    .collect();
                if mine.is_empty() {
                    assert!(got.is_empty(), "{compression:?} partition {p}");
                    continue;
                }
                let mut w = StreamWriter::try_new_with_options(
                    Vec::new(),
                    &schema,
                    compression.ipc_options().unwrap(),
                )
                .unwrap();
                for batch in &mine {
                    w.write(batch).unwrap();
                }
                w.finish().unwrap();
                let want = w.into_inner().unwrap();
                // Arrow's stream is the schema message the reader puts in
                // front, then exactly the partition's bytes.
                let header = stream_header(&schema).unwrap();
                assert_eq!(&want[..header.len()], header.as_slice(), "{compression:?}");
                assert_eq!(
                    got.as_ref(),
                    &want[header.len()..],
                    "{compression:?} partition {p}"
                );
                let decoded = decode_partition(got, &header, false).unwrap();
                assert_eq!(decoded.len(), mine.len());
                for (d, m) in decoded.iter().zip(&mine) {
                    assert_eq!(d, *m, "{compression:?} partition {p}");
                }
            }
        }
    }
}

/// A coalescer reserves its whole batch when it gets its first row, so
/// batches sized to fill the budget exactly put every partition's
/// coalescer together a few bytes over it once all have rows: each push
/// then flushed them all, and a map task of 125 partitions wrote batches of
/// a few rows (TPC-H Q9's line items at 125 partitions: ten times the
/// bytes, three times the time). Batches are sized to half the budget.
#[test]
fn a_budget_every_partitions_batch_fits_is_not_flushed_by_small_pushes() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int64, true),
        Field::new("b", DataType::Int64, true),
        Field::new("c", DataType::Int64, true),
        Field::new("d", DataType::Decimal128(15, 2), true),
        Field::new("e", DataType::Decimal128(15, 2), true),
        Field::new("f", DataType::Decimal128(15, 2), true),
    ]));
    let rows = |from: i64, n: i64| {
        let decimal = || {
            Arc::new(
                Decimal128Array::from_iter_values((from..from + n).map(i128::from))
                    .with_precision_and_scale(15, 2)
                    .unwrap(),
            ) as ArrayRef
        };
        let int = || Arc::new(Int64Array::from_iter_values(from..from + n)) as ArrayRef;
        RecordBatch::try_new(
            Arc::clone(&schema),
            vec![int(), int(), int(), decimal(), decimal(), decimal()],
        )
        .unwrap()
    };
    let budget = 64 << 20;
    let mut b = MapObjectBuilder::new(Arc::clone(&schema), 125, Compression::Zstd(1), 8192)
        .unwrap()
        .with_coalesce_bytes(budget);
    // 72 bytes a row: half of 64 MiB over 125 partitions.
    assert_eq!(b.partition_batch_rows(), (budget / 2 / 125) / 72);
    for i in 0..20_000i64 {
        b.push((i % 125) as usize, rows(i * 4, 4)).unwrap();
        assert!(
            b.coalescing_bytes() <= budget,
            "{} held",
            b.coalescing_bytes()
        );
    }
    // 640 rows per partition, under a batch each: nothing encoded yet.
    assert_eq!(b.encoded_bytes(), 0, "flushed before any batch was full");
    let (tails, ranges) = b.finish().unwrap();
    let obj = object(&tails);
    let header = stream_header(&schema).unwrap();
    for r in &ranges {
        let batches = decode_partition(
            obj.slice(r.offset as usize..(r.offset + r.len) as usize),
            &header,
            false,
        )
        .unwrap();
        assert_eq!(batches.len(), 1);
        assert_eq!(batches[0].num_rows(), 640);
    }
}
