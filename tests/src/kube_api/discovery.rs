//! Legacy (unaggregated) discovery: `/version`, `/api`, `/apis`,
//! `/apis/{group}`, `/api/v1` and `/apis/{group}/{version}`, made from the
//! served types, so `kube::Discovery::run` and `discovery::pinned_kind` work.

use super::resources::{ResourceType, Resources};
use serde_json::{json, Value};

/// The verbs served on an object type (no `deletecollection` here).
const VERBS: [&str; 7] = [
    "create", "delete", "get", "list", "patch", "update", "watch",
];
const STATUS_VERBS: [&str; 3] = ["get", "patch", "update"];

/// The discovery document at `path`, if it is one; `host` names the server.
pub(crate) fn document(resources: &Resources, path: &str, host: &str) -> Option<Value> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    match segs.as_slice() {
        ["version"] => Some(version()),
        ["api"] => Some(json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}],
        })),
        ["apis"] => Some(json!({
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": groups(resources),
        })),
        ["apis", group] => groups(resources)
            .into_iter()
            .find(|g| g["name"] == *group)
            .map(|mut g| {
                g["kind"] = json!("APIGroup");
                g["apiVersion"] = json!("v1");
                g
            }),
        ["api", "v1"] => Some(resource_list(resources, "", "v1")),
        ["apis", group, version] => {
            let served = resources
                .all()
                .iter()
                .any(|t| t.group == *group && t.served(version).is_some());
            served.then(|| resource_list(resources, group, version))
        }
        _ => None,
    }
}

fn version() -> Value {
    json!({
        "major": "1",
        "minor": "35",
        "gitVersion": "v1.35.0-ivpol-fake",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "none",
        "compiler": "none",
        "platform": "linux/amd64",
    })
}

/// Kubernetes version priority: GA before beta before alpha, higher
/// numbers first, anything else last (by name).
fn priority(version: &str) -> (u8, u64, u64) {
    let parse = |rest: &str| -> Option<(u8, u64, u64)> {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let major: u64 = rest[..digits].parse().ok()?;
        match &rest[digits..] {
            "" => Some((3, major, 0)),
            tail => {
                let (tier, n) = if let Some(n) = tail.strip_prefix("beta") {
                    (2, n)
                } else {
                    (1, tail.strip_prefix("alpha")?)
                };
                Some((tier, major, n.parse().ok()?))
            }
        }
    };
    version
        .strip_prefix('v')
        .and_then(parse)
        .unwrap_or((0, 0, 0))
}

/// Every non-core group with its served versions, preferred first.
fn groups(resources: &Resources) -> Vec<Value> {
    let mut names: Vec<&str> = Vec::new();
    for t in resources.all().iter().filter(|t| !t.group.is_empty()) {
        if !names.contains(&t.group.as_str()) {
            names.push(&t.group);
        }
    }
    names
        .into_iter()
        .filter_map(|name| {
            let mut versions: Vec<&str> = resources
                .all()
                .iter()
                .filter(|t| t.group == name)
                .flat_map(|t| t.versions.iter().map(|v| v.name.as_str()))
                .collect();
            versions.sort_by(|a, b| priority(b).cmp(&priority(a)).then(a.cmp(b)));
            versions.dedup();
            let entry = |v: &str| json!({"groupVersion": format!("{name}/{v}"), "version": v});
            let preferred = entry(versions.first()?);
            Some(json!({
                "name": name,
                "versions": versions.iter().map(|v| entry(v)).collect::<Vec<_>>(),
                "preferredVersion": preferred,
            }))
        })
        .collect()
}

/// The APIResourceList of one group version, `/status` entries included.
fn resource_list(resources: &Resources, group: &str, version: &str) -> Value {
    let entries: Vec<Value> = resources
        .all()
        .iter()
        .filter(|t| t.group == group && t.served(version).is_some())
        .flat_map(|t| entries(t, version))
        .collect();
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": entries,
    })
}

fn entries(t: &ResourceType, version: &str) -> Vec<Value> {
    let mut out = vec![json!({
        "name": t.plural,
        "singularName": t.kind.to_lowercase(),
        "namespaced": t.namespaced,
        "kind": t.kind,
        "verbs": VERBS,
    })];
    if t.has_status(version) {
        out.push(json!({
            "name": format!("{}/status", t.plural),
            "singularName": "",
            "namespaced": t.namespaced,
            "kind": t.kind,
            "verbs": STATUS_VERBS,
        }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::priority;

    #[test]
    fn version_priority() {
        let mut v = vec!["v1alpha1", "v1", "v2beta1", "v1beta2", "foo", "v2"];
        v.sort_by_key(|x| std::cmp::Reverse(priority(x)));
        assert_eq!(v, ["v2", "v1", "v2beta1", "v1beta2", "v1alpha1", "foo"]);
    }
}
