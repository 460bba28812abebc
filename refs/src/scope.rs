//! Which namespace a resource is in when it is read outside admission
//! (Kyverno's CLI and background scan): none for the built-in API's
//! cluster-scoped kinds, else its `metadata.namespace`, or `default` when it
//! names none, as `kyverno apply` places it. The component builds its
//! AdmissionRequests from resources by this rule, and the host names the
//! same resources in reports by it.

/// Kinds of the built-in API that are not namespaced, one per line. Any
/// other kind is.
const CLUSTER_SCOPED_KINDS: &str = include_str!("cluster-scoped-kinds.txt");

/// Whether `kind` is a cluster-scoped kind of the built-in API.
pub fn cluster_scoped(kind: &str) -> bool {
    CLUSTER_SCOPED_KINDS.lines().any(|k| k == kind)
}

/// The namespace of a resource of `kind` whose `metadata.namespace` is
/// `namespace` (empty or absent: none): `None` for a cluster-scoped kind.
pub fn namespace_of(kind: &str, namespace: Option<&str>) -> Option<String> {
    match cluster_scoped(kind) {
        true => None,
        false => Some(
            namespace
                .filter(|ns| !ns.is_empty())
                .unwrap_or("default")
                .to_string(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaced_kinds_default_to_default_and_cluster_kinds_have_none() {
        assert_eq!(namespace_of("Pod", None).as_deref(), Some("default"));
        assert_eq!(namespace_of("Pod", Some("")).as_deref(), Some("default"));
        assert_eq!(namespace_of("Pod", Some("team")).as_deref(), Some("team"));
        assert_eq!(namespace_of("Namespace", Some("team")), None);
        assert_eq!(namespace_of("ClusterRole", None), None);
        assert!(cluster_scoped("Node") && !cluster_scoped("Deployment"));
    }
}
