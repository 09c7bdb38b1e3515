//! Unit tests of the key-filter benchmark: the TPC-H key distributions, the
//! probe set's hit fraction, and a tiny run of both filters end to end.

use std::collections::HashSet;

use arrow::array::{Array, Int64Array};

use crate::contestants::Kind;
use crate::keys::{CaseData, Distribution};
use crate::{BenchOptions, lines, run, summary};

fn column(data: &CaseData, batch: usize, col: usize) -> Vec<i64> {
    let a = data.probe[batch][col]
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap();
    a.values().to_vec()
}

#[test]
fn orderkeys_use_eight_of_every_32_values() {
    let keys: Vec<i64> = (0..16)
        .map(|i| Distribution::Orderkey.key(i, 16).0)
        .collect();
    assert_eq!(
        keys,
        [1, 2, 3, 4, 5, 6, 7, 8, 33, 34, 35, 36, 37, 38, 39, 40]
    );
}

#[test]
fn partsupp_has_four_distinct_suppliers_per_part() {
    let domain = 800_000;
    let tuples: Vec<(i64, i64)> = (0..domain)
        .map(|i| Distribution::Partsupp.key(i, domain))
        .collect();
    let distinct: HashSet<_> = tuples.iter().collect();
    assert_eq!(distinct.len(), tuples.len());
    assert_eq!(tuples[0].0, 1);
    assert_eq!(tuples[3].0, 1);
    assert_eq!(tuples[4].0, 2);
    let suppliers = (domain / 4 / 20) as i64;
    assert!(tuples.iter().all(|t| (1..=suppliers).contains(&t.1)));
}

#[test]
fn probe_rows_hit_build_keys_at_the_given_fraction() {
    let data = CaseData::generate(Distribution::Dense, 1000, 20_000, 0.25, 7);
    assert_eq!(data.is_hit.len(), 20_000);
    let hits = data.is_hit.iter().filter(|h| **h).count();
    assert!((4_000..6_000).contains(&hits), "{hits} hits");
    let first = column(&data, 0, 0);
    for (key, hit) in first.iter().zip(&data.is_hit) {
        assert_eq!(*hit, (1..=1000).contains(key), "key {key}");
    }
    assert_eq!(data.build[0].len(), 1000);
}

#[test]
fn a_tiny_run_measures_both_filters_on_every_case() {
    let options = BenchOptions {
        distributions: Distribution::ALL.to_vec(),
        keys: vec![2_000],
        hit_fractions: vec![0.5],
        probe_rows: 20_000,
        rounds: 2,
        fpp: 0.01,
        seed: 1,
    };
    let mut seen = 0;
    let cases = run(&options, |_| seen += 1).unwrap();
    assert_eq!((cases.len(), seen), (3, 3));
    for case in &cases {
        assert_eq!(case.keys, 2_000);
        let kinds: Vec<Kind> = case.filters.iter().map(|f| f.kind).collect();
        assert_eq!(kinds, Kind::ALL);
        for f in &case.filters {
            assert!(f.bytes > 2_000, "{} bytes", f.bytes);
            assert!(f.fpp < 0.05, "{} fpp {}", f.kind.name(), f.fpp);
            assert!(f.probe_rows_per_s > 0.0 && f.checks_per_s > 0.0);
        }
        assert!(lines(case).contains("sbbf/crate"));
    }
    assert!(summary(&cases).contains("3 cases"));
}

#[test]
fn bad_options_are_refused() {
    let options = BenchOptions {
        distributions: vec![Distribution::Dense],
        keys: vec![10],
        hit_fractions: vec![0.5],
        probe_rows: 10,
        rounds: 1,
        fpp: 1.5,
        seed: 1,
    };
    assert!(run(&options, |_| {}).is_err());
}
