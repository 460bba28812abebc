//! Policy results and their mapping to an admission verdict (`docs/compatibility.md`).
//!
//! Deny turns fail/error into a denial, Warn into a warning with the same
//! text, Audit only reports. `failurePolicy` does not soften errors here: an
//! error under Deny denies even with `failurePolicy: Ignore`, as in Kyverno.

use ivpol_policy::policy::ReportMeta;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// A policy's outcome for one request, as in Kyverno's reports.
pub enum Status {
    /// Every validation held (or an exception reports a pass).
    Pass,
    /// A validation failed.
    Fail,
    /// A PolicyException excused the request (`reportAs: skip`).
    Skip,
    /// The policy could not be evaluated.
    Error,
}

impl Status {
    /// The name in reports and decision logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Skip => "skip",
            Status::Error => "error",
        }
    }
}

/// At most this many verifications are reported per policy result.
pub const MAX_VERIFICATIONS: usize = 64;

/// How a verification used the host's cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheUse {
    /// A stored full success answered it.
    Hit,
    /// It ran, and its success (if full) was stored.
    Miss,
    /// No key: an attestor's trust material did not evaluate.
    Unkeyed,
}

impl CacheUse {
    /// The name in decision logs and summaries.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheUse::Hit => "hit",
            CacheUse::Miss => "miss",
            CacheUse::Unkeyed => "unkeyed",
        }
    }
}

/// The kind of attestor that verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerifierKind {
    /// A cosign attestor.
    Cosign,
    /// A Notary attestor.
    Notary,
}

/// One attestor's verification of one image, for the decision log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    /// The image as the policy saw it.
    pub image: String,
    /// The manifest digest it resolved to; none when it did not resolve.
    pub digest: Option<String>,
    /// The attestor's name.
    pub attestor: String,
    /// The attestor's kind.
    pub attestor_kind: VerifierKind,
    /// Microseconds the verification took.
    pub micros: u64,
    /// The attestation's name; none for signatures.
    pub attestation: Option<String>,
    /// How the cache answered.
    pub cache: CacheUse,
    /// Why it did not verify; none when it did.
    pub failure: Option<super::failure::Failure>,
    /// One line on what happened: `<image>@<digest> <attestor>: verified
    /// (cache hit)`, or the reason and message of the failure; set by
    /// [`Verification::summarised`]. The audit annotations, the decision
    /// record and `--explain` print it.
    pub summary: String,
}

impl Verification {
    /// This verification with its [`summary`](Self::summary), formatted
    /// once for everything that prints it.
    pub fn summarised(mut self) -> Verification {
        self.summary = self.line();
        self
    }

    fn line(&self) -> String {
        use std::fmt::Write;
        let mut line = String::with_capacity(self.image.len() + 96);
        line.push_str(&self.image);
        // An image given by digest already names it: say it once.
        if let Some(d) = self.digest.as_deref() {
            let named = self
                .image
                .strip_suffix(d)
                .is_some_and(|rest| rest.ends_with('@'));
            if !named {
                line.push('@');
                line.push_str(d);
            }
        }
        line.push(' ');
        line.push_str(&self.attestor);
        if let Some(a) = &self.attestation {
            line.push(' ');
            line.push_str(a);
        }
        // Writing to a String cannot fail.
        match &self.failure {
            None => {
                line.push_str(": verified (cache ");
                line.push_str(self.cache.as_str());
                line.push(')');
            }
            Some(f) => {
                let _ = write!(line, ": {}: {}", f.reason.as_str(), f.message);
            }
        }
        line
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
/// One policy's result for one request.
pub struct PolicyResult {
    /// The policy's name.
    pub policy: String,
    /// Its namespace, for a namespaced policy.
    pub namespace: Option<String>,
    /// Its outcome.
    pub status: Status,
    /// Why it failed or errored (Kyverno's text); empty on a pass.
    pub message: String,
    /// Its `validationActions` (`Deny`, `Warn`, `Audit`).
    pub actions: Vec<String>,
    /// Its audit annotations, key and value.
    pub audit_annotations: Vec<(String, String)>,
    /// The PolicyExceptions that made this a skip (`ns/name` or `name`).
    pub exceptions: Vec<String>,
    /// What each attestor concluded (at most [`MAX_VERIFICATIONS`]).
    pub verifications: Vec<Verification>,
    /// `spec.evaluation.background.enabled`, which names the `process` of
    /// its admission results in reports.
    pub background: bool,
    /// What its report results carry from the policy's metadata.
    pub report: ReportMeta,
}

impl PolicyResult {
    fn has_action(&self, action: &str) -> bool {
        self.actions.iter().any(|a| a == action)
    }

    /// Whether a failure of the policy denies: `Deny` is among its
    /// actions, or it names none (Kyverno's default).
    pub fn denies(&self) -> bool {
        self.actions.is_empty() || self.has_action("Deny")
    }

    /// `Policy <name> failed: <msg>` / `Policy <name> error: <msg>`, or none.
    fn enforcement_text(&self) -> Option<String> {
        match self.status {
            Status::Fail => Some(format!("Policy {} failed: {}", self.policy, self.message)),
            Status::Error => Some(format!("Policy {} error: {}", self.policy, self.message)),
            Status::Pass | Status::Skip => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
/// What the webhook answers for one request.
pub struct Verdict {
    /// Whether the request is admitted.
    pub allowed: bool,
    /// The denial's message, Kyverno's text.
    pub message: Option<String>,
    /// Warnings for the client (`Warn` actions).
    pub warnings: Vec<String>,
    /// The JSON Patch of the mutate phase, if it changes anything.
    pub patch: Option<String>,
    /// Every policy's result, sorted by name.
    pub results: Vec<PolicyResult>,
}

/// Maps results to a verdict. Results are sorted by policy name so that the
/// joined message is deterministic (Kyverno keys them by name in a Go map,
/// whose order is random).
pub fn verdict(mut results: Vec<PolicyResult>, patch: Option<String>) -> Verdict {
    ivpol_refs::sort::sort_by(&mut results, |a, b| {
        (&a.policy, &a.namespace).cmp(&(&b.policy, &b.namespace))
    });
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    for r in &results {
        let Some(text) = r.enforcement_text() else {
            continue;
        };
        if r.has_action("Deny") {
            errors.push(text.clone());
        }
        if r.has_action("Warn") {
            warnings.push(text);
        }
    }
    let allowed = errors.is_empty();
    Verdict {
        allowed,
        message: (!allowed).then(|| errors.join("; ")),
        warnings,
        // A denied request is never mutated.
        patch: if allowed { patch } else { None },
        results,
    }
}

#[cfg(test)]
mod tests {
    use super::super::Failure;
    use super::*;

    fn result(policy: &str, status: Status, actions: &[&str]) -> PolicyResult {
        PolicyResult {
            policy: policy.into(),
            namespace: None,
            status,
            message: "boom".into(),
            actions: actions.iter().map(|a| a.to_string()).collect(),
            audit_annotations: vec![],
            exceptions: vec![],
            verifications: vec![],
            background: true,
            report: Default::default(),
        }
    }

    /// The summary names the digest once, whether the image was given by
    /// tag (the digest it resolved to is added) or by that digest already.
    #[test]
    fn a_summary_names_the_digest_once() {
        let d = format!("sha256:{}", "b".repeat(64));
        let v = |image: String| {
            Verification {
                image,
                digest: Some(d.clone()),
                attestor: "key".into(),
                attestor_kind: VerifierKind::Cosign,
                micros: 0,
                attestation: None,
                cache: CacheUse::Miss,
                failure: None,
                summary: String::new(),
            }
            .summarised()
            .summary
        };
        let want = format!("r.io/app@{d} key: verified (cache miss)");
        assert_eq!(v("r.io/app".into()), want);
        assert_eq!(v(format!("r.io/app@{d}")), want);
    }

    /// An attestation follows the attestor's name; a failure gives its
    /// class and message; a digest that only ends the image's text (no `@`)
    /// is still named.
    #[test]
    fn a_failed_attestation_summary_names_its_reason() {
        let d = format!("sha256:{}", "c".repeat(64));
        let failure = Failure::from("no signatures found".to_string());
        let reason = failure.reason.as_str();
        let summary = Verification {
            image: format!("r.io/app:{d}"),
            digest: Some(d.clone()),
            attestor: "key".into(),
            attestor_kind: VerifierKind::Notary,
            micros: 0,
            attestation: Some("sbom".into()),
            cache: CacheUse::Unkeyed,
            failure: Some(failure),
            summary: String::new(),
        }
        .summarised()
        .summary;
        assert_eq!(
            summary,
            format!("r.io/app:{d}@{d} key sbom: {reason}: no signatures found")
        );
    }

    #[test]
    fn deny_fail_and_error_deny_joined_by_semicolon() {
        let v = verdict(
            vec![
                result("b", Status::Error, &["Deny"]),
                result("a", Status::Fail, &["Deny"]),
            ],
            None,
        );
        assert!(!v.allowed);
        assert_eq!(
            v.message.as_deref(),
            Some("Policy a failed: boom; Policy b error: boom")
        );
        assert!(v.warnings.is_empty());
    }

    #[test]
    fn warn_warns_and_audit_only_reports() {
        let v = verdict(
            vec![
                result("w", Status::Fail, &["Warn"]),
                result("x", Status::Fail, &["Audit"]),
            ],
            None,
        );
        assert!(v.allowed);
        assert_eq!(v.message, None);
        assert_eq!(v.warnings, vec!["Policy w failed: boom".to_string()]);
    }

    #[test]
    fn deny_and_warn_together_do_both() {
        let v = verdict(vec![result("p", Status::Fail, &["Deny", "Warn"])], None);
        assert!(!v.allowed);
        assert_eq!(v.warnings.len(), 1);
    }

    #[test]
    fn pass_and_skip_never_affect_the_response() {
        let v = verdict(
            vec![
                result("p", Status::Pass, &["Deny"]),
                result("s", Status::Skip, &["Deny", "Warn"]),
            ],
            Some("[]".into()),
        );
        assert!(v.allowed);
        assert!(v.warnings.is_empty());
        assert_eq!(v.patch.as_deref(), Some("[]"));
    }
}
