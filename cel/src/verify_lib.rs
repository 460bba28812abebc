//! Kyverno's `imageverify` library (`docs/cel.md`):
//! `verifyImageSignatures(image, attestors) -> int`,
//! `verifyAttestationSignatures(image, attestation, attestors) -> int` and
//! `extractPayload(image, attestation) -> dyn`.
//!
//! The CEL side only unpacks arguments; what a verification means lives in
//! the engine's [`ImageVerifier`], which knows the policy's attestors, the
//! registry and what was verified earlier in the same evaluation.

pub use super::services::{ImageVerifier, VerifierError};
use super::{convert, services};
use cel::objects::Key;
use cel::{Context, ExecutionError, FunctionContext, Value};
use std::sync::Arc;

/// The name `verifyImageSignatures` is called by.
pub const VERIFY_IMAGE_SIGNATURES: &str = "verifyImageSignatures";

/// Registers the three functions; each calls the verifier of the
/// evaluation it runs in (`super::services`).
pub fn register(ctx: &mut Context<'_, '_>) {
    let _ = ctx.add_function(
        VERIFY_IMAGE_SIGNATURES,
        |ftx: &FunctionContext, image: Value, attestors: Value| {
            const NAME: &str = VERIFY_IMAGE_SIGNATURES;
            let v = services::verifier(ftx, NAME)?;
            let image = string_arg(NAME, &image)?;
            let names = attestor_names(NAME, &attestors)?;
            v.verify_image_signatures(&image, &names)
                .map_err(|e| ExecutionError::function_error(NAME, e))
        },
    );
    let _ = ctx.add_function(
        "verifyAttestationSignatures",
        |ftx: &FunctionContext, image: Value, attestation: Value, attestors: Value| {
            const NAME: &str = "verifyAttestationSignatures";
            let v = services::verifier(ftx, NAME)?;
            let image = string_arg(NAME, &image)?;
            let attestation = string_arg(NAME, &attestation)?;
            let names = attestor_names(NAME, &attestors)?;
            v.verify_attestation_signatures(&image, &attestation, &names)
                .map_err(|e| ExecutionError::function_error(NAME, e))
        },
    );
    let _ = ctx.add_function(
        "extractPayload",
        |ftx: &FunctionContext, image: Value, attestation: Value| {
            const NAME: &str = "extractPayload";
            let v = services::verifier(ftx, NAME)?;
            let image = string_arg(NAME, &image)?;
            let attestation = string_arg(NAME, &attestation)?;
            v.extract_payload(&image, &attestation)
                .map(|json| convert::to_cel(&json))
                .map_err(|e| ExecutionError::function_error(NAME, e))
        },
    );
}

fn string_arg(function: &str, value: &Value) -> Result<String, ExecutionError> {
    match value {
        Value::String(s) => Ok(s.to_string()),
        other => Err(ExecutionError::function_error(
            function,
            format!("expected a string, got {}", convert::type_name(other)),
        )),
    }
}

/// The names of the attestor objects in `list` (values of `attestors.<name>`).
fn attestor_names(function: &str, list: &Value) -> Result<Vec<String>, ExecutionError> {
    let Value::List(items) = list else {
        return Err(ExecutionError::function_error(
            function,
            format!(
                "expected a list of attestors, got {}",
                convert::type_name(list)
            ),
        ));
    };
    items
        .iter()
        .map(|item| {
            let name = match item {
                Value::Map(m) => m.map.get(&Key::String(Arc::new("name".into()))),
                _ => None,
            };
            match name {
                Some(Value::String(s)) => Ok(s.to_string()),
                _ => Err(ExecutionError::function_error(
                    function,
                    format!(
                        "expected an attestor from the attestors variable, got {}",
                        convert::type_name(item)
                    ),
                )),
            }
        })
        .collect()
}
