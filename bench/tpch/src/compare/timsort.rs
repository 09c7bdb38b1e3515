//! A port of CPython 3.11's `list.sort`, so sort orders match Python's even with NaN.

// A port of CPython 3.11's `list.sort` (Objects/listobject.c: timsort with
// powersort merging). Any stable sort gives Python's order when `<` is a
// consistent order; the port also gives it when it is not, which happens with
// a NaN among numbers in a column (NaN is neither below nor above a number).

pub(super) const MIN_GALLOP: usize = 7;

pub(super) struct Run {
    pub(super) base: usize,
    pub(super) len: usize,
    pub(super) power: u32,
}

pub(super) struct MergeState<T> {
    pub(super) min_gallop: usize,
    pub(super) pending: Vec<Run>,
    pub(super) tmp: Vec<T>,
}

pub(super) type Lt<'a, T> = &'a dyn Fn(T, T) -> bool;

pub(super) fn list_sort<T: Copy>(v: &mut [T], lt: Lt<T>) {
    let n = v.len();
    if n < 2 {
        return;
    }
    let mut ms = MergeState {
        min_gallop: MIN_GALLOP,
        pending: Vec::new(),
        tmp: Vec::new(),
    };
    let minrun = compute_minrun(n);
    let mut lo = 0;
    while lo < n {
        let remaining = n - lo;
        let (mut run, descending) = count_run(&v[lo..], lt);
        if descending {
            v[lo..lo + run].reverse();
        }
        if run < minrun {
            let force = remaining.min(minrun);
            binary_sort(&mut v[lo..lo + force], run, lt);
            run = force;
        }
        if let Some(top) = ms.pending.last() {
            let power = powerloop(top.base, top.len, run, n);
            while ms.pending.len() > 1 && ms.pending[ms.pending.len() - 2].power > power {
                let i = ms.pending.len() - 2;
                merge_at(&mut ms, v, i, lt);
            }
            if let Some(top) = ms.pending.last_mut() {
                top.power = power;
            }
        }
        ms.pending.push(Run {
            base: lo,
            len: run,
            power: 0,
        });
        lo += run;
    }
    while ms.pending.len() > 1 {
        let mut i = ms.pending.len() - 2;
        if i > 0 && ms.pending[i - 1].len < ms.pending[i + 1].len {
            i -= 1;
        }
        merge_at(&mut ms, v, i, lt);
    }
}

pub(super) fn compute_minrun(mut n: usize) -> usize {
    let mut r = 0;
    while n >= 64 {
        r |= n & 1;
        n >>= 1;
    }
    n + r
}

pub(super) fn powerloop(s1: usize, n1: usize, n2: usize, n: usize) -> u32 {
    let mut result = 0;
    let mut a = 2 * s1 + n1;
    let mut b = a + n1 + n2;
    loop {
        result += 1;
        if a >= n {
            a -= n;
            b -= n;
        } else if b >= n {
            break;
        }
        a <<= 1;
        b <<= 1;
    }
    result
}

/// Length of the run at the start of `v`, and whether it is strictly descending.
pub(super) fn count_run<T: Copy>(v: &[T], lt: Lt<T>) -> (usize, bool) {
    if v.len() < 2 {
        return (v.len(), false);
    }
    let descending = lt(v[1], v[0]);
    let mut n = 2;
    while n < v.len() && lt(v[n], v[n - 1]) == descending {
        n += 1;
    }
    (n, descending)
}

/// Binary insertion sort of `v`, whose first `start` elements are sorted.
pub(super) fn binary_sort<T: Copy>(v: &mut [T], start: usize, lt: Lt<T>) {
    for start in start.max(1)..v.len() {
        let pivot = v[start];
        let (mut l, mut r) = (0, start);
        while l < r {
            let p = l + ((r - l) >> 1);
            if lt(pivot, v[p]) {
                r = p;
            } else {
                l = p + 1;
            }
        }
        v[l..=start].rotate_right(1);
    }
}

/// Where `key` goes in sorted `a`, leftmost among equals, searching from `hint`.
pub(super) fn gallop_left<T: Copy>(key: T, a: &[T], hint: usize, lt: Lt<T>) -> usize {
    let n = a.len() as isize;
    let hint = hint as isize;
    let at = |i: isize| a[i as usize];
    let (mut lastofs, mut ofs): (isize, isize) = (0, 1);
    if lt(at(hint), key) {
        let maxofs = n - hint;
        while ofs < maxofs && lt(at(hint + ofs), key) {
            lastofs = ofs;
            ofs = (ofs << 1) + 1;
        }
        ofs = ofs.min(maxofs);
        lastofs += hint;
        ofs += hint;
    } else {
        let maxofs = hint + 1;
        while ofs < maxofs && !lt(at(hint - ofs), key) {
            lastofs = ofs;
            ofs = (ofs << 1) + 1;
        }
        ofs = ofs.min(maxofs);
        (lastofs, ofs) = (hint - ofs, hint - lastofs);
    }
    lastofs += 1;
    while lastofs < ofs {
        let m = lastofs + ((ofs - lastofs) >> 1);
        if lt(at(m), key) {
            lastofs = m + 1;
        } else {
            ofs = m;
        }
    }
    ofs as usize
}

/// Where `key` goes in sorted `a`, rightmost among equals, searching from `hint`.
pub(super) fn gallop_right<T: Copy>(key: T, a: &[T], hint: usize, lt: Lt<T>) -> usize {
    let n = a.len() as isize;
    let hint = hint as isize;
    let at = |i: isize| a[i as usize];
    let (mut lastofs, mut ofs): (isize, isize) = (0, 1);
    if lt(key, at(hint)) {
        let maxofs = hint + 1;
        while ofs < maxofs && lt(key, at(hint - ofs)) {
            lastofs = ofs;
            ofs = (ofs << 1) + 1;
        }
        ofs = ofs.min(maxofs);
        (lastofs, ofs) = (hint - ofs, hint - lastofs);
    } else {
        let maxofs = n - hint;
        while ofs < maxofs && !lt(key, at(hint + ofs)) {
            lastofs = ofs;
            ofs = (ofs << 1) + 1;
        }
        ofs = ofs.min(maxofs);
        lastofs += hint;
        ofs += hint;
    }
    lastofs += 1;
    while lastofs < ofs {
        let m = lastofs + ((ofs - lastofs) >> 1);
        if lt(key, at(m)) {
            ofs = m;
        } else {
            lastofs = m + 1;
        }
    }
    ofs as usize
}

/// Merges pending runs `i` and `i + 1`.
pub(super) fn merge_at<T: Copy>(ms: &mut MergeState<T>, v: &mut [T], i: usize, lt: Lt<T>) {
    let (base_a, na) = (ms.pending[i].base, ms.pending[i].len);
    let (base_b, nb) = (ms.pending[i + 1].base, ms.pending[i + 1].len);
    ms.pending[i].len = na + nb;
    if i + 3 == ms.pending.len() {
        ms.pending.swap(i + 1, i + 2);
    }
    ms.pending.pop();
    let k = gallop_right(v[base_b], &v[base_a..base_a + na], 0, lt);
    let (base_a, na) = (base_a + k, na - k);
    if na == 0 {
        return;
    }
    let nb = gallop_left(v[base_a + na - 1], &v[base_b..base_b + nb], nb - 1, lt);
    if nb == 0 {
        return;
    }
    if na <= nb {
        merge_lo(ms, v, base_a, na, nb, lt);
    } else {
        merge_hi(ms, v, base_a, na, nb, lt);
    }
}

pub(super) enum MergeEnd {
    Succeed,
    CopyRest,
}

/// `merge_lo`: merges `v[a..a+na]` and the `nb` elements after it, `na <= nb`.
pub(super) fn merge_lo<T: Copy>(
    ms: &mut MergeState<T>,
    v: &mut [T],
    a: usize,
    mut na: usize,
    mut nb: usize,
    lt: Lt<T>,
) {
    ms.tmp.clear();
    ms.tmp.extend_from_slice(&v[a..a + na]);
    let tmp = &ms.tmp;
    let (mut dest, mut ia, mut ib) = (a, 0, a + na);
    v[dest] = v[ib];
    dest += 1;
    ib += 1;
    nb -= 1;
    let mut min_gallop = ms.min_gallop;
    let end = 'merge: {
        if nb == 0 {
            break 'merge MergeEnd::Succeed;
        }
        if na == 1 {
            break 'merge MergeEnd::CopyRest;
        }
        loop {
            let (mut acount, mut bcount) = (0, 0);
            loop {
                if lt(v[ib], tmp[ia]) {
                    v[dest] = v[ib];
                    dest += 1;
                    ib += 1;
                    bcount += 1;
                    acount = 0;
                    nb -= 1;
                    if nb == 0 {
                        break 'merge MergeEnd::Succeed;
                    }
                    if bcount >= min_gallop {
                        break;
                    }
                } else {
                    v[dest] = tmp[ia];
                    dest += 1;
                    ia += 1;
                    acount += 1;
                    bcount = 0;
                    na -= 1;
                    if na == 1 {
                        break 'merge MergeEnd::CopyRest;
                    }
                    if acount >= min_gallop {
                        break;
                    }
                }
            }
            min_gallop += 1;
            loop {
                min_gallop -= usize::from(min_gallop > 1);
                ms.min_gallop = min_gallop;
                let k = gallop_right(v[ib], &tmp[ia..ia + na], 0, lt);
                acount = k;
                if k > 0 {
                    v[dest..dest + k].copy_from_slice(&tmp[ia..ia + k]);
                    dest += k;
                    ia += k;
                    na -= k;
                    if na == 1 {
                        break 'merge MergeEnd::CopyRest;
                    }
                    if na == 0 {
                        break 'merge MergeEnd::Succeed;
                    }
                }
                v[dest] = v[ib];
                dest += 1;
                ib += 1;
                nb -= 1;
                if nb == 0 {
                    break 'merge MergeEnd::Succeed;
                }
                let k = gallop_left(tmp[ia], &v[ib..ib + nb], 0, lt);
                bcount = k;
                if k > 0 {
                    v.copy_within(ib..ib + k, dest);
                    dest += k;
                    ib += k;
                    nb -= k;
                    if nb == 0 {
                        break 'merge MergeEnd::Succeed;
                    }
                }
                v[dest] = tmp[ia];
                dest += 1;
                ia += 1;
                na -= 1;
                if na == 1 {
                    break 'merge MergeEnd::CopyRest;
                }
                if acount < MIN_GALLOP && bcount < MIN_GALLOP {
                    break;
                }
            }
            min_gallop += 1;
            ms.min_gallop = min_gallop;
        }
    };
    match end {
        MergeEnd::Succeed => v[dest..dest + na].copy_from_slice(&tmp[ia..ia + na]),
        MergeEnd::CopyRest => {
            v.copy_within(ib..ib + nb, dest);
            v[dest + nb] = tmp[ia];
        }
    }
}

/// `merge_hi`: merges `v[a..a+na]` and the `nb` elements after it, `na > nb`.
/// Positions run downwards and may pass below `a`, hence `isize`.
pub(super) fn merge_hi<T: Copy>(
    ms: &mut MergeState<T>,
    v: &mut [T],
    a: usize,
    mut na: usize,
    mut nb: usize,
    lt: Lt<T>,
) {
    let b = a + na;
    ms.tmp.clear();
    ms.tmp.extend_from_slice(&v[b..b + nb]);
    let tmp = &ms.tmp;
    let u = |i: isize| i as usize;
    let (mut dest, mut ia, mut ib) = (
        (b + nb - 1) as isize,
        (a + na - 1) as isize,
        nb as isize - 1,
    );
    v[u(dest)] = v[u(ia)];
    dest -= 1;
    ia -= 1;
    na -= 1;
    let mut min_gallop = ms.min_gallop;
    let end = 'merge: {
        if na == 0 {
            break 'merge MergeEnd::Succeed;
        }
        if nb == 1 {
            break 'merge MergeEnd::CopyRest;
        }
        loop {
            let (mut acount, mut bcount) = (0, 0);
            loop {
                if lt(tmp[u(ib)], v[u(ia)]) {
                    v[u(dest)] = v[u(ia)];
                    dest -= 1;
                    ia -= 1;
                    acount += 1;
                    bcount = 0;
                    na -= 1;
                    if na == 0 {
                        break 'merge MergeEnd::Succeed;
                    }
                    if acount >= min_gallop {
                        break;
                    }
                } else {
                    v[u(dest)] = tmp[u(ib)];
                    dest -= 1;
                    ib -= 1;
                    bcount += 1;
                    acount = 0;
                    nb -= 1;
                    if nb == 1 {
                        break 'merge MergeEnd::CopyRest;
                    }
                    if bcount >= min_gallop {
                        break;
                    }
                }
            }
            min_gallop += 1;
            loop {
                min_gallop -= usize::from(min_gallop > 1);
                ms.min_gallop = min_gallop;
                let k = na - gallop_right(tmp[u(ib)], &v[a..a + na], na - 1, lt);
                acount = k;
                if k > 0 {
                    dest -= k as isize;
                    ia -= k as isize;
                    v.copy_within(u(ia + 1)..u(ia + 1) + k, u(dest + 1));
                    na -= k;
                    if na == 0 {
                        break 'merge MergeEnd::Succeed;
                    }
                }
                v[u(dest)] = tmp[u(ib)];
                dest -= 1;
                ib -= 1;
                nb -= 1;
                if nb == 1 {
                    break 'merge MergeEnd::CopyRest;
                }
                let k = nb - gallop_left(v[u(ia)], &tmp[..nb], nb - 1, lt);
                bcount = k;
                if k > 0 {
                    dest -= k as isize;
                    ib -= k as isize;
                    v[u(dest + 1)..u(dest + 1) + k].copy_from_slice(&tmp[u(ib + 1)..u(ib + 1) + k]);
                    nb -= k;
                    if nb == 1 {
                        break 'merge MergeEnd::CopyRest;
                    }
                    if nb == 0 {
                        break 'merge MergeEnd::Succeed;
                    }
                }
                v[u(dest)] = v[u(ia)];
                dest -= 1;
                ia -= 1;
                na -= 1;
                if na == 0 {
                    break 'merge MergeEnd::Succeed;
                }
                if acount < MIN_GALLOP && bcount < MIN_GALLOP {
                    break;
                }
            }
            min_gallop += 1;
            ms.min_gallop = min_gallop;
        }
    };
    match end {
        MergeEnd::Succeed => {
            if nb > 0 {
                let start = u(dest + 1) - nb;
                v[start..start + nb].copy_from_slice(&tmp[..nb]);
            }
        }
        MergeEnd::CopyRest => {
            let (src, dst) = (u(ia + 1) - na, u(dest + 1) - na);
            v.copy_within(src..src + na, dst);
            v[dst - 1] = tmp[u(ib)];
        }
    }
}
