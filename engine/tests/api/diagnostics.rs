//! The engine against requests: diagnostics.

use super::*;

#[test]
fn a_broken_policy_is_a_diagnostic_and_the_others_still_apply() {
    let broken = simple("broken", "validations:\n  - expression: \"object.(\"\n");
    let good = with_actions("check-name", "[Deny]");
    let set = PolicySet::load(&[
        SourceDocument {
            source: "broken.yaml".into(),
            content: broken,
        },
        SourceDocument {
            source: "good.yaml".into(),
            content: good,
        },
    ]);
    assert_eq!(set.diagnostics().len(), 1);
    let d = &set.diagnostics()[0];
    assert_eq!(d.source, "broken.yaml");
    assert_eq!(d.policy.as_deref(), Some("broken"));
    assert!(
        d.message.starts_with("spec.validations[0].expression"),
        "{}",
        d.message
    );
    // The broken policy still judges: it denies on the unnamed route
    // (ivpol cannot know what it would have matched); the good one runs.
    let v = validate(&set, &create(&pod("bad", &[SIGNED])));
    assert_eq!(policies_of(&v), vec!["broken", "check-name"]);
    let broken = &v.results[0];
    assert_eq!(broken.status, Status::Error);
    assert!(
        broken
            .message
            .starts_with("policy failed to load: spec.validations[0].expression"),
        "{}",
        broken.message
    );
    assert!(!v.allowed);
}

/// What does not have exactly the type its field needs is refused at load
/// with Kyverno's words (`pkg/cel/compiler`, cel-go's `IsExactType`), and
/// an operator no overload takes with cel-go's. A `dyn` result (a field of
/// the request's object) is refused too, as in Kyverno; a known type read
/// from it (`string(…)`, a comparison, a typed variable) is not.
#[test]
fn type_errors_are_load_diagnostics_with_their_field_path() {
    for (extra, want) in [
        (
            "validations:\n  - expression: \"1 + 1\"\n",
            "spec.validations[0].expression: Invalid value: \"1 + 1\": output is expected to be of type bool",
        ),
        (
            "validations:\n  - expression: \"false\"\n    messageExpression: \"42\"\n",
            "spec.validations[0].messageExpression: Invalid value: \"42\": output is expected to be of type string",
        ),
        (
            "matchConditions:\n  - name: c\n    expression: \"'yes'\"\nvalidations:\n  - expression: \"true\"\n",
            "spec.matchConditions[0].expression: Invalid value: \"'yes'\": output is expected to be of type bool",
        ),
        (
            "auditAnnotations:\n  - key: k\n    valueExpression: \"1\"\nvalidations:\n  - expression: \"true\"\n",
            "spec.auditAnnotations[0].valueExpression: Invalid value: \"1\": output is expected to be either of type string or null_type",
        ),
        (
            "validations:\n  - expression: \"object.metadata.name\"\n",
            "spec.validations[0].expression: Invalid value: \"object.metadata.name\": output is expected to be of type bool",
        ),
        (
            "validations:\n  - expression: \"false\"\n    messageExpression: \"object.spec.containers\"\n",
            "spec.validations[0].messageExpression: Invalid value: \"object.spec.containers\": output is expected to be of type string",
        ),
        (
            "matchConditions:\n  - name: c\n    expression: \"object.metadata.name\"\nvalidations:\n  - expression: \"true\"\n",
            "spec.matchConditions[0].expression: Invalid value: \"object.metadata.name\": output is expected to be of type bool",
        ),
        (
            "auditAnnotations:\n  - key: k\n    valueExpression: \"object.metadata.name\"\nvalidations:\n  - expression: \"true\"\n",
            "spec.auditAnnotations[0].valueExpression: Invalid value: \"object.metadata.name\": output is expected to be either of type string or null_type",
        ),
        (
            "matchImageReferences:\n  - expression: \"ref\"\nvalidations:\n  - expression: \"true\"\n",
            "spec.matchImageReferences[0].expression: Invalid value: \"ref\": output is expected to be of type bool",
        ),
        (
            "variables:\n  - name: v\n    expression: \"object.metadata.name\"\nvalidations:\n  - expression: \"variables.v\"\n",
            "spec.validations[0].expression: Invalid value: \"variables.v\": output is expected to be of type bool",
        ),
        (
            "validations:\n  - expression: \"size(object.spec.containers) + 'a' == 'b'\"\n",
            "spec.validations[0].expression: expression `size(object.spec.containers) + 'a' == 'b'`: found no matching overload for '_+_' applied to '(int, string)'",
        ),
    ] {
        let set = PolicySet::load(&[SourceDocument {
            source: "typed.yaml".into(),
            content: simple("typed", extra),
        }]);
        let messages: Vec<&str> = set.diagnostics().iter().map(|d| d.message.as_str()).collect();
        assert_eq!(messages, vec![want], "{extra}");
    }
}

/// A file that does not parse still names its policy: the policy's own
/// route denies (not only the unnamed one), and an NIVP's denies in its
/// namespace.
#[test]
fn a_broken_file_denies_on_the_routes_its_policy_names() {
    let broken = "apiVersion: policies.kyverno.io/v1\nkind: ImageValidatingPolicy\nmetadata:\n  name: p1\nspec:\n  validations: [unclosed\n";
    let set = PolicySet::load(&[SourceDocument {
        source: "p1.yaml".into(),
        content: broken.into(),
    }]);
    let request = create(&pod("p", &[SIGNED]));
    let named = admit_with(
        &set,
        Phase::Validate,
        &Scope::Cluster,
        &["p1"],
        &request,
        None,
    );
    assert!(!named.allowed, "{named:?}");
    assert!(
        named
            .message
            .as_deref()
            .unwrap_or_default()
            .starts_with("Policy p1 error: policy failed to load: not valid YAML"),
        "{named:?}"
    );
    let nivp = broken
        .replace(
            "kind: ImageValidatingPolicy",
            "kind: NamespacedImageValidatingPolicy",
        )
        .replace("  name: p1\n", "  name: p1\n  namespace: team\n");
    let set = PolicySet::load(&[SourceDocument {
        source: "p1.yaml".into(),
        content: nivp,
    }]);
    let mut request = create(&pod("p", &[SIGNED]));
    request["namespace"] = json!("team");
    let team = Scope::Namespaced("team".into());
    let v = admit_with(&set, Phase::Validate, &team, &["p1"], &request, None);
    assert!(!v.allowed, "{v:?}");
    let cluster = admit_with(&set, Phase::Validate, &Scope::Cluster, &[], &request, None);
    assert!(
        cluster.allowed,
        "a broken NIVP claimed the cluster route: {cluster:?}"
    );
}

/// A document with no name that can be read may have been any policy: a
/// route naming a policy that is neither loaded nor rejected denies while
/// it stays unreadable, naming its file; a loaded policy's route does not.
#[test]
fn an_unnamed_broken_file_denies_routes_that_name_an_unknown_policy() {
    let good = simple("good", "validations:\n  - expression: \"true\"\n");
    let set = PolicySet::load(&[
        SourceDocument {
            source: "good.yaml".into(),
            content: good,
        },
        SourceDocument {
            source: "junk.yaml".into(),
            content: "{[ not yaml".into(),
        },
    ]);
    let request = create(&pod("p", &[SIGNED]));
    let unknown = admit_with(
        &set,
        Phase::Validate,
        &Scope::Cluster,
        &["p9"],
        &request,
        None,
    );
    assert!(!unknown.allowed, "{unknown:?}");
    assert!(
        unknown
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("junk.yaml#0"),
        "{unknown:?}"
    );
    let known = admit_with(
        &set,
        Phase::Validate,
        &Scope::Cluster,
        &["good"],
        &request,
        None,
    );
    assert!(known.allowed, "{known:?}");
}
