//! Checks on a parsed spec that the CRD schema and Kyverno's policy webhook
//! would make, with their messages and field paths.

use super::spec::Spec;

const ACTIONS: [&str; 3] = ["Deny", "Audit", "Warn"];

/// Every problem with `spec`; empty when it is valid.
pub(super) fn validate(spec: &Spec) -> Vec<String> {
    let mut problems = Vec::new();
    match &spec.match_constraints {
        // A JSON payload is no admission request: there is nothing to match
        // (Kyverno's own JSON-mode CLI test has no matchConstraints).
        None if spec.json_mode() => {}
        None => problems.push(
            "spec.matchConstraints: a matchConstraints with at least one resource rule is required"
                .to_string(),
        ),
        Some(mc) => problems.extend(mc.validate()),
    }
    for (i, action) in spec.validation_actions.iter().enumerate() {
        if !ACTIONS.contains(&action.as_str()) {
            problems.push(format!(
                "spec.validationActions[{i}]: Unsupported value: {action:?}: supported values: \"Deny\", \"Audit\", \"Warn\""
            ));
        } else if spec.validation_actions[..i].contains(action) {
            problems.push(format!(
                "spec.validationActions[{i}]: Duplicate value: {action:?}"
            ));
        }
    }
    if spec.attestors.is_none() {
        problems.push("spec.attestors: Required value".into());
    }
    if spec.validations.is_none() {
        problems.push("spec.validations: Required value".into());
    }
    if let Some(t) = spec
        .webhook_configuration
        .as_ref()
        .and_then(|w| w.timeout_seconds)
    {
        if !(1..=30).contains(&t) {
            problems.push(format!(
                "spec.webhookConfiguration.timeoutSeconds: Invalid value: {t}: must be between 1 and 30 seconds"
            ));
        }
    }
    if let Some(mode) = spec.evaluation.as_ref().and_then(|e| e.mode.as_deref()) {
        if mode != "Kubernetes" && mode != "JSON" {
            problems.push(format!(
                "spec.evaluation.mode: Unsupported value: {mode:?}: ivpol supports \"Kubernetes\" and \"JSON\""
            ));
        }
    }
    // Kyverno's IVP engine never reads `reason` either; ivpol refuses it
    // rather than accept a field with no effect (`docs/security.md`).
    for (i, v) in spec.validations.iter().flatten().enumerate() {
        if v.reason.is_some() {
            problems.push(format!(
                "spec.validations[{i}].reason: not supported: image validating policies deny with the policy's message; remove reason"
            ));
        }
    }
    if let Some(c) = &spec.credentials {
        if c.allow_insecure_registry {
            problems.push(
                "spec.credentials.allowInsecureRegistry: not supported per policy: plain-HTTP registries are allowed by the host's --insecure-registry flag".into(),
            );
        }
        for (i, p) in c.providers.iter().enumerate() {
            if !matches!(
                p.as_str(),
                "default" | "github" | "amazon" | "google" | "azure"
            ) {
                problems.push(format!(
                    "spec.credentials.providers[{i}]: Unsupported value: {p:?}: supported values: \"default\", \"amazon\", \"azure\", \"google\", \"github\""
                ));
            }
        }
        for (i, name) in c.secrets.iter().enumerate() {
            if !is_secret_name(name) {
                problems.push(format!(
                    "spec.credentials.secrets[{i}]: Invalid value: {name:?}: must be a DNS subdomain name"
                ));
            }
        }
    }
    check_one_of(spec, &mut problems);
    check_attestors(spec, &mut problems);
    check_unique_names(spec, &mut problems);
    problems
}

fn check_one_of(spec: &Spec, problems: &mut Vec<String>) {
    for (i, r) in spec.match_image_references.iter().enumerate() {
        if r.glob.is_some() == r.expression.is_some() {
            problems.push(format!(
                "spec.matchImageReferences[{i}]: exactly one of glob or expression is required"
            ));
        }
    }
    for (i, a) in spec.attestors.iter().flatten().enumerate() {
        if a.cosign.is_some() == a.notary.is_some() {
            problems.push(format!(
                "spec.attestors[{i}]: exactly one of cosign or notary is required"
            ));
        }
    }
    for (i, a) in spec.attestations.iter().enumerate() {
        if a.intoto.is_some() == a.referrer.is_some() {
            problems.push(format!(
                "spec.attestations[{i}]: exactly one of intoto or referrer is required"
            ));
        }
    }
}

/// Attestor features ivpol does not implement are load errors, never a
/// verification that silently passes or fails.
fn check_attestors(spec: &Spec, problems: &mut Vec<String>) {
    for (i, a) in spec.attestors.iter().flatten().enumerate() {
        let path = format!("spec.attestors[{i}]");
        if let Some(n) = &a.notary {
            check_notary(&format!("{path}.notary"), n, problems);
        }
        let Some(c) = &a.cosign else { continue };
        let kinds = [
            c.key.is_some(),
            c.keyless.is_some(),
            c.certificate.is_some(),
        ];
        if kinds.iter().filter(|k| **k).count() != 1 {
            problems.push(format!(
                "{path}.cosign: exactly one of key, keyless or certificate is required"
            ));
        }
        if let Some(k) = &c.key {
            let given = [k.data.is_some(), k.kms.is_some(), k.expression.is_some()];
            if given.iter().filter(|g| **g).count() != 1 {
                problems.push(format!(
                    "{path}.cosign.key: exactly one of data, kms or expression is required"
                ));
            }
            if let Some(Err(why)) = k.kms.as_deref().map(KmsUri::parse) {
                problems.push(format!("{path}.cosign.key.kms: {why}"));
            }
            // A key that does not parse would only fail at verification,
            // request after request: it is the policy's mistake.
            if let Some(Err(e)) = k
                .data
                .as_deref()
                .map(crate::verify::keys::PublicKey::from_pem)
            {
                problems.push(format!("{path}.cosign.key.data: not a public key: {e}"));
            }
        }
        if let Some(c) = &c.certificate {
            for (field, value) in [("cert", &c.cert), ("certChain", &c.cert_chain)] {
                if let Some(v) = value {
                    check_certificates(&format!("{path}.cosign.certificate.{field}"), v, problems);
                }
            }
        }
        if let Some(k) = &c.keyless {
            check_keyless(&format!("{path}.cosign.keyless"), k, problems);
        }
        // trustedRoot takes precedence over tuf, as in Kyverno.
        if let (Some(t), None) = (&c.tuf, &c.trusted_root) {
            check_tuf(&format!("{path}.cosign"), t, problems);
        }
        if let Some(chain) = c.ctlog.as_ref().and_then(|l| l.tsa_cert_chain.as_deref()) {
            if let Err(why) = check_tsa_chain(chain) {
                problems.push(format!("{path}.cosign.ctlog.tsaCertChain: {why}"));
            }
        }
        if c.source
            .as_ref()
            .is_some_and(|s| !s.pull_secrets.is_empty())
        {
            problems.push(format!(
                "{path}.cosign.source.PullSecrets: not implemented; name the registry secrets in spec.credentials.secrets"
            ));
        }
    }
}

/// `additionalExtensions` holds only keys ivpol checks, with string
/// values; `subjectExpression` excludes `subjectRegExp` (the CRD says so).
fn check_keyless(path: &str, k: &super::attestor::Keyless, problems: &mut Vec<String>) {
    if let Err(e) = k.extensions() {
        problems.push(format!("{path}.{e}"));
    }
    // cosign accepts any certificate its CA issued when no identity is
    // given: a policy that names none (or one that names nothing) would
    // admit anyone's keyless signature.
    if k.identities.is_empty() {
        problems.push(format!(
            "{path}.identities: Required value: at least one identity (issuer and subject); without one any certificate the CA issued would verify"
        ));
    }
    for (i, id) in k.identities.iter().enumerate() {
        let subject =
            id.subject.is_some() || id.subject_reg_exp.is_some() || id.subject_expression.is_some();
        let issuer = id.issuer.is_some() || id.issuer_reg_exp.is_some();
        if !subject && !issuer {
            problems.push(format!(
                "{path}.identities[{i}]: Required value: a subject (subject, subjectRegExp or subjectExpression) or an issuer (issuer or issuerRegExp); an empty identity matches any certificate"
            ));
        }
        if id.subject_expression.is_some() && id.subject_reg_exp.is_some() {
            problems.push(format!(
                "{path}.identities[{i}]: subjectExpression and subjectRegExp are mutually exclusive"
            ));
        }
    }
}

/// A Notary attestor needs its trust store: without `certs` nothing could
/// ever verify, which is a policy mistake, not a verdict.
fn check_notary(path: &str, n: &super::attestor::Notary, problems: &mut Vec<String>) {
    match &n.certs {
        None => problems.push(format!(
            "{path}.certs: Required value: the PEM certificates of the trust store"
        )),
        Some(c) => check_certificates(&format!("{path}.certs"), c, problems),
    }
    if let Some(t) = &n.tsa_certs {
        check_certificates(&format!("{path}.tsaCerts"), t, problems);
    }
}

/// [`check_value_or_expression`], and an inline value must be PEM
/// certificates that parse.
fn check_certificates(
    path: &str,
    s: &super::attestor::StringOrExpression,
    problems: &mut Vec<String>,
) {
    check_value_or_expression(path, s, problems);
    if let Some(Err(e)) = s
        .value
        .as_deref()
        .map(crate::verify::x509::Certificate::parse_pem)
    {
        problems.push(format!("{path}: not PEM certificates: {e}"));
    }
}

fn check_value_or_expression(
    path: &str,
    s: &super::attestor::StringOrExpression,
    problems: &mut Vec<String>,
) {
    if s.value.is_some() == s.expression.is_some() {
        problems.push(format!(
            "{path}: exactly one of value or expression is required"
        ));
    }
}

/// `tuf` as the component can use it: the root inline, the mirror a URL.
/// `path` is the attestor's `cosign` field.
fn check_tuf(path: &str, t: &super::attestor::Tuf, problems: &mut Vec<String>) {
    if let Some(file) = t.root_file() {
        if !file.starts_with('/') {
            problems.push(format!(
                "{path}.tuf.root.path: {file:?} is not an absolute path"
            ));
        }
    } else if let Err(e) = t.root_json() {
        problems.push(format!("{path}.{e}"));
    }
    if let Err(e) = t.mirror_url() {
        problems.push(format!("{path}.{e}"));
    }
}

fn check_unique_names(spec: &Spec, problems: &mut Vec<String>) {
    let lists: [(&str, Vec<&str>); 5] = [
        (
            "matchConditions",
            spec.match_conditions
                .iter()
                .map(|c| c.name.as_str())
                .collect(),
        ),
        (
            "variables",
            spec.variables.iter().map(|c| c.name.as_str()).collect(),
        ),
        (
            "images",
            spec.images.iter().map(|c| c.name.as_str()).collect(),
        ),
        (
            "attestors",
            spec.attestors
                .iter()
                .flatten()
                .map(|c| c.name.as_str())
                .collect(),
        ),
        (
            "attestations",
            spec.attestations.iter().map(|c| c.name.as_str()).collect(),
        ),
    ];
    for (field, names) in lists {
        for (i, name) in names.iter().enumerate() {
            if name.is_empty() {
                problems.push(format!("spec.{field}[{i}].name: Required value"));
            } else if names[..i].contains(name) {
                problems.push(format!("spec.{field}[{i}].name: Duplicate value: {name:?}"));
            }
        }
    }
}

/// A Kubernetes object name (DNS-1123 subdomain): also keeps secret names
/// from reaching outside the host's `--secrets-dir`.
fn is_secret_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !part.starts_with('-')
                && !part.ends_with('-')
        })
}

/// A namespaced policy's `k8s://` keys must be Secrets of its own
/// namespace: its authors may not read other teams' Secrets through ivpol.
pub(super) fn check_namespaced_keys(spec: &Spec, namespace: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for (i, a) in spec.attestors.iter().flatten().enumerate() {
        let kms = a
            .cosign
            .as_ref()
            .and_then(|c| c.key.as_ref()?.kms.as_deref());
        if let Some(Ok(KmsUri::Kubernetes { namespace: other })) = kms.map(KmsUri::parse) {
            if other != namespace {
                problems.push(format!(
                    "spec.attestors[{i}].cosign.key.kms: a NamespacedImageValidatingPolicy reads k8s:// keys from its own namespace ({namespace}) only, not {other}"
                ));
            }
        }
    }
    problems
}

/// What only ivpol's host can give a policy, for an engine that runs
/// without one (the webhook component under any wasi:http host): cloud
/// credential providers, KMS keys and trust files read from the host's
/// directories. Each is refused at load, naming what to use instead, so
/// that no policy loads to fail every request it judges.
pub(super) fn check_hostless(spec: &Spec) -> Vec<String> {
    const WHY: &str = "ivpol's host provides it, and this engine runs without one";
    let mut problems = Vec::new();
    let providers = spec.credentials.iter().flat_map(|c| &c.providers);
    for (i, p) in providers.enumerate().filter(|(_, p)| *p != "default") {
        problems.push(format!(
            "spec.credentials.providers[{i}]: the {p} credential provider: {WHY}; use credentials.secrets"
        ));
    }
    for (i, a) in spec.attestors.iter().flatten().enumerate() {
        let Some(cosign) = &a.cosign else { continue };
        if cosign.key.as_ref().is_some_and(|k| k.kms.is_some()) {
            problems.push(format!(
                "spec.attestors[{i}].cosign.key.kms: a KMS key: {WHY}; use key.data"
            ));
        }
        if cosign.tuf.as_ref().and_then(|t| t.root_file()).is_some() {
            problems.push(format!(
                "spec.attestors[{i}].cosign.tuf.root.path: a trust file: {WHY}; use tuf.root.data"
            ));
        }
    }
    problems
}

/// A `cosign.key.kms` URI, as cosign and Kyverno accept them.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum KmsUri<'a> {
    /// `awskms://[endpoint]/<key id, alias/<name> or ARN>`.
    Aws,
    /// `hashivault://<key name>` (Vault's transit engine).
    Vault,
    /// `gcpkms://projects/…/cryptoKeys/<key>[/cryptoKeyVersions/<n>]`.
    Gcp,
    /// `azurekms://<vault host>/<key>[/<version>]`.
    Azure,
    /// `k8s://<namespace>/<secret>`: the Secret's `cosign.pub`.
    Kubernetes {
        /// The Secret's namespace.
        namespace: &'a str,
    },
}

impl KmsUri<'_> {
    /// The scheme and shape of `uri`, or why it is refused.
    pub(super) fn parse(uri: &str) -> Result<KmsUri<'_>, String> {
        let Some((scheme, rest)) = uri.split_once("://") else {
            return Err(format!("{uri:?} is not a KMS URI (awskms://, gcpkms://, azurekms://, hashivault:// or k8s://)"));
        };
        match scheme {
            "awskms" => match rest.split_once('/') {
                Some((_, key)) if !key.is_empty() => Ok(KmsUri::Aws),
                _ => Err(format!("{uri:?}: awskms://[ENDPOINT]/KEY_ID: no key id")),
            },
            "hashivault" if !rest.is_empty() && !rest.contains('/') => Ok(KmsUri::Vault),
            "hashivault" => Err(format!("{uri:?}: hashivault://KEY_NAME: not a key name")),
            "k8s" => match rest.split_once('/') {
                Some((namespace, name))
                    if is_secret_name(namespace) && !namespace.contains('.') && is_secret_name(name) =>
                {
                    Ok(KmsUri::Kubernetes { namespace })
                }
                _ => Err(format!("{uri:?}: k8s://NAMESPACE/SECRET: not a namespace and Secret name")),
            },
            "gcpkms" if rest.starts_with("projects/") && rest.contains("/cryptoKeys/") => Ok(KmsUri::Gcp),
            "gcpkms" => Err(format!(
                "{uri:?}: gcpkms://projects/P/locations/L/keyRings/R/cryptoKeys/K[/cryptoKeyVersions/V]: not a key name"
            )),
            "azurekms" => match rest.split_once('/') {
                Some((vault, key)) if !vault.is_empty() && !key.is_empty() => Ok(KmsUri::Azure),
                _ => Err(format!("{uri:?}: azurekms://VAULT_HOST/KEY[/VERSION]: no vault or key")),
            },
            other => Err(format!("{other}:// is not a KMS scheme Kyverno has (awskms://, gcpkms://, azurekms://, hashivault://, k8s://)")),
        }
    }
}

/// The most certificates `ctlog.tsaCertChain` may hold: a leaf, ten
/// intermediates (Kyverno's bound, from CVE-2026-32280) and a root.
const MAX_TSA_CHAIN: usize = 12;

/// `ctlog.tsaCertChain` is a timestamp authority's PEM chain, leaf first
/// and root last, within [`MAX_TSA_CHAIN`].
fn check_tsa_chain(pem: &str) -> Result<(), String> {
    let certs = crate::verify::x509::Certificate::parse_pem(pem).map_err(|e| e.to_string())?;
    match certs.len() {
        0 | 1 => Err("a timestamp authority's chain needs its leaf and its root".into()),
        n if n > MAX_TSA_CHAIN => Err(format!(
            "{n} certificates; at most a leaf, 10 intermediates and a root"
        )),
        _ => Ok(()),
    }
}
