//! Why each admission request was decided as it was: exactly one decision
//! log line per request (info level, `ivpol::decision`), and the per-policy
//! and per-verification metrics (the component writes the reasons into the
//! response's `auditAnnotations` itself). The reasons come typed from the component
//! (`wit::Verification`); nothing here parses a message.

use ivpol_runtime::metrics::metrics;
use ivpol_runtime::wit;
use serde::Serialize;
use std::time::Duration;

/// The request a decision is about, as far as it could be read.
#[derive(Default)]
pub(crate) struct Subject<'a> {
    pub uid: &'a str,
    /// `ivpol` or `nivpol`.
    pub route: &'a str,
    /// `validate` or `mutate`.
    pub phase: &'a str,
    pub namespace: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
    pub operation: &'a str,
}

/// Writes the decision line for `subject`. `verdict` is none when the
/// request could not be judged (then `why` says what happened).
pub(super) fn log(
    subject: &Subject<'_>,
    allowed: bool,
    took: Duration,
    verdict: Option<&wit::Verdict>,
    why: Option<&str>,
) {
    // The JSON below is only built when the line is written.
    if !tracing::enabled!(target: "ivpol::decision", tracing::Level::INFO) {
        return;
    }
    let (policies, verifications) = match verdict {
        Some(v) => (policies(v), verifications(v)),
        None => ("[]".to_string(), "[]".to_string()),
    };
    tracing::info!(
        target: "ivpol::decision",
        uid = subject.uid,
        route = subject.route,
        phase = subject.phase,
        namespace = subject.namespace,
        kind = subject.kind,
        name = subject.name,
        operation = subject.operation,
        allowed,
        duration_ms = took.as_secs_f64() * 1000.0,
        policies = %policies,
        verifications = %verifications,
        error = why.unwrap_or_default(),
        "decision"
    );
}

/// One policy's entry of the decision line, written straight from the
/// verdict (fields in the order a `serde_json::Value` map writes them).
#[derive(Serialize)]
struct PolicyEntry<'a> {
    actions: Vec<&'static str>,
    message: &'a str,
    namespace: Option<&'a str>,
    policy: &'a str,
    result: &'static str,
}

/// One verification's entry of the decision line; the failure's four
/// fields only when it failed.
#[derive(Serialize)]
struct VerificationEntry<'a> {
    attestation: Option<&'a str>,
    attestor: &'a str,
    #[serde(rename = "attestorKind")]
    attestor_kind: &'static str,
    cache: &'static str,
    digest: Option<&'a str>,
    image: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
    outcome: &'static str,
    policy: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    registry: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<Option<u16>>,
}

fn policies(v: &wit::Verdict) -> String {
    let entries: Vec<PolicyEntry<'_>> = v
        .results
        .iter()
        .map(|r| PolicyEntry {
            actions: r.actions.names(),
            message: &r.message,
            namespace: r.namespace.as_deref(),
            policy: &r.policy,
            result: status(r.status),
        })
        .collect();
    written(&entries)
}

fn verifications(v: &wit::Verdict) -> String {
    let entries: Vec<VerificationEntry<'_>> = v
        .results
        .iter()
        .flat_map(|r| r.verifications.iter().map(move |x| (r, x)))
        .map(|(r, x)| {
            let failure = x.failure.as_ref();
            VerificationEntry {
                attestation: x.attestation.as_deref(),
                attestor: &x.attestor,
                attestor_kind: x.attestor_kind.as_str(),
                cache: cache(x.cache),
                digest: x.digest.as_deref(),
                image: &x.image,
                message: failure.map(|f| f.message.as_str()),
                outcome: if failure.is_none() {
                    "verified"
                } else {
                    "failed"
                },
                policy: &r.policy,
                reason: failure.map(|f| reason(f.reason)),
                registry: failure.map(|f| f.registry.as_deref()),
                status: failure.map(|f| f.status),
            }
        })
        .collect();
    written(&entries)
}

/// The entries as JSON text; plain strings and numbers cannot fail to write.
fn written<T: Serialize>(entries: &[T]) -> String {
    serde_json::to_string(entries).unwrap_or_else(|_| "[]".to_string())
}

pub(super) fn status(s: wit::Status) -> &'static str {
    match s {
        wit::Status::Pass => "pass",
        wit::Status::Fail => "fail",
        wit::Status::Skip => "skip",
        wit::Status::Error => "error",
    }
}

use ivpol_report::{cache_name as cache, reason_name as reason};

/// Counts each policy's result and each verification's duration.
pub(super) fn count(v: &wit::Verdict, phase: &'static str) {
    let m = metrics();
    for r in &v.results {
        let kind = match r.namespace {
            Some(_) => "NamespacedImageValidatingPolicy",
            None => "ImageValidatingPolicy",
        };
        m.count_policy_result(&r.policy, kind, phase, status(r.status));
        for x in &r.verifications {
            let seconds = x.micros as f64 / 1e6;
            m.observe_verification(x.attestor_kind.as_str(), cache(x.cache), seconds);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn verification(failure: Option<wit::VerificationFailure>) -> wit::Verification {
        wit::Verification {
            image: "registry.test/app:1".into(),
            digest: Some("sha256:ab".into()),
            attestor: "keys".into(),
            attestor_kind: wit::AttestorKind::Cosign,
            micros: 7,
            attestation: None,
            cache: wit::CacheUse::Hit,
            failure,
            summary: "s".into(),
        }
    }

    fn verdict() -> wit::Verdict {
        let failed = wit::VerificationFailure {
            reason: wit::Reason::NotFound,
            message: "no signature".into(),
            registry: None,
            status: Some(404),
        };
        let result = |namespace: Option<&str>, verifications| wit::PolicyResult {
            policy: "check".into(),
            namespace: namespace.map(Into::into),
            status: wit::Status::Fail,
            message: "m".into(),
            actions: wit::Actions::DENY | wit::Actions::AUDIT,
            audit_annotations: vec![],
            exceptions: vec![],
            verifications,
            report: Some(wit::ReportEntry {
                policy: "check".into(),
                rule: "check".into(),
                message: "m".into(),
                warn_message: "m".into(),
                properties: vec![],
                category: None,
                severity: None,
                scored: true,
                reported: true,
                audit: false,
            }),
        };
        wit::Verdict {
            allowed: false,
            message: None,
            warnings: vec![],
            patch: None,
            results: vec![
                result(None, vec![verification(None)]),
                result(Some("team"), vec![verification(Some(failed))]),
            ],
        }
    }

    /// What the line carried when it was built as `serde_json::Value`s.
    fn via_value(v: &wit::Verdict) -> (String, String) {
        let policies: Vec<Value> = v
            .results
            .iter()
            .map(|r| {
                json!({
                    "policy": r.policy,
                    "namespace": r.namespace,
                    "result": status(r.status),
                    "actions": r.actions.names(),
                    "message": r.message,
                })
            })
            .collect();
        let verifications: Vec<Value> = v
            .results
            .iter()
            .flat_map(|r| r.verifications.iter().map(move |x| (r, x)))
            .map(|(r, x)| {
                let mut entry = json!({
                    "policy": r.policy,
                    "image": x.image,
                    "digest": x.digest,
                    "attestor": x.attestor,
                    "attestorKind": x.attestor_kind.as_str(),
                    "attestation": x.attestation,
                    "cache": cache(x.cache),
                    "outcome": if x.failure.is_none() { "verified" } else { "failed" },
                });
                if let Some(f) = &x.failure {
                    entry["reason"] = json!(reason(f.reason));
                    entry["message"] = json!(f.message);
                    entry["registry"] = json!(f.registry);
                    entry["status"] = json!(f.status);
                }
                entry
            })
            .collect();
        (
            Value::from(policies).to_string(),
            Value::from(verifications).to_string(),
        )
    }

    #[test]
    fn the_line_is_the_bytes_values_would_write() {
        let v = verdict();
        assert_eq!((policies(&v), verifications(&v)), via_value(&v));
    }
}
