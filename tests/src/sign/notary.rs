//! Notary Project (notation) signatures made the way notation makes them:
//! a CA (root + intermediate) and leaf certificates under notation's strict
//! certificate rules, JWS and COSE_Sign1 envelopes over the Notary payload,
//! optional RFC 3161 countersignatures from an own [`Tsa`], pushed as OCI 1.1
//! referrers and recorded in the referrers tag-schema index (the registry
//! under test has no referrers API).

use super::bundle::{push_referrer, record_referrer};
use super::ca::{self, CaCert, Leaf, Window, CA_WINDOW};
use super::cbor::Cbor;
use super::der::{oid, seq};
use super::keys::{KeyKind, KeyPair, SigHash};
use super::oci;
use super::revocation::Endpoints;
use super::tsa::Tsa;
use super::{b64, hex, rfc3339};
use crate::fixtures::{sha256, Pusher};
use base64::Engine;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

pub const ARTIFACT_TYPE: &str = "application/vnd.cncf.notary.signature";
pub const PAYLOAD_TYPE: &str = "application/vnd.cncf.notary.payload.v1+json";
pub const ANN_THUMBPRINTS: &str = "io.cncf.notary.x509chain.thumbprint#S256";
pub const H_SIGNING_SCHEME: &str = "io.cncf.notary.signingScheme";
pub const H_SIGNING_TIME: &str = "io.cncf.notary.signingTime";
pub const H_EXPIRY: &str = "io.cncf.notary.expiry";
pub const H_SIGNING_AGENT: &str = "io.cncf.notary.signingAgent";
pub const H_TIMESTAMP: &str = "io.cncf.notary.timestampSignature";
pub const SIGNING_AGENT: &str = "ivpol-tests/notary";
const SCHEME_X509: &str = "notary.x509";
/// COSE header label of the certificate chain (RFC 9360 x5chain).
const COSE_X5CHAIN: i64 = 33;

/// The envelope format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Jws,
    Cose,
}

impl Format {
    pub fn media_type(self) -> &'static str {
        match self {
            Format::Jws => "application/jose+json",
            Format::Cose => "application/cose",
        }
    }
}

/// A Notary CA: a self-signed root and an intermediate, both ECDSA P-384.
#[derive(Clone, Debug)]
pub struct NotaryCa {
    pub root: CaCert,
    pub intermediate: CaCert,
    pub seed: String,
}

/// What a leaf certificate holds; [`NotaryLeaf::new`] gives what
/// `notation cert generate-test` makes (KU digitalSignature, EKU
/// codeSigning).
#[derive(Clone, Debug)]
pub struct NotaryLeaf {
    pub kind: KeyKind,
    pub window: Window,
    pub code_signing: bool,
    pub cn: String,
    /// The leaf's key (default: derived from the CA seed, kind, CN and window).
    pub key: Option<KeyPair>,
    /// Where the leaf says its revocation status is (default: nowhere).
    pub endpoints: Endpoints,
}

impl NotaryLeaf {
    pub fn new(kind: KeyKind, window: Window) -> NotaryLeaf {
        NotaryLeaf {
            kind,
            window,
            code_signing: true,
            cn: "ivpol.test signer".into(),
            key: None,
            endpoints: Endpoints::default(),
        }
    }

    pub fn cn(mut self, cn: &str) -> NotaryLeaf {
        self.cn = cn.to_string();
        self
    }

    pub fn key(mut self, key: KeyPair) -> NotaryLeaf {
        self.key = Some(key);
        self
    }

    pub fn endpoints(mut self, endpoints: Endpoints) -> NotaryLeaf {
        self.endpoints = endpoints;
        self
    }

    pub fn code_signing(mut self, on: bool) -> NotaryLeaf {
        self.code_signing = on;
        self
    }
}

impl NotaryCa {
    /// A CA derived from `seed`, valid over [`CA_WINDOW`].
    pub fn new(seed: &str) -> NotaryCa {
        let root_key = KeyPair::from_seed(KeyKind::P384, &format!("{seed}-notary-root"));
        let inter_key = KeyPair::from_seed(KeyKind::P384, &format!("{seed}-notary-intermediate"));
        let name = |cn: String| ca::full_name("US", "WA", "ivpol.test", &cn);
        let root = ca::ca_cert(
            &root_key,
            name(format!("{seed} root")),
            None,
            CA_WINDOW,
            Some(1),
        );
        let intermediate = ca::ca_cert(
            &inter_key,
            name(format!("{seed} intermediate")),
            Some(&root),
            CA_WINDOW,
            Some(0),
        );
        NotaryCa {
            root,
            intermediate,
            seed: seed.to_string(),
        }
    }

    pub fn root_pem(&self) -> String {
        self.root.pem()
    }

    pub fn intermediate_pem(&self) -> String {
        self.intermediate.pem()
    }

    /// The leaf subject `C=US, ST=WA, O=ivpol.test, CN=<cn>`.
    pub fn subject(cn: &str) -> String {
        format!("C=US, ST=WA, O=ivpol.test, CN={cn}")
    }

    /// A leaf as `spec` says, issued by the intermediate.
    pub fn leaf(&self, spec: NotaryLeaf) -> Leaf {
        let key = spec.key.clone().unwrap_or_else(|| {
            let seed = format!(
                "{} notary leaf {} {} {}",
                self.seed,
                spec.cn,
                spec.kind.name(),
                spec.window.not_before
            );
            KeyPair::from_seed(spec.kind, &seed)
        });
        // KeyUsage critical, digitalSignature only (notation's leaf rule).
        let mut exts = vec![ca::ext("2.5.29.15", true, &[0x03, 0x02, 0x07, 0x80])];
        if spec.code_signing {
            exts.push(ca::ext(
                "2.5.29.37",
                false,
                &seq(&[oid(ca::OID_CODE_SIGNING)]),
            ));
        }
        exts.extend(spec.endpoints.extensions());
        let subject = ca::full_name("US", "WA", "ivpol.test", &spec.cn);
        let der = ca::end_entity(&self.intermediate, &subject, &key, spec.window, exts);
        Leaf {
            der,
            key,
            window: spec.window,
            chain: vec![self.intermediate.der.clone(), self.root.der.clone()],
        }
    }
}

/// A way to spoil an envelope, for negatives.
// A handful are made per test; boxing the key would only make callers
// write `Box::new`.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum NotaryTamper {
    /// The payload is changed after signing (the signature no longer covers it).
    PayloadAfterSigning,
    /// A valid signature over a payload whose `targetArtifact` names
    /// another digest.
    OtherDigest,
    /// Signed by this key, not the leaf's (the certificate is the leaf's).
    WrongKey(KeyPair),
}

/// Options for [`NotarySigner::envelope`] and [`NotarySigner::sign`].
#[derive(Clone, Debug)]
pub struct NotaryOpts<'a> {
    pub format: Format,
    pub signing_time: i64,
    pub expiry: Option<i64>,
    /// Countersign with this TSA, at `signing_time`.
    pub timestamp: Option<&'a Tsa>,
    pub tamper: Option<NotaryTamper>,
}

impl<'a> NotaryOpts<'a> {
    pub fn new(format: Format) -> Self {
        NotaryOpts {
            format,
            signing_time: super::now(),
            expiry: None,
            timestamp: None,
            tamper: None,
        }
    }

    pub fn signing_time(mut self, t: i64) -> Self {
        self.signing_time = t;
        self
    }

    pub fn expiry(mut self, t: i64) -> Self {
        self.expiry = Some(t);
        self
    }

    pub fn timestamp(mut self, tsa: &'a Tsa) -> Self {
        self.timestamp = Some(tsa);
        self
    }

    pub fn tamper(mut self, t: NotaryTamper) -> Self {
        self.tamper = Some(t);
        self
    }
}

/// The signature algorithm a leaf key implies (notation's table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotaryAlg {
    Es256,
    Es384,
    Ps256,
}

impl NotaryAlg {
    pub fn of(kind: KeyKind) -> NotaryAlg {
        match kind {
            KeyKind::P256 => NotaryAlg::Es256,
            KeyKind::P384 => NotaryAlg::Es384,
            KeyKind::Rsa2048 | KeyKind::Rsa2048Pss => NotaryAlg::Ps256,
            other => panic!("notation does not sign with {other:?} keys"),
        }
    }

    pub fn jws(self) -> &'static str {
        match self {
            NotaryAlg::Es256 => "ES256",
            NotaryAlg::Es384 => "ES384",
            NotaryAlg::Ps256 => "PS256",
        }
    }

    pub fn cose(self) -> i64 {
        match self {
            NotaryAlg::Es256 => -7,
            NotaryAlg::Es384 => -35,
            NotaryAlg::Ps256 => -37,
        }
    }

    /// The hash of the signature, and of the timestamp's message imprint.
    pub fn hash(self) -> SigHash {
        match self {
            NotaryAlg::Es384 => SigHash::Sha384,
            NotaryAlg::Es256 | NotaryAlg::Ps256 => SigHash::Sha256,
        }
    }
}

/// Signs `msg` as JOSE/COSE want it: ECDSA as raw r‖s, RSA as PSS with
/// salt = hash length.
fn sign_raw(key: &KeyPair, alg: NotaryAlg, msg: &[u8]) -> Vec<u8> {
    let hash = alg.hash();
    match key.kind {
        KeyKind::P256 => p256::ecdsa::Signature::from_der(&key.sign_with(msg, hash))
            .expect("P-256 DER signature")
            .to_bytes()
            .to_vec(),
        KeyKind::P384 => p384::ecdsa::Signature::from_der(&key.sign_with(msg, hash))
            .expect("P-384 DER signature")
            .to_bytes()
            .to_vec(),
        KeyKind::Rsa2048 | KeyKind::Rsa2048Pss => {
            // The same RSA key, signing PSS (keys.rs signs PKCS#1 v1.5 for Rsa2048).
            let mut pss = key.clone();
            pss.kind = KeyKind::Rsa2048Pss;
            pss.sign_with(msg, hash)
        }
        other => panic!("notation does not sign with {other:?} keys"),
    }
}

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Signs Notary envelopes with a leaf (and its chain).
#[derive(Clone, Debug)]
pub struct NotarySigner {
    pub leaf: Leaf,
}

/// What both envelope formats are built from.
struct Parts {
    alg: NotaryAlg,
    payload: Vec<u8>,
    /// The payload stored in the envelope (differs only when tampered).
    stored_payload: Vec<u8>,
    certs: Vec<Vec<u8>>,
}

impl NotarySigner {
    pub fn new(leaf: Leaf) -> NotarySigner {
        NotarySigner { leaf }
    }

    pub fn alg(&self) -> NotaryAlg {
        NotaryAlg::of(self.leaf.key.kind)
    }

    /// DER leaf, intermediate, root.
    pub fn certs(&self) -> Vec<Vec<u8>> {
        std::iter::once(self.leaf.der.clone())
            .chain(self.leaf.chain.iter().cloned())
            .collect()
    }

    /// The `io.cncf.notary.x509chain.thumbprint#S256` value: a JSON array of
    /// the lowercase hex SHA-256 of each certificate, leaf first.
    pub fn thumbprints(&self) -> String {
        let hashes: Vec<String> = self
            .certs()
            .iter()
            .map(|c| hex(&Sha256::digest(c)))
            .collect();
        serde_json::to_string(&hashes).expect("json")
    }

    /// The envelope bytes for `target` (the subject's descriptor).
    pub fn envelope(&self, target: &Value, opts: &NotaryOpts) -> Vec<u8> {
        let parts = self.parts(target, opts);
        match opts.format {
            Format::Jws => self.jws(&parts, opts),
            Format::Cose => self.cose(&parts, opts),
        }
    }

    fn parts(&self, target: &Value, opts: &NotaryOpts) -> Parts {
        let mut target = target.clone();
        if let Some(NotaryTamper::OtherDigest) = &opts.tamper {
            target["digest"] = Value::String(sha256(b"another artifact"));
        }
        let payload = serde_json::to_vec(&json!({ "targetArtifact": target })).expect("json");
        let stored_payload = match &opts.tamper {
            Some(NotaryTamper::PayloadAfterSigning) => {
                let mut t = target.clone();
                t["size"] = json!(t["size"].as_u64().unwrap_or(0) + 1);
                serde_json::to_vec(&json!({ "targetArtifact": t })).expect("json")
            }
            _ => payload.clone(),
        };
        Parts {
            alg: self.alg(),
            payload,
            stored_payload,
            certs: self.certs(),
        }
    }

    /// The signature over `msg`, by the leaf key unless tampered.
    fn signature(&self, alg: NotaryAlg, msg: &[u8], opts: &NotaryOpts) -> Vec<u8> {
        let key = match &opts.tamper {
            Some(NotaryTamper::WrongKey(k)) => k,
            _ => &self.leaf.key,
        };
        sign_raw(key, alg, msg)
    }

    /// The countersignature over the signature bytes, when asked for.
    fn countersignature(&self, alg: NotaryAlg, sig: &[u8], opts: &NotaryOpts) -> Option<Vec<u8>> {
        opts.timestamp
            .map(|tsa| tsa.timestamp(sig, alg.hash(), opts.signing_time))
    }

    fn jws(&self, parts: &Parts, opts: &NotaryOpts) -> Vec<u8> {
        let mut protected = Map::new();
        let mut crit = vec![json!(H_SIGNING_SCHEME)];
        protected.insert("alg".into(), json!(parts.alg.jws()));
        protected.insert("cty".into(), json!(PAYLOAD_TYPE));
        protected.insert(H_SIGNING_SCHEME.into(), json!(SCHEME_X509));
        protected.insert(H_SIGNING_TIME.into(), json!(rfc3339(opts.signing_time)));
        if let Some(e) = opts.expiry {
            protected.insert(H_EXPIRY.into(), json!(rfc3339(e)));
            crit.push(json!(H_EXPIRY));
        }
        protected.insert("crit".into(), Value::Array(crit));
        let protected_b64 = b64url(&serde_json::to_vec(&protected).expect("json"));
        let signing_input = format!("{protected_b64}.{}", b64url(&parts.payload));
        let sig = self.signature(parts.alg, signing_input.as_bytes(), opts);
        let mut header = Map::new();
        header.insert(
            "x5c".into(),
            Value::Array(parts.certs.iter().map(|c| json!(b64(c))).collect()),
        );
        header.insert(H_SIGNING_AGENT.into(), json!(SIGNING_AGENT));
        if let Some(ts) = self.countersignature(parts.alg, &sig, opts) {
            header.insert(H_TIMESTAMP.into(), json!(b64(ts)));
        }
        serde_json::to_vec(&json!({
            "payload": b64url(&parts.stored_payload),
            "protected": protected_b64,
            "header": header,
            "signature": b64url(&sig),
        }))
        .expect("json")
    }

    fn cose(&self, parts: &Parts, opts: &NotaryOpts) -> Vec<u8> {
        let epoch = |t: i64| Cbor::Tag(1, Box::new(Cbor::Int(t)));
        let mut crit = vec![Cbor::text(H_SIGNING_SCHEME)];
        let mut protected = vec![
            (Cbor::Int(1), Cbor::Int(parts.alg.cose())),
            (Cbor::Int(3), Cbor::text(PAYLOAD_TYPE)),
            (Cbor::text(H_SIGNING_SCHEME), Cbor::text(SCHEME_X509)),
            (Cbor::text(H_SIGNING_TIME), epoch(opts.signing_time)),
        ];
        if let Some(e) = opts.expiry {
            protected.push((Cbor::text(H_EXPIRY), epoch(e)));
            crit.push(Cbor::text(H_EXPIRY));
        }
        protected.push((Cbor::Int(2), Cbor::Array(crit)));
        let protected = Cbor::sorted_map(protected).encode();
        // Sig_structure (RFC 9052 §4.4), empty external_aad.
        let to_be_signed = Cbor::Array(vec![
            Cbor::text("Signature1"),
            Cbor::Bytes(protected.clone()),
            Cbor::Bytes(Vec::new()),
            Cbor::Bytes(parts.payload.clone()),
        ])
        .encode();
        let sig = self.signature(parts.alg, &to_be_signed, opts);
        let mut unprotected = vec![
            (
                Cbor::Int(COSE_X5CHAIN),
                Cbor::Array(parts.certs.iter().cloned().map(Cbor::Bytes).collect()),
            ),
            (Cbor::text(H_SIGNING_AGENT), Cbor::text(SIGNING_AGENT)),
        ];
        if let Some(ts) = self.countersignature(parts.alg, &sig, opts) {
            unprotected.push((Cbor::text(H_TIMESTAMP), Cbor::Bytes(ts)));
        }
        // COSE_Sign1_Tagged: tag 18.
        Cbor::Tag(
            18,
            Box::new(Cbor::Array(vec![
                Cbor::Bytes(protected),
                Cbor::sorted_map(unprotected),
                Cbor::Bytes(parts.stored_payload.clone()),
                Cbor::Bytes(sig),
            ])),
        )
        .encode()
    }

    /// Signs `subject_digest` in `repo` (its descriptor read from the
    /// registry), pushes the envelope as a referrer and records it in the
    /// subject's `sha256-<hex>` tag-schema index. Returns (digest, size).
    pub fn sign(
        &self,
        p: &Pusher,
        repo: &str,
        subject_digest: &str,
        opts: &NotaryOpts,
    ) -> (String, usize) {
        let (subject_type, subject) = oci::get_manifest(p, repo, subject_digest)
            .unwrap_or_else(|| panic!("{repo}@{subject_digest} is not in the registry"));
        let target = json!({
            "mediaType": subject_type,
            "digest": subject_digest,
            "size": subject.len(),
        });
        let envelope = self.envelope(&target, opts);
        let mut ann = Map::new();
        ann.insert(ANN_THUMBPRINTS.into(), Value::String(self.thumbprints()));
        ann.insert(
            "org.opencontainers.image.created".into(),
            Value::String(rfc3339(opts.signing_time)),
        );
        let referrer = push_referrer(
            p,
            repo,
            subject_digest,
            &subject_type,
            subject.len(),
            ARTIFACT_TYPE,
            opts.format.media_type(),
            &envelope,
            &ann,
        );
        record_referrer(p, repo, subject_digest, &referrer, ARTIFACT_TYPE, &ann);
        referrer
    }
}

/// Pushes `doc` (an SBOM, or any JSON) as a referrer of `subject_digest`
/// with `artifact_type` and one layer of `layer_media_type`, recorded in
/// the tag-schema index; returns (digest, size). Sign it afterwards with
/// [`NotarySigner::sign`] on the returned digest.
pub fn attach_referrer(
    p: &Pusher,
    repo: &str,
    subject_digest: &str,
    artifact_type: &str,
    layer_media_type: &str,
    doc: &Value,
) -> (String, usize) {
    let (subject_type, subject) = oci::get_manifest(p, repo, subject_digest)
        .unwrap_or_else(|| panic!("{repo}@{subject_digest} is not in the registry"));
    let bytes = serde_json::to_vec(doc).expect("json");
    let ann = Map::new();
    let referrer = push_referrer(
        p,
        repo,
        subject_digest,
        &subject_type,
        subject.len(),
        artifact_type,
        layer_media_type,
        &bytes,
        &ann,
    );
    record_referrer(p, repo, subject_digest, &referrer, artifact_type, &ann);
    referrer
}
