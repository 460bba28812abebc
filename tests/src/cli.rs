//! Running the offline subcommands (`ivpol apply`, `test`, `scan`) of the
//! real binary in a throw-away directory of policy and resource files.

use crate::fixtures::OCI_MANIFEST;
use crate::policy::{key_attestor, verifying_policy};
use crate::registry::Registry;
use crate::sign::{KeyKind, SignOpts, Signer};
use crate::{ivpol_bin, precompile_cache_dir};
use std::path::{Path, PathBuf};
use std::process::Command;

/// What one run printed and how it exited.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// A directory to write test files into, and `ivpol` run in it.
pub struct Workdir {
    pub dir: tempfile::TempDir,
}

impl Default for Workdir {
    fn default() -> Self {
        Workdir::new()
    }
}

impl Workdir {
    pub fn new() -> Workdir {
        Workdir {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    /// Writes `content` to `name` (parent directories made) and returns its path.
    pub fn write(&self, name: &str, content: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&p, content).expect("write");
        p
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `ivpol <args>` in the directory, with the shared precompile cache.
    pub fn ivpol(&self, args: &[&str]) -> Run {
        ivpol_in(self.dir.path(), args)
    }
}

/// `ivpol <args>` run in `dir`; the subcommand comes first in `args`.
pub fn ivpol_in(dir: &Path, args: &[&str]) -> Run {
    ivpol_in_env(dir, args, &[])
}

/// [`ivpol_in`] with more environment variables.
pub fn ivpol_in_env(dir: &Path, args: &[&str], env: &[(String, String)]) -> Run {
    let mut cmd = Command::new(ivpol_bin());
    cmd.current_dir(dir)
        .args(args)
        .env("IVPOL_CACHE_DIR", precompile_cache_dir())
        .env("IVPOL_LOG", "warn")
        .env("NO_COLOR", "1")
        .envs(env.iter().cloned());
    Run::of(&mut cmd)
}

impl Run {
    /// Runs `cmd` to its end.
    pub fn of(cmd: &mut Command) -> Run {
        let out = cmd.output().expect("run ivpol");
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Whether it exited 0.
    pub fn success(&self) -> bool {
        self.code == 0
    }
}

/// A registry with one image signed by a cosign key and one unsigned, and
/// a Pod policy `name` that requires the key's signature.
pub struct KeyImages {
    pub reg: Registry,
    /// `addr/app/signed:v1`
    pub signed: String,
    /// `addr/app/unsigned:v1`
    pub unsigned: String,
    pub public_pem: String,
}

/// The message of [`KeyImages::policy`]'s validation.
pub const NOT_SIGNED: &str = "failed to verify image with the cosign key";

impl KeyImages {
    pub fn new() -> KeyImages {
        let reg = Registry::start();
        let p = crate::fixtures::Pusher {
            addr: &reg.addr,
            auth: None,
        };
        let signer = Signer::keyed(KeyKind::P256);
        let digest = p.image("app/signed", "v1", OCI_MANIFEST, "amd64");
        signer.sign_image(&p, "app/signed", &digest, &SignOpts::default());
        p.image("app/unsigned", "v1", OCI_MANIFEST, "amd64");
        let signed = format!("{}/app/signed:v1", reg.addr);
        let unsigned = format!("{}/app/unsigned:v1", reg.addr);
        let public_pem = signer.public_pem();
        KeyImages {
            reg,
            signed,
            unsigned,
            public_pem,
        }
    }

    /// An ImageValidatingPolicy on Pods (and, by autogen, pod controllers)
    /// requiring the key's signature on every container.
    pub fn policy(&self, name: &str) -> String {
        verifying_policy(
            name,
            &key_attestor("cosign", &self.public_pem),
            "",
            "images.containers.map(i, verifyImageSignatures(i, [attestors.cosign])).all(n, n > 0)",
            NOT_SIGNED,
        )
    }

    /// The registry flags for `ivpol`.
    pub fn flags(&self) -> [&str; 2] {
        ["--insecure-registry", &self.reg.addr]
    }
}

impl Default for KeyImages {
    fn default() -> Self {
        KeyImages::new()
    }
}

/// A Pod manifest (YAML) named `name` in `namespace` running `image`.
pub fn pod_yaml(name: &str, namespace: &str, image: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  containers:\n    - name: c\n      image: {image}\n"
    )
}
