//! Unit tests of the key filters: hashing, sections, merging only complete
//! sets, exact and Bloom forms, encodings.

use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray, Int64Array, StringArray};

use super::*;

const SIZING: FilterSizing = FilterSizing {
    max_keys: 1_000_000,
    exact_max_keys: 100,
    fpp: 0.01,
};

fn ints(v: &[Option<i64>]) -> ArrayRef {
    Arc::new(Int64Array::from(v.to_vec()))
}

fn section(keys: &[ArrayRef]) -> Section {
    let mut c = KeyCollector::new(SIZING.max_keys, keys.len());
    c.insert(keys).unwrap();
    decode_section(&c.finish().unwrap()).unwrap()
}

fn no_keys(columns: usize) -> Section {
    Section {
        hashes: Some(vec![]),
        ranges: KeyRanges::empty(columns),
    }
}

#[test]
fn exact_filter_keeps_matches_and_drops_nulls() {
    let build = section(&[ints(&[Some(1), Some(2), None, Some(2)])]);
    let Merged::Filter(f) = merge_sections(&[Some(build)], SIZING).unwrap() else {
        panic!("no filter")
    };
    assert_eq!((f.kind(), f.keys()), ("exact", 2));
    let probe = [ints(&[Some(1), Some(3), None, Some(2)])];
    let mask = f.evaluate(&probe, &mut Vec::new()).unwrap();
    assert_eq!(mask, BooleanArray::from(vec![true, false, false, true]));
}

#[test]
fn multi_column_keys_match_whole_tuples() {
    let a = ints(&[Some(1), Some(2)]);
    let b: ArrayRef = Arc::new(StringArray::from(vec!["x", "y"]));
    let build = section(&[a, b]);
    let Merged::Filter(f) = merge_sections(&[Some(build)], SIZING).unwrap() else {
        panic!("no filter")
    };
    let pa = ints(&[Some(1), Some(1), Some(2), Some(2)]);
    let pb: ArrayRef = Arc::new(StringArray::from(vec![
        Some("x"),
        Some("y"),
        Some("y"),
        None,
    ]));
    let mask = f.evaluate(&[pa, pb], &mut Vec::new()).unwrap();
    assert_eq!(mask, BooleanArray::from(vec![true, false, true, false]));
}

#[test]
fn bloom_has_no_false_negatives_and_about_the_target_rate() {
    let build: Vec<i64> = (0..50_000).map(|i| i * 3).collect();
    let arr: ArrayRef = Arc::new(Int64Array::from(build));
    let Merged::Filter(f) =
        merge_sections(&[Some(section(std::slice::from_ref(&arr)))], SIZING).unwrap()
    else {
        panic!("no filter")
    };
    assert_eq!(f.kind(), "bloom");
    let mask = f.evaluate(&[arr], &mut Vec::new()).unwrap();
    assert_eq!(
        mask.true_count(),
        50_000,
        "a Bloom filter never drops a member"
    );
    let others: ArrayRef = Arc::new(Int64Array::from(
        (0..50_000).map(|i| i * 3 + 1).collect::<Vec<_>>(),
    ));
    let fp = f.evaluate(&[others], &mut Vec::new()).unwrap().true_count();
    assert!(
        fp < 50_000 * 3 / 100,
        "false positives {fp} of 50000 at fpp 0.01"
    );
    // Round trip.
    let back = KeyFilter::decode(&f.encode()).unwrap();
    assert_eq!(back.keys(), 50_000);
    assert!(back.contains(key_hash_of(0)));
}

fn key_hash_of(v: i64) -> u64 {
    let mut out = Vec::new();
    key_hashes(&[ints(&[Some(v)])], &mut out).unwrap();
    out[0]
}

#[test]
fn partial_filters_are_never_built() {
    let a = section(&[ints(&[Some(1)])]);
    let sections = [Some(a), None, Some(no_keys(1))];
    let err = merge_sections(&sections, SIZING).unwrap_err();
    assert!(err.to_string().contains("build task 1 of 3"), "{err}");
    assert!(
        merge_ranges(&sections).is_none(),
        "no range from some tasks only"
    );
}

#[test]
fn overflow_and_too_many_keys_skip_the_filter() {
    let mut c = KeyCollector::new(2, 1);
    c.insert(&[ints(&[Some(1), Some(2), Some(3)])]).unwrap();
    c.insert(&[ints(&[Some(7)])]).unwrap();
    assert!(c.overflowed());
    let over = decode_section(&c.finish().unwrap()).unwrap();
    assert!(over.hashes.is_none());
    // Past the key limit the section still bounds the keys' range.
    let range = merge_ranges(&[Some(over.clone())]).unwrap();
    assert_eq!(
        range.columns[0],
        crate::key_filter::ColumnRange::Range(
            datafusion::common::ScalarValue::Int64(Some(1)),
            datafusion::common::ScalarValue::Int64(Some(7))
        )
    );
    let merged = merge_sections(&[Some(over)], SIZING).unwrap();
    assert!(matches!(merged, Merged::Skipped(_)));
    let small = FilterSizing {
        max_keys: 1,
        ..SIZING
    };
    let two = section(&[ints(&[Some(1), Some(2)])]);
    assert!(matches!(
        merge_sections(&[Some(two)], small).unwrap(),
        Merged::Skipped(_)
    ));
}

#[test]
fn empty_build_side_drops_every_row() {
    let Merged::Filter(f) = merge_sections(&[Some(no_keys(1)), Some(no_keys(1))], SIZING).unwrap()
    else {
        panic!("no filter")
    };
    let mask = f
        .evaluate(&[ints(&[Some(1), None])], &mut Vec::new())
        .unwrap();
    assert_eq!(mask.true_count(), 0);
    let back = KeyFilter::decode(&f.encode()).unwrap();
    assert_eq!(back.keys(), 0);
}

#[test]
fn garbage_is_rejected() {
    assert!(KeyFilter::decode(b"nope").is_err());
    assert!(decode_section(b"SQKS\x02\0\0\0\x05\0\0\0\0\0\0\0").is_err());
    let mut good = KeyCollector::new(10, 1);
    good.insert(&[ints(&[Some(4)])]).unwrap();
    let mut bytes = good.finish().unwrap();
    assert!(decode_section(&bytes).is_ok());
    bytes.push(0);
    assert!(decode_section(&bytes).is_err(), "trailing bytes");
}

#[test]
fn a_collector_the_pool_refuses_gives_up_and_frees_its_memory() {
    use datafusion::execution::memory_pool::{GreedyMemoryPool, MemoryConsumer, MemoryPool};
    let keys = |from: i64, n: i64| -> Vec<ArrayRef> {
        vec![Arc::new(Int64Array::from_iter_values(from..from + n))]
    };
    // Room for a few thousand keys, far under max_keys.
    let pool: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(64 * 1024));
    let mut c = KeyCollector::new(1_000_000, 1)
        .with_reservation(MemoryConsumer::new("keys").register(&pool));
    c.insert(&keys(0, 1000)).unwrap();
    assert!(!c.overflowed());
    assert!(pool.reserved() >= c.memory_size() && pool.reserved() > 0);
    for b in 0..100 {
        c.insert(&keys(1000 + b * 1000, 1000)).unwrap();
    }
    assert!(c.overflowed(), "the pool should have refused the set");
    assert!(pool.reserved() < 64 * 1024 / 2, "{}", pool.reserved());
    // The ranges are kept: the section still prunes.
    let section = decode_section(&c.finish().unwrap()).unwrap();
    assert!(section.hashes.is_none());
    // Unlimited, the same keys are all collected.
    let pool: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(usize::MAX));
    let mut c = KeyCollector::new(1_000_000, 1)
        .with_reservation(MemoryConsumer::new("keys").register(&pool));
    c.insert(&keys(0, 101_000)).unwrap();
    assert!(!c.overflowed());
    assert_eq!(
        decode_section(&c.finish().unwrap())
            .unwrap()
            .hashes
            .unwrap()
            .len(),
        101_000
    );
    assert_eq!(
        pool.reserved(),
        0,
        "finished, the collector gives its memory back"
    );
}

/// `n` well-spread 64-bit hashes starting at `from` (as key hashes are).
fn hashes(from: u64, n: u64) -> Vec<u64> {
    (from..from + n)
        .map(|i| {
            let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        })
        .collect()
}

fn hash_section(keys: Vec<u64>) -> Section {
    Section {
        hashes: Some(keys),
        ranges: KeyRanges::empty(1),
    }
}

#[test]
fn the_distinct_sketch_counts_within_a_few_percent() {
    for n in [0u64, 1, 1_000, 50_000, 2_000_000] {
        let mut sketch = DistinctSketch::new();
        // Every key twice: repeats do not count.
        for h in hashes(0, n).into_iter().chain(hashes(0, n)) {
            sketch.insert(h);
        }
        let est = sketch.estimate();
        let err = (est - n as f64).abs() / (n.max(1) as f64);
        assert!(err < 0.03, "{n} distinct keys estimated {est:.0}");
    }
}

#[test]
fn a_folded_bloom_filter_is_the_filter_its_size_would_have_made() {
    let keys = hashes(7, 20_000);
    let mut big = SplitBlockBloom::with_capacity(1_000_000, 0.01);
    let mut small = SplitBlockBloom::with_capacity(20_000, 0.01);
    for &h in &keys {
        big.insert(h);
        small.insert(h);
    }
    assert!(big.bytes() > small.bytes() * 8);
    big.fold_to(small.bytes() / 32);
    assert_eq!(
        KeyFilter::Bloom(big).encode(),
        KeyFilter::Bloom(small).encode()
    );
}

#[test]
fn a_union_past_a_million_keys_stays_small_and_sizes_its_filter_to_them() {
    let sizing = FilterSizing {
        max_keys: 16_000_000,
        exact_max_keys: 16_384,
        fpp: 0.01,
    };
    let mut union = KeyUnion::new(sizing);
    // 24 build tasks of 125,000 keys each, a fifth of each repeated by the next.
    let n = 3_000_000u64;
    for t in 0..24u64 {
        union.add(t as usize, hash_section(hashes(t * 125_000, 150_000)));
    }
    assert!(union.skipped().is_none());
    // The Bloom filter 16 million keys need, and a 16 KiB sketch: not the
    // set of the hashes (~72 MB at 3 million).
    let held = union.memory_size();
    assert!(held <= (32 << 20) + (64 << 10), "{held} bytes held");
    let Merged::Filter(f) = union.finish() else {
        panic!("no filter")
    };
    assert_eq!(f.kind(), "bloom");
    let keys = f.keys();
    assert!(
        keys.abs_diff(n + 25_000) < n / 30,
        "{keys} keys counted of {}",
        n + 25_000
    );
    let KeyFilter::Bloom(bloom) = &f else {
        unreachable!()
    };
    assert_eq!(
        bloom.bytes(),
        32 * SplitBlockBloom::blocks_for((n + 25_000) as usize, 0.01),
        "sized to its keys, not to max_keys"
    );
    assert!(
        hashes(0, n + 25_000).into_iter().all(|h| f.contains(h)),
        "a Bloom filter never drops a member"
    );
    let fp = hashes(1 << 40, 200_000)
        .into_iter()
        .filter(|&h| f.contains(h))
        .count();
    assert!(
        fp < 200_000 * 2 / 100,
        "{fp} false positives of 200000 at fpp 0.01"
    );
}

#[test]
fn a_sketched_union_past_max_keys_skips_the_filter() {
    let sizing = FilterSizing {
        max_keys: 1_500_000,
        exact_max_keys: 16_384,
        fpp: 0.01,
    };
    let mut union = KeyUnion::new(sizing);
    union.add(0, hash_section(hashes(0, 1_200_000)));
    assert!(union.skipped().is_none());
    union.add(1, hash_section(hashes(1_200_000, 200_000)));
    assert!(union.skipped().is_none());
    union.add(2, hash_section(hashes(1_400_000, 200_000)));
    let reason = union
        .skipped()
        .expect("1.6 million keys are more than 1.5 million");
    assert!(
        reason.contains("about") && reason.contains("more than squall.bloom.max_keys = 1500000"),
        "{reason}"
    );
    assert!(union.memory_size() < 1 << 10, "the keys are dropped");
    assert!(matches!(union.finish(), Merged::Skipped(_)));
}

#[test]
fn a_stage_of_disjoint_sections_projected_past_max_keys_is_skipped_early() {
    let sizing = FilterSizing {
        max_keys: 100_000,
        exact_max_keys: 1_000,
        fpp: 0.01,
    };
    // 1,000 build tasks of 1,000 keys each, every task its own keys: a
    // million keys for the stage, ten times max_keys.
    let mut union = KeyUnion::new(sizing);
    // At least 8 sections and 1% of the tasks: 10 of 1,000.
    let needed = PROJECT_MIN_SECTIONS.max((PROJECT_MIN_FRACTION * 1_000.0) as usize) as u64;
    for t in 0..needed {
        assert!(
            union.projected_skip(1_000).is_none(),
            "too few sections yet"
        );
        union.add(t as usize, hash_section(hashes(t * 1_000, 1_000)));
    }
    let reason = union
        .projected_skip(1_000)
        .expect("10,000 keys x 100 is past max_keys");
    assert!(
        reason.contains("10 of 1000 build tasks") && reason.contains("projected"),
        "{reason}"
    );
    assert!(
        union.skipped().is_none(),
        "the union itself holds fewer than max_keys"
    );
    // The same sections say nothing about a stage of 100,000 tasks (under
    // 1% seen), nor about one whose projection is within twice max_keys.
    assert!(union.projected_skip(100_000).is_none());
    assert!(union.projected_skip(20).is_none());

    // Sections that share their keys (a key repeating across tasks) are
    // never projected: the union grows slower than the tasks.
    let mut shared = KeyUnion::new(sizing);
    for t in 0..50 {
        shared.add(t, hash_section(hashes(t as u64 * 100, 1_000)));
    }
    assert!(shared.projected_skip(1_000).is_none());
}
