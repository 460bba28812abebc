//! X.509 certificates and chains (`verify::x509`): PEM bundles or
//! concatenated DER certificates (leaf first, root last), each parsed and
//! read as the verifiers read them (keys, validity, extensions, Fulcio
//! identity, embedded SCTs), then path building and validation against the
//! input's own root and against Sigstore's Fulcio CAs, and the Notary
//! Project chain rules.
#![no_main]

use ivpol_fuzz::{fulcio_roots, public_good};
use ivpol_guest::notary::certs;
use ivpol_guest::verify::x509::fulcio::Identity;
use ivpol_guest::verify::x509::sct::{embedded_scts, tbs_without_scts, verify_embedded_sct};
use ivpol_guest::verify::x509::{verify_chain, Certificate, Purpose, Tlv};
use libfuzzer_sys::fuzz_target;

/// At most this many certificates are read from one input.
const MAX_CERTS: usize = 12;

fn chain_of(data: &[u8]) -> Vec<Certificate> {
    if let Ok(text) = std::str::from_utf8(data) {
        if text.contains("-----BEGIN") {
            return Certificate::parse_pem(text).unwrap_or_default();
        }
    }
    let mut certs = Vec::new();
    let mut rest = data;
    while !rest.is_empty() && certs.len() < MAX_CERTS {
        let Ok(tlv) = Tlv::read(rest) else { break };
        if let Ok(c) = Certificate::from_der(tlv.whole) {
            certs.push(c);
        }
        rest = tlv.rest;
    }
    certs
}

fuzz_target!(|data: &[u8]| {
    let chain = chain_of(data);
    for c in &chain {
        let _ = (c.public_key(), c.not_before(), c.not_after(), c.subject());
        let _ = (c.fingerprint(), c.is_ca(), c.pem(), c.tbs_der().len());
        let _ = c.extension("2.5.29.17");
        let _ = c.extension_critical("2.5.29.19");
        let _ = Identity::of(c);
        let _ = embedded_scts(c);
        let _ = tbs_without_scts(c);
        let _ = certs::signing_algorithm(c);
        let _ = c.verify_signed_by(c);
    }
    let Some((leaf, rest)) = chain.split_first() else {
        return;
    };
    let at = leaf.not_before().saturating_add(1);
    if let Some((root, intermediates)) = rest.split_last() {
        for purpose in [Purpose::CodeSigning, Purpose::Any] {
            let _ = verify_chain(leaf, intermediates, std::slice::from_ref(root), at, purpose);
        }
        let _ = verify_embedded_sct(leaf, &rest[0], &public_good().ctlogs);
    }
    let _ = verify_chain(leaf, rest, fulcio_roots(), at, Purpose::CodeSigning);
    let _ = certs::validate_chain(&chain);
});
