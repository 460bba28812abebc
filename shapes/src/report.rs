//! Policy reports in either API Kyverno writes: `wgpolicyk8s.io/v1alpha2`
//! PolicyReport and ClusterPolicyReport (its reports controller's default)
//! or `openreports.io/v1alpha1` Report and ClusterReport (its CLI's, and its
//! controller's with `--openreportsEnabled`). The two hold the same fields:
//! results with `source: KyvernoImageValidatingPolicy`, and a summary of
//! their statuses.
//!
//! Keys come out sorted, as Kyverno's YAML marshaller writes them.

use super::{Counts, Outcome, Subject};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// Every result's `source`.
const SOURCE: &str = "KyvernoImageValidatingPolicy";

/// The label every report ivpol writes carries.
const MANAGED_BY: &str = "app.kubernetes.io/managed-by";

/// Which API reports are written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportApi {
    /// `wgpolicyk8s.io/v1alpha2` PolicyReport and ClusterPolicyReport.
    Wgpolicyk8s,
    /// `openreports.io/v1alpha1` Report and ClusterReport.
    Openreports,
}

impl ReportApi {
    fn api_version(self) -> &'static str {
        match self {
            ReportApi::Wgpolicyk8s => "wgpolicyk8s.io/v1alpha2",
            ReportApi::Openreports => "openreports.io/v1alpha1",
        }
    }

    /// The kind of a namespaced report, or of a cluster-wide one.
    fn kind(self, namespaced: bool) -> &'static str {
        match (self, namespaced) {
            (ReportApi::Wgpolicyk8s, true) => "PolicyReport",
            (ReportApi::Wgpolicyk8s, false) => "ClusterPolicyReport",
            (ReportApi::Openreports, true) => "Report",
            (ReportApi::Openreports, false) => "ClusterReport",
        }
    }
}

/// Where the report about a resource goes, as the runner addresses it:
/// its API and kind, its name, and the value of its
/// `app.kubernetes.io/managed-by` label (the runner finds its reports by
/// these).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub managed_by: String,
}

/// A report's `results[]` entry for `o`, stamped `seconds`, naming its
/// subject in `resources` when it has one.
pub fn result(o: &Outcome, seconds: u64) -> Value {
    let e = &o.entry;
    let mut r = Map::new();
    if let Some(category) = &e.category {
        r.insert("category".into(), category.clone().into());
    }
    if !e.message.is_empty() {
        r.insert("message".into(), e.message.clone().into());
    }
    r.insert("policy".into(), e.policy.clone().into());
    // Inserted one at a time: `collect()` would sort them first, with a sort
    // of its own (`ivpol_refs::sort`).
    let mut properties = Map::new();
    properties.extend((e.properties.iter()).map(|(k, v)| (k.clone(), v.clone().into())));
    r.insert("properties".into(), Value::Object(properties));
    if let Some(s) = &o.subject {
        r.insert("resources".into(), json!([resource(s)]));
    }
    r.insert("result".into(), o.status.as_str().into());
    r.insert("rule".into(), e.rule.clone().into());
    r.insert("scored".into(), e.scored.into());
    if let Some(severity) = &e.severity {
        r.insert("severity".into(), severity.clone().into());
    }
    r.insert("source".into(), SOURCE.into());
    r.insert("timestamp".into(), json!({"nanos": 0, "seconds": seconds}));
    Value::Object(r)
}

/// `resources[]`'s entry for `s`: what it has of apiVersion, kind, name,
/// namespace and uid.
fn resource(s: &Subject) -> Value {
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
    Value::Object(subject)
}

/// `kyverno apply -o json|yaml`: `{results, summary}`.
pub fn results_and_summary(outcomes: &[Outcome], seconds: u64) -> Value {
    let results: Vec<Value> = outcomes.iter().map(|o| result(o, seconds)).collect();
    let summary = Counts::of(outcomes.iter().map(|o| o.status)).to_json();
    json!({"results": results, "summary": summary})
}

/// A cluster-wide (no namespace) or namespaced report of `api` named
/// `name` over `outcomes`.
fn report(
    api: ReportApi,
    name: &str,
    namespace: Option<&str>,
    outcomes: &[&Outcome],
    seconds: u64,
) -> Value {
    let mut metadata = json!({"creationTimestamp": null, "name": name});
    if let Some(ns) = namespace {
        metadata["namespace"] = ns.into();
    }
    let results: Vec<Value> = outcomes.iter().map(|o| result(o, seconds)).collect();
    json!({
        "apiVersion": api.api_version(),
        "kind": api.kind(namespace.is_some()),
        "metadata": metadata,
        "results": results,
        "summary": Counts::of(outcomes.iter().map(|o| o.status)).to_json(),
    })
}

/// `kyverno apply -p`: one ClusterReport `merged` for the cluster policies'
/// results, then one Report per NamespacedImageValidatingPolicy (named and
/// namespaced like the policy).
pub fn by_policy(outcomes: &[Outcome], seconds: u64) -> Vec<Value> {
    let mut out = Vec::new();
    let cluster: Vec<&Outcome> = (outcomes.iter())
        .filter(|o| o.policy_namespace.is_none())
        .collect();
    if !cluster.is_empty() {
        out.push(report(
            ReportApi::Openreports,
            "merged",
            None,
            &cluster,
            seconds,
        ));
    }
    let mut keys: Vec<(&str, &str)> = (outcomes.iter())
        .filter_map(|o| Some((o.policy_namespace.as_deref()?, o.policy.as_str())))
        .collect();
    ivpol_refs::sort::sort(&mut keys);
    keys.dedup();
    for (ns, name) in keys {
        let own: Vec<&Outcome> = (outcomes.iter())
            .filter(|o| o.policy_namespace.as_deref() == Some(ns) && o.policy == name)
            .collect();
        out.push(report(
            ReportApi::Openreports,
            name,
            Some(ns),
            &own,
            seconds,
        ));
    }
    out
}

/// `ivpol scan`: one report of `api` per namespace of the resources, then
/// one cluster-wide report for the cluster-scoped resources, all named
/// `name`.
pub fn by_resource_namespace(
    api: ReportApi,
    outcomes: &[Outcome],
    name: &str,
    seconds: u64,
) -> Vec<Value> {
    let ns_of = |o: &Outcome| o.subject.as_ref().and_then(|s| s.namespace.clone());
    let mut namespaces: Vec<String> = outcomes.iter().filter_map(ns_of).collect();
    ivpol_refs::sort::sort(&mut namespaces);
    namespaces.dedup();
    let mut out = Vec::new();
    for ns in &namespaces {
        let own: Vec<&Outcome> = (outcomes.iter())
            .filter(|o| ns_of(o).as_deref() == Some(ns.as_str()))
            .collect();
        out.push(report(api, name, Some(ns), &own, seconds));
    }
    let cluster: Vec<&Outcome> = outcomes.iter().filter(|o| ns_of(o).is_none()).collect();
    if !cluster.is_empty() {
        out.push(report(api, name, None, &cluster, seconds));
    }
    out
}

/// The results of a resource's report for `outcomes`: without `resources`
/// (the report's `scope` says whose they are).
pub fn resource_results(outcomes: &[Outcome], seconds: u64) -> Vec<Value> {
    outcomes
        .iter()
        .map(|o| {
            let mut r = result(o, seconds);
            if let Some(r) = r.as_object_mut() {
                r.remove("resources");
            }
            r
        })
        .collect()
}

/// The admission results about each subject, one `{scope, results}` entry
/// per subject in the order they first appear, results as its report holds
/// them, stamped `seconds`. Outcomes without a subject are left out.
pub fn admission_entries(outcomes: &[Outcome], seconds: u64) -> Vec<Value> {
    let mut subjects: Vec<&Subject> = Vec::new();
    for s in outcomes.iter().filter_map(|o| o.subject.as_ref()) {
        if !subjects.contains(&s) {
            subjects.push(s);
        }
    }
    subjects
        .into_iter()
        .map(|s| {
            let own: Vec<Outcome> = (outcomes.iter())
                .filter(|o| o.subject.as_ref() == Some(s))
                .cloned()
                .collect();
            json!({"scope": scope(s), "results": resource_results(&own, seconds)})
        })
        .collect()
}

fn scope(s: &Subject) -> Value {
    json!({
        "apiVersion": s.api_version,
        "kind": s.kind,
        "name": s.name,
        "namespace": s.namespace,
        "uid": s.uid,
    })
}

/// `older` with `newer` merged in, as Kyverno's aggregation keeps the
/// newest: a result of the same policy and rule is replaced, unless it is
/// the newer of the two by its timestamp.
pub fn merged(older: Vec<Value>, newer: Vec<Value>) -> Vec<Value> {
    let key = |r: &Value| (r["policy"].to_string(), r["rule"].to_string());
    let seconds = |r: &Value| r["timestamp"]["seconds"].as_u64().unwrap_or(0);
    let mut by_key: BTreeMap<(String, String), Value> =
        ivpol_refs::sort::map(older.into_iter().map(|r| (key(&r), r)));
    for r in newer {
        match by_key.get(&key(&r)) {
            Some(kept) if seconds(kept) > seconds(&r) => {}
            _ => {
                by_key.insert(key(&r), r);
            }
        }
    }
    by_key.into_values().collect()
}

/// The report about one namespaced resource, as Kyverno's report
/// aggregation writes it (`NewPolicyReport` and `SetOwner` in
/// `pkg/utils/report` and `pkg/utils/controller`): placed as the runner
/// says ([`Placement`]) in the resource's namespace, owned by the resource (so
/// it goes when the resource does), `scope` naming it, the managed-by label
/// only, and `results` (as [`resource_results`] makes them) sorted by policy
/// and rule, with their summary. None for a resource without UID or
/// namespace, or without results (Kyverno deletes such a report).
pub fn resource_report(
    place: &Placement,
    subject: &Subject,
    mut results: Vec<Value>,
) -> Option<Value> {
    let uid = subject.uid.as_deref()?;
    let namespace = subject.namespace.as_deref()?;
    if results.is_empty() {
        return None;
    }
    let key = |r: &Value| (r["policy"].to_string(), r["rule"].to_string());
    ivpol_refs::sort::sort_by_key(&mut results, key);
    let summary = Counts::of_results(&results).to_json();
    Some(json!({
        "apiVersion": place.api_version,
        "kind": place.kind,
        "metadata": {
            "name": place.name,
            "namespace": namespace,
            "labels": {MANAGED_BY: place.managed_by},
            "ownerReferences": [{
                "apiVersion": subject.api_version,
                "kind": subject.kind,
                "name": subject.name,
                "uid": uid,
            }],
        },
        "scope": scope(subject),
        "results": results,
        "summary": summary,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::outcome;
    use crate::Status;

    /// The engine words the entry; the shape writes it as it is, in
    /// Kyverno's sorted key order.
    #[test]
    fn a_result_is_the_engines_entry_in_kyvernos_shape() {
        let subject = Subject {
            api_version: "v1".into(),
            kind: "Pod".into(),
            name: "p".into(),
            namespace: Some("team".into()),
            uid: None,
        };
        let mut o = outcome(Some(&subject), "check", Status::Fail);
        o.message = "the policy's own".into();
        o.entry.policy = "team/check".into();
        o.entry.message = "unsigned, see the runbook".into();
        o.entry.category = Some("Supply chain".into());
        o.entry.severity = Some("high".into());
        o.entry.scored = false;
        assert_eq!(
            result(&o, 7),
            json!({
                "category": "Supply chain",
                "message": "unsigned, see the runbook",
                "policy": "team/check",
                "properties": {"process": "background scan"},
                "resources": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "namespace": "team"}],
                "result": "fail",
                "rule": "check",
                "scored": false,
                "severity": "high",
                "source": "KyvernoImageValidatingPolicy",
                "timestamp": {"nanos": 0, "seconds": 7},
            })
        );
        // An empty message is left out, and a payload has no resources.
        let payload = outcome(None, "json", Status::Pass);
        let r = result(&payload, 7);
        assert!(r.get("message").is_none() && r.get("resources").is_none());
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
            outcome(Some(&subject), "b", Status::Fail),
            outcome(Some(&subject), "a", Status::Pass),
        );
        let place = |api_version: &str, kind: &str, name: &str, managed_by: &str| Placement {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
            managed_by: managed_by.into(),
        };
        let kyverno = &place("wgpolicyk8s.io/v1alpha2", "PolicyReport", "1234", "kyverno");
        let for_resource = |place, subject: &Subject, outcomes: &[Outcome]| {
            resource_report(place, subject, resource_results(outcomes, 7))
        };
        let both = [b.clone(), a.clone()];
        let report = for_resource(kyverno, &subject, &both).expect("a report");
        assert_eq!(report["apiVersion"], "wgpolicyk8s.io/v1alpha2");
        assert_eq!(report["kind"], "PolicyReport");
        assert_eq!(report["metadata"]["name"], "1234");
        assert_eq!(
            report["metadata"]["labels"],
            json!({"app.kubernetes.io/managed-by": "kyverno"})
        );
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
        assert!(for_resource(kyverno, &subject, &[]).is_none());
        let no_uid = Subject {
            uid: None,
            ..subject.clone()
        };
        assert!(for_resource(kyverno, &no_uid, std::slice::from_ref(&a)).is_none());
        // ivpol's own names and label, in openreports' API: beside Kyverno.
        let own = &place("openreports.io/v1alpha1", "Report", "ivpol-1234", "ivpol");
        let report = for_resource(own, &subject, &[a]).expect("a report");
        assert_eq!(report["apiVersion"], "openreports.io/v1alpha1");
        assert_eq!(report["kind"], "Report");
        assert_eq!(report["metadata"]["name"], "ivpol-1234");
        assert_eq!(
            report["metadata"]["labels"],
            json!({"app.kubernetes.io/managed-by": "ivpol"})
        );
    }

    fn stamped(policy: &str, status: &str, seconds: u64) -> Value {
        json!({"policy": policy, "rule": policy, "result": status,
            "timestamp": {"nanos": 0, "seconds": seconds}})
    }

    #[test]
    fn the_newest_result_of_a_policy_and_rule_wins() {
        let older = vec![stamped("a", "fail", 10), stamped("b", "pass", 10)];
        let newer = vec![stamped("a", "pass", 20), stamped("c", "fail", 20)];
        let m = merged(older.clone(), newer);
        let statuses: Vec<(&str, &str)> = m
            .iter()
            .map(|r| (r["policy"].as_str().unwrap(), r["result"].as_str().unwrap()))
            .collect();
        assert_eq!(statuses, [("a", "pass"), ("b", "pass"), ("c", "fail")]);
        // An older result arriving late does not replace a newer one.
        let late = merged(older, vec![stamped("a", "pass", 5)]);
        assert_eq!(late[0]["result"], "fail");
    }

    #[test]
    fn admission_entries_group_results_by_subject() {
        let subject = |uid: &str| Subject {
            api_version: "v1".into(),
            kind: "Pod".into(),
            name: "p".into(),
            namespace: Some("team".into()),
            uid: Some(uid.into()),
        };
        let (one, two) = (subject("u1"), subject("u2"));
        let outcomes = [
            outcome(Some(&one), "a", Status::Fail),
            outcome(Some(&two), "a", Status::Pass),
            outcome(Some(&one), "b", Status::Pass),
            outcome(None, "payload", Status::Pass),
        ];
        let entries = admission_entries(&outcomes, 7);
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0]["scope"]["uid"], "u1");
        assert_eq!(entries[0]["results"].as_array().map(Vec::len), Some(2));
        assert!(entries[0]["results"][0].get("resources").is_none());
        assert_eq!(entries[1]["scope"]["uid"], "u2");
        assert_eq!(
            entries[0]["results"][0]["properties"]["process"],
            "background scan"
        );
    }

    #[test]
    fn apply_reports_by_policy_and_scan_reports_by_namespace() {
        let pod = |ns: Option<&str>| Subject {
            api_version: "v1".into(),
            kind: "Pod".into(),
            name: "p".into(),
            namespace: ns.map(String::from),
            uid: None,
        };
        let mut namespaced = outcome(Some(&pod(Some("team"))), "own", Status::Fail);
        namespaced.policy_namespace = Some("team".into());
        let outcomes = [
            outcome(Some(&pod(Some("a"))), "c", Status::Pass),
            namespaced,
            outcome(Some(&pod(None)), "c", Status::Skip),
        ];
        let reports = by_policy(&outcomes, 7);
        let names: Vec<(&str, &str)> = (reports.iter())
            .map(|r| {
                (
                    r["kind"].as_str().unwrap(),
                    r["metadata"]["name"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(names, [("ClusterReport", "merged"), ("Report", "own")]);
        assert_eq!(reports[0]["summary"]["skip"], 1);
        let reports = by_resource_namespace(ReportApi::Wgpolicyk8s, &outcomes, "scan", 7);
        let kinds: Vec<(&str, &Value)> = (reports.iter())
            .map(|r| (r["kind"].as_str().unwrap(), &r["metadata"]["namespace"]))
            .collect();
        assert_eq!(
            kinds,
            [
                ("PolicyReport", &json!("a")),
                ("PolicyReport", &json!("team")),
                ("ClusterPolicyReport", &Value::Null)
            ]
        );
        let both = results_and_summary(&outcomes, 7);
        assert_eq!(
            both["summary"],
            json!({"error": 0, "fail": 1, "pass": 1, "skip": 1, "warn": 0})
        );
    }
}
