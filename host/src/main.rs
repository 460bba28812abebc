//! `ivpol`: the wasmtime host for ivpol's policy component.
//!
//! The host serves HTTP, reads files, and instantiates the component; every
//! policy decision is made inside the component (see `wit/admission.wit`).

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

#[tokio::main]
async fn main() -> ExitCode {
    cli::run().await
}
