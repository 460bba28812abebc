//! `ivpol`: the wasmtime host for ivpol's policy component.
//!
//! The host serves HTTP, reads files, and instantiates the component; every
//! policy decision is made inside the component (see `wit/admission.wit`).
//! This crate is the command line (`cli/`) and the OCI artifact client
//! (`oci/`: `push`, `pull`, `inspect`, `--component oci://…`) over the
//! host's library crates: `ivpol-runtime`, `ivpol-cluster`, `ivpol-report`
//! and `ivpol-server` (docs/architecture.md, "Crates").

// A binary: nothing is public beyond the crate, and `pub(crate)` says so
// where an item is shared between modules.
#![warn(unreachable_pub)]

mod cli;
mod oci;

use std::process::ExitCode;

/// mimalloc instead of glibc's malloc: an instance is built on one worker
/// thread and dropped on another, and glibc's per-thread arenas kept the
/// freed memory of replaced instances (RSS 177 MB against 42 MB in the
/// same bench, docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    no_transparent_huge_pages();
    // ring for every rustls user that takes the process default (Google's
    // auth crate, through reqwest); the host's own clients name it anyway.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build();
    match runtime {
        Ok(runtime) => runtime.block_on(cli::run()),
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Turns transparent huge pages off for this process, before anything runs.
///
/// mimalloc reserves its heap as 1 GiB arenas and marks them
/// `MADV_HUGEPAGE`. Where the kernel can hand out huge pages (THP in
/// `madvise` or `always` mode, memory not too fragmented), every 2 MiB
/// region the heap touches then counts in full: the bench saw RSS reach
/// 305–317 MB, 209–236 MB of it `AnonHugePages`, in the runs where the
/// kernel had huge pages to give, and 55–56 MB with them off
/// (docs/performance.md, "The RSS spike"). Memory is to be bounded by design, not
/// by the state of the node's free memory.
fn no_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    if let Err(e) = rustix::thread::disable_transparent_huge_pages(true) {
        eprintln!("warning: cannot turn transparent huge pages off: {e}");
    }
}
