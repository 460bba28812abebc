//! ivpol's guest, the thin component crate: the WIT glue (`component`,
//! wasm only) that exports `wit/admission.wit`'s `world policy-module` over
//! the engine, compiled to ONE wasm32-wasip2 component. It reads each
//! AdmissionReview from its body bytes and writes the response. What the
//! engine needs from outside comes through the imports the world declares
//! and nothing else: the verification cache, namespaces and cluster
//! resources the host reads for it, registry access over wasi:http (the host
//! picks TLS and answers auth challenges, with the credentials
//! `registry-credentials` names), and clocks.
//!
//! The logic is in the crates below, re-exported here under the names the
//! fuzz targets, the bench and the tests use: `engine` (the AdmissionReview
//! in and out, validate, mutate, results, `required`) and `webhooks` (the
//! webhook configurations Kyverno would register) from ivpol-engine;
//! `policy` (IVP/NIVP types, defaults, loading), `admission`
//! (AdmissionRequest, JSON Patch), `matching` (matchConstraints) and
//! `images` (references, globs, extraction) from ivpol-policy; `cel`
//! (environment and Kyverno functions), `oci` (the registry client over
//! wasi:http), `verify` (signatures, certificates, transparency logs),
//! `notary` (Notary Project signatures) and `tuf` (the TUF client).

// Public items are the re-exports below; the glue keeps the rest private.
#![warn(unreachable_pub)]
// Every public item says what it is.
#![deny(missing_docs)]

// The CEL environment is its own crate; under this name the layers above
// keep their paths.
pub use ivpol_cel as cel;
// So is the engine, with the webhook configurations.
pub use ivpol_engine::{engine, webhooks};
// The OCI client is its own crate too.
pub use ivpol_oci as oci;
// So are requests, images, matching and policies.
pub use ivpol_policy::{admission, images, matching, policy};
// The verifier is its own crate (no Kubernetes in it, enforced by the
// compiler); under this name the layers above keep their paths.
pub use ivpol_verify as verify;
// So are Notary and TUF, over the verifier.
pub use ivpol_notary as notary;
pub use ivpol_tuf as tuf;

#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)] // the code `wit_bindgen::generate!` emits
mod component;

// The component's `memcmp`; natively, only its tests.
#[cfg(any(target_arch = "wasm32", test))]
#[allow(unsafe_code)] // raw pointers, as C's `memcmp` takes them
mod compare;

// The component's allocator; natively, only its tests.
#[cfg(any(target_arch = "wasm32", test))]
#[allow(unsafe_code)] // an allocator hands out raw blocks
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod small_blocks;

// One thread per instance: without the `atomics` feature wasm has none.
#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
#[global_allocator]
static ALLOCATOR: small_blocks::SmallBlocks = small_blocks::SmallBlocks;
