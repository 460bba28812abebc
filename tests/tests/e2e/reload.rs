//! Day-2 operations of `ivpol serve`: policies reload without a
//! restart (a file edit, a ConfigMap's `..data` swap, SIGHUP), a rejected
//! reload keeps each policy's last good version enforcing, in-flight
//! requests finish on the set they started on, and SIGTERM drains.

use ivpol_tests::faulty::{Answer, Faulty};
use ivpol_tests::policy::pod_policy;
use ivpol_tests::review::{pod, review};
use ivpol_tests::{Options, Server};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// Reloads must land within 5 s of a change; the watcher reads
/// every 2 s by default.
const RELOAD_WINDOW: Duration = Duration::from_secs(5);

/// No digests required or pinned, no attestors: the policies here judge
/// names, not images.
const RELAXED: &str =
    "  validationConfigurations:\n    mutateDigest: false\n    verifyDigest: false\n    required: false\n  attestors: []\n";

/// A policy that denies Pods named `blocked`, saying so.
fn gate(name: &str, blocked: &str) -> String {
    pod_policy(
        name,
        "\"CREATE\"",
        &format!(
            "{RELAXED}  validations:\n    - expression: \"object.metadata.name != '{blocked}'\"\n      message: {name} blocks {blocked}\n"
        ),
    )
}

/// A server whose readiness lists rejected and stale policies by name.
fn start_detailed(policies: &[(&str, &str)]) -> Server {
    Server::start_with(
        policies,
        Options {
            extra_args: vec!["--readiness-details".into()],
            ..Options::default()
        },
    )
}

/// The validate answer for a Pod named `name`.
fn answer(s: &Server, name: &str) -> Value {
    s.review(
        "/ivpol/validate",
        &review("CREATE", "default", &pod(name, &["nginx"])),
    )
}

fn allowed(s: &Server, name: &str) -> bool {
    answer(s, name)["allowed"] == true
}

fn message(s: &Server, name: &str) -> String {
    answer(s, name)["status"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn generation(s: &Server) -> u64 {
    s.get("/health/readiness").1["generation"]
        .as_u64()
        .unwrap_or(0)
}

/// Writes `content` to `path` through a rename, as editors and `kubectl cp`
/// do, so the watcher never reads half a file.
fn replace(path: &Path, content: &str) {
    let tmp = path.with_extension("tmp~");
    std::fs::write(&tmp, content).expect("write");
    std::fs::rename(&tmp, path).expect("rename");
}

#[test]
fn an_edited_policy_is_enforced_within_five_seconds_without_a_restart() {
    let s = Server::start(&[("gate.yaml", &gate("gate", "a"))]);
    assert!(!allowed(&s, "a") && allowed(&s, "b"));
    let (_, ready) = s.get("/health/readiness");
    assert_eq!(
        (ready["generation"].as_u64(), ready["policies"].as_u64()),
        (Some(1), Some(1))
    );
    let first_hash = ready["hash"].clone();
    replace(&s.policy_dir().join("gate.yaml"), &gate("gate", "b"));
    assert!(
        s.eventually(RELOAD_WINDOW, |s| !allowed(s, "b")),
        "the edit was not enforced within 5 s:\n{}",
        s.log()
    );
    assert!(allowed(&s, "a"), "the old version no longer applies");
    assert_eq!(message(&s, "b"), "Policy gate failed: gate blocks b");
    let (_, ready) = s.get("/health/readiness");
    assert_eq!(ready["generation"].as_u64(), Some(2));
    assert_ne!(ready["hash"], first_hash);
    let metrics = s.metrics_text();
    assert_eq!(s.metric("ivpol_policy_generation"), 2.0);
    assert!(
        metrics.contains("ivpol_policy_reloads_total{result=\"loaded\"} 1"),
        "{metrics}"
    );
    let hash = ready["hash"].as_str().unwrap_or_default();
    assert!(
        metrics.contains(&format!(
            "ivpol_policy_set_info{{hash=\"{}\"}} 1",
            &hash[..16]
        )),
        "{metrics}"
    );
    // Reading the same bytes again is no reload.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(generation(&s), 2);
}

/// The kubelet updates a mounted ConfigMap by writing a new timestamped
/// directory and renaming the `..data` symlink onto it; the files are
/// symlinks through `..data`.
#[test]
fn a_config_map_update_through_its_data_symlink_reloads() {
    let s = Server::start(&[]);
    let dir = s.policy_dir();
    let stamp = |n: u32| format!("..2026_12_02_10_00_0{n}.000000001");
    let write_version = |n: u32, blocked: &str| {
        let d = dir.join(stamp(n));
        std::fs::create_dir(&d).expect("stamped dir");
        std::fs::write(d.join("gate.yaml"), gate("gate", blocked)).expect("write");
        let tmp = dir.join("..data_tmp");
        std::os::unix::fs::symlink(stamp(n), &tmp).expect("symlink");
        std::fs::rename(&tmp, dir.join("..data")).expect("swap ..data");
    };
    write_version(1, "a");
    std::os::unix::fs::symlink("..data/gate.yaml", dir.join("gate.yaml")).expect("link");
    assert!(
        s.eventually(RELOAD_WINDOW, |s| !allowed(s, "a")),
        "the mounted policy never loaded:\n{}",
        s.log()
    );
    write_version(2, "b");
    std::fs::remove_dir_all(dir.join(stamp(1))).expect("old version gone");
    assert!(
        s.eventually(RELOAD_WINDOW, |s| !allowed(s, "b") && allowed(s, "a")),
        "the ..data swap was not enforced:\n{}",
        s.log()
    );
    let (_, ready) = s.get("/health/readiness");
    assert_eq!(ready["policies"].as_u64(), Some(1), "loaded once: {ready}");
}

#[test]
fn sighup_reloads_at_once_when_watching_is_off() {
    let s = Server::start_with(
        &[("gate.yaml", &gate("gate", "a"))],
        Options {
            extra_args: vec!["--reload-interval".into(), "0".into()],
            ..Options::default()
        },
    );
    replace(&s.policy_dir().join("gate.yaml"), &gate("gate", "b"));
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(generation(&s), 1, "no watcher, no reload");
    assert!(!allowed(&s, "a"));
    s.signal("HUP");
    assert!(
        s.eventually(RELOAD_WINDOW, |s| generation(s) == 2),
        "SIGHUP did not reload:\n{}",
        s.log()
    );
    assert!(allowed(&s, "a") && !allowed(&s, "b"));
}

/// A reload that breaks a policy that loaded before keeps its last good
/// version enforcing, marked stale; the others take their new versions,
/// and a policy that never loaded denies.
#[test]
fn a_rejected_reload_keeps_the_last_good_version_enforcing() {
    let s = start_detailed(&[
        ("a.yaml", &gate("keeper", "a")),
        ("b.yaml", &gate("other", "b")),
    ]);
    let dir = s.policy_dir();
    let broken = gate("keeper", "z").replace(RELAXED, &format!("{RELAXED}  bogusField: 1\n"));
    replace(&dir.join("a.yaml"), &broken);
    replace(&dir.join("b.yaml"), &gate("other", "c"));
    assert!(
        s.eventually(RELOAD_WINDOW, |s| generation(s) == 2),
        "no reload:\n{}",
        s.log()
    );
    assert_eq!(message(&s, "a"), "Policy keeper failed: keeper blocks a");
    assert!(allowed(&s, "z"), "the rejected version must not apply");
    assert!(
        allowed(&s, "b") && !allowed(&s, "c"),
        "the other policy's edit applies"
    );
    let (_, ready) = s.get("/health/readiness");
    let stale = &ready["stalePolicies"];
    assert_eq!(stale.as_array().map(Vec::len), Some(1), "{ready}");
    assert_eq!(stale[0]["name"], "keeper");
    assert!(
        stale[0]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("bogusField"),
        "{ready}"
    );
    assert_eq!(ready["rejectedPolicies"], serde_json::json!([]), "{ready}");
    let metrics = s.metrics_text();
    assert!(
        metrics.contains("ivpol_policy_stale{policy=\"keeper\",namespace=\"\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("ivpol_policy_reloads_total{result=\"rejected\"} 1"),
        "{metrics}"
    );
    if let Err(log) = s.wait_for_log(RELOAD_WINDOW, "REJECTED") {
        panic!("the rejection is logged loudly:\n{log}");
    }

    // A policy that never loaded denies everything in its scope.
    replace(&dir.join("c.yaml"), &broken.replace("keeper", "newcomer"));
    assert!(s.eventually(RELOAD_WINDOW, |s| generation(s) == 3));
    let m = message(&s, "anything");
    assert!(
        m.contains("Policy newcomer error: policy failed to load:") && m.contains("bogusField"),
        "{m}"
    );
    std::fs::remove_file(dir.join("c.yaml")).expect("remove");

    // Fixed, the policy is current again and no longer stale.
    replace(&dir.join("a.yaml"), &gate("keeper", "z"));
    let settled = |s: &Server| {
        let (_, ready) = s.get("/health/readiness");
        ready["stalePolicies"] == serde_json::json!([])
            && ready["rejectedPolicies"] == serde_json::json!([])
    };
    assert!(s.eventually(RELOAD_WINDOW, settled), "{}", s.log());
    assert!(!allowed(&s, "z"));
    assert!(allowed(&s, "a"), "{}", message(&s, "a"));
    assert_eq!(s.metric("ivpol_policy_stale"), 0.0);
}

/// A file that is no longer YAML at all names no policy; the policies it
/// held before keep their last good versions.
#[test]
fn an_unreadable_file_keeps_the_policies_it_held() {
    let s = start_detailed(&[("a.yaml", &gate("keeper", "a"))]);
    replace(&s.policy_dir().join("a.yaml"), "kind: [unclosed\n");
    assert!(s.eventually(RELOAD_WINDOW, |s| generation(s) == 2));
    assert_eq!(message(&s, "a"), "Policy keeper failed: keeper blocks a");
    assert!(allowed(&s, "b"), "nothing else denies");
    let (_, ready) = s.get("/health/readiness");
    assert_eq!(ready["stalePolicies"][0]["name"], "keeper", "{ready}");
}

/// A server whose `slow` policy reads image data from a registry that
/// takes `delay` to answer (with a body that is no manifest).
fn slow_server(faulty: &Faulty, delay: Duration, extra: &[&str]) -> Server {
    faulty.on("/v2/app/manifests/v1", Answer::Slow(delay));
    let check = format!("{RELAXED}  validations:\n    - expression: \"getImageData(object.spec.containers[0].image).digest != ''\"\n      message: no digest\n");
    let mut extra_args = vec!["--insecure-registry".to_string(), faulty.addr.clone()];
    extra_args.extend(extra.iter().map(|a| a.to_string()));
    Server::start_with(
        &[("slow.yaml", &pod_policy("slow", "\"CREATE\"", &check))],
        Options {
            extra_args,
            ..Options::default()
        },
    )
}

/// Starts a validate request for a Pod whose image is on `faulty`.
fn slow_request(s: &Server, faulty: &Faulty) -> std::thread::JoinHandle<(u16, Value)> {
    let image = format!("{}/app:v1", faulty.addr);
    let body = review("CREATE", "default", &pod("slow", &[&image])).to_string();
    let url = format!("{}/ivpol/validate", s.base);
    std::thread::spawn(move || ivpol_tests::post_with(&ureq::agent(), &url, &body))
}

#[test]
fn a_request_in_flight_during_a_reload_finishes_on_the_old_set() {
    let faulty = Faulty::start();
    let s = slow_server(&faulty, Duration::from_secs(3), &["--reload-interval", "0"]);
    let in_flight = slow_request(&s, &faulty);
    std::thread::sleep(Duration::from_millis(500));
    let allow_all = pod_policy(
        "slow",
        "\"CREATE\"",
        &format!("{RELAXED}  validations:\n    - expression: \"true\"\n"),
    );
    replace(&s.policy_dir().join("slow.yaml"), &allow_all);
    s.signal("HUP");
    assert!(s.eventually(RELOAD_WINDOW, |s| generation(s) == 2));
    let (status, body) = in_flight.join().expect("request thread");
    assert_eq!(status, 200, "{body}");
    let message = body["response"]["status"]["message"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(body["response"]["allowed"], false, "{body}");
    assert!(message.starts_with("Policy slow error: "), "{message}");
    // A request that starts now runs on the new set.
    let again = slow_request(&s, &faulty).join().expect("request thread");
    assert_eq!(again.1["response"]["allowed"], true, "{}", again.1);
}

/// SIGTERM: readiness turns false at once, requests in flight still get
/// their answers, then the process exits 0.
#[test]
fn sigterm_drains_in_flight_requests_and_exits_zero() {
    let faulty = Faulty::start();
    let mut s = slow_server(&faulty, Duration::from_secs(3), &["--shutdown-delay", "1s"]);
    let in_flight = slow_request(&s, &faulty);
    std::thread::sleep(Duration::from_millis(500));
    s.signal("TERM");
    assert!(
        s.eventually(Duration::from_secs(1), |s| s.get("/health/readiness").0
            == 503),
        "readiness still true after SIGTERM"
    );
    let (status, body) = in_flight.join().expect("request thread");
    assert_eq!(status, 200, "the in-flight request was cut: {body}");
    assert_eq!(body["response"]["allowed"], false, "{body}");
    assert_eq!(
        s.wait_exit(Duration::from_secs(30)),
        Some(0),
        "no clean exit:\n{}",
        s.log()
    );
    if let Err(log) = s.wait_for_log(Duration::from_secs(5), "SIGTERM received") {
        panic!("{log}");
    }
}

/// A file cut short mid-write still parses, as a document that is no
/// policy (`kind: Imag`) or that names another one (`name: kee`): the
/// policy the file held keeps its last good version instead of vanishing
/// (its route would then admit), until the file is whole again.
#[test]
fn a_file_cut_short_mid_write_keeps_the_policy_it_held() {
    let whole = gate("keeper", "a");
    for cut_at in ["kind: Imag", "name: kee"] {
        let s = start_detailed(&[("a.yaml", &whole)]);
        let end = whole.find(cut_at).expect("cut point") + cut_at.len();
        replace(&s.policy_dir().join("a.yaml"), &whole[..end]);
        assert!(
            s.eventually(RELOAD_WINDOW, |s| generation(s) == 2),
            "{}",
            s.log()
        );
        // The cut document denies on its own (`kee` did not load), and
        // the policy the file held still enforces.
        let m = message(&s, "a");
        assert!(
            m.contains("Policy keeper failed: keeper blocks a"),
            "cut at {cut_at:?}: {m}"
        );
        let (_, ready) = s.get("/health/readiness");
        assert_eq!(ready["stalePolicies"][0]["name"], "keeper", "{ready}");
        replace(&s.policy_dir().join("a.yaml"), &whole);
        assert!(s.eventually(RELOAD_WINDOW, |s| generation(s) == 3));
        let (_, ready) = s.get("/health/readiness");
        assert_eq!(ready["stale"], 0, "{ready}");
    }
}
