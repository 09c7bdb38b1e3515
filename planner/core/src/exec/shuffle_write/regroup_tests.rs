use arrow::array::{Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

use super::*;
use crate::exchange::{Compression, MapObjectBuilder, decode_partition, stream_header};

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, false)]))
}

/// A map object of 4 partitions: object `o`'s partition `p` holds the
/// values `o * 1000 + p * 100 + i` for `i < rows(o, p)` (some empty).
fn object(o: i64) -> (Bytes, Vec<PartitionRange>) {
    let rows = |p: i64| if (o + p) % 3 == 0 { 0 } else { 5 + o + p };
    let mut b = MapObjectBuilder::new(schema(), 4, Compression::Lz4, 3).unwrap();
    for p in 0..4 {
        let n = rows(p);
        if n > 0 {
            let v = Int64Array::from_iter_values((0..n).map(|i| o * 1000 + p * 100 + i));
            b.push(
                p as usize,
                RecordBatch::try_new(schema(), vec![Arc::new(v)]).unwrap(),
            )
            .unwrap();
        }
    }
    let (chunks, ranges) = b.finish().unwrap();
    (chunks.concat().into(), ranges)
}

fn values(bytes: Bytes) -> Vec<i64> {
    decode_partition(bytes, &stream_header(&schema()).unwrap(), false)
        .unwrap()
        .iter()
        .flat_map(|b| {
            let a = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            a.values().to_vec()
        })
        .collect()
}

#[test]
fn regrouped_partitions_hold_every_objects_streams_of_that_partition() {
    let column = 1..3usize;
    let objects: Vec<_> = (0..3).map(object).collect();
    let (mut ranges, mut layouts, mut fetched) = (Vec::new(), Vec::new(), Vec::new());
    for (o, (bytes, parts)) in objects.iter().enumerate() {
        let held = &parts[column.clone()];
        let Some(skip) = held.iter().position(|r| r.len > 0) else {
            continue;
        };
        let last = held.iter().rposition(|r| r.len > 0).unwrap();
        let (start, end) = (held[skip].offset, held[last].offset + held[last].len);
        ranges.push(ObjectRange {
            key: format!("o{o}"),
            offset: start,
            len: end - start,
            rows: held.iter().map(|r| r.rows).sum(),
        });
        layouts.push(RangeLayout {
            first: (column.start + skip) as u32,
            lens: held[skip..].iter().map(|r| r.len).collect(),
            rows: held[skip..].iter().map(|r| r.rows).collect(),
        });
        fetched.push(bytes.slice(start as usize..end as usize));
    }
    let r = regroup(&ranges, &layouts, fetched, 4).unwrap();
    let object: Bytes = r
        .pieces
        .iter()
        .map(|p| match p {
            Piece::Memory(b) => b.to_vec(),
            Piece::Spilled(_) => unreachable!(),
        })
        .collect::<Vec<_>>()
        .concat()
        .into();
    assert_eq!(r.partitions.len(), 4);
    for p in 0..4 {
        let range = &r.partitions[p];
        let got = values(object.slice(range.offset as usize..(range.offset + range.len) as usize));
        let mut want = Vec::new();
        if column.contains(&p) {
            for (bytes, parts) in &objects {
                let pr = &parts[p];
                want.extend(values(
                    bytes.slice(pr.offset as usize..(pr.offset + pr.len) as usize),
                ));
            }
        }
        assert_eq!(got, want, "partition {p}");
        assert_eq!(range.rows as usize, want.len(), "partition {p}");
    }
    assert_eq!(
        r.rows as usize,
        r.partitions.iter().map(|p| p.rows as usize).sum::<usize>()
    );
}

#[test]
fn a_layout_that_does_not_add_up_is_refused() {
    let (bytes, parts) = object(1);
    // Partitions 0 and 1 fetched, a layout naming partition 0 only.
    assert!(parts[0].len > 0 && parts[1].len > 0);
    let range = ObjectRange {
        key: "o1".into(),
        offset: parts[0].offset,
        len: parts[0].len + parts[1].len,
        rows: 0,
    };
    let layout = RangeLayout {
        first: 0,
        lens: vec![parts[0].len],
        rows: vec![parts[0].rows],
    };
    let fetched = bytes.slice(range.offset as usize..(range.offset + range.len) as usize);
    let err = regroup(&[range], &[layout], vec![fetched], 4)
        .err()
        .unwrap();
    assert!(err.to_string().contains("o1"), "{err}");
}
