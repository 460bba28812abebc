//! What Kyverno copies from a policy's annotations into each of its report
//! results (`pkg/utils/report`, `ToPolicyReportResult`), and what Policy
//! Reporter filters and groups by: `policies.kyverno.io/category`,
//! `policies.kyverno.io/severity` (critical, high, medium, low or info;
//! anything else is left out) and `policies.kyverno.io/scored` (`"false"`
//! makes the results unscored); and, for admission results, the label
//! `reports.kyverno.io/disabled` (the policy's results are not reported)
//! and `spec.evaluation.background.enabled` (Kyverno's `process` property
//! says `background scan` for a policy with background evaluation, the
//! default, else `admission review`). Read by the host from the documents
//! or cluster objects it loaded: the component never sees metadata.

use super::Outcome;
use ivpol_runtime::policies::Document;
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;

const CATEGORY: &str = "policies.kyverno.io/category";
const SEVERITY: &str = "policies.kyverno.io/severity";
const SCORED: &str = "policies.kyverno.io/scored";
const EXCLUDE_REPORTING: &str = "reports.kyverno.io/disabled";

/// One policy's report annotations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyMeta {
    pub category: Option<String>,
    pub severity: Option<&'static str>,
    pub scored: bool,
    /// Not labelled `reports.kyverno.io/disabled`.
    pub reported: bool,
    /// `spec.evaluation.background.enabled` (default true).
    pub background: bool,
}

impl Default for PolicyMeta {
    fn default() -> PolicyMeta {
        PolicyMeta {
            category: None,
            severity: None,
            scored: true,
            reported: true,
            background: true,
        }
    }
}

impl PolicyMeta {
    /// Kyverno's `process` property of the policy's results
    /// (`selectProcess`).
    pub(crate) fn process(&self) -> &'static str {
        match self.background {
            true => super::BACKGROUND_SCAN,
            false => "admission review",
        }
    }
}

/// Each policy's annotations, by (namespace of an NIVP, name).
pub type Metas = HashMap<(Option<String>, String), PolicyMeta>;

/// The annotations of `object`, when it is an ImageValidatingPolicy or a
/// NamespacedImageValidatingPolicy that has any.
pub(crate) fn of_object(object: &Value) -> Option<((Option<String>, String), PolicyMeta)> {
    let kind = object["kind"].as_str()?;
    if kind != "ImageValidatingPolicy" && kind != "NamespacedImageValidatingPolicy" {
        return None;
    }
    let metadata = &object["metadata"];
    let text = |key: &str| metadata["annotations"][key].as_str();
    let meta = PolicyMeta {
        category: text(CATEGORY).filter(|c| !c.is_empty()).map(str::to_string),
        severity: text(SEVERITY).and_then(severity),
        scored: text(SCORED) != Some("false"),
        reported: metadata["labels"].get(EXCLUDE_REPORTING).is_none(),
        background: object["spec"]["evaluation"]["background"]["enabled"] != false,
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
pub fn from_documents(documents: &[Document]) -> Metas {
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

/// The annotations of the cluster's policy objects (the documents the
/// component gets from them carry no metadata beyond names).
pub fn of_cluster(cluster: &ivpol_cluster::Cluster) -> Metas {
    let mut metas = Metas::new();
    for (resource, object) in cluster.policy_objects() {
        let Ok(mut value) = serde_json::to_value(object.as_ref()) else {
            continue;
        };
        // Listed objects carry no kind of their own.
        value["kind"] = resource.kind.clone().into();
        metas.extend(of_object(&value));
    }
    metas
}

/// Gives each outcome its policy's annotations.
pub fn annotate(outcomes: &mut [Outcome], metas: &Metas) {
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
        let quiet = json!({"kind": "ImageValidatingPolicy",
            "metadata": {"name": "q", "labels": {EXCLUDE_REPORTING: ""}},
            "spec": {"evaluation": {"background": {"enabled": false}}}});
        let (_, quiet) = of_object(&quiet).expect("meta");
        assert!(!quiet.reported);
        assert_eq!(quiet.process(), "admission review");
        assert_eq!(PolicyMeta::default().process(), "background scan");
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
