//! The mutate phase: digest pinning only (reference §2.5).
//!
//! For every policy with `mutateDigest` (default true) that matches, each
//! image without a digest that `matchImageReferences` matches must be
//! resolved to `registry/repo:tag@sha256:...`. Resolving needs the registry
//! client, which this build does not have yet, so such an image is an error
//! result (denying under Deny, as Kyverno does when the registry cannot be
//! reached): never a silent pass.

use super::evaluate::Input;
use super::{
    admission_bindings, bindings_with_variables, constraints_match, images, result, NamespaceInfo,
};
use super::{results, PolicyResult, Status, Verdict};
use crate::admission::Request;
use crate::images::{extract, reference};
use crate::policy::CompiledPolicy;

pub fn mutate(policies: &[&CompiledPolicy], req: &Request, ns: &NamespaceInfo) -> Verdict {
    let builder = admission_bindings(req, ns);
    let mut results: Vec<PolicyResult> = Vec::new();
    for p in policies.iter().filter(|p| p.spec.mutate_digest()) {
        if results
            .iter()
            .any(|r| r.policy == p.name && r.namespace == p.namespace)
        {
            continue;
        }
        // Match and compile problems are reported by the validate phase.
        if !matches!(constraints_match(p, req, ns), Ok(true)) {
            continue;
        }
        let input = Input {
            bindings: bindings_with_variables(p, &builder),
            resource: Some(req.resource.resource.as_str()),
            object: req.resource_object(),
        };
        if !conditions_hold(p, &input) {
            continue;
        }
        let unresolved = unpinned_images(p, req, &input);
        if let Some(first) = unresolved.first() {
            let message = format!(
                "failed to update digest: failed to resolve digest for image {first}: registry access is not available in this build"
            );
            results.push(result(p, Status::Error, message, vec![]));
        }
    }
    results::verdict(results, None)
}

fn conditions_hold(p: &CompiledPolicy, input: &Input) -> bool {
    p.match_conditions
        .iter()
        .all(|(_, c)| matches!(c.eval(&input.bindings), Ok(cel::Value::Bool(true))))
}

/// Images in the well-known container fields that need pinning for `p`.
fn unpinned_images(p: &CompiledPolicy, req: &Request, input: &Input) -> Vec<String> {
    extract::extract(&req.resource.resource, input.object)
        .into_iter()
        .filter(|i| {
            !reference::parse(&i.image)
                .map(|r| r.contains_digest())
                .unwrap_or(false)
        })
        .filter(|i| images::matches_references(p, &i.image, &input.bindings).unwrap_or(true))
        .map(|i| i.image)
        .collect()
}
