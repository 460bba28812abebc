//! Sigstore bundles (v0.1, v0.2, v0.3), verified offline.

pub mod bundle;
pub mod checkpoint;
pub mod merkle;
pub mod timestamp;
