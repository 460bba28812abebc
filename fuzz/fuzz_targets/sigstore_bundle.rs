//! Sigstore bundles (v0.1-v0.3, message signatures and DSSE, Rekor v1 and
//! v2 entries, inclusion proofs, checkpoints, SETs, RFC 3161 timestamps):
//! `verify::sigstore_bundle::verify` on the bundle JSON against fixed
//! trust roots, keyless and with a key.
#![no_main]

use ivpol_fuzz::{a_txt_sha256, custom_root, public_good, A_TXT, NOW};
use ivpol_guest::verify::keys::PublicKey;
use ivpol_guest::verify::sigstore_bundle::{self, bundle::Bundle, Artifact, Options, Policy};
use ivpol_guest::verify::x509::fulcio::IdentityRule;
use libfuzzer_sys::fuzz_target;
fn managed_key() -> &'static PublicKey {
    static K: std::sync::OnceLock<PublicKey> = std::sync::OnceLock::new();
    K.get_or_init(|| {
        PublicKey::from_pem(include_str!(
            "../../conformance/sigstore/managed-key-happy-path/key.pub"
        ))
        .expect("key.pub")
    })
}

fuzz_target!(|data: &[u8]| {
    // The parse alone, then full verifications (each parses again).
    if Bundle::parse(data).is_err() {
        return;
    }
    let anyone = Policy::Identities(vec![IdentityRule::default()]);
    let opts = Options {
        ignore_tlog: false,
        ignore_sct: false,
        require_timestamp: false,
        now: NOW,
    };
    let _ = sigstore_bundle::verify(data, Artifact::Bytes(A_TXT), &anyone, public_good(), &opts);
    let _ = sigstore_bundle::verify(
        data,
        Artifact::Sha256(a_txt_sha256()),
        &anyone,
        custom_root(),
        &opts,
    );
    let lenient = Options {
        ignore_tlog: true,
        ignore_sct: true,
        require_timestamp: false,
        now: NOW,
    };
    let _ = sigstore_bundle::verify(
        data,
        Artifact::Bytes(A_TXT),
        &Policy::Key(managed_key().clone()),
        public_good(),
        &lenient,
    );
});
