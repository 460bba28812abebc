//! Wasm against native: the same Sigstore bundle verification
//! (`verify::standalone::verify_bundle`) timed natively, linked into the
//! bench, and in the component (`ivpol sigstore verify-bundle --repeat`),
//! over vendored sigstore-conformance cases: a keyless bundle against the
//! public-good root, a managed-key bundle, and a DSSE (in-toto) bundle.

use anyhow::{bail, Context, Result};
use ivpol_guest::verify::standalone::{verify_bundle, Signer};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The cases, by directory name under `conformance/sigstore/`.
pub const CASES: [&str; 3] = [
    "happy-path-v0.3",
    "managed-key-happy-path",
    "happy-path-intoto-in-dsse-v3",
];

/// Verifications timed per case and side (after as many warm-up runs).
const RUNS: u32 = 100;

const IDENTITY: &str = "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main";
const ISSUER: &str = "https://token.actions.githubusercontent.com";

/// One case's mean time per verification, in microseconds.
pub struct Timing {
    pub case: String,
    pub native_us: f64,
    pub wasm_us: f64,
}

impl Timing {
    pub fn ratio(&self) -> f64 {
        self.wasm_us / self.native_us
    }
}

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/sigstore")
}

struct Case {
    dir: PathBuf,
    bundle: Vec<u8>,
    artifact: PathBuf,
    sha256: Vec<u8>,
    key: Option<PathBuf>,
    trusted_root: Option<PathBuf>,
}

fn case(name: &str) -> Result<Case> {
    let dir = cases_dir().join(name);
    let bundle = std::fs::read(dir.join("bundle.sigstore.json"))
        .with_context(|| format!("{name}: bundle"))?;
    let artifact = match dir.join("artifact").exists() {
        true => dir.join("artifact"),
        false => cases_dir().join("a.txt"),
    };
    let sha256 = Sha256::digest(std::fs::read(&artifact)?).to_vec();
    let key = Some(dir.join("key.pub")).filter(|p| p.exists());
    let trusted_root = Some(dir.join("trusted_root.json")).filter(|p| p.exists());
    Ok(Case {
        dir,
        bundle,
        artifact,
        sha256,
        key,
        trusted_root,
    })
}

/// Times `name` natively and in the component.
pub fn time(name: &str) -> Result<Timing> {
    let c = case(name)?;
    let root = match &c.trusted_root {
        Some(p) => Some(std::fs::read_to_string(p)?),
        None => None,
    };
    let signer = || -> Result<Signer> {
        Ok(match &c.key {
            Some(k) => Signer::Key(std::fs::read_to_string(k)?),
            None => Signer::Identity {
                subject: IDENTITY.into(),
                issuer: ISSUER.into(),
            },
        })
    };
    let now = ivpol_guest::verify::unix_now();
    let once = || {
        verify_bundle(&c.bundle, &c.sha256, signer()?, root.as_deref(), now)
            .map_err(anyhow::Error::msg)
    };
    for _ in 0..RUNS {
        once().with_context(|| format!("{name}: native verification"))?;
    }
    let started = Instant::now();
    for _ in 0..RUNS {
        once()?;
    }
    let native_us = started.elapsed().as_secs_f64() * 1e6 / f64::from(RUNS);
    Ok(Timing {
        case: name.to_string(),
        native_us,
        wasm_us: in_component(&c)?,
    })
}

/// `ivpol sigstore verify-bundle --repeat` on the case: the component's
/// mean, after the same number of warm-up runs in the same instance.
fn in_component(c: &Case) -> Result<f64> {
    let mut cmd = Command::new(ivpol_tests::ivpol_bin());
    cmd.args(["sigstore", "verify-bundle", "--repeat"])
        .arg((2 * RUNS).to_string())
        .arg("--bundle")
        .arg(c.dir.join("bundle.sigstore.json"));
    match &c.key {
        Some(k) => cmd.arg("--key").arg(k),
        None => cmd
            .args(["--certificate-identity", IDENTITY])
            .args(["--certificate-oidc-issuer", ISSUER]),
    };
    if let Some(r) = &c.trusted_root {
        cmd.arg("--trusted-root").arg(r);
    }
    let out = cmd.arg(&c.artifact).output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!(
            "{}: {text}{}",
            c.dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    text.lines()
        .find_map(|l| l.strip_prefix("verification: "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.parse::<f64>().ok())
        .context("no timing in verify-bundle's output")
}
