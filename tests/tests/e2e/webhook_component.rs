//! The webhook component (`webhook/`, the `webhook` world) under a host
//! that is not ivpol's: `wasi-http-host` (`tests/wasi-http-host/`), built
//! from wasmtime-wasi-http's standard proxy bindings alone, as `wasmtime
//! serve` runs a component.
//! It must answer as `ivpol serve` does.

use base64::Engine as _;
use ivpol_tests::review::create_pod;
use ivpol_tests::Server;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// `wasi-http-host` serving the webhook component; killed on drop.
struct ProxyHost {
    child: Child,
    base: String,
}

impl ProxyHost {
    /// With `policies` preopened as `/policies`, or none (the baked ones).
    fn start(policies: Option<&Path>) -> ProxyHost {
        ProxyHost::start_with(policies, &[])
    }

    /// [`ProxyHost::start`] with environment variables for the component.
    fn start_with(policies: Option<&Path>, env: &[(&str, &str)]) -> ProxyHost {
        let mut cmd = Command::new(ivpol_tests::webhook::host_bin());
        for (key, value) in env {
            cmd.arg("--env").arg(format!("{key}={value}"));
        }
        cmd.arg(ivpol_tests::webhook::component());
        if let Some(dir) = policies {
            cmd.arg(dir);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn wasi-http-host");
        let stdout = child.stdout.take().expect("stdout");
        let line = BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find(|l| l.starts_with("listening "))
            .expect("wasi-http-host did not start");
        let addr = line.trim_start_matches("listening ").to_string();
        ProxyHost {
            child,
            base: format!("http://{addr}"),
        }
    }

    fn post(&self, path: &str, body: &str) -> (u16, Value) {
        let url = format!("{}{path}", self.base);
        let answer = match ureq::post(&url).send_string(body) {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("POST {path}: {e}"),
        };
        let status = answer.status();
        (status, answer.into_json().expect("a JSON answer"))
    }
}

impl Drop for ProxyHost {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn samples() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../policies")
}

/// The README's example (`nginx:1.27` against `allowed-registries`), an
/// allowed pod, a body that is not JSON and a path that is no route: the
/// same status and the same JSON from the component under the standard host
/// as from `ivpol serve`, with the policies preopened and with those baked
/// in at build time.
#[test]
fn the_webhook_component_answers_as_ivpol_serve_does() {
    let file = std::fs::read_to_string(samples().join("allowed-registries.yaml"))
        .expect("the sample policy");
    let serve = Server::start(&[("allowed-registries.yaml", &file)]);
    let denied = create_pod(&["nginx:1.27"]).to_string();
    let allowed = create_pod(&["registry.k8s.io/pause:3.9"]).to_string();
    let path = "/ivpol/validate/allowed-registries";
    let cases = [
        (path, denied.as_str()),
        (path, allowed.as_str()),
        (path, "not json"),
        ("/elsewhere", "{}"),
    ];
    for policies in [Some(samples()), None] {
        let host = ProxyHost::start(policies.as_deref());
        for (route, body) in cases {
            let want = serve.post(route, body);
            assert_eq!(host.post(route, body), want, "{route} {body}");
        }
    }
    let (_, readme) = serve.post(path, &denied);
    assert_eq!(
        readme["response"]["status"]["message"],
        "Policy allowed-registries failed: images must come from ghcr.io or registry.k8s.io: nginx:1.27"
    );
}

/// The component imports standard WASI 0.2 and nothing else, and exports
/// only `wasi:http/incoming-handler`: any wasi:http host can run it.
#[test]
fn the_webhook_component_imports_only_wasi() {
    let engine = wasmtime::Engine::default();
    let component =
        wasmtime::component::Component::from_file(&engine, ivpol_tests::webhook::component())
            .expect("a component");
    let ty = component.component_type();
    let imports: Vec<String> = ty.imports(&engine).map(|(n, _)| n.to_string()).collect();
    let exports: Vec<String> = ty.exports(&engine).map(|(n, _)| n.to_string()).collect();
    assert!(
        imports.iter().all(|n| n.starts_with("wasi:")),
        "{imports:?}"
    );
    for needed in ["wasi:http/outgoing-handler", "wasi:filesystem/preopens"] {
        assert!(
            imports.iter().any(|n| n.starts_with(needed)),
            "{needed}: {imports:?}"
        );
    }
    assert_eq!(exports.len(), 1, "{exports:?}");
    assert!(
        exports[0].starts_with("wasi:http/incoming-handler@0.2."),
        "{exports:?}"
    );
}

/// `ivpol push` publishes the webhook component as it does the policy
/// module, its manifest annotated with its world, and `inspect` names it.
#[test]
fn the_webhook_component_is_pushed_with_its_world_named() {
    use ivpol_tests::oci::ivpol;
    let reg = ivpol_tests::registry::Registry::start();
    let file = ivpol_tests::webhook::component();
    let target = format!("oci://{}/ivpol/webhook:v1", reg.addr);
    let file = file.display().to_string();
    ivpol(&[
        "push",
        "--insecure-registry",
        &reg.addr,
        "--component",
        &file,
        &target,
    ])
    .expect_ok("push");
    let manifest: Value = ureq::get(&format!(
        "http://{}/v2/ivpol/webhook/manifests/v1",
        reg.addr
    ))
    .set("Accept", "application/vnd.oci.image.manifest.v1+json")
    .call()
    .expect("manifest")
    .into_json()
    .expect("json");
    assert_eq!(
        manifest["annotations"]["dev.ivpol.world"], "ivpol:admission/webhook@0.1.0",
        "{manifest}"
    );
    let inspected =
        ivpol(&["inspect", "--insecure-registry", &reg.addr, &target]).expect_ok("inspect");
    assert!(
        inspected.contains("world: ivpol:admission/webhook@0.1.0"),
        "{inspected}"
    );
    // ivpol's own host runs the policy module, and says so.
    let policies = samples().display().to_string();
    for component in [file.as_str(), target.as_str()] {
        ivpol(&[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--policies",
            &policies,
            "--insecure-registry",
            &reg.addr,
            "--component",
            component,
        ])
        .expect_err("serve the webhook component", "is the webhook component");
    }
}

/// Pins every Pod image (the mutate phase reads the registry); no
/// signature checks.
fn pin(name: &str, tail: &str) -> String {
    ivpol_tests::policy::pod_policy(
        name,
        "\"CREATE\"",
        &format!("{tail}  attestors: []\n  validations:\n    - expression: \"true\"\n"),
    )
}

/// Registry auth with no host to do it: the test registry's token variant,
/// reached over plain HTTP because `IVPOL_INSECURE_REGISTRIES` lists it.
/// A public repository resolves with an anonymous token; a private one is
/// refused until the policy directory holds a docker config (answered as
/// `ivpol serve --registry-config` answers, the same JSON) or the policy's
/// own Secret; a policy that needs a KMS key is refused at load.
#[test]
fn the_webhook_component_answers_registry_challenges_itself() {
    use ivpol_tests::fixtures::{Pusher, OCI_MANIFEST};
    use ivpol_tests::token::{TokenServer, PASSWORD, USER};
    use std::sync::atomic::Ordering;
    let tokens = TokenServer::start();
    let reg = tokens.registry();
    for repo in ["public/app", "private/app"] {
        let auth = Some(tokens.bearer(repo));
        Pusher {
            addr: &reg.addr,
            auth,
        }
        .image(repo, "v1", OCI_MANIFEST, "amd64");
    }
    let dir = tempfile::tempdir().expect("dir");
    let write = |path: &str, text: &str| {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        std::fs::write(path, text).expect("write");
    };
    write("pin.yaml", &pin("pin", ""));
    let secrets = "  credentials:\n    secrets: [regcred]\n";
    write("pin-secret.yaml", &pin("pin-secret", secrets));
    let kms = pin("kms", "").replace(
        "  attestors: []",
        "  attestors:\n    - name: k\n      cosign:\n        key: {kms: 'hashivault://k'}",
    );
    write("kms.yaml", &kms);
    let insecure = format!("{},{}", reg.addr, tokens.addr);
    let env = [("IVPOL_INSECURE_REGISTRIES", insecure.as_str())];
    let review = |image: &str| create_pod(&[&format!("{}/{image}", reg.addr)]).to_string();
    let (public, private) = (review("public/app:v1"), review("private/app:v1"));

    let host = ProxyHost::start_with(Some(dir.path()), &env);
    let (_, v) = host.post("/ivpol/mutate/pin", &public);
    assert_eq!(v["response"]["allowed"], true, "{v}");
    assert!(v["response"]["patch"].is_string(), "pinned: {v}");
    assert!(tokens.anonymous.load(Ordering::SeqCst) >= 1);
    let (_, v) = host.post("/ivpol/mutate/pin", &private);
    let message = v["response"]["status"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("registry answered HTTP 401"), "{v}");
    let (_, v) = host.post("/ivpol/mutate/pin-secret", &private);
    let message = v["response"]["status"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("registry secret regcred not found"), "{v}");
    let (_, v) = host.post("/ivpol/validate/kms", &public);
    let message = v["response"]["status"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains("a KMS key: ivpol's host provides it"),
        "{v}"
    );
    assert_eq!(tokens.authenticated.load(Ordering::SeqCst), 0);

    // The operator's docker config, and a policy's own Secret.
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    let config = format!(r#"{{"auths":{{"{}":{{"auth":"{auth}"}}}}}}"#, reg.addr);
    write(".docker/config.json", &config);
    write(".secrets/regcred/.dockerconfigjson", &config);
    let host = ProxyHost::start_with(Some(dir.path()), &env);
    let (_, by_config) = host.post("/ivpol/mutate/pin", &private);
    assert_eq!(by_config["response"]["allowed"], true, "{by_config}");
    let (_, by_secret) = host.post("/ivpol/mutate/pin-secret", &private);
    assert_eq!(by_secret["response"]["allowed"], true, "{by_secret}");
    assert!(tokens.authenticated.load(Ordering::SeqCst) >= 1);
    for answer in [&by_config, &by_secret] {
        let text = answer.to_string();
        assert!(!text.contains(PASSWORD) && !text.contains("eyJ"), "{text}");
    }
    // ivpol serve with the same config answers the same.
    let config_file = dir.path().join(".docker/config.json").display().to_string();
    let serve = Server::start_with(
        &[("pin.yaml", &pin("pin", ""))],
        ivpol_tests::Options {
            extra_args: vec![
                "--insecure-registry".into(),
                reg.addr.clone(),
                "--insecure-registry".into(),
                tokens.addr.clone(),
                "--registry-config".into(),
                config_file,
            ],
            ..ivpol_tests::Options::default()
        },
    );
    assert_eq!((200, by_config), serve.post("/ivpol/mutate/pin", &private));
}
