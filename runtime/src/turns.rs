//! Per-namespace turns at a policy set's instances, so that one tenant
//! cannot starve the others.
//!
//! A request holds an instance for as long as its evaluation runs, and an
//! evaluation that waits on a slow registry runs for as long as the
//! registry makes it. Without a bound per namespace, a pod author whose
//! images sit on a registry that answers after 20 s could hold every
//! instance with a dozen requests, and every other namespace's requests
//! would then be denied as busy. Each namespace (the request's
//! `request.namespace`, which the API server sets; cluster-scoped objects
//! share the empty one) may hold at most `per_namespace` instances at
//! once; its further requests wait for one of its own turns, within their
//! deadline, while the pool's other instances stay free for the rest.

use std::collections::HashMap;
use std::sync::Mutex;
use tokio::sync::Notify;

/// The turns every namespace holds. Bounded: a namespace's entry goes when
/// it holds no turn, so there are never more entries than requests running.
pub(crate) struct Turns {
    per_namespace: usize,
    held: Mutex<HashMap<String, usize>>,
    freed: Notify,
}

/// One namespace's turn; given back when dropped.
pub(crate) struct Turn<'a> {
    turns: &'a Turns,
    namespace: String,
}

impl Turns {
    pub(crate) fn new(per_namespace: usize) -> Turns {
        Turns {
            per_namespace: per_namespace.max(1),
            held: Mutex::new(HashMap::new()),
            freed: Notify::new(),
        }
    }

    /// The most turns one namespace holds at once.
    pub(crate) fn per_namespace(&self) -> usize {
        self.per_namespace
    }

    /// A turn for `namespace`, waiting until `until` at the latest; `None`
    /// when the namespace still holds all of its turns then.
    pub(crate) async fn take(
        &self,
        namespace: &str,
        until: tokio::time::Instant,
    ) -> Option<Turn<'_>> {
        let turn = || Turn {
            turns: self,
            namespace: namespace.to_string(),
        };
        loop {
            // Nearly always free: taken without registering for a wake-up,
            // which takes `freed`'s lock twice.
            if self.try_take(namespace) {
                return Some(turn());
            }
            // Registered before checking again, so that a turn given back
            // between the check and the wait still wakes this one.
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if self.try_take(namespace) {
                return Some(turn());
            }
            tokio::time::timeout_at(until, freed).await.ok()?;
        }
    }

    fn try_take(&self, namespace: &str) -> bool {
        let mut held = self.lock();
        match held.get_mut(namespace) {
            Some(count) if *count >= self.per_namespace => false,
            Some(count) => {
                *count += 1;
                true
            }
            None => {
                held.insert(namespace.to_string(), 1);
                true
            }
        }
    }

    fn give_back(&self, namespace: &str) {
        let was = {
            let mut held = self.lock();
            let Some(count) = held.get_mut(namespace) else {
                return;
            };
            let was = *count;
            *count = was.saturating_sub(1);
            if *count == 0 {
                held.remove(namespace);
            }
            was
        };
        // Only a namespace that held all of its turns can have requests
        // waiting: each waits after finding it so (under the lock), and
        // is woken by the first turn given back after that.
        if was >= self.per_namespace {
            self.freed.notify_waiters();
        }
    }

    /// Namespaces holding a turn now.
    #[cfg(test)]
    fn namespaces(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, usize>> {
        // A poisoned lock means a panic while counting, which cannot leave
        // the map inconsistent (each change is one statement).
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.turns.give_back(&self.namespace);
    }
}

#[cfg(test)]
mod tests {
    use super::Turns;
    use std::time::Duration;
    use tokio::time::Instant;

    #[tokio::test]
    async fn a_namespace_waits_for_its_own_turns_while_others_take_theirs() {
        let turns = Turns::new(2);
        let soon = || Instant::now() + Duration::from_millis(50);
        let a1 = turns.take("a", soon()).await.expect("first turn");
        let _a2 = turns.take("a", soon()).await.expect("second turn");
        // `a` holds both of its turns: a third waits out its deadline...
        assert!(turns.take("a", soon()).await.is_none());
        // ...while `b` (and the cluster-scoped one) get theirs at once.
        let _b = turns.take("b", soon()).await.expect("b's turn");
        let _cluster = turns.take("", soon()).await.expect("cluster's turn");
        // A turn given back wakes a waiter of that namespace.
        let waiting = turns.take("a", Instant::now() + Duration::from_secs(5));
        let give_back = async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            drop(a1);
        };
        let (taken, ()) = tokio::join!(waiting, give_back);
        assert!(taken.is_some());
    }

    #[tokio::test]
    async fn a_namespace_that_holds_no_turn_leaves_no_entry() {
        let turns = Turns::new(1);
        let until = Instant::now() + Duration::from_millis(50);
        for i in 0..100 {
            let turn = turns.take(&format!("ns-{i}"), until).await;
            assert!(turn.is_some());
        }
        assert_eq!(turns.namespaces(), 0);
    }
}
