//! cel-go's `ext.Sets`: `sets.contains(list, sublist)`,
//! `sets.equivalent(a, b)` and `sets.intersects(a, b)`.
//!
//! Membership is CEL equality, as cel-go's `Lister.Contains`: `1`, `1u`
//! and `1.0` are one element, lists and maps compare element by element.
//! Each call compares every element of one list with every element of the
//! other, so it is charged their sizes' product (twice for `equivalent`),
//! as cel-go's cost tracker does, before it runs.

use super::{bool_result, elements, take_args};
use cel::common::types::LIST_TYPE;
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};

/// Adds the three functions.
pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let lists = || vec![LIST_TYPE, LIST_TYPE];
    env.add_overload(
        "sets.contains",
        "list_sets_contains_list",
        lists(),
        contains,
    )?;
    env.add_overload(
        "sets.equivalent",
        "list_sets_equivalent_list",
        lists(),
        equivalent,
    )?;
    env.add_overload(
        "sets.intersects",
        "list_sets_intersects_list",
        lists(),
        intersects,
    )
}

/// A list's elements, borrowed.
type Elements<'b, 'v> = Vec<&'b (dyn Val + 'v)>;

/// The two lists' elements, once their product (times `factor`) is charged.
fn operands<'b, 'v>(
    function: &str,
    a: &'b (dyn Val + 'v),
    b: &'b (dyn Val + 'v),
    factor: u64,
) -> Result<(Elements<'b, 'v>, Elements<'b, 'v>), ExecutionError> {
    let (a, b) = (elements(function, a)?, elements(function, b)?);
    let product = (a.len() as u64).saturating_mul(b.len() as u64);
    cel::cost::charge(product.saturating_mul(factor))?;
    Ok((a, b))
}

/// Whether every element of `sub` is in `list`.
fn contains_all(list: &[&dyn Val], sub: &[&dyn Val]) -> bool {
    sub.iter()
        .all(|item| list.iter().any(|candidate| candidate.equals(*item)))
}

fn contains<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [list, sub] = take_args(args)?;
    let (list, sub) = operands("sets.contains", list.as_ref(), sub.as_ref(), 1)?;
    bool_result(contains_all(&list, &sub))
}

fn equivalent<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [a, b] = take_args(args)?;
    let (a, b) = operands("sets.equivalent", a.as_ref(), b.as_ref(), 2)?;
    bool_result(contains_all(&a, &b) && contains_all(&b, &a))
}

fn intersects<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [a, b] = take_args(args)?;
    let (a, b) = operands("sets.intersects", a.as_ref(), b.as_ref(), 1)?;
    bool_result(
        a.iter()
            .any(|item| b.iter().any(|candidate| candidate.equals(*item))),
    )
}

#[cfg(test)]
mod tests {
    use crate::{compile_heterogeneous, Bindings, EvalError};
    use cel::Value;

    fn eval(src: &str) -> Result<Value, EvalError> {
        compile_heterogeneous(src)
            .expect("compiles")
            .eval(&Bindings::builder().build())
    }

    #[test]
    fn membership_is_cel_equality() {
        assert_eq!(
            eval("sets.contains([1, 2.0, 3u], [1.0, 2u, 3])"),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            eval("sets.equivalent([[1.0], [2, 3]], [[1], [2, 3.0]])"),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            eval("sets.intersects([1], ['1', 2])"),
            Ok(Value::Bool(false))
        );
    }

    #[test]
    fn quadratic_calls_are_charged() {
        // 2000 x 2000 comparisons, twice: over the limit on their own.
        let over = eval("sets.equivalent(lists.range(2000), lists.range(2000))");
        assert!(matches!(over, Err(EvalError::CostLimit(_))), "{over:?}");
        assert_eq!(
            eval("sets.contains(lists.range(300), lists.range(300))"),
            Ok(Value::Bool(true))
        );
    }

    #[test]
    fn non_lists_are_an_overload_error() {
        // Known at load: refused there, as cel-go's checker does.
        let err = compile_heterogeneous("sets.contains('ab', ['a'])").unwrap_err();
        assert!(
            err.contains("found no matching overload for 'sets.contains'"),
            "{err}"
        );
        // Read from the request: an error when it runs.
        let err = eval("sets.contains(dyn('ab'), ['a'])")
            .unwrap_err()
            .to_string();
        assert!(err.contains("sets.contains"), "{err}");
    }
}
