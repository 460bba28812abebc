//! Fail closed across restarts: the webhook entries a rejected policy keeps.
//!
//! A policy that loaded once and was then edited into a broken state keeps
//! enforcing its last good version in the replica that loaded it. A new
//! replica (a rolling update, a new leader) never saw that version, so the
//! configurations it builds would hold no webhook for the policy, and
//! applying them would silently stop sending its requests to ivpol at all.
//! Instead the writer reads the live configurations first and carries over
//! every entry whose path names a policy that is rejected now: its route
//! denies (`Policy <name> error: policy failed to load`), as the README
//! promises, until the policy is fixed or deleted.

use serde_json::Value;
use std::collections::BTreeSet;

/// A policy as a webhook path names it: `/nivpol/...` for a namespaced
/// one, `/ivpol/...` for a cluster one.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Rejected {
    pub namespaced: bool,
    pub name: String,
}

/// Adds to `wanted` (a webhook configuration about to be applied) every
/// webhook of `live` (the same configuration as the API server has it)
/// that serves a `rejected` policy and that `wanted` has no webhook of the
/// same name for. Returns the names kept.
pub(super) fn keep_rejected(
    wanted: &mut Value,
    live: Option<&Value>,
    rejected: &BTreeSet<Rejected>,
) -> Vec<String> {
    let Some(live_hooks) = live.and_then(|l| l["webhooks"].as_array()) else {
        return Vec::new();
    };
    let taken: BTreeSet<String> = wanted["webhooks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|w| w["name"].as_str().map(String::from))
        .collect();
    let kept: Vec<Value> = live_hooks
        .iter()
        .filter(|w| w["name"].as_str().is_some_and(|n| !taken.contains(n)))
        .filter(|w| serves_rejected(w, rejected))
        .cloned()
        .collect();
    let names = kept
        .iter()
        .filter_map(|w| w["name"].as_str().map(String::from))
        .collect();
    if let Some(hooks) = wanted["webhooks"].as_array_mut() {
        hooks.extend(kept);
    } else if !kept.is_empty() {
        wanted["webhooks"] = Value::Array(kept);
    }
    names
}

/// Whether the webhook serves a rejected policy.
fn serves_rejected(webhook: &Value, rejected: &BTreeSet<Rejected>) -> bool {
    policies_served(webhook)
        .iter()
        .any(|p| rejected.contains(p))
}

/// The policies a webhook's path (`/{ivpol,nivpol}/<phase>/<names...>`)
/// names, each with its kind.
pub(super) fn policies_served(webhook: &Value) -> Vec<Rejected> {
    let Some(path) = webhook["clientConfig"]["service"]["path"].as_str() else {
        return Vec::new();
    };
    let mut parts = path.trim_start_matches('/').split('/');
    let namespaced = match parts.next() {
        Some("ivpol") => false,
        Some("nivpol") => true,
        _ => return Vec::new(),
    };
    let _phase = parts.next();
    parts
        .filter(|n| !n.is_empty())
        .map(|name| Rejected {
            namespaced,
            name: name.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hook(name: &str, path: &str) -> Value {
        json!({"name": name, "clientConfig": {"service": {"path": path}}})
    }

    fn rejected(namespaced: bool, name: &str) -> BTreeSet<Rejected> {
        BTreeSet::from([Rejected {
            namespaced,
            name: name.into(),
        }])
    }

    #[test]
    fn a_rejected_policys_live_entry_is_kept_and_nothing_else() {
        let live = json!({"webhooks": [
            hook("v-fail-finegrained-broken", "/ivpol/validate/broken"),
            hook("v-fail-finegrained-gone", "/ivpol/validate/gone"),
            hook("v-fail", "/ivpol/validate/a/broken"),
        ]});
        let mut wanted = json!({"webhooks": [hook("v-fail", "/ivpol/validate/a")]});
        let kept = keep_rejected(&mut wanted, Some(&live), &rejected(false, "broken"));
        assert_eq!(kept, ["v-fail-finegrained-broken"]);
        let names: Vec<&str> = wanted["webhooks"]
            .as_array()
            .expect("webhooks")
            .iter()
            .filter_map(|w| w["name"].as_str())
            .collect();
        // A deleted policy's entry goes; a name the new set uses is the new set's.
        assert_eq!(names, ["v-fail", "v-fail-finegrained-broken"]);
    }

    #[test]
    fn kinds_are_told_apart_and_no_live_object_keeps_nothing() {
        let live = json!({"webhooks": [hook("n", "/nivpol/validate/p")]});
        let mut wanted = json!({"webhooks": []});
        assert!(keep_rejected(&mut wanted, Some(&live), &rejected(false, "p")).is_empty());
        assert_eq!(
            keep_rejected(&mut wanted, Some(&live), &rejected(true, "p")),
            ["n"]
        );
        let mut fresh = json!({"webhooks": []});
        assert!(keep_rejected(&mut fresh, None, &rejected(true, "p")).is_empty());
    }
}
