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
pub mod policy_meta;
pub mod policy_report;
pub mod resources;
pub mod table;
pub mod text;

use ivpol_runtime::wit;
use resources::Subject;
use std::collections::BTreeMap;

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

/// `properties.process` of a result.
pub const BACKGROUND_SCAN: &str = "background scan";

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
    pub message: String,
    /// Audit annotations, `process` and `exceptions`.
    pub properties: BTreeMap<String, String>,
    /// The policy's `spec.validationActions`.
    pub actions: wit::Actions,
    /// What each verification concluded, one line each (`--explain`).
    pub why: Vec<String>,
    /// The policy's report annotations (category, severity, scored).
    pub meta: policy_meta::PolicyMeta,
}

impl Outcome {
    /// The outcome of `result` for `subject`.
    pub fn new(subject: Option<Subject>, result: &wit::PolicyResult, process: &str) -> Outcome {
        let status = match result.status {
            wit::Status::Pass => Status::Pass,
            wit::Status::Fail => Status::Fail,
            wit::Status::Skip => Status::Skip,
            wit::Status::Error => Status::Error,
        };
        let mut properties: BTreeMap<String, String> =
            result.audit_annotations.iter().cloned().collect();
        properties.insert("process".into(), process.into());
        let rule = match result.exceptions.is_empty() {
            true => result.policy.clone(),
            false => {
                // Kyverno lists the exceptions' names, without namespace.
                let names: Vec<&str> = result
                    .exceptions
                    .iter()
                    .map(|e| e.rsplit('/').next().unwrap_or(e))
                    .collect();
                properties.insert("exceptions".into(), names.join(","));
                "exception".into()
            }
        };
        Outcome {
            subject,
            policy: result.policy.clone(),
            policy_namespace: result.namespace.clone(),
            rule,
            status,
            message: result.message.clone(),
            properties,
            actions: result.actions,
            why: result
                .verifications
                .iter()
                .map(|x| x.summary.clone())
                .collect(),
            meta: Default::default(),
        }
    }

    /// Whether the policy denies when it fails: `Deny` is among its
    /// validationActions (the default). A policy that does not is what
    /// Kyverno's CLI calls an audit policy.
    pub(crate) fn denies(&self) -> bool {
        self.actions.denies()
    }

    /// `namespace/name` for namespaced policies, as a report's `policy`.
    pub(crate) fn policy_key(&self) -> String {
        match &self.policy_namespace {
            Some(ns) => format!("{ns}/{}", self.policy),
            None => self.policy.clone(),
        }
    }
}

/// `--audit-warn`, as `kyverno apply --audit-warn`: the failures of
/// policies that do not deny become warnings. Errors stay errors.
pub fn audit_failures_as_warnings(outcomes: &mut [Outcome]) {
    for o in outcomes.iter_mut() {
        if o.status == Status::Fail && !o.denies() {
            o.status = Status::Warn;
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
