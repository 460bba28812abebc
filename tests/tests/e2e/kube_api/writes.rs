//! Writes: server-side apply, the status subresource, optimistic
//! concurrency on Leases and the three patch types.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_stores_reports_as_sent_and_records_the_manager() {
    let kube = KubeApi::start();
    make_namespace(&kube, "ivpol");
    let reports = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("openreports.io", "v1alpha1", "Report"),
        "reports",
    );
    let api: Api<DynamicObject> = Api::default_namespaced_with(client(&kube).await, &reports);
    let report = json!({
        "apiVersion": "openreports.io/v1alpha1",
        "kind": "Report",
        "metadata": {"name": "pod-web", "namespace": "ivpol", "labels": {"app.kubernetes.io/managed-by": "ivpol"}},
        "scope": {"apiVersion": "v1", "kind": "Pod", "name": "web", "namespace": "ivpol"},
        "summary": {"pass": 1, "fail": 0, "warn": 0, "error": 0, "skip": 0},
        "results": [{"policy": "ivpol-sample", "result": "pass", "source": "ivpol"}],
    });
    let params = PatchParams::apply("ivpol").force();
    let stored = api
        .patch("pod-web", &params, &Patch::Apply(&report))
        .await
        .expect("apply creates");
    assert_eq!(stored.data["results"], report["results"]);
    assert_eq!(stored.metadata.generation, Some(1));
    let created = kube.requests().pop().expect("the apply");
    assert_eq!(created.status, 201);
    assert_eq!(
        created.content_type.as_deref(),
        Some("application/apply-patch+yaml")
    );
    assert_eq!(created.field_manager.as_deref(), Some("ivpol"));
    assert_eq!(created.param("force").as_deref(), Some("true"));

    // Re-applying the same thing changes nothing: no new version.
    let same = api
        .patch("pod-web", &params, &Patch::Apply(&report))
        .await
        .expect("apply again");
    assert_eq!(
        same.metadata.resource_version,
        stored.metadata.resource_version
    );

    let mut failing = report.clone();
    failing["summary"]["fail"] = json!(1);
    failing["results"][0]["result"] = json!("fail");
    let updated = api
        .patch("pod-web", &params, &Patch::Apply(&failing))
        .await
        .expect("apply a change");
    assert_eq!(updated.data["summary"]["fail"], 1);
    assert_eq!(updated.metadata.generation, Some(2));
    let in_store = kube
        .get(
            "openreports.io/v1alpha1",
            "Report",
            Some("ivpol"),
            "pod-web",
        )
        .expect("stored");
    assert_eq!(in_store["results"], failing["results"]);

    // An apply must name its manager.
    let anonymous = refused(
        api.patch("pod-web", &PatchParams::default(), &Patch::Apply(&report))
            .await,
    );
    assert_eq!(
        (anonymous.code, anonymous.reason.as_str()),
        (422, "Invalid")
    );
    assert!(
        anonymous.message.contains("fieldManager: Required value"),
        "{}",
        anonymous.message
    );
    // Reports have no status subresource.
    assert_eq!(
        refused(
            api.patch_status("pod-web", &params, &Patch::Apply(&report))
                .await
        )
        .code,
        404
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_subresource_owns_status() {
    let kube = KubeApi::start();
    let policies: Api<DynamicObject> = Api::all_with(client(&kube).await, &ivp_resource("v1"));
    let mut policy = kyverno_policy(IVP, "policies.kyverno.io/v1");
    policy["status"] = json!({"conditionStatus": {"ready": true}});
    let created = policies
        .create(&PostParams::default(), &dynamic(policy.clone()))
        .await
        .expect("create");
    assert!(
        created.data.get("status").is_none(),
        "status is dropped at creation"
    );

    let ready = json!({"status": {"conditionStatus": {"ready": true, "message": "compiled"}}});
    let with_status = policies
        .patch_status(
            "ivpol-sample",
            &PatchParams::default(),
            &Patch::Merge(&ready),
        )
        .await
        .expect("patch status");
    assert_eq!(with_status.data["status"], ready["status"]);
    assert_eq!(
        with_status.metadata.generation,
        Some(1),
        "status is not spec"
    );

    // A write to the object keeps the stored status and bumps generation.
    let mut edited = with_status.clone();
    edited.data["spec"]["validationActions"] = json!(["Audit"]);
    edited.data["status"] = json!({"conditionStatus": {"ready": false}});
    let replaced = policies
        .replace("ivpol-sample", &PostParams::default(), &edited)
        .await
        .expect("replace");
    assert_eq!(replaced.data["status"], ready["status"]);
    assert_eq!(replaced.data["spec"]["validationActions"], json!(["Audit"]));
    assert_eq!(replaced.metadata.generation, Some(2));

    // Server-side apply on /status changes only status.
    let applied = json!({
        "apiVersion": "policies.kyverno.io/v1", "kind": "ImageValidatingPolicy",
        "metadata": {"name": "ivpol-sample"},
        "spec": {"validationActions": ["Warn"]},
        "status": {"conditionStatus": {"ready": false, "message": "by ivpol"}},
    });
    let applied = policies
        .patch_status(
            "ivpol-sample",
            &PatchParams::apply("ivpol"),
            &Patch::Apply(&applied),
        )
        .await
        .expect("apply status");
    assert_eq!(
        applied.data["status"]["conditionStatus"]["message"],
        "by ivpol"
    );
    assert_eq!(applied.data["spec"]["validationActions"], json!(["Audit"]));
    assert_eq!(applied.metadata.generation, Some(2));

    // A custom resource cannot be replaced without a resourceVersion.
    let mut unconditional = applied.clone();
    unconditional.metadata.resource_version = None;
    let invalid = refused(
        policies
            .replace("ivpol-sample", &PostParams::default(), &unconditional)
            .await,
    );
    assert_eq!((invalid.code, invalid.reason.as_str()), (422, "Invalid"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_update_with_a_stale_resource_version_conflicts() {
    let kube = KubeApi::start();
    let client = client(&kube).await;
    let leases: Api<Lease> = Api::default_namespaced(client.clone());
    let lease = Lease {
        metadata: meta("ivpol-leader"),
        spec: Some(LeaseSpec {
            holder_identity: Some("pod-a".into()),
            lease_duration_seconds: Some(15),
            ..Default::default()
        }),
    };
    let missing_ns = refused(leases.create(&PostParams::default(), &lease).await);
    assert_eq!(
        missing_ns.code, 404,
        "no namespace ivpol yet: {}",
        missing_ns.message
    );
    make_namespace(&kube, "ivpol");
    let held = leases
        .create(&PostParams::default(), &lease)
        .await
        .expect("create the lease");

    // Two candidates read the same version; the first write wins.
    let mut by_b = held.clone();
    by_b.spec.as_mut().expect("spec").holder_identity = Some("pod-b".into());
    let mut by_c = held.clone();
    by_c.spec.as_mut().expect("spec").holder_identity = Some("pod-c".into());
    leases
        .replace("ivpol-leader", &PostParams::default(), &by_b)
        .await
        .expect("pod-b takes the lease");
    let lost = refused(
        leases
            .replace("ivpol-leader", &PostParams::default(), &by_c)
            .await,
    );
    assert_eq!((lost.code, lost.reason.as_str()), (409, "Conflict"));
    let holder = leases.get("ivpol-leader").await.expect("get");
    assert_eq!(
        holder.spec.and_then(|s| s.holder_identity).as_deref(),
        Some("pod-b")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merge_json_and_strategic_patches() {
    let kube = KubeApi::start();
    make_namespace(&kube, "ivpol");
    let client = client(&kube).await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    cms.create(
        &PostParams::default(),
        &config_map("c", &[], &[("a", "1"), ("b", "2")]),
    )
    .await
    .expect("create");
    let data = |c: &ConfigMap| c.data.clone().unwrap_or_default();

    let merged = cms
        .patch(
            "c",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"a": null, "c": "3"}})),
        )
        .await
        .expect("merge patch");
    assert_eq!(
        data(&merged),
        BTreeMap::from([("b".into(), "2".into()), ("c".into(), "3".into())])
    );

    let ops: json_patch::Patch = serde_json::from_value(json!([
        {"op": "replace", "path": "/data/b", "value": "20"},
        {"op": "add", "path": "/data/d", "value": "4"},
        {"op": "remove", "path": "/data/c"},
    ]))
    .expect("a JSON patch");
    let patched = cms
        .patch("c", &PatchParams::default(), &Patch::Json::<()>(ops))
        .await
        .expect("JSON patch");
    assert_eq!(
        data(&patched),
        BTreeMap::from([("b".into(), "20".into()), ("d".into(), "4".into())])
    );
    let failing: json_patch::Patch =
        serde_json::from_value(json!([{"op": "remove", "path": "/data/nope"}])).expect("patch");
    let invalid = refused(
        cms.patch("c", &PatchParams::default(), &Patch::Json::<()>(failing))
            .await,
    );
    assert_eq!(invalid.code, 422);

    let strategic = cms
        .patch(
            "c",
            &PatchParams::default(),
            &Patch::Strategic(json!({"data": {"e": "5"}})),
        )
        .await
        .expect("strategic merge patch on a builtin");
    assert_eq!(data(&strategic).get("e").map(String::as_str), Some("5"));
    assert!(kube
        .requests()
        .iter()
        .any(|r| r.content_type.as_deref() == Some("application/strategic-merge-patch+json")));

    // Custom resources have no strategic merge patch.
    let policies: Api<DynamicObject> = Api::all_with(client, &ivp_resource("v1"));
    policies
        .create(
            &PostParams::default(),
            &dynamic(kyverno_policy(IVP, "policies.kyverno.io/v1")),
        )
        .await
        .expect("create");
    let unsupported = refused(
        policies
            .patch(
                "ivpol-sample",
                &PatchParams::default(),
                &Patch::Strategic(json!({"spec": {}})),
            )
            .await,
    );
    assert_eq!(
        (unsupported.code, unsupported.reason.as_str()),
        (415, "UnsupportedMediaType")
    );
}
