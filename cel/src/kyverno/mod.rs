//! Kyverno's CEL libraries that need no cluster (kyverno/sdk
//! `extensions/cel/libs`): hashes, `json`, `yaml`, `gzip`, `random`,
//! `time`, `transform`, `user` and `math.round`. Each function is
//! registered under every name Kyverno gives it (the plain name and, since
//! Kyverno 1.18, the library-prefixed one), once, in the shared table.
//!
//! What these functions build is charged to the expression's runtime cost
//! (`cel::cost`), and what they decompress, parse or generate is bounded,
//! so that no argument can make one call run the instance out of memory.

mod data;
mod gzip;
mod hash;
mod random;
mod time;
mod transform;

use super::convert;
use cel::common::types::{CelDouble, CelInt};
use cel::{Context, Env, ExecutionError, Value};

/// Registers every function of these libraries on `ctx`.
pub(super) fn register(ctx: &mut Context<'_, '_>) {
    hash::register(ctx);
    data::register(ctx);
    gzip::register(ctx);
    random::register(ctx);
    time::register(ctx);
    transform::register(ctx);
}

/// Registers the overloads that extend cel-go's own functions on `env`:
/// `math.round(double, int)`, rounding to that many decimal places (half
/// away from zero, as Go's `math.Round`).
pub(super) fn register_env(env: &mut Env) {
    // Only fails on a duplicate declaration, which a fresh environment
    // cannot have.
    let _ = cel::add_overload!(env, fn round_places: (CelDouble, CelInt) -> CelDouble,
        name = "math.round");
}

fn round_places(value: &CelDouble, places: &CelInt) -> CelDouble {
    let shift = 10f64.powi(
        i32::try_from(*places.inner()).unwrap_or(if *places.inner() < 0 {
            i32::MIN
        } else {
            i32::MAX
        }),
    );
    ((value.inner() * shift).round() / shift).into()
}

use super::MAX_BUILT_BYTES as MAX_OUTPUT_BYTES;

/// cel-go's error for arguments of types no overload takes: `found no
/// matching overload for 'f' applied to '(int)'`.
fn no_overload(function: &str, args: &[&Value]) -> ExecutionError {
    let types = args
        .iter()
        .map(|v| convert::type_name(v).to_string())
        .collect();
    ExecutionError::no_such_overload(function, types)
}

/// `value` as a string, or the overload error of `function`.
fn string_arg<'a>(function: &str, value: &'a Value) -> Result<&'a str, ExecutionError> {
    match value {
        Value::String(s) => Ok(s),
        other => Err(no_overload(function, &[other])),
    }
}

/// Charges the runtime cost of a new string or bytes value of `len` bytes
/// (1 unit per 10 bytes, as the interpreter charges values it builds).
fn charge_bytes(len: usize) -> Result<(), ExecutionError> {
    cel::cost::charge(len as u64 / 10 + 1)
}

/// Registers `f` under each of `names`.
fn add_each<F, T>(ctx: &mut Context<'_, '_>, names: &[&str], f: F)
where
    F: cel::extractors::IntoFunction<T> + Clone + Send + Sync + 'static,
    T: 'static,
{
    for name in names {
        let _ = ctx.add_function(name, f.clone());
    }
}

#[cfg(test)]
mod tests;
