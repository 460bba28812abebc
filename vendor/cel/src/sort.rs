//! Stable sorting through one instantiation of the standard library's sort
//! (ivpol's patch; ivpol_refs::sort is the same for ivpol's own crates).
//!
//! `<[T]>::sort_by` compiles to its own merge sort, quicksort and small-sort
//! networks, some 10 KB in wasm, for every element type and comparison.
//! [`sort_by`] sorts indices with a `dyn` comparison instead, the one
//! instantiation every caller shares, then moves the elements into that
//! order; a short slice takes an insertion sort in place, as the standard
//! library's sort does below 20 elements. Both are stable, so the order is
//! the one `sort_by` gives.

use std::cmp::Ordering;

/// The longest slice sorted by insertion, in place.
const SHORT: usize = 20;

/// Sorts `v` by `cmp`, stably, as `v.sort_by(cmp)` does.
pub(crate) fn sort_by<T>(v: &mut [T], mut cmp: impl FnMut(&T, &T) -> Ordering) {
    if v.len() <= SHORT {
        for i in 1..v.len() {
            let mut j = i;
            while j > 0 && cmp(&v[j - 1], &v[j]) == Ordering::Greater {
                v.swap(j - 1, j);
                j -= 1;
            }
        }
        return;
    }
    let order = {
        let v = &*v;
        sorted_indices(v.len(), &mut |a: &usize, b: &usize| cmp(&v[*a], &v[*b]))
    };
    // Puts `v[order[i]]` at `i`, one cycle of the permutation at a time,
    // marking each index done as it is filled.
    let mut order = order;
    for start in 0..v.len() {
        let mut at = start;
        loop {
            let next = order[at];
            order[at] = at;
            if next == start {
                break;
            }
            v.swap(at, next);
            at = next;
        }
    }
}

fn sorted_indices(len: usize, cmp: &mut dyn FnMut(&usize, &usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..len).collect();
    order.sort_by(cmp);
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_as_the_standard_library_does() {
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        for len in 0..70 {
            for round in 0..20 {
                let items: Vec<(u8, usize)> = (0..len)
                    .map(|i| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        ((seed % [2, 5, 255][round % 3]) as u8, i)
                    })
                    .collect();
                let mut ours = items.clone();
                sort_by(&mut ours, |a, b| a.0.cmp(&b.0));
                let mut std = items;
                std.sort_by(|a, b| a.0.cmp(&b.0));
                assert_eq!(ours, std, "length {len}");
            }
        }
    }
}
