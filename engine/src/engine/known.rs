//! The policy names a route may select, per scope, gathered once at load:
//! a route that names a policy nobody loaded or rejected by name is told
//! so ([`super::PolicySet::unknown`]) without walking the policy set on
//! every request.

use super::{FastMap, FastSet, Scope};
use crate::policy::PolicyKind;

#[derive(Default)]
pub(super) struct KnownNames {
    cluster: FastSet<String>,
    /// By namespace.
    namespaced: FastMap<String, FastSet<String>>,
}

impl KnownNames {
    /// Every `(name, kind, namespace)` of `policies`.
    pub(super) fn of<'a>(
        policies: impl IntoIterator<Item = (&'a str, PolicyKind, Option<&'a str>)>,
    ) -> KnownNames {
        let mut known = KnownNames::default();
        for (name, kind, namespace) in policies {
            let names = match (kind, namespace) {
                (PolicyKind::Cluster, _) => &mut known.cluster,
                (PolicyKind::Namespaced, Some(ns)) => {
                    known.namespaced.entry(ns.to_string()).or_default()
                }
                // A namespaced policy without a namespace is in no scope.
                (PolicyKind::Namespaced, None) => continue,
            };
            names.insert(name.to_string());
        }
        known
    }

    /// Whether `name` is known in `scope`.
    pub(super) fn contains(&self, scope: &Scope, name: &str) -> bool {
        match scope {
            Scope::Cluster => self.cluster.contains(name),
            Scope::Namespaced(ns) => self.namespaced.get(ns).is_some_and(|n| n.contains(name)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_known_in_its_own_scope_only() {
        let known = KnownNames::of([
            ("a", PolicyKind::Cluster, None),
            ("b", PolicyKind::Namespaced, Some("team")),
            ("c", PolicyKind::Namespaced, None),
        ]);
        let team = Scope::Namespaced("team".into());
        let other = Scope::Namespaced("other".into());
        assert!(known.contains(&Scope::Cluster, "a"));
        assert!(!known.contains(&team, "a"));
        assert!(known.contains(&team, "b"));
        assert!(!known.contains(&Scope::Cluster, "b"));
        assert!(!known.contains(&other, "b"));
        assert!(!known.contains(&Scope::Cluster, "c"));
        assert!(!known.contains(&Scope::Cluster, "nobody"));
    }
}
