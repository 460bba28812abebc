//! The CEL runtime cost limit (`cel::PER_CALL_COST_LIMIT`, the vendored
//! `cel::cost`): expressions that would exhaust CPU or memory on a large
//! object end as the policy's `error` result with Kubernetes' message, in
//! validations and in matchConditions alike (even under
//! `failurePolicy: Ignore`), while the sample policies stay well inside it.

use super::*;
use ivpol_cel::COST_LIMIT_MESSAGE;

/// A pod with `n` containers and a 20 KB annotation.
fn large_pod(n: usize) -> Value {
    let names: Vec<String> = (0..n)
        .map(|i| format!("registry.example/app{i}:1"))
        .collect();
    let images: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut pod = pod("big", &images);
    pod["metadata"]["annotations"] = json!({"big": "x".repeat(20_000)});
    pod
}

fn validating(expression: &str) -> String {
    ivp(
        "costly",
        &spec(&[
            PODS,
            RELAXED,
            NO_ATTESTORS,
            &format!("validations:\n  - expression: >-\n      {expression}\n"),
        ]),
    )
}

fn cost_error(v: &Verdict) {
    assert!(!v.allowed, "{v:?}");
    assert_eq!(
        outcomes(v),
        one(
            "costly",
            Status::Error,
            &format!("failed to evaluate policy: {COST_LIMIT_MESSAGE}")
        )
    );
}

const PATHOLOGICAL: &[(&str, &str)] = &[
    (
        "map nested in map",
        "object.spec.containers.map(c, object.spec.containers.map(d, d.name)).size() > 0",
    ),
    (
        "comprehension over comprehension",
        "object.spec.containers.all(c, object.spec.containers.exists(d, d.name == c.name))",
    ),
    (
        "copies of the whole object",
        "object.spec.containers.map(c, object).size() > 0",
    ),
    (
        "string growth by concatenation",
        "object.spec.containers.map(c, object.metadata.annotations.big + c.name).size() > 0",
    ),
    (
        "string growth by replace",
        "object.metadata.annotations.big.replace('', object.metadata.annotations.big).size() > 0",
    ),
    (
        "string growth by join",
        "object.spec.containers.map(c, 'x').join(object.metadata.annotations.big).size() > 0",
    ),
    (
        "repeated growth",
        "[[[[object.metadata.annotations.big].map(s, s + s + s + s + s + s + s + s)[0]].map(s, s + s + s + s + s + s + s + s)[0]].map(s, s + s + s + s + s + s + s + s)[0]].map(s, s + s + s + s + s + s + s + s)[0].size() > 0",
    ),
    (
        "split into characters",
        "object.spec.containers.all(c, object.metadata.annotations.big.split('').size() > 0)",
    ),
];

#[test]
fn pathological_validations_are_errors_with_kubernetes_message() {
    let request = create(&large_pod(2000));
    for (what, expression) in PATHOLOGICAL {
        let set = load(&[validating(expression)]);
        let v = validate(&set, &request);
        assert!(v.results.len() == 1, "{what}: {v:?}");
        assert_eq!(
            (v.results[0].status, v.results[0].message.as_str()),
            (
                Status::Error,
                format!("failed to evaluate policy: {COST_LIMIT_MESSAGE}").as_str()
            ),
            "{what}"
        );
        cost_error(&v);
    }
}

#[test]
fn the_same_expressions_on_a_small_pod_are_fine() {
    // The limit is about size, not about the shape of an expression: the
    // first three are linear or quadratic in the containers, cheap for two.
    let mut small = pod("small", &["registry.example/a:1", "registry.example/b:1"]);
    small["metadata"]["annotations"] = json!({"big": "xy"});
    for (what, expression) in &PATHOLOGICAL[..2] {
        let set = load(&[validating(expression)]);
        let v = validate(&set, &create(&small));
        assert!(
            v.results.iter().all(|r| r.status != Status::Error),
            "{what}: {v:?}"
        );
    }
}

#[test]
fn a_match_condition_over_the_limit_is_an_error_even_under_ignore() {
    let policy = ivp(
        "costly",
        &spec(&[
            PODS,
            RELAXED,
            NO_ATTESTORS,
            "failurePolicy: Ignore\n",
            "matchConditions:\n  - name: nested\n    expression: >-\n      object.spec.containers.all(c, object.spec.containers.all(d, d.name != ''))\n",
            "validations:\n  - expression: 'false'\n",
        ]),
    );
    let set = load(&[policy]);
    let v = validate(&set, &create(&large_pod(2000)));
    assert_eq!(v.results.len(), 1, "{v:?}");
    assert_eq!(v.results[0].status, Status::Error);
    assert!(
        v.results[0].message.contains(COST_LIMIT_MESSAGE),
        "{}",
        v.results[0].message
    );
}

#[test]
fn a_variable_is_charged_to_the_expression_that_reads_it() {
    let policy = ivp(
        "costly",
        &spec(&[
            PODS,
            RELAXED,
            NO_ATTESTORS,
            "variables:\n  - name: pairs\n    expression: >-\n      object.spec.containers.map(c, object.spec.containers.map(d, d.name))\n",
            "validations:\n  - expression: 'size(variables.pairs) > 0'\n",
        ]),
    );
    let set = load(&[policy]);
    cost_error(&validate(&set, &create(&large_pod(2000))));
}

/// Every sample policy, on an ordinary pod and on a 300-container one:
/// whatever the verdict (no registry is reachable here), never the cost
/// limit.
#[test]
fn sample_policies_stay_within_the_limit() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../policies");
    let mut docs = Vec::new();
    for entry in std::fs::read_dir(dir).expect("policies/") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "yaml") {
            docs.push(SourceDocument {
                source: path.display().to_string(),
                content: std::fs::read_to_string(&path).expect("readable"),
            });
        }
    }
    assert!(docs.len() >= 8, "{} samples", docs.len());
    let set = PolicySet::load(&docs);
    assert!(set.diagnostics().is_empty(), "{:?}", set.diagnostics());
    for object in [pod("p", &[NGINX, SIGNED, &pinned()]), large_pod(300)] {
        let v = validate(&set, &create(&object));
        assert!(!v.results.is_empty());
        for r in &v.results {
            assert!(
                !r.message.contains(COST_LIMIT_MESSAGE),
                "{}: {}",
                r.policy,
                r.message
            );
        }
    }
}
