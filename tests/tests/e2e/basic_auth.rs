//! A registry with `auth: htpasswd` (Basic): the host answers the challenge
//! with the credentials from `--registry-config`; without them the registry
//! refuses, and the component never holds the password.

use base64::Engine as _;
use ivpol_tests::fixtures::{Pusher, OCI_MANIFEST};
use ivpol_tests::policy::pod_policy;
use ivpol_tests::registry::Registry;
use ivpol_tests::review::create_pod;
use ivpol_tests::{Options, Server};

const PASSWORD: &str = "basic-s3cret-only-the-host-knows";

#[test]
fn basic_challenges_are_answered_by_the_host() {
    let dir = tempfile::tempdir().expect("dir");
    let (plain, reg, crt) = Registry::start_basic_auth(dir.path(), "bob", PASSWORD);
    // Images go in through the plain registry sharing the storage.
    let digest = Pusher {
        addr: &plain.addr,
        auth: None,
    }
    .image("app", "v1", OCI_MANIFEST, "amd64");
    let policy = pod_policy(
        "pin",
        "\"CREATE\"",
        "  attestors: []\n  validations:\n    - expression: \"true\"\n",
    );
    let image = format!("{}/app:v1", reg.addr);
    let start = |config: Option<&std::path::Path>| {
        let mut extra_args = vec![
            "--allow-registry".to_string(),
            reg.addr.clone(),
            "--registry-ca".into(),
            crt.display().to_string(),
        ];
        if let Some(c) = config {
            extra_args.push("--registry-config".into());
            extra_args.push(c.display().to_string());
        }
        Server::start_with(
            &[("pin.yaml", &policy)],
            Options {
                extra_args,
                ..Options::default()
            },
        )
    };
    let r = start(None).review("/ivpol/mutate/pin", &create_pod(&[&image]));
    assert!(
        r["status"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("registry answered HTTP 401"),
        "{r}"
    );
    let config = dir.path().join("config.json");
    std::fs::write(
        &config,
        format!(
            r#"{{"auths":{{"{}":{{"username":"bob","password":"{PASSWORD}"}}}}}}"#,
            reg.addr
        ),
    )
    .expect("config");
    let r = start(Some(&config)).review("/ivpol/mutate/pin", &create_pod(&[&image]));
    assert_eq!(r["allowed"], true, "{r}");
    let patch = base64::engine::general_purpose::STANDARD
        .decode(r["patch"].as_str().unwrap_or_default())
        .expect("patch");
    assert!(
        String::from_utf8_lossy(&patch).contains(&format!("{image}@{digest}")),
        "{r}"
    );
    assert!(!r.to_string().contains(PASSWORD));
}
