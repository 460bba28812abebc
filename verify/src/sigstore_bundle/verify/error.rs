//! Why a parsed bundle does not verify, where no lower module's error
//! says it already.

use super::{hex, EntryError};
use crate::keys::KeyError;
use crate::rekor::RekorError;
use crate::sigstore_bundle::checkpoint::CheckpointError;
use crate::sigstore_bundle::merkle::MerkleError;
use crate::timestamp::TimestampError;
use crate::x509::sct::SctError;
use crate::x509::X509Error;
use crate::{Reason, Shared};

crate::debug_as_display!(CheckError);
/// Why a parsed bundle does not verify against the trust material and the
/// policy, where no lower module's error says it already. Each check's
/// class is the stage it belongs to.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
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
    /// [`Classify::class`](crate::Classify::class).
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
