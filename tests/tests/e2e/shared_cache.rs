//! The verification cache shared across replicas (`--shared-cache`), with
//! two `ivpol serve` replicas and a real Valkey/Redis (Debian's
//! `redis-server`): they verify an image once between them, an entry moved
//! or forged in the store is ignored, and a store that died leaves every
//! verdict as it was. Registry calls are counted by each replica
//! (`ivpol_registry_requests_total`).

use ivpol_tests::policy::{key_attestor, verifying_policy};
use ivpol_tests::redis::Redis;
use ivpol_tests::review::create_pod;
use ivpol_tests::sign::{KeyKind, SignOpts, Signer};
use ivpol_tests::verifying::{assert_admitted, assert_denied, Setup};
use ivpol_tests::{post_with, Server};

const MESSAGE: &str = "image is not signed";
const CALLS: &str = "ivpol_registry_requests_total";
const ENTRIES: &str = "ivpol:v1:entry:*";

fn policy(signer: &Signer) -> (String, String) {
    let check =
        "images.containers.map(i, verifyImageSignatures(i, [attestors.cosign])).all(n, n > 0)";
    let attestor = key_attestor("cosign", &signer.public_pem());
    (
        "signed".to_string(),
        verifying_policy("signed", &attestor, "", check, MESSAGE),
    )
}

/// Registry calls `s` made while `f` ran.
fn calls(s: &Server, f: impl FnOnce()) -> f64 {
    let before = s.metric(CALLS);
    f();
    s.metric(CALLS) - before
}

/// `repo:v1` pushed and signed by `signer`; its digest reference.
fn signed(setup: &Setup, signer: &Signer, repo: &str) -> String {
    let (_, digest) = setup.image(repo);
    signer.sign_image(&setup.pusher(), repo, &digest, &SignOpts::default());
    format!("{}/{repo}@{digest}", setup.reg.addr)
}

/// A replica sharing `store`, with `extra` flags.
fn replica(setup: &Setup, signer: &Signer, store: &Redis, extra: &[&str]) -> Server {
    let key = store.secret_file("mac.key", &"a shared cache key of 32+ bytes!".repeat(2));
    let key = key.to_string_lossy().into_owned();
    let url = store.url();
    let mut flags = vec!["--shared-cache", &url, "--shared-cache-key-file", &key];
    flags.extend(extra);
    setup.serve_with(&[policy(signer)], &flags)
}

#[test]
fn two_replicas_verify_an_image_once_between_them() {
    let setup = Setup::new();
    let signer = Signer::keyed(KeyKind::P256);
    let store = Redis::start_with(Some("s3cret password"), false);
    let password = store.secret_file("password", "s3cret password");
    let password = password.to_string_lossy().into_owned();
    let with_auth = ["--shared-cache-password-file", password.as_str()];
    let (a, b) = (
        replica(&setup, &signer, &store, &with_auth),
        replica(&setup, &signer, &store, &with_auth),
    );
    let first = signed(&setup, &signer, "first");
    let cold = calls(&a, || assert_admitted(&a, "signed", &first));
    assert!(cold > 0.0, "the first replica verifies");
    let per_image = store.keys(ENTRIES).len();
    assert!(per_image >= 1, "and shares its success");
    let shared = calls(&b, || assert_admitted(&b, "signed", &first));
    assert_eq!(shared, 0.0, "the second replica reuses it: {}", b.log());
    assert!(b.metric("ivpol_shared_cache_hits_total") >= 1.0);

    // Both at once: one verifies, the other waits for its result.
    let second = signed(&setup, &signer, "second");
    let (before_a, before_b) = (a.metric(CALLS), b.metric(CALLS));
    let review = create_pod(&[&second]).to_string();
    let urls = [&a, &b].map(|s| format!("{}/ivpol/validate/signed", s.base));
    let review = &review;
    let answers = std::thread::scope(|s| {
        let posts = urls.map(|url| s.spawn(move || post_with(&ureq::agent(), &url, review)));
        posts.map(|p| p.join().expect("a request"))
    });
    for (status, body) in answers {
        assert_eq!(
            (status, &body["response"]["allowed"]),
            (200, &true.into()),
            "{body}"
        );
    }
    let both = a.metric(CALLS) - before_a + b.metric(CALLS) - before_b;
    assert_eq!(both, cold, "one verification between the two replicas");

    // Nothing negative is shared: an unsigned image costs each replica.
    let (unsigned, _) = setup.image("unsigned");
    for s in [&a, &b] {
        let n = calls(s, || assert_denied(s, "signed", &unsigned, MESSAGE));
        assert!(n > 0.0, "a failure is verified by every replica");
    }
    assert_eq!(
        store.keys(ENTRIES).len(),
        2 * per_image,
        "only the two successes"
    );
}

/// The store can be written by others: an entry moved to another key, or
/// changed, fails its MAC and the replica verifies on its own.
#[test]
fn an_entry_moved_or_changed_in_the_store_is_ignored() {
    let setup = Setup::new();
    let signer = Signer::keyed(KeyKind::P256);
    let store = Redis::start();
    let (a, b) = (
        replica(&setup, &signer, &store, &[]),
        replica(&setup, &signer, &store, &[]),
    );
    let (one, two) = (
        signed(&setup, &signer, "one"),
        signed(&setup, &signer, "two"),
    );
    assert_admitted(&a, "signed", &one);
    assert_admitted(&a, "signed", &two);
    let keys = store.keys(ENTRIES);
    assert_eq!(keys.len(), 2, "one entry per image");
    // Swap the two entries: each is a valid value, under the wrong key.
    store.cli(&["RENAME", &keys[0], "swap"]);
    store.cli(&["RENAME", &keys[1], &keys[0]]);
    store.cli(&["RENAME", "swap", &keys[1]]);
    for image in [&one, &two] {
        let n = calls(&b, || assert_admitted(&b, "signed", image));
        assert!(
            n > 0.0,
            "{image}: verified again, not taken from a moved entry"
        );
    }
    assert_eq!(b.metric("ivpol_shared_cache_rejected_total"), 2.0);
    assert_eq!(b.metric("ivpol_shared_cache_hits_total"), 0.0);

    // B's own successes replaced them; a byte changed in one is a forgery.
    let keys = store.keys(ENTRIES);
    store.cli(&["SETRANGE", &keys[0], "40", "X"]);
    let c = replica(&setup, &signer, &store, &[]);
    for image in [&one, &two] {
        assert_admitted(&c, "signed", image);
    }
    assert_eq!(c.metric("ivpol_shared_cache_rejected_total"), 1.0);
    assert_eq!(c.metric("ivpol_shared_cache_hits_total"), 1.0);
}

/// A store that died costs a replica its timeout once, then nothing: every
/// verdict is the one it would give alone.
#[test]
fn a_store_that_died_leaves_every_verdict_as_it_was() {
    let setup = Setup::new();
    let signer = Signer::keyed(KeyKind::P256);
    let mut store = Redis::start();
    let (a, b) = (
        replica(&setup, &signer, &store, &[]),
        replica(&setup, &signer, &store, &[]),
    );
    let image = signed(&setup, &signer, "app");
    assert_admitted(&a, "signed", &image);
    store.kill();
    let n = calls(&b, || assert_admitted(&b, "signed", &image));
    assert!(n > 0.0, "verified locally");
    let (unsigned, _) = setup.image("unsigned");
    assert_denied(&b, "signed", &unsigned, MESSAGE);
    assert_denied(&a, "signed", &unsigned, MESSAGE);
    assert!(b.metric("ivpol_shared_cache_errors_total") >= 1.0);
    // What each replica verified is still in its own cache.
    assert_eq!(calls(&b, || assert_admitted(&b, "signed", &image)), 0.0);
}

/// `rediss://`: the store over TLS, its CA given with --shared-cache-ca.
#[test]
fn the_store_over_tls() {
    let setup = Setup::new();
    let signer = Signer::keyed(KeyKind::P256);
    let store = Redis::start_with(None, true);
    let ca = store.ca.clone().expect("a TLS store has a CA");
    let ca = ca.to_string_lossy().into_owned();
    let with_ca = ["--shared-cache-ca", ca.as_str()];
    let (a, b) = (
        replica(&setup, &signer, &store, &with_ca),
        replica(&setup, &signer, &store, &with_ca),
    );
    let image = signed(&setup, &signer, "app");
    assert_admitted(&a, "signed", &image);
    assert_eq!(
        calls(&b, || assert_admitted(&b, "signed", &image)),
        0.0,
        "{}",
        b.log()
    );
    // Without the CA, the store's certificate is not trusted: local only.
    let c = replica(&setup, &signer, &store, &[]);
    assert!(calls(&c, || assert_admitted(&c, "signed", &image)) > 0.0);
    assert!(c.metric("ivpol_shared_cache_errors_total") >= 1.0);
}
