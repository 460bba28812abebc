//! Why each admission request was decided as it was: exactly one decision
//! log line per request (info level, `ivpol::decision`), the reasons as
//! `auditAnnotations` for the API server's audit log, and the per-policy
//! and per-verification metrics. The reasons come typed from the component
//! (`wit::Verification`); nothing here parses a message.

use crate::metrics::metrics;
use crate::runtime::wit;
use serde_json::{json, Map, Value};
use std::time::Duration;

/// The request a decision is about, as far as it could be read.
#[derive(Default)]
pub struct Subject<'a> {
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
pub fn log(
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
                    "actions": r.actions,
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
                    "attestorKind": x.attestor_kind,
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

pub fn status(s: wit::Status) -> &'static str {
    match s {
        wit::Status::Pass => "pass",
        wit::Status::Fail => "fail",
        wit::Status::Skip => "skip",
        wit::Status::Error => "error",
    }
}

use crate::report::{cache_name as cache, explain_one as summary, reason_name as reason};

/// The longest audit annotation value written (the reasons of one policy).
const MAX_ANNOTATION_VALUE: usize = 4096;

/// One `auditAnnotations` entry per policy that verified something: the
/// key `verification.<policy>` (the API server prefixes the webhook's name
/// and a `/`, and drops keys that are not qualified names: at most 63
/// characters of `[A-Za-z0-9._-]`, alphanumeric at both ends), the value
/// each verification's outcome, `; `-joined.
pub fn audit_annotations(v: &wit::Verdict) -> Map<String, Value> {
    let mut out = Map::new();
    for r in v.results.iter().filter(|r| !r.verifications.is_empty()) {
        let text: Vec<String> = r.verifications.iter().map(summary).collect();
        let mut value = text.join("; ");
        if value.len() > MAX_ANNOTATION_VALUE {
            let mut end = MAX_ANNOTATION_VALUE;
            while !value.is_char_boundary(end) {
                end -= 1;
            }
            value.truncate(end);
            value.push('…');
        }
        out.insert(
            annotation_key(&r.policy, r.namespace.as_deref()),
            json!(value),
        );
    }
    out
}

/// A qualified-name key for `policy` (of `namespace`).
pub fn annotation_key(policy: &str, namespace: Option<&str>) -> String {
    let raw = match namespace {
        Some(ns) => format!("verification.{ns}.{policy}"),
        None => format!("verification.{policy}"),
    };
    let cleaned: String = raw
        .chars()
        .map(|c| match c {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '.' | '_' | '-' => c,
            _ => '-',
        })
        .take(63)
        .collect();
    cleaned
        .trim_end_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_string()
}

/// Counts each policy's result and each verification's duration.
pub fn count(v: &wit::Verdict, phase: &str) {
    let m = metrics();
    for r in &v.results {
        let kind = match r.namespace {
            Some(_) => "NamespacedImageValidatingPolicy",
            None => "ImageValidatingPolicy",
        };
        m.count_policy_result(&r.policy, kind, phase, status(r.status));
        for x in &r.verifications {
            let seconds = x.micros as f64 / 1e6;
            m.observe_verification(&x.attestor_kind, cache(x.cache), seconds);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// k8s.io/apimachinery's IsQualifiedName, which the API server applies
    /// to `<webhook name>/<key>`: a DNS subdomain prefix, then a name of at
    /// most 63 characters, alphanumeric at both ends, `-`, `_` and `.`
    /// inside.
    fn is_qualified_name(s: &str) -> bool {
        let (prefix, name) = match s.split_once('/') {
            Some((p, n)) => (Some(p), n),
            None => (None, s),
        };
        let name_ok = !name.is_empty()
            && name.len() <= 63
            && name.starts_with(|c: char| c.is_ascii_alphanumeric())
            && name.ends_with(|c: char| c.is_ascii_alphanumeric())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        let prefix_ok = prefix.is_none_or(|p| {
            !p.is_empty()
                && p.len() <= 253
                && p.split('.').all(|l| {
                    !l.is_empty()
                        && l.len() <= 63
                        && l.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                        && l.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                        && l.chars()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                })
        });
        name_ok && prefix_ok
    }

    #[test]
    fn annotation_keys_are_qualified_names_under_a_webhook_prefix() {
        let long = "p".repeat(300);
        let cases = [
            ("require-signed", None),
            ("a.b.c", Some("team-a")),
            (long.as_str(), None),
            ("ends-with-dash-", None),
            ("Weird Name/with slash", Some("ns")),
        ];
        for (policy, ns) in cases {
            let key = annotation_key(policy, ns);
            assert!(key.len() <= 63, "{key}");
            let full = format!("ivpol-validate.ivpol.svc/{key}");
            assert!(is_qualified_name(&full), "{full}");
        }
        assert_eq!(
            annotation_key("require-signed", None),
            "verification.require-signed"
        );
    }
}
