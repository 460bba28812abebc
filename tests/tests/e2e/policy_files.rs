//! Policy files that never open the gate, nor stop `ivpol serve`: a named
//! pipe, a link to a device, a dangling link, a file that is not UTF-8 or
//! is larger than a policy file may be, at start and at a reload. Each is
//! refused on its own, naming its path; every other policy still loads,
//! health and admission keep answering, and the refused files deny on the
//! route they might have served.

use ivpol_tests::policy::pod_policy;
use ivpol_tests::review::{pod, review};
use ivpol_tests::{Options, Server};
use std::path::Path;
use std::time::Duration;

/// A CEL-only policy that denies Pods named `blocked`.
fn gate() -> String {
    pod_policy(
        "gate",
        "\"CREATE\"",
        "  validationConfigurations:\n    mutateDigest: false\n    verifyDigest: false\n    required: false\n  attestors: []\n  validations:\n    - expression: \"object.metadata.name != 'blocked'\"\n      message: gate blocks blocked\n",
    )
}

/// Writes the odd files into `dir`.
fn odd_files(dir: &Path) {
    std::fs::write(dir.join("latin1.yaml"), b"name: caf\xe9\n").expect("latin1");
    std::os::unix::fs::symlink(dir.join("nowhere.yaml"), dir.join("dangling.yaml"))
        .expect("dangling");
    std::os::unix::fs::symlink("/dev/zero", dir.join("zero.yaml")).expect("device");
    let fifo = std::process::Command::new("mkfifo")
        .arg(dir.join("pipe.yaml"))
        .status()
        .expect("mkfifo");
    assert!(fifo.success());
    let big = std::fs::File::create(dir.join("big.yaml")).expect("big");
    big.set_len(5 << 20).expect("sparse");
}

fn message(s: &Server, path: &str, name: &str) -> String {
    let r = s.review(path, &review("CREATE", "default", &pod(name, &["nginx"])));
    r["status"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn generation(s: &Server) -> u64 {
    s.get("/health/readiness").1["generation"]
        .as_u64()
        .unwrap_or_default()
}

#[test]
fn odd_policy_files_neither_stop_serve_nor_open_the_gate() {
    let odd = tempfile::tempdir().expect("dir");
    odd_files(odd.path());
    let s = Server::start_with(
        &[("gate.yaml", &gate())],
        Options {
            extra_args: vec![
                "--policies".into(),
                odd.path().display().to_string(),
                "--reload-interval".into(),
                "0".into(),
            ],
            ..Options::default()
        },
    );
    // Started, and every policy that could be read enforces.
    assert_eq!(s.get("/health/liveness").0, 200);
    assert_eq!(
        message(&s, "/ivpol/validate/gate", "blocked"),
        "Policy gate failed: gate blocks blocked"
    );
    // The unnamed route denies, naming each file that was not read.
    let unnamed = message(&s, "/ivpol/validate", "web");
    for (file, why) in [
        ("pipe.yaml", "a named pipe"),
        ("zero.yaml", "a device"),
        ("dangling.yaml", "cannot be read"),
        ("latin1.yaml", "is not UTF-8 text"),
        ("big.yaml", "is larger than 4194304 bytes"),
    ] {
        assert!(
            unnamed.contains(file) && unnamed.contains(why),
            "{file}: {why} not in {unnamed}"
        );
    }
    // Reloads go on: a new odd file is one more refusal, and the set is
    // swapped in (the generation moves), with health still answering.
    let before = generation(&s);
    std::os::unix::fs::symlink(
        odd.path().join("loop-b.yaml"),
        odd.path().join("loop-a.yaml"),
    )
    .expect("loop");
    std::os::unix::fs::symlink(
        odd.path().join("loop-a.yaml"),
        odd.path().join("loop-b.yaml"),
    )
    .expect("loop");
    s.signal("HUP");
    assert!(
        s.eventually(Duration::from_secs(10), |s| generation(s) > before),
        "{}",
        s.log()
    );
    assert!(message(&s, "/ivpol/validate", "web").contains("loop-a.yaml"));
    assert_eq!(s.get("/health/readiness").0, 200);
}

/// A policy whose validation is `terms` chained `+` terms.
fn chained(name: &str, terms: usize) -> String {
    let sum = vec!["object.metadata.name"; terms].join(" + ");
    pod_policy(
        name,
        "\"CREATE\"",
        &format!("  validationConfigurations:\n    mutateDigest: false\n    verifyDigest: false\n    required: false\n  attestors: []\n  validations:\n    - expression: \"size({sum}) > 0\"\n      message: empty\n"),
    )
}

/// One expression too deep for the component's stack (2,000 chained
/// terms trapped the whole load; 1,000 every request) is refused at load
/// with a readable diagnostic naming its policy and field, while every
/// other policy loads; one just within the bound is judged without a trap.
#[test]
fn one_deep_expression_is_refused_alone_and_the_deepest_allowed_runs() {
    let s = Server::start_with(
        &[
            ("gate.yaml", &gate()),
            ("deep.yaml", &chained("deep", 2000)),
            ("deepish.yaml", &chained("deepish", 240)),
        ],
        Options::default(),
    );
    assert_eq!(
        message(&s, "/ivpol/validate/gate", "blocked"),
        "Policy gate failed: gate blocks blocked"
    );
    let deep = message(&s, "/ivpol/validate/deep", "web");
    assert!(
        deep.starts_with(
            "Policy deep error: policy failed to load: spec.validations[0].expression"
        ) && deep.contains("nests about"),
        "{deep}"
    );
    assert!(!deep.contains("wasm"), "{deep}");
    let r = s.review(
        "/ivpol/validate/deepish",
        &review("CREATE", "default", &pod("web", &["nginx"])),
    );
    assert_eq!(r["allowed"], true, "{r}");
    assert!(!s.log().contains("wasm trap"), "{}", s.log());
}

/// A policy file the component cannot compile (here: it needs more memory
/// than an instance may have) is refused alone: `serve` starts, the other
/// policies enforce, and its own route denies with a readable reason.
#[test]
fn a_policy_the_component_cannot_compile_is_refused_alone() {
    let one = format!("object.metadata.name + '{}'", "p".repeat(200));
    let variables: String = (0..3800)
        .map(|i| format!("    - name: v{i}\n      expression: \"{one}\"\n"))
        .collect();
    let huge = pod_policy(
        "huge",
        "\"CREATE\"",
        &format!("  validationConfigurations:\n    mutateDigest: false\n    verifyDigest: false\n    required: false\n  attestors: []\n  variables:\n{variables}  validations:\n    - expression: \"false\"\n"),
    );
    let s = Server::start_with(
        &[("gate.yaml", &gate()), ("huge.yaml", &huge)],
        Options {
            extra_args: vec!["--instance-memory-mib".into(), "16".into()],
            ..Options::default()
        },
    );
    assert_eq!(
        message(&s, "/ivpol/validate/gate", "blocked"),
        "Policy gate failed: gate blocks blocked"
    );
    let huge = message(&s, "/ivpol/validate/huge", "web");
    assert!(
        huge.starts_with("Policy huge error: policy failed to load: the component could not compile this document"),
        "{huge}"
    );
    assert!(!huge.contains("wasm"), "{huge}");
}
