//! Kubernetes' lists library (`library.Lists()`, as Kyverno registers it:
//! version 0, so no `includes`): `isSorted()`, `sum()`, `min()`, `max()`,
//! `indexOf(x)` and `lastIndexOf(x)` on lists; and the optional library's
//! (version 2) list functions `first()`, `last()`, `optional.unwrap(l)` and
//! `l.unwrapOpt()`.
//!
//! cel-go picks among the typed overloads (`list(int)`, `list(double)`,
//! ...) by the runtime type of the list's first element, and an empty list
//! takes the first overload, `int`'s: so `[].sum()` is `0` and `[].min()`
//! is the error `min called on empty list`. The same here. As in
//! Kubernetes, comparing two elements that cannot be compared (a NaN,
//! mixed types in a `dyn` list) does not stop `isSorted`, `min` or `max`:
//! that pair just does not count as out of order, or as a new extreme.

use super::{bool_result, elements, int_result, no_such_overload, take_args};
use cel::common::types::{
    CelDouble, CelInt, CelList, CelOptional, CelUInt, Kind, DYN_TYPE, LIST_TYPE,
};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError, Value};
use std::cmp::Ordering;

/// Adds the list functions.
pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload(
        "isSorted",
        "list_is_sorted_bool",
        LIST_TYPE,
        vec![],
        is_sorted,
    )?;
    env.add_member_overload("sum", "list_sum", LIST_TYPE, vec![], sum)?;
    env.add_member_overload("min", "list_min", LIST_TYPE, vec![], min)?;
    env.add_member_overload("max", "list_max", LIST_TYPE, vec![], max)?;
    env.add_member_overload(
        "indexOf",
        "list_a_index_of_int",
        LIST_TYPE,
        vec![DYN_TYPE],
        index_of,
    )?;
    env.add_member_overload(
        "lastIndexOf",
        "list_a_last_index_of_int",
        LIST_TYPE,
        vec![DYN_TYPE],
        last_index_of,
    )?;
    env.add_member_overload("first", "list_first", LIST_TYPE, vec![], first)?;
    env.add_member_overload("last", "list_last", LIST_TYPE, vec![], last)?;
    env.add_overload(
        "optional.unwrap",
        "optional_unwrap",
        vec![LIST_TYPE],
        unwrap,
    )?;
    env.add_member_overload("unwrapOpt", "optional_unwrapOpt", LIST_TYPE, vec![], unwrap)
}

/// Whether `kind` is one of the comparable types Kubernetes declares the
/// ordering functions for.
fn is_comparable_kind(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Int
            | Kind::UInt
            | Kind::Double
            | Kind::Boolean
            | Kind::Duration
            | Kind::Timestamp
            | Kind::String
            | Kind::Bytes
    )
}

/// The list's elements, when an overload of `function` applies to them:
/// the first one's type is one of `accepts` (an empty list always is).
fn typed_elements<'b, 'v>(
    function: &str,
    list: &'b (dyn Val + 'v),
    accepts: fn(Kind) -> bool,
) -> Result<Vec<&'b (dyn Val + 'v)>, ExecutionError> {
    let items = elements(function, list)?;
    match items.first() {
        Some(first) if !accepts(first.get_type().kind()) => {
            Err(no_such_overload(function, &[list]))
        }
        _ => Ok(items),
    }
}

/// `a` compared to `b`, or `None` if they cannot be compared; an element
/// without an ordering at all is an overload error of `function`.
fn compare(function: &str, a: &dyn Val, b: &dyn Val) -> Result<Option<Ordering>, ExecutionError> {
    let Some(comparer) = a.as_comparer() else {
        return Err(no_such_overload(function, &[a]));
    };
    if b.as_comparer().is_none() {
        return Err(no_such_overload(function, &[b]));
    }
    Ok(comparer.compare(b).ok())
}

fn is_sorted<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [list] = take_args(args)?;
    let items = typed_elements("isSorted", list.as_ref(), is_comparable_kind)?;
    for pair in items.windows(2) {
        if compare("isSorted", pair[0], pair[1])? == Some(Ordering::Greater) {
            return bool_result(false);
        }
    }
    bool_result(true)
}

fn sum<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [list] = take_args(args)?;
    let summable = |kind| matches!(kind, Kind::Int | Kind::UInt | Kind::Double | Kind::Duration);
    let items = typed_elements("sum", list.as_ref(), summable)?;
    let Some(first) = items.first() else {
        return Ok(CowVal::owned(CelInt::from(0)));
    };
    // The zero of the overload's type, then each element added to it; a
    // duration's zero is left out, as adding it changes nothing.
    let (mut total, rest): (Box<dyn Val + 'v>, &[&(dyn Val + 'v)]) = match first.get_type().kind() {
        Kind::Int => (Box::new(CelInt::from(0)), &items),
        Kind::UInt => (Box::new(CelUInt::from(0)), &items),
        Kind::Double => (Box::new(CelDouble::from(0.0)), &items),
        _ => (first.clone_as_boxed(), &items[1..]),
    };
    for item in rest {
        let Some(adder) = total.as_adder() else {
            return Err(no_such_overload("sum", &[total.as_ref()]));
        };
        let next = adder.add(*item)?.into_owned();
        total = next;
    }
    Ok(CowVal::Owned(total))
}

/// The element `wanted` says (the least or the greatest), the first of
/// equal ones; an error for an empty list, in Kubernetes' words.
fn extreme<'b, 'v>(
    function: &str,
    list: CowVal<'b, 'v>,
    wanted: Ordering,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let items = typed_elements(function, list.as_ref(), is_comparable_kind)?;
    let Some(mut best) = items.first().copied() else {
        return Err(ExecutionError::function_error(
            function,
            format!("{function} called on empty list"),
        ));
    };
    for item in &items[1..] {
        // `best` is replaced when it compares as `wanted`'s reverse to the
        // next: for `min`, when it is greater.
        if compare(function, best, *item)? == Some(wanted.reverse()) {
            best = *item;
        }
    }
    Ok(CowVal::Owned(best.clone_as_boxed()))
}

fn min<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [list] = take_args(args)?;
    extreme("min", list, Ordering::Less)
}

fn max<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [list] = take_args(args)?;
    extreme("max", list, Ordering::Greater)
}

/// The index of the first (or last, `from_end`) element equal to `item`,
/// or -1.
fn position<'b, 'v>(
    function: &str,
    args: Vec<CowVal<'b, 'v>>,
    from_end: bool,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [list, item] = take_args(args)?;
    let items = elements(function, list.as_ref())?;
    let matches = |candidate: &&(dyn Val + 'v)| candidate.equals(item.as_ref());
    let found = match from_end {
        false => items.iter().position(matches),
        true => items.iter().rposition(matches),
    };
    int_result(found.map_or(-1, |i| i64::try_from(i).unwrap_or(i64::MAX)))
}

fn index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    position("indexOf", args, false)
}

fn last_index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    position("lastIndexOf", args, true)
}

/// `optional.of` the element at the start (or end) of the list, or
/// `optional.none()` for an empty one.
fn end_element<'b, 'v>(
    function: &str,
    args: Vec<CowVal<'b, 'v>>,
    last: bool,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [list] = take_args(args)?;
    let items = elements(function, list.as_ref())?;
    let item = match last {
        false => items.first(),
        true => items.last(),
    };
    Ok(CowVal::owned(match item {
        Some(item) => CelOptional::of(item.clone_as_boxed()),
        None => CelOptional::none(),
    }))
}

fn first<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    end_element("first", args, false)
}

fn last<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    end_element("last", args, true)
}

/// The values of the list's optionals that have one, in order; an element
/// that is not an optional is an error, in cel-go's words.
fn unwrap<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [list] = take_args(args)?;
    let mut values = Vec::new();
    for item in elements("optional.unwrap", list.as_ref())? {
        let Some(optional) = item.downcast_ref::<CelOptional>() else {
            let shown = match Value::try_from(item) {
                Ok(Value::String(s)) => s.to_string(),
                Ok(Value::Int(i)) => i.to_string(),
                Ok(Value::UInt(u)) => u.to_string(),
                Ok(Value::Float(f)) => f.to_string(),
                Ok(Value::Bool(b)) => b.to_string(),
                Ok(other) => format!("{other:?}"),
                Err(_) => item.get_type().name().to_owned(),
            };
            return Err(ExecutionError::function_error(
                "optional.unwrap",
                format!("value {shown} is not optional"),
            ));
        };
        if let Some(value) = optional.option() {
            values.push(value.clone_as_boxed());
        }
    }
    Ok(CowVal::owned(CelList::from(values)))
}

#[cfg(test)]
mod tests {
    use super::super::eval;
    use crate::convert;
    use cel::Value;

    #[test]
    fn index_of_works_on_strings_and_lists() {
        assert_eq!(eval("'hello'.indexOf('l')"), Ok(Value::Int(2)));
        assert_eq!(eval("'hello'.lastIndexOf('l')"), Ok(Value::Int(3)));
        assert_eq!(eval("[1, 2, 2, 3].indexOf(2)"), Ok(Value::Int(1)));
        assert_eq!(eval("[1, 2, 2, 3].lastIndexOf(2u)"), Ok(Value::Int(2)));
        assert_eq!(eval("[1, 2].indexOf('2')"), Ok(Value::Int(-1)));
    }

    #[test]
    fn the_first_element_picks_the_overload() {
        assert_eq!(eval("[].sum()"), Ok(Value::Int(0)));
        assert_eq!(eval("[1.5, 2.5].sum()"), Ok(Value::Float(4.0)));
        assert_eq!(eval("[1u, 2u].sum()"), Ok(Value::UInt(3)));
        assert_eq!(
            eval("['a'].sum()"),
            Err("found no matching overload for 'sum' applied to '(list)'".into())
        );
        // int + double has no overload (cel-rust's words for it).
        assert_eq!(
            eval("[1, 2.0].sum()"),
            Err("Unsupported binary operator 'add': Int(1), Float(2.0)".into())
        );
        assert_eq!(
            eval("[[1], [2]].min()"),
            Err("found no matching overload for 'min' applied to '(list)'".into())
        );
        assert_eq!(
            eval("[].max()").unwrap_err(),
            "Error executing function 'max': max called on empty list"
        );
        assert_eq!(eval("['b', 'a', 'c'].min()"), Ok(convert::string("a")));
        assert_eq!(
            eval("[9223372036854775807, 1].sum()"),
            Err("Overflow from binary operator 'add': Int(9223372036854775807), Int(1)".into())
        );
    }

    #[test]
    fn incomparable_pairs_do_not_count() {
        assert_eq!(
            eval("[1.0, double('NaN'), 0.5].isSorted()"),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            eval("[2.0, double('NaN'), 0.5].max()"),
            Ok(Value::Float(2.0))
        );
    }

    #[test]
    fn unwrap_keeps_the_present_values() {
        assert_eq!(
            eval(
                "optional.unwrap([optional.of(1), optional.none(), optional.of('a')]) == [1, 'a']"
            ),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            eval("[optional.none()].unwrapOpt() == []"),
            Ok(Value::Bool(true))
        );
        let err = eval("[1].unwrapOpt()").unwrap_err();
        assert!(err.contains("value 1 is not optional"), "{err}");
    }

    #[test]
    fn first_and_last_are_optional() {
        assert_eq!(eval("[].first().hasValue()"), Ok(Value::Bool(false)));
        assert_eq!(eval("[1, 2, 3].last().value()"), Ok(Value::Int(3)));
        assert_eq!(
            eval("['a', 'b'].first().orValue('z')"),
            Ok(convert::string("a"))
        );
    }
}
