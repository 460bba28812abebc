//! `ivpol test` end to end on generated `kyverno-test.yaml` files in the
//! shape of Kyverno's own CLI tests (`test/cli/test-image-validating-policy`):
//! the real binary, a real registry, Kyverno's table and summary, exit codes.

use ivpol_tests::cli::{pod_yaml, KeyImages, Workdir, NOT_SIGNED};
use ivpol_tests::policy::{key_attestor, verifying_policy};
use serde_json::Value;

/// A test dir as Kyverno lays them out: the policy next to a hidden
/// `.kyverno-test/` holding the test file and its resources.
fn layout(imgs: &KeyImages, results: &str) -> Workdir {
    let w = Workdir::new();
    w.write("case/policy.yaml", &imgs.policy("ivpol-sample"));
    w.write(
        "case/.kyverno-test/resources.yaml",
        &format!(
            "{}---\n{}",
            pod_yaml("good-pod", "default", &imgs.signed),
            pod_yaml("bad-pod", "default", &imgs.unsigned)
        ),
    );
    w.write(
        "case/.kyverno-test/kyverno-test.yaml",
        &format!(
            "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: kyverno-test\npolicies:\n- ../policy.yaml\nresources:\n- resources.yaml\nresults:\n{results}"
        ),
    );
    w
}

fn expect(policy: &str, resource: &str, result: &str) -> String {
    format!("- isImageValidatingPolicy: true\n  kind: Pod\n  policy: {policy}\n  resources:\n  - {resource}\n  result: {result}\n")
}

fn test(w: &Workdir, imgs: &KeyImages, extra: &[&str]) -> ivpol_tests::cli::Run {
    let mut args = vec!["test", "."];
    args.extend(imgs.flags());
    args.extend(extra);
    w.ivpol(&args)
}

/// The table row for `resource`, cells trimmed.
fn row(stdout: &str, resource: &str) -> Vec<String> {
    let line = stdout
        .lines()
        .find(|l| l.contains(resource))
        .unwrap_or_else(|| panic!("no row for {resource}:\n{stdout}"));
    let cells: Vec<String> = line.split('│').map(|c| c.trim().to_string()).collect();
    // The border characters leave an empty cell at each end.
    cells[1..cells.len() - 1].to_vec()
}

#[test]
fn expectations_that_hold_pass_and_exit_0() {
    let imgs = KeyImages::new();
    let results =
        expect("ivpol-sample", "bad-pod", "fail") + &expect("ivpol-sample", "good-pod", "pass");
    let w = layout(&imgs, &results);
    let run = test(&w, &imgs, &[]);
    assert_eq!(run.code, 0, "{run}");
    assert!(run.stdout.contains("Loading test kyverno-test ("), "{run}");
    assert!(
        run.stdout
            .contains("  Applying 1 policy to 2 resources ..."),
        "{run}"
    );
    assert_eq!(
        row(&run.stdout, "│ ID │"),
        ["ID", "POLICY", "RULE", "RESOURCE", "RESULT", "REASON"]
    );
    assert_eq!(
        row(&run.stdout, "bad-pod"),
        [
            "1",
            "ivpol-sample",
            "ivpol-sample",
            "v1/Pod/default/bad-pod",
            "Pass",
            "Ok"
        ]
    );
    assert_eq!(
        row(&run.stdout, "good-pod"),
        [
            "2",
            "ivpol-sample",
            "ivpol-sample",
            "v1/Pod/default/good-pod",
            "Pass",
            "Ok"
        ]
    );
    assert!(
        run.stdout
            .contains("\nTest Summary: 2 tests passed and 0 tests failed\n"),
        "{run}"
    );
}

#[test]
fn a_wrong_expectation_is_a_failed_row_and_exits_1() {
    let imgs = KeyImages::new();
    let results = expect("ivpol-sample", "bad-pod", "pass")
        + &expect("ivpol-sample", "good-pod", "pass")
        + &expect("ivpol-sample", "missing-pod", "pass");
    let w = layout(&imgs, &results);
    let run = test(&w, &imgs, &["--detailed-results"]);
    assert_eq!(run.code, 1, "{run}");
    assert_eq!(
        row(&run.stdout, "bad-pod"),
        [
            "1",
            "ivpol-sample",
            "ivpol-sample",
            "v1/Pod/default/bad-pod",
            "Fail",
            "Want pass, got fail",
            NOT_SIGNED
        ]
    );
    assert_eq!(
        row(&run.stdout, "missing-pod")[3..],
        ["Pod/missing-pod", "Fail", "Not found", "Not found"]
    );
    assert!(
        run.stdout
            .contains("\nTest Summary: 1 tests passed and 2 tests failed\n"),
        "{run}"
    );

    // --fail-only: no per-test table, the failures after the summary.
    let run = test(&w, &imgs, &["--fail-only"]);
    assert_eq!(run.code, 1, "{run}");
    assert!(
        run.stdout
            .contains("\nTest Summary: 2 out of 3 tests failed\n"),
        "{run}"
    );
    assert!(
        run.stdout.contains("Aggregated Failed Test Cases : \n"),
        "{run}"
    );
    assert!(!run.stdout.contains("good-pod"), "{run}");
}

#[test]
fn other_policy_kinds_are_listed_as_not_supported_and_not_counted() {
    let imgs = KeyImages::new();
    let results = expect("ivpol-sample", "good-pod", "pass")
        + "- isValidatingPolicy: true\n  kind: Deployment\n  policy: check-deployment-namespace\n  resources:\n  - deployment-excluded\n  result: pass\n";
    let w = layout(&imgs, &results);
    let run = test(&w, &imgs, &[]);
    assert_eq!(run.code, 0, "{run}");
    let r = row(&run.stdout, "deployment-excluded");
    assert_eq!(r[4..], ["Skip", "Not supported by ivpol"], "{run}");
    assert!(
        run.stdout
            .contains("\nTest Summary: 1 tests passed and 0 tests failed\n"),
        "{run}"
    );
    assert!(run.stdout.contains("1 results not checked"), "{run}");
}

#[test]
fn a_resource_the_policy_does_not_match_is_excluded() {
    let imgs = KeyImages::new();
    let w = layout(&imgs, "");
    // A Deployment-only copy of the policy: pods are excluded.
    let deployments = imgs
        .policy("deploy-only")
        .replace("apiGroups: [\"\"]", "apiGroups: [\"apps\"]")
        .replace("resources: [\"pods\"]", "resources: [\"deployments\"]");
    w.write("case/deploy.yaml", &deployments);
    let file = w.path("case/.kyverno-test/kyverno-test.yaml");
    let text = std::fs::read_to_string(&file).expect("test file");
    let text = text.replace("- ../policy.yaml\n", "- ../policy.yaml\n- ../deploy.yaml\n")
        + &expect("deploy-only", "good-pod", "pass")
        + &expect("deploy-only", "bad-pod", "fail");
    std::fs::write(&file, text).expect("write");
    let run = test(&w, &imgs, &[]);
    assert_eq!(run.code, 1, "{run}");
    assert_eq!(
        row(&run.stdout, "good-pod")[4..],
        ["Pass", "Excluded"],
        "{run}"
    );
    assert_eq!(
        row(&run.stdout, "bad-pod")[4..],
        ["Fail", "Want fail, got excluded"],
        "{run}"
    );
}

#[test]
fn an_operation_on_a_result_runs_the_resource_under_it() {
    let imgs = KeyImages::new();
    let w = layout(&imgs, "");
    // The policy matches CREATE only: under DELETE nothing matches.
    let file = w.path("case/.kyverno-test/kyverno-test.yaml");
    let text = std::fs::read_to_string(&file).expect("test file")
        + &expect("ivpol-sample", "bad-pod", "fail")
        + &expect("ivpol-sample", "bad-pod", "pass")
            .replace("result: pass", "result: pass\n  operation: DELETE");
    std::fs::write(&file, text).expect("write");
    let run = test(&w, &imgs, &[]);
    assert_eq!(run.code, 0, "{run}");
    assert!(run.stdout.contains("│ Pass   │ Excluded │"), "{run}");
    assert!(
        run.stdout
            .contains("\nTest Summary: 2 tests passed and 0 tests failed\n"),
        "{run}"
    );
}

#[test]
fn a_test_that_cannot_run_fails_and_the_others_still_run() {
    let imgs = KeyImages::new();
    let w = layout(&imgs, &expect("ivpol-sample", "good-pod", "pass"));
    w.write(
        "other/kyverno-test.yaml",
        "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: broken\npolicies:\n- policy.yaml\nresources:\n- resources.yaml\nresults: []\n",
    );
    let run = test(&w, &imgs, &[]);
    assert_eq!(run.code, 1, "{run}");
    assert!(run.stdout.contains("does not exist"), "{run}");
    assert!(
        run.stdout
            .contains("\nTest Summary: 1 tests passed and 1 tests failed\n"),
        "{run}"
    );
    // No test file at all is a usage error.
    let empty = Workdir::new();
    let run = empty.ivpol(&["test", "."]);
    assert_eq!(run.code, 2, "{run}");
    assert!(run.stdout.contains("No test yamls available"), "{run}");
}

/// A test file whose one expectation holds (good-pod passes), with `top`
/// (top-level YAML lines) and `result` (lines of that result) added.
fn file_with(top: &str, result: &str) -> String {
    format!(
        "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: kyverno-test\npolicies:\n- ../policy.yaml\nresources:\n- resources.yaml\n{top}results:\n{}{result}",
        expect("ivpol-sample", "good-pod", "pass")
    )
}

/// Writes the policy, the two pods and `test` under `dir/`, as [`layout`].
fn write_case(w: &Workdir, imgs: &KeyImages, dir: &str, test: &str) {
    w.write(&format!("{dir}/policy.yaml"), &imgs.policy("ivpol-sample"));
    w.write(
        &format!("{dir}/.kyverno-test/resources.yaml"),
        &format!(
            "{}---\n{}",
            pod_yaml("good-pod", "default", &imgs.signed),
            pod_yaml("bad-pod", "default", &imgs.unsigned)
        ),
    );
    w.write(&format!("{dir}/.kyverno-test/kyverno-test.yaml"), test);
}

/// Every Kyverno test-file field ivpol does not implement, set, with the
/// YAML that sets it: (field as named in the message, top-level lines,
/// lines of the IVP result).
const REFUSED: &[(&str, &str, &str)] = &[
    ("clusterResources", "clusterResources:\n- cluster.yaml\n", ""),
    ("variables", "variables: values.yaml\n", ""),
    (
        "values",
        "values:\n  globalValues:\n    request.operation: UPDATE\n",
        "",
    ),
    ("userinfo", "userinfo: user_info.yaml\n", ""),
    (
        "checks",
        "checks:\n- match:\n    policy:\n      name: ivpol-sample\n  assert:\n    status: pass\n",
        "",
    ),
    ("jsonPayloads", "jsonPayloads:\n- payload.json\n", ""),
    ("jsonPayload", "jsonPayload: payload.json\n", ""),
    ("httpPayloads", "httpPayloads:\n- http.json\n", ""),
    ("envoyPayloads", "envoyPayloads:\n- envoy.json\n", ""),
    ("targetResources", "targetResources:\n- target.yaml\n", ""),
    ("paramResources", "paramResources:\n- params.yaml\n", ""),
    ("context", "context: context.yaml\n", ""),
    (
        "apiCallResponses",
        "apiCallResponses:\n- url: https://example.com/x\n  response:\n    body: {a: 1}\n",
        "",
    ),
    (
        "globalContextEntries",
        "globalContextEntries:\n- name: e\n  data: {a: 1}\n",
        "",
    ),
    (
        "results[0].patchedResources",
        "",
        "  patchedResources: patched.yaml\n",
    ),
    ("results[0].patchedResource", "", "  patchedResource: patched.yaml\n"),
    (
        "results[0].generatedResource",
        "",
        "  generatedResource: generated.yaml\n",
    ),
    (
        "results[0].generatedResources",
        "",
        "  generatedResources:\n  - generated.yaml\n",
    ),
    (
        "results[0].cloneSourceResource",
        "",
        "  cloneSourceResource: source.yaml\n",
    ),
    (
        "results[0].resourceSpecs",
        "",
        "  resourceSpecs:\n  - version: v1\n    kind: Pod\n    namespace: default\n    name: good-pod\n",
    ),
    (
        "results[0].failOnMissingResources",
        "",
        "  failOnMissingResources: true\n",
    ),
    ("results[0].status", "", "  status: pass\n"),
];

#[test]
fn a_file_setting_a_field_ivpol_does_not_implement_is_not_run_and_fails() {
    let imgs = KeyImages::new();
    let w = Workdir::new();
    // Without the field each file passes: had ivpol ignored one, its file
    // would count as passed.
    for (i, (_, top, result)) in REFUSED.iter().enumerate() {
        write_case(&w, &imgs, &format!("case-{i:02}"), &file_with(top, result));
    }
    let run = test(&w, &imgs, &[]);
    assert_eq!(run.code, 1, "{run}");
    for (i, (field, _, _)) in REFUSED.iter().enumerate() {
        let message = format!(
            "  Error: ./case-{i:02}/.kyverno-test/kyverno-test.yaml: field \"{field}\" is not supported by ivpol test; the file was not run\n"
        );
        assert!(run.stdout.contains(&message), "{field}: {run}");
    }
    assert!(
        run.stdout.contains(&format!(
            "\nTest Summary: 0 tests passed and {} tests failed\n",
            REFUSED.len()
        )),
        "{run}"
    );
}

#[test]
fn empty_values_and_fields_of_results_that_do_not_run_are_accepted() {
    let imgs = KeyImages::new();
    let w = Workdir::new();
    let test_file = file_with(
        "variables: \"\"\nchecks: []\nvalues: {}\nuserinfo:\nclusterResources: []\n",
        "  failOnMissingResources: false\n",
    ) + "- isMutatingPolicy: true\n  kind: Deployment\n  patchedResources: patchedResource.yaml\n  policy: test-mpol-jsonpatch\n  resources:\n  - dev-deploy-2\n  result: pass\n";
    write_case(&w, &imgs, "case", &test_file);
    let run = test(&w, &imgs, &[]);
    assert_eq!(run.code, 0, "{run}");
    assert!(
        run.stdout
            .contains("\nTest Summary: 1 tests passed and 0 tests failed\n"),
        "{run}"
    );
    assert_eq!(
        row(&run.stdout, "dev-deploy-2")[4..],
        ["Skip", "Not supported by ivpol"],
        "{run}"
    );
}

#[test]
fn an_unknown_key_is_refused_as_kyverno_refuses_it() {
    let imgs = KeyImages::new();
    let w = Workdir::new();
    write_case(
        &w,
        &imgs,
        "top",
        &file_with("polices:\n- ../policy.yaml\n", ""),
    );
    write_case(&w, &imgs, "result", &file_with("", "  reslt: fail\n"));
    let run = test(&w, &imgs, &[]);
    assert_eq!(run.code, 1, "{run}");
    for (dir, field) in [("top", "polices"), ("result", "results[0].reslt")] {
        let message = format!(
            "./{dir}/.kyverno-test/kyverno-test.yaml: unknown field \"{field}\" (not a field of Kyverno's cli.kyverno.io/v1alpha1 Test); the file was not run"
        );
        assert!(run.stdout.contains(&message), "{field}: {run}");
    }
    assert!(
        run.stdout
            .contains("\nTest Summary: 0 tests passed and 2 tests failed\n"),
        "{run}"
    );
}

/// Two test files: `case/` with a wrong expectation (bad-pod to pass), one
/// that holds (good-pod) and a ValidatingPolicy result; `refused/` setting
/// `checks`.
fn two_files(imgs: &KeyImages) -> Workdir {
    let w = Workdir::new();
    let results = expect("ivpol-sample", "bad-pod", "pass")
        + &expect("ivpol-sample", "good-pod", "pass")
        + "- isValidatingPolicy: true\n  kind: Deployment\n  policy: check-deployment-namespace\n  resources:\n  - deployment-excluded\n  result: pass\n";
    write_case(
        &w,
        imgs,
        "case",
        &format!(
            "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: kyverno-test\npolicies:\n- ../policy.yaml\nresources:\n- resources.yaml\nresults:\n{results}"
        ),
    );
    write_case(
        &w,
        imgs,
        "refused",
        &file_with("checks:\n- assert: {status: pass}\n", ""),
    );
    w
}

#[test]
fn output_json_is_one_document_with_the_summary_every_row_and_every_error() {
    let imgs = KeyImages::new();
    let w = two_files(&imgs);
    let run = test(&w, &imgs, &["-o", "json"]);
    assert_eq!(run.code, 1, "{run}");
    let v: Value = serde_json::from_str(&run.stdout).expect("stdout is one JSON document");
    assert_eq!(
        v["summary"],
        serde_json::json!({"passed": 1, "failed": 2, "notSupported": 1}),
        "{run}"
    );
    let results = v["results"].as_array().expect("results");
    assert_eq!(results.len(), 3, "{run}");
    assert_eq!(
        results[0],
        serde_json::json!({
            "file": "./case/.kyverno-test/kyverno-test.yaml",
            "test": "kyverno-test",
            "id": 1,
            "policy": "ivpol-sample",
            "rule": "ivpol-sample",
            "resource": "v1/Pod/default/bad-pod",
            "result": "Fail",
            "reason": "Want pass, got fail",
            "message": NOT_SIGNED,
        })
    );
    assert_eq!(results[1]["resource"], "v1/Pod/default/good-pod");
    assert_eq!(results[1]["result"], "Pass");
    assert_eq!(results[2]["result"], "Skip");
    assert_eq!(results[2]["reason"], "Not supported by ivpol");
    assert_eq!(
        v["errors"],
        serde_json::json!([{
            "file": "./refused/.kyverno-test/kyverno-test.yaml",
            "message": "./refused/.kyverno-test/kyverno-test.yaml: field \"checks\" is not supported by ivpol test; the file was not run",
        }])
    );
    // The progress lines went to stderr.
    assert!(run.stderr.contains("Loading test kyverno-test ("), "{run}");

    // --fail-only keeps the failed rows only.
    let run = test(&w, &imgs, &["-o", "json", "--fail-only"]);
    let v: Value = serde_json::from_str(&run.stdout).expect("one JSON document");
    assert_eq!(v["results"].as_array().map(Vec::len), Some(1), "{run}");
    assert_eq!(v["summary"]["failed"], 2, "{run}");
}

/// Checks that `xml` is one element whose tags nest and whose text holds
/// no raw `<` or stray `&`: well-formed for the subset JUnit output uses.
fn assert_well_formed(xml: &str) {
    let body = xml
        .strip_prefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
        .expect("XML declaration");
    let mut open: Vec<String> = Vec::new();
    let mut rest = body;
    let mut roots = 0;
    while let Some(start) = rest.find('<') {
        check_text(&rest[..start]);
        let end = rest[start..].find('>').expect("unclosed tag") + start;
        let tag = &rest[start + 1..end];
        assert!(!tag.contains('<'), "'<' inside a tag: {tag}");
        // Attribute values hold no raw quotes or '<' (checked above).
        assert_eq!(tag.matches('"').count() % 2, 0, "unbalanced quotes: {tag}");
        check_text(tag);
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '-')
            .collect();
        if let Some(closing) = tag.strip_prefix('/') {
            assert_eq!(open.pop().as_deref(), Some(closing.trim()), "in {xml}");
        } else if !tag.ends_with('/') {
            if open.is_empty() {
                roots += 1;
            }
            open.push(name);
        } else if open.is_empty() {
            roots += 1;
        }
        rest = &rest[end + 1..];
    }
    check_text(rest);
    assert!(open.is_empty(), "unclosed {open:?}");
    assert_eq!(roots, 1, "one root element");
}

/// Every `&` starts an entity or character reference.
fn check_text(text: &str) {
    for (i, _) in text.match_indices('&') {
        let after = &text[i + 1..];
        let ok = ["amp;", "lt;", "gt;", "quot;", "apos;", "#"]
            .iter()
            .any(|e| after.starts_with(e));
        assert!(ok, "stray '&' in {text:?}");
    }
}

#[test]
fn output_junit_is_a_testsuite_per_file_and_a_testcase_per_expectation() {
    let imgs = KeyImages::new();
    let w = two_files(&imgs);
    // A message with every character XML escapes.
    let message = "not signed by <the key> & 'our' \"CA\"";
    w.write(
        "case/policy.yaml",
        &verifying_policy(
            "ivpol-sample",
            &key_attestor("cosign", &imgs.public_pem),
            "",
            "images.containers.map(i, verifyImageSignatures(i, [attestors.cosign])).all(n, n > 0)",
            message,
        ),
    );
    let run = test(&w, &imgs, &["-o", "junit"]);
    assert_eq!(run.code, 1, "{run}");
    let xml = &run.stdout;
    assert_well_formed(xml);
    assert!(
        xml.contains("\n<testsuites name=\"ivpol test\" tests=\"4\" failures=\"1\" errors=\"1\" skipped=\"1\">\n"),
        "{run}"
    );
    assert!(
        xml.contains("<testsuite name=\"./case/.kyverno-test/kyverno-test.yaml\" tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\">"),
        "{run}"
    );
    assert!(
        xml.contains("<testsuite name=\"./refused/.kyverno-test/kyverno-test.yaml\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\">"),
        "{run}"
    );
    assert_eq!(xml.matches("<testcase ").count(), 4, "{run}");
    assert!(
        xml.contains("<testcase classname=\"ivpol-sample\" name=\"v1/Pod/default/good-pod\"/>"),
        "{run}"
    );
    assert!(
        xml.contains("<failure message=\"Want pass, got fail\">policy: ivpol-sample\nrule: ivpol-sample\nresource: v1/Pod/default/bad-pod\nmessage: not signed by &lt;the key&gt; &amp; &apos;our&apos; &quot;CA&quot;</failure>"),
        "{run}"
    );
    assert!(
        xml.contains("<skipped message=\"Not supported by ivpol\"/>"),
        "{run}"
    );
    assert!(
        xml.contains("<error message=\"./refused/.kyverno-test/kyverno-test.yaml: field &quot;checks&quot; is not supported by ivpol test; the file was not run\"/>"),
        "{run}"
    );
    assert!(!xml.contains("Loading test"), "{run}");
}

/// A test file recorded against the registry (`--record`) runs again from
/// the recording alone (`--replay`) once the registry is gone, with the
/// same results: the way to run signature-verifying policy tests in CI.
#[test]
fn a_recorded_test_replays_with_the_registry_stopped() {
    let imgs = KeyImages::new();
    let results =
        expect("ivpol-sample", "bad-pod", "fail") + &expect("ivpol-sample", "good-pod", "pass");
    let w = layout(&imgs, &results);
    let recording = w.path("recording.json");
    let recording = recording.to_str().expect("a UTF-8 path");
    let recorded = test(&w, &imgs, &["--record", recording]);
    assert_eq!(recorded.code, 0, "{recorded}");
    let addr = imgs.reg.addr.clone();
    drop(imgs); // stops the registry
    let live = w.ivpol(&["test", ".", "--insecure-registry", &addr]);
    assert_ne!(live.code, 0, "the registry is gone: {live}");
    let replayed = w.ivpol(&["test", ".", "--replay", recording]);
    assert_eq!(replayed.code, 0, "{replayed}");
    for pod in ["good-pod", "bad-pod"] {
        assert_eq!(
            row(&replayed.stdout, pod),
            row(&recorded.stdout, pod),
            "{replayed}"
        );
    }
    // A replay sends nothing: a request the recording lacks fails.
    w.write(
        "case/.kyverno-test/resources.yaml",
        &pod_yaml("other-pod", "default", &format!("{addr}/app/other:v1")),
    );
    w.write(
        "case/.kyverno-test/kyverno-test.yaml",
        "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: kyverno-test\npolicies:\n- ../policy.yaml\nresources:\n- resources.yaml\nresults:\n- isImageValidatingPolicy: true\n  kind: Pod\n  policy: ivpol-sample\n  resources:\n  - other-pod\n  result: pass\n",
    );
    let missing = w.ivpol(&["test", ".", "--replay", recording]);
    assert_ne!(missing.code, 0, "{missing}");
    assert!(
        missing.stderr.contains("is not in the recording"),
        "{missing}"
    );
}
