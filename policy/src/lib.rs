//! What a policy is, before anything is evaluated: Kubernetes admission
//! requests as the API server sends them (`admission`), the images a
//! resource runs (`images`), Kubernetes' and Kyverno's matching rules
//! (`matching`), and ImageValidatingPolicies, NamespacedImageValidatingPolicies
//! and PolicyExceptions loaded, checked and compiled (`policy`), every field
//! read or refused at load. No evaluation, no registry: the engine above
//! runs what this crate compiles.

// Nothing here needs unsafe code.
#![forbid(unsafe_code)]
// The engine reads this crate's API from its docs: every public item says
// what it is.
#![deny(missing_docs)]

pub mod admission;
pub mod images;
pub mod matching;
pub mod policy;

// The layers below, under the names the modules use.
use ivpol_cel as cel;
use ivpol_oci as oci;
use ivpol_verify as verify;
