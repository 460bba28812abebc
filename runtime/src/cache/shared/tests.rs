//! The shared cache's own tests: URLs, sealing, keys, and a store that is
//! down or silent; `tests/tests/e2e/shared_cache.rs` runs replicas against a
//! real redis-server.

use super::*;

/// A plain-TCP store on the loopback `port`, each exchange given
/// `timeout_ms`.
fn local_store(port: u16, timeout_ms: u64) -> SharedConfig {
    SharedConfig {
        url: parse_url(&format!("redis://127.0.0.1:{port}")).expect("url"),
        tls: None,
        key: hmac::Key::new(hmac::HMAC_SHA256, &[1; 32]),
        salt: [0; 16],
        timeout: Duration::from_millis(timeout_ms),
    }
}

#[test]
fn urls() {
    let url = |u| parse_url(u).expect(u);
    assert_eq!(
        url("redis://127.0.0.1:6380/2"),
        StoreUrl {
            tls: false,
            host: "127.0.0.1".into(),
            port: 6380,
            user: None,
            password: None,
            db: Some(2),
        }
    );
    let full = url("rediss://ivpol:s3cret@cache.example:6390");
    assert!(full.tls);
    assert_eq!(
        (full.user.as_deref(), full.password.as_deref()),
        (Some("ivpol"), Some("s3cret"))
    );
    assert_eq!(
        (full.host.as_str(), full.port, full.db),
        ("cache.example", 6390, None)
    );
    assert_eq!(url("redis://:pw@[::1]").port, 6379);
    assert_eq!(url("redis://:pw@[::1]").host, "::1");
    assert_eq!(url("redis://:pw@[::1]").password.as_deref(), Some("pw"));
    for bad in [
        "http://x",
        "redis://",
        "redis://h:port",
        "redis://h/db",
        "x",
    ] {
        assert!(parse_url(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_sealed_value_opens_only_under_its_key_and_entry() {
    let key = hmac::Key::new(hmac::HMAC_SHA256, &[7; 32]);
    let other = hmac::Key::new(hmac::HMAC_SHA256, &[8; 32]);
    let (entry, _) = store_keys("policy|digest");
    let sealed = seal(&key, &entry, b"verified");
    assert_eq!(open(&key, &entry, &sealed), Some(&b"verified"[..]));
    // Another replica set's key, or another entry: a forgery.
    assert_eq!(open(&other, &entry, &sealed), None);
    let (elsewhere, _) = store_keys("policy|another digest");
    assert_eq!(open(&key, &elsewhere, &sealed), None);
    // Any byte changed, or cut short.
    for i in 0..sealed.len() {
        let mut forged = sealed.clone();
        forged[i] ^= 1;
        assert_eq!(open(&key, &entry, &forged), None, "byte {i}");
    }
    assert_eq!(
        open(&key, &entry, &sealed[..VERSION.len() + MAC_LEN - 1]),
        None
    );
    assert_eq!(open(&key, &entry, b""), None);
}

#[test]
fn store_keys_are_fixed_length_and_apart() {
    let (entry, claim) = store_keys(&"k".repeat(10_000));
    assert_eq!(entry.len(), "ivpol:v1:entry:".len() + 64);
    assert_eq!(claim.len(), "ivpol:v1:claim:".len() + 64);
    assert_ne!(store_keys("a").0, store_keys("b").0);
}

#[test]
fn short_keys_and_unreadable_files_are_refused() {
    let dir = tempfile::tempdir().expect("dir");
    let short = dir.path().join("short");
    std::fs::write(&short, "too short\n").expect("write");
    let args = |key: &Path| SharedCacheArgs {
        shared_cache: Some("redis://127.0.0.1:1".into()),
        shared_cache_key_file: Some(key.to_path_buf()),
        ..SharedCacheArgs::default()
    };
    let err = args(&short).config().expect_err("short").to_string();
    assert!(err.contains("at least 32 bytes"), "{err}");
    assert!(args(&dir.path().join("missing")).config().is_err());
    let good = dir.path().join("good");
    std::fs::write(&good, format!("{}\n", "k".repeat(32))).expect("write");
    assert!(args(&good).config().expect("config").is_some());
    assert!(SharedCacheArgs::default().config().expect("none").is_none());
}

/// A store that does not answer costs one timeout, then the replica
/// leaves it alone: every lookup is a miss, never an error.
#[tokio::test]
async fn a_store_that_is_down_is_a_miss_and_is_left_alone() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    let cache = Arc::new(SharedCache::new(local_store(port, 200)));
    let soon = Instant::now() + Duration::from_secs(5);
    assert_eq!(cache.get("k", soon).await, Lookup::Missed);
    assert!(cache.down(), "left alone after the failure");
    assert_eq!(cache.get("k", soon).await, Lookup::Missed);
    assert!(cache.down());
}

/// A store that accepts connections and never answers, met by many
/// lookups at once: [`IN_FLIGHT`] of them open a connection, and the
/// rest, whose turn comes after those failed, leave the store alone.
#[tokio::test]
async fn a_silent_store_gets_a_bounded_number_of_connections() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let accepted = tokio::spawn(async move {
        let mut held = Vec::new();
        // Every connection made, until none comes for a while after
        // the lookups gave up.
        while let Ok(Ok((socket, _))) =
            tokio::time::timeout(Duration::from_secs(2), listener.accept()).await
        {
            held.push(socket);
        }
        held.len()
    });
    let cache = Arc::new(SharedCache::new(local_store(port, 300)));
    let soon = Instant::now() + Duration::from_secs(5);
    let lookups: Vec<_> = (0..4 * IN_FLIGHT)
        .map(|i| {
            let cache = cache.clone();
            tokio::spawn(async move { cache.get(&format!("key {i}"), soon).await })
        })
        .collect();
    for lookup in lookups {
        assert_eq!(lookup.await.expect("lookup"), Lookup::Missed);
    }
    let connections = accepted.await.expect("listener");
    assert!(
        (1..=IN_FLIGHT).contains(&connections),
        "{connections} connections for {} lookups",
        4 * IN_FLIGHT
    );
}
