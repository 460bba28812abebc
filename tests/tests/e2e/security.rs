//! The gate fails closed, end to end through `ivpol serve`:
//! the verification cache never carries a verdict across trust material,
//! a policy that did not load denies instead of vanishing, and a component
//! that gives no answer (out of memory, a deadline) is answered as an
//! `error` result of every policy in scope, never as a 500.

use ivpol_tests::policy::{pod_policy, verifying_policy};
use ivpol_tests::review::{create_pod, pod, review};
use ivpol_tests::sign::{KeyKind, KeyPair, SignOpts, Signer};
use ivpol_tests::verifying::Setup;
use ivpol_tests::{Options, Server};
use serde_json::{json, Value};

const UID: &str = "705ab4f5-6393-11e8-b7cc-42010a800002";

/// A Namespace whose `team-key` annotation holds `pem`, as JSON (which
/// `--namespaces` reads as YAML).
fn namespace_with_key(name: &str, pem: &str) -> String {
    json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/metadata.name": name},
            "annotations": {"team-key": pem},
        },
    })
    .to_string()
}

/// Starts a server whose `per-team` policy takes its cosign key from the
/// request's namespace, with team-a holding the key that signed `image`
/// and team-b another one.
fn per_team_server(setup: &Setup, signer: &Signer) -> Server {
    let other = KeyPair::from_seed(KeyKind::P256, "team b's own key");
    let namespaces = format!(
        "{}\n---\n{}\n",
        namespace_with_key("team-a", &signer.public_pem()),
        namespace_with_key("team-b", &other.public_pem())
    );
    let attestor = "- name: team\n  cosign:\n    key:\n      expression: \"namespaceObject.metadata.annotations['team-key']\"\n    ctlog:\n      insecureIgnoreTlog: true";
    let policy = verifying_policy(
        "per-team",
        attestor,
        "",
        "images.containers.all(i, verifyImageSignatures(i, [attestors.team]) > 0)",
        "not signed by the team",
    );
    Server::start_with(
        &[("per-team.yaml", &policy)],
        Options {
            namespaces: Some(&namespaces),
            extra_args: vec!["--insecure-registry".into(), setup.reg.addr.clone()],
            ..Options::default()
        },
    )
}

fn in_namespace(s: &Server, namespace: &str, image: &str) -> Value {
    s.review(
        "/ivpol/validate/per-team",
        &review("CREATE", namespace, &pod("p", &[image])),
    )
}

/// A key that comes from the request is part of the cache key: once
/// team-a verified a digest with its key, team-b (whose key never signed
/// it) is still denied, in either order, and team-a is served from the
/// cache.
#[test]
fn the_cache_never_carries_a_verdict_across_keys_from_the_request() {
    let setup = Setup::new();
    let signer = Signer::keyed(KeyKind::P256);
    let (image, digest) = setup.image("teams/app");
    signer.sign_image(&setup.pusher(), "teams/app", &digest, &SignOpts::default());
    let denied = "Policy per-team failed: not signed by the team";
    for first_a in [true, false] {
        let s = per_team_server(&setup, &signer);
        let order: [&str; 4] = match first_a {
            true => ["team-a", "team-b", "team-a", "team-b"],
            false => ["team-b", "team-a", "team-b", "team-a"],
        };
        for ns in order {
            let r = in_namespace(&s, ns, &image);
            match ns {
                "team-a" => assert_eq!(r["allowed"], true, "{ns}: {r}\n{}", s.log()),
                _ => {
                    assert_eq!(r["allowed"], false, "{ns} admitted through the cache: {r}");
                    assert_eq!(r["status"]["message"], denied);
                }
            }
        }
        assert!(
            s.metric("ivpol_verification_cache_hits_total") >= 1.0,
            "team-a's second request is a hit"
        );
    }
}

/// A policy with a field ivpol refuses: Deny is not a valid action.
fn broken_policy() -> String {
    pod_policy(
        "broken",
        "\"CREATE\"",
        "  validationActions: [Nope]\n  validationConfigurations: {mutateDigest: false, verifyDigest: false, required: false}\n  attestors: []\n  validations:\n    - expression: \"false\"\n      message: never\n",
    )
}

fn passing_policy(name: &str, actions: &str) -> String {
    pod_policy(
        name,
        "\"CREATE\"",
        &format!("  validationActions: {actions}\n  validationConfigurations: {{mutateDigest: false, verifyDigest: false, required: false}}\n  attestors: []\n  validations:\n    - expression: \"true\"\n      message: never\n"),
    )
}

/// A policy that was rejected at load denies where it is named and on the
/// unnamed route, with its diagnostic; readiness and /metrics name it.
#[test]
fn a_policy_that_failed_to_load_denies_in_its_scope() {
    let files = [
        ("broken.yaml", broken_policy()),
        ("good.yaml", passing_policy("good", "[Deny]")),
    ];
    let files: Vec<(&str, &str)> = files.iter().map(|(n, c)| (*n, c.as_str())).collect();
    // By default readiness, which anyone reaching the port can read, gives
    // counts only: no tenant's diagnostic (or CEL) in it.
    let plain = Server::start(&files);
    let (_, ready) = plain.get("/health/readiness");
    assert_eq!(ready["rejected"], 1, "{ready}");
    assert!(ready.get("rejectedPolicies").is_none(), "{ready}");
    assert!(!ready.to_string().contains("Nope"), "{ready}");
    drop(plain);
    let s = Server::start_with(
        &files,
        Options {
            extra_args: vec!["--readiness-details".into()],
            ..Options::default()
        },
    );
    let (status, ready) = s.get("/health/readiness");
    assert_eq!(status, 200);
    assert_eq!(ready["rejectedPolicies"][0]["name"], "broken", "{ready}");
    let error = ready["rejectedPolicies"][0]["error"]
        .as_str()
        .expect("the diagnostic")
        .to_string();
    assert!(error.contains("validationActions"), "{error}");
    let expected = format!("Policy broken error: policy failed to load: {error}");
    for path in [
        "/ivpol/validate/broken",
        "/ivpol/validate",
        "/ivpol/mutate/broken",
    ] {
        let r = s.review(path, &create_pod(&["ghcr.io/a/b:1"]));
        assert_eq!(r["allowed"], false, "{path}: {r}");
        assert_eq!(r["status"]["message"], expected.as_str(), "{path}");
    }
    // The policies that loaded keep working on their own routes.
    let r = s.review("/ivpol/validate/good", &create_pod(&["ghcr.io/a/b:1"]));
    assert_eq!(r["allowed"], true, "{r}");
    // Namespaced routes are not the cluster policy's scope.
    let r = s.review("/nivpol/validate", &create_pod(&["ghcr.io/a/b:1"]));
    assert_eq!(r["allowed"], true, "{r}");
    let text = s.metrics_text();
    assert!(
        text.contains("ivpol_policy_rejected{policy=\"broken\",namespace=\"\"} 1"),
        "{text}"
    );
}

/// An AdmissionReview whose object is a JSON array of 3.5 million zeros:
/// 7 MiB on the wire (within the body limit), far more as parsed values.
fn memory_hungry_review() -> String {
    let mut r = create_pod(&["ghcr.io/a/b:1"]);
    r["request"]["object"]["metadata"]["annotations"] = json!({"a": "PLACEHOLDER"});
    let zeros = vec!["0"; 3_500_000].join(",");
    r.to_string().replace(
        "{\"a\":\"PLACEHOLDER\"}",
        &format!("{{\"a\":\"x\"}},\"pad\":[{zeros}]"),
    )
}

/// A policy that passes every Pod, reading its object whole: what makes
/// the component parse the object into a tree (a request's object is
/// otherwise read in one pass that keeps no tree), and so run out of
/// memory on [`memory_hungry_review`].
fn object_reading_policy(name: &str, actions: &str) -> String {
    passing_policy(name, actions).replace(
        "expression: \"true\"",
        "expression: \"has(object.metadata)\"",
    )
}

/// A server whose instances get 32 MiB of linear memory, which
/// [`memory_hungry_review`] read whole exceeds.
fn with_32_mib_instances(policies: &[(&str, &str)]) -> Server {
    Server::start_with(
        policies,
        Options {
            extra_args: vec!["--instance-memory-mib".into(), "32".into()],
            ..Options::default()
        },
    )
}

/// The same request, to policies that read only the object's labels,
/// uid and images: the object is read in one pass that keeps no tree, so
/// its size costs its text, and it is judged within 32 MiB.
#[test]
fn a_large_object_no_policy_reads_whole_is_judged_within_the_memory_limit() {
    let s = with_32_mib_instances(&[("pass.yaml", &passing_policy("pass-me", "[Deny]"))]);
    let (status, resp) = s.post("/ivpol/validate", &memory_hungry_review());
    assert_eq!(status, 200, "{resp}");
    assert_eq!(resp["response"]["uid"], UID);
    assert_eq!(resp["response"]["allowed"], true, "{resp}");
}

/// A request that makes the component run out of memory traps it; the
/// answer is still an AdmissionReview (HTTP 200, the uid echoed) mapping
/// an `error` for each policy in scope by its actions: Deny denies, Warn
/// warns. The next request gets a fresh instance.
#[test]
fn an_out_of_memory_trap_is_an_error_result_of_every_policy_in_scope() {
    let s = with_32_mib_instances(&[
        ("deny.yaml", &object_reading_policy("deny-me", "[Deny]")),
        ("warn.yaml", &object_reading_policy("warn-me", "[Warn]")),
    ]);
    let body = memory_hungry_review();
    let cause = "internal error: evaluation ran out of memory (limit 32 MiB per instance)";
    let (status, resp) = s.post("/ivpol/validate", &body);
    assert_eq!(status, 200, "{resp}");
    let r = &resp["response"];
    assert_eq!(r["uid"], UID);
    assert_eq!(r["allowed"], false, "{r}");
    assert_eq!(
        r["status"]["message"],
        format!("Policy deny-me error: {cause}")
    );
    assert_eq!(
        r["warnings"],
        json!([format!("Policy warn-me error: {cause}")])
    );
    let (status, resp) = s.post("/ivpol/validate/warn-me", &body);
    assert_eq!(status, 200, "{resp}");
    assert_eq!(resp["response"]["allowed"], true, "Warn only warns: {resp}");
    assert_eq!(
        resp["response"]["warnings"],
        json!([format!("Policy warn-me error: {cause}")])
    );
    // The first request's two policies each trapped again judged alone;
    // the second had one policy in scope, and no answer at all.
    assert!(s.metric("ivpol_policy_traps_total") >= 2.0);
    assert!(s.metric("ivpol_component_failures_total") >= 1.0);
    let ok = s.review("/ivpol/validate", &create_pod(&["ghcr.io/a/b:1"]));
    assert_eq!(ok["allowed"], true, "a fresh instance answers: {ok}");
}

/// The same trap on a `/nivpol/` route: the host reads nothing of the body
/// but its uid and namespace (a scan, since the component gave no answer),
/// and the namespaced policies of that namespace get the error, those of
/// other namespaces do not.
#[test]
fn a_trap_on_a_namespaced_route_errors_the_policies_of_the_requests_namespace() {
    let namespaced = |name: &str, namespace: &str| {
        object_reading_policy(name, "[Deny]")
            .replace(
                "kind: ImageValidatingPolicy",
                "kind: NamespacedImageValidatingPolicy",
            )
            .replace(
                &format!("  name: {name}\n"),
                &format!("  name: {name}\n  namespace: {namespace}\n"),
            )
    };
    let s = with_32_mib_instances(&[
        ("here.yaml", &namespaced("here", "default")),
        ("elsewhere.yaml", &namespaced("elsewhere", "other")),
    ]);
    let (status, resp) = s.post("/nivpol/validate", &memory_hungry_review());
    assert_eq!(status, 200, "{resp}");
    let r = &resp["response"];
    assert_eq!(r["uid"], UID);
    assert_eq!(r["allowed"], false, "{r}");
    assert_eq!(
        r["status"]["message"],
        "Policy here error: internal error: evaluation ran out of memory (limit 32 MiB per instance)"
    );
}

/// A policy whose evaluation of any Pod needs more than 32 MiB, each
/// expression within the CEL cost limit: 40 chains of variables, each
/// doubling a 1 KiB text ten times (1 MiB), kept for the whole evaluation
/// as Kyverno keeps variables, and each chain read by a validation of its
/// own.
fn memory_hungry_policy(name: &str, actions: &str) -> String {
    let (chains, doublings) = (40, 10);
    let mut variables = String::new();
    let mut validations = String::new();
    for c in 0..chains {
        let text = "x".repeat(1024);
        variables += &format!("    - name: c{c}d0\n      expression: \"'{text}{c}'\"\n");
        for d in 1..=doublings {
            let last = format!("variables.c{c}d{}", d - 1);
            variables += &format!("    - name: c{c}d{d}\n      expression: \"{last} + {last}\"\n");
        }
        validations += &format!(
            "    - expression: \"size(variables.c{c}d{doublings}) > 0\"\n      message: c{c}\n"
        );
    }
    pod_policy(
        name,
        "\"CREATE\"",
        &format!("  validationActions: {actions}\n  validationConfigurations: {{mutateDigest: false, verifyDigest: false, required: false}}\n  attestors: []\n  variables:\n{variables}  validations:\n{validations}"),
    )
}

/// A trap that one policy causes costs that policy alone: it gets the
/// `error` result (no wasm backtrace in it), the request is judged again
/// on fresh instances without it, and every other policy gives its own
/// verdict: a failure still fails, a pass passes, a Warn policy's trap
/// only warns. The metric names the policy.
#[test]
fn a_trap_one_policy_causes_is_that_policys_error_and_the_others_are_judged() {
    let denying = pod_policy(
        "no-pods",
        "\"CREATE\"",
        "  validationConfigurations: {mutateDigest: false, verifyDigest: false, required: false}\n  attestors: []\n  validations:\n    - expression: \"false\"\n      message: no pods here\n",
    );
    let s = with_32_mib_instances(&[
        ("hungry.yaml", &memory_hungry_policy("hungry", "[Deny]")),
        (
            "hungry-warn.yaml",
            &memory_hungry_policy("hungry-warn", "[Warn]"),
        ),
        ("no-pods.yaml", &denying),
        ("passes.yaml", &passing_policy("passes", "[Deny]")),
    ]);
    let cause = "internal error: evaluation ran out of memory (limit 32 MiB per instance)";
    let r = s.review("/ivpol/validate", &create_pod(&["ghcr.io/a/b:1"]));
    assert_eq!(r["allowed"], false, "{r}");
    assert_eq!(
        r["status"]["message"],
        format!("Policy hungry error: {cause}; Policy no-pods failed: no pods here"),
        "{r}"
    );
    assert_eq!(
        r["warnings"],
        json!([format!("Policy hungry-warn error: {cause}")])
    );
    let r = s.review(
        "/ivpol/validate/hungry-warn/passes",
        &create_pod(&["ghcr.io/a/b:1"]),
    );
    assert_eq!(
        r["allowed"], true,
        "the pass stands, the Warn trap warns: {r}"
    );
    assert_eq!(
        r["warnings"],
        json!([format!("Policy hungry-warn error: {cause}")])
    );
    assert!(!s.log().contains("passes error"), "{}", s.log());
    let metrics = s.metrics_text();
    let traps = |policy: &str| {
        (metrics.lines()).any(|l| {
            l.starts_with("ivpol_policy_traps_total{")
                && l.contains(&format!("policy=\"{policy}\""))
        })
    };
    assert!(
        traps("hungry") && traps("hungry-warn") && !traps("passes"),
        "{metrics}"
    );
}

/// A policy of Pods in namespaces selected by `selector` (YAML flow
/// mapping), whose one validation is `expression`.
fn namespace_policy(name: &str, selector: &str, expression: &str) -> String {
    pod_policy(
        name,
        "\"CREATE\"",
        &format!("    namespaceSelector: {selector}\n  validationConfigurations: {{mutateDigest: false, verifyDigest: false, required: false}}\n  attestors: []\n  validations:\n    - expression: {expression:?}\n      message: {name} says no\n"),
    )
}

/// Unknown namespaces: a namespace whose labels ivpol does not know never
/// makes a selector silently not match (Kyverno's stand-in namespace
/// would: `env: prod` fails to match and the pod is admitted unverified),
/// nor judges `namespaceObject` as null. Name-only selectors still work.
#[test]
fn an_unknown_namespace_fails_closed_where_its_labels_are_needed() {
    let namespaces = json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "dev", "labels": {"env": "dev", "kubernetes.io/metadata.name": "dev"}}})
    .to_string();
    let s = Server::start_with(
        &[
            ("prod.yaml", &namespace_policy("prod-only", "{matchLabels: {env: prod}}", "false")),
            (
                "name.yaml",
                &namespace_policy(
                    "by-name",
                    "{matchExpressions: [{key: kubernetes.io/metadata.name, operator: In, values: [stranger]}]}",
                    "false",
                ),
            ),
            (
                "object.yaml",
                &namespace_policy(
                    "ns-object",
                    "{}",
                    "namespaceObject == null || namespaceObject.metadata.labels.env != 'prod'",
                ),
            ),
        ],
        Options {
            namespaces: Some(&namespaces),
            ..Options::default()
        },
    );
    let in_ns = |ns: &str, policy: &str| {
        s.review(
            &format!("/ivpol/validate/{policy}"),
            &review("CREATE", ns, &pod("p", &["ghcr.io/a/b:1"])),
        )
    };
    // A known namespace: the selector decides, namespaceObject is real.
    assert_eq!(in_ns("dev", "prod-only")["allowed"], true);
    assert_eq!(in_ns("dev", "ns-object")["allowed"], true);
    assert_eq!(in_ns("dev", "by-name")["allowed"], true);
    // An unknown one: an error that denies, naming the namespace.
    for policy in ["prod-only", "ns-object"] {
        let r = in_ns("stranger", policy);
        assert_eq!(r["allowed"], false, "{policy}: {r}");
        let message = r["status"]["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with(&format!("Policy {policy} error: "))
                && message.contains("namespace \"stranger\" is not known to ivpol"),
            "{policy}: {message}"
        );
    }
    // The name alone answers a name-only selector: no error, a real verdict.
    let r = in_ns("stranger", "by-name");
    assert_eq!(
        r["status"]["message"], "Policy by-name failed: by-name says no",
        "{r}"
    );
    assert_eq!(in_ns("elsewhere", "by-name")["allowed"], true);
}
