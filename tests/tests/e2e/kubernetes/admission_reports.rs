//! `ivpol serve --admission-reports`: the results of admission requests no
//! matching policy denies reach each resource's PolicyReport, from every
//! replica, written by the elected leader alone, merged with what the
//! report already holds, as Kyverno's admission reports and reports
//! controller do.

use super::writers::holder;
use super::{cluster, deny_unless, serve, SOON};
use ivpol_tests::kube_api::KubeApi;
use ivpol_tests::review::{pod, review};
use ivpol_tests::Server;
use serde_json::{json, Value};
use std::time::Duration;

const REPORTS: &str = "wgpolicyk8s.io/v1alpha2";

/// A Pod CREATE in `team` for the Pod `name` with `uid`.
fn pod_with_uid(name: &str, uid: &str, dry_run: bool) -> Value {
    let mut object = pod(name, &["ghcr.io/a/b:1"]);
    object["metadata"]["namespace"] = json!("team");
    object["metadata"]["uid"] = json!(uid);
    let mut r = review("CREATE", "team", &object);
    r["request"]["dryRun"] = json!(dry_run);
    r
}

fn report(api: &KubeApi, uid: &str) -> Option<Value> {
    api.get(
        REPORTS,
        "PolicyReport",
        Some("team"),
        &format!("ivpol-{uid}"),
    )
}

/// `(policy, result, message)` of each result of `report`.
fn results(report: &Value) -> Vec<(String, String, String)> {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    (report["results"].as_array().cloned().unwrap_or_default())
        .iter()
        .map(|r| (text(&r["policy"]), text(&r["result"]), text(&r["message"])))
        .collect()
}

fn triple(policy: &str, result: &str, message: &str) -> (String, String, String) {
    (policy.into(), result.into(), message.into())
}

fn written(s: &Server) -> bool {
    s.metrics_text()
        .lines()
        .any(|l| l.starts_with("ivpol_admission_report_results_total{result=\"written\"}"))
}

#[test]
fn every_replicas_audit_results_reach_the_reports_the_leader_writes() {
    let api = cluster();
    let audit = "  validationActions: [Audit]\n";
    api.apply(deny_unless("audited", "false", audit))
        .expect("policy");
    let mut fine = deny_unless("fine", "true", audit);
    fine["metadata"]["annotations"] = json!({"policies.kyverno.io/category": "Supply Chain"});
    api.apply(fine).expect("policy");
    // A report the background scan wrote already: its results stay.
    let scanned = json!({"apiVersion": REPORTS, "kind": "PolicyReport",
        "metadata": {"name": "ivpol-uid-a", "namespace": "team",
            "labels": {"app.kubernetes.io/managed-by": "ivpol"}},
        "scope": {"apiVersion": "v1", "kind": "Pod", "name": "a", "namespace": "team", "uid": "uid-a"},
        "results": [{"policy": "scanned", "rule": "scanned", "result": "pass", "source": "KyvernoImageValidatingPolicy",
            "timestamp": {"nanos": 0, "seconds": 1}}],
        "summary": {"pass": 1}});
    api.create(scanned).expect("a scan's report");
    let (leader, _a) = serve(&api, &["--admission-reports"]);
    assert!(
        leader.eventually(SOON * 2, |_| holder(&api).is_some()),
        "no Lease holder"
    );
    let (follower, _b) = serve(&api, &["--admission-reports"]);
    // Audit only: both admit, and each collects its own request's results.
    for (s, name, uid) in [(&leader, "a", "uid-a"), (&follower, "b", "uid-b")] {
        let r = s.review("/ivpol/validate", &pod_with_uid(name, uid, false));
        assert_eq!(r["allowed"], true, "{r}");
    }
    // A dry run is never reported.
    let r = follower.review("/ivpol/validate", &pod_with_uid("c", "uid-c", true));
    assert_eq!(r["allowed"], true, "{r}");
    assert!(
        leader.eventually(Duration::from_secs(30), |_| report(&api, "uid-b").is_some()
            && report(&api, "uid-a").is_some_and(|r| results(&r).len() == 3)),
        "the reports were not written: {:?} {:?}\n{}",
        report(&api, "uid-a"),
        report(&api, "uid-b"),
        leader.log()
    );
    let a = report(&api, "uid-a").expect("a");
    assert_eq!(
        results(&a),
        [
            triple("audited", "fail", "audited says no"),
            triple("fine", "pass", "success"),
            triple("scanned", "pass", ""),
        ]
    );
    assert_eq!(
        a["summary"],
        json!({"error": 0, "fail": 1, "pass": 2, "skip": 0, "warn": 0})
    );
    let b = report(&api, "uid-b").expect("b");
    assert_eq!(b["scope"]["uid"], "uid-b");
    assert_eq!(b["scope"]["name"], "b");
    assert_eq!(b["metadata"]["ownerReferences"][0]["uid"], "uid-b");
    assert_eq!(
        b["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "ivpol"
    );
    let fine = &b["results"][1];
    assert_eq!(fine["policy"], "fine");
    assert_eq!(fine["category"], "Supply Chain");
    assert_eq!(fine["properties"]["process"], "background scan");
    assert_eq!(fine["source"], "KyvernoImageValidatingPolicy");
    assert!(report(&api, "uid-c").is_none(), "a dry run was reported");
    // The leader merged and deleted what the replicas handed over; the
    // follower wrote no report.
    assert!(
        leader.eventually(SOON * 2, |_| api
            .list(
                "reports.ivpol.dev/v1alpha1",
                "AdmissionResults",
                Some("ivpol")
            )
            .is_empty()),
        "AdmissionResults were left behind"
    );
    assert!(written(&leader), "{}", leader.metrics_text());
    assert!(!written(&follower), "{}", follower.metrics_text());
    // Every request it made is one deploy/ grants serve's account.
    use ivpol_tests::rbac::{allows, attributes, deploy_manifests};
    let manifests = deploy_manifests();
    for r in api.requests() {
        let Some(at) = attributes(&r) else { continue };
        assert!(
            allows(&manifests, "ivpol", "ivpol", &at),
            "deploy/ RBAC refuses {} {} ({at:?})",
            r.method,
            r.path
        );
    }
}

#[test]
fn a_request_a_deny_policy_judged_is_not_reported() {
    let api = cluster();
    api.apply(deny_unless(
        "audited",
        "false",
        "  validationActions: [Audit]\n",
    ))
    .expect("policy");
    api.apply(deny_unless("enforced", "true", ""))
        .expect("policy");
    let (s, _dir) = serve(&api, &["--admission-reports"]);
    let r = s.review("/ivpol/validate", &pod_with_uid("d", "uid-d", false));
    assert_eq!(r["allowed"], true, "{r}");
    // Results are collected as the request is answered: none were.
    let metrics = s.metrics_text();
    assert!(
        !metrics.contains("ivpol_admission_report_results_total{result=\"collected\"}"),
        "{metrics}"
    );
    // Audit alone, the same request is collected.
    api.delete(
        "policies.kyverno.io/v1",
        "ImageValidatingPolicy",
        None,
        "enforced",
    )
    .expect("deleted");
    assert!(
        s.eventually(SOON * 4, |s| {
            s.review("/ivpol/validate", &pod_with_uid("d", "uid-d", false));
            s.metrics_text()
                .contains("ivpol_admission_report_results_total{result=\"collected\"}")
        }),
        "never collected once no policy denies"
    );
}
