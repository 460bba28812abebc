//! The sigstore-conformance bundle-verify cases (vendored in
//! `conformance/sigstore/`), run through `ivpol sigstore verify-bundle` as
//! the conformance suite runs a client: every case in PATH and DIGEST mode,
//! exit status 0 for a pass, anything else for a fail. The cases' inputs
//! come from `ivpol_tests::conformance`, which the sigstore-rust oracle
//! (`oracles/`) reads as well.

use ivpol_tests::cli::Run;
use ivpol_tests::conformance::{cases, sha256_of, Case, Signer};
use ivpol_tests::{ivpol_bin, precompile_cache_dir};
use std::process::Command;

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
