//! ivpol's guest: all of the policy logic, compiled to ONE wasm32-wasip2
//! component (see `wit/admission.wit`) and, natively, to an rlib for unit
//! tests and the fuzz targets. It reads each AdmissionReview from its body
//! bytes and writes the response. What it needs from outside comes through
//! the imports `world policy-module` declares and nothing else: the
//! verification cache, namespaces and cluster resources the host reads for
//! it, registry access over wasi:http (the host picks TLS and answers auth
//! challenges, with the credentials `registry-credentials` names), and clocks.
//!
//! Modules, one concern each: `policy` (IVP/NIVP types, defaults, loading),
//! `admission` (AdmissionRequest, JSON Patch), `matching` (matchConstraints),
//! `images` (references, globs, extraction), `cel` (environment and Kyverno
//! functions), `oci` (the registry client over wasi:http), `verify`
//! (signatures, certificates, transparency logs), `engine` (the
//! AdmissionReview in and out, validate, mutate, results, `required`),
//! `webhooks` (the webhook configurations Kyverno would register for the
//! policies), and `component` (the WIT glue, wasm only).

// Public items are the ones the fuzz targets, the bench and the tests
// reach; the rest is `pub(crate)`, and the lint keeps it that way.
#![warn(unreachable_pub)]
// Every public item says what it is (the Kyverno field, for the spec types).
#![deny(missing_docs)]

// The CEL environment is its own crate; under this name the layers above
// keep their paths.
pub use ivpol_cel as cel;
pub mod engine;
// The OCI client is its own crate too.
pub use ivpol_oci as oci;
// So are requests, images, matching and policies.
pub use ivpol_policy::{admission, images, matching, policy};
// The verifier is its own crate (no Kubernetes in it, enforced by the
// compiler); under this name the layers above keep their paths.
pub use ivpol_verify as verify;
pub mod webhooks;

#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)] // the code `wit_bindgen::generate!` emits
mod component;
