//! Attestor types (`spec.attestors[]`), as Kyverno's CRD defines them
//! (<https://kyverno.io/docs/policy-types/image-validating-policy>).
//!
//! The YAML shapes, and the compiled form the engine verifies with: inline
//! strings kept, expressions compiled once per policy set. Fields ivpol
//! does not implement are rejected at load (`validate.rs`).

use serde::Deserialize;
use std::collections::BTreeMap;

/// oneOf `value` / `expression` (Kyverno's `StringOrExpression`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StringOrExpression {
    /// `value`: the string given inline.
    pub value: Option<String>,
    /// `expression`: CEL that returns the string, evaluated per request.
    pub expression: Option<String>,
}

/// An attestor's `notary`: verifies Notary signatures against a trust store.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Notary {
    /// `certs`: the trust store, PEM CA certificates a signature must chain to.
    pub certs: Option<StringOrExpression>,
    /// `tsaCerts`: the PEM certificates of the timestamp authorities to trust.
    pub tsa_certs: Option<StringOrExpression>,
}

/// An attestor's `cosign`: verifies cosign signatures with exactly one of a
/// key, keyless identities or a certificate.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Cosign {
    /// `key`: verify with this public key.
    pub key: Option<CosignKey>,
    /// `keyless`: verify Fulcio-certified signatures against these identities.
    pub keyless: Option<Keyless>,
    /// `certificate`: verify with this signing certificate.
    pub certificate: Option<CertificateSource>,
    /// `source`: where the signatures are stored when not next to the image.
    pub source: Option<SignatureSource>,
    /// `ctlog`: the transparency logs and their keys, and which of their checks
    /// to skip.
    pub ctlog: Option<CtLog>,
    /// `tuf`: the TUF repository the Sigstore trust root is read from.
    pub tuf: Option<Tuf>,
    /// `trustedRoot`: a Sigstore `TrustedRoot` JSON, which takes precedence
    /// over `tuf`.
    pub trusted_root: Option<StringOrExpression>,
    /// `annotations`: key/value pairs that a signature payload's annotations
    /// must all match.
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

/// A cosign attestor's `key`: the public key signatures are verified with.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CosignKey {
    /// `data`: the public key as PEM.
    pub data: Option<String>,
    /// `kms`: a KMS key URI (`awskms://`, `hashivault://`, `k8s://`); the
    /// host fetches the public key (the component holds no cloud
    /// credentials).
    pub kms: Option<String>,
    /// `hashAlgorithm`: the signature's digest algorithm, `sha256` (the
    /// default), `sha224`, `sha384` or `sha512`.
    pub hash_algorithm: Option<String>,
    /// `expression`: CEL that returns the public key as PEM, evaluated per
    /// request.
    pub expression: Option<String>,
}

/// A cosign attestor's `keyless`: the Fulcio certificate identities signatures
/// may come from.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Keyless {
    /// `identities`: the accepted signers; a certificate matching any one of
    /// them is accepted.
    pub identities: Vec<Identity>,
    /// `roots`: PEM certificates that replace the trust root's Fulcio CAs.
    pub roots: Option<String>,
    /// Kept as JSON so that a wrong key or a non-string value is a load
    /// diagnostic naming its path (`validate.rs`), not a serde error.
    pub additional_extensions: Option<serde_json::Value>,
}

impl Keyless {
    /// `additionalExtensions` as extension name to required value, or the
    /// first problem (the error starts with the field path under
    /// `keyless`). Only cosign's GitHub workflow keys are known; anything
    /// else would be a requirement ivpol could not check.
    pub fn extensions(&self) -> Result<BTreeMap<String, String>, String> {
        let path = "additionalExtensions";
        let Some(value) = &self.additional_extensions else {
            return Ok(BTreeMap::new());
        };
        let Some(map) = value.as_object() else {
            return Err(format!("{path}: Invalid value: must be an object"));
        };
        let mut out = BTreeMap::new();
        for (key, v) in map {
            if crate::verify::x509::fulcio::extension_oid(key).is_none() {
                let known: Vec<&str> = crate::verify::x509::fulcio::GITHUB_WORKFLOW_EXTENSIONS
                    .iter()
                    .map(|(k, _)| *k)
                    .collect();
                return Err(format!(
                    "{path}.{key}: Unsupported value: ivpol checks only {}",
                    known.join(", ")
                ));
            }
            let Some(v) = v.as_str() else {
                return Err(format!("{path}.{key}: Invalid value: must be a string"));
            };
            out.insert(key.clone(), v.to_string());
        }
        Ok(out)
    }
}

/// One of a keyless attestor's `identities`: the issuer and subject a signing
/// certificate must carry.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Identity {
    /// `issuer`: the OIDC issuer the certificate must name exactly.
    pub issuer: Option<String>,
    /// `subject`: the subject (SAN) the certificate must carry exactly.
    pub subject: Option<String>,
    /// `issuerRegExp`: a regular expression the certificate's OIDC issuer must
    /// match.
    pub issuer_reg_exp: Option<String>,
    /// `subjectRegExp`: a regular expression the certificate's subject (SAN)
    /// must match.
    pub subject_reg_exp: Option<String>,
    /// `subjectExpression`: CEL that returns the regular expression the subject
    /// must match, evaluated per request.
    pub subject_expression: Option<String>,
}

/// A cosign attestor's `certificate`: the signing certificate and its chain.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CertificateSource {
    /// `cert`: the PEM signing certificate.
    pub cert: Option<StringOrExpression>,
    /// `certChain`: the PEM chain the signing certificate is validated against.
    pub cert_chain: Option<StringOrExpression>,
}

/// A cosign attestor's `source`: where its signatures are stored.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SignatureSource {
    /// `repository`: the repository signatures are read from instead of the
    /// image's.
    pub repository: Option<String>,
    /// `tagPrefix`: the prefix of the signature tags.
    pub tag_prefix: Option<String>,
    /// Literally `PullSecrets` (capital P) in Kyverno's CRD.
    #[serde(rename = "PullSecrets", default)]
    pub pull_secrets: Vec<PullSecret>,
}

/// One of `source.PullSecrets`: a Secret by name.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PullSecret {
    /// `name`: the Secret's name.
    pub name: String,
}

/// A cosign attestor's `ctlog`: the Rekor and certificate transparency logs.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CtLog {
    /// `url`: the Rekor URL; required unless `insecureIgnoreTlog` is set.
    pub url: Option<String>,
    /// `rekorPubKey`: the Rekor public key as PEM, replacing the trust root's.
    pub rekor_pub_key: Option<String>,
    /// `ctLogPubKey`: the certificate transparency log's public key as PEM,
    /// replacing the trust root's.
    pub ct_log_pub_key: Option<String>,
    /// `tsaCertChain`: the PEM chain of an RFC 3161 timestamp authority
    /// (leaf first, root last). When set, every signature must carry a
    /// timestamp by it, and bundles may be stamped by it too.
    pub tsa_cert_chain: Option<String>,
    /// `insecureIgnoreTlog`: whether signatures are accepted without a
    /// transparency-log entry.
    #[serde(default)]
    pub insecure_ignore_tlog: bool,
    /// `insecureIgnoreSCT`: whether Fulcio certificates are accepted without a
    /// signed certificate timestamp.
    #[serde(rename = "insecureIgnoreSCT", default)]
    pub insecure_ignore_sct: bool,
}

/// A cosign attestor's `tuf`: the TUF repository the Sigstore trust root comes
/// from.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Tuf {
    /// `root`: the TUF root.json the repository's metadata is verified from.
    pub root: Option<TufRoot>,
    /// `mirror`: the repository's URL; unset means [`DEFAULT_TUF_MIRROR`].
    pub mirror: Option<String>,
}

/// `tuf.root`: the trusted TUF root.json, as a path or inline.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TufRoot {
    /// `path`: a file holding the root.json, which the host reads (the
    /// component has no filesystem) from a directory the operator lists
    /// with `--trust-root-dir`. `data` wins when both are given.
    pub path: Option<String>,
    /// `data`: the root.json, base64-encoded.
    pub data: Option<String>,
}

/// Kyverno's default `tuf.mirror`: the Sigstore public-good repository.
pub const DEFAULT_TUF_MIRROR: &str = "https://tuf-repo-cdn.sigstore.dev";

impl Tuf {
    /// The mirror URL without a trailing slash, or why it is not one (the
    /// error starts with the field path under `cosign`).
    pub fn mirror_url(&self) -> Result<&str, String> {
        let mirror = self.mirror.as_deref().unwrap_or(DEFAULT_TUF_MIRROR);
        let trimmed = mirror.trim_end_matches('/');
        let rest = trimmed
            .strip_prefix("https://")
            .or_else(|| trimmed.strip_prefix("http://"));
        match rest {
            Some(r) if !r.is_empty() && !r.starts_with('/') => Ok(trimmed),
            _ => Err(format!(
                "tuf.mirror: {mirror:?} is not an https:// or http:// URL"
            )),
        }
    }

    /// The file `root.path` names, when the root is not given inline.
    pub fn root_file(&self) -> Option<&str> {
        let root = self.root.as_ref()?;
        root.data
            .is_none()
            .then_some(root.path.as_deref())
            .flatten()
    }

    /// The TUF root.json given base64-encoded in `root.data`, or why not
    /// (the error starts with the field path under `cosign`).
    pub fn root_json(&self) -> Result<Vec<u8>, String> {
        let Some(data) = self.root.as_ref().and_then(|r| r.data.as_deref()) else {
            return Err("tuf.root.data: Required value: base64 of the TUF repository's root.json, or tuf.root.path".into());
        };
        if data.trim_start().starts_with('{') {
            return Err(
                "tuf.root.data: must be base64 of the TUF root.json, not the JSON itself".into(),
            );
        }
        crate::verify::encoding::b64decode("tuf.root.data", data).map_err(|e| e.to_string())
    }
}

/// A string given inline or computed by CEL (`StringOrExpression`, or
/// `key.data` / `key.expression`), compiled once per policy set.
#[derive(Debug, Clone)]
pub enum StringSource {
    /// The string is written inline.
    Value(String),
    /// The string is computed by this CEL expression per request.
    Expression(crate::cel::Expression),
    /// The PEM public key this KMS URI names (`key.kms`), read through the
    /// host per request (it holds the key for a while).
    Kms(String),
    /// The contents of this file (`tuf.root.path`), read through the host
    /// per request, from the directories the operator lists.
    File(String),
}

/// An attestor with its expressions compiled.
#[derive(Debug, Clone)]
pub struct CompiledAttestor {
    /// The attestor's `name`.
    pub name: String,
    /// The attestor's verifier, cosign or Notary.
    pub kind: AttestorKind,
    /// The verification cache's fingerprint of the attestor when every one
    /// of its [`sources`](Self::sources) is written inline: the same for
    /// every request, so the engine computes it once and keeps it here.
    pub fixed_fingerprint: std::sync::OnceLock<String>,
}

/// A compiled attestor's verifier.
#[derive(Debug, Clone)]
pub enum AttestorKind {
    /// The attestor has `cosign`.
    Cosign(Box<CompiledCosign>),
    /// The attestor has `notary`.
    Notary(CompiledNotary),
}

impl CompiledAttestor {
    /// Every value of the attestor that may be computed per request, with
    /// a label naming its field. The verification cache binds what each
    /// evaluates to, so a new expression field must be listed here; what is
    /// written inline is bound by the policy's content hash already.
    pub fn sources(&self) -> Vec<(String, &StringSource)> {
        self.sources_as_written()
    }

    /// Whether no value of the attestor is computed per request.
    pub fn is_fixed(&self) -> bool {
        self.sources()
            .iter()
            .all(|(_, s)| matches!(s, StringSource::Value(_)))
    }

    fn sources_as_written(&self) -> Vec<(String, &StringSource)> {
        let mut fields: Vec<(String, Option<&StringSource>)> = match &self.kind {
            AttestorKind::Cosign(c) => vec![
                ("key".into(), c.key.as_ref()),
                ("certificate.cert".into(), c.cert.as_ref()),
                ("certificate.certChain".into(), c.cert_chain.as_ref()),
                ("trustedRoot".into(), c.trusted_root.as_ref()),
                ("tuf.root.path".into(), c.tuf_root_file.as_ref()),
            ],
            AttestorKind::Notary(n) => vec![
                ("certs".into(), n.certs.as_ref()),
                ("tsaCerts".into(), n.tsa_certs.as_ref()),
            ],
        };
        if let AttestorKind::Cosign(c) = &self.kind {
            fields.extend(c.subject_expressions.iter().enumerate().map(|(i, s)| {
                let label = format!("keyless.identities[{i}].subjectExpression");
                (label, s.as_ref())
            }));
        }
        fields
            .into_iter()
            .filter_map(|(label, s)| s.map(|s| (label, s)))
            .collect()
    }

    /// The repository signatures are read from instead of the image's
    /// (`cosign.source.repository`), if any.
    pub fn signature_repository(&self) -> Option<&str> {
        match &self.kind {
            AttestorKind::Cosign(c) => c.spec.source.as_ref()?.repository.as_deref(),
            AttestorKind::Notary(_) => None,
        }
    }
}

/// A Notary attestor: the trust store (`certs`) and the timestamp
/// authorities (`tsaCerts`), each PEM given inline or by CEL.
#[derive(Debug, Clone)]
pub struct CompiledNotary {
    /// `certs`: the trust store's PEM certificates.
    pub certs: Option<StringSource>,
    /// `tsaCerts`: the timestamp authorities' PEM certificates.
    pub tsa_certs: Option<StringSource>,
}

impl CompiledNotary {
    /// Compiles the attestor's expressions, reporting errors under `path`.
    pub fn compile(
        spec: &Notary,
        path: &str,
        mut compile: impl FnMut(String, &str) -> Option<crate::cel::Expression>,
    ) -> CompiledNotary {
        let mut source = |field: &str, s: &Option<StringOrExpression>| {
            s.as_ref().and_then(|s| {
                string_source(
                    &format!("{path}.{field}"),
                    s.value.as_ref(),
                    s.expression.as_ref(),
                    &mut compile,
                )
            })
        };
        CompiledNotary {
            certs: source("certs", &spec.certs),
            tsa_certs: source("tsaCerts", &spec.tsa_certs),
        }
    }
}

/// A `value` / `expression` pair as a [`StringSource`]; the expression
/// wins (validation reports giving both) and is compiled under
/// `<path>.expression`.
fn string_source(
    path: &str,
    value: Option<&String>,
    expression: Option<&String>,
    compile: &mut impl FnMut(String, &str) -> Option<crate::cel::Expression>,
) -> Option<StringSource> {
    match (value, expression) {
        (_, Some(e)) => compile(format!("{path}.expression"), e).map(StringSource::Expression),
        (Some(v), None) => Some(StringSource::Value(v.clone())),
        (None, None) => None,
    }
}

/// A cosign attestor with its expressions compiled.
#[derive(Debug, Clone)]
pub struct CompiledCosign {
    /// The attestor's `cosign` as written.
    pub spec: Cosign,
    /// `key.data`, `key.expression` or `key.kms`: the public key's PEM.
    pub key: Option<StringSource>,
    /// `certificate.cert`: the signing certificate's PEM.
    pub cert: Option<StringSource>,
    /// `certificate.certChain`: the PEM chain of the signing certificate.
    pub cert_chain: Option<StringSource>,
    /// `trustedRoot`: the Sigstore `TrustedRoot` JSON.
    pub trusted_root: Option<StringSource>,
    /// `tuf.root.path`, when the TUF repository is used and its root is
    /// not inline: the root.json, read through the host.
    pub tuf_root_file: Option<StringSource>,
    /// `keyless.identities[i].subjectExpression`, one entry per identity
    /// (empty without `keyless`); always `StringSource::Expression` when
    /// set. Evaluated per request into the regexp matched against SANs.
    pub subject_expressions: Vec<Option<StringSource>>,
}

impl CompiledCosign {
    /// Compiles the attestor's expressions; `compile(path, source)` reports
    /// errors under the field path.
    pub fn compile(
        spec: &Cosign,
        path: &str,
        mut compile: impl FnMut(String, &str) -> Option<crate::cel::Expression>,
    ) -> CompiledCosign {
        let mut source = |field: &str, value: Option<&String>, expr: Option<&String>| {
            string_source(&format!("{path}.{field}"), value, expr, &mut compile)
        };
        let key = spec.key.as_ref().and_then(|k| match &k.kms {
            Some(uri) => Some(StringSource::Kms(uri.clone())),
            None => source("key", k.data.as_ref(), k.expression.as_ref()),
        });
        let cert = spec.certificate.as_ref().and_then(|c| c.cert.as_ref());
        let cert =
            cert.and_then(|c| source("certificate.cert", c.value.as_ref(), c.expression.as_ref()));
        let chain = spec
            .certificate
            .as_ref()
            .and_then(|c| c.cert_chain.as_ref());
        let cert_chain = chain.and_then(|c| {
            source(
                "certificate.certChain",
                c.value.as_ref(),
                c.expression.as_ref(),
            )
        });
        let root = spec.trusted_root.as_ref();
        let trusted_root =
            root.and_then(|r| source("trustedRoot", r.value.as_ref(), r.expression.as_ref()));
        // Read through the host only when the TUF repository is used.
        let tuf_root_file = match (&spec.trusted_root, &spec.tuf) {
            (None, Some(t)) => t.root_file().map(|p| StringSource::File(p.to_string())),
            _ => None,
        };
        let identities = spec.keyless.iter().flat_map(|k| k.identities.iter());
        let subject_expressions = identities
            .enumerate()
            .map(|(i, id)| {
                let field = format!("keyless.identities[{i}].subjectExpression");
                let e = id.subject_expression.as_ref()?;
                compile(format!("{path}.{field}"), e).map(StringSource::Expression)
            })
            .collect();
        CompiledCosign {
            spec: spec.clone(),
            key,
            cert,
            cert_chain,
            trusted_root,
            tuf_root_file,
            subject_expressions,
        }
    }
}
