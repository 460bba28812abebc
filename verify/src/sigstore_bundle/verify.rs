//! Verifying a parsed bundle against trust material and a policy.
//!
//! The order follows sigstore-python and sigstore-js: the signature over
//! the content, the verified times (RFC 3161 timestamps, then inclusion
//! promises of the log entries), the log entries themselves (inclusion
//! proof, checkpoint, SET, body consistency), then for keyless bundles the
//! certificate chain at every verified time, the SCT and the identity.

use sha2::{Digest, Sha256};

use super::bundle::{Bundle, Content, DsseEnvelope, InclusionProof, Material, TlogEntry};
use super::checkpoint::SignedCheckpoint;
use super::merkle;
use super::timestamp::TimeStampToken;
use super::{Artifact, Options, Policy, Verified};
use crate::dsse::Envelope;
use crate::keys::{HashAlgorithm, PublicKey};
use crate::rekor;
use crate::trust::{CertificateAuthority, LogKey, TrustMaterial};
use crate::x509::fulcio::{identities_match, Identity};
use crate::x509::sct::verify_embedded_sct;
use crate::x509::{verify_chain, Certificate, Purpose};
use crate::{Classify, Reason, Result};
use entry::verify_body;
pub use entry::{EntryError, Inconsistency};
pub use error::CheckError;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

/// The signer as the bundle and policy establish it.
enum Signer {
    Key(PublicKey),
    Certificate {
        leaf: Box<Certificate>,
        /// Certificates after the leaf in a v0.1/v0.2 chain.
        intermediates: Vec<Certificate>,
        key: PublicKey,
    },
}

impl Signer {
    fn key(&self) -> &PublicKey {
        match self {
            Signer::Key(k) => k,
            Signer::Certificate { key, .. } => key,
        }
    }
}

pub fn verify_bundle(
    bundle: &Bundle,
    artifact: Artifact<'_>,
    policy: &Policy,
    trust: &TrustMaterial,
    opts: &Options,
) -> Result<Verified> {
    let signer = signer(bundle, policy)?;
    let digest: [u8; 32] = match artifact {
        Artifact::Bytes(b) => Sha256::digest(b).into(),
        Artifact::Sha256(d) => d,
    };

    // 1. The signature over the content.
    let statement = verify_content(&bundle.content, &artifact, &digest, signer.key())
        .class(Reason::BadSignature)?;

    // 2. Times from RFC 3161 timestamps.
    let mut times = Vec::new();
    if !bundle.timestamps.is_empty() && trust.tsas.is_empty() {
        return Err(CheckError::NoTimestampAuthority.into());
    }
    let signature = bundle.content.signature();
    for (index, der) in bundle.timestamps.iter().enumerate() {
        let in_bundle = |source| CheckError::Timestamp { index, source };
        let token = TimeStampToken::parse(der).map_err(in_bundle)?;
        let t = super::timestamp::verify(&token, signature, &trust.tsas)
            .map_err(in_bundle)
            .class(Reason::Timestamp)?;
        times.push(t);
    }
    if opts.require_timestamp && times.is_empty() {
        return Err(CheckError::TimestampRequired.into());
    }
    let tsa_times = times.clone();

    // 3. Transparency log entries.
    if !opts.ignore_tlog {
        if bundle.tlog_entries.is_empty() {
            return Err(CheckError::NoLogEntry.into());
        }
        for (i, a) in bundle.tlog_entries.iter().enumerate() {
            if bundle.tlog_entries[i + 1..]
                .iter()
                .any(|b| a.log_id == b.log_id && a.log_index == b.log_index)
            {
                return Err(CheckError::DuplicateLogEntry.into());
            }
        }
        for entry in &bundle.tlog_entries {
            if let Some(t) = verify_entry(bundle, entry, &signer, &digest, trust, opts, &tsa_times)
                .map_err(|e| CheckError::LogEntry {
                    log_index: entry.log_index,
                    source: Box::new(e),
                })
                .class(Reason::TransparencyLog)?
            {
                times.push(t);
            }
        }
    }

    // 4. The certificate.
    let identity = match &signer {
        Signer::Key(_) => None,
        Signer::Certificate {
            leaf,
            intermediates,
            ..
        } => {
            if times.is_empty() {
                return Err(CheckError::NoVerifiedTime.into());
            }
            let mut issuer = None;
            for &t in &times {
                let chain = verify_cert_at(leaf, intermediates, &trust.cas, t)
                    .class(Reason::UntrustedChain)?;
                issuer = chain.get(1).cloned();
            }
            if !opts.ignore_sct {
                let issuer = issuer.ok_or(CheckError::NoSctIssuer)?;
                verify_embedded_sct(leaf, &issuer, &trust.ctlogs)
                    .map_err(CheckError::Sct)
                    .class(Reason::TransparencyLog)?;
            }
            let identity = Identity::of(leaf).class(Reason::Identity)?;
            let Policy::Identities(rules) = policy else {
                return Err(CheckError::KeylessWithoutIdentities.into());
            };
            identities_match(rules, &identity).class(Reason::Identity)?;
            Some(identity)
        }
    };

    Ok(Verified {
        statement,
        times,
        identity,
    })
}

fn signer(bundle: &Bundle, policy: &Policy) -> Result<Signer, CheckError> {
    match (&bundle.material, policy) {
        (Material::PublicKey { .. }, Policy::Key(key)) => Ok(Signer::Key(key.clone())),
        (Material::PublicKey { .. }, Policy::Identities(_)) => {
            Err(CheckError::KeyBundleForIdentities)
        }
        (_, Policy::Key(_)) => Err(CheckError::CertificateBundleForKey),
        (Material::Chain(ders), Policy::Identities(_)) => {
            let mut certs = ders
                .iter()
                .map(|d| Certificate::from_der(d))
                .collect::<Result<Vec<_>, _>>()?;
            if certs.is_empty() {
                return Err(CheckError::EmptyChain);
            }
            let leaf = Box::new(certs.remove(0));
            for c in &certs {
                if is_self_signed(c.der()) {
                    return Err(CheckError::RootInChain);
                }
            }
            let key = leaf.subject_key()?;
            Ok(Signer::Certificate {
                leaf,
                intermediates: certs,
                key,
            })
        }
        (Material::Certificate(der), Policy::Identities(_)) => {
            let leaf = Box::new(Certificate::from_der(der)?);
            let key = leaf.subject_key()?;
            Ok(Signer::Certificate {
                leaf,
                intermediates: Vec::new(),
                key,
            })
        }
    }
}

/// Whether the DER certificate names itself as its issuer.
fn is_self_signed(der: &[u8]) -> bool {
    use der::Decode;
    match x509_cert::Certificate::from_der(der) {
        Ok(c) => c.tbs_certificate().issuer() == c.tbs_certificate().subject(),
        Err(_) => false,
    }
}

fn hex(bytes: &[u8]) -> String {
    merkle::hex(bytes)
}

fn verify_content(
    content: &Content,
    artifact: &Artifact<'_>,
    digest: &[u8; 32],
    key: &PublicKey,
) -> Result<Option<serde_json::Value>, CheckError> {
    match content {
        Content::MessageSignature {
            digest: md,
            signature,
        } => {
            if let Some(md) = md {
                if md.algorithm != "SHA2_256" {
                    return Err(CheckError::DigestAlgorithm(md.algorithm.clone()));
                }
                if md.digest.as_slice() != digest {
                    return Err(CheckError::DigestMismatch {
                        bundle: md.digest.clone(),
                        artifact: *digest,
                    });
                }
            }
            let ok = match artifact {
                Artifact::Bytes(b) => key.verify(b, signature, Some(HashAlgorithm::Sha256)),
                Artifact::Sha256(d) => key.verify_digest(d, HashAlgorithm::Sha256, signature),
            };
            ok.map_err(CheckError::ArtifactSignature)?;
            Ok(None)
        }
        Content::Dsse(env) => {
            let sig = env
                .signatures
                .first()
                .ok_or(CheckError::NoEnvelopeSignature)?;
            let pae = Envelope::pae(&env.payload_type, &env.payload);
            key.verify(&pae, &sig.sig, None)
                .map_err(CheckError::EnvelopeSignature)?;
            let statement = in_toto_statement(env)?;
            let want = hex(digest);
            let subjects = statement
                .get("subject")
                .and_then(|s| s.as_array())
                .ok_or(CheckError::NoSubjects)?;
            let found = subjects.iter().any(|s| {
                s.get("digest")
                    .and_then(|d| d.get("sha256"))
                    .and_then(|h| h.as_str())
                    .is_some_and(|h| h.eq_ignore_ascii_case(&want))
            });
            if !found {
                return Err(CheckError::NoSubjectMatches(*digest));
            }
            Ok(Some(statement))
        }
    }
}

fn in_toto_statement(env: &DsseEnvelope) -> Result<serde_json::Value, CheckError> {
    if env.payload_type != "application/vnd.in-toto+json" {
        return Err(CheckError::NotInToto(env.payload_type.clone()));
    }
    let v: serde_json::Value = ivpol_refs::json::from_slice(&env.payload)
        .map_err(|e| CheckError::StatementNotJson(e.into()))?;
    if !v.is_object() {
        return Err(CheckError::StatementNotObject);
    }
    Ok(v)
}

/// Verifies the chain at `t` against the first CA valid at `t` that
/// accepts it, returning the chain (leaf first).
fn verify_cert_at(
    leaf: &Certificate,
    intermediates: &[Certificate],
    cas: &[CertificateAuthority],
    t: i64,
) -> Result<Vec<Certificate>, CheckError> {
    let mut last_err = None;
    for ca in cas.iter().filter(|ca| ca.validity.contains(t)) {
        let Some((root, ca_intermediates)) = ca.certs.split_last() else {
            continue;
        };
        let mut all = intermediates.to_vec();
        all.extend(ca_intermediates.iter().cloned());
        match verify_chain(
            leaf,
            &all,
            std::slice::from_ref(root),
            t,
            Purpose::CodeSigning,
        ) {
            Ok(chain) => return Ok(chain),
            Err(e) => last_err = Some(e),
        }
    }
    Err(match last_err {
        Some(e) => CheckError::NotChainedAt {
            time: t,
            source: Box::new(e),
        },
        None => CheckError::NoAuthorityAt(t),
    })
}

/// The authority (`host[:port]`) and host of a log's base URL.
fn url_host(base_url: &str) -> (&str, &str) {
    let rest = base_url.split_once("://").map_or(base_url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
    (authority, host)
}

/// Verifies one log entry, returning its verified integrated time, if any.
fn verify_entry(
    bundle: &Bundle,
    entry: &TlogEntry,
    signer: &Signer,
    digest: &[u8; 32],
    trust: &TrustMaterial,
    opts: &Options,
    tsa_times: &[i64],
) -> Result<Option<i64>, CheckError> {
    let log = trust
        .tlogs
        .iter()
        .find(|l| l.id.as_slice() == entry.log_id.as_slice())
        .ok_or_else(|| CheckError::UnknownLog(entry.log_id.clone()))?;

    if let Some(t) = entry.integrated_time {
        if t > opts.now {
            return Err(CheckError::FutureTime {
                time: t,
                now: opts.now,
            });
        }
    }

    if entry.is_rekor_v2() {
        if entry.proof.is_none() {
            return Err(CheckError::V2WithoutProof);
        }
        if tsa_times.is_empty() {
            return Err(CheckError::V2WithoutTimestamp);
        }
    }

    // The inclusion proof and its checkpoint.
    match &entry.proof {
        Some(proof) => verify_proof(entry, proof, log)?,
        None if entry.set.is_none() => return Err(CheckError::NoInclusion),
        None => {}
    }

    // The inclusion promise.
    let mut verified_time = None;
    if let Some(set) = &entry.set {
        let t = entry
            .integrated_time
            .ok_or(CheckError::PromiseWithoutTime)?;
        let body_b64 = STANDARD.encode(&entry.body);
        rekor::verify_set(
            &body_b64,
            t,
            entry.log_index as i64,
            &entry.log_id,
            set,
            &trust.tlogs,
        )?;
        verified_time = Some(t);
    }

    // The log's key must have been valid when the entry was logged.
    let when: Vec<i64> = match verified_time {
        Some(t) => vec![t],
        None => tsa_times.to_vec(),
    };
    for t in when {
        if !log.validity.contains(t) {
            return Err(CheckError::LogKeyNotValid {
                url: log.base_url.clone(),
                time: t,
            });
        }
    }

    verify_body(bundle, entry, signer, digest)?;
    Ok(verified_time)
}

fn verify_proof(entry: &TlogEntry, proof: &InclusionProof, log: &LogKey) -> Result<(), CheckError> {
    // Rekor v1 proofs index the shard's tree and entries the whole log, so
    // only Rekor v2 promises the two agree.
    if entry.is_rekor_v2() && proof.log_index != entry.log_index {
        return Err(CheckError::ProofIndex {
            proof: proof.log_index,
            entry: entry.log_index,
        });
    }
    merkle::verify_inclusion(
        proof.log_index,
        proof.tree_size,
        &entry.body,
        &proof.hashes,
        &proof.root_hash,
    )?;
    let Some(envelope) = &proof.checkpoint else {
        // v0.1 bundles may carry a bare proof; the SET vouches for the entry.
        return Ok(());
    };
    verify_checkpoint(envelope, entry, proof, log)
}

fn verify_checkpoint(
    envelope: &str,
    entry: &TlogEntry,
    proof: &InclusionProof,
    log: &LogKey,
) -> Result<(), CheckError> {
    let cp = SignedCheckpoint::parse(envelope)?;
    let (authority, host) = url_host(&log.base_url);
    let name_ok = |name: &str| log.base_url.is_empty() || name == authority || name == host;
    let v2 = entry.is_rekor_v2() || cp.checkpoint.rekor_v1_tree_id().is_none();
    if v2 {
        if log.base_url.is_empty() {
            return Err(CheckError::CheckpointWithoutLogUrl);
        }
        if cp.checkpoint.origin != authority && cp.checkpoint.origin != host {
            return Err(CheckError::CheckpointOrigin {
                origin: cp.checkpoint.origin.clone(),
                host: host.to_string(),
            });
        }
    }
    let hint = log.id.get(..4).unwrap_or(&[]);
    let mut verified = false;
    for sig in &cp.note.signatures {
        if sig.key_hint.as_slice() != hint || !name_ok(&sig.name) {
            continue; // a cosignature or another log's signature
        }
        if v2 && sig.name != cp.checkpoint.origin {
            continue;
        }
        log.key
            .verify(cp.note.text.as_bytes(), &sig.signature, None)
            .map_err(|source| CheckError::CheckpointSignature {
                name: sig.name.clone(),
                source,
            })?;
        verified = true;
    }
    if !verified {
        return Err(CheckError::CheckpointUnsigned {
            url: log.base_url.clone(),
            hint: hint.to_vec(),
        });
    }
    if cp.checkpoint.size != proof.tree_size {
        return Err(CheckError::CheckpointSize {
            checkpoint: cp.checkpoint.size,
            proof: proof.tree_size,
        });
    }
    if cp.checkpoint.root_hash != proof.root_hash {
        return Err(CheckError::CheckpointRoot {
            checkpoint: cp.checkpoint.root_hash,
            proof: proof.root_hash,
        });
    }
    Ok(())
}

mod entry;
mod error;
#[cfg(test)]
mod tests;
