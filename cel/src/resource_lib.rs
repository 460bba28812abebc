//! Kyverno's `resource` library, read-only: `resource.Get(apiVersion,
//! resource, namespace, name)` and `resource.List(apiVersion, resource,
//! namespace)` (also `get` and `list`), on the `resource` variable.
//!
//! The objects come from a [`ResourceSource`]: in the component, the
//! host's `cluster-resources` import, which serves only the kinds the
//! operator granted. A namespaced policy may only read its own namespace
//! (Kyverno scopes the library to the policy's namespace).

pub use super::services::{ResourceSource, Scoped};
use super::Shared;
use super::{convert, services};
use cel::extractors::This;
use cel::objects::Opaque;
use cel::{Context, ExecutionError, FunctionContext, Value};
use std::sync::{Arc, OnceLock};

/// The value of the `resource` variable: the handle the functions are
/// called on.
#[derive(Debug, PartialEq, Eq)]
pub struct ResourceContext;

impl Opaque for ResourceContext {
    fn runtime_type_name(&self) -> &str {
        "resource.Context"
    }
}

/// The `resource` variable, converted once for every evaluation: it is the
/// same handle in all of them.
pub fn context() -> Option<&'static Shared> {
    static CONTEXT: OnceLock<Option<Shared>> = OnceLock::new();
    CONTEXT
        .get_or_init(|| Shared::new(context_value()))
        .as_ref()
}

/// The `resource` variable.
pub fn context_value() -> Value {
    Value::Opaque(Arc::new(ResourceContext))
}

/// Registers `Get`, `get`, `List` and `list` on `ctx`.
pub fn register(ctx: &mut Context<'_, '_>) {
    for name in ["Get", "get"] {
        let _ = ctx.add_function(
            name,
            move |ftx: &FunctionContext,
                  This(this): This<Value>,
                  api_version: Arc<String>,
                  resource: Arc<String>,
                  namespace: Arc<String>,
                  object: Arc<String>| {
                on_context(name, &this)?;
                let s = services::resources(ftx, name)?;
                let ns = s.confine(name, &namespace)?;
                match s.source.get(&api_version, &resource, &ns, &object) {
                    Ok(Some(found)) => Ok(convert::to_cel(&found)),
                    Ok(None) => Err(ExecutionError::function_error(
                        name,
                        format!("{resource} \"{object}\" not found in namespace \"{ns}\""),
                    )),
                    Err(e) => Err(ExecutionError::function_error(name, e)),
                }
            },
        );
    }
    for name in ["List", "list"] {
        let _ = ctx.add_function(
            name,
            move |ftx: &FunctionContext,
                  This(this): This<Value>,
                  api_version: Arc<String>,
                  resource: Arc<String>,
                  namespace: Arc<String>| {
                on_context(name, &this)?;
                let s = services::resources(ftx, name)?;
                let ns = s.confine(name, &namespace)?;
                s.source
                    .list(&api_version, &resource, &ns)
                    .map(|list| convert::to_cel(&list))
                    .map_err(|e| ExecutionError::function_error(name, e))
            },
        );
    }
}

fn on_context(name: &str, this: &Value) -> Result<(), ExecutionError> {
    match this {
        Value::Opaque(o) if o.downcast_ref::<ResourceContext>().is_some() => Ok(()),
        _ => Err(ExecutionError::function_error(
            name,
            "must be called on the resource variable",
        )),
    }
}

impl Scoped {
    /// The namespace to read: a namespaced policy's own, whatever it asked
    /// for (an empty namespace means its own); any other is refused.
    fn confine(&self, function: &str, asked: &str) -> Result<String, ExecutionError> {
        match &self.namespace {
            None => Ok(asked.to_string()),
            Some(own) if asked.is_empty() || asked == own => Ok(own.clone()),
            Some(own) => Err(ExecutionError::function_error(
                function,
                format!("a policy in namespace {own:?} may not read namespace {asked:?}"),
            )),
        }
    }
}
