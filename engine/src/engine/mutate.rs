//! The mutate phase: digest pinning only (`docs/architecture.md`).
//!
//! For every policy with `mutateDigest` (default true) that matches, each
//! image without a digest that `matchImageReferences` matches is resolved
//! through the registry and replaced, at its exact JSON pointer, by
//! `registry/repo:tag@sha256:...` (tag kept). Pinning is not best effort: an
//! image that cannot be resolved is an `error` result, which denies under
//! Deny and warns under Warn. Images no policy matches are never resolved.

use super::evaluate::{self, Input};
use super::{
    admission_bindings, bindings_for, constraints_match, images, match_input, policy_transport,
    result, NamespaceInfo, SharedTransport,
};
use super::{results, PolicyResult, Status, Verdict};
use crate::admission::patch::{self, Replace};
use crate::admission::Request;
use crate::images::extract::{self, ExtractedImage};
use crate::images::reference::{self, ImageRef};
use crate::oci::{Client, OciError};
use crate::policy::CompiledPolicy;
use std::collections::BTreeMap;

pub(super) fn mutate(
    policies: &[&CompiledPolicy],
    req: &Request,
    ns: &NamespaceInfo,
    transport: SharedTransport,
    resources: &Option<std::sync::Arc<dyn crate::cel::resource_lib::ResourceSource>>,
) -> Verdict {
    let builder = admission_bindings(req, ns);
    let matching = match_input(req, ns);
    // One resolution per (credentials, image) per request, whichever policy asks.
    let mut resolved: BTreeMap<(String, String), Result<String, Unresolved>> = BTreeMap::new();
    let mut results: Vec<PolicyResult> = Vec::new();
    let mut patches = Vec::new();
    // Mutation verifies nothing; `required` is the validate phase's.
    let verifications = Default::default();
    for p in policies.iter().filter(|p| p.spec.pins_at_mutate()) {
        if results
            .iter()
            .any(|r| r.policy == p.name && r.namespace == p.namespace)
        {
            continue;
        }
        // Match and compile problems are reported by the validate phase.
        if !matches!(constraints_match(p, req, ns, &matching), Ok(true)) {
            continue;
        }
        let input = Input {
            bindings: bindings_for(
                p,
                &builder,
                &transport,
                // Mutation verifies nothing: no cache, no keys.
                &super::keys::HostServices::default(),
                &verifications,
                &super::verifier::DecisionLog::default(),
                resources.as_ref(),
            ),
            // Pinning reads the images itself (`unpinned_images`).
            lists: &BTreeMap::new(),
        };
        // As in validation: false means no mutation; an error under
        // `failurePolicy: Fail` is the policy's error result, as Kyverno's
        // `MutateDigest` returns it ("failed to update digest: <err>").
        match evaluate::match_conditions(p, &input.bindings) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(e) => {
                results.push(result(
                    p,
                    Status::Error,
                    format!("failed to update digest: {e}"),
                    vec![],
                ));
                continue;
            }
        }
        // An exempted request gets no patch (Kyverno's `MutateDigest`).
        match evaluate::exceptions(p, &input.bindings) {
            Ok(None) => {}
            Ok(Some(_)) => continue,
            Err(e) => {
                let message = format!("failed to update digest: {e}");
                results.push(result(p, Status::Error, message, vec![]));
                continue;
            }
        }
        let mut failures = Vec::new();
        let own = policy_transport(p, &transport);
        let secrets = p
            .spec
            .credentials
            .as_ref()
            .map(|c| c.secrets.join(","))
            .unwrap_or_default();
        for image in unpinned_images(p, req, &input) {
            let outcome = resolved
                .entry((secrets.clone(), image.image.clone()))
                .or_insert_with(|| resolve(&Client::new(&*own), &image.image))
                .clone();
            match outcome {
                Ok(pinned) => patches.push(Replace::new(image.pointer, pinned)),
                Err(cause) => failures.push(format!(
                    "failed to resolve digest for image {}: {cause}",
                    image.image
                )),
            }
        }
        if !failures.is_empty() {
            // Every image is tried; failures combine as `multierr.Combine` does.
            let message = format!("failed to update digest: {}", failures.join("; "));
            results.push(result(p, Status::Error, message, vec![]));
        }
    }
    results::verdict(results, patch::render(patches))
}

ivpol_verify::debug_as_display!(Unresolved);
/// Why a tag was not pinned.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
enum Unresolved {
    /// The reference does not parse.
    #[error(transparent)]
    Reference(#[from] reference::ImageRefError),
    /// The registry did not give its digest.
    #[error(transparent)]
    Registry(#[from] OciError),
}

/// Whether `image` names its digest (one that does not parse is not).
fn pinned(image: &str) -> bool {
    reference::parse(image).is_ok_and(|r| r.contains_digest())
}

/// `registry/repo:tag@sha256:...` for a tag reference, as Kyverno writes it.
fn resolve(client: &Client, image: &str) -> Result<String, Unresolved> {
    let parsed: ImageRef = reference::parse(image)?;
    let digest = client.resolve(&parsed)?;
    Ok(format!("{}@{digest}", parsed.tagged_name()))
}

/// Images in the well-known container fields that need pinning for `p`.
///
/// Kyverno matches `matchImageReferences` against the normalised name here
/// (`docker.io/nginx:latest` for `nginx`), not the string as written.
fn unpinned_images(p: &CompiledPolicy, req: &Request, input: &Input) -> Vec<ExtractedImage> {
    // The same images as the tree's, read with the request: when each is
    // pinned already there is nothing to find, and no tree to parse.
    let lists = req.resource_object().image_lists();
    if lists.values().flat_map(|l| l.iter()).all(|i| pinned(i)) {
        return Vec::new();
    }
    extract::extract(&req.resource.resource, req.resource_object().tree())
        .into_iter()
        .filter(|i| !pinned(&i.image))
        .filter(|i| {
            let normalised = reference::parse(&i.image)
                .map(|r| r.tagged_name())
                .unwrap_or_else(|_| i.image.clone());
            // A matcher error counts as a match: fail closed, the resolution reports it.
            images::matches_image_references(&p.image_matchers, &normalised, &input.bindings)
                .unwrap_or(true)
        })
        .collect()
}
