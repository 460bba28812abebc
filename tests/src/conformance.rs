//! The sigstore-conformance bundle-verify cases (vendored in
//! `conformance/sigstore/`) and the inputs the suite hands a client for
//! each: the end-to-end tests run them through `ivpol sigstore
//! verify-bundle`, and the oracle tests (`oracles/`) hand them to
//! sigstore-verify as well.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

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
