//! The component as an OCI artifact, against another implementation of the
//! Wasm OCI layout: `oci-wasm`, the crate `wkg oci` is built on, pulls what
//! `ivpol push` pushes and pushes what `ivpol pull` and `serve --component
//! oci://` read. The rest of the OCI tests are the root's
//! (`tests/tests/e2e/oci.rs`).

use ivpol_tests::fixtures::sha256;
use ivpol_tests::oci::{
    assert_serves_verdicts, component_file, ivpol, push, registry_digest, serve, ENGINE, WASM_LAYER,
};
use ivpol_tests::registry::Registry;

mod wkg;
