//! Embedded SCTs (RFC 6962): at least one SCT in the leaf
//! must be signed by a trusted CT log, valid at the SCT's timestamp, over the
//! precertificate entry (the TBS without the SCT extension, bound to the
//! issuer's key hash).
//!
//! Specification: <https://github.com/sigstore/fulcio/blob/main/docs/certificate-specification.md>

use sha2::{Digest, Sha256};

use super::{der_wrap, Certificate, Tlv, X509Error};
use crate::encoding::hex;
use crate::keys::{HashAlgorithm, KeyError};
use crate::trust::LogKey;
use crate::{joined, Reason, Result};

crate::debug_as_display!(SctError);
/// Why a certificate's embedded SCTs were not accepted.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum SctError {
    /// The list ends inside an entry.
    #[error("truncated SCT list")]
    Truncated,
    /// The extension's value is not an OCTET STRING.
    #[error("SCT list extension is not an OCTET STRING")]
    NotOctetString,
    /// More SCTs than the bound.
    #[error("more than {MAX_SCTS} SCTs")]
    TooMany,
    /// An SCT version other than v1.
    #[error("unsupported SCT version")]
    UnsupportedVersion,
    /// The certificate carries no SCT.
    #[error("certificate does not include the required embedded SCT")]
    Missing,
    /// The TBSCertificate is past what an SCT can sign.
    #[error("TBSCertificate too large for an SCT")]
    TbsTooLarge,
    /// The certificate's DER, or its issuer's key, cannot be read.
    #[error(transparent)]
    Certificate(#[from] X509Error),
    /// No SCT verified; what was wrong with each.
    #[error("no valid SCT: {}", joined(.0, "; "))]
    NoneValid(Vec<SctProblem>),
}

crate::debug_as_display!(SctProblem);
/// Why one embedded SCT did not count.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum SctProblem {
    /// No trusted CT log has its log id.
    #[error("SCT from unknown CT log {}", hex(.0))]
    UnknownLog([u8; 32]),
    /// The log's key was not valid at the SCT's time.
    #[error("CT log {} key not valid at the SCT time", hex(.0))]
    KeyNotValid([u8; 32]),
    /// A TLS hash algorithm other than SHA-256/384/512.
    #[error("SCT hash algorithm {0} unsupported")]
    HashAlgorithm(u8),
    /// The log's signature does not verify.
    #[error("SCT from CT log {} does not verify", hex(.log_id))]
    DoesNotVerify {
        /// The log's id.
        log_id: [u8; 32],
        /// Why the signature does not verify.
        source: KeyError,
    },
}

impl SctError {
    /// The class of this failure: [`Reason::Malformed`] until the stage
    /// that asked for SCTs classes it.
    pub fn reason(&self) -> Reason {
        match self {
            SctError::Certificate(e) => e.reason(),
            _ => Reason::Malformed,
        }
    }
}

const OID_SCT_LIST: &str = "1.3.6.1.4.1.11129.2.4.2";
/// DER of the SCT list extension's OID.
const OID_SCT_LIST_DER: &[u8] = &[
    0x06, 0x0a, 0x2b, 0x06, 0x01, 0x04, 0x01, 0xd6, 0x79, 0x02, 0x04, 0x02,
];
/// Most SCTs read from one certificate.
const MAX_SCTS: usize = 16;

/// One parsed SCT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sct {
    /// The log's id (SHA-256 of its key).
    pub log_id: [u8; 32],
    /// Milliseconds since the epoch.
    pub timestamp: u64,
    /// The SCT's extensions.
    pub extensions: Vec<u8>,
    /// The TLS hash algorithm byte.
    pub hash: u8,
    /// The TLS signature algorithm byte.
    pub signature_alg: u8,
    /// The signature.
    pub signature: Vec<u8>,
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], SctError> {
        if n > self.0.len() {
            return Err(SctError::Truncated);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, SctError> {
        Ok(self.take(1)?.first().copied().unwrap_or_default())
    }
    fn u16(&mut self) -> Result<usize, SctError> {
        let b = self.take(2)?;
        Ok(b.iter().fold(0usize, |a, x| a << 8 | usize::from(*x)))
    }
    fn u64(&mut self) -> Result<u64, SctError> {
        let b = self.take(8)?;
        Ok(b.iter().fold(0u64, |a, x| a << 8 | u64::from(*x)))
    }
}

/// The SCTs embedded in `cert` (none if it has no SCT extension).
pub fn embedded_scts(cert: &Certificate) -> Result<Vec<Sct>, SctError> {
    let Some(value) = cert.extension(OID_SCT_LIST) else {
        return Ok(Vec::new());
    };
    let tlv = Tlv::read(value)?;
    if tlv.tag != 0x04 || !tlv.rest.is_empty() {
        return Err(SctError::NotOctetString);
    }
    let mut list = Reader(tlv.contents);
    let total = list.u16()?;
    let mut r = Reader(list.take(total)?);
    let mut out = Vec::new();
    while !r.0.is_empty() {
        if out.len() >= MAX_SCTS {
            return Err(SctError::TooMany);
        }
        let len = r.u16()?;
        let mut s = Reader(r.take(len)?);
        if s.u8()? != 0 {
            return Err(SctError::UnsupportedVersion);
        }
        let mut log_id = [0u8; 32];
        log_id.copy_from_slice(s.take(32)?);
        let timestamp = s.u64()?;
        let ext_len = s.u16()?;
        let extensions = s.take(ext_len)?.to_vec();
        let hash = s.u8()?;
        let signature_alg = s.u8()?;
        let sig_len = s.u16()?;
        let signature = s.take(sig_len)?.to_vec();
        out.push(Sct {
            log_id,
            timestamp,
            extensions,
            hash,
            signature_alg,
            signature,
        });
    }
    Ok(out)
}

/// The leaf's TBSCertificate with the SCT list extension removed.
pub fn tbs_without_scts(cert: &Certificate) -> Result<Vec<u8>, X509Error> {
    let outer = Tlv::read(cert.tbs_der())?;
    let mut elements = Vec::new();
    let mut rest = outer.contents;
    while !rest.is_empty() {
        let tlv = Tlv::read(rest)?;
        rest = tlv.rest;
        if tlv.tag != 0xa3 {
            elements.extend_from_slice(tlv.whole);
            continue;
        }
        let seq = Tlv::read(tlv.contents)?;
        let mut kept = Vec::new();
        let mut exts = seq.contents;
        while !exts.is_empty() {
            let ext = Tlv::read(exts)?;
            exts = ext.rest;
            let oid = Tlv::read(ext.contents)?;
            if oid.whole != OID_SCT_LIST_DER {
                kept.extend_from_slice(ext.whole);
            }
        }
        elements.extend(der_wrap(0xa3, &der_wrap(0x30, &kept)));
    }
    Ok(der_wrap(0x30, &elements))
}

/// Verifies the leaf's embedded SCTs: at least one must come from a log of
/// `ctlogs`, valid at its timestamp, and verify.
pub fn verify_embedded_sct(
    leaf: &Certificate,
    issuer: &Certificate,
    ctlogs: &[LogKey],
) -> Result<(), SctError> {
    let scts = embedded_scts(leaf)?;
    if scts.is_empty() {
        return Err(SctError::Missing);
    }
    let tbs = tbs_without_scts(leaf)?;
    let tbs_len = u32::try_from(tbs.len())
        .ok()
        .filter(|l| *l < 1 << 24)
        .ok_or(SctError::TbsTooLarge)?;
    let issuer_key_hash = Sha256::digest(issuer.subject_key()?.spki_der());
    let mut problems = Vec::new();
    for sct in &scts {
        let Some(log) = LogKey::find(ctlogs, &sct.log_id) else {
            problems.push(SctProblem::UnknownLog(sct.log_id));
            continue;
        };
        let secs = i64::try_from(sct.timestamp / 1000).unwrap_or(i64::MAX);
        if !log.validity.contains(secs) {
            problems.push(SctProblem::KeyNotValid(sct.log_id));
            continue;
        }
        let hash = match sct.hash {
            4 => HashAlgorithm::Sha256,
            5 => HashAlgorithm::Sha384,
            6 => HashAlgorithm::Sha512,
            other => {
                problems.push(SctProblem::HashAlgorithm(other));
                continue;
            }
        };
        let mut signed = vec![0u8, 0u8];
        signed.extend_from_slice(&sct.timestamp.to_be_bytes());
        signed.extend_from_slice(&[0, 1]);
        signed.extend_from_slice(&issuer_key_hash);
        signed.extend_from_slice(&tbs_len.to_be_bytes()[1..]);
        signed.extend_from_slice(&tbs);
        signed.extend_from_slice(&(sct.extensions.len() as u16).to_be_bytes());
        signed.extend_from_slice(&sct.extensions);
        match log.key.verify(&signed, &sct.signature, Some(hash)) {
            Ok(()) => return Ok(()),
            Err(source) => problems.push(SctProblem::DoesNotVerify {
                log_id: sct.log_id,
                source,
            }),
        }
    }
    Err(SctError::NoneValid(problems))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::b64decode;
    use crate::trust::TrustMaterial;
    use crate::x509::{verify_chain, Purpose};

    const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../conformance/sigstore/");

    fn case(name: &str) -> (Certificate, Certificate, TrustMaterial) {
        let bundle: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(format!("{DIR}{name}/bundle.sigstore.json")).unwrap(),
        )
        .unwrap();
        let vm = &bundle["verificationMaterial"];
        let raw = vm["certificate"]["rawBytes"]
            .as_str()
            .or_else(|| vm["x509CertificateChain"]["certificates"][0]["rawBytes"].as_str())
            .unwrap();
        let leaf = Certificate::from_der(&b64decode("", raw).unwrap()).unwrap();
        let trust = match std::fs::read_to_string(format!("{DIR}{name}/trusted_root.json")) {
            Ok(json) => TrustMaterial::from_trusted_root_json(&json).unwrap(),
            Err(_) => TrustMaterial::public_good().unwrap(),
        };
        let path = verify_chain(
            &leaf,
            &trust.ca_certificates(),
            &trust.ca_certificates(),
            leaf.not_before(),
            Purpose::CodeSigning,
        )
        .unwrap();
        (leaf, path[1].clone(), trust)
    }

    #[test]
    fn public_good_sct() {
        let (leaf, issuer, trust) = case("happy-path-v0.3");
        assert!(!embedded_scts(&leaf).unwrap().is_empty());
        verify_embedded_sct(&leaf, &issuer, &trust.ctlogs).unwrap();
        // The TBS really lost the extension.
        assert!(tbs_without_scts(&leaf).unwrap().len() < leaf.tbs_der().len());
        // Unknown logs / wrong issuer.
        let e = verify_embedded_sct(&leaf, &issuer, &[]).unwrap_err();
        assert!(
            matches!(&e, SctError::NoneValid(p)
                if !p.is_empty() && p.iter().all(|p| matches!(p, SctProblem::UnknownLog(_)))),
            "{e}"
        );
        let wrong_issuer = verify_embedded_sct(&leaf, &leaf, &trust.ctlogs).unwrap_err();
        assert!(
            matches!(&wrong_issuer, SctError::NoneValid(p)
                if p.iter().all(|p| matches!(p, SctProblem::DoesNotVerify { .. }))),
            "{wrong_issuer}"
        );
        // Log key not valid at the SCT time.
        let mut logs = trust.ctlogs.clone();
        for l in &mut logs {
            l.validity.end = Some(0);
        }
        let e = verify_embedded_sct(&leaf, &issuer, &logs).unwrap_err();
        assert!(
            matches!(&e, SctError::NoneValid(p)
                if p.iter().all(|p| matches!(p, SctProblem::KeyNotValid(_)))),
            "{e}"
        );
        assert!(
            e.to_string().contains("key not valid at the SCT time"),
            "{e}"
        );
        // No SCT at all (the Fulcio CA certificate).
        assert_eq!(
            verify_embedded_sct(&issuer, &issuer, &trust.ctlogs),
            Err(SctError::Missing)
        );
    }

    #[test]
    fn sct_with_extensions_and_bad_key() {
        let (leaf, issuer, trust) = case("bundle-with-sct-with-extensions");
        verify_embedded_sct(&leaf, &issuer, &trust.ctlogs).unwrap();
        let (leaf, issuer, trust) = case("invalid-ct-key_fail");
        let e = verify_embedded_sct(&leaf, &issuer, &trust.ctlogs).unwrap_err();
        assert!(matches!(&e, SctError::NoneValid(_)), "{e}");
    }
}
