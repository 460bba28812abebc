//! A policy result as a policy report's result says it, worded here as
//! Kyverno's `ToPolicyReportResult` (`pkg/utils/report`) words it, so that
//! the host writes reports (for `apply -p`, `scan` and the admission
//! reports) from these entries without reading a policy or choosing a
//! message itself.

use super::results::PolicyResult;
use ivpol_policy::policy::ReportMeta;
use std::collections::BTreeMap;

/// `properties.process` of a result judged outside admission (`apply`,
/// `test`, `scan`), and of an admission result of a policy with background
/// evaluation on (Kyverno's `selectProcess`).
pub const BACKGROUND_SCAN: &str = "background scan";
/// `properties.process` of an admission result of a policy with background
/// evaluation off.
pub const ADMISSION_REVIEW: &str = "admission review";

/// Where a result was judged, which decides its `process` property.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Process {
    /// Outside admission: `apply`, `test`, `scan`.
    Background,
    /// An admission request.
    Admission,
}

/// A result as a report's `results[]` entry says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportEntry {
    /// `policy`: `<namespace>/<name>` for a namespaced policy.
    pub policy: String,
    /// `rule`: the policy's name, or `exception` when exceptions skipped it.
    pub rule: String,
    /// `message`, for the result's own status.
    pub message: String,
    /// `message` when a failure is reported as a warning (`--audit-warn`).
    pub warn_message: String,
    /// `properties`: the audit annotations, `process`, and the exceptions'
    /// names (`exceptions`, comma-separated) when any; sorted by key.
    pub properties: Vec<(String, String)>,
    /// `category`, `severity` and `scored`, and whether admission results
    /// are reported at all.
    pub meta: ReportMeta,
    /// The policy does not deny (no `Deny` among its actions): what
    /// Kyverno's CLI calls an audit policy, whose failures `--audit-warn`
    /// reports as warnings.
    pub audit: bool,
}

/// The report entry of `r`, judged where `process` says.
pub fn entry(r: &PolicyResult, process: Process) -> ReportEntry {
    let mut properties: BTreeMap<String, String> =
        ivpol_refs::sort::map(r.audit_annotations.iter().cloned());
    let process = match (process, r.background) {
        (Process::Admission, false) => ADMISSION_REVIEW,
        _ => BACKGROUND_SCAN,
    };
    properties.insert("process".into(), process.into());
    let rule = match r.exceptions.is_empty() {
        true => r.policy.clone(),
        false => {
            // Kyverno lists the exceptions' names, without namespace.
            let names: Vec<&str> = (r.exceptions.iter())
                .map(|e| e.rsplit('/').next().unwrap_or(e))
                .collect();
            properties.insert("exceptions".into(), names.join(","));
            "exception".into()
        }
    };
    let policy = match &r.namespace {
        Some(ns) => format!("{ns}/{}", r.policy),
        None => r.policy.clone(),
    };
    ReportEntry {
        policy,
        rule,
        message: message(r, &properties, r.status.as_str()),
        warn_message: message(r, &properties, "warn"),
        properties: properties.into_iter().collect(),
        meta: r.report.clone(),
        audit: !r.denies(),
    }
}

/// A result's message for `status`: the policy's own, unless its audit
/// annotations (which Kyverno reports as the result's properties) give one
/// for that status (`passMessage`, `failMessage`, `warnMessage`,
/// `errorMessage`, `skipMessage`) or, winning over those, `message`.
fn message(r: &PolicyResult, properties: &BTreeMap<String, String>, status: &str) -> String {
    let for_status = format!("{status}Message");
    ["message", for_status.as_str()]
        .iter()
        .filter_map(|key| properties.get(*key))
        .find(|m| !m.is_empty())
        .unwrap_or(&r.message)
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::results::Status;

    fn result(status: Status) -> PolicyResult {
        PolicyResult {
            policy: "p".into(),
            namespace: None,
            status,
            message: "the policy's own".into(),
            actions: vec!["Deny".into()],
            audit_annotations: vec![],
            exceptions: vec![],
            verifications: vec![],
            background: true,
            report: ReportMeta::default(),
        }
    }

    #[test]
    fn an_entry_names_the_policy_rule_and_process() {
        let mut r = result(Status::Pass);
        let e = entry(&r, Process::Background);
        assert_eq!((e.policy.as_str(), e.rule.as_str()), ("p", "p"));
        assert_eq!(e.properties, [("process".into(), BACKGROUND_SCAN.into())]);
        assert!(!e.audit);
        r.namespace = Some("team".into());
        r.actions = vec!["Audit".into()];
        r.background = false;
        let e = entry(&r, Process::Admission);
        assert_eq!(e.policy, "team/p");
        assert_eq!(e.properties, [("process".into(), ADMISSION_REVIEW.into())]);
        assert!(e.audit);
        assert_eq!(
            entry(&r, Process::Background).properties,
            [("process".into(), BACKGROUND_SCAN.into())],
            "outside admission every result is a background scan's"
        );
    }

    #[test]
    fn exceptions_make_the_rule_exception_and_are_listed_by_name() {
        let mut r = result(Status::Skip);
        r.exceptions = vec!["team/allow".into(), "other".into()];
        let e = entry(&r, Process::Background);
        assert_eq!(e.rule, "exception");
        assert!(e
            .properties
            .contains(&("exceptions".into(), "allow,other".into())));
    }

    #[test]
    fn the_audit_annotations_word_the_message_for_each_status() {
        let mut r = result(Status::Fail);
        r.audit_annotations = vec![
            ("failMessage".into(), "failed, see the runbook".into()),
            ("warnMessage".into(), "a warning".into()),
            ("passMessage".into(), "fine".into()),
        ];
        let e = entry(&r, Process::Background);
        assert_eq!(e.message, "failed, see the runbook");
        assert_eq!(e.warn_message, "a warning");
        r.status = Status::Error;
        assert_eq!(entry(&r, Process::Background).message, "the policy's own");
        r.audit_annotations
            .push(("message".into(), "always this".into()));
        let e = entry(&r, Process::Background);
        assert_eq!(
            (e.message.as_str(), e.warn_message.as_str()),
            ("always this", "always this")
        );
    }
}
