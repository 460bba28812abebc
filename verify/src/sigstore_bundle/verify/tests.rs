use super::*;
use crate::sigstore_bundle::verify as verify_json;
use crate::timestamp::TimestampError;
use crate::x509::fulcio::{FulcioError, IdentityRule};
use crate::VerifyError;

const IDENTITY: &str = "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main";
const ISSUER: &str = "https://token.actions.githubusercontent.com";
const NOW: i64 = 1_800_000_000;

fn dir(case: &str) -> String {
    format!(
        "{}/../conformance/sigstore/{case}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn bundle(case: &str) -> Vec<u8> {
    std::fs::read(format!("{}/bundle.sigstore.json", dir(case))).unwrap()
}

fn trust(case: &str) -> TrustMaterial {
    let own = format!("{}/trusted_root.json", dir(case));
    let path = if std::path::Path::new(&own).exists() {
        own
    } else {
        dir("_public-good-trusted_root.sigstore.dev.json")
    };
    TrustMaterial::from_trusted_root_json(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The bundle check that failed, through the stage's class and the log
/// entry it concerns.
fn check_error(e: &VerifyError) -> Option<&CheckError> {
    match e {
        VerifyError::Classified { source, .. } | VerifyError::Context { source, .. } => {
            check_error(source)
        }
        VerifyError::Check(CheckError::LogEntry { source, .. }) => Some(source),
        VerifyError::Check(e) => Some(e),
        _ => None,
    }
}

/// The Fulcio identity check that failed, through the stage's class.
fn fulcio_error(e: &VerifyError) -> Option<&FulcioError> {
    match e {
        VerifyError::Classified { source, .. } => fulcio_error(source),
        VerifyError::Fulcio(e) => Some(e),
        _ => None,
    }
}

fn a_txt() -> Vec<u8> {
    std::fs::read(dir("a.txt")).unwrap()
}

fn keyless(subject: &str) -> Policy {
    Policy::Identities(vec![IdentityRule {
        issuer: Some(ISSUER.into()),
        subject: Some(subject.into()),
        ..Default::default()
    }])
}

/// `keyless(IDENTITY)` with `additionalExtensions` and a
/// `subjectExpression` result.
fn keyless_with(extensions: &[(&str, &str)], subject_expression: Option<&str>) -> Policy {
    Policy::Identities(vec![IdentityRule {
        issuer: Some(ISSUER.into()),
        subject: Some(IDENTITY.into()),
        subject_expression: subject_expression.map(String::from),
        extensions: extensions
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Default::default()
    }])
}

#[test]
fn additional_extensions_must_match_the_certificate() {
    // The conformance certificate was issued by Fulcio to a GitHub
    // workflow: it carries the raw-string v1 extensions .2 to .6.
    let repo = "sigstore-conformance/extremely-dangerous-public-oidc-beacon";
    let all = [
        ("githubWorkflowTrigger", "workflow_dispatch"),
        (
            "githubWorkflowSha",
            "c7b3dfb335f051e1c86bda4c716fac97df62ad81",
        ),
        ("githubWorkflowName", "Extremely dangerous OIDC beacon"),
        ("githubWorkflowRepository", repo),
        ("githubWorkflowRef", "refs/heads/main"),
    ];
    let v = run("happy-path-v0.3", &keyless_with(&all, None), &opts()).unwrap();
    assert_eq!(v.identity.unwrap().extensions.len(), 5);
    for (key, _) in all {
        let e = run(
            "happy-path-v0.3",
            &keyless_with(&[(key, "something-else")], None),
            &opts(),
        )
        .unwrap_err();
        assert!(
            matches!(
                fulcio_error(&e),
                Some(FulcioError::NoIdentityMatched {
                    extensions: Some(_),
                    ..
                })
            ),
            "{key}: {e:?}"
        );
        assert!(e.to_string().contains("extensions ["), "{key}: {e}");
    }
    // a prefix is no match: values compare exactly
    let e = run(
        "happy-path-v0.3",
        &keyless_with(
            &[("githubWorkflowRepository", "sigstore-conformance")],
            None,
        ),
        &opts(),
    );
    assert_eq!(e.unwrap_err().reason(), Reason::Identity);
}

/// Each failing conformance case fails for the class of reason its
/// name says, so decision logs tell them apart.
#[test]
fn failures_carry_their_reason_class() {
    use crate::Reason;
    let cases = [
        ("signature-mismatch_fail", Reason::BadSignature),
        ("dsse-invalid-sig_fail", Reason::BadSignature),
        (
            "rekor2-timestamp-outside-tsa-cert-validity_fail",
            Reason::Timestamp,
        ),
        ("integrated-time-in-future_fail", Reason::Timestamp),
        (
            "intoto-missing-inclusion-proof_fail",
            Reason::TransparencyLog,
        ),
        ("invalid-inclusion-proof_fail", Reason::TransparencyLog),
        ("checkpoint-wrong-roothash_fail", Reason::TransparencyLog),
        ("set-invalid-signature_fail", Reason::TransparencyLog),
        ("invalid-ct-key_fail", Reason::TransparencyLog),
        ("bundle-malformed-json_fail", Reason::Malformed),
    ];
    let mut wrong = Vec::new();
    for (case, want) in cases {
        match run(case, &keyless(IDENTITY), &opts()) {
            Ok(_) => wrong.push(format!("{case}: verified")),
            Err(e) if e.reason() != want => {
                wrong.push(format!("{case}: {:?}, want {want:?}: {e}", e.reason()))
            }
            Err(_) => {}
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    let other = run(
        "happy-path-v0.3",
        &keyless("https://example.com/other"),
        &opts(),
    );
    assert_eq!(other.unwrap_err().reason(), Reason::Identity);
}

#[test]
fn subject_expression_results_are_matched_against_the_sans() {
    let ok = |re: &str| run("happy-path-v0.3", &keyless_with(&[], Some(re)), &opts());
    assert!(ok("^https://github.com/sigstore-conformance/").is_ok());
    let other = ok("^https://github.com/someone-else/").unwrap_err();
    assert_eq!(other.reason(), Reason::Identity);
    let bad = ok("(").unwrap_err();
    assert!(
        matches!(fulcio_error(&bad), Some(FulcioError::BadRegex { pattern, .. }) if pattern == "("),
        "{bad:?}"
    );
    assert!(bad.to_string().contains("malformed"), "{bad}");
}

fn opts() -> Options {
    Options {
        ignore_tlog: false,
        ignore_sct: false,
        require_timestamp: false,
        now: NOW,
    }
}

fn run(case: &str, policy: &Policy, opts: &Options) -> Result<Verified> {
    let a = a_txt();
    verify_json(
        &bundle(case),
        Artifact::Bytes(&a),
        policy,
        &trust(case),
        opts,
    )
}

#[test]
fn returns_the_verified_time_and_identity() {
    let v = run("happy-path-v0.3", &keyless(IDENTITY), &opts()).unwrap();
    assert_eq!(v.times, vec![1_710_869_186]);
    assert!(v.statement.is_none());
    let id = v.identity.unwrap();
    assert!(id.sans.iter().any(|s| s == IDENTITY));
    assert_eq!(id.issuer.as_deref(), Some(ISSUER));
}

#[test]
fn returns_the_in_toto_statement_of_a_dsse_bundle() {
    let v = run("rekor2-dsse-happy-path", &keyless(IDENTITY), &opts()).unwrap();
    let st = v.statement.unwrap();
    assert_eq!(st["_type"], "https://in-toto.io/Statement/v1");
    assert_eq!(v.times.len(), 1, "one RFC 3161 time, no integrated time");
    // an artifact that is no subject
    let e = verify_json(
        &bundle("rekor2-dsse-happy-path"),
        Artifact::Sha256([7; 32]),
        &keyless(IDENTITY),
        &trust("rekor2-dsse-happy-path"),
        &opts(),
    )
    .unwrap_err();
    assert_eq!(
        check_error(&e),
        Some(&CheckError::NoSubjectMatches([7; 32])),
        "{e:?}"
    );
    assert_eq!(e.reason(), Reason::PayloadMismatch);
    assert!(e.to_string().contains("no subject"), "{e}");
}

#[test]
fn an_integrated_time_after_now_fails() {
    let mut o = opts();
    o.now = 1_710_869_186 - 1;
    let e = run("happy-path-v0.3", &keyless(IDENTITY), &o).unwrap_err();
    assert_eq!(
        check_error(&e),
        Some(&CheckError::FutureTime {
            time: 1_710_869_186,
            now: 1_710_869_185
        }),
        "{e:?}"
    );
    assert_eq!(e.reason(), Reason::TransparencyLog);
    assert!(e.to_string().contains("in the future"), "{e}");
    o.now = 1_710_869_186;
    assert!(run("happy-path-v0.3", &keyless(IDENTITY), &o).is_ok());
}

#[test]
fn the_policy_kind_must_fit_the_bundle() {
    let key = trust("happy-path-v0.3").tlogs[0].key.clone();
    let e = run("happy-path-v0.3", &Policy::Key(key), &opts()).unwrap_err();
    assert_eq!(check_error(&e), Some(&CheckError::CertificateBundleForKey));
    assert!(e.to_string().contains("expects a public key"), "{e}");
    let e = run("managed-key-happy-path", &keyless(IDENTITY), &opts()).unwrap_err();
    assert_eq!(check_error(&e), Some(&CheckError::KeyBundleForIdentities));
    assert!(
        e.to_string().contains("expects a certificate identity"),
        "{e}"
    );
}

#[test]
fn a_wrong_identity_fails() {
    let e = run(
        "happy-path-v0.3",
        &keyless("https://example.com/other"),
        &opts(),
    )
    .unwrap_err();
    assert_eq!(e.reason(), Reason::Identity, "{e}");
}

#[test]
fn ignoring_the_log_leaves_keyless_bundles_without_time_unless_timestamped() {
    let o = Options {
        ignore_tlog: true,
        ..opts()
    };
    let e = run("happy-path-v0.3", &keyless(IDENTITY), &o).unwrap_err();
    assert_eq!(check_error(&e), Some(&CheckError::NoVerifiedTime));
    assert!(e.to_string().contains("no verified time"), "{e}");
    let v = run("rekor2-happy-path", &keyless(IDENTITY), &o).unwrap();
    assert_eq!(v.times.len(), 1);
}

/// `ctlog.tsaCertChain` (cosign's `UseSignedTimestamps`): a bundle
/// without a verified RFC 3161 timestamp fails.
#[test]
fn a_required_timestamp_must_be_there() {
    let o = Options {
        require_timestamp: true,
        ..opts()
    };
    let e = run("happy-path-v0.3", &keyless(IDENTITY), &o).unwrap_err();
    assert_eq!(check_error(&e), Some(&CheckError::TimestampRequired));
    assert_eq!(e.reason(), Reason::Timestamp);
    assert!(e.to_string().contains("no RFC 3161 timestamp"), "{e}");
    assert!(run("rekor2-happy-path", &keyless(IDENTITY), &o).is_ok());
}

#[test]
fn ignore_sct_skips_only_the_sct() {
    let e = run("invalid-ct-key_fail", &keyless(IDENTITY), &opts()).unwrap_err();
    assert!(
        matches!(
            check_error(&e),
            Some(CheckError::Sct(crate::x509::sct::SctError::NoneValid(_)))
        ),
        "{e:?}"
    );
    assert_eq!(e.reason(), Reason::TransparencyLog);
    assert!(e.to_string().contains("SCT"), "{e}");
    let o = Options {
        ignore_sct: true,
        ..opts()
    };
    assert!(run("invalid-ct-key_fail", &keyless(IDENTITY), &o).is_ok());
}

#[test]
fn a_checkpoint_for_another_tree_fails() {
    let mut v: serde_json::Value = serde_json::from_slice(&bundle("rekor2-happy-path")).unwrap();
    let env = &mut v["verificationMaterial"]["tlogEntries"][0]["inclusionProof"]["checkpoint"]
        ["envelope"];
    let tampered = env.as_str().unwrap().replacen("\n736\n", "\n737\n", 1);
    *env = tampered.into();
    let a = a_txt();
    let e = verify_json(
        &serde_json::to_vec(&v).unwrap(),
        Artifact::Bytes(&a),
        &keyless(IDENTITY),
        &trust("rekor2-happy-path"),
        &opts(),
    )
    .unwrap_err();
    assert!(
        matches!(
            check_error(&e),
            Some(CheckError::CheckpointSignature { .. })
        ),
        "{e:?}"
    );
    assert_eq!(e.reason(), Reason::TransparencyLog);
    assert!(e.to_string().contains("checkpoint signature"), "{e}");
}

#[test]
fn timestamps_need_trusted_authorities() {
    let mut t = trust("rekor2-happy-path");
    t.tsas.clear();
    let a = a_txt();
    let e = verify_json(
        &bundle("rekor2-happy-path"),
        Artifact::Bytes(&a),
        &keyless(IDENTITY),
        &t,
        &opts(),
    )
    .unwrap_err();
    assert_eq!(check_error(&e), Some(&CheckError::NoTimestampAuthority));
    assert!(e.to_string().contains("no timestamp authorities"), "{e}");
}

#[test]
fn timestamp_over_other_bytes_fails() {
    let b = Bundle::parse(&bundle("rekor2-happy-path")).unwrap();
    let token = TimeStampToken::parse(&b.timestamps[0]).unwrap();
    let t = trust("rekor2-happy-path");
    let at = super::super::timestamp::verify(&token, b.content.signature(), &t.tsas).unwrap();
    assert_eq!(at, token.tst_info.gen_time);
    let e = super::super::timestamp::verify(&token, b"other", &t.tsas).unwrap_err();
    assert_eq!(e, TimestampError::BundleImprint);
    assert!(e.to_string().contains("message imprint"), "{e}");
    let e = super::super::timestamp::verify(&token, b.content.signature(), &[]).unwrap_err();
    assert_eq!(e, TimestampError::NoAuthority(Vec::new()));
    assert!(e.to_string().contains("has none"), "{e}");
}

#[test]
fn url_hosts() {
    assert_eq!(
        url_host("https://rekor.sigstore.dev"),
        ("rekor.sigstore.dev", "rekor.sigstore.dev")
    );
    assert_eq!(
        url_host("http://localhost:8000/api"),
        ("localhost:8000", "localhost")
    );
    assert_eq!(url_host("rekor-local"), ("rekor-local", "rekor-local"));
    assert_eq!(url_host(""), ("", ""));
}
