//! Evaluation of one policy against one object (`compiledPolicy.Evaluate`,
//! Kyverno's
//! `compiledPolicy.Evaluate`): matchConditions, images, verifyDigest, validations and
//! audit annotations.

use super::images::{self, PolicyImages};
use super::policy_error::{Cause, ConditionError, PolicyError};
use crate::cel::{all_signed, convert, Bindings, EvalError, Expression, Shared};
use crate::images::reference;
use crate::policy::exception::ReportAs;
use crate::policy::{CompiledPolicy, CompiledValidation, ImageVariables};
use cel::Value;

/// The outcome of one policy's evaluation, before result mapping.
pub(super) enum Outcome {
    /// matchConditions were false (or errored under Ignore): no result at all.
    NotMatched,
    Pass {
        annotations: Vec<(String, String)>,
        matched: Vec<String>,
    },
    Fail {
        message: String,
        annotations: Vec<(String, String)>,
    },
    Error(PolicyError),
    /// A PolicyException exempts the request: Kyverno's `skip` (or `pass`
    /// under `reportResult: pass`), naming the exceptions.
    Excepted {
        keys: Vec<String>,
        report_as: ReportAs,
    },
}

/// What a policy is evaluated against.
pub(super) struct Input<'a> {
    pub bindings: Bindings,
    /// The object's built-in image lists (chosen by the request's
    /// resource), extracted once for all of a request's policies; none in
    /// JSON mode.
    pub lists: &'a images::BuiltIn<'a>,
}

pub(super) fn evaluate(policy: &CompiledPolicy, input: &Input) -> Outcome {
    let failed = |cause: Cause| Outcome::Error(PolicyError::Evaluation(cause));
    match match_conditions(policy, &input.bindings) {
        Ok(true) => {}
        Ok(false) => return Outcome::NotMatched,
        Err(e) => return failed(e),
    }
    match exceptions(policy, &input.bindings) {
        Ok(None) => {}
        Ok(Some(excepted)) => return excepted,
        Err(e) => return failed(e),
    }
    let imgs = match images::collect(policy, input.lists, &input.bindings) {
        // Shared with the `images` variable, which is made only if read.
        Ok(i) => std::sync::Arc::new(i),
        Err(e) => return failed(e.into()),
    };
    if policy.spec.verify_digest() {
        for img in &imgs.matched {
            match reference::parse(img) {
                Ok(r) if r.contains_digest() => {}
                Ok(_) => {
                    return Outcome::Fail {
                        message: format!("image {img} does not have a digest"),
                        annotations: vec![],
                    }
                }
                // `checkDigests` returns the parse error, which Kyverno reports
                // as an evaluation error, not as a missing digest.
                Err(e) => {
                    return failed(Cause::ImageReference {
                        image: img.clone(),
                        detail: e.to_string(),
                    })
                }
            }
        }
    }
    let bindings = with_image_variables(policy, &input.bindings, &imgs);
    validations(policy, &bindings, &imgs)
}

/// All matchConditions true. An error counts as "not matched" under
/// `failurePolicy: Ignore` and is returned under Fail.
///
/// As in Kyverno's `compiledPolicy.match` (and the apiserver's VAP matcher),
/// a false condition wins over an erroring one, whatever their order: errors
/// are collected, and only reported when no condition was false. They are
/// joined with "; " as `multierr.Combine` does.
pub(super) fn match_conditions(
    policy: &CompiledPolicy,
    bindings: &Bindings,
) -> Result<bool, Cause> {
    conditions_hold(
        &policy.match_conditions,
        policy.spec.fail_closed(),
        bindings,
    )
}

/// The exceptions in force whose matchConditions all hold, as an
/// [`Outcome::Excepted`]; `None` when no exception applies. Their
/// conditions are evaluated as the policy's own are (Kyverno's
/// `compiledPolicy.Evaluate`), under the policy's failurePolicy, but see
/// only the request's data: an exception's author is not the policy's, and
/// gets none of its registry credentials, verifier or cluster objects.
pub(super) fn exceptions(
    policy: &CompiledPolicy,
    bindings: &Bindings,
) -> Result<Option<Outcome>, Cause> {
    // Most policies have none: skip the clock (a host call) for them.
    if policy.exceptions.is_empty() {
        return Ok(None);
    }
    let now = crate::verify::unix_now();
    let mut in_force = policy
        .exceptions
        .iter()
        .filter(|e| e.in_force(now))
        .peekable();
    if in_force.peek().is_none() {
        return Ok(None);
    }
    let data = bindings.data_only(crate::cel::DATA_VARIABLES);
    let mut matched = Vec::new();
    for e in in_force {
        let holds = conditions_hold(&e.match_conditions, policy.spec.fail_closed(), &data)
            .map_err(|err| Cause::Exception {
                key: e.key.clone(),
                source: Box::new(err),
            })?;
        if holds {
            matched.push(e);
        }
    }
    if matched.is_empty() {
        return Ok(None);
    }
    // Any exception reporting a skip makes the result a skip.
    let report_as = match matched.iter().all(|e| e.report_as == ReportAs::Pass) {
        true => ReportAs::Pass,
        false => ReportAs::Skip,
    };
    let keys = matched.iter().map(|e| e.key.clone()).collect();
    Ok(Some(Outcome::Excepted { keys, report_as }))
}

fn conditions_hold(
    conditions: &[(String, Expression)],
    fail_closed: bool,
    bindings: &Bindings,
) -> Result<bool, Cause> {
    let mut errors = Vec::new();
    for (name, cond) in conditions {
        match cond.eval(bindings) {
            Ok(Value::Bool(true)) => {}
            Ok(Value::Bool(false)) => return Ok(false),
            Ok(other) => errors.push(ConditionError::NotBool {
                name: name.clone(),
                expression: cond.source.clone(),
                got: convert::type_name(&other).to_string(),
            }),
            Err(source) => errors.push(ConditionError::Failed {
                name: name.clone(),
                source,
            }),
        }
    }
    // An expression cut off by the cost limit is an error even under
    // `failurePolicy: Ignore`: otherwise a large enough object would make
    // every policy it matches skip itself.
    let over_cost = errors.iter().any(ConditionError::over_cost);
    if errors.is_empty() {
        Ok(true)
    } else if !fail_closed && !over_cost {
        Ok(false)
    } else {
        Err(Cause::Conditions(errors))
    }
}

fn with_image_variables(
    policy: &CompiledPolicy,
    base: &Bindings,
    imgs: &std::sync::Arc<PolicyImages>,
) -> Bindings {
    let shared = policy
        .image_variables
        .get_or_init(|| image_variables(policy));
    let bound = [
        ("images", Some(Shared::deferred(images_value(imgs.clone())))),
        ("attestations", shared.attestations.clone()),
        ("attestors", shared.attestors.clone()),
    ];
    base.with_shared(bound.into_iter().filter_map(|(n, v)| Some((n, v?))))
}

/// The `images` variable's value, made when an expression reads it.
fn images_value(imgs: std::sync::Arc<PolicyImages>) -> impl Fn() -> Value + Send + Sync {
    move || imgs.to_cel()
}

/// The policy's `attestations` (name to name) and `attestors` (name to
/// `{name, type}`) maps.
fn image_variables(policy: &CompiledPolicy) -> ImageVariables {
    let attestations = convert::string_map(
        policy
            .spec
            .attestations
            .iter()
            .map(|a| (a.name.clone(), convert::string(a.name.clone()))),
    );
    let attestors = convert::string_map(policy.spec.attestors.iter().flatten().map(|a| {
        let kind = if a.cosign.is_some() {
            "cosign"
        } else {
            "notary"
        };
        let value = convert::string_map([
            ("name".to_string(), convert::string(a.name.clone())),
            ("type".to_string(), convert::string(kind)),
        ]);
        (a.name.clone(), value)
    }));
    ImageVariables {
        attestations: Shared::new(attestations),
        attestors: Shared::new(attestors),
    }
}

/// The validation's answer without the interpreter, when it is the
/// recognised all-signed check (`crate::cel::all_signed`) and its list is
/// there to run it on; `None` leaves it to the interpreter, which then
/// reports whatever is missing as it always has.
fn all_signed(
    v: &CompiledValidation,
    imgs: &PolicyImages,
    bindings: &Bindings,
) -> Option<Result<Value, EvalError>> {
    let shape = v.all_signed.as_ref()?;
    let images = imgs.by_name.get(&shape.list)?;
    if images.len() > all_signed::MAX_IMAGES {
        return None;
    }
    let verifier = bindings.verifier()?;
    Some(
        shape
            .eval(images, &**verifier)
            .map(Value::Bool)
            .map_err(EvalError::from),
    )
}

fn validations(policy: &CompiledPolicy, bindings: &Bindings, imgs: &PolicyImages) -> Outcome {
    for (index, v) in policy.validations.iter().enumerate() {
        let result = match all_signed(v, imgs, bindings) {
            Some(answer) => answer,
            None => v.expression.eval(bindings),
        };
        match result {
            Ok(Value::Bool(true)) => continue,
            Ok(Value::Bool(false)) => {
                let message = failure_message(
                    v.message.as_deref(),
                    v.message_expression.as_ref(),
                    bindings,
                    index,
                );
                return match audit_annotations(policy, bindings) {
                    Ok(annotations) => Outcome::Fail {
                        message,
                        annotations,
                    },
                    Err(e) => Outcome::Error(PolicyError::Evaluation(e)),
                };
            }
            // Kyverno: a non-bool output is `EvaluationResult{Error}`, reported
            // as `RuleError(name, "error", err)`, i.e. "error: <err>".
            Ok(other) => {
                return Outcome::Error(PolicyError::NotBool {
                    expression: v.expression.source.clone(),
                    got: convert::type_name(&other).to_string(),
                })
            }
            // Kyverno: a CEL runtime error is returned by `Evaluate`, reported
            // as `RuleError("evaluation", "failed to evaluate policy", err)`.
            Err(e) => return Outcome::Error(PolicyError::Evaluation(Cause::Validation(e))),
        }
    }
    match audit_annotations(policy, bindings) {
        Ok(annotations) => Outcome::Pass {
            annotations,
            matched: imgs.matched.clone(),
        },
        Err(e) => Outcome::Error(PolicyError::Evaluation(e)),
    }
}

/// `messageExpression` wins over `message`; an empty message becomes
/// Kyverno's `CEL expression validation failed at index <i>`.
fn failure_message(
    message: Option<&str>,
    expr: Option<&Expression>,
    bindings: &Bindings,
    index: usize,
) -> String {
    let text = match expr {
        Some(e) => match e.eval(bindings) {
            Ok(Value::String(s)) => s.to_string(),
            // Kyverno's wording for a result that is not a string.
            Ok(other) => format!(
                "failed to convert message expression to string: must evaluate to string, got {}",
                convert::type_name(&other)
            ),
            Err(err) => format!("failed to evaluate message expression: {err}"),
        },
        None => message.unwrap_or_default().to_string(),
    };
    if text.is_empty() {
        format!("CEL expression validation failed at index {index}")
    } else {
        text
    }
}

/// The audit annotations, empty values dropped. Errors carry Kyverno's
/// wording (`evaluateAuditAnnotations`); `Evaluate` returns them, so they are
/// reported as "failed to evaluate policy: ...".
fn audit_annotations(
    policy: &CompiledPolicy,
    bindings: &Bindings,
) -> Result<Vec<(String, String)>, Cause> {
    let mut out = Vec::new();
    for (key, expr) in &policy.audit_annotations {
        let value = expr
            .eval(bindings)
            .map_err(|source| Cause::AuditAnnotation {
                key: key.clone(),
                source,
            })?;
        match value {
            Value::String(s) if s.is_empty() => {}
            Value::String(s) => out.push((key.clone(), s.to_string())),
            Value::Null => {}
            other => {
                return Err(Cause::AuditAnnotationType {
                    key: key.clone(),
                    got: convert::type_name(&other).to_string(),
                })
            }
        }
    }
    Ok(out)
}
