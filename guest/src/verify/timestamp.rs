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

use crate::verify::keys::HashAlgorithm;
use crate::verify::trust::CertificateAuthority;
use crate::verify::x509::{verify_chain, Certificate, Purpose};

use crate::verify::{Result, VerifyError};

/// The largest `TimeStampResp` accepted, in bytes.
pub const MAX_TIMESTAMP_BYTES: usize = 64 * 1024;

pub const ID_SIGNED_DATA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.7.2");
pub const ID_CT_TST_INFO: ObjectIdentifier =
    ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.16.1.4");
const ID_CONTENT_TYPE: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.3");
const ID_MESSAGE_DIGEST: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.4");
const ID_SHA256: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.1");
const ID_SHA384: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.2");
const ID_SHA512: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.3");

/// The digest algorithm an RFC 3161 OID names.
pub fn hash_from_oid(oid: &ObjectIdentifier) -> Result<HashAlgorithm> {
    match *oid {
        ID_SHA256 => Ok(HashAlgorithm::Sha256),
        ID_SHA384 => Ok(HashAlgorithm::Sha384),
        ID_SHA512 => Ok(HashAlgorithm::Sha512),
        other => Err(VerifyError::new(format!(
            "timestamp uses the unsupported digest algorithm {other}"
        ))),
    }
}

/// The fields of a `TSTInfo` a verifier uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TstInfo {
    pub policy: ObjectIdentifier,
    pub imprint_hash: HashAlgorithm,
    pub imprint: Vec<u8>,
    /// Big-endian serial number bytes.
    pub serial: Vec<u8>,
    /// `genTime` in Unix seconds (fractions dropped).
    pub gen_time: i64,
    pub nonce: Option<Vec<u8>>,
}

/// A parsed timestamp token.
#[derive(Debug, Clone)]
pub struct TimeStampToken {
    pub signed_data: SignedData,
    pub signer: SignerInfo,
    /// The DER `TSTInfo` the signature covers (through the message digest).
    pub tst_info_der: Vec<u8>,
    pub tst_info: TstInfo,
    /// The DER `SET OF Attribute` the signer signed.
    pub signed_attrs_der: Vec<u8>,
    /// The digest algorithm the signer used.
    pub digest_hash: HashAlgorithm,
    /// DER certificates embedded in the SignedData.
    pub certificates: Vec<Vec<u8>>,
}

fn der_err(what: &str) -> impl Fn(der::Error) -> VerifyError + '_ {
    move |e| VerifyError::new(format!("malformed RFC 3161 timestamp: {what}: {e}"))
}

impl TimeStampToken {
    /// Parses a DER `TimeStampResp` (what a bundle's `signedTimestamp` holds).
    pub fn parse(der: &[u8]) -> Result<TimeStampToken> {
        if der.len() > MAX_TIMESTAMP_BYTES {
            return Err(VerifyError::new(format!(
                "RFC 3161 timestamp is {} bytes, more than the {MAX_TIMESTAMP_BYTES} allowed",
                der.len()
            )));
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
            return Err(VerifyError::new(format!(
                "RFC 3161 timestamp response status is not granted (status {status:?})"
            )));
        }
        let token = token
            .ok_or_else(|| VerifyError::new("RFC 3161 timestamp response has no timeStampToken"))?;
        Self::parse_token(&token)
    }

    /// Parses a DER `TimeStampToken` (a CMS `ContentInfo`).
    pub fn parse_token(der: &[u8]) -> Result<TimeStampToken> {
        let ci = ContentInfo::from_der(der).map_err(der_err("ContentInfo"))?;
        if ci.content_type != ID_SIGNED_DATA {
            return Err(VerifyError::new(format!(
                "RFC 3161 timestamp token is a {} ContentInfo, not SignedData",
                ci.content_type
            )));
        }
        let sd: SignedData = ci.content.decode_as().map_err(der_err("SignedData"))?;
        if sd.encap_content_info.econtent_type != ID_CT_TST_INFO {
            return Err(VerifyError::new(format!(
                "RFC 3161 timestamp encapsulates {}, not a TSTInfo",
                sd.encap_content_info.econtent_type
            )));
        }
        let econtent =
            sd.encap_content_info.econtent.as_ref().ok_or_else(|| {
                VerifyError::new("RFC 3161 timestamp has no encapsulated TSTInfo")
            })?;
        let octets: OctetString = econtent.decode_as().map_err(der_err("eContent"))?;
        let tst_info_der = octets.as_bytes().to_vec();
        let tst_info = parse_tst_info(&tst_info_der)?;

        let signers = sd.signer_infos.0.as_slice();
        let [signer] = signers else {
            return Err(VerifyError::new(format!(
                "RFC 3161 timestamp has {} signers; exactly one is required",
                signers.len()
            )));
        };
        let signer = signer.clone();
        let digest_hash = hash_from_oid(&signer.digest_alg.oid)?;
        let attrs = signer.signed_attrs.as_ref().ok_or_else(|| {
            VerifyError::new("RFC 3161 timestamp signer has no signed attributes")
        })?;
        let mut content_type_ok = false;
        let mut digest_ok = false;
        for attr in attrs.iter() {
            let values = attr.values.as_slice();
            if attr.oid == ID_CONTENT_TYPE {
                let [v] = values else {
                    return Err(VerifyError::new(
                        "RFC 3161 content-type attribute must have one value",
                    ));
                };
                let oid: ObjectIdentifier =
                    v.decode_as().map_err(der_err("content-type attribute"))?;
                if content_type_ok || oid != ID_CT_TST_INFO {
                    return Err(VerifyError::new(
                        "RFC 3161 timestamp's signed content-type attribute is not id-ct-TSTInfo",
                    ));
                }
                content_type_ok = true;
            } else if attr.oid == ID_MESSAGE_DIGEST {
                let [v] = values else {
                    return Err(VerifyError::new(
                        "RFC 3161 message-digest attribute must have one value",
                    ));
                };
                let d: OctetString = v.decode_as().map_err(der_err("message-digest attribute"))?;
                if digest_ok || d.as_bytes() != digest_hash.digest(&tst_info_der).as_slice() {
                    return Err(VerifyError::new(
                        "RFC 3161 timestamp's signed message digest does not match its TSTInfo",
                    ));
                }
                digest_ok = true;
            }
        }
        if !content_type_ok || !digest_ok {
            return Err(VerifyError::new(
                "RFC 3161 timestamp signer lacks the content-type or message-digest attribute",
            ));
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
) -> Result<i64> {
    let tst = &token.tst_info;
    if tst.imprint != tst.imprint_hash.digest(signature) {
        return Err(VerifyError::new(
            "RFC 3161 timestamp's message imprint is not the digest of the bundle's signature",
        ));
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
            errors.push("a trusted timestamp authority's chain has no root".to_string());
            continue;
        };
        let signer = embedded
            .iter()
            .find(|c| token.signer_is(c.der()))
            .or_else(|| token.signer_is(tsa_leaf.der()).then_some(tsa_leaf));
        let Some(signer) = signer else {
            errors.push("the signer is not this authority's certificate".to_string());
            continue;
        };
        let mut inter = intermediates.to_vec();
        if signer.der() != tsa_leaf.der() {
            inter.push(tsa_leaf.clone());
        }
        if let Err(e) = verify_chain(signer, &inter, std::slice::from_ref(root), t, Purpose::Any) {
            errors.push(format!("signer certificate: {e}"));
            continue;
        }
        if !allows_time_stamping(signer.der()) {
            errors.push("signer certificate does not allow timestamping".to_string());
            continue;
        }
        let key = match signer.public_key() {
            Ok(k) => k,
            Err(e) => {
                errors.push(e.0);
                continue;
            }
        };
        if let Err(e) = key.verify(
            &token.signed_attrs_der,
            token.signer.signature.as_bytes(),
            Some(sig_hash),
        ) {
            errors.push(format!("signature: {e}"));
            continue;
        }
        if !tsa.validity.contains(t) {
            errors.push(format!(
                "genTime {t} is outside the authority's validity in the trust root"
            ));
            continue;
        }
        return Ok(t);
    }
    Err(VerifyError::new(format!(
        "RFC 3161 timestamp is not verified by any trusted timestamp authority ({})",
        if errors.is_empty() {
            "the trust root has none".to_string()
        } else {
            errors.join("; ")
        }
    )))
}

/// Verifies `token` as a timestamp over `message` by a TSA whose chain,
/// taken from the certificates embedded in the token, ends at one of
/// `roots` (the Notary Project's `tsa` trust store): the message imprint,
/// the signer's signature over the signed attributes, a path valid at
/// `genTime` and the signer's timeStamping extended key usage. Returns
/// `genTime` and the TSA path (signer..root).
pub fn verify_with_roots(
    token: &TimeStampToken,
    message: &[u8],
    roots: &[Certificate],
) -> Result<(i64, Vec<Certificate>)> {
    let tst = &token.tst_info;
    if tst.imprint != tst.imprint_hash.digest(message) {
        return Err(VerifyError::new(
            "invalid TSTInfo: mismatched message (the timestamp's message imprint is not the digest of the signature)",
        ));
    }
    if roots.is_empty() {
        return Err(VerifyError::new(
            "no trusted TSA certificate found in trust store",
        ));
    }
    let embedded: Vec<Certificate> = token
        .certificates
        .iter()
        .filter_map(|d| Certificate::from_der(d).ok())
        .collect();
    let signer = embedded
        .iter()
        .find(|c| token.signer_is(c.der()))
        .ok_or_else(|| VerifyError::new("signing certificate not found in the timestamp token"))?;
    let t = tst.gen_time;
    let path = verify_chain(signer, &embedded, roots, t, Purpose::Any)
        .map_err(|e| VerifyError::new(format!("timestamp signing certificate: {e}")))?;
    if !allows_time_stamping(signer.der()) {
        return Err(VerifyError::new(format!(
            "timestamp signing certificate {} does not have the timeStamping extended key usage",
            signer.subject()
        )));
    }
    let sig_hash = signer_signature_hash(token);
    signer
        .public_key()?
        .verify(
            &token.signed_attrs_der,
            token.signer.signature.as_bytes(),
            Some(sig_hash),
        )
        .map_err(|e| VerifyError::new(format!("timestamp signature: {e}")))?;
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

fn parse_tst_info(der: &[u8]) -> Result<TstInfo> {
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
        return Err(VerifyError::new(format!(
            "TSTInfo version {version:?} is not 1"
        )));
    }
    if gen_time.tag() != Tag::GeneralizedTime {
        return Err(VerifyError::new("TSTInfo genTime is not a GeneralizedTime"));
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
pub fn parse_generalized_time(value: &[u8]) -> Result<i64> {
    let bad = || {
        VerifyError::new(format!(
            "TSTInfo genTime {:?} is not a UTC GeneralizedTime",
            String::from_utf8_lossy(value)
        ))
    };
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
    let num = |from: usize, to: usize| -> Result<i64> {
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
    crate::verify::x509::unix_time(y, mo, d, h, mi, sec).ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conformance_timestamp(case: &str) -> Vec<u8> {
        let path = format!(
            "{}/../conformance/sigstore/{case}/bundle.sigstore.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let b64 = json["verificationMaterial"]["timestampVerificationData"]["rfc3161Timestamps"][0]
            ["signedTimestamp"]
            .as_str()
            .unwrap();
        crate::verify::sigstore_bundle::bundle::b64(b64, "t").unwrap()
    }

    #[test]
    fn generalized_time() {
        assert_eq!(parse_generalized_time(b"19700101000000Z").unwrap(), 0);
        assert_eq!(
            parse_generalized_time(b"20250612120217Z").unwrap(),
            1_749_729_737
        );
        assert_eq!(
            parse_generalized_time(b"20250612120217.123Z").unwrap(),
            1_749_729_737
        );
        assert_eq!(
            parse_generalized_time(b"20000229235959Z").unwrap(),
            951_868_799
        );
        for bad in [
            &b"20250612120217"[..],
            b"2025061212021Z",
            b"20250612120217.Z",
            b"20250612120217.10Z",
            b"20250612120217+0100",
            b"20251312120217Z",
            b"20250230120217Z",
            b"20250612240000Z",
            b"2025061212021aZ",
            b"",
        ] {
            assert!(
                parse_generalized_time(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn parses_a_sigstore_tsa_response() {
        let der = conformance_timestamp("rekor2-happy-path");
        let t = TimeStampToken::parse(&der).unwrap();
        assert_eq!(t.tst_info.imprint_hash, HashAlgorithm::Sha256);
        assert_eq!(t.tst_info.imprint.len(), 32);
        // the bundle's certificate is valid 2025-06-12T12:02:16..12:12:16
        assert!((1_749_729_736..1_749_730_336).contains(&t.tst_info.gen_time));
        assert_eq!(t.signed_attrs_der.first(), Some(&0x31));
    }

    #[test]
    fn parses_a_response_with_an_embedded_certificate() {
        let der = conformance_timestamp("rekor2-timestamp-with-embedded-cert");
        let t = TimeStampToken::parse(&der).unwrap();
        assert!(!t.certificates.is_empty());
        assert!(t.certificates.iter().any(|c| t.signer_is(c)));
    }

    #[test]
    fn rejects_damaged_responses() {
        let der = conformance_timestamp("rekor2-happy-path");
        assert!(TimeStampToken::parse(&[]).is_err());
        assert!(TimeStampToken::parse(&der[..der.len() - 1]).is_err());
        let mut longer = der.clone();
        longer.push(0);
        assert!(TimeStampToken::parse(&longer).is_err());
        // Flip every byte in turn: parsing must never panic, and a flip in
        // the TSTInfo must be caught by the message-digest check.
        let t = TimeStampToken::parse(&der).unwrap();
        let start = der
            .windows(t.tst_info_der.len())
            .position(|w| w == t.tst_info_der.as_slice())
            .unwrap();
        for i in 0..der.len() {
            let mut d = der.clone();
            d[i] ^= 0x01;
            let r = TimeStampToken::parse(&d);
            if (start..start + t.tst_info_der.len()).contains(&i) {
                assert!(r.is_err(), "flip at {i} inside TSTInfo was accepted");
            }
        }
        // a rejected status
        let rejection = [0x30, 0x05, 0x30, 0x03, 0x02, 0x01, 0x02];
        let e = TimeStampToken::parse(&rejection).unwrap_err();
        assert!(e.0.contains("not granted"), "{e}");
        // granted, but no token
        let empty = [0x30, 0x05, 0x30, 0x03, 0x02, 0x01, 0x00];
        assert!(TimeStampToken::parse(&empty).is_err());
    }
}
