//! The registry- and cluster-backed functions' per-evaluation state.
//!
//! Every function is registered once, in one table shared by all
//! evaluations (`super::functions`). What differs per evaluation (the
//! policy's verifier, its image data source, its granted resources) is
//! bound to the hidden variable [`SERVICES`], which no CEL expression can
//! name (`@` is not an identifier character), and each function looks it
//! up when it is called.

use super::image_data::ImageDataSource;
use super::resource_lib::Scoped;
use super::verify_lib::ImageVerifier;
use cel::objects::Opaque;
use cel::{ExecutionError, FunctionContext, Value};
use std::sync::Arc;

/// The name of the hidden binding.
pub(super) const SERVICES: &str = "@services";

/// The services one evaluation may call; an absent one makes its
/// functions fail with a CEL error.
#[derive(Clone, Default)]
pub(super) struct Services {
    pub image_data: Option<Arc<dyn ImageDataSource>>,
    pub verifier: Option<Arc<dyn ImageVerifier>>,
    pub resources: Option<Scoped>,
}

/// [`Services`] as a CEL value, for the hidden binding.
#[derive(Clone)]
pub(super) struct Handle(pub Arc<Services>);

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("services")
    }
}

impl PartialEq for Handle {
    fn eq(&self, other: &Handle) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Handle {}

impl Opaque for Handle {
    fn runtime_type_name(&self) -> &str {
        "ivpol.services"
    }
}

impl Services {
    /// The value bound to [`SERVICES`].
    pub(super) fn value(self) -> Value {
        Value::Opaque(Arc::new(Handle(Arc::new(self))))
    }
}

/// The services of the evaluation `ftx` runs in.
fn of(ftx: &FunctionContext, function: &str) -> Result<Arc<Services>, ExecutionError> {
    let found = ftx
        .ptx
        .get_variable(SERVICES)
        .and_then(|v| Value::try_from(&*v).ok());
    match found {
        Some(Value::Opaque(o)) => match o.downcast_ref::<Handle>() {
            Some(h) => Ok(h.0.clone()),
            None => Err(unavailable(function)),
        },
        _ => Err(unavailable(function)),
    }
}

fn unavailable(function: &str) -> ExecutionError {
    ExecutionError::function_error(function, "is not available in this expression")
}

/// The image data source, or an error naming `function`.
pub(super) fn image_data(
    ftx: &FunctionContext,
    function: &str,
) -> Result<Arc<dyn ImageDataSource>, ExecutionError> {
    of(ftx, function)?
        .image_data
        .clone()
        .ok_or_else(|| unavailable(function))
}

/// The verifier, or an error naming `function`.
pub(super) fn verifier(
    ftx: &FunctionContext,
    function: &str,
) -> Result<Arc<dyn ImageVerifier>, ExecutionError> {
    of(ftx, function)?
        .verifier
        .clone()
        .ok_or_else(|| unavailable(function))
}

/// The granted resources, or an error naming `function`.
pub(super) fn resources(ftx: &FunctionContext, function: &str) -> Result<Scoped, ExecutionError> {
    of(ftx, function)?
        .resources
        .clone()
        .ok_or_else(|| unavailable(function))
}
