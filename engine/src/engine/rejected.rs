//! Policies that were rejected at load still judge the requests in their
//! scope: each is an `error` result under Deny, so a broken policy never
//! admits what the working one would have refused.
//!
//! A route that names the policy gets `Policy <name> error: policy failed
//! to load: <diagnostic>`; the unnamed route (every policy in scope) gets
//! the same for every rejected policy of the scope, because ivpol cannot
//! know what a policy it could not read would have matched. A document
//! that was not even readable may have been any cluster policy, so it
//! denies on the unnamed cluster routes, named by its source.

use super::results::{PolicyResult, Status};
use super::{in_scope_of, Named, Scope};
use crate::policy::{CompiledPolicy, Diagnostic, PolicyKind};

/// One rejected policy document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// `metadata.name`, or `<source>#<document>` when it could not be read.
    pub name: String,
    /// False when the name is a stand-in: a route cannot name it.
    pub named: bool,
    /// Which kind of policy it was meant to be.
    pub kind: PolicyKind,
    /// Its namespace, for a namespaced policy.
    pub namespace: Option<String>,
    /// Every problem of the document, joined with `; `.
    pub message: String,
}

/// The rejected policies among `diagnostics`, one per document, leaving
/// out documents that claim no policy and names that loaded anyway (a
/// duplicate of a policy that works).
pub fn collect(diagnostics: &[Diagnostic], loaded: &[CompiledPolicy]) -> Vec<Rejected> {
    let mut out: Vec<(String, u32, Rejected)> = Vec::new();
    for d in diagnostics {
        let Some(kind) = d.kind else { continue };
        if let Some((_, _, r)) = out
            .iter_mut()
            .find(|(s, i, _)| *s == d.source && *i == d.document)
        {
            r.message = format!("{}; {}", r.message, d.message);
            continue;
        }
        let (name, named) = match &d.policy {
            Some(n) if !n.is_empty() => (n.clone(), true),
            _ => (format!("{}#{}", d.source, d.document), false),
        };
        let rejected = Rejected {
            name,
            named,
            kind,
            namespace: d.namespace.clone(),
            message: d.message.clone(),
        };
        out.push((d.source.clone(), d.document, rejected));
    }
    out.into_iter()
        .map(|(_, _, r)| r)
        .filter(|r| {
            !loaded
                .iter()
                .any(|p| p.name == r.name && p.kind == r.kind && p.namespace == r.namespace)
        })
        .collect()
}

/// The error results of the rejected policies a request on `scope` with
/// the route's `names` would have reached.
///
/// A document whose name could not be read at all may have been the
/// policy a route names: when the route names a policy that is neither
/// loaded nor rejected by name (`unknown_named`), every such document of
/// the scope denies it too, naming its file, until the files are fixed.
pub(super) fn results(
    rejected: &[Rejected],
    scope: &Scope,
    names: &Named<'_>,
    unknown_named: bool,
) -> Vec<PolicyResult> {
    let any = Named::new(&[]);
    rejected
        .iter()
        .filter(|r| {
            let reached = match r.named {
                true => names.admits(&r.name),
                false => names.is_empty() || unknown_named,
            };
            reached && in_scope_of(&r.name, r.kind, r.namespace.as_deref(), scope, &any)
        })
        .map(|r| PolicyResult {
            policy: r.name.clone(),
            namespace: r.namespace.clone(),
            status: Status::Error,
            message: format!("policy failed to load: {}", r.message),
            // Its own actions are unknown: the reading that denies.
            actions: vec!["Deny".into()],
            audit_annotations: vec![],
            exceptions: vec![],
            verifications: vec![],
            // Its metadata is unknown: reported, in Kyverno's defaults.
            background: true,
            report: Default::default(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::SourceDocument;

    fn load(content: &str) -> (Vec<CompiledPolicy>, Vec<Rejected>) {
        let set = crate::policy::load(&[SourceDocument {
            source: "p.yaml".into(),
            content: content.into(),
        }]);
        let rejected = collect(&set.diagnostics, &set.policies);
        (set.policies, rejected)
    }

    /// [`results`] for a route naming `names` (all of them known).
    fn results_named(rejected: &[Rejected], scope: &Scope, names: &[String]) -> Vec<PolicyResult> {
        results(rejected, scope, &Named::new(names), false)
    }

    const BROKEN: &str = "apiVersion: policies.kyverno.io/v1\nkind: ImageValidatingPolicy\nmetadata:\n  name: broken\nspec:\n  validationActions: [Nope]\n";

    #[test]
    fn a_rejected_policy_denies_where_it_is_named_and_on_the_unnamed_route() {
        let (_, rejected) = load(BROKEN);
        assert_eq!(rejected.len(), 1);
        let named = results_named(&rejected, &Scope::Cluster, &["broken".into()]);
        assert_eq!(named.len(), 1);
        assert_eq!(named[0].status, Status::Error);
        assert!(
            named[0].message.starts_with("policy failed to load: spec."),
            "{}",
            named[0].message
        );
        assert_eq!(results_named(&rejected, &Scope::Cluster, &[]).len(), 1);
        assert!(results_named(&rejected, &Scope::Cluster, &["other".into()]).is_empty());
        assert!(results_named(&rejected, &Scope::Namespaced("ns".into()), &[]).is_empty());
    }

    #[test]
    fn a_namespaced_policy_denies_only_in_its_namespace() {
        let doc = BROKEN
            .replace(
                "kind: ImageValidatingPolicy",
                "kind: NamespacedImageValidatingPolicy",
            )
            .replace("name: broken", "name: broken\n  namespace: team-a");
        let (_, rejected) = load(&doc);
        assert_eq!(rejected[0].namespace.as_deref(), Some("team-a"));
        assert_eq!(
            results_named(&rejected, &Scope::Namespaced("team-a".into()), &[]).len(),
            1
        );
        assert!(results_named(&rejected, &Scope::Namespaced("team-b".into()), &[]).is_empty());
        assert!(results_named(&rejected, &Scope::Cluster, &[]).is_empty());
    }

    #[test]
    fn unreadable_files_deny_the_unnamed_cluster_route_and_other_kinds_nothing() {
        let (_, rejected) = load("kind: [unclosed");
        assert_eq!(rejected.len(), 1);
        assert!(!rejected[0].named);
        assert_eq!(results_named(&rejected, &Scope::Cluster, &[]).len(), 1);
        assert!(results_named(&rejected, &Scope::Cluster, &["p.yaml#0".into()]).is_empty());
        let (_, rejected) = load("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n");
        assert!(rejected.is_empty());
        let exception = "apiVersion: policies.kyverno.io/v1\nkind: PolicyException\nmetadata:\n  name: e\nspec: {}\n";
        assert!(load(exception).1.is_empty());
    }
}
