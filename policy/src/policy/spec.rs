//! The ImageValidatingPolicy `spec` as Kyverno's CRD defines it.
//!
//! Every struct denies unknown fields: a field we do not know is a load
//! diagnostic, never silently ignored. Defaults are applied by the accessors
//! on [`Spec`], not by serde, so that "unset" stays distinguishable.
//!
//! Kyverno's documentation: <https://kyverno.io/docs/policy-types/image-validating-policy>

use crate::matching::MatchResources;
use serde::Deserialize;
use std::collections::BTreeMap;

/// An IVP or NIVP `spec` as written, before any default is applied.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Spec {
    /// `spec.matchConstraints`: which requests (resources, operations,
    /// namespaces, objects) the policy applies to.
    pub match_constraints: Option<MatchResources>,
    /// `spec.failurePolicy`: the webhook's failure policy, which also decides
    /// what an erroring match condition means; unset means `Fail`.
    pub failure_policy: Option<FailurePolicy>,
    /// `spec.auditAnnotations`: CEL-computed values reported with the policy's
    /// result.
    #[serde(default)]
    pub audit_annotations: Vec<AuditAnnotation>,
    /// `spec.validationActions`: what a failure does (`Deny`, `Audit`, `Warn`);
    /// empty means `[Deny]`.
    #[serde(default)]
    pub validation_actions: Vec<String>,
    /// `spec.matchConditions`: CEL conditions that must all hold for the policy
    /// to apply.
    #[serde(default)]
    pub match_conditions: Vec<NamedExpression>,
    /// `spec.variables`: named CEL expressions, read lazily as
    /// `variables.<name>`.
    #[serde(default)]
    pub variables: Vec<NamedExpression>,
    /// `spec.validationConfigurations`: the `mutateDigest`, `verifyDigest` and
    /// `required` switches.
    pub validation_configurations: Option<ValidationConfigurations>,
    /// `spec.matchImageReferences`: which images the policy applies to; empty
    /// means all of them.
    #[serde(default)]
    pub match_image_references: Vec<MatchImageReference>,
    /// `spec.credentials`: how the policy authenticates to registries.
    pub credentials: Option<Credentials>,
    /// `spec.images`: extra CEL image extractors, read as `images.<name>`.
    #[serde(default)]
    pub images: Vec<NamedExpression>,
    /// Required by the CRD; `None` means the field was missing.
    pub attestors: Option<Vec<Attestor>>,
    /// `spec.attestations`: the in-toto or referrer attestations validations
    /// may verify, by name.
    #[serde(default)]
    pub attestations: Vec<Attestation>,
    /// Required by the CRD; `None` means the field was missing.
    pub validations: Option<Vec<Validation>>,
    /// `spec.webhookConfiguration`: the webhook's settings (its timeout).
    pub webhook_configuration: Option<WebhookConfiguration>,
    /// `spec.evaluation`: the evaluation mode and whether admission and
    /// background evaluation are on.
    pub evaluation: Option<Evaluation>,
    /// `spec.autogen`: which pod controllers get rules generated from the
    /// policy's pod rules.
    pub autogen: Option<Autogen>,
}

/// `spec.failurePolicy`: what a webhook failure or an erroring match condition
/// means.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
pub enum FailurePolicy {
    /// The API server admits the request when the webhook fails, and a match
    /// condition that errors (other than by running over the cost limit) does
    /// not match.
    Ignore,
    /// The API server rejects the request when the webhook fails, and a match
    /// condition that errors is an error (the default).
    Fail,
}

/// One of `spec.auditAnnotations`: a key and the CEL expression for its value.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuditAnnotation {
    /// `key`: the annotation's name.
    pub key: String,
    /// `valueExpression`: CEL returning the annotation's value as a string; an
    /// empty string drops it.
    pub value_expression: String,
}

/// `{name, expression}`: matchConditions, variables and images.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NamedExpression {
    /// `name`: the name the expression is known by.
    pub name: String,
    /// `expression`: the CEL source.
    pub expression: String,
}

/// `spec.validationConfigurations`: the digest and `required` switches, each
/// `true` when unset.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ValidationConfigurations {
    /// `mutateDigest`: whether the mutating webhook pins each matched image's
    /// tag to its digest.
    pub mutate_digest: Option<bool>,
    /// `verifyDigest`: whether every matched image must be referenced by
    /// digest.
    pub verify_digest: Option<bool>,
    /// `required`: whether every matched image must have passed a signature or
    /// attestation check by some policy in the same request.
    pub required: Option<bool>,
}

/// oneOf `glob` / `expression`; checked at load time.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MatchImageReference {
    /// `glob`: a glob over the image reference, in which `*` also matches `/`.
    pub glob: Option<String>,
    /// `expression`: CEL over the reference string `ref`, returning a bool.
    pub expression: Option<String>,
}

/// `spec.credentials`: registry authentication for the policy's images.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Credentials {
    /// `allowInsecureRegistry`: whether plain-HTTP registries are allowed;
    /// refused at load, since the host decides.
    #[serde(default)]
    pub allow_insecure_registry: bool,
    /// `providers`: cloud keychains to use; `default` and `github` are
    /// accepted (the host holds the credentials), the others refused.
    #[serde(default)]
    pub providers: Vec<String>,
    /// `secrets`: names of the registry secrets to authenticate with.
    #[serde(default)]
    pub secrets: Vec<String>,
}

/// One of `spec.attestors`: a named verifier, exactly one of `cosign` and
/// `notary`, read as `attestors.<name>`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Attestor {
    /// `name`: the name validations refer to the attestor by.
    pub name: String,
    /// `cosign`: verify with cosign.
    pub cosign: Option<super::attestor::Cosign>,
    /// `notary`: verify with Notary.
    pub notary: Option<super::attestor::Notary>,
}

/// One of `spec.attestations`: a named attestation, exactly one of `intoto`
/// and `referrer`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Attestation {
    /// `name`: the name validations refer to it by (`attestations.<name>` is
    /// this string).
    pub name: String,
    /// `intoto`: an in-toto attestation with this predicate type.
    pub intoto: Option<TypedAttestation>,
    /// `referrer`: an OCI 1.1 referrer with this artifact type.
    pub referrer: Option<TypedAttestation>,
}

/// The `{type}` of an attestation's `intoto` or `referrer`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TypedAttestation {
    /// `type`: the in-toto predicate type or the referrer's artifact type.
    #[serde(rename = "type")]
    pub kind: String,
}

/// `admissionregistration.k8s.io/v1` Validation; `reason` is refused at load
/// (`validate.rs`): Kyverno's IVP engine never reads it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Validation {
    /// `expression`: CEL that must return a bool; `false` fails the policy.
    pub expression: String,
    /// `message`: the failure message when `expression` is false.
    pub message: Option<String>,
    /// `messageExpression`: CEL computing the failure message, used instead of
    /// `message`.
    pub message_expression: Option<String>,
    /// `reason`: refused at load, since Kyverno's IVP engine never reads it.
    pub reason: Option<String>,
}

/// `spec.webhookConfiguration`: settings of the policy's webhook.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebhookConfiguration {
    /// `timeoutSeconds`: the webhook timeout, 1 to 30 seconds; unset means 10
    /// and setting it gives the policy its own webhook.
    pub timeout_seconds: Option<i64>,
}

/// `spec.evaluation`: how and when the policy is evaluated.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Evaluation {
    /// `mode`: `Kubernetes` (the default) for admission requests, or `JSON` for
    /// plain JSON payloads.
    pub mode: Option<String>,
    /// `admission`: whether the policy runs at admission (a webhook is
    /// registered for it).
    pub admission: Option<Toggle>,
    /// `background`: whether the policy runs in background scans.
    pub background: Option<Toggle>,
}

/// `{enabled}` of `evaluation.admission` and `evaluation.background`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Toggle {
    /// `enabled`: unset means `true`.
    pub enabled: Option<bool>,
}

/// `spec.autogen`: rules generated for pod controllers.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Autogen {
    /// `podControllers`: the controllers autogen covers.
    pub pod_controllers: Option<PodControllers>,
}

/// `spec.autogen.podControllers`: the controllers autogen covers.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodControllers {
    /// `controllers`: resource names such as `deployments`; unset means
    /// [`DEFAULT_POD_CONTROLLERS`].
    pub controllers: Option<Vec<String>>,
}

/// Kyverno's default webhook timeout (`DefaultWebhookTimeout`).
pub const DEFAULT_TIMEOUT_SECONDS: u32 = 10;

/// Pod controllers autogen covers when `autogen.podControllers` is unset.
pub const DEFAULT_POD_CONTROLLERS: [&str; 6] = [
    "daemonsets",
    "deployments",
    "replicasets",
    "statefulsets",
    "jobs",
    "cronjobs",
];

impl Spec {
    /// `failurePolicy`: unset means Fail.
    pub fn fail_closed(&self) -> bool {
        self.failure_policy != Some(FailurePolicy::Ignore)
    }

    fn config(&self) -> ValidationConfigurations {
        self.validation_configurations.clone().unwrap_or_default()
    }

    /// `validationConfigurations.mutateDigest`: unset means `true`.
    pub fn mutate_digest(&self) -> bool {
        self.config().mutate_digest.unwrap_or(true)
    }

    /// Whether the mutate phase pins this policy's images:
    /// `mutateDigest || verifyDigest`, the rule Kyverno's
    /// `ivpolsNeedingMutation` registers the mutating webhook by. Pinning
    /// is all the mutate phase does, and `verifyDigest` alone needs it:
    /// otherwise validate's digest check fails every tagged image.
    pub fn pins_at_mutate(&self) -> bool {
        self.mutate_digest() || self.verify_digest()
    }

    /// `validationConfigurations.verifyDigest`: unset means `true`.
    pub fn verify_digest(&self) -> bool {
        self.config().verify_digest.unwrap_or(true)
    }

    /// `validationConfigurations.required`: unset means `true`.
    pub fn required(&self) -> bool {
        self.config().required.unwrap_or(true)
    }

    /// `evaluation.mode`: only `JSON` differs from the default `Kubernetes`.
    pub fn json_mode(&self) -> bool {
        self.evaluation.as_ref().and_then(|e| e.mode.as_deref()) == Some("JSON")
    }

    /// `evaluation.admission.enabled`: unset means `true`.
    pub fn admission_enabled(&self) -> bool {
        let toggle = self.evaluation.as_ref().and_then(|e| e.admission.as_ref());
        toggle.and_then(|t| t.enabled).unwrap_or(true)
    }

    /// `evaluation.background.enabled`: unset means `true`.
    pub fn background_enabled(&self) -> bool {
        let toggle = self.evaluation.as_ref().and_then(|e| e.background.as_ref());
        toggle.and_then(|t| t.enabled).unwrap_or(true)
    }

    /// `webhookConfiguration.timeoutSeconds`, or [`DEFAULT_TIMEOUT_SECONDS`]
    /// when it is unset or negative.
    pub fn timeout_seconds(&self) -> u32 {
        self.webhook_configuration
            .as_ref()
            .and_then(|w| w.timeout_seconds)
            .and_then(|t| u32::try_from(t).ok())
            .unwrap_or(DEFAULT_TIMEOUT_SECONDS)
    }

    /// The pod controllers autogen generates rules for.
    pub fn pod_controllers(&self) -> Vec<String> {
        let configured = self
            .autogen
            .as_ref()
            .and_then(|a| a.pod_controllers.as_ref())
            .and_then(|p| p.controllers.clone());
        configured.unwrap_or_else(|| DEFAULT_POD_CONTROLLERS.map(String::from).to_vec())
    }
}

/// `metadata` of a policy: only what the engine reads; the rest of ObjectMeta is allowed.
#[derive(Debug, Clone, Deserialize, Default)]
pub struct Metadata {
    /// `metadata.name`.
    pub name: Option<String>,
    /// `metadata.namespace` as written; a NamespacedImageValidatingPolicy
    /// without one is in `default`.
    pub namespace: Option<String>,
    /// `metadata.annotations`.
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    /// `metadata.labels` (`reports.kyverno.io/disabled`).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}
