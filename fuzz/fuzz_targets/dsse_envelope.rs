//! DSSE envelopes (`verify::dsse`): parse, pre-authentication encoding and
//! signature verification with keys of each kind, then the same bytes as a
//! cosign `.att` layer, whose in-toto statement is read
//! (`verify::cosign::verify_attestation_verified`).
#![no_main]

use std::collections::BTreeMap;

use ivpol_fuzz::{cosign_key, split, NOW};
use ivpol_guest::verify::cosign::{
    verify_attestation_verified, Layer, Options, Verifier, MEDIA_TYPE_DSSE,
};
use ivpol_guest::verify::dsse::Envelope;
use ivpol_guest::verify::keys::{HashAlgorithm, PublicKey};
use libfuzzer_sys::fuzz_target;

fn keys() -> &'static [PublicKey] {
    static K: std::sync::OnceLock<Vec<PublicKey>> = std::sync::OnceLock::new();
    K.get_or_init(|| {
        [
            include_str!("../../conformance/cosign/containers-image/signature/fixtures/cosign.pub"),
            include_str!(
                "../../conformance/cosign/containers-image/signature/fixtures/some-rsa-key.pub"
            ),
            include_str!("../../conformance/sigstore/managed-key-happy-path/key.pub"),
        ]
        .iter()
        .map(|pem| PublicKey::from_pem(pem).expect("key"))
        .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    // An optional image digest after a NUL; the envelope before it.
    let parts = split(data, 2);
    let envelope = parts[0];
    let digest = parts
        .get(1)
        .map(|d| String::from_utf8_lossy(d).into_owned())
        .unwrap_or_else(|| ivpol_fuzz::COSIGN_DIGEST.to_string());
    if let Ok(env) = Envelope::parse(envelope) {
        let _ = Envelope::pae(&env.payload_type, &env.payload);
        for key in keys() {
            let _ = env.verify(key, None);
            let _ = env.verify(key, Some(HashAlgorithm::Sha512));
        }
    }
    let layer = Layer {
        media_type: MEDIA_TYPE_DSSE.into(),
        payload: envelope.to_vec(),
        annotations: BTreeMap::new(),
    };
    let opts = Options {
        verifier: Verifier::Keys(vec![cosign_key().clone()]),
        hash: None,
        tlogs: Vec::new(),
        ctlogs: Vec::new(),
        ignore_tlog: true,
        ignore_sct: true,
        annotations: BTreeMap::new(),
        tsa: Vec::new(),
        now: NOW,
    };
    let _ = verify_attestation_verified(&layer, &digest, &opts);
});
