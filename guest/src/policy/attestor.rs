//! Attestor types (`spec.attestors[]`), reference §1.3.
//!
//! Loaded and checked for shape now; the verification code that consumes
//! them lives in `verify/` (cosign, notary) and is wired in by later steps.
//! Until then a policy that calls a verification function gets a load
//! diagnostic, never a silent pass.

use serde::Deserialize;
use std::collections::BTreeMap;

/// oneOf `value` / `expression` (Kyverno's `StringOrExpression`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StringOrExpression {
    pub value: Option<String>,
    pub expression: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
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
    pub additional_extensions: Option<serde_json::Value>,
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

#[derive(Debug, Clone, Deserialize)]
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

#[derive(Debug, Clone, Deserialize)]
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
