//! Scaffolding shared by the signature end-to-end tests: one registry with
//! images to sign, one `ivpol serve` allowed to reach it, and assertions on
//! one policy's verdict at a time (through `/ivpol/validate/<name>`).

use crate::fixtures::{Pusher, OCI_MANIFEST};
use crate::registry::Registry;
use crate::review::create_pod;
use crate::{Options, Server};
use serde_json::Value;

/// A registry for the images under test.
pub struct Setup {
    pub reg: Registry,
}

impl Default for Setup {
    fn default() -> Self {
        Setup::new()
    }
}

impl Setup {
    pub fn new() -> Setup {
        Setup {
            reg: Registry::start(),
        }
    }

    pub fn pusher(&self) -> Pusher<'_> {
        Pusher {
            addr: &self.reg.addr,
            auth: None,
        }
    }

    /// Pushes `repo:v1` and returns (image reference, manifest digest).
    pub fn image(&self, repo: &str) -> (String, String) {
        let digest = self.pusher().image(repo, "v1", OCI_MANIFEST, "amd64");
        (format!("{}/{repo}:v1", self.reg.addr), digest)
    }

    /// `ivpol serve` with `(name, yaml)` policies, allowed to reach the
    /// registry over plain HTTP; every policy must load.
    pub fn serve(&self, policies: &[(String, String)]) -> Server {
        self.serve_with(policies, &[])
    }

    /// The same with more `serve` flags.
    pub fn serve_with(&self, policies: &[(String, String)], flags: &[&str]) -> Server {
        self.serve_with_env(policies, flags, vec![])
    }

    /// The same with more environment variables for the server.
    pub fn serve_with_env(
        &self,
        policies: &[(String, String)],
        flags: &[&str],
        env: Vec<(String, String)>,
    ) -> Server {
        let files: Vec<(String, String)> = policies
            .iter()
            .map(|(name, yaml)| (format!("{name}.yaml"), yaml.clone()))
            .collect();
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(n, y)| (n.as_str(), y.as_str()))
            .collect();
        let s = Server::start_with(
            &refs,
            Options {
                extra_args: ["--insecure-registry", &self.reg.addr]
                    .iter()
                    .chain(flags)
                    .map(|s| s.to_string())
                    .collect(),
                env,
                ..Options::default()
            },
        );
        let (_, ready) = s.get("/health/readiness");
        assert_eq!(ready["rejected"], 0, "{}", s.log());
        s
    }
}

/// The AdmissionResponse of `policy` for a pod running `image`.
pub fn validate(s: &Server, policy: &str, image: &str) -> Value {
    s.review(&format!("/ivpol/validate/{policy}"), &create_pod(&[image]))
}

pub fn assert_admitted(s: &Server, policy: &str, image: &str) {
    let r = validate(s, policy, image);
    assert_eq!(r["allowed"], true, "{policy} on {image}: {r}\n{}", s.log());
}

pub fn assert_denied(s: &Server, policy: &str, image: &str, message: &str) {
    let r = validate(s, policy, image);
    assert_eq!(r["allowed"], false, "{policy} on {image}: {r}");
    assert_eq!(
        r["status"]["message"],
        format!("Policy {policy} failed: {message}"),
        "{policy} on {image}"
    );
}

/// Runs one of the fixture binaries (`sign-image`, `push-image`), as the
/// README does; it must succeed.
pub fn run_fixture_bin(bin: &str, args: &[&str]) {
    let status = std::process::Command::new(bin)
        .args(args)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("run the fixture bin");
    assert!(status.success(), "{bin} {args:?}");
}

fn examples() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

/// `tests/examples/verify/<name>.yaml` with the README's registry address
/// (`127.0.0.1:5000`) replaced by `addr`, as (name, YAML).
pub fn example_policy(name: &str, addr: &str) -> (String, String) {
    let path = examples().join(format!("verify/{name}.yaml"));
    let yaml = std::fs::read_to_string(&path).expect("example policy");
    (name.to_string(), yaml.replace("127.0.0.1:5000", addr))
}

/// What the README's loop prints for each image path: `[allowed,
/// message]` of `tests/examples/pod-review.json` with the image replaced by
/// `addr/<path>`, sent to `/ivpol/validate`.
pub fn readme_answers(s: &Server, addr: &str, paths: &[&str]) -> Vec<Value> {
    let review =
        std::fs::read_to_string(examples().join("pod-review.json")).expect("example review");
    paths
        .iter()
        .map(|path| {
            let body = review.replace("127.0.0.1:5000/app:v1", &format!("{addr}/{path}"));
            let r = s.review(
                "/ivpol/validate",
                &serde_json::from_str(&body).expect("json"),
            );
            serde_json::json!([r["allowed"], r["status"]["message"]])
        })
        .collect()
}
