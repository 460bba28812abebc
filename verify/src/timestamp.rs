//! RFC 3161 timestamps: `TimeStampResp` → CMS `SignedData` → `TSTInfo`.
//!
//! Parsing ([`TimeStampToken::parse`]) checks the structure: a granted
//! status, a SignedData with exactly one signer whose signed attributes name
//! `id-ct-TSTInfo` and carry the digest of the encapsulated TSTInfo.
//! [`verify`] then checks the signer's signature and certificate against
//! the trusted timestamp authorities.

use cms::cert::CertificateChoices;
use cms::content_info::ContentInfo;
use cms::signed_data::{SignedData, SignerIdentifier, SignerInfo};
use const_oid::ObjectIdentifier;
use der::asn1::{Any, Int, OctetString};
use der::{Decode, Encode, Reader, SliceReader, Tag, Tagged};
use x509_cert::ext::pkix::{ExtendedKeyUsage, SubjectKeyIdentifier};

use crate::keys::HashAlgorithm;
use crate::trust::CertificateAuthority;
use crate::x509::{verify_chain, Certificate, Purpose};

use crate::Result;

mod error;
pub use error::{AuthorityProblem, TimestampError};

/// The largest `TimeStampResp` accepted, in bytes.
pub const MAX_TIMESTAMP_BYTES: usize = 64 * 1024;

/// `id-signedData` (CMS).
pub const ID_SIGNED_DATA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.7.2");
/// `id-ct-TSTInfo` (RFC 3161).
pub const ID_CT_TST_INFO: ObjectIdentifier =
    ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.16.1.4");
const ID_CONTENT_TYPE: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.3");
const ID_MESSAGE_DIGEST: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.4");
/// `id-aa-signingCertificateV2` (RFC 5035).
pub const ID_AA_SIGNING_CERTIFICATE_V2: ObjectIdentifier =
    ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.16.2.47");
/// `id-aa-signingCertificate` (RFC 2634, SHA-1 `ESSCertID`s).
pub const ID_AA_SIGNING_CERTIFICATE: ObjectIdentifier =
    ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.16.2.12");
const ID_SHA256: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.1");
const ID_SHA384: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.2");
const ID_SHA512: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.3");

/// The digest algorithm an RFC 3161 OID names.
pub fn hash_from_oid(oid: &ObjectIdentifier) -> Result<HashAlgorithm, TimestampError> {
    match *oid {
        ID_SHA256 => Ok(HashAlgorithm::Sha256),
        ID_SHA384 => Ok(HashAlgorithm::Sha384),
        ID_SHA512 => Ok(HashAlgorithm::Sha512),
        other => Err(TimestampError::DigestAlgorithm(other)),
    }
}

/// The fields of a `TSTInfo` a verifier uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TstInfo {
    /// The TSA policy the token was issued under.
    pub policy: ObjectIdentifier,
    /// The message imprint's hash algorithm.
    pub imprint_hash: HashAlgorithm,
    /// The message imprint: the hash of what was timestamped.
    pub imprint: Vec<u8>,
    /// Big-endian serial number bytes.
    pub serial: Vec<u8>,
    /// `genTime` in Unix seconds (fractions dropped).
    pub gen_time: i64,
    /// The request's nonce, if any.
    pub nonce: Option<Vec<u8>>,
}

/// A parsed timestamp token.
#[derive(Debug, Clone)]
pub struct TimeStampToken {
    /// The CMS SignedData around the TSTInfo.
    pub signed_data: SignedData,
    /// The TSA's signer info.
    pub signer: SignerInfo,
    /// The DER `TSTInfo` the signature covers (through the message digest).
    pub tst_info_der: Vec<u8>,
    /// The TSTInfo's fields.
    pub tst_info: TstInfo,
    /// The DER `SET OF Attribute` the signer signed.
    pub signed_attrs_der: Vec<u8>,
    /// The digest algorithm the signer used.
    pub digest_hash: HashAlgorithm,
    /// DER certificates embedded in the SignedData.
    pub certificates: Vec<Vec<u8>>,
}

fn der_err(what: &'static str) -> impl Fn(der::Error) -> TimestampError {
    move |source| TimestampError::Der { what, source }
}

impl TimeStampToken {
    /// Parses a DER `TimeStampResp` (what a bundle's `signedTimestamp` holds).
    pub fn parse(der: &[u8]) -> Result<TimeStampToken, TimestampError> {
        if der.len() > MAX_TIMESTAMP_BYTES {
            return Err(TimestampError::TooLarge(der.len()));
        }
        let mut r = SliceReader::new(der).map_err(der_err("TimeStampResp"))?;
        let (status, token) = r
            .sequence(|r: &mut SliceReader<'_>| {
                // PKIStatusInfo ::= SEQUENCE { status INTEGER, statusString OPTIONAL, failInfo OPTIONAL }
                let status = r.sequence(|r: &mut SliceReader<'_>| {
                    let status = Int::decode(r)?;
                    while !r.is_finished() {
                        Any::decode(r)?;
                    }
                    Ok::<_, der::Error>(status.as_bytes().to_vec())
                })?;
                let token = if r.is_finished() {
                    None
                } else {
                    Some(r.tlv_bytes()?.to_vec())
                };
                Ok::<_, der::Error>((status, token))
            })
            .map_err(der_err("TimeStampResp"))?;
        r.finish().map_err(der_err("TimeStampResp"))?;
        // 0 = granted, 1 = grantedWithMods
        if status != [0] && status != [1] {
            return Err(TimestampError::NotGranted(status));
        }
        let token = token.ok_or(TimestampError::NoToken)?;
        Self::parse_token(&token)
    }

    /// Parses a DER `TimeStampToken` (a CMS `ContentInfo`).
    pub fn parse_token(der: &[u8]) -> Result<TimeStampToken, TimestampError> {
        let ci = ContentInfo::from_der(der).map_err(der_err("ContentInfo"))?;
        if ci.content_type != ID_SIGNED_DATA {
            return Err(TimestampError::NotSignedData(ci.content_type));
        }
        let sd: SignedData = ci.content.decode_as().map_err(der_err("SignedData"))?;
        if sd.encap_content_info.econtent_type != ID_CT_TST_INFO {
            return Err(TimestampError::NotTstInfo(
                sd.encap_content_info.econtent_type,
            ));
        }
        let econtent = sd
            .encap_content_info
            .econtent
            .as_ref()
            .ok_or(TimestampError::NoTstInfo)?;
        let octets: OctetString = econtent.decode_as().map_err(der_err("eContent"))?;
        let tst_info_der = octets.as_bytes().to_vec();
        let tst_info = parse_tst_info(&tst_info_der)?;

        let signers = sd.signer_infos.0.as_slice();
        let [signer] = signers else {
            return Err(TimestampError::Signers(signers.len()));
        };
        let signer = signer.clone();
        let digest_hash = hash_from_oid(&signer.digest_alg.oid)?;
        let attrs = signer
            .signed_attrs
            .as_ref()
            .ok_or(TimestampError::NoSignedAttributes)?;
        let mut content_type_ok = false;
        let mut digest_ok = false;
        for attr in attrs.iter() {
            let values = attr.values.as_slice();
            if attr.oid == ID_CONTENT_TYPE {
                let [v] = values else {
                    return Err(TimestampError::ContentTypeValues);
                };
                let oid: ObjectIdentifier =
                    v.decode_as().map_err(der_err("content-type attribute"))?;
                if content_type_ok || oid != ID_CT_TST_INFO {
                    return Err(TimestampError::ContentType);
                }
                content_type_ok = true;
            } else if attr.oid == ID_MESSAGE_DIGEST {
                let [v] = values else {
                    return Err(TimestampError::MessageDigestValues);
                };
                let d: OctetString = v.decode_as().map_err(der_err("message-digest attribute"))?;
                if digest_ok || d.as_bytes() != digest_hash.digest(&tst_info_der).as_slice() {
                    return Err(TimestampError::MessageDigest);
                }
                digest_ok = true;
            }
        }
        if !content_type_ok || !digest_ok {
            return Err(TimestampError::MissingAttributes);
        }
        let signed_attrs_der = attrs.to_der().map_err(der_err("signed attributes"))?;

        let mut certificates = Vec::new();
        if let Some(set) = &sd.certificates {
            for choice in set.0.iter() {
                if let CertificateChoices::Certificate(c) = choice {
                    certificates.push(c.to_der().map_err(der_err("embedded certificate"))?);
                }
            }
        }
        Ok(TimeStampToken {
            signed_data: sd,
            signer,
            tst_info_der,
            tst_info,
            signed_attrs_der,
            digest_hash,
            certificates,
        })
    }

    /// Whether the DER certificate `cert` is the one the signer names.
    pub fn signer_is(&self, cert: &[u8]) -> bool {
        let Ok(c) = x509_cert::Certificate::from_der(cert) else {
            return false;
        };
        let tbs = c.tbs_certificate();
        match &self.signer.sid {
            SignerIdentifier::IssuerAndSerialNumber(isn) => {
                isn.issuer == *tbs.issuer() && isn.serial_number == *tbs.serial_number()
            }
            SignerIdentifier::SubjectKeyIdentifier(ski) => {
                matches!(tbs.get_extension::<SubjectKeyIdentifier>(), Ok(Some((_, s))) if s == *ski)
            }
        }
    }
}

/// `IssuerSerial ::= SEQUENCE { issuer GeneralNames, serialNumber CertificateSerialNumber }`
#[derive(der::Sequence)]
struct IssuerSerial {
    issuer: x509_cert::ext::pkix::name::GeneralNames,
    serial_number: x509_cert::serial_number::SerialNumber,
}

/// The first `ESSCertIDv2` of a `SigningCertificateV2` (RFC 5035 §3).
struct EssCertIdV2 {
    /// `hashAlgorithm`; `None` is the DEFAULT, SHA-256.
    hash_oid: Option<ObjectIdentifier>,
    cert_hash: Vec<u8>,
    issuer_serial: Option<IssuerSerial>,
}

/// Parses `SigningCertificateV2 ::= SEQUENCE { certs SEQUENCE OF
/// ESSCertIDv2, policies SEQUENCE OF PolicyInformation OPTIONAL }`,
/// returning the first `ESSCertIDv2` (`None` when `certs` is empty).
fn parse_signing_certificate_v2(der: &[u8]) -> der::Result<Option<EssCertIdV2>> {
    let mut r = SliceReader::new(der)?;
    let first = r.sequence(|r: &mut SliceReader<'_>| {
        let first = r.sequence(|r: &mut SliceReader<'_>| {
            let mut first = None;
            while !r.is_finished() {
                let id = r.sequence(|r: &mut SliceReader<'_>| {
                    // ESSCertIDv2 ::= SEQUENCE { hashAlgorithm DEFAULT sha256,
                    //   certHash OCTET STRING, issuerSerial OPTIONAL }
                    let hash_oid = if Tag::peek(r)? == Tag::Sequence {
                        Some(x509_cert::spki::AlgorithmIdentifierOwned::decode(r)?.oid)
                    } else {
                        None
                    };
                    let cert_hash = OctetString::decode(r)?.as_bytes().to_vec();
                    let issuer_serial = if r.is_finished() {
                        None
                    } else {
                        Some(IssuerSerial::decode(r)?)
                    };
                    Ok::<_, der::Error>(EssCertIdV2 {
                        hash_oid,
                        cert_hash,
                        issuer_serial,
                    })
                })?;
                first.get_or_insert(id);
            }
            Ok::<_, der::Error>(first)
        })?;
        if !r.is_finished() {
            Any::decode(r)?; // policies
        }
        Ok::<_, der::Error>(first)
    })?;
    r.finish()?;
    Ok(first)
}

/// The signing-certificate binding notation (tspclient-go) requires of a
/// timestamp (RFC 3161 §2.4.1 as updated by RFC 5816): the signer's signed
/// attributes carry exactly one signing-certificate-v2 attribute, whose
/// first `ESSCertIDv2` `certHash` (SHA-256 unless it names SHA-384 or
/// SHA-512) is the digest of `signer`, the certificate that verifies the
/// signature; an `issuerSerial`, when present, must name that certificate.
/// The SHA-1 signing-certificate (v1) attribute is not accepted, as
/// tspclient-go does not.
///
/// Sigstore bundle timestamps ([`verify`]) are not held to this.
pub fn check_signing_certificate_v2(
    token: &TimeStampToken,
    signer: &Certificate,
) -> Result<(), TimestampError> {
    let attrs: Vec<_> = token
        .signer
        .signed_attrs
        .iter()
        .flat_map(|a| a.iter())
        .collect();
    let v2: Vec<_> = attrs
        .iter()
        .filter(|a| a.oid == ID_AA_SIGNING_CERTIFICATE_V2)
        .collect();
    let attr = match v2.as_slice() {
        [a] => a,
        [] => {
            let v1 = attrs.iter().any(|a| a.oid == ID_AA_SIGNING_CERTIFICATE);
            return Err(TimestampError::NoSigningCertificateV2 { v1_only: v1 });
        }
        more => return Err(TimestampError::SeveralSigningCertificateV2(more.len())),
    };
    let [value] = attr.values.as_slice() else {
        return Err(TimestampError::SigningCertificateV2Values);
    };
    let value = value.to_der().map_err(der_err("SigningCertificateV2"))?;
    let id = parse_signing_certificate_v2(&value)
        .map_err(TimestampError::BadSigningCertificateV2)?
        .ok_or(TimestampError::EmptySigningCertificateV2)?;
    let hash = match &id.hash_oid {
        None => HashAlgorithm::Sha256,
        Some(oid) => hash_from_oid(oid).map_err(|_| TimestampError::CertHashAlgorithm(*oid))?,
    };
    if let Some(is) = &id.issuer_serial {
        let tbs = signer.inner().tbs_certificate();
        let Some(x509_cert::ext::pkix::name::GeneralName::DirectoryName(issuer)) =
            is.issuer.first()
        else {
            return Err(TimestampError::NoIssuerName);
        };
        if issuer != tbs.issuer() || is.serial_number != *tbs.serial_number() {
            return Err(TimestampError::IssuerSerial);
        }
    }
    if id.cert_hash != hash.digest(signer.der()) {
        return Err(TimestampError::CertHash);
    }
    Ok(())
}

const ID_ECDSA_SHA256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.2");
const ID_ECDSA_SHA384: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.3");
const ID_ECDSA_SHA512: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.4");
const ID_RSA_SHA256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.11");
const ID_RSA_SHA384: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.12");
const ID_RSA_SHA512: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.13");
const ID_KP_TIME_STAMPING: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.5.5.7.3.8");

/// Whether the DER certificate's extended key usage allows timestamping.
fn allows_time_stamping(der: &[u8]) -> bool {
    let Ok(c) = x509_cert::Certificate::from_der(der) else {
        return false;
    };
    matches!(
        c.tbs_certificate().get_extension::<ExtendedKeyUsage>(),
        Ok(Some((_, eku))) if eku.0.contains(&ID_KP_TIME_STAMPING)
    )
}

/// Verifies `token` as a timestamp over `signature` (the bundle's signature
/// bytes) by one of the trusted timestamp authorities, returning its
/// `genTime`.
///
/// The signer's certificate is the one embedded in the token or, when none
/// is, the authority's own leaf; either way it must chain to the authority's
/// root at `genTime`, allow timestamping, and `genTime` must lie inside the
/// authority's validity in the trust root.
pub fn verify(
    token: &TimeStampToken,
    signature: &[u8],
    tsas: &[CertificateAuthority],
) -> Result<i64, TimestampError> {
    let tst = &token.tst_info;
    if tst.imprint != tst.imprint_hash.digest(signature) {
        return Err(TimestampError::BundleImprint);
    }
    let t = tst.gen_time;
    let sig_hash = signer_signature_hash(token);
    let embedded: Vec<Certificate> = token
        .certificates
        .iter()
        .filter_map(|d| Certificate::from_der(d).ok())
        .collect();
    let mut errors = Vec::new();
    for tsa in tsas {
        let [tsa_leaf, rest @ ..] = tsa.certs.as_slice() else {
            continue;
        };
        let Some((root, intermediates)) = rest.split_last() else {
            errors.push(AuthorityProblem::NoRoot);
            continue;
        };
        let signer = embedded
            .iter()
            .find(|c| token.signer_is(c.der()))
            .or_else(|| token.signer_is(tsa_leaf.der()).then_some(tsa_leaf));
        let Some(signer) = signer else {
            errors.push(AuthorityProblem::NotSigner);
            continue;
        };
        let mut inter = intermediates.to_vec();
        if signer.der() != tsa_leaf.der() {
            inter.push(tsa_leaf.clone());
        }
        if let Err(e) = verify_chain(signer, &inter, std::slice::from_ref(root), t, Purpose::Any) {
            errors.push(AuthorityProblem::Chain(e));
            continue;
        }
        if !allows_time_stamping(signer.der()) {
            errors.push(AuthorityProblem::NotTimeStamping);
            continue;
        }
        let key = match signer.subject_key() {
            Ok(k) => k,
            Err(e) => {
                errors.push(AuthorityProblem::Key(e));
                continue;
            }
        };
        if let Err(e) = key.verify(
            &token.signed_attrs_der,
            token.signer.signature.as_bytes(),
            Some(sig_hash),
        ) {
            errors.push(AuthorityProblem::Signature(e));
            continue;
        }
        if !tsa.validity.contains(t) {
            errors.push(AuthorityProblem::OutsideValidity(t));
            continue;
        }
        return Ok(t);
    }
    Err(TimestampError::NoAuthority(errors))
}

/// Verifies `token` as a timestamp over `message` by a TSA whose chain,
/// taken from the certificates embedded in the token, ends at one of
/// `roots` (the Notary Project's `tsa` trust store): the message imprint,
/// which must be an `imprint_hash` digest (the hash of the envelope's
/// signature algorithm), the signing-certificate-v2 binding
/// ([`check_signing_certificate_v2`]), the signer's signature over the
/// signed attributes, a path valid at `genTime` and the signer's
/// timeStamping extended key usage. Returns `genTime` and the TSA path
/// (signer..root).
pub fn verify_with_roots(
    token: &TimeStampToken,
    message: &[u8],
    imprint_hash: HashAlgorithm,
    roots: &[Certificate],
) -> Result<(i64, Vec<Certificate>), TimestampError> {
    let tst = &token.tst_info;
    if tst.imprint_hash != imprint_hash {
        return Err(TimestampError::ImprintAlgorithm {
            imprint: tst.imprint_hash.name(),
            signature: imprint_hash.name(),
        });
    }
    if tst.imprint != tst.imprint_hash.digest(message) {
        return Err(TimestampError::Imprint);
    }
    if roots.is_empty() {
        return Err(TimestampError::NoTsaCertificates);
    }
    let embedded: Vec<Certificate> = token
        .certificates
        .iter()
        .filter_map(|d| Certificate::from_der(d).ok())
        .collect();
    let signer = embedded
        .iter()
        .find(|c| token.signer_is(c.der()))
        .ok_or(TimestampError::NoSigningCertificate)?;
    check_signing_certificate_v2(token, signer)?;
    let t = tst.gen_time;
    let path = verify_chain(signer, &embedded, roots, t, Purpose::Any)
        .map_err(|e| TimestampError::SigningCertificate(Box::new(e)))?;
    if !allows_time_stamping(signer.der()) {
        return Err(TimestampError::NotTimeStamping(signer.subject()));
    }
    let sig_hash = signer_signature_hash(token);
    signer
        .subject_key()?
        .verify(
            &token.signed_attrs_der,
            token.signer.signature.as_bytes(),
            Some(sig_hash),
        )
        .map_err(TimestampError::Signature)?;
    Ok((t, path))
}

fn signer_signature_hash(token: &TimeStampToken) -> HashAlgorithm {
    match token.signer.signature_algorithm.oid {
        ID_ECDSA_SHA256 | ID_RSA_SHA256 => HashAlgorithm::Sha256,
        ID_ECDSA_SHA384 | ID_RSA_SHA384 => HashAlgorithm::Sha384,
        ID_ECDSA_SHA512 | ID_RSA_SHA512 => HashAlgorithm::Sha512,
        _ => token.digest_hash,
    }
}

#[derive(der::Sequence)]
struct MessageImprint {
    hash_algorithm: x509_cert::spki::AlgorithmIdentifierOwned,
    hashed_message: OctetString,
}

fn parse_tst_info(der: &[u8]) -> Result<TstInfo, TimestampError> {
    let mut r = SliceReader::new(der).map_err(der_err("TSTInfo"))?;
    let (version, policy, imprint, serial, gen_time, nonce) = r
        .sequence(|r: &mut SliceReader<'_>| {
            let version = Int::decode(r)?;
            let policy = ObjectIdentifier::decode(r)?;
            let imprint = MessageImprint::decode(r)?;
            let serial = Int::decode(r)?;
            let gen_time = Any::decode(r)?;
            let mut nonce = None;
            // accuracy, ordering, nonce, tsa [0], extensions [1]
            while !r.is_finished() {
                let field = Any::decode(r)?;
                if field.tag() == Tag::Integer {
                    nonce = Some(field.value().to_vec());
                }
            }
            Ok::<_, der::Error>((
                version.as_bytes().to_vec(),
                policy,
                imprint,
                serial.as_bytes().to_vec(),
                gen_time,
                nonce,
            ))
        })
        .map_err(der_err("TSTInfo"))?;
    r.finish().map_err(der_err("TSTInfo"))?;
    if version != [1] {
        return Err(TimestampError::Version(version));
    }
    if gen_time.tag() != Tag::GeneralizedTime {
        return Err(TimestampError::GenTimeType);
    }
    let gen_time = parse_generalized_time(gen_time.value())?;
    Ok(TstInfo {
        policy,
        imprint_hash: hash_from_oid(&imprint.hash_algorithm.oid)?,
        imprint: imprint.hashed_message.as_bytes().to_vec(),
        serial,
        gen_time,
        nonce,
    })
}

/// Parses `YYYYMMDDHHMMSS[.f*]Z` (RFC 3161 allows fractional seconds) into
/// Unix seconds.
pub fn parse_generalized_time(value: &[u8]) -> Result<i64, TimestampError> {
    let bad = || TimestampError::GenTime(String::from_utf8_lossy(value).into_owned());
    let s = std::str::from_utf8(value).map_err(|_| bad())?;
    let s = s.strip_suffix('Z').ok_or_else(bad)?;
    let (whole, frac) = match s.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (s, None),
    };
    if let Some(f) = frac {
        // DER: no trailing zeros, at least one digit
        if f.is_empty() || !f.bytes().all(|b| b.is_ascii_digit()) || f.ends_with('0') {
            return Err(bad());
        }
    }
    if whole.len() != 14 || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let num = |from: usize, to: usize| -> Result<i64, TimestampError> {
        whole
            .get(from..to)
            .and_then(|x| x.parse().ok())
            .ok_or_else(bad)
    };
    let (y, mo, d, h, mi, sec) = (
        num(0, 4)?,
        num(4, 6)?,
        num(6, 8)?,
        num(8, 10)?,
        num(10, 12)?,
        num(12, 14)?,
    );
    crate::x509::unix_time(y, mo, d, h, mi, sec).ok_or_else(bad)
}

#[cfg(test)]
mod tests;

/// RFC 3161 tokens made here (P-256 TSA, self-signed), for the negative
/// cases the vendored tokens do not cover: this crate's tests, and
/// ivpol-notary's through the `test-support` feature.
#[cfg(any(test, feature = "test-support"))]
pub mod made;

#[cfg(test)]
mod made_tests;
