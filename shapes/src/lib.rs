//! Kyverno's shapes of results: what a policy report's `results[]` entry,
//! a PolicyReport or Report, the admission results handed to the reports,
//! and `kyverno apply`'s text say about the results a runner collected.
//!
//! The component exports these (WIT `reports`), so that the host prints
//! and writes results without wording any: it collects the results the
//! engine judged ([`Outcome`]), stamps the time, and writes what comes
//! back as it is. Everything here is a pure function of its inputs.
//!
//! `ivpol-shapes` imports nothing of ivpol's: no policy, no engine, no
//! WIT. The component's glue converts the WIT records into these types.

// Public items are the ones the component's glue uses.
#![warn(unreachable_pub)]

pub mod report;
pub mod text;

/// A result's status, as a policy report says it: the engine's four, and
/// `warn` for a failure the runner reports as a warning (`--audit-warn`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Pass,
    Fail,
    Warn,
    Error,
    Skip,
}

impl Status {
    /// The name a report's `result` field holds.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Warn => "warn",
            Status::Error => "error",
            Status::Skip => "skip",
        }
    }

    fn parse(s: &str) -> Option<Status> {
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

/// Who a result is about, as a report's `resources[]` entry names it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Subject {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    /// None for cluster-scoped kinds.
    pub namespace: Option<String>,
    pub uid: Option<String>,
}

impl Subject {
    /// `ns/Kind/name` as `kyverno apply` prints it (`/Kind/name` when
    /// cluster-scoped).
    pub fn path(&self) -> String {
        let ns = self.namespace.as_deref().unwrap_or("");
        format!("{ns}/{}/{}", self.kind, self.name)
    }
}

/// A result as the engine worded it for a report (WIT `report-entry`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Entry {
    /// `<namespace>/<name>` for a namespaced policy.
    pub policy: String,
    /// The policy's name, or `exception`.
    pub rule: String,
    /// The message for the result's status (already the warning's for a
    /// failure reported as a warning).
    pub message: String,
    /// Sorted by key.
    pub properties: Vec<(String, String)>,
    pub category: Option<String>,
    pub severity: Option<String>,
    pub scored: bool,
}

/// One policy's result about one subject (none: a JSON payload).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub subject: Option<Subject>,
    /// The policy's `metadata.name`.
    pub policy: String,
    /// The policy's namespace (NamespacedImageValidatingPolicy only).
    pub policy_namespace: Option<String>,
    pub status: Status,
    /// The policy's own message, as Kyverno's CLI prints it.
    pub message: String,
    pub entry: Entry,
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
    /// The counts of `statuses`.
    pub fn of(statuses: impl IntoIterator<Item = Status>) -> Counts {
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

    /// The counts of report results (their `result` field).
    fn of_results(results: &[serde_json::Value]) -> Counts {
        Counts::of((results.iter()).filter_map(|r| Status::parse(r["result"].as_str()?)))
    }

    /// A report's `summary`.
    pub fn to_json(self) -> serde_json::Value {
        // Serialised in Kyverno's (sorted) key order.
        serde_json::json!({
            "error": self.error, "fail": self.fail, "pass": self.pass,
            "skip": self.skip, "warn": self.warn,
        })
    }
}

#[cfg(test)]
pub(crate) mod fixture {
    use super::*;

    /// An outcome of `policy` about `subject` with `status`, worded as the
    /// engine words a background scan's.
    pub(crate) fn outcome(subject: Option<&Subject>, policy: &str, status: Status) -> Outcome {
        Outcome {
            subject: subject.cloned(),
            policy: policy.into(),
            policy_namespace: None,
            status,
            message: String::new(),
            entry: Entry {
                policy: policy.into(),
                rule: policy.into(),
                message: String::new(),
                properties: vec![("process".into(), "background scan".into())],
                category: None,
                severity: None,
                scored: true,
            },
        }
    }
}
