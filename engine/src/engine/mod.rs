//! The engine: which policies see a request, and what they answer.
//!
//! `validate` runs every matching policy's checks on every request and
//! trusts nothing the request carries; `mutate` only pins digests (Kyverno
//! 1.19, after #16336).

mod attestor_error;
pub mod cache;
mod cosign;
mod evaluate;
mod failure;
mod image_data;
mod images;
pub mod keys;
mod known;
mod mutate;
mod namespace;
mod notary;
mod policy_error;
mod policy_review;
mod referrers;
pub mod rejected;
pub mod report;
pub mod required;
pub mod results;
pub mod review;
mod revocation;
pub mod status;
pub use failure::Failure;
mod validate;
mod verifier;
mod verifier_policy;

use crate::admission::{Object, Request, RequestError};
use crate::cel::resource_lib::{self, ResourceSource};
use crate::cel::{convert, Bindings, BindingsBuilder, JsonSource};
use crate::matching::MatchInput;
use crate::oci::{
    Budget, Budgeted, Transport, MAX_PARSED_VALUES_PER_EVALUATION,
    MAX_REGISTRY_BYTES_PER_EVALUATION,
};
use crate::policy::{self, CompiledPolicy, Diagnostic, PolicyKind, SourceDocument};
pub use cosign::{verify_artifact, Fetched};
use evaluate::{Input, Outcome};
use namespace::parse_namespace;
pub use namespace::{NamespaceError, NamespaceInfo};
use policy_error::{Cause, PolicyError};
pub use results::{CacheUse, PolicyResult, Status, Verdict, Verification, VerifierKind};
use review::{Route, Trapped};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use validate::{validate, Collected, Judged};

/// A set or map on the request path whose keys are names the engine
/// compares (policies, images): foldhash, seeded per process, is several
/// times cheaper than SipHash on short keys, and every such collection is
/// bounded by the policy set or the request.
pub(crate) type FastSet<T> = HashSet<T, foldhash::fast::RandomState>;
/// See [`FastSet`].
pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// The webhook phase a request is judged in.
pub enum Phase {
    /// Pin image tags to digests (`mutateDigest`).
    Mutate,
    /// Verify signatures and attestations, and run the validations.
    Validate,
}

/// Who evaluates a resource outside admission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `ivpol apply` / `ivpol test`: every Kubernetes-mode policy.
    Cli,
    /// `ivpol scan`: only policies with `evaluation.background.enabled`.
    Background,
}

/// Which policies a route sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// The cluster-scoped ImageValidatingPolicies.
    Cluster,
    /// The NamespacedImageValidatingPolicies of this namespace.
    Namespaced(String),
}

/// A loaded, compiled set of policies.
pub struct PolicySet {
    policies: Vec<CompiledPolicy>,
    diagnostics: Vec<Diagnostic>,
    /// Policies that did not load, which deny the requests in their scope.
    rejected: Vec<rejected::Rejected>,
    /// The names routes may select, per scope: the loaded policies' and
    /// the rejected ones' known by name.
    known: known::KnownNames,
    /// The verification cache and the KMS keys.
    host: keys::HostServices,
    /// The cluster objects the host grants (`resource` library), if any.
    resources: Option<Arc<dyn ResourceSource>>,
    /// What the set was loaded with; a policy checked alone
    /// (`review_policy`) is loaded with the same.
    options: policy::LoadOptions,
}

impl PolicySet {
    /// Loads `sources` with no cluster objects granted: policies that use
    /// the `resource` library are refused.
    pub fn load(sources: &[SourceDocument]) -> PolicySet {
        PolicySet::load_options(sources, policy::LoadOptions::default(), None)
    }

    /// [`PolicySet::load`] with exceptions to cluster policies taken from
    /// `exceptions` only.
    pub fn load_scoped(
        sources: &[SourceDocument],
        exceptions: policy::exception::ExceptionScope,
    ) -> PolicySet {
        let options = policy::LoadOptions {
            exceptions,
            ..Default::default()
        };
        PolicySet::load_options(sources, options, None)
    }

    /// [`PolicySet::load`] with `options` (its `granted` ignored: nothing
    /// reads cluster objects here).
    pub fn load_with_options(
        sources: &[SourceDocument],
        options: policy::LoadOptions,
    ) -> PolicySet {
        let options = policy::LoadOptions {
            granted: Vec::new(),
            ..options
        };
        PolicySet::load_options(sources, options, None)
    }

    /// [`PolicySet::load`] with the `resource` library reading through
    /// `resources` (policies that use it load only if something is
    /// granted), and the rest of `options` (its `granted` is `resources`').
    pub fn load_with_resources(
        sources: &[SourceDocument],
        resources: Arc<dyn ResourceSource>,
        options: policy::LoadOptions,
    ) -> PolicySet {
        let options = policy::LoadOptions {
            granted: resources.granted(),
            ..options
        };
        PolicySet::load_options(sources, options, Some(resources))
    }

    fn load_options(
        sources: &[SourceDocument],
        options: policy::LoadOptions,
        resources: Option<Arc<dyn ResourceSource>>,
    ) -> PolicySet {
        let mut loaded = policy::load_with(sources, &options);
        attach_exceptions(&mut loaded);
        let rejected = rejected::collect(&loaded.diagnostics, &loaded.policies);
        let loaded_names =
            (loaded.policies.iter()).map(|p| (p.name.as_str(), p.kind, p.namespace.as_deref()));
        let rejected_names = (rejected.iter())
            .filter(|r| r.named)
            .map(|r| (r.name.as_str(), r.kind, r.namespace.as_deref()));
        let known = known::KnownNames::of(loaded_names.chain(rejected_names));
        PolicySet {
            policies: loaded.policies,
            diagnostics: loaded.diagnostics,
            rejected,
            known,
            host: keys::HostServices::default(),
            resources,
            options,
        }
    }

    /// Verifications in the validate phase go through `cache` (the host's,
    /// in the component); without one every verification runs.
    pub fn with_cache(mut self, cache: cache::SharedCache) -> PolicySet {
        self.host.cache = cache;
        self
    }

    /// `cosign.key.kms` keys are read from `keys` (the host's, in the
    /// component); without one every KMS key is an error.
    pub fn with_keys(mut self, keys: keys::SharedKeys) -> PolicySet {
        self.host.keys = keys;
        self
    }

    /// The documents that did not load, and why.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// The loaded policies, autogen variants omitted.
    pub fn policies(&self) -> impl Iterator<Item = &CompiledPolicy> {
        self.policies.iter().filter(|p| p.autogen.is_none())
    }

    /// The longest `webhookConfiguration.timeoutSeconds` among the policies.
    pub fn max_timeout_seconds(&self) -> u32 {
        self.policies
            .iter()
            .map(|p| p.spec.timeout_seconds())
            .max()
            .unwrap_or(crate::policy::spec::DEFAULT_TIMEOUT_SECONDS)
    }

    /// Evaluates one AdmissionRequest (the JSON of `AdmissionReview.request`).
    pub fn admit(
        &self,
        phase: Phase,
        scope: &Scope,
        names: &[String],
        request: &str,
        namespace_object: Option<&str>,
        transport: Arc<dyn Transport + Send + Sync>,
    ) -> Result<Verdict, InputError> {
        let req = Request::parse(request)?;
        let lookup = |_: &str| namespace_object.map(str::to_string);
        let route = Route {
            phase,
            namespaced: matches!(scope, Scope::Namespaced(_)),
            names: names.to_vec(),
            trapped: Vec::new(),
        };
        Ok(self.admit_request(&route, scope, &req, &lookup, transport)?)
    }

    /// [`PolicySet::admit`] on a parsed request; `namespace_object` is
    /// asked for the request's namespace only when a policy in scope
    /// needs its labels or object.
    pub(crate) fn admit_request(
        &self,
        route: &Route,
        scope: &Scope,
        req: &Request,
        namespace_object: &dyn Fn(&str) -> Option<String>,
        transport: Arc<dyn Transport + Send + Sync>,
    ) -> Result<Verdict, NamespaceError> {
        let (phase, names) = (route.phase, route.names.as_slice());
        let named = Named::new(names);
        let (trapped, candidates): (Vec<&CompiledPolicy>, Vec<&CompiledPolicy>) = self
            .admitted(scope, &named)
            .partition(|p| route.trapped.iter().any(|t| t.name == p.name));
        let namespace = match candidates.iter().any(|p| p.needs_namespace()) {
            true => parse_namespace(namespace_object(&req.namespace).as_deref(), &req.namespace)?,
            false => NamespaceInfo::unread(),
        };
        let (transport, budget) = budgeted(transport);
        let verdict = match phase {
            Phase::Validate => validate(
                &candidates,
                req,
                &namespace,
                transport,
                &budget,
                &self.host,
                &self.resources,
            ),
            Phase::Mutate => {
                mutate::mutate(&candidates, req, &namespace, transport, &self.resources)
            }
        };
        // In both phases: a mutation a broken policy might have refused is
        // not made either.
        let mut broken =
            rejected::results(&self.rejected, scope, &named, self.unknown(scope, names));
        broken.extend(trapped_results(&trapped, &route.trapped));
        Ok(match broken.is_empty() {
            true => verdict,
            false => {
                let mut results = verdict.results;
                results.extend(broken);
                results::verdict(results, verdict.patch)
            }
        })
    }

    /// The admission policies a route on `scope` naming `named` reaches.
    fn admitted<'a>(
        &'a self,
        scope: &'a Scope,
        named: &'a Named<'a>,
    ) -> impl Iterator<Item = &'a CompiledPolicy> + 'a {
        self.policies.iter().filter(move |p| {
            in_scope(p, scope, named) && p.spec.admission_enabled() && !p.spec.json_mode()
        })
    }

    /// The verdict when a request on `route` could not be judged (`cause`:
    /// a trap, the deadline, no instance): every admission policy in scope
    /// an `error` result as a trapped one is, and the rejected ones as
    /// always. Nothing is evaluated, so nothing here can trap again.
    pub(crate) fn failed(&self, route: &Route, scope: &Scope, cause: &str) -> Verdict {
        let named = Named::new(&route.names);
        let policies: Vec<&CompiledPolicy> = self.admitted(scope, &named).collect();
        let all: Vec<Trapped> = (policies.iter())
            .map(|p| Trapped {
                name: p.name.clone(),
                cause: cause.to_string(),
            })
            .collect();
        let mut results = rejected::results(
            &self.rejected,
            scope,
            &named,
            self.unknown(scope, &route.names),
        );
        results.extend(trapped_results(&policies, &all));
        results::verdict(results, None)
    }

    /// Whether a route on `scope` names a policy that is neither loaded
    /// nor rejected by name: one an unreadable document may have been.
    fn unknown(&self, scope: &Scope, names: &[String]) -> bool {
        names.iter().any(|n| !self.known.contains(scope, n))
    }

    /// The policies that did not load and deny in their scope.
    pub fn rejected(&self) -> &[rejected::Rejected] {
        &self.rejected
    }

    /// The validate phase on one resource outside admission (`ivpol apply`,
    /// `test`, `scan`): cluster policies and those of the resource's
    /// namespace, admission-disabled ones included; a background scan only
    /// runs policies with background evaluation enabled.
    pub fn evaluate(
        &self,
        resource: &str,
        operation: &str,
        namespace_object: Option<&str>,
        mode: Mode,
        transport: Arc<dyn Transport + Send + Sync>,
    ) -> Result<Verdict, InputError> {
        let request = crate::admission::synthetic::request(resource, operation)?;
        let req = Request::parse(&request)?;
        let namespace = parse_namespace(namespace_object, &req.namespace)?;
        let candidates: Vec<&CompiledPolicy> = self
            .policies
            .iter()
            .filter(|p| {
                let scoped = match p.kind {
                    PolicyKind::Cluster => true,
                    PolicyKind::Namespaced => p.namespace.as_deref() == Some(&req.namespace),
                };
                let enabled = match mode {
                    Mode::Cli => true,
                    Mode::Background => p.spec.background_enabled(),
                };
                scoped && enabled && !p.spec.json_mode()
            })
            .collect();
        let (transport, budget) = budgeted(transport);
        Ok(validate(
            &candidates,
            &req,
            &namespace,
            transport,
            &budget,
            &self.host,
            &self.resources,
        ))
    }

    /// Evaluates `evaluation.mode: JSON` policies against a payload.
    pub fn evaluate_json(
        &self,
        payload: &str,
        transport: Arc<dyn Transport + Send + Sync>,
    ) -> Result<Verdict, InputError> {
        let object: serde_json::Value =
            serde_json::from_str(payload).map_err(|e| InputError::PayloadNotJson(e.to_string()))?;
        let bindings = Bindings::builder().value("object", convert::to_cel(&object));
        let (transport, budget) = budgeted(transport);
        let mut collected = Collected::default();
        for p in self
            .policies
            .iter()
            .filter(|p| p.spec.json_mode() && p.autogen.is_none())
        {
            let log = verifier::DecisionLog::default();
            let input = Input {
                // Kyverno evaluates JSON payloads without its cache too.
                bindings: bindings_for(
                    p,
                    &bindings,
                    &transport,
                    &keys::HostServices {
                        cache: cache::none(),
                        keys: self.host.keys.clone(),
                    },
                    &collected.verifications,
                    &log,
                    self.resources.as_ref(),
                ),
                lists: &images::BuiltIn::new(),
            };
            let outcome = within_budget(&budget, || evaluate::evaluate(p, &input));
            collected.record(p, outcome, &log, |e| {
                format!("failed to evaluate policy for JSON: {e}")
            });
        }
        // Kyverno's JSON evaluator (`evaluator.Evaluate`) enforces `required`
        // too, after every policy has run.
        Ok(results::verdict(collected.finish(), None))
    }
}

/// Gives each policy (autogen variants included) the exceptions naming it.
fn attach_exceptions(loaded: &mut policy::LoadedSet) {
    let exceptions: Vec<Arc<policy::exception::CompiledException>> =
        loaded.exceptions.drain(..).map(Arc::new).collect();
    for p in &mut loaded.policies {
        p.exceptions = exceptions
            .iter()
            .filter(|e| e.refers_to(&p.name, p.kind, p.namespace.as_deref()))
            .cloned()
            .collect();
        p.reads_namespace_object |= p.exceptions.iter().any(|e| {
            e.match_conditions
                .iter()
                .any(|(_, c)| c.reads(policy::NAMESPACE_OBJECT))
        });
    }
}

ivpol_verify::debug_as_display!(InputError);
/// Why a request, a resource or a payload given to the engine outside
/// admission cannot be judged.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// The AdmissionRequest does not read.
    #[error(transparent)]
    Request(#[from] RequestError),
    /// The resource a request is made for does not read.
    #[error(transparent)]
    Resource(#[from] crate::admission::synthetic::ResourceError),
    /// The namespace object does not read.
    #[error(transparent)]
    Namespace(#[from] NamespaceError),
    /// A JSON-mode payload that is not JSON.
    #[error("payload is not valid JSON: {0}")]
    PayloadNotJson(String),
}

/// The policy names a route selects (Kyverno's `MatchNames`); none
/// selects every policy. A few are looked through in place; more make a
/// set, so that checking each policy (autogen variants included) is one
/// lookup however many names the route holds.
enum Named<'a> {
    Few(&'a [String]),
    Many(FastSet<&'a str>),
}

/// The most names looked through one by one: building a set (an
/// allocation and a seeded hasher) cost more than it saved for a route of
/// one or two names, at every request.
const FEW_NAMES: usize = 8;

impl<'a> Named<'a> {
    fn new(names: &'a [String]) -> Named<'a> {
        match names.len() <= FEW_NAMES {
            true => Named::Few(names),
            false => Named::Many(names.iter().map(String::as_str).collect()),
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Named::Few(names) => names.is_empty(),
            Named::Many(set) => set.is_empty(),
        }
    }

    fn admits(&self, name: &str) -> bool {
        match self {
            Named::Few(names) => names.is_empty() || names.iter().any(|n| n == name),
            Named::Many(set) => set.contains(name),
        }
    }
}

/// URL names (`MatchNames`) plus `ClusteredPolicy()` / `NamespacedPolicy(ns)`.
fn in_scope(p: &CompiledPolicy, scope: &Scope, named: &Named<'_>) -> bool {
    in_scope_of(&p.name, p.kind, p.namespace.as_deref(), scope, named)
}

/// [`in_scope`] for a policy known by name, kind and namespace.
fn in_scope_of(
    name: &str,
    kind: PolicyKind,
    namespace: Option<&str>,
    scope: &Scope,
    named: &Named<'_>,
) -> bool {
    let scoped = match scope {
        Scope::Cluster => kind == PolicyKind::Cluster,
        Scope::Namespaced(ns) => kind == PolicyKind::Namespaced && namespace == Some(ns.as_str()),
    };
    scoped && named.admits(name)
}

/// matchConstraints against the request. A selector error is an error
/// result, and so is a matching policy that reads `namespaceObject` in a
/// namespace the host does not know: judged against `null`, it could pass
/// what the real namespace would deny.
fn constraints_match(
    p: &CompiledPolicy,
    req: &Request,
    ns: &NamespaceInfo,
    input: &MatchInput,
) -> Result<bool, PolicyError> {
    let matched = p.match_constraints.matches(input)?;
    if matched && p.reads_namespace_object && ns.unknown && !req.is_namespace_object() {
        return Err(PolicyError::NamespaceObjectUnknown(req.namespace.clone()));
    }
    Ok(matched)
}

/// What matchConstraints read of the request, made once for all of its
/// policies (its attributes and the labels, copied out of the objects).
fn match_input(req: &Request, ns: &NamespaceInfo) -> MatchInput {
    MatchInput {
        attrs: req.attrs(),
        request_attrs: req.request_attrs(),
        namespace_labels: ns.labels.clone(),
        object_labels: req.object.labels().cloned(),
        old_object_labels: req.old_object.labels().cloned(),
        is_namespace_object: req.is_namespace_object(),
    }
}

/// The Kubernetes-mode variables: `object`, `oldObject`, `request`,
/// `namespaceObject`, and the `image` and `resource` handles.
fn admission_bindings(req: &Request, ns: &NamespaceInfo) -> BindingsBuilder {
    Bindings::builder()
        .shared(policy::RESOURCE, resource_lib::context())
        .json("object", json_of(&req.object))
        .json("oldObject", json_of(&req.old_object))
        .json("request", JsonSource::Deferred(request_text(req)))
        .value("namespaceObject", convert::to_cel(&ns.object))
        .shared("image", crate::cel::image_data::context())
}

/// The request's text for CEL, cut from its review only if an expression
/// reads `request`.
fn request_text(req: &Request) -> Box<dyn Fn() -> Arc<str> + Send + Sync> {
    let text = req.raw().clone();
    Box::new(move || text.get())
}

/// An object for CEL, converted if an expression reads it: from its text,
/// or `null`.
fn json_of(object: &Object) -> JsonSource {
    match object.text() {
        Some(text) => JsonSource::Text(text.clone()),
        None => JsonSource::Value(Arc::new(serde_json::Value::Null)),
    }
}

/// One policy's bindings: its lazy `variables`, and image data and
/// verification through the registry with its own credentials. What
/// verifies is recorded in `verifications` for `required`, and what each
/// attestor concluded in `log`, for the policy's result.
fn bindings_for(
    p: &CompiledPolicy,
    builder: &BindingsBuilder,
    transport: &SharedTransport,
    host: &keys::HostServices,
    verifications: &verifier::SharedVerifications,
    log: &verifier::DecisionLog,
    resources: Option<&Arc<dyn ResourceSource>>,
) -> Bindings {
    let transport = policy_transport(p, transport);
    let source = image_data::RegistryImageData::new(transport.clone());
    let base = builder
        .clone()
        .image_data(Arc::new(source))
        .resources(resources.map(|source| resource_lib::Scoped {
            source: source.clone(),
            namespace: p.namespace.clone(),
        }))
        .variables(p.variables.clone());
    let verifier = verifier::PolicyVerifier::new(
        verifier::VerifierPolicy::shared(p),
        base.clone(),
        transport,
        host.clone(),
        verifications.clone(),
        log.clone(),
    );
    base.verifier(Arc::new(verifier)).build()
}

type SharedTransport = Arc<dyn Transport + Send + Sync>;

/// `transport`, charged to a fresh registry data budget for one call.
fn budgeted(transport: SharedTransport) -> (SharedTransport, Arc<Budget>) {
    let budgeted = Budgeted::new(
        transport,
        MAX_REGISTRY_BYTES_PER_EVALUATION,
        MAX_PARSED_VALUES_PER_EVALUATION,
    );
    let budget = budgeted.budget.clone();
    (Arc::new(budgeted), budget)
}

/// Runs one policy's evaluation; if it ran out of the registry data budget
/// the outcome is an error whatever the expressions made of the failed
/// fetch (a verification that could not be read is neither a pass nor a
/// mere failure to verify), so the policy fails closed and names the cause.
fn within_budget(budget: &Budget, evaluate: impl FnOnce() -> Outcome) -> Outcome {
    let before = budget.refusals();
    let outcome = evaluate();
    if budget.refusals() == before {
        return outcome;
    }
    Outcome::Error(PolicyError::Evaluation(Cause::Budget(
        budget.exceeded_message(),
    )))
}

/// The transport for `p`: with its `credentials.secrets`, and the
/// namespace of a namespaced policy, named to the host.
fn policy_transport(p: &CompiledPolicy, transport: &SharedTransport) -> SharedTransport {
    let secrets = p.registry_secrets();
    let tenant = p.tenant();
    match secrets.is_empty() && tenant.is_none() {
        false => Arc::new(crate::oci::transport::WithSecrets {
            inner: transport.clone(),
            secrets: secrets.into(),
            tenant: tenant.map(Arc::from),
        }),
        true => transport.clone(),
    }
}

/// One `error` result per policy that trapped the component on this
/// request (its autogen variants share its name and its result).
fn trapped_results(policies: &[&CompiledPolicy], trapped: &[Trapped]) -> Vec<PolicyResult> {
    let mut seen = Judged::default();
    let mut out = Vec::new();
    for &p in policies {
        if seen.contains(p) {
            continue;
        }
        seen.insert(p);
        let cause = trapped.iter().find(|t| t.name == p.name);
        let cause = cause.map_or("", |t| t.cause.as_str());
        out.push(result(
            p,
            Status::Error,
            format!("internal error: {cause}"),
            vec![],
        ));
    }
    out
}

fn result(
    p: &CompiledPolicy,
    status: Status,
    message: String,
    annotations: Vec<(String, String)>,
) -> PolicyResult {
    PolicyResult {
        policy: p.name.clone(),
        namespace: p.namespace.clone(),
        status,
        message,
        actions: p.actions.clone(),
        audit_annotations: annotations,
        exceptions: vec![],
        verifications: vec![],
        background: p.spec.background_enabled(),
        report: p.report.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::Named;

    #[test]
    fn a_route_admits_the_policies_it_names_few_or_many() {
        let few: Vec<String> = vec!["a".into(), "b".into()];
        let many: Vec<String> = (0..3 * super::FEW_NAMES).map(|i| format!("p{i}")).collect();
        for names in [&few[..], &many[..]] {
            let named = Named::new(names);
            assert!(!named.is_empty());
            assert!(names.iter().all(|n| named.admits(n)));
            assert!(!named.admits("other") && !named.admits(""));
        }
        let none = Named::new(&[]);
        assert!(none.is_empty() && none.admits("anything"));
    }
}
