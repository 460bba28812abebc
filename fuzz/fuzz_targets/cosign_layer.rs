//! Cosign's legacy `.sig` / `.att` layers (`verify::cosign`): the
//! simple-signing payload or DSSE envelope, and the annotations a registry
//! serves with it (signature, certificate, chain, Rekor bundle), verified
//! with a key, a certificate and keyless, with the transparency log on.
//! The Rekor bundle and its entry body are also parsed on their own.
//!
//! Input: NUL-separated `payload`, `signature` (base64), `certificate`
//! (PEM), `chain` (PEM), `bundle` (Rekor bundle JSON).
#![no_main]

use std::collections::BTreeMap;

use ivpol_fuzz::{cosign_key, cosign_roots, rekor_keys, split, COSIGN_DIGEST, NOW};
use ivpol_guest::verify::cosign::{
    verify_attestation_verified, verify_signature, Layer, Options, Verifier, ANNOTATION_BUNDLE,
    ANNOTATION_CERTIFICATE, ANNOTATION_CHAIN, ANNOTATION_SIGNATURE, MEDIA_TYPE_DSSE,
    MEDIA_TYPE_SIMPLESIGNING,
};
use ivpol_guest::verify::rekor::CosignBundle;
use ivpol_guest::verify::x509::fulcio::IdentityRule;
use libfuzzer_sys::fuzz_target;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fuzz_target!(|data: &[u8]| {
    let parts = split(data, 5);
    let mut annotations = BTreeMap::new();
    for (i, key) in [
        ANNOTATION_SIGNATURE,
        ANNOTATION_CERTIFICATE,
        ANNOTATION_CHAIN,
        ANNOTATION_BUNDLE,
    ]
    .into_iter()
    .enumerate()
    {
        if let Some(v) = parts.get(i + 1) {
            annotations.insert(key.to_string(), text(v));
        }
    }
    if let Some(bundle) = annotations.get(ANNOTATION_BUNDLE) {
        if let Ok(b) = CosignBundle::parse(bundle) {
            let _ = b.verify(rekor_keys());
            let _ = b.entry();
        }
    }
    let mut layer = Layer {
        media_type: MEDIA_TYPE_SIMPLESIGNING.into(),
        payload: parts[0].to_vec(),
        annotations,
    };
    let base = Options {
        verifier: Verifier::Keys(vec![cosign_key().clone()]),
        hash: None,
        tlogs: rekor_keys().to_vec(),
        ctlogs: Vec::new(),
        ignore_tlog: false,
        ignore_sct: true,
        annotations: BTreeMap::new(),
        tsa: Vec::new(),
        now: NOW,
    };
    let keyless = Options {
        verifier: Verifier::Keyless {
            identities: vec![IdentityRule::default()],
            roots: cosign_roots().to_vec(),
        },
        ..base.clone()
    };
    let mut required = base.clone();
    required.annotations.insert("team".into(), "a".into());
    for opts in [&base, &keyless, &required] {
        let _ = verify_signature(&layer, COSIGN_DIGEST, opts);
    }
    layer.media_type = MEDIA_TYPE_DSSE.into();
    for opts in [&base, &keyless] {
        let _ = verify_attestation_verified(&layer, COSIGN_DIGEST, opts);
    }
});
