//! The TUF client against repositories generated here (`fixture`), each
//! negative a single change to the good repository; and Sigstore's real
//! roots, whose signatures pin the canonical JSON encoding.

use super::fixture::*;
use super::metadata::canonical_json;
use super::*;
use ivpol_verify::encoding::hex;
use ivpol_verify::VerifyError;
use serde_json::{json, Value};

const TARGET: &[u8] =
    br#"{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1"}"#;

fn assert_contains(message: &str, part: &str) {
    assert!(message.contains(part), "{message:?} lacks {part:?}");
}

#[test]
fn a_good_repository_gives_its_target() {
    let f = Fixture::new(TARGET);
    assert_eq!(f.run().unwrap().as_bytes(), TARGET);
    // The trusted root may be the newest one.
    let latest = f.files["2.root.json"].clone();
    assert_eq!(
        trusted_root(&latest, &f.fetch(), NOW).unwrap().as_bytes(),
        TARGET
    );
}

#[test]
fn canonical_json_is_olpc() {
    let v: Value =
        serde_json::from_str(r#"{ "b": [1, -2, true, null], "a": "q\"\\\u00e9\n", "A": {} }"#)
            .unwrap();
    let mut out = Vec::new();
    canonical_json(&v, &mut out).unwrap();
    assert_eq!(
        out,
        "{\"A\":{},\"a\":\"q\\\"\\\\\u{e9}\n\",\"b\":[1,-2,true,null]}".as_bytes()
    );
    assert_eq!(
        canonical_json(&json!({"x": 1.5}), &mut Vec::new()),
        Err(serde_json::Number::from_f64(1.5).unwrap())
    );
}

/// Sigstore's production and staging roots verify under their own keys:
/// real ECDSA signatures over securesystemslib's canonical JSON.
#[test]
fn sigstores_roots_are_self_signed() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../conformance/sigstore/");
    for name in ["_tuf-root.sigstore.dev.json", "_tuf-root.sigstage.dev.json"] {
        let bytes = std::fs::read(format!("{dir}{name}")).unwrap();
        let env = Envelope::parse(name, &bytes).unwrap();
        let root = Root::from_envelope(&env).unwrap();
        root.verify("root", &env).unwrap();
        assert!(root.consistent_snapshot);
        let text = String::from_utf8(bytes).unwrap();
        let tampered = text.replacen("\"expires\": \"20", "\"expires\": \"21", 1);
        assert_ne!(tampered, text);
        let env = Envelope::parse(name, tampered.as_bytes()).unwrap();
        let e = root.verify("root", &env).unwrap_err();
        assert_contains(&e.to_string(), "signature does not verify");
    }
}

#[test]
fn an_expired_timestamp_is_rejected() {
    let mut f = Fixture::new(TARGET);
    f.timestamp["expires"] = json!(PAST);
    f.publish();
    assert_contains(
        &f.fails(),
        "timestamp.json (version 7) expired at 2023-01-01T00:00:00Z",
    );
}

#[test]
fn expiry_is_checked_for_the_final_root_snapshot_and_targets_only() {
    let mut f = Fixture::new(TARGET);
    // An expired intermediate root does not matter.
    f.roots[0]["expires"] = json!(PAST);
    f.publish();
    f.run().unwrap();
    f.roots[1]["expires"] = json!(PAST);
    f.publish();
    assert_contains(&f.fails(), "root.json (version 2) expired");
    let mut f = Fixture::new(TARGET);
    f.snapshot["expires"] = json!(PAST);
    f.publish();
    assert_contains(&f.fails(), "5.snapshot.json (version 5) expired");
    let mut f = Fixture::new(TARGET);
    f.targets["expires"] = json!("2023-11-14T22:13:20Z");
    f.publish();
    assert_contains(&f.fails(), "3.targets.json (version 3) expired");
}

#[test]
fn signatures_under_the_threshold_are_rejected() {
    let mut f = Fixture::new(TARGET);
    f.targets_signers = vec![T1];
    f.publish();
    assert_contains(
        &f.fails(),
        "3.targets.json: 1 valid signature(s) from the targets role's keys, 2 required",
    );
    // The same key twice counts once.
    f.targets_signers = vec![T1, T1];
    f.publish();
    assert_contains(
        &f.fails(),
        "1 valid signature(s) from the targets role's keys",
    );
    // A key of another role does not count.
    f.targets_signers = vec![T1, TS];
    f.publish();
    assert_contains(
        &f.fails(),
        "1 valid signature(s) from the targets role's keys",
    );

    let mut f = Fixture::new(TARGET);
    let mut ts: Value = serde_json::from_slice(&f.files["timestamp.json"]).unwrap();
    let sig = ts["signatures"][0]["sig"].as_str().unwrap().to_string();
    let flipped = format!(
        "{}{}",
        &sig[..20],
        if &sig[20..21] == "0" { "1" } else { "0" }
    );
    ts["signatures"][0]["sig"] = json!(format!("{flipped}{}", &sig[21..]));
    f.files
        .insert("timestamp.json".into(), serde_json::to_vec(&ts).unwrap());
    let e = f.fails();
    assert_contains(
        &e,
        "timestamp.json: 0 valid signature(s) from the timestamp role's keys, 1 required",
    );
    assert_contains(&e, "signature does not verify");

    // Changing what was signed breaks the signature too.
    let mut f = Fixture::new(TARGET);
    let text = String::from_utf8(f.files["timestamp.json"].clone()).unwrap();
    let text = text.replacen("\"version\": 7", "\"version\": 8", 1);
    f.files.insert("timestamp.json".into(), text.into_bytes());
    assert_contains(&f.fails(), "timestamp.json: 0 valid signature(s)");
}

#[test]
fn a_wrong_target_hash_is_rejected() {
    let mut f = Fixture::new(TARGET);
    let path = format!("targets/{}.trusted_root.json", hex(&Sha256::digest(TARGET)));
    let mut tampered = TARGET.to_vec();
    tampered[3] ^= 1;
    f.files.insert(path.clone(), tampered);
    let e = f.fails();
    assert_contains(&e, &format!("{path} has sha256 "));
    assert_contains(&e, "but targets.json gives");
    // A longer file is refused for its length.
    f.files.insert(path.clone(), [TARGET, b" "].concat());
    assert!(
        matches!(f.run(), Err(VerifyError::Foreign(ref e))
            if matches!(e.downcast_ref(), Some(TufError::TooLarge { file, .. }) if *file == path)),
        "{:?}",
        f.run()
    );
}

#[test]
fn a_tampered_snapshot_fails_the_timestamps_hash() {
    let mut f = Fixture::new(TARGET);
    let mut snapshot = f.files["5.snapshot.json"].clone();
    let last = snapshot.len() - 2;
    snapshot[last] = b' ';
    f.files.insert("5.snapshot.json".into(), snapshot);
    assert_contains(&f.fails(), "5.snapshot.json has sha256");
}

#[test]
fn a_rotation_signed_only_by_the_new_keys_is_rejected() {
    let mut f = Fixture::new(TARGET);
    f.root_signers[1] = vec![B, C];
    f.publish();
    let e = f.fails();
    assert_contains(
        &e,
        "2.root.json: 1 valid signature(s) from the root role's keys, 2 required",
    );
    assert_contains(&e, "(old root, version 1)");
    // …and one signed only by the old keys.
    f.root_signers[1] = vec![A, B];
    f.publish();
    assert_contains(&f.fails(), "(new root)");
}

#[test]
fn the_new_roots_keys_sign_the_rest() {
    let mut f = Fixture::new(TARGET);
    // Root v2 hands the timestamp role to key C.
    let c = f.keys[C].id.clone();
    f.roots[1]["roles"]["timestamp"]["keyids"] = json!([c]);
    f.publish();
    assert_contains(
        &f.fails(),
        "timestamp.json: 0 valid signature(s) from the timestamp role's keys",
    );
    f.timestamp_signers = vec![C];
    f.publish();
    f.run().unwrap();
}

#[test]
fn version_rollbacks_are_rejected() {
    let mut f = Fixture::new(TARGET);
    f.roots[1]["version"] = json!(1);
    f.publish();
    assert_contains(&f.fails(), "2.root.json has version 1, expected 2");

    // The timestamp names snapshot 6; the mirror serves snapshot 5 there.
    let mut f = Fixture::new(TARGET);
    f.timestamp["meta"]["snapshot.json"]["version"] = json!(6);
    f.publish();
    assert_contains(
        &f.fails(),
        "6.snapshot.json has version 5, but timestamp.json names version 6",
    );

    let mut f = Fixture::new(TARGET);
    f.snapshot["meta"]["targets.json"]["version"] = json!(4);
    f.publish();
    assert_contains(
        &f.fails(),
        "4.targets.json has version 3, but snapshot.json names version 4",
    );
}

#[test]
fn a_missing_target_is_rejected() {
    let mut f = Fixture::new(TARGET);
    f.targets["targets"] =
        json!({"other.json": {"length": 1, "hashes": {"sha256": hex(&Sha256::digest(b"x"))}}});
    f.publish();
    assert_contains(&f.fails(), "targets.json has no target trusted_root.json");
    f.targets["delegations"] = json!({"keys": {}, "roles": [{"name": "d", "keyids": [], "threshold": 1, "paths": ["*"], "terminating": true}]});
    f.publish();
    assert_contains(&f.fails(), "does not follow delegated targets roles");

    // Listed but not on the mirror.
    let mut f = Fixture::new(TARGET);
    f.files.retain(|k, _| !k.starts_with("targets/"));
    assert_contains(&f.fails(), ".trusted_root.json not found on the mirror");
}

#[test]
fn missing_metadata_is_rejected() {
    for (file, message) in [
        ("timestamp.json", "timestamp.json not found on the mirror"),
        ("5.snapshot.json", "5.snapshot.json not found on the mirror"),
        ("3.targets.json", "3.targets.json not found on the mirror"),
    ] {
        let mut f = Fixture::new(TARGET);
        f.files.remove(file);
        assert_contains(&f.fails(), message);
    }
}

#[test]
fn without_consistent_snapshots_files_are_unversioned() {
    let mut f = Fixture::new(TARGET);
    f.roots[1]["consistent_snapshot"] = json!(false);
    f.publish();
    assert!(
        f.files.contains_key("snapshot.json") && f.files.contains_key("targets/trusted_root.json")
    );
    assert_eq!(f.run().unwrap().as_bytes(), TARGET);
}

#[test]
fn too_many_rotations_are_rejected() {
    let mut f = Fixture::new(TARGET);
    for v in 3..=(MAX_ROOT_ROTATIONS + 1) {
        let root = f.root(v, &[B, C]);
        f.roots.push(root);
        f.root_signers.push(vec![B, C]);
    }
    f.publish();
    f.run().unwrap();
    let root = f.root(MAX_ROOT_ROTATIONS + 2, &[B, C]);
    f.roots.push(root);
    f.root_signers.push(vec![B, C]);
    f.publish();
    assert_contains(
        &f.fails(),
        "more than 32 root versions newer than the trusted one",
    );
}

#[test]
fn malformed_roots_are_rejected() {
    let f = Fixture::new(TARGET);
    let e = trusted_root(b"{\"signed\": 1}", &f.fetch(), NOW).unwrap_err();
    assert_contains(&e.to_string(), "the trusted root.json is not TUF metadata");
    let e = trusted_root(&f.files["timestamp.json"], &f.fetch(), NOW).unwrap_err();
    assert_contains(&e.to_string(), "_type is \"timestamp\", expected \"root\"");
    // The trusted root must be signed by its own root role.
    let mut f = Fixture::new(TARGET);
    f.root_signers[0] = vec![A];
    f.publish();
    assert_contains(&f.fails(), "the trusted root.json: 1 valid signature(s)");
    // A zero threshold never passes.
    let mut f = Fixture::new(TARGET);
    f.roots[1]["roles"]["targets"]["threshold"] = json!(0);
    f.publish();
    assert_contains(
        &f.fails(),
        "the targets role's threshold must be at least 1",
    );
    let mut f = Fixture::new(TARGET);
    f.roots[1]["spec_version"] = json!("2.0");
    f.publish();
    assert_contains(&f.fails(), "unsupported spec_version \"2.0\"");
    let big = vec![b' '; MAX_METADATA + 1];
    let e = trusted_root(&big, &f.fetch(), NOW).unwrap_err();
    assert_contains(&e.to_string(), "more than the 1048576 allowed");
}
