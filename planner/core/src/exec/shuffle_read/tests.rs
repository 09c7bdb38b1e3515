use super::{MAX_FETCHES_IN_FLIGHT, fetches_in_flight};
use crate::task::ObjectRange;

fn ranges(lens: &[u64]) -> Vec<ObjectRange> {
    lens.iter()
        .enumerate()
        .map(|(i, &len)| ObjectRange {
            key: format!("m{i}"),
            offset: 0,
            len,
            rows: 1,
        })
        .collect()
}

const MIB: u64 = 1024 * 1024;
const BUDGET: usize = 16 * MIB as usize;

#[test]
fn a_gather_of_tiny_outputs_keeps_many_gets_in_flight() {
    // 929 outputs of a few hundred bytes: bound by the cap, not by 32.
    let tiny = ranges(&[300; 929]);
    assert_eq!(
        fetches_in_flight(&tiny, 32, BUDGET, 1),
        MAX_FETCHES_IN_FLIGHT
    );
    // Never more than there are ranges.
    assert_eq!(fetches_in_flight(&tiny[..40], 32, BUDGET, 1), 40);
    // A read of several partitions shares the cap, down to the count.
    assert_eq!(
        fetches_in_flight(&tiny, 32, BUDGET, 2),
        MAX_FETCHES_IN_FLIGHT / 2
    );
    assert_eq!(fetches_in_flight(&tiny, 32, BUDGET, 16), 32);
    assert_eq!(
        fetches_in_flight(&tiny, 32, BUDGET, 0),
        MAX_FETCHES_IN_FLIGHT
    );
}

#[test]
fn large_ranges_keep_the_count_and_bytes_stay_in_the_budget() {
    // 1 MiB ranges: 16 fit the budget, fewer than the count allows.
    assert_eq!(fetches_in_flight(&ranges(&[MIB; 500]), 32, BUDGET, 1), 32);
    // 256 KiB ranges: 64 of them make 16 MiB.
    assert_eq!(
        fetches_in_flight(&ranges(&[MIB / 4; 500]), 32, BUDGET, 1),
        64
    );
    // One large range among small ones sets the bound.
    let mut mixed = vec![100; 500];
    mixed[250] = 4 * MIB;
    assert_eq!(fetches_in_flight(&ranges(&mixed), 32, BUDGET, 1), 32);
    // A budget of 0 leaves the count alone; a count of 0 is one.
    assert_eq!(fetches_in_flight(&ranges(&[300; 500]), 8, 0, 1), 8);
    assert_eq!(fetches_in_flight(&ranges(&[MIB; 5]), 0, 0, 1), 1);
    assert_eq!(fetches_in_flight(&[], 8, BUDGET, 1), 8);
}
