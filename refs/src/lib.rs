//! The names ivpol reads in both of its halves: container image references
//! with go-containerregistry's semantics ([`reference`]), Kyverno's image
//! globs with gobwas/glob's ([`glob`]), and the percent-encoding of URL
//! query values ([`encoding`]), JSON read from bytes through one reader
//! ([`json`]), the namespace of a resource read outside
//! admission ([`scope`]), the admission routes of a request path ([`route`]), registry
//! auth challenges, token answers and docker config credentials
//! ([`registry_auth`]), stable sorting that the component's crates share
//! ([`sort`]), the one header the component's requests carry
//! for the host ([`REVOCATION_FETCH_HEADER`]), and the policy metadata a
//! host's trimmed copy of a policy keeps ([`POLICY_REPORT_ANNOTATIONS`]).
//!
//! The component (Kubernetes requests, policies) and the host (the `push`,
//! `pull` and `inspect` commands, the registry token service) both depend
//! on this crate, so that one parser decides what a reference is. The two
//! OCI clients stay apart: the component's is synchronous over wasi:http,
//! the host's asynchronous over hyper.
//!
//! Each module is hand-written on purpose: it copies the Go behaviour that
//! Kyverno users see, which no Rust crate reproduces (`docs/architecture.md`).

#![forbid(unsafe_code)]
// Both halves build on this crate's API: every public item says what it is.
#![deny(missing_docs)]

pub mod encoding;
pub mod glob;
pub mod json;
pub mod reference;
pub mod registry_auth;
pub mod route;
pub mod scope;
pub mod sort;

pub use glob::{image_matches_glob, Glob, GlobError};

/// The request header by which the component marks a revocation fetch (an
/// OCSP or CRL URL a certificate names) to the host, which then sends it
/// as asked (plain HTTP included), without credentials, under
/// `--allow-revocation`, and drops the header. Both halves read this name.
pub const REVOCATION_FETCH_HEADER: &str = "ivpol-revocation-fetch";

/// The annotations of a policy that the component reads, beyond its spec:
/// what its report results carry (Kyverno's `ToPolicyReportResult`). A host
/// that hands the component a trimmed copy of a cluster object keeps these
/// and no other annotation, so that an unrelated edit is no reload.
pub const POLICY_REPORT_ANNOTATIONS: [&str; 3] = [
    "policies.kyverno.io/category",
    "policies.kyverno.io/severity",
    "policies.kyverno.io/scored",
];
/// The labels of a policy the component reads (its admission results are
/// not reported); see [`POLICY_REPORT_ANNOTATIONS`].
pub const POLICY_REPORT_LABELS: [&str; 1] = ["reports.kyverno.io/disabled"];
pub use reference::{api_host, digest_tag, parse, ImageRef, ImageRefError};
