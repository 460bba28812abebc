//! What Kyverno copies from a policy's annotations into each of its report
//! results (`pkg/utils/report`, `ToPolicyReportResult`), and what Policy
//! Reporter filters and groups by: `policies.kyverno.io/category`,
//! `policies.kyverno.io/severity` (critical, high, medium, low or info;
//! anything else is left out) and `policies.kyverno.io/scored` (`"false"`
//! makes the results unscored). Read by the host from the documents or
//! cluster objects it loaded: the component never sees annotations.

use super::Outcome;
use crate::policies::Document;
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;

const CATEGORY: &str = "policies.kyverno.io/category";
const SEVERITY: &str = "policies.kyverno.io/severity";
const SCORED: &str = "policies.kyverno.io/scored";

/// One policy's report annotations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PolicyMeta {
    pub category: Option<String>,
    pub severity: Option<&'static str>,
    pub scored: bool,
}

impl Default for PolicyMeta {
    fn default() -> PolicyMeta {
        PolicyMeta {
            category: None,
            severity: None,
            scored: true,
        }
    }
}

/// Each policy's annotations, by (namespace of an NIVP, name).
pub(crate) type Metas = HashMap<(Option<String>, String), PolicyMeta>;

/// The annotations of `object`, when it is an ImageValidatingPolicy or a
/// NamespacedImageValidatingPolicy that has any.
pub(crate) fn of_object(object: &Value) -> Option<((Option<String>, String), PolicyMeta)> {
    let kind = object["kind"].as_str()?;
    if kind != "ImageValidatingPolicy" && kind != "NamespacedImageValidatingPolicy" {
        return None;
    }
    let metadata = &object["metadata"];
    let annotations = metadata["annotations"].as_object()?;
    let text = |key: &str| annotations.get(key).and_then(Value::as_str);
    let meta = PolicyMeta {
        category: text(CATEGORY).filter(|c| !c.is_empty()).map(str::to_string),
        severity: text(SEVERITY).and_then(severity),
        scored: text(SCORED) != Some("false"),
    };
    let namespace = match kind {
        "NamespacedImageValidatingPolicy" => metadata["namespace"].as_str().map(str::to_string),
        _ => None,
    };
    let name = metadata["name"].as_str()?.to_string();
    (meta != PolicyMeta::default()).then_some(((namespace, name), meta))
}

/// Kyverno's `SeverityFromString`.
fn severity(s: &str) -> Option<&'static str> {
    ["critical", "high", "medium", "low", "info"]
        .into_iter()
        .find(|known| *known == s)
}

/// The annotations of the policies in `documents` (YAML or JSON, one or
/// many per file); a document that does not parse has none.
pub(crate) fn from_documents(documents: &[Document]) -> Metas {
    let mut metas = Metas::new();
    for d in documents {
        for doc in serde_yaml_ng::Deserializer::from_str(&d.content) {
            match Value::deserialize(doc) {
                Ok(v) => metas.extend(of_object(&v)),
                Err(_) => break,
            }
        }
    }
    metas
}

/// Gives each outcome its policy's annotations.
pub(crate) fn annotate(outcomes: &mut [Outcome], metas: &Metas) {
    if metas.is_empty() {
        return;
    }
    for o in outcomes {
        let key = (o.policy_namespace.clone(), o.policy.clone());
        if let Some(meta) = metas.get(&key) {
            o.meta = meta.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kyvernos_annotations_and_nothing_else() {
        let policy = |annotations: Value| {
            json!({"kind": "ImageValidatingPolicy",
                "metadata": {"name": "p", "annotations": annotations}})
        };
        let (key, meta) = of_object(&policy(json!({
            CATEGORY: "Supply Chain", SEVERITY: "high", SCORED: "false"
        })))
        .expect("meta");
        assert_eq!(key, (None, "p".to_string()));
        assert_eq!(meta.category.as_deref(), Some("Supply Chain"));
        assert_eq!(meta.severity, Some("high"));
        assert!(!meta.scored);
        // An unknown severity is left out, as Kyverno leaves it.
        let (_, odd) =
            of_object(&policy(json!({SEVERITY: "urgent", CATEGORY: "c"}))).expect("meta");
        assert_eq!(odd.severity, None);
        assert!(odd.scored);
        // Nothing to say, or not a policy: nothing kept.
        assert!(of_object(&policy(json!({"other": "x"}))).is_none());
        let exception = json!({"kind": "PolicyException",
            "metadata": {"name": "p", "annotations": {CATEGORY: "c"}}});
        assert!(of_object(&exception).is_none());
        let nivp = json!({"kind": "NamespacedImageValidatingPolicy",
            "metadata": {"name": "n", "namespace": "team", "annotations": {CATEGORY: "c"}}});
        assert_eq!(
            of_object(&nivp).expect("nivp").0,
            (Some("team".into()), "n".into())
        );
    }
}
