//! Notary envelopes from `notation e2e`.

use super::*;

#[test]
fn e2e_valid_signature() {
    let env = blob("e2e-valid-signature", "c9af07e0");
    ok(&env, MEDIA_TYPE_JWS, &e2e_target(), &ca(&[E2E_CRT]));
    fails(
        &env,
        MEDIA_TYPE_JWS,
        &e2e_target(),
        &ca(&["notation/test/e2e/testdata/config/localkeys/new_e2e.crt"]),
        "the signature's certificate chain does not contain any trusted certificate",
    );
}

#[test]
fn e2e_expired_signature() {
    fails(
        &blob("e2e-expired-signature", "b5f92756"),
        MEDIA_TYPE_JWS,
        &e2e_target(),
        &ca(&[E2E_CRT]),
        "digital signature has expired on",
    );
}

#[test]
fn e2e_with_expired_cert() {
    fails(
        &blob("e2e-with-expired-cert", "8513a5ba"),
        MEDIA_TYPE_JWS,
        &e2e_target(),
        &ca(&["notation/test/e2e/testdata/config/localkeys/expired_e2e.crt"]),
        "verification time is after certificate \"O=Internet Widgits Pty Ltd,ST=Some-State,C=AU\" validity period, it was expired at \"Tue, 27 Jun 2023 06:10:00 +0000\"",
    );
}

#[test]
fn e2e_invalid_signature() {
    let env = blob("e2e-invalid-signature", "9a8decdf");
    fails(
        &env,
        MEDIA_TYPE_JWS,
        &e2e_target(),
        &ca(&[E2E_CRT]),
        "unable to parse the digital signature",
    );
}

#[test]
fn e2e_valid_multiple_signatures() {
    let layout = "e2e-valid-multiple-signatures";
    ok(
        &blob(layout, "c9af07e0"),
        MEDIA_TYPE_JWS,
        &e2e_target(),
        &ca(&[E2E_CRT]),
    );
    // testcert11: no anchor in the repository, and expired in 2025.
    let other = blob(layout, "a5433363");
    fails(
        &other,
        MEDIA_TYPE_JWS,
        &e2e_target(),
        &ca(&[E2E_CRT]),
        "the signature's certificate chain does not contain any trusted certificate",
    );
    let own = Trust {
        roots: own_root(&other, MEDIA_TYPE_JWS),
        ..Trust::default()
    };
    fails(
        &other,
        MEDIA_TYPE_JWS,
        &e2e_target(),
        &own,
        "verification time is after certificate",
    );
}

#[test]
fn e2e_timestamped_signatures() {
    let t = target(
        "sha256:53b0191218aed9a3c1f7c661736ac40cfc8eb928642348fd843ba3f0483c0c20",
        OCI_MANIFEST,
        582,
    );
    let env = blob("e2e-with-timestamped-signature", "603ff134");
    let own = Trust {
        roots: own_root(&env, MEDIA_TYPE_JWS),
        ..Trust::default()
    };
    // Expiry 2025-01-21T12:39:46Z has passed: strict fails on it first.
    fails(
        &env,
        MEDIA_TYPE_JWS,
        &t,
        &own,
        "digital signature has expired on \"Tue, 21 Jan 2025 12:39:46 +0000\"",
    );

    let t = target(
        "sha256:f1da8cd70d6d851fa2313c8d6618f79508cf1e86877edf1c0bfe49a1b0a6467a",
        OCI_MANIFEST,
        582,
    );
    let env = blob("e2e-with-invalid-timestamped-signature", "8d2e70ff");
    let roots = own_root(&env, MEDIA_TYPE_JWS);
    fails(
        &env,
        MEDIA_TYPE_JWS,
        &t,
        &Trust {
            roots: roots.clone(),
            tsa_roots: certs(TSA_ROOT),
            ..Trust::default()
        },
        "failed to parse timestamp countersignature with error:",
    );
    fails(
        &env,
        MEDIA_TYPE_JWS,
        &t,
        &Trust {
            roots,
            ..Trust::default()
        },
        "verification time is after certificate",
    );
}

#[test]
fn e2e_blob_signatures() {
    for (path, mt) in [
        (
            "notation/test/e2e/testdata/signatures/blob.jws.sig",
            MEDIA_TYPE_JWS,
        ),
        (
            "notation/test/e2e/testdata/signatures/blob.cose.sig",
            MEDIA_TYPE_COSE,
        ),
    ] {
        let env = read(path);
        let roots = own_root(&env, mt);
        // The leaves expired in January 2025; the Microsoft TSA root that
        // would vouch for the signing time is not in the repository.
        fails(
            &env,
            mt,
            &blob_target(),
            &Trust {
                roots: roots.clone(),
                ..Trust::default()
            },
            "verification time is after certificate",
        );
        // Integrity holds: only the time check fails. A different TSA
        // root does not verify the countersignature.
        if mt == MEDIA_TYPE_JWS {
            fails(
                &env,
                mt,
                &blob_target(),
                &Trust {
                    roots,
                    tsa_roots: certs(TSA_ROOT),
                    ..Trust::default()
                },
                "failed to verify the timestamp countersignature with error:",
            );
        }
    }
}

#[test]
fn e2e_malformed() {
    fails(
        &read("notation/test/e2e/testdata/signatures/malformed.jws.sig"),
        MEDIA_TYPE_JWS,
        &blob_target(),
        &ca(&[E2E_CRT]),
        "unable to parse the digital signature",
    );
}

#[test]
fn core_format_conformance_envelopes_have_no_chain() {
    // notation-core-go's format conformance vectors carry no x5c (their key
    // is generated at test time), so they cannot be verified; they must be
    // refused, not accepted.
    let jws = read("notation-core-go/signature/jws/testdata/conformance.json");
    let v: serde_json::Value = serde_json::from_slice(&jws).unwrap();
    let env = serde_json::json!({
        "payload": v["payload"], "protected": v["protected"],
        "header": {}, "signature": "AAAA",
    });
    let e = verify(
        &serde_json::to_vec(&env).unwrap(),
        MEDIA_TYPE_JWS,
        &blob_target(),
        &ca(&[E2E_CRT]),
        NOW,
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("certificate chain is not present"),
        "{e}"
    );
}
