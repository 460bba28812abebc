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

use ivpol_verify::keys::KeySpec;
use ivpol_verify::x509::{Certificate, X509Error};
use ivpol_verify::Result;

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

ivpol_verify::debug_as_display!(ChainError);
/// Why an envelope's chain breaks the Notary certificate rules, in
/// notation's words. Malformed until the integrity stage classes it.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    /// No certificate.
    #[error("certificate-chain not present or is empty")]
    Empty,
    /// A lone certificate whose signature is not its own.
    #[error("certificate-chain is invalid, invalid self-signed certificate. subject: {subject:?}. Error: {source}")]
    SelfSignature {
        /// The certificate's subject.
        subject: String,
        /// Why its signature does not verify.
        source: X509Error,
    },
    /// A lone certificate whose issuer is not its subject.
    #[error("certificate-chain is invalid, invalid self-signed certificate. subject: {0:?}. Error: issuer and subject are not the same")]
    SelfIssuer(String),
    /// A lone certificate that breaks the leaf rules.
    #[error("certificate-chain is invalid, invalid self-signed certificate. Error: {0}")]
    SelfSignedLeaf(#[source] Box<ChainError>),
    /// The last certificate is not a root.
    #[error("certificate-chain is invalid, root certificate with subject {0:?} is not self-signed. Certificate chain must end with a valid self-signed root certificate")]
    RootNotSelfSigned(String),
    /// A self-signed certificate before the root.
    #[error("certificate-chain is invalid, {role} certificate with subject {subject:?} is self-signed. Certificate chain must not contain self-signed {role} certificate")]
    SelfSignedBelowRoot {
        /// `leaf` or `intermediate`.
        role: &'static str,
        /// The certificate's subject.
        subject: String,
    },
    /// A certificate the next one did not issue.
    #[error("certificate-chain is invalid, certificate with subject {subject:?} is not issued by {issuer:?}")]
    NotIssuedBy {
        /// The certificate's subject.
        subject: String,
        /// The next certificate's subject.
        issuer: String,
    },
    /// A certificate of a longer chain that breaks its rules.
    #[error("certificate-chain is invalid, {0}")]
    InChain(#[source] Box<ChainError>),
    /// A certificate whose extensions or key cannot be read.
    #[error(transparent)]
    Certificate(#[from] X509Error),
    /// A certificate that breaks one of the rules.
    #[error("certificate with subject {subject:?}: {rule}")]
    Rule {
        /// The certificate's subject.
        subject: String,
        /// The rule.
        rule: Rule,
    },
    /// A leaf without digitalSignature.
    #[error("the certificate with subject {0:?} is invalid. The key usage must have the bit positions for \"Digital Signature\" set")]
    NoDigitalSignature(String),
    /// A leaf with key usages beyond digitalSignature.
    #[error("the certificate with subject {subject:?} is invalid. The key usage must be \"Digital Signature\" only, but found {}", .found.join(", "))]
    ExtraKeyUsage {
        /// The certificate's subject.
        subject: String,
        /// The other usages, in notation's names.
        found: Vec<&'static str>,
    },
}

impl ChainError {
    /// The class of this failure: [`ivpol_verify::Reason::Malformed`] until the
    /// integrity stage classes it.
    pub fn reason(&self) -> ivpol_verify::Reason {
        match self {
            ChainError::Certificate(e) => e.reason(),
            _ => ivpol_verify::Reason::Malformed,
        }
    }
}

// Carried by a `VerifyError`, which cannot name it, with its class.
impl ivpol_verify::Failure for ChainError {
    fn reason(&self) -> ivpol_verify::Reason {
        ChainError::reason(self)
    }
}

ivpol_verify::debug_as_display!(Rule);
/// A Notary certificate rule, as notation words its breach.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rule {
    /// keyUsage is required.
    #[error("key usage extension must be present")]
    KeyUsageMissing,
    /// keyUsage must be critical.
    #[error("key usage extension must be marked critical")]
    KeyUsageNotCritical,
    /// A CA's path length leaves no room for the certificates below it.
    #[error("expected path length of {below} but certificate has path length {max} instead")]
    PathLength {
        /// Certificates below the CA.
        below: usize,
        /// Its pathLenConstraint.
        max: u8,
    },
    /// A CA without a critical cA=true.
    #[error("ca field in basic constraints must be present, critical, and set to true")]
    NotCa,
    /// A CA without keyCertSign.
    #[error("key usage must have the bit positions for key cert sign set")]
    NoKeyCertSign,
    /// A leaf with cA=true.
    #[error("if the basic constraints extension is present, the ca field must be set to false")]
    LeafIsCa,
    /// A leaf with an excluded EKU.
    #[error("extended key usage must not contain {0} eku")]
    ExcludedEku(&'static str),
    /// An RSA key size outside the Notary algorithms.
    #[error("rsa key size {0} bits is not supported")]
    RsaKeySize(usize),
    /// An EC curve outside the Notary algorithms.
    #[error("ecdsa key size {0} bits is not supported")]
    EcKeySize(usize),
    /// Ed25519, which the Notary Project does not sign with.
    #[error("Ed25519 keys are not supported")]
    Ed25519,
}

fn broken(cert: &Certificate, rule: Rule) -> ChainError {
    ChainError::Rule {
        subject: cert.subject(),
        rule,
    }
}

fn self_signed(cert: &Certificate) -> bool {
    cert.subject_der() == cert.issuer_der() && cert.verify_signed_by(cert).is_ok()
}

/// Checks `chain` (leaf first) against the Notary rules.
pub fn validate_chain(chain: &[Certificate]) -> Result<(), ChainError> {
    let Some(leaf) = chain.first() else {
        return Err(ChainError::Empty);
    };
    if chain.len() == 1 {
        if let Err(source) = leaf.verify_signed_by(leaf) {
            return Err(ChainError::SelfSignature {
                subject: leaf.subject(),
                source,
            });
        }
        if leaf.subject_der() != leaf.issuer_der() {
            return Err(ChainError::SelfIssuer(leaf.subject()));
        }
        return validate_leaf(leaf).map_err(|e| ChainError::SelfSignedLeaf(Box::new(e)));
    }
    let last = chain.len() - 1;
    for (i, cert) in chain.iter().enumerate() {
        if i == last {
            if !self_signed(cert) {
                return Err(ChainError::RootNotSelfSigned(cert.subject()));
            }
        } else {
            if self_signed(cert) {
                return Err(ChainError::SelfSignedBelowRoot {
                    role: if i == 0 { "leaf" } else { "intermediate" },
                    subject: cert.subject(),
                });
            }
            let parent = &chain[i + 1];
            if cert.issuer_der() != parent.subject_der() || cert.verify_signed_by(parent).is_err() {
                return Err(ChainError::NotIssuedBy {
                    subject: cert.subject(),
                    issuer: parent.subject(),
                });
            }
        }
        let valid = if i == 0 {
            validate_leaf(cert)
        } else {
            validate_ca(cert, i - 1)
        };
        valid.map_err(|e| ChainError::InChain(Box::new(e)))?;
    }
    Ok(())
}

fn key_usage_present_critical(cert: &Certificate) -> Result<(), ChainError> {
    match cert.extension_critical(OID_KEY_USAGE) {
        None => Err(broken(cert, Rule::KeyUsageMissing)),
        Some(false) => Err(broken(cert, Rule::KeyUsageNotCritical)),
        Some(true) => Ok(()),
    }
}

fn validate_ca(cert: &Certificate, below: usize) -> Result<(), ChainError> {
    let bc = cert.basic_constraints()?;
    let critical = cert.extension_critical(OID_BASIC_CONSTRAINTS) == Some(true);
    match bc {
        Some(bc) if bc.ca && critical => {
            if let Some(max) = bc.path_len_constraint {
                if usize::from(max) < below {
                    return Err(broken(cert, Rule::PathLength { below, max }));
                }
            }
        }
        _ => return Err(broken(cert, Rule::NotCa)),
    }
    key_usage_present_critical(cert)?;
    if !cert.key_usage()?.is_some_and(|ku| ku.key_cert_sign()) {
        return Err(broken(cert, Rule::NoKeyCertSign));
    }
    if let KeySpec::Rsa(bits) = cert.subject_key()?.key_spec() {
        if bits < 2048 {
            return Err(broken(cert, Rule::RsaKeySize(bits)));
        }
    }
    Ok(())
}

fn validate_leaf(cert: &Certificate) -> Result<(), ChainError> {
    if cert.basic_constraints()?.is_some_and(|bc| bc.ca) {
        return Err(broken(cert, Rule::LeafIsCa));
    }
    key_usage_present_critical(cert)?;
    let ku = cert.key_usage()?;
    let Some(ku) = ku.filter(|ku| ku.digital_signature()) else {
        return Err(ChainError::NoDigitalSignature(cert.subject()));
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
        return Err(ChainError::ExtraKeyUsage {
            subject: cert.subject(),
            found: invalid,
        });
    }
    if let Some(ekus) = cert.ext_key_usage()? {
        for (oid, name) in EXCLUDED_EKUS {
            if ekus.iter().any(|e| e == oid) {
                return Err(broken(cert, Rule::ExcludedEku(name)));
            }
        }
    }
    signing_algorithm(cert)?;
    Ok(())
}

/// The signature algorithm (JWS name) the leaf's key implies.
pub fn signing_algorithm(cert: &Certificate) -> Result<super::Alg, ChainError> {
    use super::Alg;
    let bad = |rule| broken(cert, rule);
    Ok(match cert.subject_key()?.key_spec() {
        KeySpec::Rsa(2048) => Alg::PS256,
        KeySpec::Rsa(3072) => Alg::PS384,
        KeySpec::Rsa(4096) => Alg::PS512,
        KeySpec::Ec(256) => Alg::ES256,
        KeySpec::Ec(384) => Alg::ES384,
        KeySpec::Ec(521) => Alg::ES512,
        KeySpec::Rsa(bits) => return Err(bad(Rule::RsaKeySize(bits))),
        KeySpec::Ec(bits) => return Err(bad(Rule::EcKeySize(bits))),
        KeySpec::Ed25519 => return Err(bad(Rule::Ed25519)),
    })
}
