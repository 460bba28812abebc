//! Why the TUF client did not hand out a target. Every text starts with
//! `TUF:` so that a policy's failed trust root says where it came from.

use super::{MAX_METADATA, MAX_ROOT_ROTATIONS, MAX_TARGET, TRUSTED_ROOT_TARGET};
use ivpol_verify::encoding::EncodingError;
use ivpol_verify::keys::{KeyError, KeySpec};
use ivpol_verify::{joined, Reason, Shared, VerifyError};

ivpol_verify::debug_as_display!(TufError);
/// A repository, mirror or metadata file the client refuses.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum TufError {
    /// A metadata file or a mirror's answer over its bound.
    #[error("TUF: {file} is {size} bytes, more than the {max} allowed")]
    TooLarge {
        /// The file.
        file: String,
        /// Its size.
        size: usize,
        /// The bound.
        max: usize,
    },
    /// Not the `{signed, signatures}` envelope.
    #[error("TUF: {file} is not TUF metadata: {source}")]
    NotMetadata {
        /// The file.
        file: String,
        /// The JSON error.
        source: Shared<serde_json::Error>,
    },
    /// `signed` is not an object.
    #[error("TUF: {0}: signed is not an object")]
    SignedNotObject(String),
    /// `signed` has no canonical JSON form: it holds a number that is not
    /// an integer.
    #[error("TUF: {file}: canonical JSON has no non-integer numbers ({number})")]
    NotCanonical {
        /// The file.
        file: String,
        /// The number.
        number: serde_json::Number,
    },
    /// `signed` is not the role's shape.
    #[error("TUF: {file}: invalid signed metadata: {source}")]
    InvalidSigned {
        /// The file.
        file: String,
        /// The JSON error.
        source: Shared<serde_json::Error>,
    },
    /// `_type` is another role's.
    #[error("TUF: {file}: _type is {found:?}, expected {expected:?}")]
    WrongType {
        /// The file.
        file: String,
        /// Its `_type`.
        found: String,
        /// The role expected.
        expected: &'static str,
    },
    /// A spec version other than 1.x.
    #[error("TUF: {file}: unsupported spec_version {version:?} (expected 1.x)")]
    SpecVersion {
        /// The file.
        file: String,
        /// Its `spec_version`.
        version: String,
    },
    /// Version 0.
    #[error("TUF: {0}: version must be at least 1")]
    ZeroVersion(String),
    /// `expires` is not a time.
    #[error("TUF: {file}: expires {value:?} is not an RFC 3339 time")]
    ExpiresNotTime {
        /// The file.
        file: String,
        /// Its `expires`.
        value: String,
    },
    /// The metadata has expired.
    #[error("TUF: {file} (version {version}) expired at {at}")]
    Expired {
        /// The file.
        file: String,
        /// Its version.
        version: u64,
        /// Its `expires`.
        at: String,
    },
    /// A root without one of the top-level roles.
    #[error("TUF: {file}: no {role} role")]
    NoRole {
        /// The root file.
        file: String,
        /// The role.
        role: &'static str,
    },
    /// A role whose threshold is 0.
    #[error("TUF: {file}: the {role} role's threshold must be at least 1")]
    ZeroThreshold {
        /// The root file.
        file: String,
        /// The role.
        role: &'static str,
    },
    /// The trusted root lacks a role it is asked to check.
    #[error("TUF: root has no {0} role")]
    RootLacksRole(&'static str),
    /// Fewer valid signatures than the role's threshold.
    #[error("TUF: {file}: {valid} valid signature(s) from the {role} role's keys, {required} required{}", in_parens(.problems))]
    Threshold {
        /// The file.
        file: String,
        /// The role.
        role: &'static str,
        /// Distinct keys whose signature verified.
        valid: u64,
        /// The threshold.
        required: u64,
        /// Why the other signatures did not count.
        problems: Vec<SignatureProblem>,
    },
    /// A required file the mirror does not have.
    #[error("TUF: {0} not found on the mirror")]
    NotOnMirror(String),
    /// The root's version cannot be incremented.
    #[error("TUF: root version overflows")]
    RootVersionOverflow,
    /// More root versions than [`MAX_ROOT_ROTATIONS`] (the version it
    /// stopped at).
    #[error("TUF: the mirror has more than {MAX_ROOT_ROTATIONS} root versions newer than the trusted one (stopped at {0}.root.json); give a newer tuf.root")]
    TooManyRotations(u64),
    /// A new root that the trusted one did not sign.
    #[error("{source} (old root, version {version})")]
    OldRootRefuses {
        /// The trusted root's refusal.
        source: Box<TufError>,
        /// The trusted root's version.
        version: u64,
    },
    /// A new root that does not sign itself.
    #[error("{0} (new root)")]
    NewRootRefuses(Box<TufError>),
    /// A root (`<expected>.root.json`) of another version than its file
    /// name.
    #[error("TUF: {expected}.root.json has version {found}, expected {expected} (rollback or a bad mirror)")]
    RootVersion {
        /// Its version.
        found: u64,
        /// The one after the trusted root's, which its name gives.
        expected: u64,
    },
    /// The timestamp names no snapshot.
    #[error("TUF: timestamp.json does not name snapshot.json")]
    NoSnapshot,
    /// The timestamp names snapshot version 0.
    #[error("TUF: timestamp.json: snapshot version must be at least 1")]
    ZeroSnapshotVersion,
    /// Metadata of another version than the one its parent names.
    #[error("TUF: {path} has version {found}, but {by} names version {named} (rollback or a bad mirror)")]
    Rollback {
        /// The file.
        path: String,
        /// Its version.
        found: u64,
        /// The file naming it.
        by: &'static str,
        /// The version named.
        named: u64,
    },
    /// The snapshot names no targets.
    #[error("TUF: {0} does not name targets.json")]
    NoTargets(String),
    /// The snapshot names targets version 0.
    #[error("TUF: {0}: targets version must be at least 1")]
    ZeroTargetsVersion(String),
    /// A parent names a length over [`MAX_METADATA`].
    #[error(
        "TUF: {by} gives {path} a length of {length} bytes, more than the {MAX_METADATA} allowed"
    )]
    NamedTooLarge {
        /// The file naming it.
        by: &'static str,
        /// The file.
        path: String,
        /// The length named.
        length: u64,
    },
    /// A file of another length than its parent names.
    #[error("TUF: {path} is {size} bytes, but {by} gives {length}")]
    Length {
        /// The file.
        path: String,
        /// Its size.
        size: usize,
        /// The file naming it.
        by: &'static str,
        /// The length named.
        length: u64,
    },
    /// A hash algorithm this client does not compute.
    #[error("TUF: {by} gives {path} a {algorithm:?} hash, which ivpol does not compute")]
    HashAlgorithm {
        /// The file naming it.
        by: &'static str,
        /// The file.
        path: String,
        /// The algorithm.
        algorithm: String,
    },
    /// A named hash that is not hex.
    #[error("TUF: {0}")]
    HashNotHex(EncodingError),
    /// A file whose hash is not the one named.
    #[error("TUF: {path} has {algorithm} {found}, but {by} gives {named}")]
    Hash {
        /// The file.
        path: String,
        /// The algorithm.
        algorithm: String,
        /// Its hash, hex.
        found: String,
        /// The file naming it.
        by: &'static str,
        /// The hash named, hex.
        named: String,
    },
    /// A target only delegated roles could list.
    #[error(
        "TUF: targets.json does not list {0}, and ivpol does not follow delegated targets roles"
    )]
    Delegated(String),
    /// A target the repository does not have.
    #[error("TUF: targets.json has no target {0}")]
    NoTarget(String),
    /// A target over [`MAX_TARGET`].
    #[error("TUF: target {name} is {length} bytes, more than the {MAX_TARGET} allowed")]
    TargetTooLarge {
        /// The target.
        name: String,
        /// Its length.
        length: u64,
    },
    /// A target with no SHA-256.
    #[error("TUF: targets.json gives {0} no sha256 hash")]
    NoSha256(String),
    /// A target's SHA-256 that is not 64 hex digits (it names a path).
    #[error("TUF: targets.json gives {0} a sha256 that is not 64 hex digits")]
    Sha256NotHex(String),
    /// The mirror could not be read (the caller's [`super::Repository`]).
    #[error("fetching {url}: {detail}")]
    Fetch {
        /// What was asked for.
        url: String,
        /// Why it did not come.
        detail: String,
    },
    /// The mirror answered with an HTTP error.
    #[error("fetching {url}: HTTP status {status}")]
    FetchStatus {
        /// What was asked for.
        url: String,
        /// The status.
        status: u16,
    },
    /// The trusted root target is not text.
    #[error("TUF target {TRUSTED_ROOT_TARGET} is not UTF-8")]
    TrustedRootNotUtf8(#[source] std::string::FromUtf8Error),
    /// The caller's [`super::Repository`] did not hand out a file.
    #[error(transparent)]
    Repository(Box<VerifyError>),
}

impl TufError {
    /// The class of this failure: trust material that cannot be read, or
    /// the repository's own failure's.
    pub fn reason(&self) -> Reason {
        match self {
            TufError::Repository(e) => e.reason(),
            _ => Reason::Malformed,
        }
    }
}

// Carried by a `VerifyError`, which cannot name it, with its class.
impl ivpol_verify::Failure for TufError {
    fn reason(&self) -> Reason {
        TufError::reason(self)
    }
}

ivpol_verify::debug_as_display!(SignatureProblem);
/// Why one signature on a metadata file did not count.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureProblem {
    /// A key id (its first 8 characters) the root does not list.
    #[error("key {0} is not in the root")]
    NotInRoot(String),
    /// A key (its id's first 8 characters) that cannot be used.
    #[error("key {key}: {problem}")]
    Key {
        /// The key id's first 8 characters.
        key: String,
        /// Why it cannot be used.
        problem: KeyProblem,
    },
    /// A signature that is not the key's (its id's first 8 characters).
    #[error("key {0}: signature does not verify")]
    DoesNotVerify(String),
}

ivpol_verify::debug_as_display!(KeyProblem);
/// Why a key of a TUF root cannot be used.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyProblem {
    /// A hex key that is not hex.
    #[error(transparent)]
    Hex(EncodingError),
    /// An ed25519 key that is not 32 bytes (its length).
    #[error("ed25519 key is {0} bytes, not 32")]
    Ed25519Length(usize),
    /// A key that does not parse.
    #[error(transparent)]
    Key(KeyError),
    /// An `ecdsa-sha2-nistp256` key of another type (what it is).
    #[error("ecdsa-sha2-nistp256 key is {0}, not ECDSA P-256")]
    NotP256(KeySpec),
    /// A key type and scheme this client does not verify.
    #[error("unsupported key type {keytype:?} with scheme {scheme:?}")]
    Unsupported {
        /// The key's `keytype`.
        keytype: String,
        /// The key's `scheme`.
        scheme: String,
    },
}

fn in_parens(problems: &[SignatureProblem]) -> String {
    match problems {
        [] => String::new(),
        _ => format!(" ({})", joined(problems, "; ")),
    }
}
