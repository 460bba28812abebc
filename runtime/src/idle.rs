//! A pool's idle instances, each handed back, when it can be, to the
//! thread that last used it.
//!
//! An instance's memory (the component's heap and stack, the request it
//! last read, the store beside them) sits in the caches of the core that
//! last ran it. A plain stack shared by the worker threads gave nearly
//! every instance to the other thread next, whose call then read all of
//! that memory from the other core: the component's allocator, the first
//! to touch each free block, spent three quarters of its time in one load
//! (docs/performance.md).

/// Idle items, each with the thread that gave it back.
pub(crate) struct Idle<T> {
    kept: Vec<(usize, T)>,
}

impl<T> Idle<T> {
    pub(crate) fn new() -> Self {
        Idle { kept: Vec::new() }
    }

    /// The item this thread gave back last, or else the last one given
    /// back by any thread; none when there are none.
    pub(crate) fn take(&mut self) -> Option<T> {
        let here = thread_mark();
        let at = (self.kept.iter())
            .rposition(|(thread, _)| *thread == here)
            .or_else(|| self.kept.len().checked_sub(1))?;
        Some(self.kept.remove(at).1)
    }

    /// Keeps `item`, given back by this thread.
    pub(crate) fn give(&mut self, item: T) {
        self.kept.push((thread_mark(), item));
    }

    pub(crate) fn len(&self) -> usize {
        self.kept.len()
    }
}

/// This thread, as the address of a thread-local: cheaper than
/// `thread::current()`, which counts a reference. A thread that ended may
/// leave its mark to a new one; that only makes a preference wrong.
fn thread_mark() -> usize {
    thread_local!(static MARK: u8 = const { 0 });
    MARK.with(|mark| std::ptr::from_ref(mark) as usize)
}

#[cfg(test)]
mod tests {
    use super::Idle;
    use std::sync::{Arc, Mutex};

    #[test]
    fn each_thread_takes_back_its_own_and_else_the_last_given() {
        let idle = Arc::new(Mutex::new(Idle::new()));
        let give = |item: &'static str| {
            let idle = idle.clone();
            std::thread::spawn(move || idle.lock().unwrap().give(item))
                .join()
                .unwrap();
        };
        idle.lock().unwrap().give("mine");
        give("other's");
        give("another's");
        let mut kept = idle.lock().unwrap();
        assert_eq!(kept.take(), Some("mine"), "this thread's first");
        assert_eq!(kept.take(), Some("another's"), "then the last given");
        assert_eq!(kept.take(), Some("other's"));
        assert_eq!((kept.take(), kept.len()), (None, 0));
    }

    #[test]
    fn of_its_own_a_thread_takes_the_last_it_gave() {
        let mut idle = Idle::new();
        for item in 1..=3 {
            idle.give(item);
        }
        assert_eq!(idle.take(), Some(3));
        assert_eq!(idle.len(), 2);
    }
}
