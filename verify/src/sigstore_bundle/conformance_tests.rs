//! Every `bundle-verify` case of sigstore-conformance (vendored in
//! `conformance/sigstore/`), run the way the conformance suite runs a client:
//! the case's identity/issuer (or the defaults), `key.pub` for key mode, the
//! case's `trusted_root.json` (or the production one), the artifact in PATH
//! and DIGEST mode, and the real current time.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{verify, Artifact, Options, Policy};
use crate::keys::PublicKey;
use crate::trust::TrustMaterial;
use crate::x509::fulcio::IdentityRule;

const DEFAULT_IDENTITY: &str = "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main";
const DEFAULT_ISSUER: &str = "https://token.actions.githubusercontent.com";

/// Runs (case, mode) whose outcome is known not to match, with the reason.
/// The test asserts that exactly these mismatch, so the list cannot go stale.
const EXPECTED_MISMATCHES: &[(&str, &str, &str)] = &[];

fn root() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../conformance/sigstore"
    ))
}

fn read_trimmed(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// One run: Ok(()) if verification passed, Err(reason) if it failed.
fn run_case(dir: &Path, digest_mode: bool) -> std::result::Result<(), String> {
    let bundle = std::fs::read(dir.join("bundle.sigstore.json")).map_err(|e| e.to_string())?;
    let trust_path = if dir.join("trusted_root.json").exists() {
        dir.join("trusted_root.json")
    } else {
        root().join("_public-good-trusted_root.sigstore.dev.json")
    };
    let trust_json = std::fs::read(&trust_path).map_err(|e| e.to_string())?;
    let trust = TrustMaterial::from_trusted_root_json(&String::from_utf8_lossy(&trust_json))
        .map_err(|e| format!("trusted root: {e}"))?;
    let policy = if dir.join("key.pub").exists() {
        let pem = std::fs::read_to_string(dir.join("key.pub")).map_err(|e| e.to_string())?;
        Policy::Key(PublicKey::from_pem(&pem).map_err(|e| format!("key.pub: {e}"))?)
    } else {
        let identity =
            read_trimmed(&dir.join("identity")).unwrap_or_else(|| DEFAULT_IDENTITY.into());
        let issuer = read_trimmed(&dir.join("issuer")).unwrap_or_else(|| DEFAULT_ISSUER.into());
        Policy::Identities(vec![IdentityRule {
            issuer: Some(issuer),
            subject: Some(identity),
            ..Default::default()
        }])
    };
    let artifact_path = if dir.join("artifact").exists() {
        dir.join("artifact")
    } else {
        root().join("a.txt")
    };
    let bytes = std::fs::read(artifact_path).map_err(|e| e.to_string())?;
    let artifact = if digest_mode {
        Artifact::Sha256(Sha256::digest(&bytes).into())
    } else {
        Artifact::Bytes(&bytes)
    };
    let opts = Options {
        ignore_tlog: false,
        ignore_sct: false,
        require_timestamp: false,
        now: now(),
    };
    verify(&bundle, artifact, &policy, &trust, &opts)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[test]
fn every_conformance_case_gives_its_expected_outcome() {
    let tsv = std::fs::read_to_string(root().join("CASES.tsv")).unwrap();
    let listed: BTreeSet<String> = tsv
        .lines()
        .skip(1)
        .filter_map(|l| l.split('\t').next())
        .filter(|c| !c.is_empty())
        .map(String::from)
        .collect();
    let dirs: BTreeSet<String> = std::fs::read_dir(root())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(listed, dirs, "CASES.tsv and the case directories disagree");
    assert!(dirs.len() >= 70, "only {} cases found", dirs.len());

    let mut mismatches = Vec::new();
    let mut matched = 0;
    for case in &dirs {
        let expect_pass = !case.ends_with("_fail");
        for (mode, digest_mode) in [("PATH", false), ("DIGEST", true)] {
            let outcome = run_case(&root().join(case), digest_mode);
            if std::env::var_os("CONFORMANCE_VERBOSE").is_some() {
                eprintln!(
                    "{case} {mode}: {}",
                    outcome.as_ref().err().map_or("ok", |e| e.as_str())
                );
            }
            if outcome.is_ok() == expect_pass {
                matched += 1;
            } else {
                mismatches.push((
                    case.clone(),
                    mode,
                    outcome.err().unwrap_or_else(|| "passed".into()),
                ));
            }
        }
    }
    let got: BTreeSet<(String, String)> = mismatches
        .iter()
        .map(|(c, m, _)| (c.clone(), m.to_string()))
        .collect();
    let want: BTreeSet<(String, String)> = EXPECTED_MISMATCHES
        .iter()
        .map(|(c, m, _)| (c.to_string(), m.to_string()))
        .collect();
    if got != want {
        let mut table = String::from("\ncase | mode | expected | got\n");
        for (case, mode, why) in &mismatches {
            let expected = if case.ends_with("_fail") {
                "fail"
            } else {
                "pass"
            };
            table.push_str(&format!("{case} | {mode} | {expected} | {why}\n"));
        }
        for (c, m) in want.difference(&got) {
            table.push_str(&format!(
                "{c} | {m} | listed as an expected mismatch but matched\n"
            ));
        }
        panic!(
            "{matched} of {} runs matched; unexpected outcomes:{table}",
            dirs.len() * 2
        );
    }
    eprintln!("{matched} of {} conformance runs matched", dirs.len() * 2);
}
