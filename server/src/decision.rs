//! Why each admission request was decided as it was: exactly one decision
//! log line per request (info level, `ivpol::decision`), and the per-policy
//! and per-verification metrics (the component writes the reasons into the
//! response's `auditAnnotations` itself). The reasons come typed from the component
//! (`wit::Verification`); nothing here parses a message.

use ivpol_runtime::metrics::metrics;
use ivpol_runtime::wit;
use serde_json::{json, Value};
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
        Some(v) => (policies(v).to_string(), verifications(v).to_string()),
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

fn policies(v: &wit::Verdict) -> Value {
    Value::Array(
        v.results
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
            .collect(),
    )
}

fn verifications(v: &wit::Verdict) -> Value {
    Value::Array(
        v.results
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
            .collect(),
    )
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
pub(super) fn count(v: &wit::Verdict, phase: &str) {
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
