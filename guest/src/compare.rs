//! The component's `memcmp`, eight bytes at a time.
//!
//! Every comparison of strings and byte slices in Rust ends in `memcmp`
//! (`==` on `str`, `Ord`, B-tree lookups, serde's field names). wasi-libc's
//! is musl's portable loop, one byte per turn: comparing image references
//! and names, most of them equal, took 2% of the server's time at a cache
//! hit (docs/performance.md). This one compares words while they are
//! equal, which on wasm32 are single 64-bit loads.
//!
//! The linker takes a symbol from libc only when nothing else defines it,
//! so defining `memcmp` here replaces wasi-libc's for the whole component.

/// Compares `n` bytes at `a` and `b` as unsigned bytes: negative, zero or
/// positive as the first differing byte of `a` is below, equal to or above
/// `b`'s (C's `memcmp`).
///
/// # Safety
/// `a` and `b` are readable for `n` bytes.
#[cfg_attr(target_arch = "wasm32", no_mangle)]
pub(crate) unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    const WORD: usize = std::mem::size_of::<u64>();
    let mut at = 0;
    while n - at >= WORD {
        // SAFETY: `at + WORD <= n`, within both (the caller's contract);
        // unaligned reads, as strings start anywhere.
        let (x, y) = unsafe {
            (
                a.add(at).cast::<u64>().read_unaligned(),
                b.add(at).cast::<u64>().read_unaligned(),
            )
        };
        if x != y {
            // Big-endian, the first byte in memory is the most
            // significant: the words order as their bytes do.
            return if u64::from_be(x) < u64::from_be(y) {
                -1
            } else {
                1
            };
        }
        at += WORD;
    }
    while at < n {
        // SAFETY: `at < n`, within both.
        let (x, y) = unsafe { (*a.add(at), *b.add(at)) };
        if x != y {
            return i32::from(x) - i32::from(y);
        }
        at += 1;
    }
    0
}

#[cfg(test)]
mod tests {
    use super::memcmp;
    use std::cmp::Ordering;

    fn compared(a: &[u8], b: &[u8]) -> Ordering {
        assert_eq!(a.len(), b.len());
        // SAFETY: both slices hold `a.len()` bytes.
        unsafe { memcmp(a.as_ptr(), b.as_ptr(), a.len()) }.cmp(&0)
    }

    #[test]
    fn orders_as_slices_do_at_every_length_and_position() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut byte = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as u8
        };
        for len in 0..40 {
            let a: Vec<u8> = (0..len).map(|_| byte()).collect();
            assert_eq!(compared(&a, &a), Ordering::Equal, "{a:?}");
            // One byte changed at each position, up and down, and the
            // bytes past it changed too: only the first difference counts.
            for at in 0..len {
                for delta in [1u8, 0x80, 0xff] {
                    let mut b = a.clone();
                    b[at] = b[at].wrapping_add(delta);
                    for later in b.iter_mut().skip(at + 1) {
                        *later = byte();
                    }
                    // Misaligned by one, as strings are.
                    let (x, y) = ([&[0][..], &a].concat(), [&[0][..], &b].concat());
                    assert_eq!(compared(&x[1..], &y[1..]), a.cmp(&b), "{a:?} {b:?}");
                    assert_eq!(compared(&y[1..], &x[1..]), b.cmp(&a), "{b:?} {a:?}");
                }
            }
        }
    }
}
