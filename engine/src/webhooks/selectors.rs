//! The namespace and object selectors each webhook gets, and the grouping
//! of policies by them, as Kyverno resolves, merges and hashes them.

use super::Options;
use crate::matching::{LabelSelector, LabelSelectorOperator, LabelSelectorRequirement};
use crate::policy::{CompiledPolicy, PolicyKind};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The label the API server puts on every Namespace.
const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// The namespaces every webhook skips, as one selector.
pub(super) fn config_namespace_selector(options: &Options) -> Option<LabelSelector> {
    if options.exclude_namespaces.is_empty() {
        return None;
    }
    Some(LabelSelector {
        match_labels: BTreeMap::new(),
        match_expressions: options
            .exclude_namespaces
            .iter()
            .map(|ns| LabelSelectorRequirement {
                key: NAMESPACE_NAME_LABEL.into(),
                operator: LabelSelectorOperator::NotIn,
                values: vec![ns.clone()],
            })
            .collect(),
    })
}

/// Kyverno's `resolveNamespaceSelector`: a namespaced policy is pinned to
/// its namespace whatever its matchConstraints say; a cluster policy keeps
/// its own selector. Either is merged with the configured exclusions.
pub(super) fn namespace_selector(p: &CompiledPolicy, options: &Options) -> Option<LabelSelector> {
    let configured = config_namespace_selector(options);
    match (&p.namespace, p.kind) {
        (Some(ns), PolicyKind::Namespaced) => {
            let pinned = LabelSelector {
                match_labels: BTreeMap::new(),
                match_expressions: vec![LabelSelectorRequirement {
                    key: NAMESPACE_NAME_LABEL.into(),
                    operator: LabelSelectorOperator::In,
                    values: vec![ns.clone()],
                }],
            };
            merge(Some(&pinned), configured.as_ref())
        }
        _ => merge(
            p.match_constraints.namespace_selector.as_ref(),
            configured.as_ref(),
        ),
    }
}

/// Kyverno's `mergeLabelSelectors`: either one when the other is absent,
/// else both sets of labels (b wins a shared key) and requirements (a's first).
pub(super) fn merge(a: Option<&LabelSelector>, b: Option<&LabelSelector>) -> Option<LabelSelector> {
    match (a, b) {
        (None, b) => b.cloned(),
        (a, None) => a.cloned(),
        (Some(a), Some(b)) => {
            let mut merged = a.clone();
            merged
                .match_labels
                .extend(b.match_labels.iter().map(|(k, v)| (k.clone(), v.clone())));
            merged
                .match_expressions
                .extend(b.match_expressions.iter().cloned());
            Some(merged)
        }
    }
}

pub(super) struct SelectorGroup<'a> {
    pub(super) namespace_selector: Option<LabelSelector>,
    pub(super) object_selector: Option<LabelSelector>,
    pub(super) policies: Vec<&'a CompiledPolicy>,
}

/// Kyverno's `groupBySelectors`: by the full digest of the resolved
/// selectors, in digest order.
pub(super) fn group_by_selectors<'a>(
    policies: &[&'a CompiledPolicy],
    options: &Options,
) -> BTreeMap<String, SelectorGroup<'a>> {
    let mut groups: BTreeMap<String, SelectorGroup<'a>> = BTreeMap::new();
    for p in policies {
        let namespace_selector = namespace_selector(p, options);
        let object_selector = merge(p.match_constraints.object_selector.as_ref(), None);
        let key = selector_key(namespace_selector.as_ref(), object_selector.as_ref());
        groups
            .entry(key)
            .or_insert_with(|| SelectorGroup {
                namespace_selector,
                object_selector,
                policies: Vec::new(),
            })
            .policies
            .push(*p);
    }
    groups
}

/// Kyverno's `selectorKey`: hex SHA-256 of Go's `json.Marshal` of the pair
/// `[namespaceSelector, objectSelector]` (absent ones are `null`). Only its
/// first eight characters reach a webhook name, but they must be Kyverno's
/// for the names to match.
pub(super) fn selector_key(
    namespace: Option<&LabelSelector>,
    object: Option<&LabelSelector>,
) -> String {
    let json = serde_json::to_string(&[namespace, object]).unwrap_or_default();
    let digest = Sha256::digest(go_html_escape(&json).as_bytes());
    crate::verify::encoding::hex(&digest)
}

/// Go's encoder escapes `<`, `>`, `&`, U+2028 and U+2029 inside strings;
/// serde_json writes them as they are. (Nothing else differs for the
/// characters label keys and values may hold.)
pub(super) fn go_html_escape(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}
