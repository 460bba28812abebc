//! `cargo run -p ivpol-tests --bin push-image -- HOST:PORT/REPO:TAG`: pushes a
//! small generated single-platform image to a plain-HTTP registry (the
//! fixture generator the tests use) and prints its digest.

use ivpol_tests::fixtures::{Pusher, OCI_MANIFEST};
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(target) = std::env::args().nth(1) else {
        eprintln!("usage: push-image HOST:PORT/REPO:TAG");
        return ExitCode::FAILURE;
    };
    let Some((addr, rest)) = target.split_once('/') else {
        eprintln!("push-image: {target:?} has no registry host");
        return ExitCode::FAILURE;
    };
    let (repo, tag) = rest.rsplit_once(':').unwrap_or((rest, "latest"));
    let digest = Pusher { addr, auth: None }.image(repo, tag, OCI_MANIFEST, "amd64");
    println!("{addr}/{repo}:{tag}@{digest}");
    ExitCode::SUCCESS
}
