//! Cross-checks of the cosign/Sigstore fixture generator (`ivpol_tests::sign`)
//! with sigstore-rust (`sigstore-verify`, linked in): every fixture is pushed
//! to a real registry, read back over the distribution API and verified;
//! tampered fixtures must be refused. The cross-checks with openssl,
//! sigstore-python and sigstore-js stay in the root's end-to-end tests
//! (`tests/tests/e2e/fixtures_crosscheck.rs`).

use ivpol_tests::fixtures::{Pusher, OCI_MANIFEST};
use ivpol_tests::registry::Registry;
use ivpol_tests::sign::oci::read_bundles;
use ivpol_tests::sign::{
    now, oci, BundleOpts, Content, CtLog, Fulcio, Identity, KeyKind, KeyPair, LeafSpec, Rekor,
    SigHash, Signer, Tamper, TrustedRoot, Window,
};
use serde_json::json;

fn pusher(reg: &Registry) -> Pusher<'_> {
    Pusher {
        addr: &reg.addr,
        auth: None,
    }
}

mod sigstore_rust;
