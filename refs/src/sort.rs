//! Stable sorting through one instantiation of the standard library's sort.
//!
//! `<[T]>::sort_by` is generic over the element and the comparison: every
//! pair compiles to its own merge sort, quicksort and small-sort networks,
//! about 10 KB each in the component, and some thirty of them were 0.32 MB
//! of it (docs/performance.md, "Component size"). [`sort_by`] sorts a list
//! of indices with a `dyn` comparison instead, which every caller shares,
//! then moves the elements into that order; a short slice, nearly every
//! slice sorted, takes an insertion sort in place, as the standard library's
//! sort itself does below 20 elements, so the request path does no more
//! work than before. Both ways are stable, so the order is the one
//! `sort_by` gives: equal elements keep their order.

use std::cmp::Ordering;
use std::collections::BTreeMap;

/// The longest slice sorted by insertion, in place.
const SHORT: usize = 20;

/// Sorts `v` by `cmp`, stably, as `v.sort_by(cmp)` does.
pub fn sort_by<T>(v: &mut [T], mut cmp: impl FnMut(&T, &T) -> Ordering) {
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
    permute(v, order);
}

/// Sorts `v` by its elements' order, stably, as `v.sort()` does (and as
/// `v.sort_unstable()` does for elements that equal only when identical).
pub fn sort<T: Ord>(v: &mut [T]) {
    sort_by(v, T::cmp);
}

/// Sorts `v` by `key`, stably, as `v.sort_by_key(key)` does (the key is
/// computed for every comparison, as there).
pub fn sort_by_key<T, K: Ord>(v: &mut [T], mut key: impl FnMut(&T) -> K) {
    sort_by(v, |a, b| key(a).cmp(&key(b)));
}

/// The map of `items`, inserted one at a time: `collect()` into a
/// `BTreeMap` sorts them first, with a sort of its own for each key and
/// value type. The map is the same: of equal keys, the last value stays.
pub fn map<K: Ord, V>(items: impl IntoIterator<Item = (K, V)>) -> BTreeMap<K, V> {
    let mut map = BTreeMap::new();
    map.extend(items);
    map
}

/// `0..len`, stably sorted by `cmp`: the one instantiation of the standard
/// library's sort that [`sort_by`] uses, whatever it sorts.
fn sorted_indices(len: usize, cmp: &mut dyn FnMut(&usize, &usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..len).collect();
    order.sort_by(cmp);
    order
}

/// Puts `v[order[i]]` at `i`, one cycle of the permutation at a time.
fn permute<T>(v: &mut [T], mut order: Vec<usize>) {
    for start in 0..v.len() {
        let mut at = start;
        loop {
            let next = order[at];
            // Marks `at` done: a later cycle's start that meets it stops.
            order[at] = at;
            if next == start {
                break;
            }
            v.swap(at, next);
            at = next;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length across the insertion sort's bound, with many equal
    /// keys, against the standard library's stable sort.
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
                        let spread = [2, 5, 255][round % 3];
                        ((seed % spread) as u8, i)
                    })
                    .collect();
                let mut ours = items.clone();
                sort_by(&mut ours, |a, b| a.0.cmp(&b.0));
                let mut std = items.clone();
                std.sort_by_key(|a| a.0);
                assert_eq!(ours, std, "length {len}");
                let mut ours = items.clone();
                sort_by_key(&mut ours, |a| std::cmp::Reverse(a.0));
                let mut std = items;
                std.sort_by_key(|a| std::cmp::Reverse(a.0));
                assert_eq!(ours, std, "length {len}, by key");
            }
        }
        let pairs = [("b", 1), ("a", 2), ("b", 3)];
        let collected: BTreeMap<_, _> = pairs.into_iter().collect();
        assert_eq!(map(pairs), collected);
        let mut words = vec!["b", "a", "c", "a"];
        sort(&mut words);
        assert_eq!(words, ["a", "a", "b", "c"]);
    }
}
