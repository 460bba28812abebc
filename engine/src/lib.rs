//! ivpol's engine: what the component answers, natively. `engine` reads each
//! AdmissionReview from its body bytes, runs the policies that match it
//! (validate, mutate, `required`), verifies images through the registry
//! client and the verifier, and writes the response and the results;
//! `webhooks` builds the webhook configurations Kyverno would register for
//! the policies.
//!
//! It depends on ivpol-cel, ivpol-oci, ivpol-policy, ivpol-verify,
//! ivpol-notary, ivpol-tuf and ivpol-refs only, and on nothing of WIT: no
//! wit-bindgen, no WASI imports, no host. What it needs from outside (the
//! verification cache, keys, cluster resources, the registry transport) it
//! takes as traits the component implements over the world's imports and
//! the tests implement natively.

// Nothing here needs unsafe code.
#![forbid(unsafe_code)]
// Public items are the ones the component, the fuzz targets, the bench and
// the tests reach; the rest is `pub(crate)`, and the lint keeps it that way.
#![warn(unreachable_pub)]
// Every public item says what it is.
#![deny(missing_docs)]

pub mod engine;
pub mod webhooks;

// The layers below, under the names the modules use.
use ivpol_cel as cel;
use ivpol_notary as notary;
use ivpol_oci as oci;
use ivpol_policy::{admission, images, matching, policy};
use ivpol_tuf as tuf;
use ivpol_verify as verify;
