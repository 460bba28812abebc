//! The verification cache the component reaches through the WIT
//! `verification-cache` import, shared by every instance.
//!
//! The component decides what goes in and under which key (see
//! `engine/src/engine/cache.rs`): only full successes, keyed by policy
//! content, function, names and the resolved digest. The host bounds it
//! (size, TTL), keeps a separate short-lived tag → digest map, and makes
//! identical verifications that run at the same time run once: a miss
//! claims the key, and other instances asking for it wait until the
//! claimant stores it or its call ends (single flight).
//!
//! With `--shared-cache`, a store shared by the replicas is the second
//! level behind it ([`shared`]): a local miss looks there before verifying,
//! and a success is stored there too.

mod resp;
pub mod shared;

use crate::metrics::metrics;
use moka::notification::RemovalCause;
use shared::{Lookup, SharedCache, SharedConfig};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// The cache's limits, from `serve`'s flags.
#[derive(Clone, Debug)]
pub struct CacheConfig {
    pub enabled: bool,
    /// Most verification entries kept.
    pub size: u64,
    pub ttl: Duration,
    /// How long a tag's digest is reused; zero turns that off.
    pub digest_ttl: Duration,
    /// The store the replicas share successes through, if any.
    pub shared: Option<SharedConfig>,
}

impl CacheConfig {
    /// No caching at all (`--no-cache`, and one-shot commands).
    pub fn disabled() -> CacheConfig {
        CacheConfig {
            enabled: false,
            size: 0,
            ttl: Duration::ZERO,
            digest_ttl: Duration::ZERO,
            shared: None,
        }
    }
}

/// Most tag → digest entries kept.
const MAX_DIGESTS: u64 = 10_000;
/// Most bytes the verification entries (keys and values) take together:
/// an entry can hold a verified attestation of up to 10 MiB, so a count
/// alone would let `--cache-size` large ones take gigabytes.
const MAX_ENTRY_BYTES: u64 = 64 << 20;
/// Most bytes the tag → digest entries take together.
const MAX_DIGEST_BYTES: u64 = 4 << 20;

/// A weigher that bounds a cache by `max_bytes` and by `max_entries`
/// together: each entry weighs its bytes, and at least `max_bytes /
/// max_entries`, so that no more than `max_entries` fit.
fn weigher(max_bytes: u64, max_entries: u64) -> impl Fn(usize) -> u32 {
    let floor = max_bytes / max_entries.max(1);
    move |bytes| u32::try_from((bytes as u64).max(floor)).unwrap_or(u32::MAX)
}

pub struct VerificationCache {
    entries: Option<moka::sync::Cache<String, Arc<[u8]>>>,
    digests: Option<moka::sync::Cache<String, String>>,
    /// Keys being verified, each with a channel whose sender is dropped
    /// when its claim ends (waking every waiter).
    inflight: Mutex<HashMap<String, watch::Sender<()>>>,
    /// The second level, with the TTL its entries get.
    shared: Option<(Arc<SharedCache>, Duration)>,
    /// The keys whose claim among the replicas this one holds.
    shared_claims: Mutex<HashSet<String>>,
}

impl VerificationCache {
    pub fn new(config: &CacheConfig) -> Arc<VerificationCache> {
        let entries = (config.enabled && config.size > 0).then(|| {
            let weight = weigher(MAX_ENTRY_BYTES, config.size);
            moka::sync::Cache::builder()
                .max_capacity(MAX_ENTRY_BYTES)
                .weigher(move |k: &String, v: &Arc<[u8]>| weight(k.len() + v.len()))
                .time_to_live(config.ttl)
                .eviction_listener(|_, _, cause| {
                    if matches!(cause, RemovalCause::Size | RemovalCause::Expired) {
                        metrics().cache_evictions.inc();
                    }
                })
                .build()
        });
        let digests = (config.enabled && !config.digest_ttl.is_zero()).then(|| {
            let weight = weigher(MAX_DIGEST_BYTES, MAX_DIGESTS);
            moka::sync::Cache::builder()
                .max_capacity(MAX_DIGEST_BYTES)
                .weigher(move |k: &String, v: &String| weight(k.len() + v.len()))
                .time_to_live(config.digest_ttl)
                .build()
        });
        let shared = (config.shared.clone())
            .filter(|_| entries.is_some())
            .filter(|c| {
                let shared = c.share_salt();
                if !shared {
                    tracing::warn!("the shared cache is off: this process keyed entries already");
                }
                shared
            })
            .map(|c| (Arc::new(SharedCache::new(c)), config.ttl));
        Arc::new(VerificationCache {
            entries,
            digests,
            inflight: Mutex::new(HashMap::new()),
            shared,
            shared_claims: Mutex::new(HashSet::new()),
        })
    }

    /// The entry for `key`; on a miss `claims` holds the key until it is
    /// stored or released. Waits for another claimant until `deadline`,
    /// after which the caller verifies on its own (without a claim).
    pub(crate) async fn get(
        &self,
        key: &str,
        claims: &mut Claims,
        deadline: Instant,
    ) -> Option<Vec<u8>> {
        let entries = self.entries.as_ref()?;
        loop {
            if let Some(v) = entries.get(key) {
                metrics().cache_hits.inc();
                return Some(v.to_vec());
            }
            // Our own claim (the same key asked twice in one request).
            if claims.keys.iter().any(|k| k == key) {
                return None;
            }
            let mut waiter = {
                let mut inflight = self.inflight.lock().unwrap_or_else(|p| p.into_inner());
                match inflight.get(key) {
                    Some(tx) => tx.subscribe(),
                    None => {
                        inflight.insert(key.to_string(), watch::channel(()).0);
                        claims.keys.push(key.to_string());
                        break;
                    }
                }
            };
            metrics().cache_waits.inc();
            let woken = tokio::time::timeout_at(deadline.into(), waiter.changed()).await;
            if woken.is_err() {
                metrics().cache_misses.inc();
                return None;
            }
        }
        // This instance claimed the key: the replicas' store may have it.
        if let Some(value) = self.get_shared(key, claims, deadline).await {
            return Some(value);
        }
        metrics().cache_misses.inc();
        None
    }

    /// The shared store's value of `key`, which the caller has claimed
    /// locally: a hit is kept locally too, and ends the claim.
    async fn get_shared(
        &self,
        key: &str,
        claims: &mut Claims,
        deadline: Instant,
    ) -> Option<Vec<u8>> {
        let (shared, _) = self.shared.as_ref()?;
        match shared.get(key, deadline).await {
            Lookup::Hit(value) => {
                if let Some(entries) = &self.entries {
                    entries.insert(key.to_string(), Arc::from(&value[..]));
                }
                self.end_claim(key, claims);
                metrics().cache_hits.inc();
                Some(value)
            }
            Lookup::Claimed => {
                let mut held = self.shared_claims.lock().unwrap_or_else(|p| p.into_inner());
                held.insert(key.to_string());
                None
            }
            Lookup::Missed => None,
        }
    }

    /// Stores a full success and ends the caller's claim on `key`.
    pub(crate) fn put(&self, key: &str, value: &[u8], claims: &mut Claims) {
        if let Some(entries) = &self.entries {
            entries.insert(key.to_string(), Arc::from(value));
            if let Some((shared, ttl)) = &self.shared {
                shared.put(key, value, *ttl, self.take_shared_claim(key));
            }
        }
        self.end_claim(key, claims);
    }

    /// Ends the caller's claim on `key`, if it holds one.
    fn end_claim(&self, key: &str, claims: &mut Claims) {
        // Only a claimant releases: a caller that stopped waiting (and so
        // holds no claim) must not end another instance's claim.
        if let Some(i) = claims.keys.iter().position(|k| k == key) {
            claims.keys.swap_remove(i);
            self.release(key);
        }
    }

    pub(crate) fn get_digest(&self, image: &str) -> Option<String> {
        let hit = self.digests.as_ref()?.get(image);
        match hit {
            Some(_) => metrics().digest_hits.inc(),
            None => metrics().digest_misses.inc(),
        };
        hit
    }

    pub(crate) fn put_digest(&self, image: &str, digest: &str) {
        if let Some(d) = &self.digests {
            d.insert(image.to_string(), digest.to_string());
        }
    }

    fn release(&self, key: &str) {
        // Dropping the sender wakes the waiters, which look again.
        let mut inflight = self.inflight.lock().unwrap_or_else(|p| p.into_inner());
        inflight.remove(key);
        drop(inflight);
        // A claim among the replicas that no success ended: the others stop
        // waiting for this one.
        if let Some((shared, _)) = &self.shared {
            if self.take_shared_claim(key) {
                shared.release_claim(key);
            }
        }
    }

    /// Whether this replica held the replicas' claim on `key` (which it
    /// now gives up).
    fn take_shared_claim(&self, key: &str) -> bool {
        let mut held = self.shared_claims.lock().unwrap_or_else(|p| p.into_inner());
        held.remove(key)
    }

    /// Entries held now (for tests and the bench).
    #[cfg(test)]
    pub(crate) fn len(&self) -> u64 {
        self.entries.as_ref().map_or(0, |e| {
            e.run_pending_tasks();
            e.entry_count()
        })
    }
}

/// The keys one instance has claimed during its current call. Released
/// when the call ends, whether it stored them or not, and when the
/// instance is dropped after a trap.
pub(crate) struct Claims {
    cache: Arc<VerificationCache>,
    keys: Vec<String>,
}

impl Claims {
    pub(crate) fn new(cache: Arc<VerificationCache>) -> Claims {
        Claims {
            cache,
            keys: Vec::new(),
        }
    }

    pub(crate) fn cache(&self) -> Arc<VerificationCache> {
        self.cache.clone()
    }

    pub(crate) fn release_all(&mut self) {
        for key in self.keys.drain(..) {
            self.cache.release(&key);
        }
    }
}

impl Drop for Claims {
    fn drop(&mut self) {
        self.release_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> CacheConfig {
        CacheConfig {
            enabled: true,
            size: 2,
            ttl: Duration::from_secs(60),
            digest_ttl: Duration::from_secs(60),
            shared: None,
        }
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(5)
    }

    #[tokio::test]
    async fn a_miss_claims_and_a_put_is_a_hit() {
        let cache = VerificationCache::new(&config());
        let mut claims = Claims::new(cache.clone());
        assert_eq!(cache.get("k", &mut claims, soon()).await, None);
        // Asking again in the same call does not wait on itself.
        assert_eq!(cache.get("k", &mut claims, soon()).await, None);
        cache.put("k", b"payload", &mut claims);
        assert_eq!(
            cache.get("k", &mut claims, soon()).await.as_deref(),
            Some(&b"payload"[..])
        );
    }

    #[tokio::test]
    async fn waiters_get_the_claimants_result() {
        let cache = VerificationCache::new(&config());
        let mut leader = Claims::new(cache.clone());
        assert_eq!(cache.get("k", &mut leader, soon()).await, None);
        let waiter = {
            let cache = cache.clone();
            tokio::spawn(async move {
                let mut claims = Claims::new(cache.clone());
                cache.get("k", &mut claims, soon()).await
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiter.is_finished(), "the waiter waits for the claimant");
        cache.put("k", b"v", &mut leader);
        assert_eq!(waiter.await.expect("join").as_deref(), Some(&b"v"[..]));
    }

    #[tokio::test]
    async fn a_failed_claimant_hands_the_claim_on() {
        let cache = VerificationCache::new(&config());
        let mut leader = Claims::new(cache.clone());
        assert_eq!(cache.get("k", &mut leader, soon()).await, None);
        let waiter = {
            let cache = cache.clone();
            tokio::spawn(async move {
                let mut claims = Claims::new(cache.clone());
                let got = cache.get("k", &mut claims, soon()).await;
                (got, claims.keys.clone())
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(leader); // the call ended without a success
        let (got, keys) = waiter.await.expect("join");
        assert_eq!(got, None);
        assert_eq!(keys, vec!["k".to_string()], "the waiter now verifies");
    }

    #[tokio::test]
    async fn a_waiter_stops_waiting_at_its_deadline() {
        let cache = VerificationCache::new(&config());
        let mut leader = Claims::new(cache.clone());
        assert_eq!(cache.get("k", &mut leader, soon()).await, None);
        let mut claims = Claims::new(cache.clone());
        let deadline = Instant::now() + Duration::from_millis(20);
        assert_eq!(cache.get("k", &mut claims, deadline).await, None);
        assert!(claims.keys.is_empty(), "no claim past the deadline");
        // Its success is stored, but the leader's claim stays the leader's.
        cache.put("k", b"v", &mut claims);
        assert!(cache.inflight.lock().expect("lock").contains_key("k"));
        cache.put("k", b"v", &mut leader);
        assert!(!cache.inflight.lock().expect("lock").contains_key("k"));
    }

    /// Large entries are bounded by their bytes, not only their count: a
    /// few 10 MiB attestations fill it, small entries by their number.
    #[tokio::test]
    async fn the_cache_is_bounded_in_bytes_too() {
        let cache = VerificationCache::new(&CacheConfig {
            size: 1000,
            ..config()
        });
        let mut claims = Claims::new(cache.clone());
        let big = vec![0u8; 10 << 20];
        for i in 0..20 {
            let k = format!("big-{i}");
            cache.get(&k, &mut claims, soon()).await;
            cache.put(&k, &big, &mut claims);
        }
        let held = cache.len();
        assert!(
            held <= MAX_ENTRY_BYTES / (10 << 20),
            "{held} entries of 10 MiB held"
        );
        assert!(held > 0);
    }

    #[tokio::test]
    async fn the_cache_is_bounded_and_can_be_off() {
        let cache = VerificationCache::new(&config());
        let mut claims = Claims::new(cache.clone());
        for k in ["a", "b", "c", "d"] {
            cache.get(k, &mut claims, soon()).await;
            cache.put(k, b"", &mut claims);
        }
        assert!(cache.len() <= 2, "{} entries", cache.len());
        let off = VerificationCache::new(&CacheConfig::disabled());
        let mut claims = Claims::new(off.clone());
        off.put("k", b"", &mut claims);
        assert_eq!(off.get("k", &mut claims, soon()).await, None);
        off.put_digest("i", "sha256:1");
        assert_eq!(off.get_digest("i"), None);
    }
}
