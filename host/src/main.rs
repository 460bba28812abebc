//! `ivpol`: the wasmtime host for ivpol's policy component.
//!
//! The host serves HTTP, reads files, and instantiates the component; every
//! policy decision is made inside the component (see `wit/admission.wit`).

// A binary: nothing is public beyond the crate, and `pub(crate)` says so
// where an item is shared between modules.
#![warn(unreachable_pub)]

mod cache;
mod cli;
mod cluster;
mod live;
mod metrics;
mod net;
mod oci;
mod policies;
mod report;
mod runtime;
mod server;

use std::process::ExitCode;

/// mimalloc instead of glibc's malloc: an instance is built on one worker
/// thread and dropped on another, and glibc's per-thread arenas kept the
/// freed memory of replaced instances (RSS 177 MB against 42 MB in the
/// same bench, docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> ExitCode {
    cli::run().await
}
