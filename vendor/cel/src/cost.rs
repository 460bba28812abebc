//! A runtime cost limit (ivpol patch, see PATCH.md), in the spirit of
//! Kubernetes' per-expression cost budget: an expression that evaluates
//! too many nodes or builds too much data fails with
//! [`ExecutionError::CostLimitExceeded`] instead of exhausting CPU or
//! memory.
//!
//! Cost units:
//! - every expression node evaluated costs 1 (so every comprehension
//!   iteration costs at least its loop step's nodes);
//! - a node that produces a new (owned) value also costs that value's size:
//!   1 per list element and map entry, plus 1 per 10 bytes of string or
//!   bytes, counted through nested lists and maps. A value borrowed from the
//!   context costs nothing; a copy of it, once made into a new list or map,
//!   does.
//!
//! The limit is set per evaluation with [`with_limit`]; evaluations started
//! inside it (an application's lazily evaluated variables) charge the same
//! limit. Without a limit nothing is counted. Once the limit is exceeded,
//! every further node fails, so no operator can absorb the error.

use crate::common::types::CelMapKey;
use crate::common::value::{BuiltinRef, Val};
use crate::ExecutionError;
use std::cell::Cell;

#[derive(Clone, Copy)]
struct Tracker {
    used: u64,
    limit: u64,
}

thread_local! {
    static TRACKER: Cell<Option<Tracker>> = const { Cell::new(None) };
}

/// Runs `evaluate` under a cost limit of `limit` units, returning its
/// result and the cost it used. Inside another `with_limit`, the outer
/// limit applies and the cost is charged there.
pub fn with_limit<T>(limit: u64, evaluate: impl FnOnce() -> T) -> (T, u64) {
    if let Some(outer) = TRACKER.get() {
        let result = evaluate();
        let used = TRACKER.get().map_or(0, |t| t.used.saturating_sub(outer.used));
        return (result, used);
    }
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            TRACKER.set(None);
        }
    }
    TRACKER.set(Some(Tracker { used: 0, limit }));
    let _reset = Reset;
    let result = evaluate();
    let used = TRACKER.get().map_or(0, |t| t.used);
    (result, used)
}

/// The units left under the current limit (`u64::MAX` without one).
pub fn remaining() -> u64 {
    TRACKER
        .get()
        .map_or(u64::MAX, |t| t.limit.saturating_sub(t.used))
}

/// Charges `units` to the current limit, if there is one.
pub fn charge(units: u64) -> Result<(), ExecutionError> {
    let Some(mut t) = TRACKER.get() else {
        return Ok(());
    };
    t.used = t.used.saturating_add(units);
    TRACKER.set(Some(t));
    if t.used > t.limit {
        Err(ExecutionError::CostLimitExceeded)
    } else {
        Ok(())
    }
}

/// Charges the size of a value a node produced.
pub(crate) fn charge_value(value: &dyn Val) -> Result<(), ExecutionError> {
    if TRACKER.get().is_none() {
        return Ok(());
    }
    // Walking stops once the value is known to cost more than what is left.
    let cap = remaining();
    charge(size(value, cap))
}

fn bytes(len: usize) -> u64 {
    (len / 10) as u64
}

/// The value's size in cost units, or something above `cap` once it is
/// known to exceed it.
fn size(value: &dyn Val, cap: u64) -> u64 {
    match value.as_builtin() {
        BuiltinRef::String(s) => bytes(s.inner().len()),
        BuiltinRef::Bytes(b) => bytes(b.inner().len()),
        BuiltinRef::List(list) => {
            let mut total: u64 = 0;
            for item in list.inner() {
                total = total.saturating_add(1 + size(item.as_ref(), cap));
                if total > cap {
                    break;
                }
            }
            total
        }
        BuiltinRef::Map(map) => {
            let mut total: u64 = 0;
            for (key, item) in map.inner() {
                let key = match key {
                    CelMapKey::String(s) => bytes(s.inner().len()),
                    _ => 0,
                };
                total = total.saturating_add(1 + key + size(item.as_ref(), cap));
                if total > cap {
                    break;
                }
            }
            total
        }
        BuiltinRef::Optional(o) => o.inner().map_or(0, |v| size(v, cap)),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Context, Env};
    use std::sync::Arc;

    fn run(limit: u64, expr: &str) -> (Result<crate::Value, ExecutionError>, u64) {
        let mut env = Env::stdlib();
        crate::extensions::lists(&mut env).unwrap();
        let env = Arc::new(env);
        let program = env.compile(expr).unwrap();
        let ctx = Context::with_env(env);
        with_limit(limit, || program.execute(&ctx))
    }

    #[test]
    fn small_expressions_fit_and_report_their_cost() {
        let (result, used) = run(1_000, "[1, 2, 3].map(x, x * 2) == [2, 4, 6]");
        assert_eq!(result, Ok(crate::Value::Bool(true)));
        assert!(used > 10 && used < 200, "{used}");
    }

    #[test]
    fn nested_comprehensions_run_out() {
        let expr = "lists.range(1000).map(x, lists.range(1000).map(y, x + y)).size() > 0";
        let (result, used) = run(1_000_000, expr);
        assert_eq!(result, Err(ExecutionError::CostLimitExceeded));
        assert!(used > 1_000_000, "{used}");
    }

    #[test]
    fn string_growth_runs_out() {
        // Each level makes the string 8 times longer: 3000 * 8^4 bytes by
        // the end (12 MB), were it not stopped.
        let mut expr = format!("'{}'", "x".repeat(3000));
        for _ in 0..4 {
            expr = format!("[{expr}].map(s, s + s + s + s + s + s + s + s)[0]");
        }
        let (result, _) = run(1_000_000, &format!("size({expr}) > 0"));
        assert_eq!(result, Err(ExecutionError::CostLimitExceeded));
        assert_eq!(
            ExecutionError::CostLimitExceeded.to_string(),
            "operation cancelled: actual cost limit exceeded"
        );
    }

    #[test]
    fn the_error_cannot_be_absorbed() {
        let expr = "lists.range(2000).map(x, lists.range(2000).size()).size() > 0 || true";
        let (result, _) = run(1_000, expr);
        assert_eq!(result, Err(ExecutionError::CostLimitExceeded));
    }

    #[test]
    fn without_a_limit_nothing_is_counted() {
        let program = crate::Program::compile("[1, 2].map(x, x).size()").unwrap();
        assert_eq!(
            program.execute(&Context::default()),
            Ok(crate::Value::Int(2))
        );
        assert_eq!(remaining(), u64::MAX);
    }
}
