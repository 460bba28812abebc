//! A cluster policy's `status.conditionStatus`, as Kyverno sets it and
//! the host's writer applies it.

use super::*;
use ivpol_engine::engine::status::StatusQuery;

fn query(name: &str) -> StatusQuery {
    StatusQuery {
        name: name.into(),
        namespace: None,
        stale: None,
        webhook: None,
    }
}

fn conditions(set: &PolicySet, q: StatusQuery) -> Value {
    let out = set.status_conditions(&[q], "2026-12-05T00:00:00Z");
    serde_json::from_str(&out[0]).expect("JSON")
}

/// `(type, status, message)` of each condition.
fn summary(status: &Value) -> Vec<(String, String, String)> {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    (status["conditions"].as_array().cloned().unwrap_or_default())
        .iter()
        .map(|c| (text(&c["type"]), text(&c["status"]), text(&c["message"])))
        .collect()
}

fn row(kind: &str, status: &str, message: &str) -> (String, String, String) {
    (kind.into(), status.into(), message.into())
}

#[test]
fn loaded_rejected_stale_and_webhook_conditions_are_kyvernos() {
    let set = PolicySet::load(&[
        SourceDocument {
            source: "broken.yaml".into(),
            content: simple("broken", "validations:\n  - expression: \"object.(\"\n"),
        },
        SourceDocument {
            source: "good.yaml".into(),
            content: with_actions("good", "[Deny]"),
        },
    ]);
    let good = conditions(&set, query("good"));
    assert_eq!(good["ready"], true);
    assert_eq!(
        summary(&good),
        [
            row("PolicyLoaded", "True", "Policy loaded."),
            row(
                "RBACPermissionsGranted",
                "True",
                "Policy is ready for reporting."
            )
        ]
    );
    assert_eq!(good["conditions"][0]["reason"], "Succeeded");
    assert_eq!(
        good["conditions"][0]["lastTransitionTime"],
        "2026-12-05T00:00:00Z"
    );
    let broken = conditions(&set, query("broken"));
    assert_eq!(broken["ready"], false);
    let loaded = &broken["conditions"][0];
    assert_eq!(
        (loaded["status"].as_str(), loaded["reason"].as_str()),
        (Some("False"), Some("Failed"))
    );
    let message = loaded["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("policy failed to load: spec.validations[0].expression"),
        "{message}"
    );
    let stale = conditions(
        &set,
        StatusQuery {
            stale: Some("spec: bad".into()),
            ..query("good")
        },
    );
    assert_eq!(
        summary(&stale)[0],
        row(
            "PolicyLoaded",
            "False",
            "this version was rejected, the last good version still enforces: spec: bad"
        )
    );
    let refused = conditions(
        &set,
        StatusQuery {
            webhook: Some(Err("the API server refused its webhook: x".into())),
            ..query("good")
        },
    );
    assert_eq!(refused["ready"], false);
    assert_eq!(
        summary(&refused)[1],
        row(
            "WebhookConfigured",
            "False",
            "the API server refused its webhook: x"
        )
    );
    let configured = conditions(
        &set,
        StatusQuery {
            webhook: Some(Ok(())),
            ..query("good")
        },
    );
    assert_eq!(configured["ready"], true);
    assert_eq!(
        summary(&configured)[1],
        row("WebhookConfigured", "True", "Webhook configured.")
    );
}
