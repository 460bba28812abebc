//! `PolicySet::review`: the AdmissionReview from body bytes to response
//! bytes, as the host hands it over and sends it back.

use super::*;
use ivpol_engine::engine::review::{annotation_key, Namespaces, Route, Trapped, Unjudgeable};
use std::cell::RefCell;

/// Namespaces that count how often they are asked.
#[derive(Default)]
struct Known {
    objects: Vec<(String, String)>,
    asked: RefCell<Vec<String>>,
}

impl Namespaces for Known {
    fn get(&self, name: &str) -> Option<String> {
        self.asked.borrow_mut().push(name.to_string());
        self.objects
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, o)| o.clone())
    }
}

fn route(phase: Phase, namespaced: bool) -> Route {
    Route {
        phase,
        namespaced,
        names: Vec::new(),
        trapped: Vec::new(),
    }
}

fn review_body(request: &Value) -> Vec<u8> {
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
        .to_string()
        .into_bytes()
}

/// `review` offline, with the namespaces `ns`.
fn judge(
    set: &PolicySet,
    route: &Route,
    body: &[u8],
    ns: &Known,
) -> Result<ivpol_engine::engine::review::Answer, Unjudgeable> {
    set.review(route, body, ns, std::sync::Arc::new(Offline))
}

fn answer(set: &PolicySet, route: &Route, body: &[u8], ns: &Known) -> Value {
    let a = judge(set, route, body, ns).expect("judged");
    serde_json::from_slice(&a.response).expect("the response is JSON")
}

fn failing() -> PolicySet {
    load(&[simple(
        "no-pods",
        "validations:\n  - expression: 'false'\n    message: no pods here",
    )])
}

#[test]
fn a_review_is_answered_by_uid_with_the_verdict() {
    let set = failing();
    let request = create(&pod("p", &[NGINX]));
    let got = answer(
        &set,
        &route(Phase::Validate, false),
        &review_body(&request),
        &Known::default(),
    );
    assert_eq!(got["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(got["kind"], "AdmissionReview");
    assert_eq!(got["response"]["uid"], request["uid"]);
    assert_eq!(got["response"]["allowed"], false);
    assert_eq!(
        got["response"]["status"]["message"],
        "Policy no-pods failed: no pods here"
    );
}

#[test]
fn the_subject_and_verdict_come_back_typed() {
    let set = failing();
    let request = create(&pod("p", &[NGINX]));
    let a = judge(
        &set,
        &route(Phase::Validate, false),
        &review_body(&request),
        &Known::default(),
    )
    .expect("judged");
    assert_eq!(a.subject.uid, request["uid"].as_str().unwrap_or_default());
    assert_eq!(
        (a.subject.kind.as_str(), a.subject.operation.as_str()),
        ("Pod", "CREATE")
    );
    let verdict = a.verdict.expect("evaluated");
    assert!(!verdict.allowed);
    assert_eq!(verdict.results[0].status, Status::Fail);
}

#[test]
fn a_mutate_route_answers_delete_without_evaluating() {
    let set = failing();
    let p = pod("p", &[NGINX]);
    let request = request_for("DELETE", None, Some(&p));
    let a = judge(
        &set,
        &route(Phase::Mutate, false),
        &review_body(&request),
        &Known::default(),
    )
    .expect("judged");
    assert!(a.verdict.is_none());
    let got: Value = serde_json::from_slice(&a.response).expect("JSON");
    assert_eq!(got["response"]["allowed"], true);
    // The validate route judges the same DELETE.
    let got = answer(
        &set,
        &route(Phase::Validate, false),
        &review_body(&request),
        &Known::default(),
    );
    assert_eq!(got["response"]["allowed"], true, "{got}");
}

#[test]
fn bodies_that_cannot_be_judged_say_why() {
    let set = failing();
    let request = create(&pod("p", &[NGINX]));
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"{".to_vec(), "body is not valid JSON"),
        // JSON is UTF-8 (RFC 8259), in its strings too.
        (b"{\"kind\": \"\xff\"}".to_vec(), "body is not valid JSON"),
        (b"[1]".to_vec(), "body is not an AdmissionReview"),
        (
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "Pod", "request": request})
                .to_string()
                .into_bytes(),
            "kind must be AdmissionReview",
        ),
        (
            json!({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": request})
                .to_string()
                .into_bytes(),
            "apiVersion must be admission.k8s.io/v1",
        ),
        (
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": "x"})
                .to_string()
                .into_bytes(),
            "AdmissionReview has no request",
        ),
        (
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"})
                .to_string()
                .into_bytes(),
            "AdmissionReview has no request",
        ),
    ];
    for (body, why) in cases {
        let err = judge(
            &set,
            &route(Phase::Validate, false),
            &body,
            &Known::default(),
        )
        .expect_err("not judged");
        let class_ok = match why {
            "body is not valid JSON" => matches!(err, Unjudgeable::NotJson(_)),
            _ => matches!(err, Unjudgeable::NotAdmissionReview(_)),
        };
        assert!(class_ok, "{err:?} is of the wrong class");
        assert!(err.to_string().contains(why), "{err} should say {why}");
    }
    let mut no_uid = request.clone();
    no_uid["uid"] = json!("");
    let err = judge(
        &set,
        &route(Phase::Validate, false),
        &review_body(&no_uid),
        &Known::default(),
    )
    .expect_err("no uid");
    assert_eq!(
        err,
        Unjudgeable::MalformedRequest(ivpol_policy::admission::RequestError::Missing("uid"))
    );
}

#[test]
fn the_namespace_is_asked_for_only_when_a_policy_needs_it() {
    let set = failing();
    let request = create(&pod("p", &[NGINX]));
    let ns = Known::default();
    answer(
        &set,
        &route(Phase::Validate, false),
        &review_body(&request),
        &ns,
    );
    assert!(ns.asked.borrow().is_empty(), "{:?}", ns.asked.borrow());

    let selecting = load(&[ivp(
        "prod-only",
        &spec(&[
            "matchConstraints:\n  namespaceSelector:\n    matchLabels:\n      env: prod\n  resourceRules:\n    - apiGroups: ['']\n      apiVersions: [v1]\n      operations: [CREATE]\n      resources: [pods]",
            RELAXED,
            NO_ATTESTORS,
            "validations:\n  - expression: 'false'\n    message: not in prod",
        ]),
    )]);
    let mut prod = request.clone();
    prod["namespace"] = json!("prod");
    let ns = Known {
        objects: vec![(
            "prod".into(),
            namespace_object("prod", json!({"env": "prod"})),
        )],
        ..Known::default()
    };
    let got = answer(
        &selecting,
        &route(Phase::Validate, false),
        &review_body(&prod),
        &ns,
    );
    assert_eq!(*ns.asked.borrow(), vec!["prod".to_string()]);
    assert_eq!(got["response"]["allowed"], false, "{got}");
    // A namespace the host does not know fails closed under a selector.
    let mut elsewhere = request;
    elsewhere["namespace"] = json!("unknown");
    let got = answer(
        &selecting,
        &route(Phase::Validate, false),
        &review_body(&elsewhere),
        &ns,
    );
    assert_eq!(got["response"]["allowed"], false, "{got}");
}

#[test]
fn namespaced_routes_see_the_policies_of_the_requests_namespace() {
    let set = load(&[nivp(
        "team-rule",
        "team",
        &spec(&[
            PODS,
            RELAXED,
            NO_ATTESTORS,
            "validations:\n  - expression: 'false'\n    message: team says no",
        ]),
    )]);
    let mut request = create(&pod("p", &[NGINX]));
    request["namespace"] = json!("team");
    let got = answer(
        &set,
        &route(Phase::Validate, true),
        &review_body(&request),
        &Known::default(),
    );
    assert_eq!(got["response"]["allowed"], false, "{got}");
    let got = answer(
        &set,
        &route(Phase::Validate, false),
        &review_body(&request),
        &Known::default(),
    );
    assert_eq!(got["response"]["allowed"], true, "{got}");
}

/// k8s.io/apimachinery's IsQualifiedName, which the API server applies
/// to `<webhook name>/<key>`: a DNS subdomain prefix, then a name of at
/// most 63 characters, alphanumeric at both ends, `-`, `_` and `.`
/// inside.
fn is_qualified_name(s: &str) -> bool {
    let (prefix, name) = match s.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, s),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|l| {
                !l.is_empty()
                    && l.len() <= 63
                    && l.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                    && l.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                    && l.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            })
    });
    name_ok && prefix_ok
}

#[test]
fn annotation_keys_are_qualified_names_under_a_webhook_prefix() {
    let long = "p".repeat(300);
    let cut_in_accents = format!("{}{}b", "a".repeat(45), "é".repeat(10));
    let accents = format!("{}{}b", "a".repeat(45), "é".repeat(4));
    let cases = [
        ("require-signed", None),
        ("a.b.c", Some("team-a")),
        (long.as_str(), None),
        ("ends-with-dash-", None),
        ("Weird Name/with slash", Some("ns")),
    ];
    for (policy, ns) in cases {
        let key = annotation_key(policy, ns);
        assert!(key.len() <= 63, "{key}");
        let full = format!("ivpol-validate.ivpol.svc/{key}");
        assert!(is_qualified_name(&full), "{full}");
    }
    let spelled = [
        (
            ("require-signed", None),
            "verification.require-signed".to_string(),
        ),
        (
            ("a.b.c", Some("team-a")),
            "verification.team-a.a.b.c".into(),
        ),
        (
            ("Weird Name/with slash", Some("ns")),
            "verification.ns.Weird-Name-with-slash".into(),
        ),
        (
            (long.as_str(), None),
            format!("verification.{}", "p".repeat(50)),
        ),
        (
            ("ends-with-dash-", None),
            "verification.ends-with-dash".into(),
        ),
        // A character is one `-`, however many bytes it takes.
        (("café-é", None), "verification.caf".into()),
        (("ünïcode", Some("ns")), "verification.ns.-n-code".into()),
        // The 63 are counted in characters too.
        (
            (cut_in_accents.as_str(), None),
            format!("verification.{}", "a".repeat(45)),
        ),
        (
            (accents.as_str(), None),
            format!("verification.{}----b", "a".repeat(45)),
        ),
    ];
    for ((policy, ns), want) in spelled {
        assert_eq!(annotation_key(policy, ns), want, "{policy} in {ns:?}");
    }
}

/// A policy the host found trapping the component on this request is an
/// `error` result with the host's cause, and is not evaluated again (its
/// `false` would have been a failure); the others are judged as usual.
#[test]
fn a_trapped_policy_is_an_error_and_the_others_are_judged() {
    let set = load(&[
        simple(
            "no-pods",
            "validations:\n  - expression: 'false'\n    message: no pods here",
        ),
        simple(
            "traps",
            "validations:\n  - expression: 'false'\n    message: never evaluated",
        ),
        simple(
            "passes",
            "validations:\n  - expression: 'true'\n    message: fine",
        ),
    ]);
    let cause = "the policy component trapped: wasm `unreachable` instruction executed";
    let mut trapping = route(Phase::Validate, false);
    trapping.trapped = vec![Trapped {
        name: "traps".into(),
        cause: cause.into(),
    }];
    let request = create(&pod("p", &[NGINX]));
    let a = judge(&set, &trapping, &review_body(&request), &Known::default()).expect("judged");
    let verdict = a.verdict.expect("evaluated");
    let statuses: Vec<(&str, Status)> = (verdict.results.iter())
        .map(|r| (r.policy.as_str(), r.status))
        .collect();
    assert_eq!(
        statuses,
        [
            ("no-pods", Status::Fail),
            ("passes", Status::Pass),
            ("traps", Status::Error)
        ]
    );
    assert_eq!(
        verdict.message.as_deref(),
        Some(&*format!(
            "Policy no-pods failed: no pods here; Policy traps error: internal error: {cause}"
        ))
    );
}

/// The failure answer (the host's call when `review` gave none): every
/// policy the route reaches is an `error` with the host's cause, mapped
/// by its actions, and nothing is evaluated (the passing policies error
/// too); a route naming one policy reaches only that one, a namespaced
/// route only the request namespace's policies.
#[test]
fn a_failure_answer_errors_every_policy_in_reach_by_its_actions() {
    let set = load(&[
        simple(
            "deny",
            "validations:\n  - expression: 'true'\n    message: fine",
        ),
        simple(
            "warn",
            "validationActions: [Warn]\nvalidations:\n  - expression: 'true'\n    message: fine",
        ),
        simple(
            "audit",
            "validationActions: [Audit]\nvalidations:\n  - expression: 'true'\n    message: fine",
        ),
    ]);
    let all = route(Phase::Validate, false);
    let (response, verdict) = set.failure_answer(&all, "u-1", "default", "boom");
    assert!(!verdict.allowed);
    assert_eq!(
        verdict.message.as_deref(),
        Some("Policy deny error: internal error: boom")
    );
    assert_eq!(
        verdict.warnings,
        ["Policy warn error: internal error: boom"]
    );
    let statuses: Vec<(&str, Status)> = (verdict.results.iter())
        .map(|r| (r.policy.as_str(), r.status))
        .collect();
    assert_eq!(
        statuses,
        [
            ("audit", Status::Error),
            ("deny", Status::Error),
            ("warn", Status::Error)
        ]
    );
    let response: Value = serde_json::from_slice(&response).expect("JSON");
    assert_eq!(response["response"]["uid"], "u-1");
    assert_eq!(response["response"]["allowed"], false);
    let mut named = route(Phase::Validate, false);
    named.names = vec!["audit".into()];
    let (_, v) = set.failure_answer(&named, "u-1", "default", "boom");
    assert!(v.allowed, "an Audit policy only reports");
    assert_eq!(v.results.len(), 1);
    // The cluster's policies are not in a namespaced route's reach.
    let namespaced = route(Phase::Validate, true);
    let (_, v) = set.failure_answer(&namespaced, "u-1", "default", "boom");
    assert!(v.results.is_empty());
}

/// Whether a request's results go into its resource's policy report is the
/// component's word (Kyverno's audit handler): a validate request, not a
/// dry run nor a DELETE, about a namespaced object with a UID, that no
/// policy which denies judged.
#[test]
fn which_requests_are_reported_follows_kyvernos_audit_handler() {
    let audit = load(&[simple(
        "audit-pods",
        "validationActions: [Audit]\nvalidations:\n  - expression: 'false'\n    message: no pods here",
    )]);
    let mut object = pod("p", &[NGINX]);
    object["metadata"]["uid"] = json!("4b1f8c5e-0d2a-4c1e-9f3b-2a6d7e8f9a01");
    let validate = route(Phase::Validate, false);
    let reported = |set: &PolicySet, route: &Route, request: &Value| {
        judge(set, route, &review_body(request), &Known::default())
            .expect("judged")
            .reported
    };
    let request = create(&object);
    assert!(reported(&audit, &validate, &request));
    assert!(
        !reported(&failing(), &validate, &request),
        "a Deny policy judged it"
    );
    assert!(!reported(&audit, &route(Phase::Mutate, false), &request));
    let mut dry_run = request.clone();
    dry_run["dryRun"] = json!(true);
    assert!(!reported(&audit, &validate, &dry_run));
    assert!(!reported(
        &audit,
        &validate,
        &request_for("DELETE", None, Some(&object))
    ));
    let mut no_uid = object.clone();
    no_uid["metadata"].as_object_mut().map(|m| m.remove("uid"));
    assert!(!reported(&audit, &validate, &create(&no_uid)));
}
