use super::*;

const JSON_POLICY: &str = r#"apiVersion: policies.kyverno.io/v1beta1
kind: ImageValidatingPolicy
metadata:
  name: ivpol-json
spec:
  evaluation:
    mode: JSON
  matchConstraints:
    resourceRules:
      - apiGroups: [""]
        apiVersions: ["v1"]
        operations: ["CREATE"]
        resources: ["pods"]
  images:
    - name: bar
      expression: "[object.foo.bar]"
  validationConfigurations:
    verifyDigest: false
    required: false
  attestors: []
  validations:
    - expression: "images.bar.all(i, parseImageReference(i).tag() == 'signed')"
      message: image is not the signed one
"#;

fn cache() -> Arc<VerificationCache> {
    VerificationCache::new(&crate::cache::CacheConfig::disabled())
}

async fn pool() -> Pool {
    let net = Arc::new(Net::new(Default::default(), Default::default(), None, None).expect("net"));
    let runtime =
        Arc::new(Runtime::new(EMBEDDED_COMPONENT, net, cache(), None).expect("component compiles"));
    let docs = vec![Document {
        source: "json.yaml".into(),
        content: JSON_POLICY.into(),
    }];
    Pool::load(runtime, docs).await.expect("policies load")
}

/// JSON mode runs through the real component in wasmtime.
#[tokio::test]
async fn json_mode_payloads_pass_and_fail_in_the_component() {
    let pool = pool().await;
    assert!(pool.summary().diagnostics.is_empty());
    let deadline = Duration::from_secs(10);
    let pass = r#"{"foo":{"bar":"ghcr.io/kyverno/test-verify-image:signed"}}"#;
    let fail = r#"{"foo":{"bar":"ghcr.io/kyverno/test-verify-image:unsigned"}}"#;
    let v = pool
        .evaluate_json(pass.into(), deadline)
        .await
        .expect("no trap")
        .expect("valid");
    assert!(v.allowed);
    assert!(matches!(v.results[0].status, wit::Status::Pass));
    let v = pool
        .evaluate_json(fail.into(), deadline)
        .await
        .expect("no trap")
        .expect("valid");
    assert!(!v.allowed);
    assert_eq!(
        v.message.as_deref(),
        Some("Policy ivpol-json failed: image is not the signed one")
    );
    let bad = pool
        .evaluate_json("{".into(), deadline)
        .await
        .expect("no trap");
    assert!(bad.is_err());
}

/// An instance whose epoch deadline has passed traps, and the pool
/// recovers with a fresh instance.
#[tokio::test]
async fn a_short_deadline_never_poisons_the_pool() {
    let pool = pool().await;
    let payload = r#"{"foo":{"bar":"a:signed"}}"#.to_string();
    let trapped = pool
        .evaluate_json(payload.clone(), Duration::from_millis(0))
        .await;
    // A zero deadline is one tick; a fast evaluation may still finish within it.
    if trapped.is_err() {
        let why = format!("{:?}", trapped.err());
        assert!(why.contains("deadline"), "{why}");
    }
    let ok = pool
        .evaluate_json(payload, Duration::from_secs(10))
        .await
        .expect("fresh instance");
    assert!(ok.expect("valid").allowed);
}
