//! Kyverno's CEL PolicyException (`policies.kyverno.io`): it names the
//! policies it exempts (`policyRefs`) and the requests it exempts them for
//! (`matchConditions`). A matching exception turns the policy's result into
//! Kyverno's `skip` (or `pass` with `reportResult: pass`), in admission, in
//! the CLI and in the background scan alike.

use super::spec::{Metadata, NamedExpression};
use super::PolicyKind;
use crate::cel::Expression;
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ExceptionSpec {
    #[serde(default)]
    policy_refs: Vec<PolicyRef>,
    #[serde(default)]
    match_conditions: Vec<NamedExpression>,
    #[serde(default)]
    images: Vec<String>,
    #[serde(default)]
    allowed_values: Vec<String>,
    report_result: Option<String>,
    expires_at: Option<String>,
    #[serde(default)]
    validations: Vec<serde_json::Value>,
    evaluation_mode: Option<String>,
    properties: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PolicyRef {
    name: String,
    kind: String,
}

/// Which PolicyExceptions may exempt requests from a cluster policy
/// (WIT `exception-scope`). A tenant who may write exceptions in its own
/// namespace must not be able to exempt itself, or anyone, from the
/// cluster's policies (Kyverno's GO-2024-3230): the operator names the
/// namespaces whose exceptions count. An exception for a namespaced
/// policy applies only from that policy's namespace, whatever the scope.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ExceptionScope {
    /// Exceptions are off: every PolicyException is refused at load.
    None,
    /// Exceptions from any namespace: the policy files are the operator's.
    #[default]
    Any,
    /// Exceptions from these namespaces only (and those without one,
    /// which only the operator's files can hold).
    Namespaces(Vec<String>),
}

impl ExceptionScope {
    /// Why an exception in `namespace` may not exempt a cluster policy;
    /// `None` when it may.
    fn refuses_cluster(&self, namespace: Option<&str>) -> Option<String> {
        match (self, namespace) {
            (ExceptionScope::Any, _) | (ExceptionScope::Namespaces(_), None) => None,
            (ExceptionScope::Namespaces(allowed), Some(ns)) => {
                (!allowed.iter().any(|a| a == ns)).then(|| {
                    format!(
                        "an exception in namespace {ns:?} may not exempt a cluster policy: exceptions to ImageValidatingPolicies are accepted only from {} (ivpol serve --exception-namespace)",
                        quoted_list(allowed)
                    )
                })
            }
            (ExceptionScope::None, _) => Some(DISABLED.into()),
        }
    }
}

const DISABLED: &str =
    "policy exceptions are disabled (ivpol serve --no-policy-exceptions): this exception exempts nothing";

fn quoted_list(names: &[String]) -> String {
    match names {
        [] => "no namespace".into(),
        _ => names
            .iter()
            .map(|n| format!("{n:?}"))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// What a matching exception makes of the policy's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportAs {
    /// `reportResult: skip` or unset: the result becomes a skip.
    Skip,
    /// `reportResult: pass`: the result becomes a pass.
    Pass,
}

/// A loaded PolicyException with its match conditions compiled.
#[derive(Debug, Clone)]
pub struct CompiledException {
    /// `<namespace>/<name>`, or `<name>` without a namespace: the key
    /// Kyverno prints in `rule is skipped due to policy exception: <keys>`.
    pub key: String,
    /// `metadata.namespace`; `None` when unset or empty.
    pub namespace: Option<String>,
    refs: Vec<PolicyRef>,
    /// `spec.matchConditions` as name and compiled expression; all must hold
    /// for the exception to apply.
    pub match_conditions: Vec<(String, Expression)>,
    /// `spec.reportResult`: what the exception makes of the policy's result.
    pub report_as: ReportAs,
    /// Unix seconds after which the exception no longer applies.
    pub expires_at: Option<i64>,
}

impl CompiledException {
    /// Whether this exception names the policy. An exception for a
    /// namespaced policy must live in that policy's namespace, so that one
    /// team cannot exempt itself from another team's policy.
    pub fn refers_to(&self, name: &str, kind: PolicyKind, namespace: Option<&str>) -> bool {
        let named = self
            .refs
            .iter()
            .any(|r| r.name == name && r.kind == kind.as_str());
        let placed = match kind {
            PolicyKind::Cluster => true,
            PolicyKind::Namespaced => self.namespace.as_deref() == namespace,
        };
        named && placed
    }

    /// Whether the exception is still in force at `now` (unix seconds).
    pub fn in_force(&self, now: i64) -> bool {
        self.expires_at.is_none_or(|t| now < t)
    }
}

/// Compiles one PolicyException document; errors carry field paths.
///
/// `scope` says whether an exception in its namespace may name a cluster
/// policy; one that may not is refused whole, so that the tenant who wrote
/// it learns so (at `kubectl apply`, through the policy-validation webhook)
/// rather than finding it silently ignored.
pub fn compile(
    metadata: &Metadata,
    spec: serde_json::Value,
    scope: &ExceptionScope,
) -> Result<CompiledException, Vec<String>> {
    if *scope == ExceptionScope::None {
        return Err(vec![DISABLED.into()]);
    }
    let spec: ExceptionSpec = serde_path_to_error::deserialize(spec).map_err(|e| {
        let path = e.path().to_string();
        vec![format!("spec.{path}: {}", e.into_inner())]
    })?;
    let namespace = metadata.namespace.clone().filter(|n| !n.is_empty());
    let mut errors = unsupported(&spec);
    if spec.policy_refs.is_empty() {
        errors.push("spec.policyRefs: Required value: at least one policy reference".into());
    }
    for (i, r) in spec.policy_refs.iter().enumerate() {
        if r.name.is_empty() {
            errors.push(format!("spec.policyRefs[{i}].name: Required value"));
        }
        if r.kind == PolicyKind::Cluster.as_str() {
            if let Some(why) = scope.refuses_cluster(namespace.as_deref()) {
                errors.push(format!("spec.policyRefs[{i}]: {why}"));
            }
        }
    }
    let report_as = match spec.report_result.as_deref() {
        None | Some("skip") => ReportAs::Skip,
        Some("pass") => ReportAs::Pass,
        Some(other) => {
            errors.push(format!(
                "spec.reportResult: Unsupported value: {other:?}: supported values: \"skip\", \"pass\""
            ));
            ReportAs::Skip
        }
    };
    let expires_at = match spec.expires_at.as_deref() {
        None => None,
        Some(t) => {
            let parsed = crate::verify::trust::parse_rfc3339(t);
            if parsed.is_none() {
                errors.push(format!("spec.expiresAt: {t:?} is not an RFC 3339 time"));
            }
            parsed
        }
    };
    let mut match_conditions = Vec::new();
    for (i, c) in spec.match_conditions.iter().enumerate() {
        // Data only: an exception is written by whoever may write one in
        // its namespace, and must not reach the policy's registry
        // credentials, verifier or granted cluster objects.
        match crate::cel::compile_data_only(&c.expression) {
            Ok(e) => match_conditions.push((c.name.clone(), e)),
            Err(e) => errors.push(format!("spec.matchConditions[{i}].expression: {e}")),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let name = metadata.name.clone().unwrap_or_default();
    let key = match &namespace {
        Some(ns) => format!("{ns}/{name}"),
        None => name,
    };
    Ok(CompiledException {
        key,
        namespace,
        refs: spec.policy_refs,
        match_conditions,
        report_as,
        expires_at,
    })
}

/// Fields Kyverno defines for ValidatingPolicy exceptions only: an image
/// validating policy has no `exceptions.*` variables to read them, so
/// accepting them would silently exempt nothing.
fn unsupported(spec: &ExceptionSpec) -> Vec<String> {
    let mut out = Vec::new();
    for (field, set) in [
        ("images", !spec.images.is_empty()),
        ("allowedValues", !spec.allowed_values.is_empty()),
        ("validations", !spec.validations.is_empty()),
    ] {
        if set {
            out.push(format!(
                "spec.{field}: not supported for ImageValidatingPolicy exceptions (Kyverno reads it only in ValidatingPolicy CEL)"
            ));
        }
    }
    if spec.evaluation_mode.is_some() {
        out.push("spec.evaluationMode: not supported: ivpol applies an exception to the policies its policyRefs name, in every mode".into());
    }
    if spec.properties.is_some() {
        out.push(
            "spec.properties: not supported: ivpol writes no policy reports to carry them".into(),
        );
    }
    out
}
