//! Each instance's linear memory bound: the store's resource limiter, and
//! the instance-memory gauge it keeps.

use crate::metrics::metrics;

/// The store's resource limiter: bounds linear memory, refusing a growth
/// past the limit with [`MemoryRefused`], the error the trap then carries.
pub(super) struct MemoryLimiter {
    pub(super) limit: usize,
    /// Linear memory this store holds, counted in `instance_memory_bytes`
    /// until the store is dropped.
    held: usize,
}

impl MemoryLimiter {
    pub(super) fn new(limit: usize) -> MemoryLimiter {
        MemoryLimiter { limit, held: 0 }
    }
}

/// The limiter's refusal to grow an instance's linear memory past its
/// limit. The trap it causes carries it, so that a failed call is told to
/// be out of memory by the error's type, not its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct MemoryRefused {
    /// The instance's limit, in bytes.
    pub(super) limit: usize,
}

impl std::fmt::Display for MemoryRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "memory limit of {} bytes reached", self.limit)
    }
}

impl std::error::Error for MemoryRefused {}

impl Drop for MemoryLimiter {
    fn drop(&mut self) {
        metrics().instance_memory.dec_by(gauge_bytes(self.held));
    }
}

fn gauge_bytes(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl wasmtime::ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.limit {
            // Trapping at once rather than answering -1: a guest that gets
            // -1 from memory.grow would abort anyway, less clearly.
            return Err(wasmtime::Error::new(MemoryRefused { limit: self.limit }));
        }
        let grown = desired.saturating_sub(current);
        self.held = self.held.saturating_add(grown);
        metrics().instance_memory.inc_by(gauge_bytes(grown));
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(maximum.is_none_or(|m| desired <= m))
    }
}
