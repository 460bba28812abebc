//! Wasm against native: the same verification timed natively, linked into
//! the bench, and in the component:
//!
//! - Sigstore bundles (`verify::standalone::verify_bundle` against `ivpol
//!   sigstore verify-bundle --repeat`), vendored sigstore-conformance
//!   cases: a keyless bundle against the public-good root, a managed-key
//!   bundle, and a DSSE (in-toto) bundle;
//! - Notary envelopes (`notary::standalone::verify_notary` against `ivpol
//!   notary verify --repeat`), vendored notation-go envelopes: a JWS with a
//!   CA chain, and a COSE_Sign1 with an RFC 3161 countersignature.

use anyhow::{bail, Context, Result};
use ivpol_guest::notary::standalone::verify_notary;
use ivpol_guest::notary::Target;
use ivpol_guest::verify::encoding::pem_encode;
use ivpol_guest::verify::standalone::{verify_bundle, Signer};
use ivpol_tests::notary_cases::{notary_cases, NotaryCase};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The cases, by directory name under `conformance/sigstore/`.
const CASES: [&str; 3] = [
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

/// Every case, natively and in the component.
pub fn time_all() -> Result<Vec<Timing>> {
    let mut timings = Vec::new();
    for case in CASES {
        timings.push(time(case)?);
    }
    for case in notary_cases() {
        timings.push(time_notary(&case)?);
    }
    Ok(timings)
}

/// Mean microseconds of one `verify()`, after as many warm-up runs.
fn mean_us(what: &str, mut verify: impl FnMut() -> Result<()>) -> Result<f64> {
    for _ in 0..RUNS {
        verify().with_context(|| format!("{what}: native verification"))?;
    }
    let started = Instant::now();
    for _ in 0..RUNS {
        verify()?;
    }
    Ok(started.elapsed().as_secs_f64() * 1e6 / f64::from(RUNS))
}

/// Times the bundle case `name` natively and in the component.
fn time(name: &str) -> Result<Timing> {
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
    Ok(Timing {
        case: name.to_string(),
        native_us: mean_us(name, once)?,
        wasm_us: in_component(&c)?,
    })
}

/// Times one Notary envelope natively and in the component, with the
/// trust stores as the same PEM text `ivpol notary verify` hands it.
fn time_notary(case: &NotaryCase) -> Result<Timing> {
    let envelope = std::fs::read(&case.envelope)?;
    let certs = pem_of(&case.certs)?;
    let tsa_certs = Some(pem_of(&case.tsa_certs)?).filter(|p| !p.is_empty());
    let target = Target {
        digest: case.target_digest.into(),
        media_type: case.target_media_type.into(),
        size: case.target_size,
    };
    let now = ivpol_guest::verify::unix_now();
    let once = || {
        let media_type = case.format.media_type();
        let tsa = tsa_certs.as_deref();
        verify_notary(&envelope, media_type, &target, &certs, tsa, now).map_err(anyhow::Error::msg)
    };
    let mut cmd = case.command();
    cmd.arg(case.target_digest);
    Ok(Timing {
        case: format!("notary {}", case.name),
        native_us: mean_us(case.name, once)?,
        wasm_us: repeated_in_component(cmd, case.name)?,
    })
}

/// The certificates of `files` as one PEM text, as `ivpol notary verify`
/// reads them: a PEM file as it is, any other as one DER certificate.
fn pem_of(files: &[PathBuf]) -> Result<String> {
    let mut pem = String::new();
    for file in files {
        let bytes = std::fs::read(file)?;
        match std::str::from_utf8(&bytes) {
            Ok(text) if text.contains("-----BEGIN") => pem.push_str(text),
            _ => pem.push_str(&pem_encode("CERTIFICATE", &bytes)),
        }
    }
    Ok(pem)
}

/// `ivpol sigstore verify-bundle --repeat` on the case: the component's
/// mean, after the same number of warm-up runs in the same instance.
fn in_component(c: &Case) -> Result<f64> {
    let mut cmd = Command::new(ivpol_tests::ivpol_bin());
    cmd.args(["sigstore", "verify-bundle", "--bundle"])
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
    cmd.arg(&c.artifact);
    repeated_in_component(cmd, &c.dir.display().to_string())
}

/// Runs `cmd` (a standalone verification command) with `--repeat`: the
/// component's mean, after as many warm-up runs in the same instance.
fn repeated_in_component(mut cmd: Command, what: &str) -> Result<f64> {
    // Flags may follow the positional artifact.
    cmd.args(["--repeat", &(2 * RUNS).to_string()]);
    let out = cmd.output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!("{what}: {text}{}", String::from_utf8_lossy(&out.stderr));
    }
    text.lines()
        .find_map(|l| l.strip_prefix("verification: "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.parse::<f64>().ok())
        .with_context(|| format!("{what}: no timing in the output"))
}
