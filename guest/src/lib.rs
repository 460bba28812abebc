//! ivpol's guest: all of the verification logic, compiled to ONE
//! wasm32-wasip2 component (see `wit/admission.wit`) and, natively, to an
//! rlib for unit tests and benchmarks.
//!
//! Modules, one concern each: `policy` (IVP/NIVP types, defaults, loading),
//! `admission` (AdmissionRequest, JSON Patch), `matching` (matchConstraints),
//! `images` (references, globs, extraction), `cel` (environment and Kyverno
//! functions), `verify` (signatures, certificates, transparency logs), `engine` (validate, mutate, results, `required`), `webhooks` (the
//! webhook configurations Kyverno would register for the policies), and
//! `component` (the WIT glue, wasm only).

pub mod admission;
pub mod cel;
pub mod engine;
pub mod images;
pub mod matching;
pub mod oci;
pub mod policy;
pub mod verify;
pub mod webhooks;

#[cfg(target_arch = "wasm32")]
mod component;
