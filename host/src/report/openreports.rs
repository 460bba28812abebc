//! openreports.io/v1alpha1 reports, shaped as Kyverno's CLI prints them
//! (`cmd/cli/kubectl-kyverno/report`): results with `source:
//! KyvernoImageValidatingPolicy`, and a summary of their statuses.
//!
//! Keys come out sorted, as Kyverno's YAML marshaller writes them.

use super::resources::Subject;
use super::{Counts, Outcome};
use serde_json::{json, Map, Value};
use std::time::{SystemTime, UNIX_EPOCH};

pub(crate) const API_VERSION: &str = "openreports.io/v1alpha1";
pub(crate) const SOURCE: &str = "KyvernoImageValidatingPolicy";

/// A report's `results[]` entry for `o`, stamped `seconds`.
pub(crate) fn result(o: &Outcome, seconds: u64) -> Value {
    let mut r = Map::new();
    if !o.message.is_empty() {
        r.insert("message".into(), o.message.clone().into());
    }
    r.insert("policy".into(), o.policy_key().into());
    r.insert("properties".into(), json!(o.properties));
    if let Some(s) = &o.subject {
        let mut subject = Map::new();
        subject.insert("apiVersion".into(), s.api_version.clone().into());
        subject.insert("kind".into(), s.kind.clone().into());
        subject.insert("name".into(), s.name.clone().into());
        if let Some(ns) = &s.namespace {
            subject.insert("namespace".into(), ns.clone().into());
        }
        if let Some(uid) = &s.uid {
            subject.insert("uid".into(), uid.clone().into());
        }
        r.insert("resources".into(), json!([subject]));
    }
    r.insert("result".into(), o.status.as_str().into());
    r.insert("rule".into(), o.rule.clone().into());
    r.insert("scored".into(), true.into());
    r.insert("source".into(), SOURCE.into());
    r.insert("timestamp".into(), json!({"nanos": 0, "seconds": seconds}));
    Value::Object(r)
}

/// A `ClusterReport` (no namespace) or `Report` named `name` over `outcomes`.
pub(crate) fn report(
    name: &str,
    namespace: Option<&str>,
    outcomes: &[&Outcome],
    seconds: u64,
) -> Value {
    let mut metadata = json!({"creationTimestamp": null, "name": name});
    let kind = match namespace {
        Some(ns) => {
            metadata["namespace"] = ns.into();
            "Report"
        }
        None => "ClusterReport",
    };
    let results: Vec<Value> = outcomes.iter().map(|o| result(o, seconds)).collect();
    json!({
        "apiVersion": API_VERSION,
        "kind": kind,
        "metadata": metadata,
        "results": results,
        "summary": Counts::of(outcomes.iter().copied()).to_json(),
    })
}

/// `kyverno apply -p`: one ClusterReport `merged` for the cluster policies'
/// results, then one Report per NamespacedImageValidatingPolicy (named and
/// namespaced like the policy).
pub(crate) fn by_policy(outcomes: &[Outcome], seconds: u64) -> Vec<Value> {
    let mut out = Vec::new();
    let cluster: Vec<&Outcome> = outcomes
        .iter()
        .filter(|o| o.policy_namespace.is_none())
        .collect();
    if !cluster.is_empty() {
        out.push(report("merged", None, &cluster, seconds));
    }
    let mut keys: Vec<(String, String)> = outcomes
        .iter()
        .filter_map(|o| Some((o.policy_namespace.clone()?, o.policy.clone())))
        .collect();
    keys.sort();
    keys.dedup();
    for (ns, name) in keys {
        let own: Vec<&Outcome> = outcomes
            .iter()
            .filter(|o| o.policy_namespace.as_deref() == Some(&ns) && o.policy == name)
            .collect();
        out.push(report(&name, Some(&ns), &own, seconds));
    }
    out
}

/// `ivpol scan`: one Report per namespace of the resources, then one
/// ClusterReport for the cluster-scoped resources, all named `name`.
pub(crate) fn by_resource_namespace(outcomes: &[Outcome], name: &str, seconds: u64) -> Vec<Value> {
    let ns_of = |o: &Outcome| o.subject.as_ref().and_then(|s| s.namespace.clone());
    let mut namespaces: Vec<String> = outcomes.iter().filter_map(ns_of).collect();
    namespaces.sort();
    namespaces.dedup();
    let mut out = Vec::new();
    for ns in &namespaces {
        let own: Vec<&Outcome> = outcomes
            .iter()
            .filter(|o| ns_of(o).as_deref() == Some(ns.as_str()))
            .collect();
        out.push(report(name, Some(ns), &own, seconds));
    }
    let cluster: Vec<&Outcome> = outcomes.iter().filter(|o| ns_of(o).is_none()).collect();
    if !cluster.is_empty() {
        out.push(report(name, None, &cluster, seconds));
    }
    out
}

/// The label Kyverno puts on every report it writes, and the value its
/// chainsaw asserts (`report/background/report.yaml`) require.
pub(crate) const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "kyverno");

/// `ivpol scan --kubernetes`: the Report about one namespaced resource, as
/// Kyverno's report aggregation writes it (`NewPolicyReport` and
/// `SetOwner` in `pkg/utils/report` and `pkg/utils/controller`): named
/// after the resource's UID in its namespace, owned by the resource (so it
/// goes when the resource does), `scope` naming it, the managed-by label
/// only, and results without `resources` (the scope says whose they are),
/// sorted by policy and rule. None for a resource without UID or
/// namespace, or without results (Kyverno deletes such a report).
pub(crate) fn for_resource(
    subject: &Subject,
    outcomes: &[&Outcome],
    seconds: u64,
) -> Option<Value> {
    let uid = subject.uid.as_deref()?;
    let namespace = subject.namespace.as_deref()?;
    if outcomes.is_empty() {
        return None;
    }
    let mut sorted: Vec<&Outcome> = outcomes.to_vec();
    sorted.sort_by_key(|o| (o.policy_key(), o.rule.clone()));
    let results: Vec<Value> = sorted
        .iter()
        .map(|o| {
            let mut r = result(o, seconds);
            if let Some(r) = r.as_object_mut() {
                r.remove("resources");
            }
            r
        })
        .collect();
    let (label, value) = MANAGED_BY;
    Some(json!({
        "apiVersion": API_VERSION,
        "kind": "Report",
        "metadata": {
            "name": uid,
            "namespace": namespace,
            "labels": {label: value},
            "ownerReferences": [{
                "apiVersion": subject.api_version,
                "kind": subject.kind,
                "name": subject.name,
                "uid": uid,
            }],
        },
        "scope": {
            "apiVersion": subject.api_version,
            "kind": subject.kind,
            "name": subject.name,
            "namespace": namespace,
            "uid": uid,
        },
        "results": results,
        "summary": Counts::of(sorted.iter().copied()).to_json(),
    }))
}

/// Seconds since the epoch, for `timestamp.seconds`.
pub(crate) fn now_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Reports as YAML documents (`---` between them), or as JSON, one per line.
pub(crate) fn render(reports: &[Value], json: bool) -> String {
    let mut out = String::new();
    for (i, r) in reports.iter().enumerate() {
        if json {
            out.push_str(&r.to_string());
            out.push('\n');
            continue;
        }
        if i > 0 {
            out.push_str("---\n");
        }
        out.push_str(&serde_yaml_ng::to_string(r).unwrap_or_default());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Status;

    fn outcome(subject: &Subject, policy: &str, status: Status) -> Outcome {
        Outcome {
            subject: Some(subject.clone()),
            policy: policy.into(),
            policy_namespace: None,
            rule: policy.into(),
            status,
            message: String::new(),
            properties: Default::default(),
            actions: crate::runtime::wit::Actions::empty(),
            why: Vec::new(),
        }
    }

    #[test]
    fn a_resources_report_is_named_by_uid_owned_by_it_and_sorted() {
        let subject = Subject {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: "web".into(),
            namespace: Some("team".into()),
            uid: Some("1234".into()),
        };
        let (b, a) = (
            outcome(&subject, "b", Status::Fail),
            outcome(&subject, "a", Status::Pass),
        );
        let report = for_resource(&subject, &[&b, &a], 7).expect("a report");
        assert_eq!(report["kind"], "Report");
        assert_eq!(report["metadata"]["name"], "1234");
        assert_eq!(report["metadata"]["namespace"], "team");
        assert_eq!(
            report["metadata"]["ownerReferences"],
            json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "1234"}])
        );
        assert_eq!(report["scope"]["namespace"], "team");
        assert_eq!(report["results"][0]["policy"], "a");
        assert_eq!(report["results"][1]["policy"], "b");
        assert!(report["results"][0].get("resources").is_none());
        assert_eq!(report["summary"]["fail"], 1);
        assert_eq!(report["summary"]["pass"], 1);
        // Nothing to report, or nothing to name it by: no report.
        assert!(for_resource(&subject, &[], 7).is_none());
        let no_uid = Subject {
            uid: None,
            ..subject.clone()
        };
        assert!(for_resource(&no_uid, &[&a], 7).is_none());
    }
}
