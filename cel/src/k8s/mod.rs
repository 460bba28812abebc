//! The CEL libraries Kyverno's IVP environment takes from cel-go and
//! Kubernetes that cel-rust does not have: cel-go's `cel.bind`
//! (`ext.Bindings`) and `sets.*` (`ext.Sets`), the optional library's
//! `first()` and `last()`, and Kubernetes' (`k8s.io/apiserver/pkg/cel/library`)
//! lists, quantity and semver (v1) libraries.
//!
//! They are overloads and macros of the shared [`Env`], not context
//! functions: `indexOf` and `lastIndexOf` must stay the strings
//! extension's for strings, and an overload is picked by its argument
//! types. Each library is its own file; [`register`] adds them all.

mod bind;
mod lists;
pub(crate) mod parse;
mod quantity;
mod regex_ext;
mod semver;
mod sets;
#[cfg(test)]
mod vectors;

use cel::common::types::{CelBool, CelInt, CelString, Type};
use cel::common::value::{CowVal, Val};
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError, Value};
use std::sync::Arc;

/// Registers the libraries' overloads and macros on `env`.
///
/// # Errors
///
/// A declaration that clashes with one already in `env`, which a fresh
/// environment with cel-rust's extensions does not have.
pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    bind::register(env)?;
    sets::register(env)?;
    lists::register(env)?;
    quantity::register(env)?;
    semver::register(env)?;
    regex_ext::register(env)?;
    Ok(())
}

/// `args` as the `N` arguments of an overload.
fn take_args<'b, 'v, const N: usize>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<[CowVal<'b, 'v>; N], ExecutionError> {
    args.try_into()
        .map_err(|args: Vec<_>| ExecutionError::invalid_argument_count(N, args.len()))
}

/// The elements of `list`, borrowed from it. An overload declared for
/// `list` is only called with one, so anything else is reported as an
/// overload error of `function`.
fn elements<'b, 'v>(
    function: &str,
    list: &'b (dyn Val + 'v),
) -> Result<Vec<&'b (dyn Val + 'v)>, ExecutionError> {
    let Some(iterable) = list.as_iterable() else {
        return Err(no_such_overload(function, &[list]));
    };
    let mut items = iterable.iter();
    let mut elements = Vec::new();
    while let Some(item) = items.next() {
        elements.push(item);
    }
    Ok(elements)
}

/// The `no such overload` error of a call of `function` with `args`.
fn no_such_overload(function: &str, args: &[&dyn Val]) -> ExecutionError {
    ExecutionError::no_such_overload(
        function,
        args.iter()
            .map(|arg| arg.get_type().name().to_owned())
            .collect(),
    )
}

/// The string `val` holds, for an overload declared for a `string`.
fn string_arg<'b>(function: &str, val: &'b dyn Val) -> Result<&'b str, ExecutionError> {
    val.downcast_ref::<CelString>()
        .map(CelString::inner)
        .ok_or_else(|| no_such_overload(function, &[val]))
}

/// The int `val` holds, for an overload declared for an `int`.
fn int_arg(function: &str, val: &dyn Val) -> Result<i64, ExecutionError> {
    val.downcast_ref::<CelInt>()
        .map(|i| *i.inner())
        .ok_or_else(|| no_such_overload(function, &[val]))
}

/// The bool `val` holds, for an overload declared for a `bool`.
fn bool_arg(function: &str, val: &dyn Val) -> Result<bool, ExecutionError> {
    val.downcast_ref::<CelBool>()
        .map(|b| *b.inner())
        .ok_or_else(|| no_such_overload(function, &[val]))
}

/// The opaque value of type `T` that `val` holds (a `kubernetes.Quantity`,
/// a `kubernetes.Semver`).
fn opaque_arg<T: Opaque>(function: &str, val: &dyn Val) -> Result<Arc<dyn Opaque>, ExecutionError> {
    match Value::try_from(val) {
        Ok(Value::Opaque(o)) if o.downcast_ref::<T>().is_some() => Ok(o),
        _ => Err(no_such_overload(function, &[val])),
    }
}

/// `value` as an overload's result.
fn opaque_result<'b, 'v>(value: impl Opaque) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let boxed: Box<dyn Val> = Value::Opaque(Arc::new(value)).try_into()?;
    Ok(CowVal::Owned(boxed))
}

/// The type of the opaque values named `name`, for declaring overloads.
fn opaque_type(name: &'static str) -> Type {
    Type::new_opaque_type(name)
}

/// An owned `bool` result.
fn bool_result<'b, 'v>(b: bool) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(CowVal::owned(CelBool::from(b)))
}

/// An owned `int` result.
fn int_result<'b, 'v>(i: i64) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(CowVal::owned(CelInt::from(i)))
}

/// Go's `%q` of `s`, as the Go libraries quote input in their errors:
/// double quotes, with `"`, `\` and unprintable characters escaped.
fn go_quote(s: &str) -> String {
    parse::go_quote(s.as_bytes())
}

/// Evaluates `src` with no variables, in the environment of the
/// upstream tests (`compile_heterogeneous`), for the libraries' tests.
#[cfg(test)]
fn eval(src: &str) -> Result<Value, String> {
    crate::compile_heterogeneous(src)?
        .eval(&crate::Bindings::builder().build())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_on_the_shared_environment_once() {
        let mut env = Env::stdlib();
        cel::extensions::strings(&mut env).expect("strings");
        cel::extensions::lists(&mut env).expect("lists");
        cel::extensions::math(&mut env).expect("math");
        cel::extensions::encoders(&mut env).expect("encoders");
        assert_eq!(register(&mut env), Ok(()));
        assert_eq!(
            register(&mut env),
            Err(DeclarationError::duplicate_macro("bind")),
            "a second time clashes"
        );
    }

    #[test]
    fn quotes_as_go_does() {
        assert_eq!(go_quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(go_quote("x\ny\u{1}"), r#""x\ny\x01""#);
        assert_eq!(go_quote("é"), "\"é\"");
    }
}
