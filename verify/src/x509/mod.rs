//! X.509 certificates and chain validation for Fulcio, BYO-PKI and trusted
//! roots (<https://github.com/sigstore/fulcio/blob/main/docs/certificate-specification.md>).
//!
//! `verify_chain` follows Go's `crypto/x509` `Verify` as cosign uses it
//! (`TrustedCert`), with these deliberate differences:
//! - every issuer in the path, trust anchors included, must carry
//!   basicConstraints cA=true (and keyCertSign when KeyUsage is present);
//! - with `Purpose::CodeSigning` a leaf EKU, when present, must list
//!   codeSigning (or anyExtendedKeyUsage); a leaf with no EKU extension is
//!   accepted, as Go does (the containers/image BYO-PKI fixture has none);
//! - an unknown critical extension anywhere in the path (name constraints
//!   included, which are not evaluated) rejects the path;
//! - SHA-1 signatures are refused.

mod error;
pub mod fulcio;
mod path;
pub mod sct;

pub use error::X509Error;
pub use path::verify_chain;

use std::fmt;

use der::{Decode, Encode};
use sha2::Digest;
use x509_cert::ext::pkix::{BasicConstraints, ExtendedKeyUsage, KeyUsage};

use super::encoding::{pem_blocks, pem_encode};
use super::keys::{HashAlgorithm, PublicKey};
use super::Result;

/// Largest DER certificate, and largest PEM text of one certificate.
pub const MAX_CERT_SIZE: usize = 64 * 1024;
/// Most certificates read from one PEM text.
pub const MAX_PEM_CERTS: usize = 32;
/// Longest path leaf..anchor.
pub const MAX_PATH_LEN: usize = 10;

/// Extensions this verifier understands (others, if critical, reject).
const KNOWN_CRITICAL: &[&str] = &[
    "2.5.29.15", // keyUsage
    "2.5.29.17", // subjectAltName (Fulcio marks it critical)
    "2.5.29.19", // basicConstraints
    "2.5.29.37", // extKeyUsage
    "2.5.29.14", // subjectKeyIdentifier
    "2.5.29.35", // authorityKeyIdentifier
    "2.5.29.32", // certificatePolicies
];

/// A parsed certificate together with its exact DER.
#[derive(Clone)]
pub struct Certificate {
    der: Vec<u8>,
    tbs_der: Vec<u8>,
    cert: x509_cert::Certificate,
}

impl fmt::Debug for Certificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Certificate({})", self.subject())
    }
}

impl PartialEq for Certificate {
    fn eq(&self, other: &Certificate) -> bool {
        self.der == other.der
    }
}
impl Eq for Certificate {}

/// What the leaf of a path is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Leaf EKU, if present, must contain codeSigning (or anyEKU); KU, if
    /// present, digitalSignature.
    CodeSigning,
    /// No EKU/KU requirement on the leaf.
    Any,
}

impl Certificate {
    /// Parses one DER certificate (at most 64 KiB, no trailing bytes).
    pub fn from_der(der: &[u8]) -> Result<Certificate, X509Error> {
        if der.len() > MAX_CERT_SIZE {
            return Err(X509Error::TooLarge);
        }
        let cert = x509_cert::Certificate::from_der(der).map_err(X509Error::Invalid)?;
        // The TBSCertificate exactly as signed: the first element of the
        // outer SEQUENCE.
        let (_, outer, _) = der_tlv(der)?;
        let (_, _, tbs) = der_tlv(outer)?;
        Ok(Certificate {
            der: der.to_vec(),
            tbs_der: tbs.to_vec(),
            cert,
        })
    }

    /// Every CERTIFICATE block of `pem`, in order (at most 32, each at most
    /// 64 KiB); other PEM blocks are skipped. An empty result is an error.
    /// The attestors' entry point; [`Certificate::read_pem`] says why as an
    /// [`X509Error`].
    pub fn parse_pem(pem: &str) -> Result<Vec<Certificate>> {
        Ok(Certificate::read_pem(pem)?)
    }

    /// As [`Certificate::parse_pem`].
    pub fn read_pem(pem: &str) -> Result<Vec<Certificate>, X509Error> {
        let blocks = pem_blocks(pem, MAX_PEM_CERTS, MAX_CERT_SIZE * 2)?;
        let certs = blocks
            .iter()
            .filter(|b| b.label == "CERTIFICATE")
            .map(|b| Certificate::from_der(&b.der))
            .collect::<Result<Vec<_>, _>>()?;
        if certs.is_empty() {
            return Err(X509Error::NoPemBlock);
        }
        Ok(certs)
    }

    /// The certificate's DER.
    pub fn der(&self) -> &[u8] {
        &self.der
    }

    /// The signed TBSCertificate DER.
    pub fn tbs_der(&self) -> &[u8] {
        &self.tbs_der
    }

    /// PEM re-encoding (64 columns, trailing newline), as Go writes it.
    pub fn pem(&self) -> String {
        pem_encode("CERTIFICATE", &self.der)
    }

    /// The parsed certificate, for extension lookups.
    pub fn inner(&self) -> &x509_cert::Certificate {
        &self.cert
    }

    /// The certificate's subject public key. The attestors' entry point;
    /// [`Certificate::subject_key`] says why as an [`X509Error`].
    pub fn public_key(&self) -> Result<PublicKey> {
        Ok(self.subject_key()?)
    }

    /// As [`Certificate::public_key`].
    pub fn subject_key(&self) -> Result<PublicKey, X509Error> {
        let spki = self
            .cert
            .tbs_certificate()
            .subject_public_key_info()
            .to_der()
            .map_err(X509Error::KeyEncoding)?;
        PublicKey::from_spki_der(&spki).map_err(|source| X509Error::Key {
            subject: self.subject(),
            source: Box::new(source),
        })
    }

    /// notBefore, unix seconds.
    pub fn not_before(&self) -> i64 {
        unix(&self.cert.tbs_certificate().validity().not_before)
    }

    /// notAfter, unix seconds.
    pub fn not_after(&self) -> i64 {
        unix(&self.cert.tbs_certificate().validity().not_after)
    }

    /// Subject DN as text (for messages).
    pub fn subject(&self) -> String {
        self.cert.tbs_certificate().subject().to_string()
    }

    /// SHA-256 of the DER, lowercase hex.
    pub fn fingerprint(&self) -> String {
        super::encoding::hex(&sha2::Sha256::digest(&self.der))
    }

    /// basicConstraints cA=true.
    pub fn is_ca(&self) -> bool {
        matches!(self.basic_constraints(), Ok(Some(bc)) if bc.ca)
    }

    /// The basicConstraints extension, if present.
    pub fn basic_constraints(&self) -> Result<Option<BasicConstraints>, X509Error> {
        self.cert
            .tbs_certificate()
            .get_extension::<BasicConstraints>()
            .map(|o| o.map(|(_, bc)| bc))
            .map_err(|e| self.bad_ext("basicConstraints", e))
    }

    /// The keyUsage extension, if present.
    pub fn key_usage(&self) -> Result<Option<KeyUsage>, X509Error> {
        self.cert
            .tbs_certificate()
            .get_extension::<KeyUsage>()
            .map(|o| o.map(|(_, ku)| ku))
            .map_err(|e| self.bad_ext("keyUsage", e))
    }

    /// The extKeyUsage extension's purposes (dotted OIDs), if present.
    pub fn ext_key_usage(&self) -> Result<Option<Vec<String>>, X509Error> {
        self.cert
            .tbs_certificate()
            .get_extension::<ExtendedKeyUsage>()
            .map(|o| o.map(|(_, eku)| eku.0.iter().map(|o| o.to_string()).collect()))
            .map_err(|e| self.bad_ext("extKeyUsage", e))
    }

    fn bad_ext(&self, name: &'static str, source: der::Error) -> X509Error {
        X509Error::BadExtension {
            subject: self.subject(),
            extension: name,
            source: Box::new(source),
        }
    }

    /// The raw value (extnValue contents) of extension `oid`, if present.
    pub fn extension(&self, oid: &str) -> Option<&[u8]> {
        self.cert
            .tbs_certificate()
            .extensions()?
            .iter()
            .find(|e| e.extn_id.to_string() == oid)
            .map(|e| e.extn_value.as_bytes())
    }

    /// Whether extension `oid` is present and marked critical (`None`
    /// when absent).
    pub fn extension_critical(&self, oid: &str) -> Option<bool> {
        self.cert
            .tbs_certificate()
            .extensions()?
            .iter()
            .find(|e| e.extn_id.to_string() == oid)
            .map(|e| e.critical)
    }

    fn check_critical_extensions(&self) -> Result<(), X509Error> {
        for ext in self
            .cert
            .tbs_certificate()
            .extensions()
            .into_iter()
            .flatten()
        {
            let oid = ext.extn_id.to_string();
            if ext.critical && !KNOWN_CRITICAL.contains(&oid.as_str()) {
                return Err(X509Error::UnknownCritical {
                    subject: self.subject(),
                    oid: ext.extn_id,
                });
            }
        }
        Ok(())
    }

    /// The DER of the issuer name (empty if it cannot be encoded).
    pub fn issuer_der(&self) -> Vec<u8> {
        self.cert
            .tbs_certificate()
            .issuer()
            .to_der()
            .unwrap_or_default()
    }

    /// The DER of the subject name (empty if it cannot be encoded).
    pub fn subject_der(&self) -> Vec<u8> {
        self.cert
            .tbs_certificate()
            .subject()
            .to_der()
            .unwrap_or_default()
    }

    /// Whether `issuer`'s key signed this certificate.
    pub fn verify_signed_by(&self, issuer: &Certificate) -> Result<(), X509Error> {
        let key = issuer.subject_key()?;
        if signed_by(
            self.cert.signature_algorithm(),
            self.cert.signature(),
            &key,
            &self.tbs_der,
        )? {
            Ok(())
        } else {
            Err(X509Error::NotSignedBy {
                subject: self.subject(),
                issuer: issuer.subject(),
            })
        }
    }

    fn check_valid_at(&self, at: i64) -> Result<(), X509Error> {
        if at < self.not_before() || at > self.not_after() {
            return Err(X509Error::NotValidAt {
                subject: self.subject(),
                at,
                not_before: self.not_before(),
                not_after: self.not_after(),
            });
        }
        Ok(())
    }
}

fn unix(t: &x509_cert::time::Time) -> i64 {
    i64::try_from(t.to_unix_duration().as_secs()).unwrap_or(i64::MAX)
}

/// Unix seconds of a UTC calendar time, `None` when it is not a valid
/// date and time from 1970 on (`der::DateTime` checks the ranges).
pub fn unix_time(year: i64, month: i64, day: i64, hour: i64, min: i64, sec: i64) -> Option<i64> {
    let field = |v: i64| u8::try_from(v).ok();
    let dt = der::DateTime::new(
        u16::try_from(year).ok()?,
        field(month)?,
        field(day)?,
        field(hour)?,
        field(min)?,
        field(sec)?,
    )
    .ok()?;
    i64::try_from(dt.unix_duration().as_secs()).ok()
}

/// RFC 3339 text of unix seconds (UTC), for messages.
pub fn fmt_time(t: i64) -> String {
    match der::DateTime::from_unix_duration(std::time::Duration::from_secs(t.max(0) as u64)) {
        Ok(dt) => format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            dt.year(),
            dt.month(),
            dt.day(),
            dt.hour(),
            dt.minutes(),
            dt.seconds()
        ),
        Err(_) => format!("{t} (unix)"),
    }
}

/// Whether `key` made `signature` over `signed` with `algorithm`: the
/// signature of a certificate, a CRL or an OCSP response. An algorithm
/// not accepted here (SHA-1 among them) is an error.
pub fn signed_by(
    algorithm: &spki::AlgorithmIdentifierOwned,
    signature: &der::asn1::BitString,
    key: &PublicKey,
    signed: &[u8],
) -> Result<bool, X509Error> {
    let alg = SignatureAlgorithm::of(algorithm)?;
    let signature = signature.as_bytes().ok_or(X509Error::SignatureUnusedBits)?;
    Ok(alg.verify(key, signed, signature))
}

/// Certificate signature algorithms accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SignatureAlgorithm {
    Ecdsa(HashAlgorithm),
    RsaPkcs1(HashAlgorithm),
    RsaPss(HashAlgorithm),
    Ed25519,
}

impl SignatureAlgorithm {
    fn of(alg: &spki::AlgorithmIdentifierOwned) -> Result<SignatureAlgorithm, X509Error> {
        let oid = alg.oid.to_string();
        Ok(match oid.as_str() {
            "1.2.840.10045.4.3.2" => SignatureAlgorithm::Ecdsa(HashAlgorithm::Sha256),
            "1.2.840.10045.4.3.3" => SignatureAlgorithm::Ecdsa(HashAlgorithm::Sha384),
            "1.2.840.10045.4.3.4" => SignatureAlgorithm::Ecdsa(HashAlgorithm::Sha512),
            "1.2.840.113549.1.1.11" => SignatureAlgorithm::RsaPkcs1(HashAlgorithm::Sha256),
            "1.2.840.113549.1.1.12" => SignatureAlgorithm::RsaPkcs1(HashAlgorithm::Sha384),
            "1.2.840.113549.1.1.13" => SignatureAlgorithm::RsaPkcs1(HashAlgorithm::Sha512),
            "1.3.101.112" => SignatureAlgorithm::Ed25519,
            "1.2.840.113549.1.1.10" => {
                let params_der = alg
                    .parameters
                    .as_ref()
                    .ok_or(X509Error::PssWithoutParameters)?
                    .to_der()
                    .map_err(X509Error::PssParameters)?;
                let params = rsa::pkcs1::RsaPssParams::<der::Any>::from_der(&params_der)
                    .map_err(X509Error::PssParameters)?;
                let hash = match params.hash.oid.to_string().as_str() {
                    "2.16.840.1.101.3.4.2.1" => HashAlgorithm::Sha256,
                    "2.16.840.1.101.3.4.2.2" => HashAlgorithm::Sha384,
                    "2.16.840.1.101.3.4.2.3" => HashAlgorithm::Sha512,
                    "1.3.14.3.2.26" => return Err(X509Error::PssSha1),
                    _ => return Err(X509Error::PssHash(params.hash.oid)),
                };
                SignatureAlgorithm::RsaPss(hash)
            }
            "1.2.840.113549.1.1.5" | "1.2.840.10045.4.1" | "1.3.14.3.2.29" => {
                return Err(X509Error::Sha1)
            }
            _ => return Err(X509Error::SignatureAlgorithm(alg.oid)),
        })
    }

    fn verify(self, key: &PublicKey, message: &[u8], signature: &[u8]) -> bool {
        use super::keys::Scheme;
        let scheme = match self {
            SignatureAlgorithm::Ecdsa(h) => Scheme::Ecdsa(h),
            SignatureAlgorithm::RsaPkcs1(h) => Scheme::RsaPkcs1(h),
            SignatureAlgorithm::RsaPss(h) => Scheme::RsaPss(h),
            SignatureAlgorithm::Ed25519 => Scheme::Ed25519,
        };
        key.verify_scheme(scheme, message, signature)
    }
}

/// Splits one DER TLV off `input`: (tag byte, contents, whole TLV) and
/// the rest after it.
pub fn der_tlv(input: &[u8]) -> Result<(u8, &[u8], &[u8]), X509Error> {
    let tlv = Tlv::read(input)?;
    Ok((tlv.tag, tlv.contents, tlv.whole))
}

/// One DER TLV split off the front of a buffer.
pub struct Tlv<'a> {
    /// The tag byte.
    pub tag: u8,
    /// The value's bytes.
    pub contents: &'a [u8],
    /// The whole TLV: tag, length and value.
    pub whole: &'a [u8],
    /// What follows it.
    pub rest: &'a [u8],
}

impl<'a> Tlv<'a> {
    /// Splits one TLV off `input`.
    pub fn read(input: &'a [u8]) -> Result<Tlv<'a>, X509Error> {
        der_tlv_rest(input)
    }
}

fn der_tlv_rest(input: &[u8]) -> Result<Tlv<'_>, X509Error> {
    let bad = || X509Error::MalformedDer;
    let tag = *input.first().ok_or_else(bad)?;
    if tag & 0x1f == 0x1f {
        return Err(bad()); // multi-byte tags are not used in certificates
    }
    let first = *input.get(1).ok_or_else(bad)?;
    let (len, header) = if first < 0x80 {
        (usize::from(first), 2)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 {
            return Err(bad());
        }
        let bytes = input.get(2..2 + n).ok_or_else(bad)?;
        let len = bytes
            .iter()
            .fold(0usize, |acc, b| acc << 8 | usize::from(*b));
        (len, 2 + n)
    };
    let end = header.checked_add(len).ok_or_else(bad)?;
    let contents = input.get(header..end).ok_or_else(bad)?;
    let whole = input.get(..end).ok_or_else(bad)?;
    let rest = input.get(end..).ok_or_else(bad)?;
    Ok(Tlv {
        tag,
        contents,
        whole,
        rest,
    })
}

/// DER encoding of a TLV with `tag` around `contents`.
pub fn der_wrap(tag: u8, contents: &[u8]) -> Vec<u8> {
    let len = contents.len();
    let mut out = vec![tag];
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        let significant = bytes.get(skip..).unwrap_or_default();
        out.push(0x80 | significant.len() as u8);
        out.extend_from_slice(significant);
    }
    out.extend_from_slice(contents);
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::Reason;

    pub(crate) use crate::testdata::{read, DERIVED, FIXTURES};

    pub(crate) fn certs(path: &str) -> Vec<Certificate> {
        Certificate::parse_pem(&read(path)).unwrap()
    }

    // 2023-01-20T20:51:33Z, inside the Fulcio leaf's ten minutes.
    const FULCIO_T: i64 = 1674247893;

    #[test]
    fn fulcio_chain_at_integrated_time_only() {
        let leaf = &certs(&format!(
            "{DERIVED}dir-img-cosign-fulcio-rekor-valid/cert.pem"
        ))[0];
        let chain = certs(&format!(
            "{DERIVED}dir-img-cosign-fulcio-rekor-valid/chain.pem"
        ));
        let root = certs(&format!("{FIXTURES}fulcio_v1.crt.pem"));
        assert!(!leaf.is_ca());
        assert!(chain.iter().all(Certificate::is_ca));
        let path = verify_chain(leaf, &chain, &root, FULCIO_T, Purpose::CodeSigning).unwrap();
        assert_eq!(path.len(), 3);
        assert_eq!(path.last(), root.first());
        // The chain annotation alone carries the root too, but only `roots`
        // are anchors.
        let e = verify_chain(leaf, &chain, &[], FULCIO_T, Purpose::CodeSigning).unwrap_err();
        assert_eq!(e, X509Error::NoRoots);
        // Expired today.
        let e = verify_chain(leaf, &chain, &root, 1_800_000_000, Purpose::Any).unwrap_err();
        assert!(matches!(e, X509Error::NotValidAt { .. }), "{e}");
        assert_eq!(e.reason(), Reason::Timestamp);
        // Missing intermediate.
        let e = verify_chain(leaf, &[], &root, FULCIO_T, Purpose::Any).unwrap_err();
        assert_eq!(e.reason(), Reason::UntrustedChain, "{e}");
        // PEM round trip is byte-exact in DER.
        assert_eq!(Certificate::parse_pem(&leaf.pem()).unwrap()[0], *leaf);
        assert!(leaf.not_before() <= FULCIO_T && FULCIO_T <= leaf.not_after());
        assert_eq!(leaf.public_key().unwrap().algorithm(), "ECDSA P-256");
    }

    #[test]
    fn pki_chain() {
        let leaf = &certs(&format!("{DERIVED}dir-img-cosign-pki-valid/cert.pem"))[0];
        let roots = certs(&format!("{FIXTURES}pki_root_crts.pem"));
        let inter = certs(&format!("{FIXTURES}pki_intermediate_crts.pem"));
        let now = 1_796_169_600; // 2026-12-01
        verify_chain(leaf, &inter, &roots, now, Purpose::CodeSigning).unwrap();
        // Roots and intermediates mixed in `roots`: an intermediate is an anchor.
        let mut all = roots.clone();
        all.extend(inter.iter().cloned());
        let path = verify_chain(leaf, &[], &all, now, Purpose::CodeSigning).unwrap();
        assert_eq!(path.len(), 2);
        let e = verify_chain(leaf, &[], &roots, now, Purpose::CodeSigning).unwrap_err();
        assert_eq!(e.reason(), Reason::UntrustedChain, "{e}");
    }

    #[test]
    fn leaf_as_anchor_and_wrong_root() {
        let root = certs(&format!("{FIXTURES}fulcio_v1.crt.pem"));
        let pki = certs(&format!("{FIXTURES}pki_root_crts.pem"));
        let t = root[0].not_before() + 10;
        assert_eq!(
            verify_chain(&root[0], &[], &root, t, Purpose::Any)
                .unwrap()
                .len(),
            1
        );
        let e = verify_chain(&root[0], &[], &pki, t, Purpose::Any).unwrap_err();
        assert!(
            matches!(e, X509Error::NoChain { .. } | X509Error::NoIssuer { .. }),
            "{e}"
        );
        assert_eq!(e.reason(), Reason::UntrustedChain);
        // A CA certificate is not a code-signing leaf.
        let e = verify_chain(&root[0], &[], &root, t, Purpose::CodeSigning).unwrap_err();
        assert!(
            matches!(
                e,
                X509Error::NotCodeSigning(_) | X509Error::NoDigitalSignature(_)
            ),
            "{e}"
        );
    }

    #[test]
    fn parse_errors() {
        // `detail` is in the DER parser's text.
        let invalid = |r: Result<Certificate, X509Error>, detail: &str| match r {
            Err(X509Error::Invalid(got)) => {
                assert!(got.to_string().contains(detail), "{got}")
            }
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("accepted"),
        };
        assert!(matches!(
            Certificate::parse_pem(""),
            Err(crate::VerifyError::X509(X509Error::NoPemBlock))
        ));
        // a SEQUENCE holding only an INTEGER
        invalid(
            Certificate::from_der(b"\x30\x03\x02\x01\x00"),
            "expected SEQUENCE, got INTEGER",
        );
        let root = &certs(&format!("{FIXTURES}fulcio_v1.crt.pem"))[0];
        let mut der = root.der().to_vec();
        der.push(0);
        invalid(Certificate::from_der(&der), "trailing data");
        // a five-byte length, and a length past the end
        assert!(matches!(
            der_tlv(&[0x30, 0x85, 1, 1, 1, 1, 1]),
            Err(X509Error::MalformedDer)
        ));
        assert!(matches!(
            der_tlv(&[0x30, 0x05, 1]),
            Err(X509Error::MalformedDer)
        ));
        assert_eq!(der_wrap(0x04, &[1, 2]), vec![4, 2, 1, 2]);
        assert_eq!(der_wrap(0x04, &[0; 300])[..4], [4, 0x82, 1, 44]);
    }

    #[test]
    fn tampered_signature() {
        let leaf = &certs(&format!(
            "{DERIVED}dir-img-cosign-fulcio-rekor-valid/cert.pem"
        ))[0];
        let chain = certs(&format!(
            "{DERIVED}dir-img-cosign-fulcio-rekor-valid/chain.pem"
        ));
        let root = certs(&format!("{FIXTURES}fulcio_v1.crt.pem"));
        // Flip a byte inside the leaf's TBS (its serial number).
        let mut der = leaf.der().to_vec();
        let pos = der
            .windows(leaf.tbs_der().len())
            .position(|w| w == leaf.tbs_der())
            .unwrap()
            + 15;
        der[pos] ^= 1;
        let bad = Certificate::from_der(&der).unwrap();
        let e = verify_chain(&bad, &chain, &root, FULCIO_T, Purpose::Any).unwrap_err();
        assert!(
            matches!(&e, X509Error::NoChain { source, .. }
                if matches!(**source, X509Error::NotSignedBy { .. })),
            "{e}"
        );
    }
}
