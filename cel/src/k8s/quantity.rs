//! Kubernetes' quantity library (`library.Quantity()`): `quantity(s)`,
//! `isQuantity(s)`, `sign(q)`, and on a `kubernetes.Quantity`
//! `isInteger()`, `asInteger()`, `asApproximateFloat()`, `add(q|int)`,
//! `sub(q|int)`, `isGreaterThan(q)`, `isLessThan(q)` and `compareTo(q)`.
//! Two quantities are `==` when they are the same amount (`1Gi ==
//! 1024Mi`).
//!
//! The values follow `k8s.io/apimachinery`'s `resource.Quantity`, which
//! keeps an amount either as an int64 with a power-of-ten scale or, when
//! that cannot hold it exactly, as an arbitrary-precision decimal. Which
//! one shows: `isInteger()` and `asInteger()` only succeed on the first
//! kind at a non-negative scale, so `quantity('1.5Gi').isInteger()` is
//! false (a fractional binary amount is always a decimal) although the
//! amount is whole, and so is `quantity('1.0')` (scale -1). The parser,
//! the arithmetic and the float conversion follow the Go code step by step
//! for that reason (see `quantity/amount.rs`).

mod amount;

use super::{
    bool_result, int_arg, int_result, no_such_overload, opaque_arg, opaque_result, opaque_type,
    string_arg, take_args,
};
use amount::Quantity;
use cel::common::types::{CelDouble, INT_TYPE, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError};
use std::cmp::Ordering;

/// The type name of quantities, Kubernetes'.
const TYPE_NAME: &str = "kubernetes.Quantity";

/// A `kubernetes.Quantity` value.
#[derive(Debug)]
struct QuantityValue(Quantity);

impl PartialEq for QuantityValue {
    fn eq(&self, other: &QuantityValue) -> bool {
        self.0.cmp(&other.0) == Ordering::Equal
    }
}

impl Eq for QuantityValue {}

impl Opaque for QuantityValue {
    fn runtime_type_name(&self) -> &str {
        TYPE_NAME
    }
}

/// Adds the library's functions.
pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let q = || opaque_type(TYPE_NAME);
    env.add_overload("quantity", "string_to_quantity", vec![STRING_TYPE], parse)?;
    env.add_overload(
        "isQuantity",
        "is_quantity_string",
        vec![STRING_TYPE],
        is_quantity,
    )?;
    // Declared global in Kubernetes: `sign(q)`, not `q.sign()`.
    env.add_overload("sign", "quantity_sign", vec![q()], sign)?;
    env.add_member_overload(
        "isGreaterThan",
        "quantity_is_greater_than",
        q(),
        vec![q()],
        greater,
    )?;
    env.add_member_overload("isLessThan", "quantity_is_less_than", q(), vec![q()], less)?;
    env.add_member_overload(
        "compareTo",
        "quantity_compare_to",
        q(),
        vec![q()],
        compare_to,
    )?;
    env.add_member_overload(
        "asApproximateFloat",
        "quantity_get_float",
        q(),
        vec![],
        as_float,
    )?;
    env.add_member_overload("asInteger", "quantity_get_int", q(), vec![], as_integer)?;
    env.add_member_overload("isInteger", "quantity_is_integer", q(), vec![], is_integer)?;
    env.add_member_overload("add", "quantity_add", q(), vec![q()], add)?;
    env.add_member_overload("add", "quantity_add_int", q(), vec![INT_TYPE], add_int)?;
    env.add_member_overload("sub", "quantity_sub", q(), vec![q()], sub)?;
    env.add_member_overload("sub", "quantity_sub_int", q(), vec![INT_TYPE], sub_int)
}

/// The quantity `val` holds.
fn quantity_of<'a>(
    function: &str,
    val: &dyn Val,
    keep: &'a mut Option<std::sync::Arc<dyn Opaque>>,
) -> Result<&'a Quantity, ExecutionError> {
    let opaque = keep.insert(opaque_arg::<QuantityValue>(function, val)?);
    opaque
        .downcast_ref::<QuantityValue>()
        .map(|q| &q.0)
        .ok_or_else(|| no_such_overload(function, &[val]))
}

/// Calls `f` with the receiver and, if there is one, the quantity argument.
fn with_quantities<'b, 'v, const N: usize>(
    function: &str,
    args: Vec<CowVal<'b, 'v>>,
    f: impl FnOnce(&Quantity, Option<&Quantity>) -> Result<CowVal<'b, 'v>, ExecutionError>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let args: [CowVal<'b, 'v>; N] = take_args(args)?;
    let (mut a, mut b) = (None, None);
    let this = quantity_of(function, args[0].as_ref(), &mut a)?;
    let other = match args.get(1) {
        Some(arg) => Some(quantity_of(function, arg.as_ref(), &mut b)?),
        None => None,
    };
    f(this, other)
}

fn parse<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [s] = take_args(args)?;
    let s = string_arg("quantity", s.as_ref())?;
    match Quantity::parse(s) {
        Ok(q) => opaque_result(QuantityValue(q)),
        Err(e) => Err(ExecutionError::function_error("quantity", e)),
    }
}

fn is_quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [s] = take_args(args)?;
    bool_result(Quantity::parse(string_arg("isQuantity", s.as_ref())?).is_ok())
}

fn sign<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with_quantities::<1>("sign", args, |q, _| int_result(q.sign()))
}

/// The receiver compared to the argument.
fn ordering<'b, 'v>(
    function: &str,
    args: Vec<CowVal<'b, 'v>>,
    answer: impl FnOnce(Ordering) -> Result<CowVal<'b, 'v>, ExecutionError>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with_quantities::<2>(function, args, |a, b| match b {
        Some(b) => answer(a.cmp(b)),
        None => Err(ExecutionError::invalid_argument_count(2, 1)),
    })
}

fn greater<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    ordering("isGreaterThan", args, |o| {
        bool_result(o == Ordering::Greater)
    })
}

fn less<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    ordering("isLessThan", args, |o| bool_result(o == Ordering::Less))
}

fn compare_to<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    ordering("compareTo", args, |o| int_result(o as i64))
}

fn as_float<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with_quantities::<1>("asApproximateFloat", args, |q, _| {
        Ok(CowVal::owned(CelDouble::from(q.as_approximate_f64())))
    })
}

fn as_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with_quantities::<1>("asInteger", args, |q, _| match q.as_i64() {
        Some(i) => int_result(i),
        None => Err(ExecutionError::function_error(
            "asInteger",
            "cannot convert value to integer",
        )),
    })
}

fn is_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with_quantities::<1>("isInteger", args, |q, _| bool_result(q.as_i64().is_some()))
}

/// The receiver plus (or minus, `negate`) the other quantity.
fn arithmetic<'b, 'v>(
    function: &str,
    args: Vec<CowVal<'b, 'v>>,
    negate: bool,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with_quantities::<2>(function, args, |a, b| {
        let b = b.ok_or_else(|| ExecutionError::invalid_argument_count(2, 1))?;
        let result = match negate {
            false => a.add(b),
            true => a.sub(b),
        };
        result
            .map_err(|e| ExecutionError::function_error(function, e))
            .and_then(|q| opaque_result(QuantityValue(q)))
    })
}

/// The receiver plus (or minus) an int, taken as a quantity of scale 0.
fn arithmetic_int<'b, 'v>(
    function: &str,
    args: Vec<CowVal<'b, 'v>>,
    negate: bool,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [this, n] = take_args(args)?;
    let n = Quantity::from_i64(int_arg(function, n.as_ref())?);
    let mut keep = None;
    let this = quantity_of(function, this.as_ref(), &mut keep)?;
    let result = match negate {
        false => this.add(&n),
        true => this.sub(&n),
    };
    result
        .map_err(|e| ExecutionError::function_error(function, e))
        .and_then(|q| opaque_result(QuantityValue(q)))
}

fn add<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    arithmetic("add", args, false)
}

fn sub<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    arithmetic("sub", args, true)
}

fn add_int<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    arithmetic_int("add", args, false)
}

fn sub_int<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    arithmetic_int("sub", args, true)
}

#[cfg(test)]
mod tests {
    use super::super::eval;
    use cel::Value;

    #[test]
    fn equality_is_by_amount_and_symmetric() {
        assert_eq!(
            eval("quantity('1Gi') == quantity('1024Mi')"),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            eval("quantity('70k') == quantity('50k').add(quantity('20k'))"),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            eval("quantity('1') == quantity('1001m')"),
            Ok(Value::Bool(false))
        );
        assert_eq!(
            eval("quantity('1') in [quantity('1000m')]"),
            Ok(Value::Bool(true))
        );
    }

    #[test]
    fn functions_reject_other_types() {
        // Refused at load, like cel-go, in cel-rust's words.
        assert_eq!(
            eval("quantity(1)"),
            Err("expression `quantity(1)`: found no matching overload for 'quantity' applied to '(int)'".into())
        );
        assert_eq!(
            eval("quantity('1').add('1')"),
            Err("expression `quantity('1').add('1')`: found no matching overload for 'add' applied to '(dyn, string)'".into())
        );
        assert_eq!(
            eval("quantity('1').isLessThan(1)"),
            Err("expression `quantity('1').isLessThan(1)`: found no matching overload for 'isLessThan' applied to '(dyn, int)'".into())
        );
        // Kubernetes declares `sign` as a global function only.
        assert_eq!(eval("sign(quantity('-5m'))"), Ok(Value::Int(-1)));
        assert_eq!(
            eval("quantity('-5m').sign()"),
            Err("expression `quantity('-5m').sign()`: found no matching overload for 'sign' applied to '(dyn)'".into())
        );
        // cel-go refuses this at load; without types it is just unequal.
        assert_eq!(eval("quantity('1') == 1"), Ok(Value::Bool(false)));
    }

    #[test]
    fn parse_errors_are_kubernetes_texts() {
        let err = eval("quantity('10Mo')").unwrap_err();
        assert!(
            err.contains("quantities must match the regular expression"),
            "{err}"
        );
        assert!(eval("quantity('10Mm')")
            .unwrap_err()
            .contains("unable to parse quantity's suffix"));
    }
}
