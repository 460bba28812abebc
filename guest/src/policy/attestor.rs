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
    pub value: Option<String>,
    pub expression: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Notary {
    pub certs: Option<StringOrExpression>,
    pub tsa_certs: Option<StringOrExpression>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Cosign {
    pub key: Option<CosignKey>,
    pub keyless: Option<Keyless>,
    pub certificate: Option<CertificateSource>,
    pub source: Option<SignatureSource>,
    pub ctlog: Option<CtLog>,
    pub tuf: Option<Tuf>,
    pub trusted_root: Option<StringOrExpression>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CosignKey {
    pub data: Option<String>,
    pub kms: Option<String>,
    pub hash_algorithm: Option<String>,
    pub expression: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Keyless {
    pub identities: Vec<Identity>,
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

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Identity {
    pub issuer: Option<String>,
    pub subject: Option<String>,
    pub issuer_reg_exp: Option<String>,
    pub subject_reg_exp: Option<String>,
    pub subject_expression: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CertificateSource {
    pub cert: Option<StringOrExpression>,
    pub cert_chain: Option<StringOrExpression>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SignatureSource {
    pub repository: Option<String>,
    pub tag_prefix: Option<String>,
    /// Literally `PullSecrets` (capital P) in Kyverno's CRD.
    #[serde(rename = "PullSecrets", default)]
    pub pull_secrets: Vec<PullSecret>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PullSecret {
    pub name: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CtLog {
    pub url: Option<String>,
    pub rekor_pub_key: Option<String>,
    pub ct_log_pub_key: Option<String>,
    pub tsa_cert_chain: Option<String>,
    #[serde(default)]
    pub insecure_ignore_tlog: bool,
    #[serde(rename = "insecureIgnoreSCT", default)]
    pub insecure_ignore_sct: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Tuf {
    pub root: Option<TufRoot>,
    pub mirror: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TufRoot {
    pub path: Option<String>,
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

    /// The TUF root.json given base64-encoded in `root.data`, or why not
    /// (the error starts with the field path under `cosign`).
    pub fn root_json(&self) -> Result<Vec<u8>, String> {
        let Some(data) = self.root.as_ref().and_then(|r| r.data.as_deref()) else {
            return Err("tuf.root.data: Required value: base64 of the TUF repository's root.json (the component has no filesystem for tuf.root.path)".into());
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
    Value(String),
    Expression(crate::cel::Expression),
}

/// An attestor with its expressions compiled.
#[derive(Debug, Clone)]
pub struct CompiledAttestor {
    pub name: String,
    pub kind: AttestorKind,
    /// The verification cache's fingerprint of the attestor when every one
    /// of its [`sources`](Self::sources) is written inline: the same for
    /// every request, so the engine computes it once and keeps it here.
    pub fixed_fingerprint: std::sync::OnceLock<String>,
}

#[derive(Debug, Clone)]
pub enum AttestorKind {
    Cosign(Box<CompiledCosign>),
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
    pub certs: Option<StringSource>,
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

#[derive(Debug, Clone)]
pub struct CompiledCosign {
    pub spec: Cosign,
    pub key: Option<StringSource>,
    pub cert: Option<StringSource>,
    pub cert_chain: Option<StringSource>,
    pub trusted_root: Option<StringSource>,
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
        let key = spec
            .key
            .as_ref()
            .and_then(|k| source("key", k.data.as_ref(), k.expression.as_ref()));
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
            subject_expressions,
        }
    }
}
