//! The request's namespace as its policies see it: the Namespace object
//! the host gives, its labels, and whether the host knows it.

use crate::admission::labels_of;

/// The request's namespace, for selectors and `namespaceObject`.
pub struct NamespaceInfo {
    /// The Namespace object, as `namespaceObject` sees it.
    pub object: serde_json::Value,
    /// Its labels, for `namespaceSelector`; none when unknown.
    pub labels: Option<std::collections::BTreeMap<String, String>>,
    /// The request is in a namespace whose object the host does not know.
    pub unknown: bool,
}

impl NamespaceInfo {
    /// No policy in scope reads the namespace: nothing was asked for.
    pub(super) fn unread() -> NamespaceInfo {
        NamespaceInfo {
            object: serde_json::Value::Null,
            labels: None,
            unknown: false,
        }
    }
}

ivpol_verify::debug_as_display!(NamespaceError);
/// The host's Namespace object for the request's namespace is not JSON.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
#[error("namespace object is not valid JSON: {0}")]
pub struct NamespaceError(
    /// Why it does not read (serde_json's error).
    pub String,
);

pub(super) fn parse_namespace(
    json: Option<&str>,
    name: &str,
) -> Result<NamespaceInfo, NamespaceError> {
    let object = match json {
        Some(j) => serde_json::from_str(j).map_err(|e| NamespaceError(e.to_string()))?,
        None => serde_json::Value::Null,
    };
    // No namespace object: `None`, so that matching stands in Kyverno's
    // minimal namespace carrying only `kubernetes.io/metadata.name`
    // (`namespace.Matcher.GetNamespace` with a nil namespace) instead of a
    // namespace without labels.
    let labels = if name.is_empty() {
        None
    } else {
        labels_of(&object)
    };
    Ok(NamespaceInfo {
        object,
        labels,
        unknown: json.is_none() && !name.is_empty(),
    })
}
