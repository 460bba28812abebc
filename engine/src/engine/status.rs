//! A cluster policy's `status.conditionStatus` as Kyverno sets it, which
//! the host's elected writer applies: `PolicyLoaded` (ivpol's own: false
//! with the diagnostic when the document did not load, or when a reload
//! rejected this version and the last good one still enforces),
//! `WebhookConfigured` when webhooks are registered, and
//! `RBACPermissionsGranted`; `ready` when every condition holds. The
//! wording is Kyverno's, so it lives here with every other decision.

use super::PolicySet;
use serde_json::{json, Value};

/// What the status of one policy depends on beyond the policy set.
pub struct StatusQuery {
    /// The policy's name.
    pub name: String,
    /// Its namespace (a NamespacedImageValidatingPolicy); none for a
    /// cluster policy.
    pub namespace: Option<String>,
    /// Why a reload rejected this version while the last good one still
    /// enforces; none when it is not stale.
    pub stale: Option<String>,
    /// The policy's webhook: none when webhooks are not registered, else
    /// whether it is configured (the error says why not).
    pub webhook: Option<Result<(), String>>,
}

impl PolicySet {
    /// The `conditionStatus` (JSON) of each queried policy, each
    /// condition's `lastTransitionTime` being `now` (RFC 3339).
    pub fn status_conditions(&self, queries: &[StatusQuery], now: &str) -> Vec<String> {
        (queries.iter())
            .map(|q| self.condition_status(q, now).to_string())
            .collect()
    }

    fn condition_status(&self, q: &StatusQuery, now: &str) -> Value {
        let condition = |kind: &str, ok: bool, message: &str| {
            json!({
                "type": kind,
                "status": if ok { "True" } else { "False" },
                "reason": if ok { "Succeeded" } else { "Failed" },
                "message": message,
                "lastTransitionTime": now,
            })
        };
        let rejected =
            (self.rejected.iter()).find(|r| r.name == q.name && r.namespace == q.namespace);
        let loaded = match (rejected, &q.stale) {
            (Some(r), _) => Err(format!("policy failed to load: {}", r.message)),
            (None, Some(why)) => Err(format!(
                "this version was rejected, the last good version still enforces: {why}"
            )),
            (None, None) => Ok(()),
        };
        let mut conditions = vec![condition(
            "PolicyLoaded",
            loaded.is_ok(),
            loaded
                .as_ref()
                .err()
                .map_or("Policy loaded.", String::as_str),
        )];
        if let Some(webhook) = &q.webhook {
            let message = webhook
                .as_ref()
                .err()
                .map_or("Webhook configured.", String::as_str);
            conditions.push(condition("WebhookConfigured", webhook.is_ok(), message));
        }
        conditions.push(condition(
            "RBACPermissionsGranted",
            true,
            "Policy is ready for reporting.",
        ));
        let ready = loaded.is_ok() && q.webhook.as_ref().is_none_or(Result::is_ok);
        json!({"conditions": conditions, "ready": ready})
    }
}
