//! A policy compiled for evaluation: CEL programs built once per policy set.

use super::attestor::{AttestorKind, CompiledAttestor, CompiledCosign, CompiledNotary};
use super::spec::{NamedExpression, Spec};
use crate::cel::all_signed::AllSigned;
use crate::cel::{self, Expression, Shared};
use crate::images::glob::Glob;
use crate::matching::MatchResources;
use std::sync::{Arc, OnceLock};

/// Which of the two IVP kinds a policy is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyKind {
    /// ImageValidatingPolicy
    Cluster,
    /// NamespacedImageValidatingPolicy
    Namespaced,
}

impl PolicyKind {
    /// The kind's name, as in a document's `kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyKind::Cluster => "ImageValidatingPolicy",
            PolicyKind::Namespaced => "NamespacedImageValidatingPolicy",
        }
    }
}

/// One entry of `matchImageReferences`.
#[derive(Debug, Clone)]
pub enum ImageMatcher {
    /// `glob`: the reference must match the glob.
    Glob(Glob),
    /// CEL over `ref`, returning bool.
    Expression(Expression),
}

/// One of `spec.validations`, compiled.
#[derive(Debug, Clone)]
pub struct CompiledValidation {
    /// `expression`: must return a bool; `false` fails the policy.
    pub expression: Expression,
    /// The expression, when it is the idiomatic all-images-signed check
    /// over attestors the policy has, run without the interpreter.
    pub all_signed: Option<AllSigned>,
    /// `message`: the failure message when `expression` is false.
    pub message: Option<String>,
    /// `messageExpression`: computes the failure message instead of `message`.
    pub message_expression: Option<Expression>,
}

/// A loaded policy (or one of its autogen variants) with every expression
/// compiled.
#[derive(Debug, Clone)]
pub struct CompiledPolicy {
    /// `metadata.name`, shared by the policy's autogen variants.
    pub name: String,
    /// The namespace of a NamespacedImageValidatingPolicy; `None` for a cluster
    /// one.
    pub namespace: Option<String>,
    /// Whether the policy is cluster-wide or namespaced.
    pub kind: PolicyKind,
    /// `None` for the policy itself, `defaults` or `cronjobs` for autogen variants.
    pub autogen: Option<String>,
    /// The `spec` as loaded; for an autogen variant, rewritten for its
    /// controllers.
    pub spec: Spec,
    /// `spec.matchConstraints`; empty in JSON mode, which never matches
    /// requests.
    pub match_constraints: MatchResources,
    /// `spec.matchConditions` as name and compiled expression.
    pub match_conditions: Vec<(String, Expression)>,
    /// `spec.variables` as name and compiled expression.
    pub variables: Arc<Vec<(String, Expression)>>,
    /// Shared with each evaluation's verifier, which checks images against them.
    pub image_matchers: Arc<Vec<ImageMatcher>>,
    /// `spec.attestors`, compiled; shared with each evaluation's verifier.
    pub attestors: Arc<Vec<CompiledAttestor>>,
    /// `spec.images` as extractor name and compiled expression.
    pub images: Vec<(String, Expression)>,
    /// `spec.validations`, compiled, in order.
    pub validations: Vec<CompiledValidation>,
    /// `spec.auditAnnotations` as key and compiled value expression.
    pub audit_annotations: Vec<(String, Expression)>,
    /// `spec.validationActions`, defaulted to `[Deny]`.
    pub actions: Vec<String>,
    /// SHA-256 of the whole document as loaded, shared by its autogen
    /// variants: verification cache keys bind it, so any edit misses.
    pub content_hash: String,
    /// The PolicyExceptions that name this policy (attached by the engine).
    pub exceptions: Vec<Arc<super::exception::CompiledException>>,
    /// Some expression of the policy (or of an exception naming it) names
    /// `namespaceObject`: it cannot be judged in a namespace whose object
    /// is not known.
    pub reads_namespace_object: bool,
    /// The field path of the first expression that uses the `resource`
    /// library (cluster objects), if any.
    pub reads_resources: Option<String>,
    /// `attestors` and `attestations` as bound to expressions: the same
    /// for every request, so made on first use and then shared.
    pub image_variables: OnceLock<ImageVariables>,
    /// What the engine keeps of this policy across requests (its
    /// verifier's fixed parts and the cache-key prefixes of its fixed
    /// attestors), made on first use; the engine owns the type.
    pub engine_state: OnceLock<Arc<dyn std::any::Any + Send + Sync>>,
    /// What its report results carry from its metadata (set by the loader).
    pub report: super::ReportMeta,
}

/// A policy's `attestors` and `attestations` variables.
#[derive(Debug, Clone)]
pub struct ImageVariables {
    /// `attestors`: each attestor's name to its `{name, type}`; `None` when it
    /// has no CEL form.
    pub attestors: Option<Shared>,
    /// `attestations`: each attestation's name to itself; `None` when it has no
    /// CEL form.
    pub attestations: Option<Shared>,
}

impl CompiledPolicy {
    /// Whether `action` (`Deny`, `Audit` or `Warn`) is among the policy's
    /// validation actions.
    pub fn has_action(&self, action: &str) -> bool {
        self.actions.iter().any(|a| a == action)
    }

    /// Whether judging a request needs its Namespace: a namespaceSelector
    /// reads its labels, an expression its object. Only then is the host
    /// asked for it.
    pub fn needs_namespace(&self) -> bool {
        self.reads_namespace_object || self.match_constraints.namespace_selector.is_some()
    }

    /// The namespace whose tenant the policy's registry requests are for:
    /// a namespaced policy's own; none for a cluster policy (the
    /// operator's, which may use the host's own registry credentials).
    pub fn tenant(&self) -> Option<&str> {
        match self.kind {
            PolicyKind::Namespaced => self.namespace.as_deref(),
            PolicyKind::Cluster => None,
        }
    }

    /// `credentials.secrets` as named to the host: `<name>` for a cluster
    /// policy (ivpol's own namespace, as Kyverno reads them), and
    /// `<namespace>/<name>` for a namespaced one, which may only use the
    /// Secrets of its own namespace. A Kubernetes name holds no `/`, so
    /// the two cannot be confused.
    pub fn registry_secrets(&self) -> Vec<String> {
        let names = self.spec.credentials.iter().flat_map(|c| &c.secrets);
        let secrets: Vec<String> = match (&self.kind, &self.namespace) {
            (PolicyKind::Namespaced, Some(ns)) => names.map(|n| format!("{ns}/{n}")).collect(),
            _ => names.cloned().collect(),
        };
        // A provider is a credential source the host holds, named beside the
        // Secrets so that it reaches the host (and the cache key's scope) the
        // same way; `provider:` cannot begin a Secret's name.
        let providers = (self.spec.credentials.iter())
            .flat_map(|c| &c.providers)
            .filter(|p| p.as_str() != "default")
            .map(|p| format!("{PROVIDER_PREFIX}{p}"));
        secrets.into_iter().chain(providers).collect()
    }

    /// The `cosign.key.kms` URIs of the policy's attestors, for the host
    /// to fetch when the policy loads.
    pub fn kms_keys(&self) -> Vec<String> {
        let attestors = self.spec.attestors.iter().flatten();
        let keys = attestors.filter_map(|a| a.cosign.as_ref()?.key.as_ref()?.kms.clone());
        let mut keys: Vec<String> = keys.collect();
        ivpol_refs::sort::sort(&mut keys);
        keys.dedup();
        keys
    }
}

/// How `registry_secrets` names a `credentials.providers` entry.
const PROVIDER_PREFIX: &str = "provider:";

/// Compiles every expression of `spec`; errors carry field paths.
pub(super) fn compile_policy(
    name: &str,
    namespace: Option<String>,
    kind: PolicyKind,
    spec: Spec,
    autogen: Option<String>,
) -> Result<CompiledPolicy, Vec<String>> {
    let mut c = Collector::default();
    // First: the other expressions see each variable's type.
    let variables = c.variables(&spec.variables);
    let match_conditions = c.named(
        "matchConditions",
        &spec.match_conditions,
        Some(Output::Bool),
    );
    let images = c.named("images", &spec.images, None);
    let mut image_matchers = Vec::new();
    for (i, r) in spec.match_image_references.iter().enumerate() {
        if let Some(g) = &r.glob {
            match Glob::compile(g) {
                Ok(g) => image_matchers.push(ImageMatcher::Glob(g)),
                Err(e) => c
                    .errors
                    .push(format!("spec.matchImageReferences[{i}].glob: {e}")),
            }
        } else if let Some(src) = &r.expression {
            let path = format!("spec.matchImageReferences[{i}].expression");
            if let Some(e) = c.typed(path, src, Output::Bool) {
                image_matchers.push(ImageMatcher::Expression(e));
            }
        }
    }
    let attestors = spec
        .attestors
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, a)| CompiledAttestor {
            name: a.name.clone(),
            fixed_fingerprint: std::sync::OnceLock::new(),
            kind: match (&a.cosign, &a.notary) {
                (Some(cosign), _) => AttestorKind::Cosign(Box::new(CompiledCosign::compile(
                    cosign,
                    &format!("spec.attestors[{i}].cosign"),
                    |path, src| c.expr(path, src),
                ))),
                (None, notary) => AttestorKind::Notary(CompiledNotary::compile(
                    &notary.clone().unwrap_or_default(),
                    &format!("spec.attestors[{i}].notary"),
                    |path, src| c.expr(path, src),
                )),
            },
        })
        .collect();
    let mut validations = Vec::new();
    for (i, v) in spec.validations.iter().flatten().enumerate() {
        let path = format!("spec.validations[{i}].expression");
        let expression = c.typed(path, &v.expression, Output::Bool);
        let message_expression = v.message_expression.as_ref().and_then(|m| {
            let path = format!("spec.validations[{i}].messageExpression");
            c.typed(path, m, Output::String)
        });
        if let Some(expression) = expression {
            let all_signed = AllSigned::recognise(&expression.source).filter(|shape| {
                let known =
                    |name: &String| spec.attestors.iter().flatten().any(|a| &a.name == name);
                shape.attestors.iter().all(known)
            });
            validations.push(CompiledValidation {
                expression,
                all_signed,
                message: v.message.clone(),
                message_expression,
            });
        }
    }
    let mut audit_annotations = Vec::new();
    for (i, a) in spec.audit_annotations.iter().enumerate() {
        let path = format!("spec.auditAnnotations[{i}].valueExpression");
        if let Some(e) = c.typed(path, &a.value_expression, Output::StringOrNull) {
            audit_annotations.push((a.key.clone(), e));
        }
    }
    if !c.errors.is_empty() {
        return Err(c.errors);
    }
    let match_constraints = match spec.match_constraints.clone() {
        Some(mc) => mc,
        // Never consulted: JSON-mode policies are not matched against requests.
        None if spec.json_mode() => MatchResources::default(),
        None => return Err(vec!["spec.matchConstraints: Required value".into()]),
    };
    let actions = if spec.validation_actions.is_empty() {
        vec!["Deny".to_string()]
    } else {
        spec.validation_actions.clone()
    };
    Ok(CompiledPolicy {
        name: name.to_string(),
        namespace,
        kind,
        autogen,
        match_constraints,
        match_conditions,
        variables: Arc::new(variables),
        image_matchers: Arc::new(image_matchers),
        attestors: Arc::new(attestors),
        images,
        validations,
        content_hash: String::new(),
        exceptions: Vec::new(),
        audit_annotations,
        actions,
        spec,
        reads_namespace_object: c.reads_namespace_object,
        reads_resources: c.reads_resources,
        image_variables: OnceLock::new(),
        engine_state: OnceLock::new(),
        report: Default::default(),
    })
}

/// The variable holding the request's Namespace object.
pub const NAMESPACE_OBJECT: &str = "namespaceObject";

/// The variable the `resource` library is called on.
pub const RESOURCE: &str = "resource";

/// The type an expression's field requires.
#[derive(Debug, Clone, Copy)]
enum Output {
    /// Conditions and validations.
    Bool,
    /// Messages.
    String,
    /// Audit annotation values (null leaves the annotation out).
    StringOrNull,
}

impl Output {
    fn accepts(self, t: &cel::check::Ty) -> bool {
        use cel::check::Ty;
        match self {
            Output::Bool => *t == Ty::Bool,
            Output::String => *t == Ty::String,
            Output::StringOrNull => matches!(t, Ty::String | Ty::Null),
        }
    }

    /// Kyverno's words for it.
    fn wording(self) -> &'static str {
        match self {
            Output::Bool => "of type bool",
            Output::String => "of type string",
            Output::StringOrNull => "either of type string or null_type",
        }
    }
}

/// Compiles expressions, collecting every error with its field path.
#[derive(Default)]
struct Collector {
    errors: Vec<String>,
    reads_namespace_object: bool,
    reads_resources: Option<String>,
    /// The policy's variables' types, which the other expressions see.
    variables: cel::check::Variables,
}

impl Collector {
    fn expr(&mut self, path: String, source: &str) -> Option<Expression> {
        match cel::compile(source) {
            Ok(e) => {
                self.reads_namespace_object |= e.reads(NAMESPACE_OBJECT);
                if e.reads(RESOURCE) && self.reads_resources.is_none() {
                    self.reads_resources = Some(path);
                }
                Some(e)
            }
            Err(e) => {
                self.errors.push(format!("{path}: {e}"));
                None
            }
        }
    }

    /// Compiles the policy's variables and declares each with its
    /// expression's type, in order (a variable sees those before it), as
    /// Kyverno's variables provider does.
    fn variables(&mut self, variables: &[NamedExpression]) -> Vec<(String, Expression)> {
        let compiled = self.named("variables", variables, None);
        for (name, e) in &compiled {
            let t = e
                .output_type_with(&self.variables)
                .unwrap_or(cel::check::Ty::Dyn);
            self.variables.insert(name.clone(), t);
        }
        compiled
    }

    /// Compiles `source` and refuses an output type that is not exactly
    /// `want`, with Kyverno's diagnostic (`pkg/cel/compiler`: cel-go's
    /// `IsExactType`, so `dyn` is refused too).
    fn typed(&mut self, path: String, source: &str, want: Output) -> Option<Expression> {
        let e = self.expr(path.clone(), source)?;
        let got = match e.output_type_with(&self.variables) {
            Ok(t) => t,
            Err(why) => {
                self.errors
                    .push(format!("{path}: expression `{source}`: {why}"));
                return None;
            }
        };
        if want.accepts(&got) {
            return Some(e);
        }
        self.errors.push(format!(
            "{path}: Invalid value: {source:?}: output is expected to be {}",
            want.wording()
        ));
        None
    }

    fn named(
        &mut self,
        field: &str,
        list: &[NamedExpression],
        want: Option<Output>,
    ) -> Vec<(String, Expression)> {
        let mut out = Vec::new();
        for (i, item) in list.iter().enumerate() {
            let path = format!("spec.{field}[{i}].expression");
            let compiled = match want {
                Some(want) => self.typed(path, &item.expression, want),
                None => self.expr(path, &item.expression),
            };
            if let Some(e) = compiled {
                out.push((item.name.clone(), e));
            }
        }
        out
    }
}
