//! Why a policy's result for a request is `error`, in Kyverno's words,
//! as data: which expression failed, and how.

use super::images::ImagesError;
use crate::cel::EvalError;
use crate::matching::MatchError;

ivpol_verify::debug_as_display!(PolicyError);
/// A policy that could not be evaluated for a request.
#[derive(Clone, PartialEq, thiserror::Error)]
pub(crate) enum PolicyError {
    /// Kyverno's `RuleError("evaluation", "failed to evaluate policy", err)`.
    #[error("failed to evaluate policy: {0}")]
    Evaluation(Cause),
    /// A validation that returned another type than bool: Kyverno's
    /// `RuleError(name, "error", err)`.
    #[error("error: expression `{expression}` must return bool, got {got}")]
    NotBool {
        /// The validation's source.
        expression: String,
        /// The CEL type it returned.
        got: String,
    },
    /// `matchConstraints` could not be evaluated: a selector that is
    /// invalid or cannot be judged.
    #[error("failed to execute matching: {0}")]
    Matching(#[from] MatchError),
    /// A matching policy that reads `namespaceObject` in a namespace the
    /// host does not know (its name): judged against `null`, it could pass
    /// what the real namespace would deny.
    #[error("failed to execute matching: namespaceObject: namespace {0:?} is not known to ivpol")]
    NamespaceObjectUnknown(String),
}

ivpol_verify::debug_as_display!(Cause);
/// What went wrong under "failed to evaluate policy".
#[derive(Clone, PartialEq, thiserror::Error)]
pub(crate) enum Cause {
    /// matchConditions that erred, none being false (joined with `; ` as
    /// Go's `multierr.Combine` does).
    #[error("{}", join(.0))]
    Conditions(Vec<ConditionError>),
    /// A PolicyException's matchConditions erred.
    #[error("policy exception {key}: {source}")]
    Exception {
        /// The exception's `namespace/name`.
        key: String,
        /// Its conditions' errors.
        source: Box<Cause>,
    },
    /// The policy's images could not be collected.
    #[error(transparent)]
    Images(#[from] ImagesError),
    /// `verifyDigest` met a reference that does not parse.
    #[error("failed to parse image reference {image}: {detail}")]
    ImageReference {
        /// The image.
        image: String,
        /// Why it does not parse.
        detail: String,
    },
    /// A validation's runtime error.
    #[error(transparent)]
    Validation(EvalError),
    /// An audit annotation's runtime error.
    #[error("failed to evaluate auditAnnotation '{key}': {source}")]
    AuditAnnotation {
        /// The annotation's key.
        key: String,
        /// The error.
        source: EvalError,
    },
    /// An audit annotation that is not a string.
    #[error(
        "failed to convert auditAnnotation '{key}' expression: must evaluate to string, got {got}"
    )]
    AuditAnnotationType {
        /// The annotation's key.
        key: String,
        /// The CEL type it returned.
        got: String,
    },
    /// The evaluation ran out of the registry data budget (its message).
    #[error("{0}")]
    Budget(String),
}

ivpol_verify::debug_as_display!(ConditionError);
/// One matchCondition that erred.
#[derive(Clone, PartialEq, thiserror::Error)]
pub(crate) enum ConditionError {
    /// It returned another type than bool.
    #[error("matchCondition {name}: expression `{expression}` must return bool, got {got}")]
    NotBool {
        /// The condition's name.
        name: String,
        /// Its source.
        expression: String,
        /// The CEL type it returned.
        got: String,
    },
    /// It failed at runtime.
    #[error("matchCondition {name}: {source}")]
    Failed {
        /// The condition's name.
        name: String,
        /// The error.
        source: EvalError,
    },
}

impl ConditionError {
    /// Whether the condition was cut off by the cost limit.
    pub(crate) fn over_cost(&self) -> bool {
        matches!(
            self,
            ConditionError::Failed {
                source: EvalError::CostLimit(_),
                ..
            }
        )
    }
}

fn join(errors: &[ConditionError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}
