//! The component's allocator: small blocks come from free lists by size
//! class, in front of wasi-libc's dlmalloc, which keeps everything larger.
//!
//! A request's evaluation allocates and frees thousands of small blocks
//! (strings, `Arc`s, B-tree nodes, short vectors); through
//! `__rust_alloc`, `malloc` and dlmalloc's bins they took a sixth of the
//! component's time on a cache hit (docs/performance.md). A free list per
//! size class takes a block and gives it back in a few instructions.
//!
//! Each class carves its blocks from slabs of its own, aligned to their
//! size, and a table by slab says which class an address is of. So freeing
//! needs only the address, as `free` does: calls that passed the size and
//! alignment too made the component 30 to 60 KB larger, one call site at a
//! time.
//!
//! Blocks never go back to dlmalloc: what a class holds is its own peak
//! use, which an instance's memory limit bounds like any other
//! allocation, and the host replaces instances after a number of calls.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::ptr;

/// Sizes are rounded up to a multiple of this, which is also every small
/// block's alignment (slabs are aligned, and classes are multiples).
const GRAIN: usize = 16;
/// Size classes of `GRAIN` bytes each: blocks up to 512 bytes.
const FINE_CLASSES: usize = 32;
/// The largest block of the fine classes.
const MAX_FINE: usize = GRAIN * FINE_CLASSES;
/// Classes of powers of two above them, 1, 2 and 4 KiB: the review's
/// text, its response and the buffers that hold them, a few of each per
/// request, which dlmalloc's bins took far longer to find.
const COARSE_CLASSES: usize = 3;
const CLASSES: usize = FINE_CLASSES + COARSE_CLASSES;
/// The largest small block.
const MAX_SMALL: usize = MAX_FINE << COARSE_CLASSES;
/// A slab's size and alignment, as a power of two.
const SLAB_BITS: u32 = 14;
const SLAB: usize = 1 << SLAB_BITS;
/// Slabs that fit in the address space (4 GiB on wasm32, and the tests'
/// addresses are reduced to it).
const SLABS: usize = 1 << (32 - SLAB_BITS);

/// The component's allocator (see the module). It carries no data, so
/// that its methods take no pointer at every call site.
pub(crate) struct SmallBlocks;

/// The free lists of the one allocator an instance has.
static STATE: Shared = Shared(UnsafeCell::new(State::new()));

struct Shared(UnsafeCell<State>);

// SAFETY: a component instance runs on one thread (wasm32-wasip2 has no
// threads; the allocator is only installed without the `atomics` feature),
// so `STATE` is never touched by two threads at once.
unsafe impl Sync for Shared {}

/// Free blocks by size class, the slab each class carves new ones from,
/// and the class of every slab.
struct State {
    /// The first free block of each class; a free block's first word is
    /// the next free block of its class.
    free: [*mut u8; CLASSES],
    /// The next block to carve in each class's slab, and its end.
    next: [*mut u8; CLASSES],
    end: [*mut u8; CLASSES],
    /// One more than the class of each slab; 0 for memory that is not a
    /// slab (dlmalloc's). Zeroed memory: it costs no page until written.
    class_of: [u8; SLABS],
}

/// The class of a small block of `size` bytes aligned to `align`.
fn class(size: usize, align: usize) -> Option<usize> {
    if align > GRAIN || size > MAX_SMALL {
        return None;
    }
    if size <= MAX_FINE {
        return Some(size.saturating_sub(1) / GRAIN);
    }
    // 513..=1024 bytes is the first coarse class, up to 2048 the next.
    let doublings = (size - 1).ilog2() - MAX_FINE.ilog2();
    Some(FINE_CLASSES + doublings as usize)
}

fn class_size(class: usize) -> usize {
    match class.checked_sub(FINE_CLASSES) {
        None => (class + 1) * GRAIN,
        Some(coarse) => MAX_FINE << (coarse + 1),
    }
}

/// The slab `block` lies in.
fn slab_of(block: *mut u8) -> usize {
    (block as usize >> SLAB_BITS) % SLABS
}

impl State {
    const fn new() -> State {
        State {
            free: [ptr::null_mut(); CLASSES],
            next: [ptr::null_mut(); CLASSES],
            end: [ptr::null_mut(); CLASSES],
            class_of: [0; SLABS],
        }
    }

    /// A block of `class` from its free list, or else carved from its slab
    /// (a new one from `behind` when it is used up).
    fn take(&mut self, class: usize, behind: &impl GlobalAlloc) -> *mut u8 {
        let head = self.free[class];
        if !head.is_null() {
            // SAFETY: a free block holds the next free block's address in
            // its first word, written by `give` (blocks are GRAIN-aligned).
            self.free[class] = unsafe { head.cast::<*mut u8>().read() };
            return head;
        }
        let size = class_size(class);
        if (self.end[class] as usize) - (self.next[class] as usize) < size
            && !self.new_slab(class, behind)
        {
            return ptr::null_mut();
        }
        let block = self.next[class];
        // SAFETY: at least `size` bytes are left in the slab.
        self.next[class] = unsafe { block.add(size) };
        block
    }

    /// A new slab for `class` from `behind`; false when there is no memory.
    /// The rest of the old slab (less than one block) is left over.
    ///
    /// Out of line: the call to `behind` needs a frame on the shadow
    /// stack, which the taking of a free block, nearly every allocation,
    /// then does without.
    #[cold]
    #[inline(never)]
    fn new_slab(&mut self, class: usize, behind: &impl GlobalAlloc) -> bool {
        let Ok(layout) = Layout::from_size_align(SLAB, SLAB) else {
            return false;
        };
        // SAFETY: `layout` has a non-zero size.
        let slab = unsafe { behind.alloc(layout) };
        if slab.is_null() {
            return false;
        }
        self.class_of[slab_of(slab)] = class as u8 + 1;
        self.next[class] = slab;
        // SAFETY: one past the slab's end.
        self.end[class] = unsafe { slab.add(SLAB) };
        true
    }

    /// The class of the small block `block`; none when it is not one.
    fn class_of(&self, block: *mut u8) -> Option<usize> {
        match self.class_of[slab_of(block)] {
            0 => None,
            c => Some(usize::from(c) - 1),
        }
    }

    /// Puts a block of `class` back on its free list.
    ///
    /// # Safety
    /// `block` came from `take(class)` and is not used again.
    unsafe fn give(&mut self, block: *mut u8, class: usize) {
        // SAFETY: the block is at least GRAIN bytes, GRAIN-aligned, and
        // ours now.
        unsafe { block.cast::<*mut u8>().write(self.free[class]) };
        self.free[class] = block;
    }
}

/// The one instance's free lists.
///
/// # Safety
/// Called from one thread (see `Shared`), and the reference is dropped
/// before the next call.
unsafe fn state() -> &'static mut State {
    // SAFETY: as the function says.
    unsafe { &mut *STATE.0.get() }
}

unsafe extern "C" {
    /// wasi-libc's `free`, which frees whatever `System` allocated
    /// (`malloc`, `aligned_alloc` and `realloc` alike) by its address.
    fn free(block: *mut u8);
}

/// A block of `size` bytes aligned to `ALIGN` (at most GRAIN), small or
/// from `System`. Out of line, and with the alignment in its type: each
/// allocation site passes the size alone, as it would to `malloc`.
#[inline(never)]
fn allocate<const ALIGN: usize>(size: usize) -> *mut u8 {
    match class(size, ALIGN) {
        // SAFETY: one thread (see `Shared`).
        Some(c) => unsafe { state() }.take(c, &System),
        // SAFETY: ALIGN is a power of two (8 or GRAIN), and the size is
        // the caller's layout's.
        None => unsafe { System.alloc(Layout::from_size_align_unchecked(size, ALIGN)) },
    }
}

/// Frees `block` by its address alone, as `free` does.
///
/// # Safety
/// `block` came from this allocator and is not used again.
#[inline(never)]
unsafe fn release(block: *mut u8) {
    // SAFETY: one thread (see `Shared`).
    let state = unsafe { state() };
    match state.class_of(block) {
        // SAFETY: a block in a slab of class `c` came from `take(c)`.
        Some(c) => unsafe { state.give(block, c) },
        // SAFETY: a block outside the slabs came from `System`, whose
        // blocks `free` takes.
        None => unsafe { free(block) },
    }
}

/// A block aligned to more than GRAIN, from `System`. Out of line: it
/// passes `posix_memalign` an out-pointer, a frame on the shadow stack
/// that `__rust_alloc` would otherwise open for every allocation.
#[cold]
#[inline(never)]
fn over_aligned(layout: Layout) -> *mut u8 {
    // SAFETY: the caller's layout, as given (non-zero size, by
    // `GlobalAlloc::alloc`'s contract).
    unsafe { System.alloc(layout) }
}

// SAFETY: small blocks are `class_size` bytes (at least the layout's
// size), GRAIN-aligned (at least the layout's alignment), and each is
// handed out once until it is given back; everything else comes from
// `System` with its own layout and goes back to `free`.
unsafe impl GlobalAlloc for SmallBlocks {
    #[inline(always)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // The alignment is a constant at nearly every site: the match
        // folds away there.
        match layout.align() {
            ..=8 => allocate::<8>(layout.size()),
            9..=GRAIN => allocate::<GRAIN>(layout.size()),
            _ => over_aligned(layout),
        }
    }

    #[inline(always)]
    unsafe fn dealloc(&self, block: *mut u8, _layout: Layout) {
        // SAFETY: the caller gives back a block of ours.
        unsafe { release(block) }
    }

    // Out of line too: inlined at each growing vector, it was 170 copies.
    #[inline(never)]
    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let align = layout.align();
        // SAFETY: one thread (see `Shared`).
        let old = unsafe { state() }.class_of(block);
        match (old, class(new_size, align)) {
            // The block already holds the new size.
            (Some(old), Some(new)) if old == new => block,
            // Both large: dlmalloc may grow it in place.
            // SAFETY: the block came from `System` with `layout`.
            (None, None) => unsafe { System.realloc(block, layout, new_size) },
            _ => {
                // SAFETY: `new_size` with the old alignment is a valid,
                // non-zero layout (the caller's contract for `realloc`).
                let moved =
                    unsafe { self.alloc(Layout::from_size_align_unchecked(new_size, align)) };
                if !moved.is_null() {
                    let kept = layout.size().min(new_size);
                    // SAFETY: both blocks hold at least `kept` bytes and
                    // are distinct allocations.
                    unsafe { ptr::copy_nonoverlapping(block, moved, kept) };
                    // SAFETY: the old block, ours.
                    unsafe { release(block) };
                }
                moved
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh state, on the heap (its table is 256 KiB).
    fn state() -> Box<State> {
        Box::new(State::new())
    }

    #[test]
    fn classes_round_up_to_the_grain_then_double_and_stop_at_the_largest_small_block() {
        assert_eq!(class(1, 1), Some(0));
        assert_eq!(class(16, 8), Some(0));
        assert_eq!(class(17, 8), Some(1));
        assert_eq!(class(MAX_FINE, 16), Some(FINE_CLASSES - 1));
        assert_eq!(class(MAX_FINE + 1, 8), Some(FINE_CLASSES));
        assert_eq!(class(1024, 8), Some(FINE_CLASSES));
        assert_eq!(class(1025, 8), Some(FINE_CLASSES + 1));
        assert_eq!(class(MAX_SMALL, 16), Some(CLASSES - 1));
        assert_eq!(class(MAX_SMALL + 1, 1), None);
        assert_eq!(class(8, 32), None, "over-aligned goes behind");
        // Every size gets a class that holds it, and no smaller class does.
        for size in 1..=MAX_SMALL {
            let c = class(size, 8).expect("small");
            assert!(class_size(c) >= size, "{size} in class {c}");
            assert!(c == 0 || class_size(c - 1) < size, "{size} in class {c}");
        }
        assert_eq!(class_size(CLASSES - 1), MAX_SMALL);
        assert_eq!(
            SLAB % MAX_SMALL,
            0,
            "slabs hold whole blocks of every class"
        );
    }

    #[test]
    fn a_freed_block_is_the_next_one_of_its_class_and_others_are_distinct() {
        let mut s = state();
        let (x, y) = (s.take(1, &System), s.take(1, &System));
        assert!(!x.is_null() && !y.is_null() && x != y);
        assert_eq!(x as usize % GRAIN, 0);
        unsafe { s.give(x, 1) };
        assert_eq!(s.take(1, &System), x, "the freed block comes back first");
        let other = s.take(2, &System);
        assert!(other != x && other != y);
        assert_eq!((s.class_of(x), s.class_of(other)), (Some(1), Some(2)));
        let slabs = s.class_of.iter().filter(|&&c| c != 0).count();
        assert_eq!(slabs, 2, "only the two classes' slabs are marked");
    }

    #[test]
    fn many_live_blocks_span_slabs_without_overlapping() {
        let mut s = state();
        let c = CLASSES - 1;
        let count = 3 * SLAB / MAX_SMALL + 1;
        let mut blocks: Vec<*mut u8> = (0..count).map(|_| s.take(c, &System)).collect();
        for (i, b) in blocks.iter().enumerate() {
            unsafe { ptr::write_bytes(*b, i as u8, MAX_SMALL) };
        }
        for (i, b) in blocks.iter().enumerate() {
            let bytes = unsafe { std::slice::from_raw_parts(*b, MAX_SMALL) };
            assert!(
                bytes.iter().all(|&v| v == i as u8),
                "block {i} was overwritten"
            );
        }
        blocks.sort();
        blocks.dedup();
        assert_eq!(blocks.len(), count);
        for b in blocks {
            assert_eq!(s.class_of(b), Some(c));
            unsafe { s.give(b, c) };
        }
        assert!(!s.free[c].is_null());
    }
}
