//! Policy reports in either API Kyverno writes: `wgpolicyk8s.io/v1alpha2`
//! PolicyReport and ClusterPolicyReport (its reports controller's default)
//! or `openreports.io/v1alpha1` Report and ClusterReport (its CLI's, and its
//! controller's with `--openreportsEnabled`). The two hold the same fields:
//! results with `source: KyvernoImageValidatingPolicy`, and a summary of
//! their statuses.
//!
//! Keys come out sorted, as Kyverno's YAML marshaller writes them.

use super::resources::Subject;
use super::{Counts, Outcome};
use serde_json::{json, Map, Value};
use std::time::{SystemTime, UNIX_EPOCH};

pub(crate) const SOURCE: &str = "KyvernoImageValidatingPolicy";

/// Which API reports are written in (`--report-api`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportApi {
    /// `wgpolicyk8s.io/v1alpha2` PolicyReport and ClusterPolicyReport:
    /// what Kyverno writes by default and Policy Reporter reads.
    #[default]
    Wgpolicyk8s,
    /// `openreports.io/v1alpha1` Report and ClusterReport.
    Openreports,
}

impl ReportApi {
    pub(crate) fn api_version(self) -> &'static str {
        match self {
            ReportApi::Wgpolicyk8s => "wgpolicyk8s.io/v1alpha2",
            ReportApi::Openreports => "openreports.io/v1alpha1",
        }
    }

    /// The kind of a namespaced report, or of a cluster-wide one.
    pub(crate) fn kind(self, namespaced: bool) -> &'static str {
        match (self, namespaced) {
            (ReportApi::Wgpolicyk8s, true) => "PolicyReport",
            (ReportApi::Wgpolicyk8s, false) => "ClusterPolicyReport",
            (ReportApi::Openreports, true) => "Report",
            (ReportApi::Openreports, false) => "ClusterReport",
        }
    }

    /// The namespaced kind's resource name (the plural).
    pub fn plural(self) -> &'static str {
        match self {
            ReportApi::Wgpolicyk8s => "policyreports",
            ReportApi::Openreports => "reports",
        }
    }
}

/// How `scan --kubernetes` names and labels the reports it writes.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    pub api: ReportApi,
    /// Kyverno's own names (the resource's UID) and its
    /// `app.kubernetes.io/managed-by: kyverno` label, as Kyverno's chainsaw
    /// asserts require; otherwise `ivpol-<uid>` and `managed-by: ivpol`, so
    /// that ivpol's reports and Kyverno's live side by side.
    pub kyverno_names: bool,
}

/// The label every report ivpol writes carries.
pub(crate) const MANAGED_BY: &str = "app.kubernetes.io/managed-by";

impl Style {
    /// The name of the report about the resource with `uid`.
    pub fn name_for(self, uid: &str) -> String {
        match self.kyverno_names {
            true => uid.to_string(),
            false => format!("ivpol-{uid}"),
        }
    }

    /// The value of [`MANAGED_BY`].
    pub(crate) fn managed_by(self) -> &'static str {
        match self.kyverno_names {
            true => "kyverno",
            false => "ivpol",
        }
    }
}

/// A report's `results[]` entry for `o`, stamped `seconds`.
pub fn result(o: &Outcome, seconds: u64) -> Value {
    let e = &o.report;
    let mut r = Map::new();
    if let Some(category) = &e.category {
        r.insert("category".into(), category.clone().into());
    }
    if !e.message.is_empty() {
        r.insert("message".into(), e.message.clone().into());
    }
    r.insert("policy".into(), e.policy.clone().into());
    let properties: Map<String, Value> = (e.properties.iter())
        .map(|(k, v)| (k.clone(), v.clone().into()))
        .collect();
    r.insert("properties".into(), Value::Object(properties));
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
    r.insert("scored".into(), e.scored.into());
    if let Some(severity) = &e.severity {
        r.insert("severity".into(), severity.clone().into());
    }
    r.insert("source".into(), SOURCE.into());
    r.insert("timestamp".into(), json!({"nanos": 0, "seconds": seconds}));
    Value::Object(r)
}

/// A cluster-wide (no namespace) or namespaced report of `api` named
/// `name` over `outcomes`.
pub(crate) fn report(
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
    let kind = api.kind(namespace.is_some());
    let results: Vec<Value> = outcomes.iter().map(|o| result(o, seconds)).collect();
    json!({
        "apiVersion": api.api_version(),
        "kind": kind,
        "metadata": metadata,
        "results": results,
        "summary": Counts::of(outcomes.iter().copied()).to_json(),
    })
}

/// `kyverno apply -p`: one ClusterReport `merged` for the cluster policies'
/// results, then one Report per NamespacedImageValidatingPolicy (named and
/// namespaced like the policy).
pub fn by_policy(outcomes: &[Outcome], seconds: u64) -> Vec<Value> {
    let mut out = Vec::new();
    let cluster: Vec<&Outcome> = outcomes
        .iter()
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
        out.push(report(
            ReportApi::Openreports,
            &name,
            Some(&ns),
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
    namespaces.sort();
    namespaces.dedup();
    let mut out = Vec::new();
    for ns in &namespaces {
        let own: Vec<&Outcome> = outcomes
            .iter()
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

/// `ivpol scan --kubernetes`: the report about one namespaced resource, as
/// Kyverno's report aggregation writes it (`NewPolicyReport` and
/// `SetOwner` in `pkg/utils/report` and `pkg/utils/controller`): named
/// after the resource's UID ([`Style::name_for`]) in its namespace, owned
/// by the resource (so it goes when the resource does), `scope` naming it,
/// the managed-by label only, and results without `resources` (the scope
/// says whose they are), sorted by policy and rule. None for a resource
/// without UID or namespace, or without results (Kyverno deletes such a
/// report).
pub fn for_resource(
    style: Style,
    subject: &Subject,
    outcomes: &[&Outcome],
    seconds: u64,
) -> Option<Value> {
    resource_report(style, subject, resource_results(outcomes, seconds))
}

/// The results of a resource's report for `outcomes`: without `resources`
/// (the report's `scope` says whose they are).
pub(crate) fn resource_results(outcomes: &[&Outcome], seconds: u64) -> Vec<Value> {
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

/// The report about `subject` holding `results` (as
/// [`resource_results`] makes them), sorted by policy and rule, with their
/// summary; see [`for_resource`].
pub(crate) fn resource_report(
    style: Style,
    subject: &Subject,
    mut results: Vec<Value>,
) -> Option<Value> {
    let uid = subject.uid.as_deref()?;
    let namespace = subject.namespace.as_deref()?;
    if results.is_empty() {
        return None;
    }
    let key = |r: &Value| (r["policy"].to_string(), r["rule"].to_string());
    results.sort_by_key(key);
    let summary = Counts::of_results(&results).to_json();
    Some(json!({
        "apiVersion": style.api.api_version(),
        "kind": style.api.kind(true),
        "metadata": {
            "name": style.name_for(uid),
            "namespace": namespace,
            "labels": {MANAGED_BY: style.managed_by()},
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
        "summary": summary,
    }))
}

/// Seconds since the epoch, for `timestamp.seconds`.
pub fn now_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Reports as YAML documents (`---` between them), or as JSON, one per line.
pub fn render(reports: &[Value], json: bool) -> String {
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
    use crate::Status;

    fn outcome(subject: &Subject, policy: &str, status: Status) -> Outcome {
        Outcome {
            subject: Some(subject.clone()),
            policy: policy.into(),
            policy_namespace: None,
            rule: policy.into(),
            status,
            message: String::new(),
            why: Vec::new(),
            report: crate::test_entry(policy, ""),
        }
    }

    /// The component words the entry (`engine::report`); the host writes
    /// it as it is, in Kyverno's sorted key order.
    #[test]
    fn a_result_is_the_components_entry_in_kyvernos_shape() {
        let subject = Subject {
            api_version: "v1".into(),
            kind: "Pod".into(),
            name: "p".into(),
            namespace: Some("team".into()),
            uid: None,
        };
        let mut o = outcome(&subject, "check", Status::Fail);
        o.message = "the policy's own".into();
        o.report.policy = "team/check".into();
        o.report.message = "unsigned, see the runbook".into();
        o.report.category = Some("Supply chain".into());
        o.report.severity = Some("high".into());
        o.report.scored = false;
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
        let mut audit = o.clone();
        audit.report.audit = true;
        audit.report.warn_message = "soon".into();
        let mut outcomes = [o, audit];
        crate::audit_failures_as_warnings(&mut outcomes);
        assert_eq!(outcomes[0].status, Status::Fail, "a policy that denies");
        assert_eq!(outcomes[1].status, Status::Warn);
        assert_eq!(result(&outcomes[1], 7)["message"], "soon");
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
        let kyverno = Style {
            api: ReportApi::Wgpolicyk8s,
            kyverno_names: true,
        };
        let report = for_resource(kyverno, &subject, &[&b, &a], 7).expect("a report");
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
        assert!(for_resource(kyverno, &subject, &[], 7).is_none());
        let no_uid = Subject {
            uid: None,
            ..subject.clone()
        };
        assert!(for_resource(kyverno, &no_uid, &[&a], 7).is_none());
        // ivpol's own names and label, in openreports' API: beside Kyverno.
        let own = Style {
            api: ReportApi::Openreports,
            kyverno_names: false,
        };
        let report = for_resource(own, &subject, &[&a], 7).expect("a report");
        assert_eq!(report["apiVersion"], "openreports.io/v1alpha1");
        assert_eq!(report["kind"], "Report");
        assert_eq!(report["metadata"]["name"], "ivpol-1234");
        assert_eq!(
            report["metadata"]["labels"],
            json!({"app.kubernetes.io/managed-by": "ivpol"})
        );
    }
}
