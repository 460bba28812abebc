//! Evaluation of one policy against one object (`compiledPolicy.Evaluate`,
//! reference §2.3): matchConditions, images, verifyDigest, validations and
//! audit annotations.

use super::images::{self, PolicyImages};
use crate::cel::{convert, Bindings, Expression};
use crate::images::reference;
use crate::policy::CompiledPolicy;
use cel::Value;

/// The outcome of one policy's evaluation, before result mapping.
pub enum Outcome {
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
    Error(String),
}

/// What a policy is evaluated against.
pub struct Input<'a> {
    pub bindings: Bindings,
    /// The request's resource (plural, lowercase) for the built-in image
    /// lists; `None` in JSON mode.
    pub resource: Option<&'a str>,
    pub object: &'a serde_json::Value,
}

pub fn evaluate(policy: &CompiledPolicy, input: &Input) -> Outcome {
    match match_conditions(policy, &input.bindings) {
        Ok(true) => {}
        Ok(false) => return Outcome::NotMatched,
        Err(e) => return Outcome::Error(format!("failed to evaluate policy: {e}")),
    }
    let imgs = match images::collect(policy, input.resource, input.object, &input.bindings) {
        Ok(i) => i,
        Err(e) => return Outcome::Error(format!("failed to evaluate policy: {e}")),
    };
    if policy.spec.verify_digest() {
        if let Some(img) = imgs.matched.iter().find(|i| !has_digest(i)) {
            return Outcome::Fail {
                message: format!("image {img} does not have a digest"),
                annotations: vec![],
            };
        }
    }
    let bindings = with_image_variables(policy, &input.bindings, &imgs);
    validations(policy, &bindings, imgs.matched)
}

/// All matchConditions true. An error counts as "not matched" under
/// `failurePolicy: Ignore` and is returned under Fail.
fn match_conditions(policy: &CompiledPolicy, bindings: &Bindings) -> Result<bool, String> {
    for (name, cond) in &policy.match_conditions {
        match eval_bool(cond, bindings) {
            Ok(true) => {}
            Ok(false) => return Ok(false),
            Err(_) if !policy.spec.fail_closed() => return Ok(false),
            Err(e) => return Err(format!("matchCondition {name}: {e}")),
        }
    }
    Ok(true)
}

/// A digest reference, as go-containerregistry's `name.Digest` (an
/// unparsable image is not one either).
fn has_digest(image: &str) -> bool {
    reference::parse(image)
        .map(|r| r.contains_digest())
        .unwrap_or(false)
}

fn with_image_variables(policy: &CompiledPolicy, base: &Bindings, imgs: &PolicyImages) -> Bindings {
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
    base.with("images", imgs.to_cel())
        .with("attestations", attestations)
        .with("attestors", attestors)
}

fn validations(policy: &CompiledPolicy, bindings: &Bindings, matched: Vec<String>) -> Outcome {
    for (index, v) in policy.validations.iter().enumerate() {
        match eval_bool(&v.expression, bindings) {
            Ok(true) => continue,
            Ok(false) => {
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
                    Err(e) => Outcome::Error(e),
                };
            }
            Err(e) => return Outcome::Error(e),
        }
    }
    match audit_annotations(policy, bindings) {
        Ok(annotations) => Outcome::Pass {
            annotations,
            matched,
        },
        Err(e) => Outcome::Error(e),
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
            Ok(other) => format!(
                "failed to evaluate message expression: must evaluate to string, got {}",
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

fn audit_annotations(
    policy: &CompiledPolicy,
    bindings: &Bindings,
) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for (key, expr) in &policy.audit_annotations {
        match expr.eval(bindings)? {
            Value::String(s) if s.is_empty() => {}
            Value::String(s) => out.push((key.clone(), s.to_string())),
            Value::Null => {}
            other => {
                return Err(format!(
                    "auditAnnotations[{key}]: valueExpression must evaluate to string, got {}",
                    convert::type_name(&other)
                ))
            }
        }
    }
    Ok(out)
}

fn eval_bool(expr: &Expression, bindings: &Bindings) -> Result<bool, String> {
    match expr.eval(bindings)? {
        Value::Bool(b) => Ok(b),
        other => Err(format!(
            "expression `{}` must return bool, got {}",
            expr.source,
            convert::type_name(&other)
        )),
    }
}
