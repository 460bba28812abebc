//! The Notary Project's certificate rules for a signature's `x5c` chain
//! (notation-core-go `ValidateCodeSigningCertChain`).
//!
//! They differ from `x509::verify_chain` (path building for cosign): the
//! envelope carries the complete, ordered chain leaf..root; the root must be
//! self-signed and no other certificate may be; every certificate is signed
//! by the next one. The leaf needs a critical keyUsage with digitalSignature
//! only, no cA=true, and an EKU (when present) without serverAuth,
//! clientAuth, emailProtection, timeStamping, OCSPSigning or anyEKU; its key
//! must be RSA 2048/3072/4096 or EC P-256/384/521. CA certificates need
//! basicConstraints cA=true (marked critical), a path length that allows
//! the certificates below them, and a critical keyUsage with keyCertSign.
//! RSA keys of CA certificates must be at least 2048 bits. Validity is not
//! checked here: that is the time check's job (at the timestamp or now).
//!
//! Specification: <https://github.com/notaryproject/specifications/blob/main/specs/signature-specification.md>

use crate::keys::KeySpec;
use crate::x509::Certificate;
use crate::{Result, VerifyError};

const OID_KEY_USAGE: &str = "2.5.29.15";
const OID_BASIC_CONSTRAINTS: &str = "2.5.29.19";

/// EKUs a Notary signing certificate must not carry, with notation's names.
const EXCLUDED_EKUS: &[(&str, &str)] = &[
    ("1.3.6.1.5.5.7.3.1", "ServerAuth"),
    ("1.3.6.1.5.5.7.3.2", "ClientAuth"),
    ("1.3.6.1.5.5.7.3.4", "EmailProtection"),
    ("1.3.6.1.5.5.7.3.8", "Timestamping"),
    ("1.3.6.1.5.5.7.3.9", "OCSPSigning"),
    ("2.5.29.37.0", "Any"),
];

fn err(msg: String) -> VerifyError {
    VerifyError::new(format!("certificate-chain is invalid, {msg}"))
}

fn self_signed(cert: &Certificate) -> bool {
    cert.subject_der() == cert.issuer_der() && cert.verify_signed_by(cert).is_ok()
}

/// Checks `chain` (leaf first) against the Notary rules.
pub fn validate_chain(chain: &[Certificate]) -> Result<()> {
    let Some(leaf) = chain.first() else {
        return Err(VerifyError::new(
            "certificate-chain not present or is empty",
        ));
    };
    if chain.len() == 1 {
        if let Err(e) = leaf.verify_signed_by(leaf) {
            return Err(err(format!(
                "invalid self-signed certificate. subject: {:?}. Error: {e}",
                leaf.subject()
            )));
        }
        if leaf.subject_der() != leaf.issuer_der() {
            return Err(err(format!(
                "invalid self-signed certificate. subject: {:?}. Error: issuer and subject are not the same",
                leaf.subject()
            )));
        }
        return validate_leaf(leaf)
            .map_err(|e| err(format!("invalid self-signed certificate. Error: {e}")));
    }
    let last = chain.len() - 1;
    for (i, cert) in chain.iter().enumerate() {
        if i == last {
            if !self_signed(cert) {
                return Err(err(format!(
                    "root certificate with subject {:?} is not self-signed. Certificate chain must end with a valid self-signed root certificate",
                    cert.subject()
                )));
            }
        } else {
            if self_signed(cert) {
                let what = if i == 0 { "leaf" } else { "intermediate" };
                return Err(err(format!(
                    "{what} certificate with subject {:?} is self-signed. Certificate chain must not contain self-signed {what} certificate",
                    cert.subject()
                )));
            }
            let parent = &chain[i + 1];
            if cert.issuer_der() != parent.subject_der() || cert.verify_signed_by(parent).is_err() {
                return Err(err(format!(
                    "certificate with subject {:?} is not issued by {:?}",
                    cert.subject(),
                    parent.subject()
                )));
            }
        }
        if i == 0 {
            validate_leaf(cert).map_err(|e| err(e.to_string()))?;
        } else {
            validate_ca(cert, i - 1).map_err(|e| err(e.to_string()))?;
        }
    }
    Ok(())
}

fn key_usage_present_critical(cert: &Certificate) -> Result<()> {
    match cert.extension_critical(OID_KEY_USAGE) {
        None => Err(VerifyError::new(format!(
            "certificate with subject {:?}: key usage extension must be present",
            cert.subject()
        ))),
        Some(false) => Err(VerifyError::new(format!(
            "certificate with subject {:?}: key usage extension must be marked critical",
            cert.subject()
        ))),
        Some(true) => Ok(()),
    }
}

fn validate_ca(cert: &Certificate, below: usize) -> Result<()> {
    let bc = cert.basic_constraints()?;
    let critical = cert.extension_critical(OID_BASIC_CONSTRAINTS) == Some(true);
    match bc {
        Some(bc) if bc.ca && critical => {
            if let Some(max) = bc.path_len_constraint {
                if usize::from(max) < below {
                    return Err(VerifyError::new(format!(
                        "certificate with subject {:?}: expected path length of {below} but certificate has path length {max} instead",
                        cert.subject()
                    )));
                }
            }
        }
        _ => {
            return Err(VerifyError::new(format!(
                "certificate with subject {:?}: ca field in basic constraints must be present, critical, and set to true",
                cert.subject()
            )))
        }
    }
    key_usage_present_critical(cert)?;
    if !cert.key_usage()?.is_some_and(|ku| ku.key_cert_sign()) {
        return Err(VerifyError::new(format!(
            "certificate with subject {:?}: key usage must have the bit positions for key cert sign set",
            cert.subject()
        )));
    }
    if let KeySpec::Rsa(bits) = cert.public_key()?.key_spec() {
        if bits < 2048 {
            return Err(VerifyError::new(format!(
                "certificate with subject {:?}: rsa key size {bits} bits is not supported",
                cert.subject()
            )));
        }
    }
    Ok(())
}

fn validate_leaf(cert: &Certificate) -> Result<()> {
    if cert.basic_constraints()?.is_some_and(|bc| bc.ca) {
        return Err(VerifyError::new(format!(
            "certificate with subject {:?}: if the basic constraints extension is present, the ca field must be set to false",
            cert.subject()
        )));
    }
    key_usage_present_critical(cert)?;
    let ku = cert.key_usage()?;
    let Some(ku) = ku.filter(|ku| ku.digital_signature()) else {
        return Err(VerifyError::new(format!(
            "the certificate with subject {:?} is invalid. The key usage must have the bit positions for \"Digital Signature\" set",
            cert.subject()
        )));
    };
    let invalid: Vec<&str> = [
        (ku.key_encipherment(), "\"KeyEncipherment\""),
        (ku.data_encipherment(), "\"DataEncipherment\""),
        (ku.key_agreement(), "\"KeyAgreement\""),
        (ku.key_cert_sign(), "\"CertSign\""),
        (ku.crl_sign(), "\"CRLSign\""),
        (ku.encipher_only(), "\"EncipherOnly\""),
        (ku.decipher_only(), "\"DecipherOnly\""),
    ]
    .into_iter()
    .filter_map(|(set, name)| set.then_some(name))
    .collect();
    if !invalid.is_empty() {
        return Err(VerifyError::new(format!(
            "the certificate with subject {:?} is invalid. The key usage must be \"Digital Signature\" only, but found {}",
            cert.subject(),
            invalid.join(", ")
        )));
    }
    if let Some(ekus) = cert.ext_key_usage()? {
        for (oid, name) in EXCLUDED_EKUS {
            if ekus.iter().any(|e| e == oid) {
                return Err(VerifyError::new(format!(
                    "certificate with subject {:?}: extended key usage must not contain {name} eku",
                    cert.subject()
                )));
            }
        }
    }
    signing_algorithm(cert)?;
    Ok(())
}

/// The signature algorithm (JWS name) the leaf's key implies.
pub fn signing_algorithm(cert: &Certificate) -> Result<super::Alg> {
    use super::Alg;
    let bad = |m: String| {
        VerifyError::new(format!(
            "certificate with subject {:?}: {m}",
            cert.subject()
        ))
    };
    Ok(match cert.public_key()?.key_spec() {
        KeySpec::Rsa(2048) => Alg::PS256,
        KeySpec::Rsa(3072) => Alg::PS384,
        KeySpec::Rsa(4096) => Alg::PS512,
        KeySpec::Ec(256) => Alg::ES256,
        KeySpec::Ec(384) => Alg::ES384,
        KeySpec::Ec(521) => Alg::ES512,
        KeySpec::Rsa(bits) => {
            return Err(bad(format!("rsa key size {bits} bits is not supported")))
        }
        KeySpec::Ec(bits) => {
            return Err(bad(format!("ecdsa key size {bits} bits is not supported")))
        }
        KeySpec::Ed25519 => return Err(bad("Ed25519 keys are not supported".into())),
    })
}
