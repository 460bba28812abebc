//! What the elected leader of `ivpol serve --kubernetes` writes: the
//! webhook configurations (`--register-webhooks`, with a CA's caBundle),
//! each cluster policy's status as Kyverno sets it, and nothing from the
//! other replicas; the Lease moves when the leader dies.

use super::{allowed, cluster, deny_unless, pod_in, serve, SOON};
use base64::Engine as _;
use ivpol_tests::cli::ivpol_in;
use ivpol_tests::kube_api::KubeApi;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const VALIDATING: &str = "ivpol-resource-validating-webhook-cfg";
/// A Lease (15 s) expires and is taken over at the next renewal (5 s).
const TAKEOVER: Duration = Duration::from_secs(30);

use ivpol_tests::certs::{ca_and_leaf as certificates, ca_file};

fn eventually(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    check()
}

/// ivpol's ValidatingWebhookConfiguration as the API server has it.
fn validating_config(api: &KubeApi) -> Option<Value> {
    api.get(
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        None,
        VALIDATING,
    )
}

fn webhook_paths(api: &KubeApi) -> Vec<String> {
    validating_config(api)
        .iter()
        .flat_map(|c| c["webhooks"].as_array().cloned().unwrap_or_default())
        .filter_map(|w| {
            w["clientConfig"]["service"]["path"]
                .as_str()
                .map(String::from)
        })
        .collect()
}

fn status(api: &KubeApi, name: &str) -> Value {
    api.get(
        "policies.kyverno.io/v1",
        "ImageValidatingPolicy",
        None,
        name,
    )
    .map(|p| p["status"]["conditionStatus"].clone())
    .unwrap_or(Value::Null)
}

/// The Lease's holder identity, if any.
pub(super) fn holder(api: &KubeApi) -> Option<String> {
    api.get("coordination.k8s.io/v1", "Lease", Some("ivpol"), "ivpol")
        .and_then(|l| l["spec"]["holderIdentity"].as_str().map(String::from))
}

#[test]
fn the_leader_registers_webhooks_and_writes_policy_status() {
    let dir = tempfile::tempdir().expect("dir");
    let (ca, _leaf) = certificates(dir.path());
    let api = cluster();
    api.apply(deny_unless("first", "false", ""))
        .expect("policy");
    let ca_arg = ca.display().to_string();
    let (s, _kube) = serve(&api, &["--register-webhooks", "--ca-bundle", &ca_arg]);
    assert!(
        eventually(SOON * 2, || webhook_paths(&api)
            .iter()
            .any(|p| p.contains("first"))),
        "no validating webhook for the policy"
    );
    let config = validating_config(&api).expect("the configuration");
    let bundle = config["webhooks"][0]["clientConfig"]["caBundle"]
        .as_str()
        .expect("caBundle");
    let bundle = base64::engine::general_purpose::STANDARD
        .decode(bundle)
        .expect("base64");
    assert_eq!(
        bundle,
        std::fs::read(&ca).expect("ca"),
        "the caBundle is the CA file"
    );
    assert_eq!(
        config["webhooks"][0]["clientConfig"]["service"]["namespace"],
        "ivpol"
    );
    // Kyverno's ready conditions, as its chainsaw step asserts them.
    assert!(
        eventually(SOON, || status(&api, "first")["ready"] == true),
        "{}",
        status(&api, "first")
    );
    let conditions = status(&api, "first")["conditions"].clone();
    for (kind, message) in [
        ("WebhookConfigured", "Webhook configured."),
        ("RBACPermissionsGranted", "Policy is ready for reporting."),
    ] {
        let c = conditions
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == kind)
            .unwrap_or_else(|| panic!("no {kind}: {conditions}"));
        assert_eq!(
            (
                c["status"].as_str(),
                c["reason"].as_str(),
                c["message"].as_str()
            ),
            (Some("True"), Some("Succeeded"), Some(message)),
            "{c}"
        );
    }
    // A second policy gets its webhook; a broken one a status that says why.
    api.apply(deny_unless("second", "false", ""))
        .expect("policy");
    let mut broken = deny_unless("broken", "false", "");
    broken["spec"]["validationActions"] = json!(["Nope"]);
    api.apply(broken).expect("policy");
    assert!(
        eventually(SOON * 2, || webhook_paths(&api)
            .iter()
            .any(|p| p.contains("second"))),
        "the new policy's webhook is not registered"
    );
    assert!(eventually(SOON, || status(&api, "broken")["ready"] == false));
    let loaded = status(&api, "broken")["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "PolicyLoaded")
        .cloned()
        .expect("PolicyLoaded");
    assert_eq!(loaded["status"], "False");
    assert!(
        loaded["message"]
            .as_str()
            .is_some_and(|m| m.contains("validationActions")),
        "{loaded}"
    );
    // Writes go as ivpol, and a status already right is not written again.
    let writes = |api: &KubeApi| {
        api.requests()
            .into_iter()
            .filter(|r| r.method == "PATCH")
            .count()
    };
    // The leader writes statuses in name order, so "broken" can show before
    // "second" has its status: wait for that, and for the writes to settle
    // (a leader that keeps rewriting never settles and fails here too).
    assert!(eventually(SOON, || status(&api, "second")["ready"] == true));
    let mut before = writes(&api);
    assert!(
        eventually(SOON, || {
            std::thread::sleep(Duration::from_millis(1500));
            let now = writes(&api);
            std::mem::replace(&mut before, now) == now
        }),
        "the leader's writes never settle"
    );
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        writes(&api),
        before,
        "the leader rewrites what is already there: {:?}\n{}",
        api.requests()
            .iter()
            .filter(|r| r.method == "PATCH")
            .map(|r| r.path.clone())
            .collect::<Vec<_>>(),
        s.log()
    );
    assert!(api
        .requests()
        .iter()
        .filter(|r| r.method == "PATCH" && r.path.contains("webhookconfigurations"))
        .all(|r| r.field_manager.as_deref() == Some("ivpol")));
    assert!(!allowed(&s, "/ivpol/validate", &pod_in("team")));
}

#[test]
fn one_of_two_replicas_writes_and_the_other_takes_over() {
    let api = cluster();
    api.apply(deny_unless("p", "false", "")).expect("policy");
    let (mut first, _a) = serve(&api, &[]);
    assert!(
        eventually(SOON * 2, || holder(&api).is_some()),
        "no Lease holder"
    );
    let leader = holder(&api).expect("holder");
    assert!(leader.ends_with(&format!("-{}", first.pid())), "{leader}");
    let (second, _b) = serve(&api, &[]);
    // Both serve admission; the Lease stays with the first.
    assert!(!allowed(&second, "/ivpol/validate", &pod_in("team")));
    std::thread::sleep(Duration::from_secs(6));
    assert_eq!(holder(&api).as_deref(), Some(leader.as_str()));
    assert!(first.metrics_text().contains("ivpol_leader 1"));
    assert!(second.metrics_text().contains("ivpol_leader 0"));
    first.signal("KILL");
    let _ = first.wait_exit(Duration::from_secs(5));
    let second_id = format!("-{}", second.pid());
    assert!(
        eventually(TAKEOVER, || holder(&api)
            .is_some_and(|h| h.ends_with(&second_id))),
        "the second replica did not take the Lease over: {:?}",
        holder(&api)
    );
    assert!(eventually(SOON * 2, || second
        .metrics_text()
        .contains("ivpol_leader 1")));
}

#[test]
fn a_leaf_certificate_is_not_a_ca_bundle() {
    let dir = tempfile::tempdir().expect("dir");
    let (_ca, leaf) = certificates(dir.path());
    let api = cluster();
    let kubeconfig = api.write_kubeconfig(dir.path()).display().to_string();
    let leaf = leaf.display().to_string();
    let run = ivpol_in(
        dir.path(),
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--kubeconfig",
            &kubeconfig,
            "--register-webhooks",
            "--ca-bundle",
            &leaf,
        ],
    );
    assert_ne!(run.code, 0, "{run}");
    assert!(run.stderr.contains("is not a CA"), "{run}");
}

/// The message of the policy's `PolicyLoaded` condition.
fn loaded_message(api: &KubeApi, name: &str) -> String {
    status(api, name)["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "PolicyLoaded")
        .and_then(|c| c["message"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// Fail closed across restarts: a policy that loaded, got its webhook, and
/// was then edited into a broken state keeps its webhook entry when a new
/// replica (which never saw a good version) becomes the leader, so that
/// its requests still reach ivpol and are denied, not admitted unchecked.
#[test]
fn a_rejected_policy_keeps_its_webhook_across_a_restart_and_a_new_leader() {
    let dir = tempfile::tempdir().expect("dir");
    let (ca, _leaf) = certificates(dir.path());
    let ca_arg = ca.display().to_string();
    let args = ["--register-webhooks", "--ca-bundle", ca_arg.as_str()];
    let api = cluster();
    api.apply(deny_unless("keeper", "false", ""))
        .expect("policy");
    let (mut first, _a) = serve(&api, &args);
    let registered = || webhook_paths(&api).iter().any(|p| p.contains("keeper"));
    assert!(eventually(SOON * 2, registered), "no webhook for keeper");
    let mut broken = deny_unless("keeper", "false", "");
    broken["spec"]["validationActions"] = json!(["Nope"]);
    api.apply(broken).expect("broken policy");
    assert!(
        eventually(SOON * 2, || loaded_message(&api, "keeper")
            .contains("last good version")),
        "{}",
        loaded_message(&api, "keeper")
    );
    first.signal("KILL");
    let _ = first.wait_exit(Duration::from_secs(5));
    let (second, _b) = serve(&api, &args);
    assert!(
        eventually(TAKEOVER + SOON, || loaded_message(&api, "keeper")
            .contains("policy failed to load")),
        "the new leader did not write: {}",
        loaded_message(&api, "keeper")
    );
    assert!(
        registered(),
        "the new leader dropped the rejected policy's webhook: {:?}",
        webhook_paths(&api)
    );
    let answer = second.review("/ivpol/validate/keeper", &pod_in("team"));
    assert_eq!(answer["allowed"], false, "{answer}");
    assert!(
        answer["status"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("Policy keeper error: policy failed to load")),
        "{answer}"
    );
}

/// Outage containment on the registered webhooks: more namespaces left
/// out (beside kube-system and ivpol's own), and every resource webhook
/// failing open; the policy-validation webhook still fails closed.
#[test]
fn registered_webhooks_take_the_exclusions_and_failure_policy_given() {
    let dir = tempfile::tempdir().expect("dir");
    let (ca, _leaf) = certificates(dir.path());
    let ca_arg = ca.display().to_string();
    let api = cluster();
    api.apply(deny_unless("p", "false", "")).expect("policy");
    let (_s, _kube) = serve(
        &api,
        &[
            "--register-webhooks",
            "--ca-bundle",
            &ca_arg,
            "--exclude-namespace",
            "cert-manager",
            "--failure-policy-ignore",
        ],
    );
    assert!(
        eventually(SOON * 2, || webhook_paths(&api)
            .iter()
            .any(|p| p.contains("/p"))),
        "no webhook"
    );
    let config = validating_config(&api).expect("the configuration");
    for w in config["webhooks"].as_array().expect("webhooks") {
        assert_eq!(w["failurePolicy"], "Ignore", "{w}");
        let excluded: Vec<String> = w["namespaceSelector"]["matchExpressions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["operator"] == "NotIn")
            .flat_map(|e| e["values"].as_array().cloned().unwrap_or_default())
            .filter_map(|v| v.as_str().map(String::from))
            .collect();
        assert_eq!(excluded, ["kube-system", "ivpol", "cert-manager"], "{w}");
    }
    // Each configuration is applied on its own: this one may land after
    // the one waited for above.
    let policy_check = || {
        api.get(
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
            None,
            "ivpol-policy-validating-webhook-cfg",
        )
    };
    assert!(
        eventually(SOON * 2, || policy_check().is_some()),
        "no policy-validation configuration"
    );
    let policy_check = policy_check().expect("the policy-validation configuration");
    assert_eq!(policy_check["webhooks"][0]["failurePolicy"], "Fail");
}

/// Self-healing: a deleted webhook configuration is applied again within
/// seconds, and so is one edited by someone else; while ivpol's namespace
/// carries the break-glass annotation, nothing is restored, and removing it
/// restores the configurations.
#[test]
fn deleted_or_edited_webhooks_are_restored_unless_the_glass_is_broken() {
    let dir = tempfile::tempdir().expect("dir");
    let (ca, _leaf) = certificates(dir.path());
    let ca_arg = ca.display().to_string();
    let api = cluster();
    api.apply(deny_unless("p", "false", "")).expect("policy");
    let (s, _kube) = serve(&api, &["--register-webhooks", "--ca-bundle", &ca_arg]);
    let present = |api: &KubeApi| webhook_paths(api).iter().any(|p| p.contains("/p"));
    assert!(eventually(SOON * 2, || present(&api)), "no webhook");
    let delete = |api: &KubeApi| {
        api.delete(
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
            None,
            VALIDATING,
        )
    };
    delete(&api);
    assert!(!present(&api));
    assert!(
        eventually(SOON, || present(&api)),
        "not restored:\n{}",
        s.log()
    );
    // An edit by someone else (failing open) is put back too.
    let mut edited = validating_config(&api).expect("configuration");
    for w in edited["webhooks"].as_array_mut().expect("webhooks") {
        w["failurePolicy"] = json!("Ignore");
    }
    api.apply(edited).expect("edit");
    let failing_closed = |api: &KubeApi| {
        validating_config(api).is_some_and(|c| c["webhooks"][0]["failurePolicy"] == "Fail")
    };
    assert!(eventually(SOON, || failing_closed(&api)), "the edit stayed");
    // Break glass: an operator deletes it, and it stays deleted.
    api.apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ivpol", "annotations": {"ivpol.io/break-glass": "true"}}}))
        .expect("annotate");
    std::thread::sleep(Duration::from_secs(2));
    delete(&api);
    std::thread::sleep(Duration::from_secs(4));
    assert!(!present(&api), "restored through the broken glass");
    api.apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ivpol", "annotations": {"ivpol.io/break-glass": "false"}}}))
        .expect("annotate");
    assert!(
        eventually(SOON, || present(&api)),
        "not restored after the glass"
    );
    assert!(s.metrics_text().contains("ivpol_webhook_restores_total"));
}

/// The caBundle the configurations carry, decoded.
fn applied_ca_bundle(api: &KubeApi) -> Option<Vec<u8>> {
    let config = validating_config(api)?;
    let bundle = config["webhooks"][0]["clientConfig"]["caBundle"].as_str()?;
    base64::engine::general_purpose::STANDARD
        .decode(bundle)
        .ok()
}

/// A rotated CA reaches the webhook configurations without a restart: the
/// file is read again every second, as the kubelet swaps a Secret volume.
/// A file that is no CA bundle for a moment (a rotation half-way) keeps the
/// last good one applied, and says why in the log.
#[test]
fn a_rotated_ca_bundle_is_applied_without_a_restart() {
    let dir = tempfile::tempdir().expect("dir");
    let ca = ca_file(dir.path());
    let api = cluster();
    api.apply(deny_unless("first", "false", ""))
        .expect("policy");
    let ca_arg = ca.display().to_string();
    let (s, _kube) = serve(&api, &["--register-webhooks", "--ca-bundle", &ca_arg]);
    let first = std::fs::read(&ca).expect("ca");
    assert!(
        eventually(SOON * 2, || applied_ca_bundle(&api).as_ref()
            == Some(&first)),
        "the first CA was never applied"
    );
    let swap = |content: &[u8]| {
        let next = dir.path().join("ca.crt.next");
        std::fs::write(&next, content).expect("write");
        std::fs::rename(&next, &ca).expect("rename");
    };
    swap(b"not a certificate");
    assert!(
        eventually(SOON, || s.log().contains("keeping the last good CA bundle")),
        "{}",
        s.log()
    );
    assert_eq!(applied_ca_bundle(&api), Some(first.clone()));
    let rotated = tempfile::tempdir().expect("dir");
    let second = std::fs::read(ca_file(rotated.path())).expect("ca");
    assert_ne!(first, second);
    swap(&second);
    assert!(
        eventually(SOON, || applied_ca_bundle(&api).as_ref() == Some(&second)),
        "the rotated CA was not applied: {}",
        s.log()
    );
}

/// `ivpol uninstall` removes every configuration ivpol registered, after
/// breaking the glass so that the leader (still running, as it is until the
/// Deployment goes) does not restore them; configurations of others stay.
#[test]
fn uninstall_removes_the_webhooks_and_the_leader_does_not_restore_them() {
    let dir = tempfile::tempdir().expect("dir");
    let ca_arg = ca_file(dir.path()).display().to_string();
    let api = cluster();
    api.apply(deny_unless("p", "false", "")).expect("policy");
    let foreign = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "someone-else"}, "webhooks": []});
    api.apply(foreign).expect("a configuration of someone else");
    let (s, _kube) = serve(&api, &["--register-webhooks", "--ca-bundle", &ca_arg]);
    let mutating = |api: &KubeApi| {
        api.get(
            "admissionregistration.k8s.io/v1",
            "MutatingWebhookConfiguration",
            None,
            "ivpol-resource-mutating-webhook-cfg",
        )
    };
    let ours = |api: &KubeApi| validating_config(api).is_some() || mutating(api).is_some();
    assert!(eventually(SOON * 2, || ours(&api)), "nothing registered");
    let kubeconfig = api.write_kubeconfig(dir.path()).display().to_string();
    let run = ivpol_in(dir.path(), &["uninstall", "--kubeconfig", &kubeconfig]);
    assert_eq!(run.code, 0, "{run}");
    assert!(
        run.stderr
            .contains("deleted ValidatingWebhookConfiguration ivpol-"),
        "{run}"
    );
    assert!(!ours(&api), "{run}");
    std::thread::sleep(Duration::from_secs(4));
    assert!(!ours(&api), "restored after uninstall:\n{}", s.log());
    let kept = api.get(
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        None,
        "someone-else",
    );
    assert!(kept.is_some(), "only ivpol's configurations go");
    let again = ivpol_in(dir.path(), &["uninstall", "--kubeconfig", &kubeconfig]);
    assert_eq!(again.code, 0, "safe to run twice: {again}");
}

/// With cert-manager's CA injector (`--inject-ca-from`), the leader writes
/// the injector's annotation and no caBundle, so the two never take the
/// field from each other; no CA file is needed. With an owner ClusterRole
/// (`--webhook-owner-cluster-role`), every configuration names it, and
/// deleting it (as deleting the installation does) has the garbage
/// collector delete the configurations.
#[test]
fn the_injector_owns_the_ca_bundle_and_the_cluster_role_owns_the_configurations() {
    let api = cluster();
    api.apply(deny_unless("p", "false", "")).expect("policy");
    let role = api
        .apply(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "ivpol"}, "rules": []}))
        .expect("role");
    let (s, _kube) = serve(
        &api,
        &[
            "--register-webhooks",
            "--inject-ca-from",
            "ivpol/ivpol-tls",
            "--webhook-owner-cluster-role",
            "ivpol",
        ],
    );
    assert!(
        eventually(SOON * 2, || validating_config(&api).is_some()),
        "nothing registered: {}",
        s.log()
    );
    let config = validating_config(&api).expect("config");
    assert_eq!(
        config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"], "ivpol/ivpol-tls",
        "{config}"
    );
    let hooks = config["webhooks"].as_array().expect("webhooks");
    assert!(!hooks.is_empty());
    for w in hooks {
        assert!(w["clientConfig"].get("caBundle").is_none(), "{w}");
    }
    assert_eq!(
        config["metadata"]["ownerReferences"],
        json!([{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "name": "ivpol", "uid": role["metadata"]["uid"]}]),
        "{config}"
    );
    // Uninstalled: the server goes with the Deployment, the role with the
    // rest of the apply set, and the configurations with the role.
    drop(s);
    api.delete("rbac.authorization.k8s.io/v1", "ClusterRole", None, "ivpol")
        .expect("deleted");
    assert!(
        validating_config(&api).is_none(),
        "the owner is gone, the configuration stayed"
    );
    let mutating = api.get(
        "admissionregistration.k8s.io/v1",
        "MutatingWebhookConfiguration",
        None,
        "ivpol-resource-mutating-webhook-cfg",
    );
    assert!(mutating.is_none(), "{mutating:?}");
}

/// Without its owner ClusterRole the configurations are still written
/// (enforcement never waits on an uninstall aid), and the log says why.
#[test]
fn a_missing_owner_cluster_role_still_registers_the_webhooks() {
    let dir = tempfile::tempdir().expect("dir");
    let ca_arg = ca_file(dir.path()).display().to_string();
    let api = cluster();
    api.apply(deny_unless("p", "false", "")).expect("policy");
    let (s, _kube) = serve(
        &api,
        &[
            "--register-webhooks",
            "--ca-bundle",
            &ca_arg,
            "--webhook-owner-cluster-role",
            "absent",
        ],
    );
    assert!(
        eventually(SOON * 2, || validating_config(&api).is_some()),
        "{}",
        s.log()
    );
    let config = validating_config(&api).expect("config");
    assert!(
        config["metadata"].get("ownerReferences").is_none(),
        "{config}"
    );
    // The log reaches the test through a pipe: collect it until the line
    // is in (each call hands out only what is new).
    let mut log = String::new();
    let said = eventually(SOON, || {
        log.push_str(&s.log());
        log.contains("without an owner")
    });
    assert!(said, "{log}");
}
