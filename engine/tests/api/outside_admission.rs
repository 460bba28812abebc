//! The engine against requests: outside admission.

use super::*;
use ivpol_engine::engine::{InputError, Mode};
use ivpol_policy::admission::synthetic::ResourceError;

fn evaluate(set: &PolicySet, resource: &Value, operation: &str, mode: Mode) -> Verdict {
    set.evaluate(
        &resource.to_string(),
        operation,
        None,
        mode,
        std::sync::Arc::new(Offline),
    )
    .expect("a well-formed resource is evaluated")
}

#[test]
fn the_cli_runs_admission_disabled_policies_and_the_scan_only_background_ones() {
    let set = load(&[
        simple(
            "background-only",
            "evaluation:\n  admission:\n    enabled: false\nvalidations:\n  - expression: \"false\"\n",
        ),
        simple(
            "admission-only",
            "evaluation:\n  background:\n    enabled: false\nvalidations:\n  - expression: \"true\"\n",
        ),
    ]);
    let p = pod("p", &[SIGNED]);
    let cli = evaluate(&set, &p, "CREATE", Mode::Cli);
    assert_eq!(
        outcomes(&cli),
        vec![
            ("admission-only".into(), Status::Pass, "success".into()),
            (
                "background-only".into(),
                Status::Fail,
                "CEL expression validation failed at index 0".into()
            ),
        ]
    );
    let scan = evaluate(&set, &p, "CREATE", Mode::Background);
    assert_eq!(
        outcomes(&scan),
        one(
            "background-only",
            Status::Fail,
            "CEL expression validation failed at index 0"
        )
    );
}

#[test]
fn outside_admission_namespaced_policies_see_only_their_namespace() {
    let check = spec(&[
        PODS,
        RELAXED,
        NO_ATTESTORS,
        "validations:\n  - expression: \"true\"\n",
    ]);
    let set = load(&[
        nivp("team-a-policy", "team-a", &check),
        ivp("cluster-policy", &check),
    ]);
    let mut p = pod("p", &[SIGNED]);
    let in_default = evaluate(&set, &p, "CREATE", Mode::Cli);
    assert_eq!(policies_of(&in_default), vec!["cluster-policy"]);
    p["metadata"]["namespace"] = json!("team-a");
    let in_team = evaluate(&set, &p, "CREATE", Mode::Cli);
    assert_eq!(
        policies_of(&in_team),
        vec!["cluster-policy", "team-a-policy"]
    );
}

#[test]
fn outside_admission_the_operation_picks_the_matching_rules() {
    // PODS matches CREATE and UPDATE only; DELETE sees no policy.
    let set = load(&[simple("p", "validations:\n  - expression: \"true\"\n")]);
    let p = pod("p", &[SIGNED]);
    assert_eq!(
        policies_of(&evaluate(&set, &p, "UPDATE", Mode::Cli)),
        vec!["p"]
    );
    assert_no_results(&evaluate(&set, &p, "DELETE", Mode::Cli));
    let err = set
        .evaluate(
            &p.to_string(),
            "PATCH",
            None,
            Mode::Cli,
            std::sync::Arc::new(Offline),
        )
        .expect_err("PATCH is not an operation");
    assert_eq!(
        err,
        InputError::Resource(ResourceError::Operation("PATCH".into()))
    );
}
