//! What a policy's verifier keeps of it across requests: the policy's
//! matchers, attestors, attestations, hash, secrets and tenant, made once,
//! the cache-key prefixes of attestor lists with no per-request value
//! (`docs/architecture.md`, "The verification cache"), and the credential
//! scopes of the registries its images came from.

use super::cache::{Credentials, Function, KeyPrefix};
use crate::policy::attestor::CompiledAttestor;
use crate::policy::spec::Attestation;
use crate::policy::CompiledPolicy;
use std::sync::{Arc, Mutex};

/// What the verifier needs of its policy.
pub(super) struct VerifierPolicy {
    pub matchers: Arc<Vec<crate::policy::ImageMatcher>>,
    pub attestors: Arc<Vec<CompiledAttestor>>,
    pub attestations: Vec<Attestation>,
    /// The policy's content hash, which cache keys bind.
    pub content_hash: String,
    /// `credentials.secrets`: the host's credentials for them are part of
    /// every cache key.
    pub secrets: Vec<String>,
    /// The namespace of a namespaced policy, which decides whether the
    /// host's own credentials serve it (and so is part of every key).
    pub tenant: Option<String>,
    /// The names of the attestors with no per-request value, whose
    /// fingerprints, and so key prefixes, are the same in every request.
    fixed: Vec<String>,
    /// Key prefixes of fixed attestor lists, kept across requests.
    prefixes: Mutex<Vec<PrefixMemo>>,
    /// Credential scopes by image registry and attestor list: a function of
    /// the policy alone (its secrets, tenant and attestors' signature
    /// repositories), so kept across requests.
    scopes: Mutex<Vec<ScopeMemo>>,
}

/// The [`Credentials`] of an image's registry read by `attestors`.
struct ScopeMemo {
    registry: String,
    attestors: Vec<String>,
    credentials: Arc<Credentials>,
}

/// Most credential scopes a policy keeps (one per registry and attestor
/// list its images are verified with); past it, a scope is made afresh.
const MAX_KEPT_SCOPES: usize = 16;

/// Most key prefixes a policy keeps across requests (one per distinct
/// function, attestation and attestor list its expressions verify with).
const MAX_KEPT_PREFIXES: usize = 16;

impl VerifierPolicy {
    /// The policy's verifier parts, made once and kept with it.
    pub(super) fn shared(p: &CompiledPolicy) -> Arc<VerifierPolicy> {
        p.engine_state
            .get_or_init(|| Arc::new(VerifierPolicy::of(p)))
            .clone()
            .downcast::<VerifierPolicy>()
            .unwrap_or_else(|_| Arc::new(VerifierPolicy::of(p)))
    }

    fn of(p: &CompiledPolicy) -> VerifierPolicy {
        VerifierPolicy {
            matchers: p.image_matchers.clone(),
            attestors: p.attestors.clone(),
            attestations: p.spec.attestations.clone(),
            content_hash: p.content_hash.clone(),
            secrets: p.registry_secrets(),
            tenant: p.tenant().map(str::to_string),
            fixed: (p.attestors.iter())
                .filter(|a| a.is_fixed())
                .map(|a| a.name.clone())
                .collect(),
            prefixes: Mutex::new(Vec::new()),
            scopes: Mutex::new(Vec::new()),
        }
    }

    pub(super) fn is_fixed(&self, attestor: &str) -> bool {
        self.fixed.iter().any(|f| f == attestor)
    }

    /// A kept prefix of fixed `attestors`.
    pub(super) fn kept_prefix(&self, scope: &PrefixScope<'_>) -> Option<KeyPrefix> {
        let kept = self.prefixes.lock().unwrap_or_else(|p| p.into_inner());
        kept.iter()
            .find(|m| m.is(scope))
            .and_then(|m| m.prefix.clone())
    }

    pub(super) fn keep_prefix(&self, memo: PrefixMemo) {
        let mut kept = self.prefixes.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() < MAX_KEPT_PREFIXES {
            kept.push(memo);
        }
    }

    /// The credential scope of an image of `registry` verified by
    /// `attestors`: kept, or made by `make` (and kept while there is room).
    pub(super) fn scope(
        &self,
        registry: &str,
        attestors: &[String],
        make: impl FnOnce() -> Credentials,
    ) -> Arc<Credentials> {
        let found = |kept: &[ScopeMemo]| {
            (kept.iter())
                .find(|m| m.registry == registry && m.attestors == attestors)
                .map(|m| m.credentials.clone())
        };
        if let Some(kept) = found(&self.scopes.lock().unwrap_or_else(|p| p.into_inner())) {
            return kept;
        }
        let credentials = Arc::new(make());
        let mut kept = self.scopes.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() < MAX_KEPT_SCOPES {
            kept.push(ScopeMemo {
                registry: registry.to_string(),
                attestors: attestors.to_vec(),
                credentials: credentials.clone(),
            });
        }
        credentials
    }
}

/// A [`KeyPrefix`] and what it was made of; `None` when an attestor's
/// material could not be evaluated.
#[derive(Clone)]
pub(super) struct PrefixMemo {
    pub function: Function,
    pub attestation: String,
    pub attestors: Vec<String>,
    pub prefix: Option<KeyPrefix>,
}

/// What a key prefix is made of, besides the policy.
#[derive(Clone, Copy)]
pub(super) struct PrefixScope<'a> {
    pub function: Function,
    pub attestation: &'a str,
    pub attestors: &'a [String],
}

impl PrefixMemo {
    pub(super) fn is(&self, scope: &PrefixScope<'_>) -> bool {
        self.function == scope.function
            && self.attestation == scope.attestation
            && self.attestors == scope.attestors
    }
}
