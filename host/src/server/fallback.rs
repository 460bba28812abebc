//! The answer when the component gives none: a trap, a deadline, no free
//! instance. ivpol fails closed: every policy the route reaches gets an
//! `error` result naming the cause, mapped exactly as the component maps
//! one (Deny denies, Warn warns, Audit only reports), and every rejected
//! policy in scope denies as it always does. Never a 500, which the API
//! server would turn into an admission under `failurePolicy: Ignore`.

use crate::runtime::{wit, Reach, Summary};

/// The verdict of every policy in reach erroring with `cause`.
pub(super) fn verdict(summary: &Summary, reach: &Reach<'_>, cause: &str) -> wit::Verdict {
    let message = format!("internal error: {cause}");
    let mut results: Vec<wit::PolicyResult> = summary
        .policies
        .iter()
        .filter(|p| reach.reaches(&p.name, p.namespace.as_deref()))
        .map(|p| error_result(&p.name, p.namespace.clone(), p.actions, message.clone()))
        .collect();
    results.extend(
        summary
            .rejected
            .iter()
            .filter(|r| reach.reaches(&r.name, r.namespace.as_deref()))
            .map(|r| {
                let message = format!("policy failed to load: {}", r.message);
                error_result(&r.name, r.namespace.clone(), wit::Actions::DENY, message)
            }),
    );
    results.sort_by(|a, b| (&a.policy, &a.namespace).cmp(&(&b.policy, &b.namespace)));
    let text = |r: &wit::PolicyResult| format!("Policy {} error: {}", r.policy, r.message);
    let errors: Vec<String> = results
        .iter()
        .filter(|r| r.actions.contains(wit::Actions::DENY))
        .map(text)
        .collect();
    let warnings = results
        .iter()
        .filter(|r| r.actions.contains(wit::Actions::WARN))
        .map(text)
        .collect();
    wit::Verdict {
        allowed: errors.is_empty(),
        message: (!errors.is_empty()).then(|| errors.join("; ")),
        warnings,
        patch: None,
        results,
    }
}

fn error_result(
    name: &str,
    namespace: Option<String>,
    actions: wit::Actions,
    message: String,
) -> wit::PolicyResult {
    wit::PolicyResult {
        policy: name.to_string(),
        namespace,
        status: wit::Status::Error,
        message,
        actions,
        audit_annotations: vec![],
        exceptions: vec![],
        verifications: vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(name: &str, namespace: Option<&str>, actions: wit::Actions) -> wit::PolicyInfo {
        wit::PolicyInfo {
            name: name.into(),
            namespace: namespace.map(String::from),
            kind: match namespace {
                None => wit::PolicyKind::ImageValidatingPolicy,
                Some(_) => wit::PolicyKind::NamespacedImageValidatingPolicy,
            },
            timeout_seconds: 10,
            fail_closed: false,
            actions,
            registry_secrets: vec![],
            kms_keys: vec![],
        }
    }

    fn summary() -> Summary {
        Summary {
            policies: vec![
                policy("deny", None, wit::Actions::DENY),
                policy("warn", None, wit::Actions::WARN),
                policy("audit", None, wit::Actions::AUDIT),
                policy("team", Some("a"), wit::Actions::DENY),
            ],
            diagnostics: vec![],
            rejected: vec![wit::RejectedPolicy {
                name: "broken".into(),
                namespace: None,
                kind: wit::PolicyKind::ImageValidatingPolicy,
                message: "spec: bad".into(),
            }],
        }
    }

    #[test]
    fn every_policy_in_reach_errors_as_its_actions_say() {
        let all = Reach {
            namespace: None,
            names: &[],
        };
        let v = verdict(&summary(), &all, "boom");
        assert!(!v.allowed);
        assert_eq!(
            v.message.as_deref(),
            Some("Policy broken error: policy failed to load: spec: bad; Policy deny error: internal error: boom")
        );
        assert_eq!(v.warnings, vec!["Policy warn error: internal error: boom"]);
        let audited: Vec<&str> = v.results.iter().map(|r| r.policy.as_str()).collect();
        assert_eq!(audited, ["audit", "broken", "deny", "warn"]);
        assert!(v
            .results
            .iter()
            .all(|r| matches!(r.status, wit::Status::Error)));
    }

    #[test]
    fn names_and_namespaces_narrow_the_reach() {
        let names = ["warn".to_string()];
        let named = Reach {
            namespace: None,
            names: &names,
        };
        let v = verdict(&summary(), &named, "boom");
        assert!(v.allowed, "a Warn policy only warns");
        assert_eq!(v.warnings.len(), 1);
        let team = Reach {
            namespace: Some("a"),
            names: &[],
        };
        let v = verdict(&summary(), &team, "boom");
        assert_eq!(
            v.message.as_deref(),
            Some("Policy team error: internal error: boom")
        );
        let other = Reach {
            namespace: Some("b"),
            names: &[],
        };
        assert!(verdict(&summary(), &other, "boom").allowed);
    }
}
