//! Results as reports: for `apply`, `test` and `scan` the resources they
//! read, one [`Outcome`] per policy and resource, and where they go: policy
//! reports and Kyverno's apply text as the component shapes them
//! ([`policy_report`], WIT `reports`), the test runner's own table and
//! JUnit XML; and the admission results `serve` adds to the same reports
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

use ivpol_runtime::{reports, wit};
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

    /// The status a report's (or a Kyverno Test's) `result` names.
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

    fn to_wit(self) -> reports::ReportStatus {
        match self {
            Status::Pass => reports::ReportStatus::Pass,
            Status::Fail => reports::ReportStatus::Fail,
            Status::Warn => reports::ReportStatus::Warn,
            Status::Error => reports::ReportStatus::Error,
            Status::Skip => reports::ReportStatus::Skip,
        }
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
    /// The outcome of `result` for `subject`; none when the component
    /// worded no report entry for it (an admission answer that goes into
    /// no report).
    pub fn new(subject: Option<Subject>, result: &wit::PolicyResult) -> Option<Outcome> {
        let report = result.report.clone()?;
        let status = match result.status {
            wit::Status::Pass => Status::Pass,
            wit::Status::Fail => Status::Fail,
            wit::Status::Skip => Status::Skip,
            wit::Status::Error => Status::Error,
        };
        Some(Outcome {
            subject,
            policy: result.policy.clone(),
            policy_namespace: result.namespace.clone(),
            rule: report.rule.clone(),
            status,
            message: result.message.clone(),
            why: result
                .verifications
                .iter()
                .map(|x| x.summary.clone())
                .collect(),
            report,
        })
    }
}

impl Outcome {
    /// The outcome as the component's report shapes take it.
    pub(crate) fn to_wit(&self) -> reports::Outcome {
        reports::Outcome {
            resource: self.subject.as_ref().map(Subject::to_wit),
            policy: self.policy.clone(),
            policy_namespace: self.policy_namespace.clone(),
            status: self.status.to_wit(),
            message: self.message.clone(),
            entry: self.report.clone(),
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
        let mut c = Counts::default();
        for status in outcomes.into_iter().map(|o| o.status) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(audit: bool) -> Outcome {
        Outcome {
            subject: None,
            policy: "check".into(),
            policy_namespace: None,
            rule: "check".into(),
            status: Status::Fail,
            message: "the policy's own".into(),
            why: Vec::new(),
            report: wit::ReportEntry {
                audit,
                warn_message: "soon".into(),
                ..test_entry("check", "unsigned")
            },
        }
    }

    /// Whether a policy denies is the component's word (`report.audit`);
    /// `--audit-warn` applies it, with the component's `warn-message`.
    #[test]
    fn audit_warn_makes_only_the_failures_of_audit_policies_warnings() {
        let mut outcomes = [failed(false), failed(true)];
        audit_failures_as_warnings(&mut outcomes);
        assert_eq!(outcomes[0].status, Status::Fail, "a policy that denies");
        assert_eq!(outcomes[0].to_wit().entry.message, "unsigned");
        assert_eq!(outcomes[1].status, Status::Warn);
        let shaped = outcomes[1].to_wit();
        assert_eq!(shaped.status, reports::ReportStatus::Warn);
        assert_eq!(shaped.entry.message, "soon");
        assert_eq!(Counts::of(&outcomes).warn, 1);
    }
}
