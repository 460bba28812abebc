//! Kyverno's own CLI test cases (vendored in `conformance/kyverno/`) run with
//! `ivpol test` and `ivpol apply` against local equivalents of their images
//! (see `ivpol_tests::kyverno`), with the results Kyverno's tests expect:
//! the `kyverno-test.yaml` expectations, the report summaries of
//! `command_test.go`, and the exact output the chainsaw CLI steps check.

use ivpol_tests::kyverno::KyvernoImages;
use ivpol_tests::{ivpol_bin, precompile_cache_dir};
use serde_json::Value;
use std::path::Path;
use std::process::Output;

const CLI: &str = "test/cli/test-image-validating-policy";
const CHAINSAW_APPLY: &str = "test/conformance/chainsaw/cli/apply";

/// Runs `ivpol <args>` in `dir`, allowed to reach the images' registry.
fn ivpol(images: &KyvernoImages, dir: &Path, args: &[&str]) -> Output {
    std::process::Command::new(ivpol_bin())
        .args(args)
        .args(["--insecure-registry", images.addr()])
        .arg("--cache-dir")
        .arg(precompile_cache_dir())
        .current_dir(dir)
        .output()
        .expect("run ivpol")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn describe(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        stdout(out),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The `summary` of the report `--policy-report` prints (YAML).
fn summary(out: &Output) -> Value {
    let reports: Vec<Value> = serde_yaml_ng::Deserializer::from_str(&stdout(out))
        .filter_map(|d| serde::Deserialize::deserialize(d).ok())
        .collect();
    let report = reports
        .iter()
        .find(|r| r.get("summary").is_some())
        .unwrap_or_else(|| panic!("no report in\n{}", describe(out)));
    report["summary"].clone()
}

#[test]
fn kyvernos_test_files_pass_with_ivpol_test() {
    let images = KyvernoImages::push();
    // (case, IVP expectations it holds). sample-policy-exclusion also holds
    // ValidatingPolicy and MutatingPolicy results, which ivpol lists as not
    // run; its IVP result must still hold.
    for (case, expected) in [
        ("test/cli/test-image-validating-policy/sample-policy", 2),
        (
            "test/cli/test-image-validating-policy/with-cel-exceptions",
            3,
        ),
        ("test/cli/sample-policy-exclusion", 1),
    ] {
        let dir = images.localize(case);
        let out = ivpol(&images, dir.path(), &["test", "."]);
        assert!(out.status.success(), "{case}: {}", describe(&out));
        assert!(
            stdout(&out).contains(&format!(
                "Test Summary: {expected} tests passed and 0 tests failed"
            )),
            "{case}: {}",
            describe(&out)
        );
    }
}

#[test]
fn a_wrong_expectation_in_a_kyverno_test_file_fails() {
    let images = KyvernoImages::push();
    let dir = images.localize(&format!("{CLI}/sample-policy"));
    let test = dir.path().join("kyverno-test.yaml");
    let text = std::fs::read_to_string(&test).expect("test file");
    // good-pod is expected to pass; claim it fails.
    let wrong = text.replacen(
        "  - good-pod\n  result: pass",
        "  - good-pod\n  result: fail",
        1,
    );
    assert_ne!(wrong, text, "the expectation to flip is not in the file");
    std::fs::write(&test, wrong).expect("write");
    let out = ivpol(&images, dir.path(), &["test", "."]);
    assert!(!out.status.success(), "{}", describe(&out));
    assert!(
        stdout(&out).contains("1 tests failed"),
        "{}",
        describe(&out)
    );
}

#[test]
fn kyvernos_json_payload_case_reports_one_pass_and_one_fail() {
    let images = KyvernoImages::push();
    let dir = images.localize(&format!("{CLI}/check-json"));
    let out = ivpol(
        &images,
        dir.path(),
        &[
            "apply",
            "ivpol-json.yaml",
            "--json",
            "ivpol-payload-pass.json",
            "--json",
            "ivpol-payload-fail.json",
            "--policy-report",
        ],
    );
    let s = summary(&out);
    assert_eq!(
        (&s["pass"], &s["fail"], &s["skip"], &s["error"], &s["warn"]),
        (&1.into(), &1.into(), &0.into(), &0.into(), &0.into()),
        "{}",
        describe(&out)
    );
    // A failing result makes the exit non-zero, as documented.
    assert!(!out.status.success());
}

#[test]
fn kyvernos_empty_message_case_gets_the_default_message() {
    let images = KyvernoImages::push();
    let dir = images.localize(&format!("{CLI}/empty-message"));
    let bad = ivpol(
        &images,
        dir.path(),
        &[
            "apply",
            "policy.yaml",
            "--resource",
            "bad-pod.yaml",
            "--policy-report",
        ],
    );
    assert_eq!(summary(&bad)["fail"], 1, "{}", describe(&bad));
    assert!(
        stdout(&bad).contains("CEL expression validation failed at index"),
        "{}",
        describe(&bad)
    );
    let good = ivpol(
        &images,
        dir.path(),
        &[
            "apply",
            "policy.yaml",
            "--resource",
            "good-pod.yaml",
            "--policy-report",
        ],
    );
    let s = summary(&good);
    assert_eq!(
        (&s["pass"], &s["fail"]),
        (&1.into(), &0.into()),
        "{}",
        describe(&good)
    );
    assert!(good.status.success(), "{}", describe(&good));
}

#[test]
fn kyvernos_chainsaw_apply_steps_print_what_chainsaw_checks() {
    let images = KyvernoImages::push();
    // apply-ivps-in-cluster-mode-with-polex checks the whole output; ivpol
    // reads the resources from the file the step created in the cluster.
    // Its policy leaves verifyDigest on (the default) while the tag-only
    // good StatefulSet is expected to pass: Kyverno's `--cluster` run did not
    // apply the digest check there, whereas its other CLI cases turn it off
    // themselves. ivpol always applies it, so the copy turns it off too
    // (docs/compatibility.md).
    let dir = images.localize(&format!(
        "{CHAINSAW_APPLY}/apply-ivps-in-cluster-mode-with-polex"
    ));
    let policy = dir.path().join("policy.yaml");
    let text = std::fs::read_to_string(&policy).expect("policy");
    let relaxed = text.replacen(
        "spec:\n",
        "spec:\n  validationConfigurations:\n    verifyDigest: false\n",
        1,
    );
    assert_ne!(relaxed, text);
    std::fs::write(&policy, relaxed).expect("write policy");
    let out = ivpol(
        &images,
        dir.path(),
        &[
            "apply",
            "policy.yaml",
            "--exception",
            "exception.yaml",
            "--resource",
            "resources.yaml",
        ],
    );
    assert_eq!(
        stdout(&out).trim(),
        "Applying 1 policy rule(s) to 3 resource(s) with 1 exception(s)...\n\
         policy ivpol-sample -> resource default/StatefulSet/bad-statefulset failed:\n\
         1 - ivpol-sample failed to verify image with notary cert\n\
         \n\
         pass: 1, fail: 1, warn: 0, error: 0, skip: 1",
        "{}",
        describe(&out)
    );
    let dir = images.localize(&format!("{CHAINSAW_APPLY}/apply-ivps-in-cluster-mode"));
    let out = ivpol(
        &images,
        dir.path(),
        &[
            "apply",
            "policy.yaml",
            "--resource",
            "bad-pod.yaml",
            "--resource",
            "good-pod.yaml",
        ],
    );
    assert!(
        stdout(&out).contains("policy ivpol-sample -> resource default/Pod/bad-pod failed:"),
        "{}",
        describe(&out)
    );
}
