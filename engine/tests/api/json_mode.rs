//! The engine against requests: JSON mode.

use super::*;
use ivpol_engine::engine::InputError;

fn json_policy(name: &str, config: &str) -> String {
    ivp(
        name,
        &spec(&[
            "evaluation:\n  mode: JSON\n",
            PODS,
            "matchImageReferences:\n  - glob: \"ghcr.io/*\"\n",
            config,
            NO_ATTESTORS,
            r#"
            images:
              - name: bar
                expression: "[object.foo.bar]"
            validations:
              - expression: "images.bar.all(i, !i.contains(':unsigned'))"
                messageExpression: "'unsigned: ' + images.bar.join(',')"
            "#,
        ]),
    )
}

fn payload(image: &str) -> String {
    json!({"foo": {"bar": image}}).to_string()
}

#[test]
fn json_mode_passes_and_fails_on_custom_images() {
    let set = load(&[json_policy("check-json", RELAXED)]);
    let v = set
        .evaluate_json_offline(&payload(SIGNED))
        .expect("evaluates");
    assert_allowed_silently(&v);
    assert_eq!(outcomes(&v), one("check-json", Status::Pass, "success"));
    let v = set
        .evaluate_json_offline(&payload(UNSIGNED))
        .expect("evaluates");
    assert_denied(
        &v,
        &format!("Policy check-json failed: unsigned: {UNSIGNED}"),
    );
    // An image outside matchImageReferences is not in `images.bar`.
    let v = set
        .evaluate_json_offline(&payload(NGINX))
        .expect("evaluates");
    assert_eq!(outcomes(&v), one("check-json", Status::Pass, "success"));
}

#[test]
fn json_mode_applies_verify_digest_and_required_by_default() {
    let set = load(&[json_policy("check-json", "")]);
    let v = set
        .evaluate_json_offline(&payload(SIGNED))
        .expect("evaluates");
    assert_eq!(
        outcomes(&v),
        one(
            "check-json",
            Status::Fail,
            &format!("image {SIGNED} does not have a digest")
        )
    );
    let image = format!("{SIGNED}@{DIGEST}");
    let v = set
        .evaluate_json_offline(&payload(&image))
        .expect("evaluates");
    assert_eq!(
        outcomes(&v),
        one("check-json", Status::Fail, &not_verified(&image))
    );
}

#[test]
fn json_mode_match_conditions_read_the_payload() {
    let policy = json_policy("check-json", RELAXED).replace(
        "  images:\n",
        "  matchConditions:\n    - name: has-foo\n      expression: \"has(object.foo.enabled) && object.foo.enabled\"\n  images:\n",
    );
    let set = load(&[policy]);
    assert_no_results(
        &set.evaluate_json_offline(&payload(UNSIGNED))
            .expect("evaluates"),
    );
    let enabled = json!({"foo": {"bar": UNSIGNED, "enabled": true}}).to_string();
    assert!(
        !set.evaluate_json_offline(&enabled)
            .expect("evaluates")
            .allowed
    );
}

#[test]
fn json_and_kubernetes_policies_never_mix() {
    let kubernetes = simple(
        "kubernetes-mode",
        "validations:\n  - expression: \"false\"\n    message: k8s\n",
    );
    let set = load(&[json_policy("check-json", RELAXED), kubernetes]);
    let v = set
        .evaluate_json_offline(&payload(UNSIGNED))
        .expect("evaluates");
    assert_eq!(policies_of(&v), vec!["check-json"]);
    let mut p = pod("p", &[UNSIGNED]);
    p["foo"] = json!({"bar": UNSIGNED});
    let v = validate(&set, &create(&p));
    assert_eq!(policies_of(&v), vec!["kubernetes-mode"]);
    let v = mutate(&set, &create(&p));
    assert_no_results(&v);
}

#[test]
fn json_mode_needs_no_match_constraints() {
    // As Kyverno's own check-json CLI case writes it.
    let policy = ivp(
        "check-json",
        &spec(&[
            "evaluation:\n  mode: JSON\n",
            RELAXED,
            NO_ATTESTORS,
            "images:\n  - name: bar\n    expression: \"[object.foo.bar]\"\n",
            "validations:\n  - expression: \"images.bar.all(i, !i.contains(':unsigned'))\"\n",
        ]),
    );
    assert!(!policy.contains("matchConstraints"), "{policy}");
    let set = load(&[policy]);
    let v = set
        .evaluate_json_offline(r#"{"foo":{"bar":"ghcr.io/kyverno/test-verify-image:unsigned"}}"#)
        .expect("evaluates");
    assert_eq!(v.results.len(), 1, "{v:?}");
    assert_eq!(v.results[0].status, Status::Fail);
    // A Kubernetes-mode policy still needs them.
    let k8s = ivp(
        "k",
        &spec(&[
            RELAXED,
            NO_ATTESTORS,
            "validations:\n  - expression: \"true\"\n",
        ]),
    );
    let set = PolicySet::load(&[SourceDocument {
        source: "k.yaml".into(),
        content: k8s,
    }]);
    assert!(set.diagnostics()[0].message.contains("matchConstraints"));
}

#[test]
fn json_mode_rejects_a_payload_that_is_not_json() {
    let set = load(&[json_policy("check-json", RELAXED)]);
    assert_eq!(
        set.evaluate_json_offline("{not json").unwrap_err(),
        InputError::PayloadNotJson("key must be a string at line 1 column 2".into())
    );
}

/// JSON mode without a network.
trait OfflineJson {
    fn evaluate_json_offline(&self, payload: &str) -> Result<Verdict, InputError>;
}

impl OfflineJson for PolicySet {
    fn evaluate_json_offline(&self, payload: &str) -> Result<Verdict, InputError> {
        self.evaluate_json(payload, std::sync::Arc::new(Offline))
    }
}
