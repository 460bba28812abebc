//! Budgets on what tenants' policy objects may cost the policy set.
//!
//! Every instance compiles every document, so the policy set's size is
//! paid for in every instance's memory: ten 1 MB NamespacedImageValidating-
//! Policies in one namespace once took an instance past its memory limit
//! at load, which stopped `serve` at start and every reload after. The
//! objects read from the API server are charged to their namespace, and a
//! namespace over its share, or the largest namespaces when the whole set
//! is over its budget, have every object refused: each becomes a
//! diagnostic that denies on that namespace's routes only (its stub names
//! the object), while the cluster's policies and the other namespaces'
//! still load. The policy files are the operator's and never refused here.

use ivpol_runtime::policies::{Document, Owner};
use std::collections::BTreeMap;

/// The most bytes one document may take (as the component's own limit).
pub(crate) const MAX_OBJECT_BYTES: usize = 1 << 20;

/// The bytes the policy set's documents, and each namespace's, may take.
#[derive(Debug, Clone, Copy)]
pub struct Budgets {
    /// All the documents the API server holds, cluster policies included.
    pub total: usize,
    /// The objects of one namespace (its NIVPs and PolicyExceptions).
    pub per_namespace: usize,
}

impl Default for Budgets {
    /// Measured: expression-dense policies compile to about 23 times their
    /// text in the component's heap (docs/performance.md, "Policy-set
    /// memory"), so 2 MiB of text takes about 50 MB of the default 128 MiB
    /// instance, leaving the rest for requests; 256 KiB is some 60 typical
    /// NIVPs for one namespace.
    fn default() -> Budgets {
        Budgets {
            total: 2 << 20,
            per_namespace: 256 << 10,
        }
    }
}

/// Refuses what is over a budget, in place; returns one line per refusal,
/// for the log.
pub(crate) fn apply(documents: &mut [Document], budgets: &Budgets) -> Vec<String> {
    let mut refused = Vec::new();
    for d in documents.iter_mut() {
        if d.owner.is_some() && d.refused.is_none() && d.content.len() > MAX_OBJECT_BYTES {
            let why = format!(
                "the object is {} bytes, more than a policy document may be ({MAX_OBJECT_BYTES})",
                d.content.len()
            );
            refuse(d, &why);
            refused.push(format!("{}: {why}", d.source));
        }
    }
    let by_namespace = namespace_bytes(documents);
    let mut over: Vec<(String, String)> = by_namespace
        .iter()
        .filter(|(_, &bytes)| bytes > budgets.per_namespace)
        .map(|(ns, bytes)| {
            let why = format!(
                "namespace {ns:?}'s policies and exceptions take {bytes} bytes, over its budget of {} (ivpol serve --namespace-policy-bytes): every one of them is refused",
                budgets.per_namespace
            );
            (ns.clone(), why)
        })
        .collect();
    let mut total: usize = documents
        .iter()
        .filter(|d| d.refused.is_none())
        .map(|d| d.content.len())
        .sum();
    for (ns, _) in &over {
        total = total.saturating_sub(by_namespace[ns]);
    }
    // Largest first: the fewest namespaces refused to fit.
    let mut rest: Vec<(&String, &usize)> = by_namespace
        .iter()
        .filter(|(ns, _)| !over.iter().any(|(o, _)| o == *ns))
        .collect();
    rest.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for (ns, bytes) in rest {
        if total <= budgets.total {
            break;
        }
        total = total.saturating_sub(*bytes);
        let why = format!(
            "the policy set is over its budget of {} bytes (ivpol serve --policy-set-bytes), and namespace {ns:?}'s policies and exceptions, {bytes} bytes, are the largest left: every one of them is refused",
            budgets.total
        );
        over.push((ns.clone(), why));
    }
    for (ns, why) in &over {
        for d in documents.iter_mut().filter(|d| in_namespace(d, ns)) {
            if d.refused.is_none() {
                refuse(d, why);
            }
        }
        refused.push(why.clone());
    }
    refused
}

/// The bytes each namespace's documents take (those not refused already).
fn namespace_bytes(documents: &[Document]) -> BTreeMap<String, usize> {
    let mut out: BTreeMap<String, usize> = BTreeMap::new();
    for d in documents.iter().filter(|d| d.refused.is_none()) {
        if let Some(ns) = d.owner.as_ref().and_then(|o| o.namespace.as_ref()) {
            *out.entry(ns.clone()).or_default() += d.content.len();
        }
    }
    out
}

fn in_namespace(d: &Document, ns: &str) -> bool {
    d.owner
        .as_ref()
        .and_then(|o| o.namespace.as_deref())
        .is_some_and(|n| n == ns)
}

/// Refuses every one of `documents` with `why`.
pub(crate) fn refuse_all(documents: &mut [Document], why: &str) {
    for d in documents {
        refuse(d, why);
    }
}

/// Replaces the document's content by a stub naming its object, with why.
fn refuse(d: &mut Document, why: &str) {
    if let Some(owner) = &d.owner {
        d.content = stub(owner);
    }
    d.refused = Some(why.to_string());
}

fn stub(owner: &Owner) -> String {
    let mut metadata = serde_json::json!({ "name": owner.name });
    if let Some(ns) = &owner.namespace {
        metadata["namespace"] = serde_json::json!(ns);
    }
    serde_json::json!({
        "apiVersion": owner.api_version,
        "kind": owner.kind,
        "metadata": metadata,
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(kind: &str, namespace: Option<&str>, name: &str, bytes: usize) -> Document {
        Document {
            source: format!("kubernetes:{kind}/{name}"),
            content: "x".repeat(bytes),
            owner: Some(Owner {
                api_version: "policies.kyverno.io/v1".into(),
                kind: kind.into(),
                namespace: namespace.map(str::to_string),
                name: name.into(),
            }),
            refused: None,
        }
    }

    const NIVP: &str = "NamespacedImageValidatingPolicy";

    fn refused(documents: &[Document]) -> Vec<&str> {
        documents
            .iter()
            .filter(|d| d.refused.is_some())
            .map(|d| d.source.as_str())
            .collect()
    }

    #[test]
    fn a_namespace_over_its_share_is_refused_alone() {
        let budgets = Budgets {
            total: 10_000,
            per_namespace: 1_000,
        };
        let mut docs = vec![
            object("ImageValidatingPolicy", None, "cluster", 900),
            object(NIVP, Some("greedy"), "a", 600),
            object(NIVP, Some("greedy"), "b", 600),
            object(NIVP, Some("modest"), "c", 600),
            Document::file("policies/p.yaml".into(), "y".repeat(5_000)),
        ];
        let lines = apply(&mut docs, &budgets);
        assert_eq!(
            refused(&docs),
            [
                "kubernetes:NamespacedImageValidatingPolicy/a",
                "kubernetes:NamespacedImageValidatingPolicy/b"
            ]
        );
        assert!(lines[0].contains("namespace \"greedy\""), "{lines:?}");
        // The stub names the object, for the routes its refusal denies on.
        let stub: serde_json::Value = serde_json::from_str(&docs[1].content).expect("JSON");
        assert_eq!(stub["metadata"]["namespace"], "greedy");
        assert_eq!(stub["kind"], NIVP);
    }

    #[test]
    fn over_the_total_the_largest_namespaces_go_first_and_cluster_policies_stay() {
        let budgets = Budgets {
            total: 2_000,
            per_namespace: 1_000,
        };
        let mut docs = vec![
            object("ImageValidatingPolicy", None, "cluster", 1_200),
            object(NIVP, Some("big"), "a", 900),
            object(NIVP, Some("small"), "b", 300),
        ];
        let lines = apply(&mut docs, &budgets);
        assert_eq!(
            refused(&docs),
            ["kubernetes:NamespacedImageValidatingPolicy/a"]
        );
        assert!(lines[0].contains("--policy-set-bytes"), "{lines:?}");
    }

    #[test]
    fn an_oversized_object_is_charged_to_its_own_namespace() {
        let mut docs = vec![object(
            "PolicyException",
            Some("team"),
            "huge",
            MAX_OBJECT_BYTES + 1,
        )];
        let lines = apply(&mut docs, &Budgets::default());
        assert!(
            lines[0].contains("more than a policy document may be"),
            "{lines:?}"
        );
        assert!(docs[0].content.len() < 200);
        // Once refused it costs nothing against the budgets.
        assert_eq!(lines.len(), 1, "{lines:?}");
    }
}
