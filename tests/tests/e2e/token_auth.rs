//! Registry token auth done by the host: the distribution registry in its
//! `auth: token` variant, with a small in-test token server issuing ES256
//! JWTs. Anonymous pulls of public repositories work; private ones need the
//! credentials from `--registry-config`, which only the host ever reads.

use base64::Engine as _;
use ivpol_tests::fixtures::{Pusher, OCI_MANIFEST};
use ivpol_tests::policy::pod_policy;
use ivpol_tests::registry::Registry;
use ivpol_tests::review::create_pod;
use ivpol_tests::token::{TokenServer, PASSWORD, USER};
use ivpol_tests::{Options, Server};
use std::sync::atomic::Ordering;

/// Pins every Pod image; no signature checks.
fn pin() -> String {
    pod_policy(
        "pin",
        "\"CREATE\"",
        "  attestors: []\n  validations:\n    - expression: \"true\"\n",
    )
}

fn server(tokens: &TokenServer, reg: &Registry, config: Option<&std::path::Path>) -> Server {
    let mut extra_args = vec![
        "--insecure-registry".into(),
        reg.addr.clone(),
        "--insecure-registry".into(),
        tokens.addr.clone(),
    ];
    if let Some(c) = config {
        extra_args.push("--registry-config".into());
        extra_args.push(c.display().to_string());
    }
    Server::start_with(
        &[("pin.yaml", &pin())],
        Options {
            extra_args,
            ..Options::default()
        },
    )
}

#[test]
fn anonymous_and_authenticated_pulls_through_the_host() {
    let tokens = TokenServer::start();
    let reg = tokens.registry();
    let public = Pusher {
        addr: &reg.addr,
        auth: Some(tokens.bearer("public/app")),
    }
    .image("public/app", "v1", OCI_MANIFEST, "amd64");
    let private = Pusher {
        addr: &reg.addr,
        auth: Some(tokens.bearer("private/app")),
    }
    .image("private/app", "v1", OCI_MANIFEST, "amd64");
    let pub_image = format!("{}/public/app:v1", reg.addr);
    let priv_image = format!("{}/private/app:v1", reg.addr);

    // No credentials: the public repository resolves with an anonymous token...
    let s = server(&tokens, &reg, None);
    let r = s.review("/ivpol/mutate/pin", &create_pod(&[&pub_image]));
    assert_eq!(r["allowed"], true, "{r}");
    let pinned = base64::engine::general_purpose::STANDARD
        .decode(r["patch"].as_str().unwrap_or_default())
        .expect("patch");
    assert!(String::from_utf8_lossy(&pinned).contains(&public), "{r}");
    // ...the private one is refused by the registry.
    let r = s.review("/ivpol/mutate/pin", &create_pod(&[&priv_image]));
    let msg = r["status"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("registry answered HTTP 401"), "{msg}");
    assert_eq!(tokens.authenticated.load(Ordering::SeqCst), 0);

    // With --registry-config the host presents the credentials to the token server.
    let config = s.dir.path().join("config.json");
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    std::fs::write(
        &config,
        format!(r#"{{"auths":{{"{}":{{"auth":"{auth}"}}}}}}"#, reg.addr),
    )
    .expect("config");
    let s = server(&tokens, &reg, Some(&config));
    let r = s.review("/ivpol/mutate/pin", &create_pod(&[&priv_image]));
    assert_eq!(r["allowed"], true, "{r}");
    let patch = String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(r["patch"].as_str().unwrap_or_default())
            .expect("base64"),
    )
    .expect("utf8");
    assert!(patch.contains(&private), "{patch}");
    assert!(tokens.authenticated.load(Ordering::SeqCst) >= 1);
    // Neither the password nor a token shows up in anything the host answers.
    assert!(
        !r.to_string().contains(PASSWORD) && !r.to_string().contains("eyJ"),
        "{r}"
    );
    // A second request reuses the cached token: no new token request.
    let before =
        tokens.authenticated.load(Ordering::SeqCst) + tokens.anonymous.load(Ordering::SeqCst);
    let again = s.review("/ivpol/mutate/pin", &create_pod(&[&priv_image]));
    assert_eq!(again["allowed"], true);
    let after =
        tokens.authenticated.load(Ordering::SeqCst) + tokens.anonymous.load(Ordering::SeqCst);
    assert_eq!(before, after, "the token was fetched again");
}

/// A policy's `credentials.secrets`: only the secret's NAME leaves the
/// component; the host reads it from `--secrets-dir` and answers the challenge.
#[test]
fn policy_credentials_secrets_are_read_by_the_host() {
    let tokens = TokenServer::start();
    let reg = tokens.registry();
    let digest = Pusher {
        addr: &reg.addr,
        auth: Some(tokens.bearer("private/app")),
    }
    .image("private/app", "v1", OCI_MANIFEST, "amd64");
    let image = format!("{}/private/app:v1", reg.addr);
    let policy = pin().replace(
        "  attestors: []",
        "  credentials:\n    secrets: [regcred]\n  attestors: []",
    );
    let start = |secrets: Option<&std::path::Path>| {
        let mut extra_args = vec![
            "--insecure-registry".into(),
            reg.addr.clone(),
            "--insecure-registry".into(),
            tokens.addr.clone(),
        ];
        if let Some(d) = secrets {
            extra_args.push("--secrets-dir".into());
            extra_args.push(d.display().to_string());
        }
        Server::start_with(
            &[("pin.yaml", &policy)],
            Options {
                extra_args,
                ..Options::default()
            },
        )
    };
    // No --secrets-dir: a clear error, not an anonymous attempt.
    let s = start(None);
    let r = s.review("/ivpol/mutate/pin", &create_pod(&[&image]));
    assert!(
        r["status"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("no --secrets-dir"),
        "{r}"
    );
    // The secret as a Kubernetes Secret manifest of type dockerconfigjson.
    let dir = s.dir.path().join("secrets");
    std::fs::create_dir(&dir).expect("dir");
    let config = format!(
        r#"{{"auths":{{"{}":{{"username":"{USER}","password":"{PASSWORD}"}}}}}}"#,
        reg.addr
    );
    let secret = format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: regcred}}\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: {}\n",
        base64::engine::general_purpose::STANDARD.encode(config)
    );
    std::fs::write(dir.join("regcred"), secret).expect("secret");
    let s2 = start(Some(&dir));
    let r = s2.review("/ivpol/mutate/pin", &create_pod(&[&image]));
    assert_eq!(r["allowed"], true, "{r}");
    let patch = base64::engine::general_purpose::STANDARD
        .decode(r["patch"].as_str().unwrap_or_default())
        .expect("patch");
    assert!(String::from_utf8_lossy(&patch).contains(&digest), "{r}");
    // A secret that is not there.
    std::fs::remove_file(dir.join("regcred")).expect("rm");
    let s3 = start(Some(&dir));
    let r = s3.review("/ivpol/mutate/pin", &create_pod(&[&image]));
    assert!(
        r["status"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("registry secret regcred not found"),
        "{r}"
    );
}

/// A hostile token endpoint: `expires_in` of u64::MAX (and other values
/// no clock can add) used to panic the host mid-request (Instant overflow)
/// and reset the webhook connection. Now the lifetime is capped, the
/// admission request gets its answer, and the server stays up.
#[test]
fn absurd_token_lifetimes_do_not_crash_the_host() {
    for expires_in in ["18446744073709551615", "1e308", "-1", "\"forever\"", "0"] {
        let tokens = TokenServer::start_with_expires_in(expires_in);
        let reg = tokens.registry();
        let digest = Pusher {
            addr: &reg.addr,
            auth: Some(tokens.bearer("public/app")),
        }
        .image("public/app", "v1", OCI_MANIFEST, "amd64");
        let image = format!("{}/public/app:v1", reg.addr);
        let mut s = server(&tokens, &reg, None);
        for round in 0..2 {
            let (status, body) = s.post("/ivpol/mutate/pin", &create_pod(&[&image]).to_string());
            assert_eq!(
                status, 200,
                "expires_in {expires_in}, round {round}: {body}"
            );
            let r = &body["response"];
            assert_eq!(r["allowed"], true, "expires_in {expires_in}: {r}");
            let patch = base64::engine::general_purpose::STANDARD
                .decode(r["patch"].as_str().unwrap_or_default())
                .expect("patch");
            assert!(String::from_utf8_lossy(&patch).contains(&digest), "{r}");
        }
        assert!(s.alive(), "ivpol exited on expires_in {expires_in}");
        assert!(!s.log().contains("panicked"), "{}", s.log());
    }
}
