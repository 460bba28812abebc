//! One policy's webhook that the API server refuses must not take every
//! other policy's with it. When a configuration is refused whole, its
//! webhooks are applied one more at a time: each one the API server
//! refuses is left out, and the policies it serves are reported in their
//! status (`WebhookConfigured: False` with the API server's reason); the
//! rest are applied. This costs one API call per webhook, and only after
//! a refusal.

use super::kept::{policies_served, Rejected};
use serde_json::Value;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

/// The policies whose webhooks the API server refused, with its reason.
pub(super) type Refused = BTreeMap<Rejected, String>;

/// One apply of a configuration holding some of the webhooks.
pub(super) type Attempt = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;

/// Applies `config` a webhook more at a time with `apply`, leaving out each
/// webhook the API server refuses, and ends with the configuration of all
/// the others applied; `config` is left as it was applied. Returns the
/// policies refused; an error only when even the configuration without any
/// webhook is refused.
pub(super) async fn one_by_one(
    config: &mut Value,
    mut apply: impl FnMut(Value) -> Attempt,
) -> Result<Refused, String> {
    let webhooks = config["webhooks"].as_array().cloned().unwrap_or_default();
    let with = |hooks: &[Value]| {
        let mut c = config.clone();
        c["webhooks"] = Value::Array(hooks.to_vec());
        c
    };
    let mut accepted: Vec<Value> = Vec::new();
    let mut refused = Refused::new();
    for webhook in webhooks {
        let mut candidate = accepted.clone();
        candidate.push(webhook.clone());
        match apply(with(&candidate)).await {
            Ok(()) => accepted = candidate,
            Err(why) => {
                let name = webhook["name"].as_str().unwrap_or_default();
                tracing::error!(webhook = %name, "the API server refused this webhook; the others are applied: {why}");
                for policy in policies_served(&webhook) {
                    refused.insert(policy, why.clone());
                }
            }
        }
    }
    if accepted.is_empty() {
        apply(with(&[])).await?;
    }
    config["webhooks"] = Value::Array(accepted);
    Ok(refused)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::{Arc, Mutex};

    fn hook(name: &str, path: &str) -> Value {
        json!({"name": name, "clientConfig": {"service": {"path": path}}})
    }

    /// An API server that refuses any configuration holding the webhook
    /// named `bad`, and records what it last accepted.
    fn server(applied: Arc<Mutex<Vec<String>>>) -> impl FnMut(Value) -> Attempt {
        move |config: Value| {
            let names: Vec<String> = config["webhooks"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|w| w["name"].as_str().map(String::from))
                .collect();
            let applied = applied.clone();
            Box::pin(async move {
                if names.iter().any(|n| n == "bad") {
                    return Err("Invalid: webhooks[1].name".to_string());
                }
                *applied.lock().expect("lock") = names;
                Ok(())
            })
        }
    }

    #[tokio::test]
    async fn a_refused_webhook_is_left_out_and_its_policy_named() {
        let mut config = json!({"webhooks": [
            hook("good", "/ivpol/validate/a"),
            hook("bad", "/nivpol/validate/b"),
            hook("also-good", "/ivpol/validate/c/d"),
        ]});
        let applied = Arc::new(Mutex::new(Vec::new()));
        let refused = one_by_one(&mut config, server(applied.clone()))
            .await
            .expect("applied");
        assert_eq!(*applied.lock().expect("lock"), ["good", "also-good"]);
        // What the self-healing check compares with is what was applied.
        assert_eq!(config["webhooks"].as_array().map(Vec::len), Some(2));
        let b = Rejected {
            namespaced: true,
            name: "b".into(),
        };
        assert_eq!(refused.keys().collect::<Vec<_>>(), [&b]);
        assert!(refused[&b].contains("Invalid"));
    }
}
