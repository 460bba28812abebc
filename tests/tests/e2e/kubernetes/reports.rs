//! `ivpol scan --kubernetes` against the test API server: policies and
//! resources from the cluster, one wgpolicyk8s.io PolicyReport (or with
//! `--report-api openreports`, openreports.io Report) per resource written
//! back with server-side apply, in the shape Kyverno's chainsaw report
//! asserts check.

use super::{cluster, deny_unless, yaml};
use ivpol_tests::cli::{ivpol_in, Run};
use ivpol_tests::kube_api::KubeApi;
use ivpol_tests::kyverno::KyvernoImages;
use serde_json::{json, Value};

/// What scan writes by default, as Kyverno's reports controller does.
const REPORT: &str = "wgpolicyk8s.io/v1alpha2";
const KIND: &str = "PolicyReport";

/// `ivpol scan --kubeconfig K -o json <extra>` against `api`.
fn scan(api: &KubeApi, extra: &[&str]) -> Run {
    let dir = tempfile::tempdir().expect("dir");
    let kubeconfig = api.write_kubeconfig(dir.path()).display().to_string();
    let mut args = vec!["scan", "--kubeconfig", &kubeconfig, "-o", "json"];
    args.extend(extra);
    ivpol_in(dir.path(), &args)
}

/// A policy that fails any image under a `/bad/` path.
fn no_bad_images() -> Value {
    deny_unless(
        "no-bad",
        "images.containers.all(i, !i.contains('/bad/'))",
        "",
    )
}

fn deployment(name: &str, image: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "team", "labels": {"app": name}},
        "spec": {"selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": image}]}}}})
}

fn uid(object: &Value) -> String {
    object["metadata"]["uid"]
        .as_str()
        .expect("the server sets a uid")
        .to_string()
}

fn report_of(api: &KubeApi, object: &Value) -> Value {
    let ns = object["metadata"]["namespace"].as_str();
    let name = format!("ivpol-{}", uid(object));
    api.get(REPORT, KIND, ns, &name)
        .unwrap_or_else(|| panic!("no PolicyReport for {}", object["metadata"]["name"]))
}

#[test]
fn scan_writes_one_report_per_resource_with_server_side_apply() {
    let api = cluster();
    // The category and severity annotations reach every result (the
    // component gets the policy without them; the host reads them).
    let mut policy = no_bad_images();
    policy["metadata"]["annotations"] = json!({
        "policies.kyverno.io/category": "Supply Chain Security",
        "policies.kyverno.io/severity": "medium",
    });
    api.apply(policy).expect("policy");
    let good = api
        .create(deployment("good", "ghcr.io/good/app:1"))
        .expect("good");
    let bad = api
        .create(deployment("bad", "ghcr.io/bad/app:1"))
        .expect("bad");
    let pod = api
        .create(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "team"},
            "spec": {"containers": [{"name": "c", "image": "ghcr.io/good/app:1"}]}}))
        .expect("pod");
    let run = scan(&api, &[]);
    assert_eq!(run.code, 0, "{run}");
    assert_eq!(api.list(REPORT, KIND, None).len(), 3, "{run}");
    for (object, kind, api_version, result) in [
        (&good, "Deployment", "apps/v1", "pass"),
        (&bad, "Deployment", "apps/v1", "fail"),
        (&pod, "Pod", "v1", "pass"),
    ] {
        let report = report_of(&api, object);
        let name = object["metadata"]["name"].clone();
        let uid = uid(object);
        assert_eq!(report["metadata"]["namespace"], "team", "{report}");
        assert_eq!(
            report["metadata"]["labels"],
            json!({"app.kubernetes.io/managed-by": "ivpol"}),
            "{report}"
        );
        let reference = json!({"apiVersion": api_version, "kind": kind, "name": name, "uid": uid});
        assert_eq!(report["metadata"]["ownerReferences"], json!([reference]));
        let mut scope = reference.clone();
        scope["namespace"] = json!("team");
        assert_eq!(report["scope"], scope, "{report}");
        let results = report["results"].as_array().expect("results");
        assert_eq!(results.len(), 1, "{report}");
        let r = &results[0];
        assert_eq!(r["policy"], "no-bad", "{r}");
        assert_eq!(r["rule"], "no-bad", "{r}");
        assert_eq!(r["result"], result, "{r}");
        assert_eq!(r["source"], "KyvernoImageValidatingPolicy", "{r}");
        assert_eq!(r["scored"], true, "{r}");
        assert_eq!(r["category"], "Supply Chain Security", "{r}");
        assert_eq!(r["severity"], "medium", "{r}");
        assert_eq!(r["properties"]["process"], "background scan", "{r}");
        assert!(r.get("resources").is_none(), "the scope names it: {r}");
        let message = match result {
            "fail" => "no-bad says no",
            _ => "success",
        };
        assert_eq!(r["message"], message, "{r}");
        let (pass, fail) = match result {
            "fail" => (0, 1),
            _ => (1, 0),
        };
        assert_eq!(
            report["summary"],
            json!({"pass": pass, "fail": fail, "warn": 0, "error": 0, "skip": 0})
        );
    }
    // Written with server-side apply, by field manager ivpol, and never
    // otherwise.
    let writes = |api: &KubeApi| -> Vec<_> {
        api.requests()
            .into_iter()
            .filter(|r| r.path.contains("/policyreports") && r.method != "GET")
            .collect()
    };
    let first = writes(&api);
    assert_eq!(first.len(), 3, "{first:?}");
    for w in &first {
        assert_eq!(w.method, "PATCH", "{w:?}");
        assert_eq!(
            w.content_type.as_deref(),
            Some("application/apply-patch+yaml"),
            "{w:?}"
        );
        assert_eq!(w.field_manager.as_deref(), Some("ivpol"), "{w:?}");
        assert_eq!(w.param("force").as_deref(), Some("true"), "{w:?}");
        assert!(w
            .path
            .starts_with("/apis/wgpolicyk8s.io/v1alpha2/namespaces/team/policyreports/ivpol-"));
    }
    // The reports also come out on stdout.
    assert_eq!(run.stdout.lines().count(), 3, "{run}");

    // Again: the same three reports, updated in place.
    api.clear_requests();
    let run = scan(&api, &[]);
    assert_eq!(run.code, 0, "{run}");
    let reports = api.list(REPORT, KIND, None);
    assert_eq!(reports.len(), 3, "{run}");
    let mut names: Vec<String> = reports.iter().map(uid_name).collect();
    names.sort();
    let mut uids: Vec<String> = [&good, &bad, &pod]
        .iter()
        .map(|o| format!("ivpol-{}", uid(o)))
        .collect();
    uids.sort();
    assert_eq!(names, uids);
    assert!(writes(&api).iter().all(|w| w.method == "PATCH"));

    // A fixed Deployment passes on the next scan.
    let mut fixed = deployment("bad", "ghcr.io/good/app:2");
    fixed["metadata"]["uid"] = bad["metadata"]["uid"].clone();
    api.apply(fixed).expect("fix");
    let run = scan(&api, &[]);
    assert_eq!(run.code, 0, "{run}");
    assert_eq!(report_of(&api, &bad)["results"][0]["result"], "pass");

    // With the policy gone, nothing has results: the reports go, as
    // Kyverno deletes a report left without results.
    api.delete(
        "policies.kyverno.io/v1",
        "ImageValidatingPolicy",
        None,
        "no-bad",
    );
    let run = scan(&api, &[]);
    assert_eq!(run.code, 0, "{run}");
    assert!(api.list(REPORT, KIND, None).is_empty(), "{run}");
}

fn uid_name(report: &Value) -> String {
    report["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Neither resource files nor a cluster: a usage error.
#[test]
fn scan_without_resources_or_cluster_is_a_usage_error() {
    let dir = tempfile::tempdir().expect("dir");
    let run = ivpol_in(dir.path(), &["scan", "--policies", "p"]);
    assert_eq!(run.code, 2, "{run}");
    assert!(run.stderr.contains("--resources"), "{run}");
}

/// Every field `expected` (a chainsaw assert) sets is in `actual` with the
/// same value; lists item by item, of the same length. `path` names where,
/// for the message.
fn assert_subset(expected: &Value, actual: &Value, path: &str) {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (k, v) in e {
                let at = format!("{path}.{k}");
                let got = a
                    .get(k)
                    .unwrap_or_else(|| panic!("{at} is missing from {actual}"));
                assert_subset(v, got, &at);
            }
        }
        (Value::Array(e), Value::Array(a)) => {
            assert_eq!(e.len(), a.len(), "{path}: {actual}");
            for (i, (e, a)) in e.iter().zip(a).enumerate() {
                assert_subset(e, a, &format!("{path}[{i}]"));
            }
        }
        _ => assert_eq!(expected, actual, "{path}"),
    }
}

/// Kyverno's chainsaw `report/background` and `report/with-exception`
/// cases, with their vendored policy, deployments and exception (images
/// and Notary root moved to a local registry): the Reports ivpol writes
/// hold every field their asserts check, with the same values, under
/// `--kyverno-names` (the asserts require Kyverno's managed-by label): in
/// Kyverno's default API, and with `--report-api openreports` in that one
/// (the same fields).
#[test]
fn reports_match_kyvernos_chainsaw_report_asserts() {
    let images = KyvernoImages::push();
    let base = "test/conformance/chainsaw/image-validating-policies/report";
    let background = images.localize(&format!("{base}/background"));
    let exception = images.localize(&format!("{base}/with-exception"));
    let read = |dir: &tempfile::TempDir, f: &str| {
        yaml(&std::fs::read_to_string(dir.path().join(f)).expect("case file"))
    };
    let api = cluster();
    // Both cases hold the same policy.
    assert_eq!(
        read(&background, "policy.yaml"),
        read(&exception, "policy.yaml")
    );
    api.apply(read(&background, "policy.yaml")).expect("policy");
    // In ivpol's own namespace: exceptions to cluster policies count only
    // from there unless --exception-namespace says more.
    let mut pe = read(&exception, "exception.yaml");
    pe["metadata"]["namespace"] = json!("ivpol");
    api.apply(pe).expect("exception");
    let mut created = Vec::new();
    for (dir, file) in [
        (&background, "deployment.yaml"),
        (&exception, "bad-deployment.yaml"),
        (&exception, "skipped-deployment.yaml"),
    ] {
        let mut d = read(dir, file);
        d["metadata"]["namespace"] = json!("team");
        created.push(api.create(d).expect("deployment"));
    }
    for (extra, api_version, kind) in [
        (None, REPORT, KIND),
        (Some("openreports"), "openreports.io/v1alpha1", "Report"),
    ] {
        let mut args = vec!["--insecure-registry", images.addr(), "--kyverno-names"];
        if let Some(api) = extra {
            args.extend(["--report-api", api]);
        }
        let run = scan(&api, &args);
        assert_eq!(run.code, 0, "{run}");
        for (object, (dir, assert)) in created.iter().zip([
            (&background, "report.yaml"),
            (&exception, "fail-report-assert.yaml"),
            (&exception, "skipped-report-assert.yaml"),
        ]) {
            let mut expected = read(dir, assert);
            assert_eq!(expected["apiVersion"], REPORT);
            assert_eq!(expected["kind"], KIND);
            expected["apiVersion"] = json!(api_version);
            expected["kind"] = json!(kind);
            let ns = object["metadata"]["namespace"].as_str();
            let actual = api
                .get(api_version, kind, ns, &uid(object))
                .unwrap_or_else(|| panic!("no {kind} named by the UID: {run}"));
            assert_subset(&expected, &actual, assert);
        }
    }
}

/// Lists are paged, and a cluster with more Pods and pod controllers than
/// `--max-resources` is refused: nothing is written.
#[test]
fn more_resources_than_the_maximum_are_refused() {
    let api = cluster();
    api.apply(deny_unless("no-bad", "true", ""))
        .expect("policy");
    for name in ["a", "b", "c"] {
        api.create(deployment(name, "ghcr.io/good/app:1"))
            .expect("deployment");
    }
    let run = scan(&api, &["--max-resources", "2"]);
    assert_eq!(run.code, 2, "{run}");
    assert!(
        run.stderr.contains("more than 2 Pods and pod controllers"),
        "{run}"
    );
    assert!(api.list(REPORT, KIND, None).is_empty(), "{run}");
    let run = scan(&api, &["--max-resources", "3"]);
    assert_eq!(run.code, 0, "{run}");
    assert_eq!(api.list(REPORT, KIND, None).len(), 3, "{run}");
    let lists: Vec<_> = api
        .requests()
        .into_iter()
        .filter(|r| r.method == "GET" && r.path == "/apis/apps/v1/deployments" && !r.watch)
        .collect();
    assert!(!lists.is_empty());
    for l in lists {
        assert_eq!(l.param("limit").as_deref(), Some("500"), "{l:?}");
    }
}

/// `scan --kubernetes --interval`: a policy changed in the cluster is
/// loaded for the next scan, which rewrites the Report.
#[test]
fn with_an_interval_a_policy_change_reaches_the_next_scan() {
    let api = cluster();
    api.apply(deny_unless("flip", "true", "")).expect("policy");
    let d = api
        .create(deployment("web", "ghcr.io/good/app:1"))
        .expect("deployment");
    let dir = tempfile::tempdir().expect("dir");
    let kubeconfig = api.write_kubeconfig(dir.path());
    let mut child = std::process::Command::new(ivpol_tests::ivpol_bin())
        .current_dir(dir.path())
        .args(["scan", "--interval", "200ms", "--kubeconfig"])
        .arg(&kubeconfig)
        .env("IVPOL_CACHE_DIR", ivpol_tests::precompile_cache_dir())
        .env("IVPOL_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run ivpol");
    let result = || {
        api.get(REPORT, KIND, Some("team"), &format!("ivpol-{}", uid(&d)))
            .map(|r| r["results"][0]["result"].clone())
    };
    let wait_for = |want: &str| {
        let end = std::time::Instant::now() + super::SOON;
        while std::time::Instant::now() < end {
            if result().is_some_and(|r| r == want) {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        false
    };
    let passed = wait_for("pass");
    api.apply(deny_unless("flip", "false", "")).expect("policy");
    let failed = wait_for("fail");
    let _ = child.kill();
    let _ = child.wait();
    assert!(passed, "no passing Report: {:?}", result());
    assert!(
        failed,
        "the changed policy did not reach a later scan: {:?}",
        result()
    );
}

/// The background scan's own role (deploy/components/scan) lets it make
/// every request it made here, deleting the Reports a deleted policy left
/// without results too; serve's ServiceAccount is not needed for any of it.
#[test]
fn the_scan_role_allows_every_request_scan_makes() {
    use ivpol_tests::rbac::{allows, attributes, deploy_manifests};
    let api = cluster();
    api.apply(no_bad_images()).expect("policy");
    api.create(deployment("good", "ghcr.io/good/app:1"))
        .expect("good");
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "team"},
        "spec": {"containers": [{"name": "c", "image": "ghcr.io/bad/app:1"}]}});
    api.create(pod).expect("pod");
    api.clear_requests();
    let run = scan(&api, &[]);
    assert_eq!(run.code, 0, "{run}");
    api.delete(
        "policies.kyverno.io/v1",
        "ImageValidatingPolicy",
        None,
        "no-bad",
    )
    .expect("deleted");
    let again = scan(&api, &[]);
    assert_eq!(again.code, 0, "{again}");
    let requests = api.requests();
    assert!(
        requests.iter().any(|r| r.method == "DELETE"),
        "the Reports left without results were deleted"
    );
    let manifests = deploy_manifests();
    for r in requests {
        let Some(a) = attributes(&r) else { continue };
        assert!(
            allows(&manifests, "ivpol", "ivpol-scan", &a),
            "the scan's role refuses {} {} ({a:?})",
            r.method,
            r.path
        );
    }
}
