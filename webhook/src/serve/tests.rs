use super::*;
use ivpol_oci::transport::Offline;

fn review(image: &str) -> String {
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "1",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "namespace": "default",
            "operation": "CREATE",
            "userInfo": {"username": "dev"},
            "object": {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "namespace": "default"},
                "spec": {"containers": [{"name": "c", "image": image}]}
            }
        }
    })
    .to_string()
}

fn answer(webhook: &Webhook, method: &str, path: &str, body: Option<&[u8]>) -> (u16, Value) {
    let reply = webhook.answer(method, path, body, Arc::new(Offline));
    let value = serde_json::from_slice(&reply.body).expect("JSON");
    (reply.status, value)
}

#[test]
fn the_baked_sample_policies_answer_the_readme_example() {
    let webhook = Webhook::load(Documents::baked());
    assert_eq!(webhook.diagnostics().count(), 0);
    let body = review("nginx:1.27");
    let (status, v) = answer(
        &webhook,
        "POST",
        "/ivpol/validate/allowed-registries",
        Some(body.as_bytes()),
    );
    assert_eq!(status, 200);
    assert_eq!(v["response"]["allowed"], false, "{v}");
    let message = v["response"]["status"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("images must come from ghcr.io"), "{v}");
    let allowed = review("ghcr.io/org/app:1");
    let (_, v) = answer(
        &webhook,
        "//ivpol/validate/allowed-registries/",
        "POST",
        Some(allowed.as_bytes()),
    );
    assert_eq!(
        v["code"], 404,
        "arguments in the wrong order are no route: {v}"
    );
    let (_, v) = answer(
        &webhook,
        "POST",
        "//ivpol/validate/allowed-registries/",
        Some(allowed.as_bytes()),
    );
    assert_eq!(v["response"]["allowed"], true, "{v}");
}

#[test]
fn what_is_not_an_admission_review_is_refused_as_serve_refuses_it() {
    let webhook = Webhook::load(Documents::baked());
    let (status, v) = answer(&webhook, "GET", "/ivpol/validate", Some(b""));
    assert_eq!((status, v["code"].as_u64()), (405, Some(405)), "{v}");
    let (status, _) = answer(&webhook, "POST", "/elsewhere", Some(b""));
    assert_eq!(status, 404);
    let (status, _) = answer(&webhook, "POST", "/ivpol/validate", None);
    assert_eq!(status, 413);
    let (status, _) = answer(&webhook, "POST", "/ivpol/validate", Some(b"not json"));
    assert_eq!(status, 400);
    // A uid is answered with a denial.
    let uid_only =
        br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"7"}}"#;
    let (status, v) = answer(&webhook, "POST", "/ivpol/validate", Some(uid_only));
    assert_eq!(status, 200);
    assert_eq!(v["response"]["uid"], "7");
    assert_eq!(v["response"]["allowed"], false, "{v}");
}

#[test]
fn a_policy_directory_is_read_and_its_unreadable_files_are_diagnostics() {
    let dir = std::env::temp_dir().join(format!("ivpol-webhook-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let sample = Documents::baked().sources.remove(0);
    std::fs::write(dir.join("a.yaml"), &sample.content).expect("write");
    std::fs::write(dir.join("ignored.txt"), "not a policy").expect("write");
    let large = "#".repeat(MAX_POLICY_FILE_BYTES as usize + 1);
    std::fs::write(dir.join("z.yaml"), large).expect("write");
    let documents = Documents::in_dir(&dir).expect("readable");
    assert_eq!(documents.sources.len(), 1);
    assert_eq!(documents.refused.len(), 1);
    let webhook = Webhook::load(documents);
    let lines: Vec<String> = webhook.diagnostics().collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("z.yaml"), "{lines:?}");
    assert!(Documents::in_dir(&dir.join("missing")).is_none());
    std::fs::remove_dir_all(&dir).expect("cleanup");
}
