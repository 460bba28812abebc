//! The mutate phase: digest pinning only (reference §2.5).
//!
//! For every policy with `mutateDigest` (default true) that matches, each
//! image without a digest that `matchImageReferences` matches must be
//! resolved to `registry/repo:tag@sha256:...`. Resolving needs the registry
//! client, which this build does not have yet, so such an image is an error
//! result (denying under Deny, as Kyverno does when the registry cannot be
//! reached): never a silent pass.

use super::evaluate::{self, Input};
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
        // As in validation: false means no mutation; an error under
        // `failurePolicy: Fail` is the policy's error result, as Kyverno's
        // `MutateDigest` returns it ("failed to update digest: <err>").
        match evaluate::match_conditions(p, &input.bindings) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(e) => {
                let message = format!("failed to update digest: {e}");
                results.push(result(p, Status::Error, message, vec![]));
                continue;
            }
        }
        let unresolved = unpinned_images(p, req, &input);
        if !unresolved.is_empty() {
            // Every image is tried; the failures are combined as
            // `multierr.Combine` does.
            let failures: Vec<String> = unresolved
                .iter()
                .map(|image| {
                    format!(
                        "failed to resolve digest for image {image}: registry access is not available in this build"
                    )
                })
                .collect();
            let message = format!("failed to update digest: {}", failures.join("; "));
            results.push(result(p, Status::Error, message, vec![]));
        }
    }
    results::verdict(results, None)
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
