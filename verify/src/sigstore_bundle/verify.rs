//! Verifying a parsed bundle against trust material and a policy.
//!
//! The order follows sigstore-python and sigstore-js: the signature over
//! the content, the verified times (RFC 3161 timestamps, then inclusion
//! promises of the log entries), the log entries themselves (inclusion
//! proof, checkpoint, SET, body consistency), then for keyless bundles the
//! certificate chain at every verified time, the SCT and the identity.

use sha2::{Digest, Sha256};

use super::bundle::{Bundle, Content, DsseEnvelope, InclusionProof, Material, TlogEntry};
use super::checkpoint::{CheckpointError, SignedCheckpoint};
use super::merkle::{self, MerkleError};
use super::timestamp::{TimeStampToken, TimestampError};
use super::{Artifact, Options, Policy, Verified};
use crate::dsse::Envelope;
use crate::keys::{HashAlgorithm, KeyError, PublicKey};
use crate::rekor::{self, RekorError};
use crate::trust::{CertificateAuthority, LogKey, TrustMaterial};
use crate::x509::fulcio::{identities_match, Identity};
use crate::x509::sct::{verify_embedded_sct, SctError};
use crate::x509::{verify_chain, Certificate, Purpose, X509Error};
use crate::{Classify, Reason, Result, Shared};
use entry::verify_body;
pub use entry::{EntryError, Inconsistency};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

/// Why a parsed bundle does not verify against the trust material and the
/// policy, where no lower module's error says it already. Each check's
/// class is the stage it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    /// Timestamps, but no authority to check them with.
    #[error("bundle carries RFC 3161 timestamps but the trust root has no timestamp authorities")]
    NoTimestampAuthority,
    /// A signed timestamp is required and the bundle has none.
    #[error("bundle carries no RFC 3161 timestamp, which ctlog.tsaCertChain requires")]
    TimestampRequired,
    /// The transparency log is required and the bundle has no entry.
    #[error("bundle has no transparency log entry")]
    NoLogEntry,
    /// Two entries with the same log and index.
    #[error("bundle carries the same log entry twice")]
    DuplicateLogEntry,
    /// A keyless bundle with no time to check its certificate at.
    #[error("no verified time (from a log entry's inclusion promise or an RFC 3161 timestamp) to check the signing certificate at")]
    NoVerifiedTime,
    /// The SCT needs the issuer's key, and the chain has no issuer.
    #[error("certificate chain has no issuer to check the SCT with")]
    NoSctIssuer,
    /// A keyless bundle verified under a key policy.
    #[error("a keyless bundle needs a certificate identity policy")]
    KeylessWithoutIdentities,
    /// A key-signed bundle under an identity policy.
    #[error("bundle is signed with a public key, but the policy expects a certificate identity")]
    KeyBundleForIdentities,
    /// A certificate-signed bundle under a key policy.
    #[error("bundle is signed with a certificate, but the policy expects a public key")]
    CertificateBundleForKey,
    /// A v0.1/v0.2 chain with no certificate.
    #[error("bundle has an empty certificate chain")]
    EmptyChain,
    /// A chain that brings its own root.
    #[error(
        "bundle certificate chain contains a root certificate; roots must come from the trust root"
    )]
    RootInChain,
    /// A message digest of another algorithm.
    #[error("bundle message digest uses {0}, but only SHA2_256 artifacts are supported")]
    DigestAlgorithm(String),
    /// The message digest is not the artifact's (both shown in hex).
    #[error("bundle message digest {} does not match the artifact's sha256 {}", hex(.bundle), hex(.artifact))]
    DigestMismatch {
        /// The bundle's digest.
        bundle: Vec<u8>,
        /// The artifact's.
        artifact: [u8; 32],
    },
    /// The bundle's signature over the artifact does not verify.
    #[error("bundle signature over the artifact: {0}")]
    ArtifactSignature(#[source] KeyError),
    /// The DSSE envelope's signature does not verify.
    #[error("DSSE envelope signature: {0}")]
    EnvelopeSignature(#[source] KeyError),
    /// A DSSE envelope with no signature.
    #[error("DSSE envelope has no signature")]
    NoEnvelopeSignature,
    /// A DSSE payload of another type.
    #[error("DSSE payload type {0:?} is not an in-toto statement")]
    NotInToto(String),
    /// The DSSE payload is not JSON (the parser's error).
    #[error("in-toto statement is not JSON: {0}")]
    StatementNotJson(#[source] Shared<serde_json::Error>),
    /// The DSSE payload is JSON but not an object.
    #[error("in-toto statement is not a JSON object")]
    StatementNotObject,
    /// The statement has no `subject` list.
    #[error("in-toto statement has no subject list")]
    NoSubjects,
    /// No subject names the artifact (its sha256, shown in hex).
    #[error("no subject of the in-toto statement has the artifact's sha256 {}", hex(.0))]
    NoSubjectMatches([u8; 32]),
    /// No certificate authority of the trust root covers the time.
    #[error("no certificate authority in the trust root is valid at time {0}")]
    NoAuthorityAt(i64),
    /// The certificate does not chain at a verified time.
    #[error("signing certificate does not chain to a trusted CA at time {time}: {source}")]
    NotChainedAt {
        /// The verified time, Unix seconds.
        time: i64,
        /// The last authority's refusal.
        source: Box<X509Error>,
    },
    /// The signing certificate, or its key, cannot be read.
    #[error(transparent)]
    Certificate(#[from] X509Error),
    /// The signing certificate's embedded SCT is not accepted.
    #[error("signing certificate SCT: {0}")]
    Sct(#[source] SctError),
    /// An RFC 3161 timestamp (its index in the bundle) that does not read
    /// or does not verify.
    #[error("timestamp {index}: {source}")]
    Timestamp {
        /// The timestamp's index.
        index: usize,
        /// What is wrong with it.
        source: TimestampError,
    },
    /// A transparency log entry (its log index) that does not verify.
    #[error("transparency log entry {log_index}: {source}")]
    LogEntry {
        /// The entry's index in its log.
        log_index: u64,
        /// What is wrong with it.
        source: Box<CheckError>,
    },
    /// A log the trust root does not have (its id, shown in hex).
    #[error("log id {} is not a transparency log of the trust root", hex(.0))]
    UnknownLog(Vec<u8>),
    /// An integrated time after now.
    #[error("integrated time {time} is in the future (now is {now})")]
    FutureTime {
        /// The entry's integrated time.
        time: i64,
        /// The verification's now.
        now: i64,
    },
    /// A Rekor v2 entry without an inclusion proof.
    #[error("Rekor v2 entries need an inclusion proof")]
    V2WithoutProof,
    /// A Rekor v2 entry without a timestamp to date it.
    #[error("Rekor v2 entries carry no time: the bundle needs an RFC 3161 timestamp")]
    V2WithoutTimestamp,
    /// Nothing that proves the entry is in the log.
    #[error("entry has neither an inclusion proof nor an inclusion promise")]
    NoInclusion,
    /// A promise of a time the entry does not give.
    #[error("entry has an inclusion promise but no integrated time")]
    PromiseWithoutTime,
    /// The log's key was not valid when the entry was logged.
    #[error("the trust root's key for log {url} is not valid at time {time}")]
    LogKeyNotValid {
        /// The log's base URL.
        url: String,
        /// The entry's time.
        time: i64,
    },
    /// A Rekor v2 proof for another index.
    #[error("inclusion proof is for index {proof}, not the entry's {entry}")]
    ProofIndex {
        /// The proof's index.
        proof: u64,
        /// The entry's.
        entry: u64,
    },
    /// A Rekor v2 checkpoint whose origin cannot be checked.
    #[error("cannot check a Rekor v2 checkpoint: the trust root gives the log no base URL")]
    CheckpointWithoutLogUrl,
    /// A checkpoint of another log.
    #[error("checkpoint origin {origin:?} is not the log's name {host:?}")]
    CheckpointOrigin {
        /// The checkpoint's origin line.
        origin: String,
        /// The log's host.
        host: String,
    },
    /// No signature of the log on the checkpoint.
    #[error("checkpoint has no signature by log {url} (key hint {})", hex(.hint))]
    CheckpointUnsigned {
        /// The log's base URL.
        url: String,
        /// The key hint looked for (shown in hex).
        hint: Vec<u8>,
    },
    /// The log's signature on the checkpoint (its signer's name) does not
    /// verify.
    #[error("checkpoint signature by {name}: {source}")]
    CheckpointSignature {
        /// The signature line's key name.
        name: String,
        /// Why it does not verify.
        source: KeyError,
    },
    /// A checkpoint of another tree size.
    #[error("checkpoint tree size {checkpoint} is not the inclusion proof's {proof}")]
    CheckpointSize {
        /// The checkpoint's size.
        checkpoint: u64,
        /// The proof's.
        proof: u64,
    },
    /// A checkpoint of another root (both shown in hex).
    #[error("checkpoint root hash {} is not the inclusion proof's {}", hex(.checkpoint), hex(.proof))]
    CheckpointRoot {
        /// The checkpoint's root.
        checkpoint: [u8; 32],
        /// The proof's.
        proof: [u8; 32],
    },
    /// An inclusion proof that does not lead to its root.
    #[error(transparent)]
    Merkle(#[from] MerkleError),
    /// A checkpoint that cannot be read.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// An inclusion promise (SET) that does not verify.
    #[error(transparent)]
    Rekor(#[from] RekorError),
    /// A log entry's body that does not describe the bundle.
    #[error(transparent)]
    Entry(#[from] EntryError),
}

impl CheckError {
    /// The class of this failure. Checks of the log entries and of the
    /// chain are Malformed here and take their stage's class from
    /// [`Classify::class`].
    pub fn reason(&self) -> Reason {
        use CheckError::*;
        match self {
            NoTimestampAuthority | TimestampRequired => Reason::Timestamp,
            NoLogEntry | NoVerifiedTime | NoSctIssuer => Reason::TransparencyLog,
            DigestMismatch { .. } | NoSubjectMatches(_) => Reason::PayloadMismatch,
            NoAuthorityAt(_) => Reason::UntrustedChain,
            NotChainedAt { source, .. } if source.reason() == Reason::Timestamp => {
                Reason::Timestamp
            }
            NotChainedAt { .. } => Reason::UntrustedChain,
            Certificate(e) => e.reason(),
            Sct(e) => e.reason(),
            Timestamp { source, .. } => source.reason(),
            LogEntry { source, .. } => source.reason(),
            ArtifactSignature(e) | EnvelopeSignature(e) | CheckpointSignature { source: e, .. } => {
                e.reason()
            }
            Merkle(e) => e.reason(),
            Checkpoint(e) => e.reason(),
            Rekor(e) => e.reason(),
            Entry(e) => e.reason(),
            _ => Reason::Malformed,
        }
    }
}

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
    let v: serde_json::Value =
        serde_json::from_slice(&env.payload).map_err(|e| CheckError::StatementNotJson(e.into()))?;
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
#[cfg(test)]
mod tests;
