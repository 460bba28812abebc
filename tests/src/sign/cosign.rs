//! Cosign's legacy tag storage: `.sig` images of simple-signing layers and
//! `.att` images of DSSE/in-toto layers, pushed next to an image that is
//! already in the registry (or to another repository, with a tag prefix).

use super::ca::Leaf;
use super::keys::{KeyKind, KeyPair, SigHash};
use super::oci::{self, descriptor};
use super::rekor::{self, LogEntry, Rekor};
use super::{b64, hex};
use crate::fixtures::{sha256, Pusher, OCI_MANIFEST};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// A deliberate fault, for the fixtures the verifier must reject.
#[derive(Clone, Debug, Default)]
pub enum Tamper {
    #[default]
    None,
    /// The signed payload (or statement subject) names this other digest,
    /// stored where the real image's signature belongs. For a bundle's
    /// message signature: everything (signature, `messageDigest`, log entry)
    /// is about another artifact, the bytes of this string.
    OtherDigest(String),
    /// Bundles' message signatures only: `messageDigest` and the log entry
    /// name this digest while the signature is over the real artifact.
    ClaimedDigest(String),
    /// The stored payload is changed after it was signed (the layer digest
    /// still matches the stored blob; the signature does not).
    PayloadAfterSigning,
    /// The signature is made by this key instead of the signer's (the
    /// annotations and log entry still name the signer's key or certificate).
    WrongKey(Box<KeyPair>),
    /// The SET is a valid signature over a different payload.
    Set,
    /// The log entry records another artifact hash (its SET is valid).
    LogBody,
    /// The checkpoint signature is broken (bundles only).
    Checkpoint,
    /// An inclusion-proof hash is changed (bundles only).
    InclusionProof,
}

impl Tamper {
    /// [`Tamper::WrongKey`] with this key.
    pub fn wrong_key(key: KeyPair) -> Tamper {
        Tamper::WrongKey(Box::new(key))
    }
}

/// Options for [`Signer::sign_image`] / [`Signer::attest_image`].
#[derive(Clone, Default)]
pub struct SignOpts<'a> {
    pub rekor: Option<&'a Rekor>,
    pub integrated_time: Option<i64>,
    /// `-a key=value` annotations: the payload's `optional` (else `null`).
    pub annotations: Map<String, Value>,
    /// The payload's `docker-reference` (default `<registry>/<repo>`).
    pub docker_reference: Option<String>,
    /// `COSIGN_REPOSITORY` / Kyverno `source.repository`.
    pub repository: Option<String>,
    /// Kyverno `source.tagPrefix`.
    pub tag_prefix: String,
    /// Leave out the chain annotation (keyless only).
    pub no_chain: bool,
    /// Stamp the signature with this TSA (`cosign sign --timestamp-server-url`),
    /// in the `dev.sigstore.cosign/rfc3161timestamp` annotation.
    pub tsa: Option<&'a super::Tsa>,
    /// Replace what is at the tag instead of appending a layer.
    pub replace: bool,
    pub tamper: Tamper,
}

impl<'a> SignOpts<'a> {
    /// Also log in `rekor` and attach its bundle annotation.
    pub fn rekor(mut self, rekor: &'a Rekor) -> Self {
        self.rekor = Some(rekor);
        self
    }
    /// The log's integrated time (default: now, or a minute into a certificate).
    pub fn time(mut self, t: i64) -> Self {
        self.integrated_time = Some(t);
        self
    }
    pub fn annotation(mut self, k: &str, v: &str) -> Self {
        self.annotations.insert(k.into(), Value::String(v.into()));
        self
    }
    pub fn docker_reference(mut self, r: &str) -> Self {
        self.docker_reference = Some(r.into());
        self
    }
    pub fn repository(mut self, repo: &str) -> Self {
        self.repository = Some(repo.into());
        self
    }
    pub fn tag_prefix(mut self, p: &str) -> Self {
        self.tag_prefix = p.into();
        self
    }
    pub fn timestamped(mut self, tsa: &'a super::Tsa) -> Self {
        self.tsa = Some(tsa);
        self
    }
    pub fn no_chain(mut self) -> Self {
        self.no_chain = true;
        self
    }
    pub fn replace(mut self) -> Self {
        self.replace = true;
        self
    }
    pub fn tamper(mut self, t: Tamper) -> Self {
        self.tamper = t;
        self
    }
}

/// What an attestation says.
#[derive(Clone, Debug)]
pub struct AttOpts {
    pub predicate_type: String,
    pub predicate: Value,
    /// `https://in-toto.io/Statement/v0.1` (cosign legacy) or `…/v1`.
    pub statement_type: String,
    /// The subject's name (default `<registry>/<repo>`).
    pub subject_name: Option<String>,
    /// Log as `dsse` 0.0.1 instead of `intoto` 0.0.2.
    pub dsse_entry: bool,
}

impl AttOpts {
    pub fn new(predicate_type: &str, predicate: Value) -> AttOpts {
        AttOpts {
            predicate_type: predicate_type.into(),
            predicate,
            statement_type: "https://in-toto.io/Statement/v0.1".into(),
            subject_name: None,
            dsse_entry: false,
        }
    }
    pub fn statement_v1(mut self) -> AttOpts {
        self.statement_type = "https://in-toto.io/Statement/v1".into();
        self
    }
    pub fn dsse_entry(mut self) -> AttOpts {
        self.dsse_entry = true;
        self
    }
}

/// What a signing pushed.
#[derive(Clone, Debug)]
pub struct Signed {
    /// The repository and tag of the `.sig` / `.att` image.
    pub repo: String,
    pub tag: String,
    /// Digest of the `.sig` / `.att` manifest now at the tag.
    pub manifest_digest: String,
    /// The layer bytes as stored (simple-signing JSON or DSSE envelope).
    pub layer: Vec<u8>,
    pub layer_digest: String,
    /// The signed bytes (the payload, or the DSSE PAE).
    pub signed: Vec<u8>,
    pub signature: Vec<u8>,
    pub annotations: Map<String, Value>,
    pub entry: Option<LogEntry>,
}

/// The signing identity: a key, and for keyless a Fulcio leaf for that key.
#[derive(Clone, Debug)]
pub struct Signer {
    pub key: KeyPair,
    pub cert: Option<Leaf>,
}

/// The simple-signing payload, byte for byte as cosign's Go structs marshal.
pub fn simple_signing_payload(
    docker_reference: &str,
    digest: &str,
    optional: &Map<String, Value>,
) -> Vec<u8> {
    let optional = if optional.is_empty() {
        "null".to_string()
    } else {
        String::from_utf8(super::canonical_json(&Value::Object(optional.clone()))).expect("utf8")
    };
    format!(
        "{{\"critical\":{{\"identity\":{{\"docker-reference\":{}}},\"image\":{{\"docker-manifest-digest\":{}}},\"type\":\"cosign container image signature\"}},\"optional\":{optional}}}",
        serde_json::to_string(docker_reference).expect("json"),
        serde_json::to_string(digest).expect("json"),
    )
    .into_bytes()
}

/// DSSE pre-authentication encoding.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

/// A DSSE envelope JSON (Go field order, empty keyid).
pub fn envelope(payload_type: &str, payload: &[u8], sig: &[u8]) -> Vec<u8> {
    format!(
        "{{\"payloadType\":{},\"payload\":{},\"signatures\":[{{\"keyid\":\"\",\"sig\":{}}}]}}",
        serde_json::to_string(payload_type).expect("json"),
        serde_json::to_string(&b64(payload)).expect("json"),
        serde_json::to_string(&b64(sig)).expect("json"),
    )
    .into_bytes()
}

/// An in-toto statement about one image digest (cosign legacy field order).
pub fn statement(
    statement_type: &str,
    name: &str,
    digest: &str,
    pt: &str,
    pred: &Value,
) -> Vec<u8> {
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    format!(
        "{{\"_type\":{},\"predicateType\":{},\"subject\":[{{\"name\":{},\"digest\":{{\"sha256\":{}}}}}],\"predicate\":{}}}",
        serde_json::to_string(statement_type).expect("json"),
        serde_json::to_string(pt).expect("json"),
        serde_json::to_string(name).expect("json"),
        serde_json::to_string(hex).expect("json"),
        serde_json::to_string(pred).expect("json"),
    )
    .into_bytes()
}

impl Signer {
    /// A key-based signer with the default key of this kind.
    pub fn keyed(kind: KeyKind) -> Signer {
        Signer::with_key(KeyPair::new(kind))
    }

    pub fn with_key(key: KeyPair) -> Signer {
        Signer { key, cert: None }
    }

    /// A keyless signer: the leaf's key, its certificate and chain.
    pub fn keyless(leaf: &Leaf) -> Signer {
        Signer {
            key: leaf.key.clone(),
            cert: Some(leaf.clone()),
        }
    }

    /// The PEM public key (what a key-based policy holds).
    pub fn public_pem(&self) -> String {
        self.key.public_pem()
    }

    /// What a Rekor body names: the certificate PEM, else the public key PEM.
    pub fn verifier_pem(&self) -> String {
        match &self.cert {
            Some(c) => c.pem(),
            None => self.key.public_pem(),
        }
    }

    pub(crate) fn default_time(&self, opts_time: Option<i64>) -> i64 {
        opts_time.unwrap_or_else(|| match &self.cert {
            Some(c) => c.window.not_before + 60,
            None => super::now(),
        })
    }

    pub(crate) fn signature_over(&self, msg: &[u8], tamper: &Tamper) -> Vec<u8> {
        match tamper {
            Tamper::WrongKey(k) => k.sign(msg),
            _ => self.key.sign(msg),
        }
    }

    /// Logs a body, then applies the log-related tampering.
    pub(crate) fn log(&self, rekor: &Rekor, body: &Value, t: i64, tamper: &Tamper) -> LogEntry {
        let mut entry = rekor.log(body, t);
        match tamper {
            Tamper::Set => {
                let mut other = entry.clone();
                other.integrated_time += 1;
                entry.set = rekor.key.sign(&other.set_payload_canonical());
            }
            Tamper::Checkpoint => {
                // The original note under a signature of another note.
                let forged = rekor.checkpoint(entry.tree_size + 1, &entry.root_hash);
                let sig_line = forged.lines().last().expect("signature line");
                let note = entry.checkpoint.split("\n\n").next().expect("note body");
                entry.checkpoint = format!("{note}\n\n{sig_line}\n");
            }
            Tamper::InclusionProof => {
                if let Some(h) = entry.hashes.first_mut() {
                    h[0] ^= 0x01;
                }
            }
            _ => {}
        }
        entry
    }

    fn cert_annotations(&self, ann: &mut Map<String, Value>, no_chain: bool) {
        if let Some(c) = &self.cert {
            ann.insert(oci::ANN_CERTIFICATE.into(), Value::String(c.pem()));
            if !no_chain {
                ann.insert(oci::ANN_CHAIN.into(), Value::String(c.chain_pem()));
            }
        }
    }

    /// Signs `digest` (an image already in `repo`) as `cosign sign` does,
    /// appending a layer to `sha256-<hex>.sig`.
    pub fn sign_image(&self, p: &Pusher, repo: &str, digest: &str, opts: &SignOpts) -> Signed {
        let sign = |payload: &[u8]| self.signature_over(payload, &opts.tamper);
        self.sign_image_by(p, repo, digest, opts, &sign)
    }

    /// [`Signer::sign_image`] with the signature made by `sign` (a KMS,
    /// say) over the payload; `self` gives the certificate, if any.
    pub fn sign_image_by(
        &self,
        p: &Pusher,
        repo: &str,
        digest: &str,
        opts: &SignOpts,
        sign: &dyn Fn(&[u8]) -> Vec<u8>,
    ) -> Signed {
        let docker_ref = opts
            .docker_reference
            .clone()
            .unwrap_or_else(|| format!("{}/{repo}", p.addr));
        let claimed = match &opts.tamper {
            Tamper::OtherDigest(d) => d.clone(),
            _ => digest.to_string(),
        };
        let payload = simple_signing_payload(&docker_ref, &claimed, &opts.annotations);
        let signature = sign(&payload);
        let layer = match &opts.tamper {
            Tamper::PayloadAfterSigning => simple_signing_payload(
                &format!("{docker_ref}-tampered"),
                &claimed,
                &opts.annotations,
            ),
            _ => payload.clone(),
        };
        let mut ann = Map::new();
        ann.insert(oci::ANN_SIGNATURE.into(), Value::String(b64(&signature)));
        self.cert_annotations(&mut ann, opts.no_chain);
        if let Some(tsa) = opts.tsa {
            // cosign stamps the raw signature bytes.
            let response = tsa.response(&signature, SigHash::Sha256, self.default_time(None));
            let value = serde_json::json!({"SignedRFC3161Timestamp": b64(&response)});
            ann.insert(oci::ANN_RFC3161.into(), Value::String(value.to_string()));
        }
        let entry = opts.rekor.map(|r| {
            let hash = match &opts.tamper {
                Tamper::LogBody => hex(&Sha256::digest(b"another artifact")),
                _ => hex(&Sha256::digest(&payload)),
            };
            let body = rekor::hashedrekord(&hash, &signature, &self.verifier_pem());
            self.log(
                r,
                &body,
                self.default_time(opts.integrated_time),
                &opts.tamper,
            )
        });
        if let Some(e) = &entry {
            ann.insert(oci::ANN_BUNDLE.into(), Value::String(e.cosign_bundle()));
        }
        self.push_layer(
            p,
            repo,
            digest,
            "sig",
            oci::SIMPLESIGNING,
            layer,
            payload,
            signature,
            ann,
            entry,
            opts,
        )
    }

    /// Attests `digest` as legacy `cosign attest` does: a DSSE envelope over
    /// an in-toto statement, appended to `sha256-<hex>.att`.
    pub fn attest_image(
        &self,
        p: &Pusher,
        repo: &str,
        digest: &str,
        att: &AttOpts,
        opts: &SignOpts,
    ) -> Signed {
        let name = att
            .subject_name
            .clone()
            .unwrap_or_else(|| format!("{}/{repo}", p.addr));
        let claimed = match &opts.tamper {
            Tamper::OtherDigest(d) => d.clone(),
            _ => digest.to_string(),
        };
        let stmt = statement(
            &att.statement_type,
            &name,
            &claimed,
            &att.predicate_type,
            &att.predicate,
        );
        let signed = pae(oci::IN_TOTO, &stmt);
        let signature = self.signature_over(&signed, &opts.tamper);
        let stored_stmt = match &opts.tamper {
            Tamper::PayloadAfterSigning => statement(
                &att.statement_type,
                &format!("{name}-tampered"),
                &claimed,
                &att.predicate_type,
                &att.predicate,
            ),
            _ => stmt.clone(),
        };
        let layer = envelope(oci::IN_TOTO, &stored_stmt, &signature);
        let mut ann = Map::new();
        ann.insert(oci::ANN_SIGNATURE.into(), Value::String(String::new()));
        ann.insert(
            oci::ANN_PREDICATE_TYPE.into(),
            Value::String(att.predicate_type.clone()),
        );
        self.cert_annotations(&mut ann, opts.no_chain);
        let entry = opts.rekor.map(|r| {
            let logged = match &opts.tamper {
                Tamper::LogBody => b"another statement".to_vec(),
                _ => stmt.clone(),
            };
            let body = if att.dsse_entry {
                rekor::dsse(oci::IN_TOTO, &logged, &signature, &self.verifier_pem())
            } else {
                rekor::intoto(oci::IN_TOTO, &logged, &signature, &self.verifier_pem())
            };
            self.log(
                r,
                &body,
                self.default_time(opts.integrated_time),
                &opts.tamper,
            )
        });
        if let Some(e) = &entry {
            ann.insert(oci::ANN_BUNDLE.into(), Value::String(e.cosign_bundle()));
        }
        self.push_layer(
            p,
            repo,
            digest,
            "att",
            oci::DSSE_ENVELOPE,
            layer,
            signed,
            signature,
            ann,
            entry,
            opts,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn push_layer(
        &self,
        p: &Pusher,
        repo: &str,
        digest: &str,
        suffix: &str,
        media_type: &str,
        layer: Vec<u8>,
        signed: Vec<u8>,
        signature: Vec<u8>,
        ann: Map<String, Value>,
        entry: Option<LogEntry>,
        opts: &SignOpts,
    ) -> Signed {
        let target = opts.repository.clone().unwrap_or_else(|| repo.to_string());
        let tag = oci::digest_tag(digest, &opts.tag_prefix, suffix);
        let mut layers: Vec<String> = Vec::new();
        let mut diff_ids: Vec<String> = Vec::new();
        if !opts.replace {
            if let Some((_, body)) = oci::get_manifest(p, &target, &tag) {
                let old: Value = serde_json::from_slice(&body).expect("existing manifest is JSON");
                for l in old["layers"].as_array().cloned().unwrap_or_default() {
                    let d = l["digest"].as_str().expect("layer digest").to_string();
                    layers.push(descriptor(
                        l["mediaType"].as_str().unwrap_or_default(),
                        l["size"].as_u64().unwrap_or_default() as usize,
                        &d,
                        l["annotations"].as_object().unwrap_or(&Map::new()),
                    ));
                    diff_ids.push(d);
                }
            }
        }
        let layer_digest = p.blob(&target, &layer);
        layers.push(descriptor(media_type, layer.len(), &layer_digest, &ann));
        diff_ids.push(layer_digest.clone());
        let history = vec!["{\"created\":\"0001-01-01T00:00:00Z\"}"; diff_ids.len()].join(",");
        let config = format!(
            "{{\"architecture\":\"\",\"created\":\"0001-01-01T00:00:00Z\",\"history\":[{history}],\"os\":\"\",\"rootfs\":{{\"type\":\"layers\",\"diff_ids\":{}}},\"config\":{{}}}}",
            serde_json::to_string(&diff_ids).expect("json")
        )
        .into_bytes();
        let config_digest = p.blob(&target, &config);
        let manifest = format!(
            "{{\"schemaVersion\":2,\"mediaType\":\"{OCI_MANIFEST}\",\"config\":{},\"layers\":[{}]}}",
            descriptor(oci::OCI_CONFIG, config.len(), &config_digest, &Map::new()),
            layers.join(",")
        )
        .into_bytes();
        let manifest_digest = p.manifest(&target, &tag, OCI_MANIFEST, &manifest);
        Signed {
            repo: target,
            tag,
            manifest_digest,
            layer_digest,
            layer,
            signed,
            signature,
            annotations: ann,
            entry,
        }
    }
}

/// sha256 of bytes as bare hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    sha256(bytes)
        .strip_prefix("sha256:")
        .expect("sha256 prefix")
        .to_string()
}
