//! A credential kept until shortly before it expires, and refreshed in the
//! background once it is due: requests keep the old one meanwhile, so a
//! token that is about to expire never costs a request its latency.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// A credential is used until this long before it expires.
pub(super) const EXPIRY_MARGIN: Duration = Duration::from_secs(5 * 60);
/// And refreshed from this long before that.
const REFRESH_AHEAD: Duration = Duration::from_secs(10 * 60);
/// No credential is kept longer than this, whatever it says.
const MAX_KEEP: Duration = Duration::from_secs(12 * 3600);
/// The most credentials kept (one per region or registry: few).
const MAX_ENTRIES: u64 = 256;

/// A fetched value and when it stops being valid.
#[derive(Clone)]
pub(super) struct Expiring<V> {
    pub value: V,
    pub expires: SystemTime,
}

#[derive(Clone)]
struct Entry<V> {
    value: V,
    refresh_at: Instant,
}

/// Values by key, each until [`EXPIRY_MARGIN`] before its expiry.
pub(super) struct Kept<V: Clone + Send + Sync + 'static> {
    values: crate::net::exec::Kept<Entry<V>>,
    refreshing: Arc<Mutex<std::collections::HashSet<String>>>,
}

impl<V: Clone + Send + Sync + 'static> Default for Kept<V> {
    fn default() -> Kept<V> {
        Kept {
            values: crate::net::exec::Kept::new(MAX_ENTRIES),
            refreshing: Arc::default(),
        }
    }
}

impl<V: Clone + Send + Sync + 'static> Kept<V> {
    /// The value for `key`: kept, else fetched now. A kept value due for
    /// refresh is returned and `fetch` runs again in the background (one
    /// refresh per key at a time).
    pub(super) async fn get<F, Fut>(&self, key: &str, fetch: F) -> Result<V, String>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Expiring<V>, String>> + Send + 'static,
    {
        if let Some(entry) = self.values.get(key) {
            if Instant::now() >= entry.refresh_at && self.claim(key) {
                self.refresh(key.to_string(), fetch());
            }
            return Ok(entry.value);
        }
        let fetched = fetch().await?;
        let value = fetched.value.clone();
        self.keep(key.to_string(), fetched);
        Ok(value)
    }

    fn claim(&self, key: &str) -> bool {
        let mut refreshing = self.refreshing.lock().unwrap_or_else(|p| p.into_inner());
        refreshing.insert(key.to_string())
    }

    fn refresh<Fut>(&self, key: String, fetch: Fut)
    where
        Fut: Future<Output = Result<Expiring<V>, String>> + Send + 'static,
    {
        let values = self.values.clone();
        let refreshing = self.refreshing.clone();
        tokio::spawn(async move {
            match fetch.await {
                Ok(fetched) => keep(&values, key.clone(), fetched),
                Err(why) => tracing::warn!(%key, "refreshing a cloud credential: {why}"),
            }
            let mut refreshing = refreshing.lock().unwrap_or_else(|p| p.into_inner());
            refreshing.remove(&key);
        });
    }

    fn keep(&self, key: String, fetched: Expiring<V>) {
        keep(&self.values, key, fetched)
    }
}

fn keep<V: Clone + Send + Sync + 'static>(
    values: &crate::net::exec::Kept<Entry<V>>,
    key: String,
    fetched: Expiring<V>,
) {
    let left = fetched
        .expires
        .duration_since(SystemTime::now())
        .unwrap_or_default()
        .saturating_sub(EXPIRY_MARGIN)
        .min(MAX_KEEP);
    let entry = Entry {
        value: fetched.value,
        refresh_at: Instant::now() + left.saturating_sub(REFRESH_AHEAD),
    };
    values.put(key, entry, left);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn expiring(n: usize, in_: Duration) -> Result<Expiring<usize>, String> {
        Ok(Expiring {
            value: n,
            expires: SystemTime::now() + in_,
        })
    }

    #[tokio::test]
    async fn values_are_kept_until_shortly_before_they_expire() {
        let kept = Kept::<usize>::default();
        let calls = Arc::new(AtomicUsize::new(0));
        let fetch = |life: Duration| {
            let calls = calls.clone();
            move || async move { expiring(calls.fetch_add(1, Ordering::SeqCst), life) }
        };
        let hour = Duration::from_secs(3600);
        assert_eq!(kept.get("a", fetch(hour)).await, Ok(0));
        assert_eq!(kept.get("a", fetch(hour)).await, Ok(0));
        // Another key is fetched on its own.
        assert_eq!(kept.get("b", fetch(hour)).await, Ok(1));
        // A value expiring within the margin is not kept at all.
        assert_eq!(kept.get("c", fetch(EXPIRY_MARGIN)).await, Ok(2));
        assert_eq!(kept.get("c", fetch(EXPIRY_MARGIN)).await, Ok(3));
        // A failure is not kept.
        let failed = kept.get("d", || async { Err::<Expiring<usize>, _>("no".into()) });
        assert_eq!(failed.await, Err("no".to_string()));
        assert_eq!(kept.get("d", fetch(hour)).await, Ok(4));
    }

    #[tokio::test]
    async fn a_value_due_for_refresh_is_served_while_it_is_refreshed() {
        let kept = Kept::<usize>::default();
        // Due for refresh at once (expires within margin + refresh-ahead).
        let soon = EXPIRY_MARGIN + REFRESH_AHEAD - Duration::from_secs(1);
        assert_eq!(
            kept.get("a", || async move { expiring(1, soon) }).await,
            Ok(1)
        );
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let refreshed = async move {
            let _ = rx.await;
            expiring(2, Duration::from_secs(3600))
        };
        // The old value, while the refresh waits.
        assert_eq!(kept.get("a", move || refreshed).await, Ok(1));
        // A second refresh is not started while one runs.
        assert_eq!(
            kept.get("a", || async { Err::<Expiring<usize>, _>("again".into()) })
                .await,
            Ok(1)
        );
        let _ = tx.send(());
        for _ in 0..100 {
            if kept
                .get("a", move || async move { expiring(3, soon) })
                .await
                == Ok(2)
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the background refresh never landed");
    }
}
