//! Results as reports: for `apply`, `test` and `scan` the resources they
//! read, one [`Outcome`] per policy and resource, and the shapes they are
//! printed in (Kyverno's apply text, policy reports, Kyverno's test table,
//! JUnit XML); and the admission results `serve` adds to the same reports
//! ([`admission`]).
//!
//! `ivpol-report` sits over `ivpol-runtime` (the component's types) and
//! `ivpol-cluster` (policy metadata, API resources); the server and the
//! command line use it (docs/architecture.md, "Crates").

// Public items are the ones the crates above use; the rest is `pub(crate)`.
#![warn(unreachable_pub)]

pub mod admission;
pub mod junit;
pub mod kubernetes;
pub mod policy_report;
pub mod resources;
pub mod table;
pub mod text;

use ivpol_runtime::wit;
use resources::Subject;

/// A result's status, as in a policy report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Pass,
    Fail,
    Warn,
    Error,
    Skip,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Warn => "warn",
            Status::Error => "error",
            Status::Skip => "skip",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        Some(match s {
            "pass" => Status::Pass,
            "fail" => Status::Fail,
            "warn" => Status::Warn,
            "error" => Status::Error,
            "skip" => Status::Skip,
            _ => return None,
        })
    }
}

/// One policy's result for one resource (or JSON payload).
#[derive(Clone, Debug)]
pub struct Outcome {
    /// None for a JSON payload.
    pub subject: Option<Subject>,
    pub policy: String,
    /// The policy's namespace (NamespacedImageValidatingPolicy only).
    pub policy_namespace: Option<String>,
    /// The policy's name, or `exception` when a PolicyException skipped it.
    pub rule: String,
    pub status: Status,
    /// The policy's own message, as Kyverno's CLI prints it.
    pub message: String,
    /// What each verification concluded, one line each (`--explain`).
    pub why: Vec<String>,
    /// The result as a policy report says it, worded by the component.
    pub report: wit::ReportEntry,
}

impl Outcome {
    /// The outcome of `result` for `subject`.
    pub fn new(subject: Option<Subject>, result: &wit::PolicyResult) -> Outcome {
        let status = match result.status {
            wit::Status::Pass => Status::Pass,
            wit::Status::Fail => Status::Fail,
            wit::Status::Skip => Status::Skip,
            wit::Status::Error => Status::Error,
        };
        Outcome {
            subject,
            policy: result.policy.clone(),
            policy_namespace: result.namespace.clone(),
            rule: result.report.rule.clone(),
            status,
            message: result.message.clone(),
            why: result
                .verifications
                .iter()
                .map(|x| x.summary.clone())
                .collect(),
            report: result.report.clone(),
        }
    }
}

/// `--audit-warn`, as `kyverno apply --audit-warn`: the failures of
/// policies that do not deny become warnings. Errors stay errors.
pub fn audit_failures_as_warnings(outcomes: &mut [Outcome]) {
    for o in outcomes.iter_mut() {
        if o.status == Status::Fail && o.report.audit {
            o.status = Status::Warn;
            o.report.message = o.report.warn_message.clone();
        }
    }
}

/// The `pass, fail, warn, error, skip` counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub pass: usize,
    pub fail: usize,
    pub warn: usize,
    pub error: usize,
    pub skip: usize,
}

impl Counts {
    pub fn of<'a>(outcomes: impl IntoIterator<Item = &'a Outcome>) -> Counts {
        Counts::of_statuses(outcomes.into_iter().map(|o| o.status))
    }

    /// The counts of report results (their `result` field).
    pub(crate) fn of_results(results: &[serde_json::Value]) -> Counts {
        Counts::of_statuses(
            results
                .iter()
                .filter_map(|r| Status::parse(r["result"].as_str()?)),
        )
    }

    fn of_statuses(statuses: impl IntoIterator<Item = Status>) -> Counts {
        let mut c = Counts::default();
        for status in statuses {
            match status {
                Status::Pass => c.pass += 1,
                Status::Fail => c.fail += 1,
                Status::Warn => c.warn += 1,
                Status::Error => c.error += 1,
                Status::Skip => c.skip += 1,
            }
        }
        c
    }

    pub fn to_json(self) -> serde_json::Value {
        // In Kyverno's (sorted) key order.
        serde_json::json!({
            "error": self.error, "fail": self.fail, "pass": self.pass,
            "skip": self.skip, "warn": self.warn,
        })
    }
}

/// `--explain`: each result that verified something, with why.
pub fn explain(outcomes: &[Outcome]) -> String {
    let mut out = String::new();
    for o in outcomes.iter().filter(|o| !o.why.is_empty()) {
        let resource = o
            .subject
            .as_ref()
            .map(|s| s.path())
            .unwrap_or_else(|| "JSON payload".into());
        out.push_str(&format!(
            "why: policy {} -> resource {resource}: {}\n",
            o.policy,
            o.status.as_str()
        ));
        for line in &o.why {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out
}

pub fn cache_name(c: wit::CacheUse) -> &'static str {
    match c {
        wit::CacheUse::Hit => "hit",
        wit::CacheUse::Miss => "miss",
        wit::CacheUse::Unkeyed => "unkeyed",
    }
}

pub fn reason_name(r: wit::Reason) -> &'static str {
    match r {
        wit::Reason::NotFound => "not-found",
        wit::Reason::BadSignature => "bad-signature",
        wit::Reason::Identity => "identity",
        wit::Reason::UntrustedChain => "untrusted-chain",
        wit::Reason::TransparencyLog => "transparency-log",
        wit::Reason::Timestamp => "timestamp",
        wit::Reason::PayloadMismatch => "payload-mismatch",
        wit::Reason::AttestationMissing => "attestation-missing",
        wit::Reason::Registry => "registry",
        wit::Reason::RegistryRefused => "registry-refused",
        wit::Reason::Revocation => "revocation",
        wit::Reason::Malformed => "malformed",
    }
}

/// A report entry as the component words one for `policy` with `message`
/// (a background scan's, of a policy that denies), for the tests'
/// outcomes.
#[cfg(test)]
pub(crate) fn test_entry(policy: &str, message: &str) -> wit::ReportEntry {
    wit::ReportEntry {
        policy: policy.into(),
        rule: policy.into(),
        message: message.into(),
        warn_message: message.into(),
        properties: vec![("process".into(), "background scan".into())],
        category: None,
        severity: None,
        scored: true,
        reported: true,
        audit: false,
    }
}
