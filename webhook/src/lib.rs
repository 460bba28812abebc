//! ivpol's policies as a webhook on any wasi:http host: the `webhook` world
//! of `wit/admission.wit`. The component exports
//! `wasi:http/incoming-handler` and imports nothing beyond standard WASI
//! 0.2, so `wasmtime serve`, Spin or wasmCloud can run it without ivpol's
//! host. It serves the admission routes of `ivpol serve`
//! (`/ivpol|nivpol/validate|mutate[/names]`) with the same engine, so the
//! same answers:
//!
//! - policies from a preopened `/policies` directory, or, without one,
//!   those baked in when it was built (`IVPOL_WEBHOOK_POLICIES`, the sample
//!   policies by default);
//! - a verification cache that lives in the instance (a host that makes an
//!   instance per request, as `wasmtime serve` does, keeps none);
//! - registry access over `wasi:http/outgoing-handler`, answering the
//!   registries' auth challenges itself (`registry`): anonymous Bearer
//!   tokens, credentials from a docker config and Secrets in the policy
//!   directory, plain HTTP only to the registries the operator lists.
//!
//! What `ivpol serve` adds is absent: no cluster data (Namespaces,
//! `resource.get`), so policies that need it are refused at load with the
//! usual diagnostics; no credentials held by a host, so no cloud credential
//! providers, KMS keys or trust files (policies that name them are refused
//! at load); no cache shared between instances or replicas.

mod cache;
pub mod registry;
pub mod serve;

#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)] // the code `wasip2::http::proxy::export!` emits
mod handler;
