//! Self-healing webhooks: the leader checks every few seconds that the
//! configurations it applied are still there as it applied them, and
//! applies them again when one was deleted or edited by someone else (a
//! forgotten break-glass, another controller under the same name), so that
//! enforcement never silently stops while policy status still says ready.
//!
//! Break glass: while ivpol's own Namespace carries the annotation
//! [`BREAK_GLASS`] = `"true"`, the leader writes no webhook configuration
//! and restores none, so an operator can delete or edit them during an
//! outage; removing the annotation restores them.

use super::Cluster;
use kube::Client;
use serde_json::Value;

/// The annotation on ivpol's Namespace that stops webhook writes.
pub const BREAK_GLASS: &str = "ivpol.io/break-glass";

/// Whether an operator has broken the glass (see the module comment).
pub(super) fn glass_broken(cluster: &Cluster) -> bool {
    cluster
        .namespace_object(&cluster.own_namespace)
        .and_then(|ns| serde_json::from_str::<Value>(&ns).ok())
        .is_some_and(|ns| ns["metadata"]["annotations"][BREAK_GLASS] == "true")
}

/// What a webhook is for the check: its name, path and failure policy.
fn shape(config: &Value) -> Vec<(String, String, String)> {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let mut out: Vec<(String, String, String)> = config["webhooks"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|w| {
            (
                text(&w["name"]),
                text(&w["clientConfig"]["service"]["path"]),
                text(&w["failurePolicy"]),
            )
        })
        .collect();
    out.sort();
    out
}

/// The first of the `applied` configurations that is gone from the
/// cluster or no longer holds the webhooks it was applied with, by name;
/// none when all are as applied (or the check itself fails, which is no
/// evidence of drift).
pub(super) async fn drifted(client: &Client, applied: &[Value]) -> Option<String> {
    for config in applied {
        let kind = config["kind"].as_str().unwrap_or_default();
        let name = config["metadata"]["name"].as_str().unwrap_or_default();
        let api = super::webhook_configurations(client, kind);
        match api.get_opt(name).await {
            Ok(None) => return Some(format!("{kind} {name} was deleted")),
            Ok(Some(live)) if shape(&live.data) != shape(config) => {
                return Some(format!("{kind} {name} was edited"))
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::shape;
    use serde_json::json;

    #[test]
    fn an_edit_of_a_webhook_changes_its_shape_and_order_does_not() {
        let hook = |n: &str, f: &str| json!({"name": n, "failurePolicy": f, "clientConfig": {"service": {"path": format!("/ivpol/validate/{n}")}}});
        let applied = json!({"webhooks": [hook("a", "Fail"), hook("b", "Fail")]});
        let reordered = json!({"webhooks": [hook("b", "Fail"), hook("a", "Fail")]});
        let loosened = json!({"webhooks": [hook("a", "Ignore"), hook("b", "Fail")]});
        let emptied = json!({"webhooks": []});
        assert_eq!(shape(&applied), shape(&reordered));
        assert_ne!(shape(&applied), shape(&loosened));
        assert_ne!(shape(&applied), shape(&emptied));
    }
}
