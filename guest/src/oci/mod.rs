//! A small OCI distribution client (distribution-spec 1.1), over a
//! [`Transport`] so that the logic is the same natively (tests) and in the
//! component (wasi:http).
//!
//! Everything fetched is checked against the digest it claims: a
//! `Docker-Content-Digest` header is never trusted alone.

mod client;
pub mod digest;
mod error;
pub mod transport;
#[cfg(target_arch = "wasm32")]
pub mod wasi_transport;

pub use client::{Client, Manifest, Platform};
pub use error::OciError;
pub use transport::{HttpRequest, HttpResponse, Transport, TransportError};

/// Media types a manifest GET accepts, in the order the registry should prefer them.
pub const MANIFEST_MEDIA_TYPES: [&str; 4] = [
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
];

/// Limits (reference §3 and Kyverno's referrer limits).
pub const MAX_MANIFEST_BYTES: usize = 4 << 20;
pub const MAX_CONFIG_BYTES: usize = 4 << 20;
pub const MAX_REFERRER_LAYER_BYTES: usize = 10 << 20;
pub const MAX_REFERRERS: usize = 50;
pub const MAX_REDIRECTS: usize = 5;
