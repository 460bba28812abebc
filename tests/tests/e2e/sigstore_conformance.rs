//! The sigstore-conformance bundle-verify cases (vendored in
//! `conformance/sigstore/`), run through `ivpol sigstore verify-bundle` as
//! the conformance suite runs a client: every case in PATH and DIGEST mode,
//! exit status 0 for a pass, anything else for a fail.

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

/// Runs one case in one mode; true when the client reported success.
fn verify(case: &str, digest_mode: bool) -> (bool, String) {
    let dir = cases_dir().join(case);
    let artifact = match dir.join("artifact").exists() {
        true => dir.join("artifact"),
        false => cases_dir().join("a.txt"),
    };
    let mut cmd = Command::new(ivpol_bin());
    cmd.arg("sigstore")
        .arg("--cache-dir")
        .arg(precompile_cache_dir())
        .arg("verify-bundle")
        .arg("--bundle")
        .arg(dir.join("bundle.sigstore.json"));
    if dir.join("key.pub").exists() {
        cmd.arg("--key").arg(dir.join("key.pub"));
    } else {
        let identity = read_trimmed(&dir.join("identity")).unwrap_or(DEFAULT_IDENTITY.into());
        let issuer = read_trimmed(&dir.join("issuer")).unwrap_or(DEFAULT_ISSUER.into());
        cmd.arg("--certificate-identity")
            .arg(identity)
            .arg("--certificate-oidc-issuer")
            .arg(issuer);
    }
    if dir.join("trusted_root.json").exists() {
        cmd.arg("--trusted-root").arg(dir.join("trusted_root.json"));
    }
    if digest_mode {
        let bytes = std::fs::read(&artifact).expect("artifact");
        let hex: String = Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        cmd.arg(format!("sha256:{hex}"));
    } else {
        cmd.arg(&artifact);
    }
    let out = cmd.output().expect("run ivpol");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn every_bundle_case_gives_its_expected_outcome() {
    let cases = case_names();
    assert!(cases.len() >= 70, "only {} cases found", cases.len());
    let mut wrong = Vec::new();
    for case in &cases {
        let expect_pass = !case.ends_with("_fail");
        for digest_mode in [false, true] {
            let (passed, output) = verify(case, digest_mode);
            if passed != expect_pass {
                let mode = if digest_mode { "DIGEST" } else { "PATH" };
                wrong.push(format!(
                    "{mode}-{case}: expected {}, got {}: {}",
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
