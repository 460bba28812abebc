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

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Spec {
    pub match_constraints: Option<MatchResources>,
    pub failure_policy: Option<FailurePolicy>,
    #[serde(default)]
    pub audit_annotations: Vec<AuditAnnotation>,
    #[serde(default)]
    pub validation_actions: Vec<String>,
    #[serde(default)]
    pub match_conditions: Vec<NamedExpression>,
    #[serde(default)]
    pub variables: Vec<NamedExpression>,
    pub validation_configurations: Option<ValidationConfigurations>,
    #[serde(default)]
    pub match_image_references: Vec<MatchImageReference>,
    pub credentials: Option<Credentials>,
    #[serde(default)]
    pub images: Vec<NamedExpression>,
    /// Required by the CRD; `None` means the field was missing.
    pub attestors: Option<Vec<Attestor>>,
    #[serde(default)]
    pub attestations: Vec<Attestation>,
    /// Required by the CRD; `None` means the field was missing.
    pub validations: Option<Vec<Validation>>,
    pub webhook_configuration: Option<WebhookConfiguration>,
    pub evaluation: Option<Evaluation>,
    pub autogen: Option<Autogen>,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
pub enum FailurePolicy {
    Ignore,
    Fail,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuditAnnotation {
    pub key: String,
    pub value_expression: String,
}

/// `{name, expression}`: matchConditions, variables and images.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NamedExpression {
    pub name: String,
    pub expression: String,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ValidationConfigurations {
    pub mutate_digest: Option<bool>,
    pub verify_digest: Option<bool>,
    pub required: Option<bool>,
}

/// oneOf `glob` / `expression`; checked at load time.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MatchImageReference {
    pub glob: Option<String>,
    pub expression: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Credentials {
    #[serde(default)]
    pub allow_insecure_registry: bool,
    #[serde(default)]
    pub providers: Vec<String>,
    #[serde(default)]
    pub secrets: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Attestor {
    pub name: String,
    pub cosign: Option<super::attestor::Cosign>,
    pub notary: Option<super::attestor::Notary>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Attestation {
    pub name: String,
    pub intoto: Option<TypedAttestation>,
    pub referrer: Option<TypedAttestation>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TypedAttestation {
    #[serde(rename = "type")]
    pub kind: String,
}

/// `admissionregistration.k8s.io/v1` Validation; `reason` is refused at load
/// (`validate.rs`): Kyverno's IVP engine never reads it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Validation {
    pub expression: String,
    pub message: Option<String>,
    pub message_expression: Option<String>,
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebhookConfiguration {
    pub timeout_seconds: Option<i64>,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Evaluation {
    pub mode: Option<String>,
    pub admission: Option<Toggle>,
    pub background: Option<Toggle>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Toggle {
    pub enabled: Option<bool>,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Autogen {
    pub pod_controllers: Option<PodControllers>,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodControllers {
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

    pub fn mutate_digest(&self) -> bool {
        self.config().mutate_digest.unwrap_or(true)
    }

    pub fn verify_digest(&self) -> bool {
        self.config().verify_digest.unwrap_or(true)
    }

    pub fn required(&self) -> bool {
        self.config().required.unwrap_or(true)
    }

    /// `evaluation.mode`: only `JSON` differs from the default `Kubernetes`.
    pub fn json_mode(&self) -> bool {
        self.evaluation.as_ref().and_then(|e| e.mode.as_deref()) == Some("JSON")
    }

    pub fn admission_enabled(&self) -> bool {
        let toggle = self.evaluation.as_ref().and_then(|e| e.admission.as_ref());
        toggle.and_then(|t| t.enabled).unwrap_or(true)
    }

    pub fn background_enabled(&self) -> bool {
        let toggle = self.evaluation.as_ref().and_then(|e| e.background.as_ref());
        toggle.and_then(|t| t.enabled).unwrap_or(true)
    }

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
    pub name: Option<String>,
    pub namespace: Option<String>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}
