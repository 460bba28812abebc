//! The end-to-end tests: each drives the real `ivpol` binary (`IVPOL_BIN`,
//! built by `cargo xtask test`) over HTTP against a real registry on
//! 127.0.0.1, one module per area. They are one test binary, not one per
//! file, so the workspace's dependencies are linked once.

#![forbid(unsafe_code)]

mod admission;
mod apply;
mod attestor_fields;
mod bad_input;
mod basic_auth;
mod bounds;
mod cache;
mod cosign;
mod decisions;
mod deploy;
mod dns_rebinding;
mod fixtures_crosscheck;
mod image_data;
mod kms;
mod kube_api;
mod kubernetes;
mod kyverno_cases;
mod kyverno_cli;
mod kyverno_test;
mod mutate;
mod notary;
mod oci;
mod policy_files;
mod registry_tls;
mod reload;
mod revocation;
mod samples;
mod scan;
mod security;
mod shared_cache;
mod sigstore_conformance;
mod stalled_clients;
mod tenants;
mod tls;
mod token_auth;
mod webhook_component;
mod webhooks;
