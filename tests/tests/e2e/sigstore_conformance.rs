//! The sigstore-conformance bundle-verify cases (vendored in
//! `conformance/sigstore/`), run through `ivpol sigstore verify-bundle` as
//! the conformance suite runs a client: every case in PATH and DIGEST mode,
//! exit status 0 for a pass, anything else for a fail. [`cases`] gives each
//! case's inputs, which `sigstore_rust` hands sigstore-verify as well.

use ivpol_tests::cli::Run;
use ivpol_tests::{ivpol_bin, precompile_cache_dir};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

const DEFAULT_IDENTITY: &str = "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main";
const DEFAULT_ISSUER: &str = "https://token.actions.githubusercontent.com";

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/sigstore")
}

fn case_names() -> Vec<String> {
    let index = std::fs::read_to_string(cases_dir().join("CASES.tsv")).expect("CASES.tsv");
    index
        .lines()
        .skip(1)
        .filter_map(|l| l.split('\t').next())
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .collect()
}

fn read_trimmed(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Who must have signed a case's bundle, as the suite tells a client.
pub enum Signer {
    /// `--key`: the case's `key.pub`.
    Key(PathBuf),
    /// `--certificate-identity` / `--certificate-oidc-issuer`: the case's
    /// `identity` and `issuer` files, or the suite's defaults.
    Identity { identity: String, issuer: String },
}

/// One bundle-verify case and the inputs the suite hands a client for it.
pub struct Case {
    pub name: String,
    pub bundle: PathBuf,
    /// The case's `artifact`, or the suite's shared `a.txt`.
    pub artifact: PathBuf,
    pub signer: Signer,
    /// `--trusted-root`: the case's `trusted_root.json`, if it has one;
    /// without it a client uses the production root.
    pub trusted_root: Option<PathBuf>,
    /// Whether the suite expects the client to pass (no `_fail` suffix).
    pub expect_pass: bool,
}

impl Case {
    fn read(name: &str) -> Case {
        let dir = cases_dir().join(name);
        let artifact = match dir.join("artifact").exists() {
            true => dir.join("artifact"),
            false => cases_dir().join("a.txt"),
        };
        let signer = if dir.join("key.pub").exists() {
            Signer::Key(dir.join("key.pub"))
        } else {
            Signer::Identity {
                identity: read_trimmed(&dir.join("identity")).unwrap_or(DEFAULT_IDENTITY.into()),
                issuer: read_trimmed(&dir.join("issuer")).unwrap_or(DEFAULT_ISSUER.into()),
            }
        };
        Case {
            name: name.to_string(),
            bundle: dir.join("bundle.sigstore.json"),
            artifact,
            signer,
            trusted_root: Some(dir.join("trusted_root.json")).filter(|p| p.exists()),
            expect_pass: !name.ends_with("_fail"),
        }
    }

    /// The trusted root a client without `--trusted-root` uses: the
    /// production one (the suite's embedded copy, as ivpol embeds it).
    pub fn trusted_root_or_production(&self) -> PathBuf {
        self.trusted_root
            .clone()
            .unwrap_or_else(|| cases_dir().join("_public-good-trusted_root.sigstore.dev.json"))
    }
}

/// Every case of `CASES.tsv`, checked to be the whole suite.
pub fn cases() -> Vec<Case> {
    let cases: Vec<Case> = case_names().iter().map(|n| Case::read(n)).collect();
    assert!(cases.len() >= 70, "only {} cases found", cases.len());
    cases
}

/// `sha256:<hex>` of the artifact, as DIGEST mode passes it.
pub fn sha256_of(path: &Path) -> [u8; 32] {
    Sha256::digest(std::fs::read(path).expect("artifact")).into()
}

/// Runs one case in one mode; true when the client reported success.
fn verify(case: &Case, digest_mode: bool) -> (bool, String) {
    let mut cmd = Command::new(ivpol_bin());
    cmd.arg("sigstore")
        .arg("--cache-dir")
        .arg(precompile_cache_dir())
        .arg("verify-bundle")
        .arg("--bundle")
        .arg(&case.bundle);
    match &case.signer {
        Signer::Key(key) => {
            cmd.arg("--key").arg(key);
        }
        Signer::Identity { identity, issuer } => {
            cmd.arg("--certificate-identity")
                .arg(identity)
                .arg("--certificate-oidc-issuer")
                .arg(issuer);
        }
    }
    if let Some(root) = &case.trusted_root {
        cmd.arg("--trusted-root").arg(root);
    }
    if digest_mode {
        let hex = ivpol_tests::sign::hex(&sha256_of(&case.artifact));
        cmd.arg(format!("sha256:{hex}"));
    } else {
        cmd.arg(&case.artifact);
    }
    let run = Run::of(&mut cmd);
    (run.success(), format!("{}{}", run.stdout, run.stderr))
}

#[test]
fn every_bundle_case_gives_its_expected_outcome() {
    let mut wrong = Vec::new();
    for case in &cases() {
        let expect_pass = case.expect_pass;
        for digest_mode in [false, true] {
            let (passed, output) = verify(case, digest_mode);
            if passed != expect_pass {
                let mode = if digest_mode { "DIGEST" } else { "PATH" };
                wrong.push(format!(
                    "{mode}-{}: expected {}, got {}: {}",
                    case.name,
                    if expect_pass { "pass" } else { "fail" },
                    if passed { "pass" } else { "fail" },
                    output.trim().lines().last().unwrap_or_default()
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} mismatches:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
