//! Interop tests whose oracle is a Rust crate linked in, kept in this
//! workspace (not the root's) so that the product's Cargo.lock holds one
//! RustCrypto generation: sigstore-rust's verifier over the conformance
//! cases and the fixture generator's bundles, and oci-wasm (`wkg oci`)
//! against `ivpol push`/`pull`. Like the root's end-to-end tests they drive
//! the real `ivpol` binary (`IVPOL_BIN`) and a real registry, through
//! `ivpol_tests`; `cargo xtask test` runs them after the root's tests.

#![forbid(unsafe_code)]

mod fixtures_crosscheck;
mod oci;
mod sigstore_rust;
