//! Variable bindings for one evaluation, and Kyverno's lazy `variables`.
//!
//! Bindings are resolved by reference (a `VariableResolver`), so the request
//! object is converted to CEL once per evaluation and never copied again.
//! `variables.<name>` is evaluated the first time an expression reads it, as
//! in Kyverno: an unused variable never runs, and an erroring one only fails
//! the expressions that read it.

use super::Expression;
use cel::common::traits::Indexer;
use cel::common::types::{CelString, Type, MAP_TYPE};
use cel::common::value::{CowVal, Val};
use cel::context::VariableResolver;
use cel::{Context, ExecutionError, Value};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

type Slots = BTreeMap<String, Slot>;

/// Bound values by name. The engine's names are constants, bound with
/// every request: kept as they are, not copied each time.
type Named = BTreeMap<Cow<'static, str>, Arc<Binding>>;

#[derive(Clone)]
enum Slot {
    Running,
    Done(Result<Value, ExecutionError>),
}

/// The bound values: a map shared by every policy of a request, and the
/// few values bound on top of it for one policy or one expression
/// ([`Bindings::with`]) in a chain beside it, so that binding one more
/// value copies nothing.
#[derive(Clone)]
struct Base {
    map: Arc<Named>,
    added: Option<Arc<Added>>,
}

/// One value bound on top of a [`Base`], and the ones bound before it.
struct Added {
    /// Always a name the engine spells out (`images`, `ref`, ...).
    name: &'static str,
    binding: Arc<Binding>,
    earlier: Option<Arc<Added>>,
}

impl Base {
    fn new(map: Arc<Named>) -> Base {
        Base { map, added: None }
    }

    /// The binding of `name`: the latest one added, else the map's.
    fn get(&self, name: &str) -> Option<&Arc<Binding>> {
        let mut added = self.added.as_deref();
        while let Some(a) = added {
            if a.name == name {
                return Some(&a.binding);
            }
            added = a.earlier.as_deref();
        }
        self.map.get(name)
    }

    fn with(&self, name: &'static str, binding: Arc<Binding>) -> Base {
        Base {
            map: self.map.clone(),
            added: Some(Arc::new(Added {
                name,
                binding,
                earlier: self.added.clone(),
            })),
        }
    }
}

/// One bound value: ready, or JSON turned into CEL the first time an
/// expression reads it. Most policies never read `request` or `oldObject`,
/// and converting a whole object is the largest cost of a simple request.
pub(super) struct Binding {
    source: Option<Pending>,
    value: OnceLock<Option<Box<dyn Val>>>,
}

/// What a binding is made from on first use.
enum Pending {
    Json(JsonSource),
    /// A CEL value not yet made: made and bound on first use.
    Made(Box<dyn Fn() -> Value + Send + Sync>),
    /// The services' handle, made when an expression first calls a
    /// function that needs them (the native all-signed check never does).
    Services(super::services::Services),
}

/// JSON to convert on first use.
pub enum JsonSource {
    /// JSON already parsed.
    Value(Arc<serde_json::Value>),
    /// Text known to be valid JSON (checked when the request was parsed).
    Text(Arc<str>),
    /// Such text, made when an expression first reads it.
    Deferred(Box<dyn Fn() -> Arc<str> + Send + Sync>),
}

impl Binding {
    fn ready(value: Box<dyn Val>) -> Binding {
        let cell = OnceLock::new();
        let _ = cell.set(Some(value));
        Binding {
            source: None,
            value: cell,
        }
    }

    fn get(&self) -> Option<&dyn Val> {
        self.value
            .get_or_init(|| {
                let value = match self.source.as_ref()? {
                    Pending::Json(JsonSource::Value(v)) => super::convert::to_cel(v),
                    Pending::Json(JsonSource::Text(t)) => {
                        super::convert::to_cel(&serde_json::from_str(t).ok()?)
                    }
                    Pending::Json(JsonSource::Deferred(make)) => {
                        super::convert::to_cel(&serde_json::from_str(&make()).ok()?)
                    }
                    Pending::Made(make) => make(),
                    Pending::Services(services) => services.clone().value(),
                };
                Box::<dyn Val>::try_from(value).ok()
            })
            .as_deref()
    }
}

/// A value converted to CEL once and bound by many evaluations, such as a
/// policy's `attestors` map: binding it copies nothing.
#[derive(Clone)]
pub struct Shared(Arc<Binding>);

impl Shared {
    /// `value` in its bound form; `None` if it has no CEL form.
    pub fn new(value: Value) -> Option<Shared> {
        let value = Box::<dyn Val>::try_from(value).ok()?;
        Some(Shared(Arc::new(Binding::ready(value))))
    }

    /// The value `make` makes, made and put in its bound form the first
    /// time an expression reads it: for a value bound per evaluation that
    /// most evaluations never read (a policy's `images`, which the native
    /// all-signed check does not). One without a CEL form reads as
    /// unbound, as [`Shared::new`]'s `None` does.
    pub fn deferred(make: impl Fn() -> Value + Send + Sync + 'static) -> Shared {
        Shared(Arc::new(Binding {
            source: Some(Pending::Made(Box::new(make))),
            value: OnceLock::new(),
        }))
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Shared")
    }
}

struct LazyInner {
    definitions: Arc<Vec<(String, Expression)>>,
    base: Base,
    services: BoundServices,
    slots: Mutex<Slots>,
}

/// Where `getImageData` and `image.GetMetadata` get their data.
type Source = Arc<dyn super::image_data::ImageDataSource>;
/// What `verifyImageSignatures` and friends call.
type Verifier = Arc<dyn super::verify_lib::ImageVerifier>;

/// The registry-backed functions an evaluation may call, and the hidden
/// binding they find them through (`super::services`).
#[derive(Clone, Default)]
struct BoundServices {
    services: super::services::Services,
    /// `services` as the value of the hidden binding, made on first use.
    binding: Option<Arc<Binding>>,
}

impl BoundServices {
    fn with(services: super::services::Services) -> BoundServices {
        let binding = Binding {
            source: Some(Pending::Services(services.clone())),
            value: OnceLock::new(),
        };
        BoundServices {
            services,
            binding: Some(Arc::new(binding)),
        }
    }
}

/// The `variables` map: evaluates each entry on first access.
#[derive(Clone)]
pub struct LazyVariables {
    inner: Arc<LazyInner>,
}

impl std::fmt::Debug for LazyVariables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("variables")
    }
}

impl LazyVariables {
    /// Evaluates (once) and returns variable `name`.
    pub fn get_value(&self, name: &str) -> Result<Value, ExecutionError> {
        if let Some(slot) = self.lock().get(name).cloned() {
            return match slot {
                Slot::Done(result) => result,
                Slot::Running => Err(ExecutionError::function_error(
                    "variables",
                    format!("variable {name} refers to itself"),
                )),
            };
        }
        let Some((_, expr)) = self.inner.definitions.iter().find(|(n, _)| n == name) else {
            return Err(ExecutionError::NoSuchKey(Arc::new(name.to_string())));
        };
        self.lock().insert(name.to_string(), Slot::Running);
        let bindings = Bindings {
            base: self.inner.base.clone(),
            variables: Some(self.clone()),
            services: self.inner.services.clone(),
        };
        // Read from an expression, the variable is charged to that
        // expression's cost limit; otherwise it gets its own.
        let (result, _cost) = cel::cost::with_limit(super::PER_CALL_COST_LIMIT, || {
            expr.program().execute(&bindings.context())
        });
        self.lock()
            .insert(name.to_string(), Slot::Done(result.clone()));
        result
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Slots> {
        // A poisoned lock only means an earlier evaluation panicked; the slots
        // are still consistent, so keep using them.
        self.inner
            .slots
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Val for LazyVariables {
    fn get_type(&self) -> &Type {
        &MAP_TYPE
    }
    fn cel_type() -> &'static Type {
        &MAP_TYPE
    }
    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(self.clone())
    }
    fn as_indexer<'b, 'v>(&'b self) -> Option<&'b (dyn Indexer + 'v)>
    where
        Self: 'v,
    {
        Some(self)
    }
}

impl Indexer for LazyVariables {
    fn get<'b, 'v>(&'b self, idx: &dyn Val) -> Result<CowVal<'b, 'v>, ExecutionError>
    where
        Self: 'v,
    {
        let Some(name) = idx.downcast_ref::<CelString>() else {
            return Err(ExecutionError::UnexpectedType {
                got: idx.get_type().name().to_owned(),
                want: "string".to_owned(),
            });
        };
        let value = self.get_value(name.inner())?;
        let boxed: Box<dyn Val> = value.try_into()?;
        Ok(CowVal::Owned(boxed))
    }

    fn steal<'v>(self: Box<Self>, idx: &dyn Val) -> Result<Box<dyn Val + 'v>, ExecutionError>
    where
        Self: 'v,
    {
        self.get(idx).map(CowVal::into_owned)
    }
}

/// The variables of one evaluation (`object`, `request`, `images`, ...).
///
/// Values are shared (`Arc`), so deriving bindings with [`Bindings::with`]
/// copies no object data.
#[derive(Clone)]
pub struct Bindings {
    base: Base,
    variables: Option<LazyVariables>,
    services: BoundServices,
}

impl VariableResolver for Bindings {
    fn resolve<'b>(&'b self, variable: &str) -> Option<CowVal<'b, 'b>> {
        if variable == "variables" {
            if let Some(vars) = &self.variables {
                return Some(CowVal::Borrowed(vars));
            }
        }
        if variable == super::services::SERVICES {
            return self
                .services
                .binding
                .as_ref()
                .and_then(|b| b.get())
                .map(CowVal::Borrowed);
        }
        self.base
            .get(variable)
            .and_then(|b| b.get())
            .map(CowVal::Borrowed)
    }
}

impl Bindings {
    /// A builder with nothing bound.
    pub fn builder() -> BindingsBuilder {
        BindingsBuilder::default()
    }

    /// A context that resolves these bindings.
    pub fn context(&self) -> Context<'_, '_> {
        let mut ctx = super::new_context();
        ctx.set_variable_resolver(self);
        ctx
    }

    /// These bindings plus `name` bound to `value` (e.g. `ref` for
    /// matchImageReferences expressions). A value with no CEL form is not
    /// bound.
    ///
    /// `variables` start afresh, so that they see the new binding.
    pub fn with(&self, name: &'static str, value: Value) -> Bindings {
        self.with_shared(Shared::new(value).map(|v| (name, v)))
    }

    /// These bindings plus each `(name, value)`, made in one step: the
    /// `variables` start afresh once, not once per value.
    pub fn with_shared(
        &self,
        values: impl IntoIterator<Item = (&'static str, Shared)>,
    ) -> Bindings {
        let base = values
            .into_iter()
            .fold(self.base.clone(), |base, (name, value)| {
                base.with(name, value.0)
            });
        build(base, self.definitions(), self.services.clone())
    }

    /// Only `names` of these bindings, with no `variables` and no services:
    /// what a data-only expression (`super::compile_data_only`) is
    /// evaluated against, so that it cannot reach the policy's credentials
    /// even through a function the load-time check missed.
    pub fn data_only(&self, names: &[&str]) -> Bindings {
        let map = ivpol_refs::sort::map(
            names
                .iter()
                .filter_map(|n| Some((Cow::Owned(n.to_string()), self.base.get(n)?.clone()))),
        );
        Bindings {
            base: Base::new(Arc::new(map)),
            variables: None,
            services: BoundServices::default(),
        }
    }

    /// What `verifyImageSignatures` and friends call, if bound.
    pub fn verifier(&self) -> Option<&Verifier> {
        self.services.services.verifier.as_ref()
    }

    fn definitions(&self) -> Arc<Vec<(String, Expression)>> {
        self.variables
            .as_ref()
            .map(|v| v.inner.definitions.clone())
            .unwrap_or_default()
    }

    /// Reads a bound value back as a `Value` (for tests and message building).
    pub fn value(&self, name: &str) -> Option<Value> {
        self.base
            .get(name)
            .and_then(|b| b.get())
            .and_then(|v| Value::try_from(v).ok())
    }
}

/// Builds [`Bindings`]: values, lazily converted JSON, the `variables`
/// definitions and the services the libraries call.
#[derive(Default, Clone)]
pub struct BindingsBuilder {
    /// Shared, so that each policy of a request clones the request's
    /// bindings without copying them.
    base: Arc<Named>,
    definitions: Arc<Vec<(String, Expression)>>,
    services: super::services::Services,
}

fn build(
    base: Base,
    definitions: Arc<Vec<(String, Expression)>>,
    services: BoundServices,
) -> Bindings {
    let variables = LazyVariables {
        inner: Arc::new(LazyInner {
            definitions,
            base: base.clone(),
            services: services.clone(),
            slots: Mutex::new(BTreeMap::new()),
        }),
    };
    Bindings {
        base,
        variables: Some(variables),
        services,
    }
}

impl BindingsBuilder {
    /// Binds `name` to `value`. Values that have no CEL form are skipped.
    pub fn value(mut self, name: impl Into<Cow<'static, str>>, value: Value) -> Self {
        if let Ok(v) = Box::<dyn Val>::try_from(value) {
            Arc::make_mut(&mut self.base).insert(name.into(), Arc::new(Binding::ready(v)));
        }
        self
    }

    /// Binds `name` to a value converted once: nothing is converted or
    /// copied. None binds nothing, as [`value`](Self::value) does for a
    /// value with no CEL form.
    pub fn shared(mut self, name: impl Into<Cow<'static, str>>, value: Option<&Shared>) -> Self {
        if let Some(value) = value {
            Arc::make_mut(&mut self.base).insert(name.into(), value.0.clone());
        }
        self
    }

    /// Binds `name` to JSON, converted to CEL only if an expression reads it.
    pub fn json(mut self, name: impl Into<Cow<'static, str>>, source: JsonSource) -> Self {
        let binding = Binding {
            source: Some(Pending::Json(source)),
            value: OnceLock::new(),
        };
        Arc::make_mut(&mut self.base).insert(name.into(), Arc::new(binding));
        self
    }

    /// Declares the lazy `variables`.
    pub fn variables(mut self, definitions: impl Into<Arc<Vec<(String, Expression)>>>) -> Self {
        self.definitions = definitions.into();
        self
    }

    /// Makes `getImageData` and `image.GetMetadata` available.
    pub fn image_data(mut self, source: Source) -> Self {
        self.services.image_data = Some(source);
        self
    }

    /// Makes `verifyImageSignatures` and friends call `verifier`.
    pub fn verifier(mut self, verifier: Verifier) -> Self {
        self.services.verifier = Some(verifier);
        self
    }

    /// The `resource` library over `resources`, if the host granted any.
    pub fn resources(mut self, resources: Option<super::resource_lib::Scoped>) -> Self {
        self.services.resources = resources;
        self
    }

    /// The bindings, with `variables` evaluated lazily over them.
    pub fn build(self) -> Bindings {
        build(
            Base::new(self.base),
            self.definitions,
            BoundServices::with(self.services),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::{compile, convert, EvalError};
    use super::*;
    use serde_json::json;

    fn bindings(vars: &[(&str, &str)]) -> Bindings {
        let defs: Vec<_> = vars
            .iter()
            .map(|(n, e)| (n.to_string(), compile(e).expect("compiles")))
            .collect();
        Bindings::builder()
            .value("object", convert::to_cel(&json!({"n": 2})))
            .variables(defs)
            .build()
    }

    #[test]
    fn variables_see_object_and_each_other() {
        let b = bindings(&[("a", "object.n + 1"), ("b", "variables.a * 10")]);
        let e = compile("variables.b").expect("compiles");
        assert_eq!(e.eval(&b), Ok(Value::Int(30)));
    }

    #[test]
    fn unused_failing_variable_does_not_fail() {
        let b = bindings(&[("bad", "object.missing.field"), ("good", "1")]);
        let e = compile("variables.good == 1").expect("compiles");
        assert_eq!(e.eval(&b), Ok(Value::Bool(true)));
        let e = compile("variables.bad == 1").expect("compiles");
        assert_eq!(
            e.eval(&b),
            Err(EvalError::Execution(ExecutionError::NoSuchKey(Arc::new(
                "missing".into()
            ))))
        );
    }

    #[test]
    fn self_reference_is_an_error_not_a_hang() {
        let b = bindings(&[("a", "variables.a")]);
        let e = compile("variables.a").expect("compiles");
        assert_eq!(
            e.eval(&b),
            Err(EvalError::Execution(ExecutionError::function_error(
                "variables",
                "variable a refers to itself"
            )))
        );
    }

    #[test]
    fn has_on_unknown_variable_is_false() {
        let b = bindings(&[("a", "1")]);
        let e = compile("has(variables.b)").expect("compiles");
        assert_eq!(e.eval(&b), Ok(Value::Bool(false)));
    }

    #[test]
    fn a_shared_value_is_bound_by_every_builder_that_names_it() {
        let one = Shared::new(Value::Int(1));
        let make = || {
            Bindings::builder()
                .shared("one", one.as_ref())
                .shared("none", None)
                .build()
        };
        let e = compile("one + one").expect("compiles");
        assert_eq!(e.eval(&make()), Ok(Value::Int(2)));
        assert_eq!(e.eval(&make()), Ok(Value::Int(2)));
        assert_eq!(make().value("none"), None);
    }
}
