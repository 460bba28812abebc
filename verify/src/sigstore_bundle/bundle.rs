//! Parsing a Sigstore bundle (protobuf-specs `dev.sigstore.bundle.v1.Bundle`
//! in its JSON form) into checked Rust values.
//!
//! Everything that does not need trust material is checked here: the media
//! type, base64 and integer encodings, that the oneofs hold exactly one
//! value, the per-version requirements on log entries, and the size limits.
//! A [`Bundle`] therefore only holds well-formed data; whether it is true is
//! the job of `verify.rs`.

use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use serde::Deserialize;

use crate::Result;

mod error;
pub use error::BundleError;

/// The largest bundle accepted, in bytes.
pub const MAX_BUNDLE_BYTES: usize = 10 * 1024 * 1024;
/// The most transparency log entries one bundle may carry.
pub const MAX_TLOG_ENTRIES: usize = 32;
/// The most hashes one inclusion proof may carry (a tree of 2^64 leaves needs 64).
pub const MAX_PROOF_HASHES: usize = 64;
/// The most RFC 3161 timestamps one bundle may carry.
pub const MAX_TIMESTAMPS: usize = 16;
/// The most certificates an `x509CertificateChain` may carry.
pub const MAX_CHAIN_CERTS: usize = 10;

/// The bundle format versions this verifier knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum BundleVersion {
    /// Bundle v0.1.
    V01,
    /// Bundle v0.2.
    V02,
    /// Bundle v0.3.
    V03,
}

impl BundleVersion {
    /// The version a `mediaType` names.
    pub fn from_media_type(media_type: &str) -> Result<BundleVersion, BundleError> {
        match media_type {
            "application/vnd.dev.sigstore.bundle+json;version=0.1" => Ok(BundleVersion::V01),
            "application/vnd.dev.sigstore.bundle+json;version=0.2" => Ok(BundleVersion::V02),
            "application/vnd.dev.sigstore.bundle+json;version=0.3"
            | "application/vnd.dev.sigstore.bundle.v0.3+json" => Ok(BundleVersion::V03),
            other => Err(BundleError::MediaType(other.to_string())),
        }
    }
}

/// What identifies the signer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Material {
    /// DER certificates, leaf first (bundle v0.1/v0.2 `x509CertificateChain`).
    Chain(Vec<Vec<u8>>),
    /// One DER leaf certificate (bundle v0.3 `certificate`).
    Certificate(Vec<u8>),
    /// A key the verifier knows; the hint is informational only.
    PublicKey {
        /// The bundle's `publicKey.hint`.
        hint: Option<String>,
    },
}

impl Material {
    /// The DER leaf certificate, if the signer is identified by one.
    pub fn leaf(&self) -> Option<&[u8]> {
        match self {
            Material::Chain(certs) => certs.first().map(Vec::as_slice),
            Material::Certificate(der) => Some(der),
            Material::PublicKey { .. } => None,
        }
    }
}

/// `messageDigest` of a `messageSignature`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageDigest {
    /// The protobuf `HashAlgorithm` name, e.g. `SHA2_256`.
    pub algorithm: String,
    /// The artifact's digest.
    pub digest: Vec<u8>,
}

/// One DSSE signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DsseSignature {
    /// The key id, informational.
    pub keyid: String,
    /// The decoded signature over the PAE.
    pub sig: Vec<u8>,
}

/// A DSSE envelope as carried in a bundle (payload already decoded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DsseEnvelope {
    /// The payload's type.
    pub payload_type: String,
    /// The decoded payload.
    pub payload: Vec<u8>,
    /// The signatures, in envelope order.
    pub signatures: Vec<DsseSignature>,
}

/// What was signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// A signature over the artifact (or its digest).
    MessageSignature {
        /// The artifact's digest, if the bundle gives it.
        digest: Option<MessageDigest>,
        /// The decoded signature.
        signature: Vec<u8>,
    },
    /// A DSSE envelope (an in-toto statement about the artifact).
    Dsse(DsseEnvelope),
}

impl Content {
    /// The signature bytes an RFC 3161 timestamp or a log entry covers.
    pub fn signature(&self) -> &[u8] {
        match self {
            Content::MessageSignature { signature, .. } => signature,
            Content::Dsse(env) => env
                .signatures
                .first()
                .map(|s| s.sig.as_slice())
                .unwrap_or(&[]),
        }
    }
}

/// An RFC 6962 inclusion proof with its signed checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InclusionProof {
    /// The leaf's index in the proof's tree.
    pub log_index: u64,
    /// The tree's root hash.
    pub root_hash: [u8; 32],
    /// The tree's size.
    pub tree_size: u64,
    /// The sibling hashes, leaf to root.
    pub hashes: Vec<[u8; 32]>,
    /// The checkpoint's signed note text, if present.
    pub checkpoint: Option<String>,
}

/// One transparency log entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlogEntry {
    /// The entry's index in the log.
    pub log_index: u64,
    /// `logId.keyId`: SHA-256 of the log's public key (or its C2SP key id).
    pub log_id: Vec<u8>,
    /// The body's kind (`hashedrekord`, `dsse`, `intoto`).
    pub kind: String,
    /// The body's version (`0.0.1`, `0.0.2`).
    pub version: String,
    /// `integratedTime`, when non-zero (Rekor v2 entries have none).
    pub integrated_time: Option<i64>,
    /// The signed entry timestamp (`inclusionPromise.signedEntryTimestamp`).
    pub set: Option<Vec<u8>>,
    /// The inclusion proof, if the bundle carries one.
    pub proof: Option<InclusionProof>,
    /// The decoded `canonicalizedBody`.
    pub body: Vec<u8>,
}

impl TlogEntry {
    /// Rekor v2 (tile-based) entries are the 0.0.2 versions of
    /// hashedrekord and dsse.
    pub fn is_rekor_v2(&self) -> bool {
        self.version == "0.0.2" && (self.kind == "hashedrekord" || self.kind == "dsse")
    }
}

/// A parsed, well-formed bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bundle {
    /// The format version.
    pub version: BundleVersion,
    /// What identifies the signer.
    pub material: Material,
    /// The transparency log entries.
    pub tlog_entries: Vec<TlogEntry>,
    /// DER `TimeStampResp` values.
    pub timestamps: Vec<Vec<u8>>,
    /// What was signed.
    pub content: Content,
}

// ---- the JSON shapes --------------------------------------------------------

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawBundle {
    media_type: Option<String>,
    verification_material: Option<RawMaterial>,
    message_signature: Option<RawMessageSignature>,
    dsse_envelope: Option<RawEnvelope>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawMaterial {
    public_key: Option<RawPublicKey>,
    x509_certificate_chain: Option<RawChain>,
    certificate: Option<RawCert>,
    #[serde(default)]
    tlog_entries: Vec<RawTlogEntry>,
    timestamp_verification_data: Option<RawTimestampData>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawPublicKey {
    hint: Option<String>,
}

#[derive(Deserialize)]
struct RawChain {
    #[serde(default)]
    certificates: Vec<RawCert>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawCert {
    raw_bytes: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawTimestampData {
    #[serde(default)]
    rfc3161_timestamps: Vec<RawTimestamp>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawTimestamp {
    signed_timestamp: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawTlogEntry {
    log_index: Option<Int64>,
    log_id: Option<RawLogId>,
    kind_version: Option<RawKindVersion>,
    integrated_time: Option<Int64>,
    inclusion_promise: Option<RawPromise>,
    inclusion_proof: Option<RawProof>,
    canonicalized_body: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawLogId {
    key_id: Option<String>,
}

#[derive(Deserialize)]
struct RawKindVersion {
    kind: Option<String>,
    version: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawPromise {
    signed_entry_timestamp: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawProof {
    log_index: Option<Int64>,
    root_hash: Option<String>,
    tree_size: Option<Int64>,
    #[serde(default)]
    hashes: Vec<String>,
    checkpoint: Option<RawCheckpoint>,
}

#[derive(Deserialize)]
struct RawCheckpoint {
    envelope: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawMessageSignature {
    message_digest: Option<RawDigest>,
    signature: Option<String>,
}

#[derive(Deserialize)]
struct RawDigest {
    algorithm: Option<String>,
    digest: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawEnvelope {
    payload: Option<String>,
    payload_type: Option<String>,
    #[serde(default)]
    signatures: Vec<RawDsseSig>,
}

#[derive(Deserialize)]
struct RawDsseSig {
    sig: Option<String>,
    #[serde(default)]
    keyid: String,
}

/// A protobuf-JSON int64: a decimal string or a JSON number.
#[derive(Deserialize)]
#[serde(untagged)]
enum Int64 {
    Str(String),
    Num(i64),
}

impl Int64 {
    fn value(&self, what: &'static str) -> Result<i64, BundleError> {
        match self {
            Int64::Num(n) => Ok(*n),
            Int64::Str(s) => s.parse::<i64>().map_err(|_| BundleError::NotInteger {
                what,
                value: s.clone(),
            }),
        }
    }

    fn non_negative(&self, what: &'static str) -> Result<u64, BundleError> {
        let v = self.value(what)?;
        u64::try_from(v).map_err(|_| BundleError::Negative { what, value: v })
    }
}

/// Decodes protobuf-JSON `bytes`: standard or URL-safe base64, padded or
/// not; line breaks are skipped, as Go's decoder (protojson) skips them.
pub fn b64(value: &str, what: &'static str) -> Result<Vec<u8>, BundleError> {
    let unwrapped;
    let value = if value.contains(['\r', '\n']) {
        unwrapped = value.replace(['\r', '\n'], "");
        unwrapped.as_str()
    } else {
        value
    };
    const CONFIG: GeneralPurposeConfig =
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
    const STD: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, CONFIG);
    const URL: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, CONFIG);
    STD.decode(value)
        .or_else(|_| URL.decode(value))
        .map_err(|source| BundleError::Base64 { what, source })
}

fn required<T>(value: Option<T>, what: &'static str) -> Result<T, BundleError> {
    value.ok_or(BundleError::Missing(what))
}

fn b64_field(value: Option<String>, what: &'static str) -> Result<Vec<u8>, BundleError> {
    let v = required(value, what)?;
    let bytes = b64(&v, what)?;
    if bytes.is_empty() {
        return Err(BundleError::Empty(what));
    }
    Ok(bytes)
}

fn hash32(value: &str, what: &'static str) -> Result<[u8; 32], BundleError> {
    let bytes = b64(value, what)?;
    <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| BundleError::HashLength {
        what,
        len: bytes.len(),
    })
}

impl Bundle {
    /// Parses and checks a bundle's JSON.
    pub fn parse(json: &[u8]) -> Result<Bundle, BundleError> {
        if json.len() > MAX_BUNDLE_BYTES {
            return Err(BundleError::TooLarge(json.len()));
        }
        let raw: RawBundle =
            ivpol_refs::json::from_slice(json).map_err(|e| BundleError::Json(e.into()))?;
        let media_type = required(raw.media_type, "mediaType")?;
        let version = BundleVersion::from_media_type(&media_type)?;
        let vm = required(raw.verification_material, "verificationMaterial")?;

        let material = parse_material(version, &vm)?;

        if vm.tlog_entries.len() > MAX_TLOG_ENTRIES {
            return Err(BundleError::TooManyEntries(vm.tlog_entries.len()));
        }
        let tlog_entries = vm
            .tlog_entries
            .into_iter()
            .map(|e| parse_entry(version, e))
            .collect::<Result<Vec<_>, _>>()?;

        let raw_ts = vm
            .timestamp_verification_data
            .map(|t| t.rfc3161_timestamps)
            .unwrap_or_default();
        if raw_ts.len() > MAX_TIMESTAMPS {
            return Err(BundleError::TooManyTimestamps(raw_ts.len()));
        }
        let timestamps = raw_ts
            .into_iter()
            .map(|t| b64_field(t.signed_timestamp, "rfc3161Timestamps[].signedTimestamp"))
            .collect::<Result<Vec<_>, _>>()?;
        for (i, a) in timestamps.iter().enumerate() {
            if timestamps.iter().skip(i + 1).any(|b| a == b) {
                return Err(BundleError::DuplicateTimestamp);
            }
        }

        let content = match (raw.message_signature, raw.dsse_envelope) {
            (Some(ms), None) => {
                let signature = b64_field(ms.signature, "messageSignature.signature")?;
                let digest = match ms.message_digest {
                    None => None,
                    Some(d) => Some(MessageDigest {
                        algorithm: required(d.algorithm, "messageDigest.algorithm")?,
                        digest: b64_field(d.digest, "messageDigest.digest")?,
                    }),
                };
                Content::MessageSignature { digest, signature }
            }
            (None, Some(env)) => {
                let payload = b64(
                    &required(env.payload, "dsseEnvelope.payload")?,
                    "dsseEnvelope.payload",
                )?;
                let payload_type = required(env.payload_type, "dsseEnvelope.payloadType")?;
                if env.signatures.len() != 1 {
                    return Err(BundleError::DsseSignatures(env.signatures.len()));
                }
                let signatures = env
                    .signatures
                    .into_iter()
                    .map(|s| {
                        Ok(DsseSignature {
                            sig: b64_field(s.sig, "dsseEnvelope.signatures[].sig")?,
                            keyid: s.keyid,
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Content::Dsse(DsseEnvelope {
                    payload_type,
                    payload,
                    signatures,
                })
            }
            (Some(_), Some(_)) => return Err(BundleError::BothContents),
            (None, None) => return Err(BundleError::NoContent),
        };

        // Per-version requirements on the log entries.
        for entry in &tlog_entries {
            if version == BundleVersion::V01 {
                if entry.set.is_none() {
                    return Err(BundleError::NoPromise);
                }
            } else {
                match &entry.proof {
                    None => return Err(BundleError::NoProof(entry.log_index)),
                    Some(p) if p.checkpoint.is_none() => {
                        return Err(BundleError::NoCheckpoint(entry.log_index))
                    }
                    Some(_) => {}
                }
            }
        }

        Ok(Bundle {
            version,
            material,
            tlog_entries,
            timestamps,
            content,
        })
    }
}

fn parse_material(version: BundleVersion, vm: &RawMaterial) -> Result<Material, BundleError> {
    let present = [
        vm.public_key.is_some(),
        vm.x509_certificate_chain.is_some(),
        vm.certificate.is_some(),
    ];
    if present.iter().filter(|p| **p).count() != 1 {
        return Err(BundleError::MaterialKinds);
    }
    if let Some(pk) = &vm.public_key {
        return Ok(Material::PublicKey {
            hint: pk.hint.clone(),
        });
    }
    if let Some(chain) = &vm.x509_certificate_chain {
        if version >= BundleVersion::V03 {
            return Err(BundleError::ChainInV03);
        }
        if chain.certificates.is_empty() {
            return Err(BundleError::EmptyChain);
        }
        if chain.certificates.len() > MAX_CHAIN_CERTS {
            return Err(BundleError::ChainTooLong(chain.certificates.len()));
        }
        let certs = chain
            .certificates
            .iter()
            .map(|c| {
                b64_field(
                    c.raw_bytes.clone(),
                    "x509CertificateChain.certificates[].rawBytes",
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(Material::Chain(certs));
    }
    if let Some(cert) = &vm.certificate {
        if version < BundleVersion::V03 {
            return Err(BundleError::CertificateInV02);
        }
        return Ok(Material::Certificate(b64_field(
            cert.raw_bytes.clone(),
            "certificate.rawBytes",
        )?));
    }
    Err(BundleError::NoMaterial)
}

fn parse_entry(version: BundleVersion, e: RawTlogEntry) -> Result<TlogEntry, BundleError> {
    let log_index =
        required(e.log_index, "tlogEntries[].logIndex")?.non_negative("log entry logIndex")?;
    let log_id = b64_field(
        required(e.log_id, "tlogEntries[].logId")?.key_id,
        "tlogEntries[].logId.keyId",
    )?;
    let kv = required(e.kind_version, "tlogEntries[].kindVersion")?;
    let kind = required(kv.kind, "tlogEntries[].kindVersion.kind")?;
    let kv_version = required(kv.version, "tlogEntries[].kindVersion.version")?;
    let integrated_time = match e.integrated_time {
        None => None,
        Some(t) => {
            let t = t.value("log entry integratedTime")?;
            if t < 0 {
                return Err(BundleError::NegativeTime(t));
            }
            (t != 0).then_some(t)
        }
    };
    let set = match e.inclusion_promise {
        None => None,
        Some(p) => Some(b64_field(
            p.signed_entry_timestamp,
            "inclusionPromise.signedEntryTimestamp",
        )?),
    };
    let proof = match e.inclusion_proof {
        None => None,
        Some(p) => {
            if p.hashes.len() > MAX_PROOF_HASHES {
                return Err(BundleError::TooManyProofHashes(p.hashes.len()));
            }
            let proof_index = required(p.log_index, "inclusionProof.logIndex")?
                .non_negative("inclusion proof logIndex")?;
            let tree_size = required(p.tree_size, "inclusionProof.treeSize")?
                .non_negative("inclusion proof treeSize")?;
            let root_hash = hash32(
                &required(p.root_hash, "inclusionProof.rootHash")?,
                "inclusion proof rootHash",
            )?;
            let hashes = p
                .hashes
                .iter()
                .map(|h| hash32(h, "inclusion proof hash"))
                .collect::<Result<Vec<_>, _>>()?;
            let checkpoint = p
                .checkpoint
                .and_then(|c| c.envelope)
                .filter(|c| !c.is_empty());
            Some(InclusionProof {
                log_index: proof_index,
                root_hash,
                tree_size,
                hashes,
                checkpoint,
            })
        }
    };
    let body = b64_field(e.canonicalized_body, "tlogEntries[].canonicalizedBody")?;
    if set.is_some() && integrated_time.is_none() && version == BundleVersion::V01 {
        return Err(BundleError::PromiseWithoutTime);
    }
    Ok(TlogEntry {
        log_index,
        log_id,
        kind,
        version: kv_version,
        integrated_time,
        set,
        proof,
        body,
    })
}

#[cfg(test)]
mod tests;
