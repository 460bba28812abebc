//! RFC 3161 timestamps (`verify::timestamp`): a DER `TimeStampResp` (as a
//! Sigstore bundle carries it) or `TimeStampToken` (as a Notary
//! countersignature is), then the rest of the input as the timestamped
//! signature. The token is verified against the TSAs of a Sigstore trusted
//! root and against Notary TSA roots, with its signing-certificate binding.
#![no_main]

use ivpol_fuzz::{custom_root, tsa_roots};
use ivpol_guest::verify::keys::HashAlgorithm;
use ivpol_guest::verify::timestamp::{self, check_signing_certificate_v2, TimeStampToken};
use ivpol_guest::verify::x509::{Certificate, Tlv};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (der, message) = match Tlv::read(data) {
        Ok(tlv) => (tlv.whole, tlv.rest),
        Err(_) => (data, &[][..]),
    };
    let _ = timestamp::parse_generalized_time(message);
    for token in [TimeStampToken::parse(der), TimeStampToken::parse_token(der)]
        .into_iter()
        .flatten()
    {
        let _ = timestamp::verify(&token, message, &custom_root().tsas);
        for hash in [
            HashAlgorithm::Sha256,
            HashAlgorithm::Sha384,
            HashAlgorithm::Sha512,
        ] {
            let _ = timestamp::verify_with_roots(&token, message, hash, tsa_roots());
        }
        for cert in token.certificates.iter().take(4) {
            if let Ok(c) = Certificate::from_der(cert) {
                let _ = token.signer_is(c.der());
                let _ = check_signing_certificate_v2(&token, &c);
            }
        }
    }
});
