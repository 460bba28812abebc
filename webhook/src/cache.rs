//! The verification cache of the instance: what `ivpol serve`'s host keeps
//! for every instance, kept here for one, with the host's defaults (entries
//! live a minute, at most [`MAX_ENTRIES`]). An entry is keyed by the
//! engine's key and the credentials it was verified with, as the host's
//! are.

use ivpol_engine::engine::cache::{Credentials, VerificationCache};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The most entries kept; a full cache is emptied.
const MAX_ENTRIES: usize = 1000;
/// How long an entry is used (the host's `--cache-ttl` default).
const TTL: Duration = Duration::from_secs(60);

#[derive(Default)]
pub(crate) struct InstanceCache {
    verified: Mutex<HashMap<String, (Instant, Vec<u8>)>>,
    digests: Mutex<HashMap<String, (Instant, String)>>,
}

fn scoped(key: &str, credentials: &Credentials) -> String {
    format!(
        "{key}\n{:?}\n{:?}\n{:?}",
        credentials.registries, credentials.secrets, credentials.tenant
    )
}

fn get<T: Clone>(map: &Mutex<HashMap<String, (Instant, T)>>, key: &str) -> Option<T> {
    let map = map.lock().unwrap_or_else(|p| p.into_inner());
    let (at, value) = map.get(key)?;
    (at.elapsed() < TTL).then(|| value.clone())
}

fn put<T>(map: &Mutex<HashMap<String, (Instant, T)>>, key: String, value: T) {
    let mut map = map.lock().unwrap_or_else(|p| p.into_inner());
    if map.len() >= MAX_ENTRIES {
        map.clear();
    }
    map.insert(key, (Instant::now(), value));
}

impl VerificationCache for InstanceCache {
    fn get(&self, key: &str, credentials: &Credentials) -> Option<Vec<u8>> {
        get(&self.verified, &scoped(key, credentials))
    }

    fn put(&self, key: &str, credentials: &Credentials, value: &[u8]) {
        put(&self.verified, scoped(key, credentials), value.to_vec());
    }

    fn get_digest(&self, image: &str, credentials: &Credentials) -> Option<String> {
        get(&self.digests, &scoped(image, credentials))
    }

    fn put_digest(&self, image: &str, credentials: &Credentials, digest: &str) {
        put(
            &self.digests,
            scoped(image, credentials),
            digest.to_string(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn creds(secret: &str) -> Credentials {
        Credentials {
            registries: vec!["r.test".into()],
            secrets: vec![secret.into()],
            tenant: None,
        }
    }

    #[test]
    fn an_entry_is_found_with_the_credentials_it_was_stored_with_only() {
        let cache = InstanceCache::default();
        cache.put("k", &creds("a"), b"v");
        assert_eq!(cache.get("k", &creds("a")).as_deref(), Some(&b"v"[..]));
        assert_eq!(cache.get("k", &creds("b")), None);
        cache.put_digest("img", &creds("a"), "sha256:1");
        assert_eq!(
            cache.get_digest("img", &creds("a")).as_deref(),
            Some("sha256:1")
        );
        assert_eq!(cache.get_digest("img", &creds("b")), None);
    }

    #[test]
    fn the_cache_stays_within_its_bound() {
        let cache = InstanceCache::default();
        for i in 0..(MAX_ENTRIES + 10) {
            cache.put(&format!("k{i}"), &creds("a"), b"v");
        }
        assert!(cache.verified.lock().expect("lock").len() <= MAX_ENTRIES);
    }
}
