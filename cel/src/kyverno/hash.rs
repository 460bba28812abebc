//! `kyverno.hash`: `sha1`, `sha256` and `md5` of a string, as lowercase hex
//! (also `hash.sha1`, `hash.sha256`, `hash.md5`).

use super::{add_each, charge_bytes, string_arg};
use cel::{Context, ExecutionError, Value};
use sha2::Digest;
use std::sync::Arc;

pub(super) fn register(ctx: &mut Context<'_, '_>) {
    add_each(ctx, &["sha1", "hash.sha1"], |s: Value| {
        hex_digest::<sha1::Sha1>("sha1", &s)
    });
    add_each(ctx, &["sha256", "hash.sha256"], |s: Value| {
        hex_digest::<sha2::Sha256>("sha256", &s)
    });
    add_each(ctx, &["md5", "hash.md5"], |s: Value| {
        hex_digest::<md5::Md5>("md5", &s)
    });
}

/// The hex digest of the string `s` under `D`.
fn hex_digest<D: Digest>(function: &str, s: &Value) -> Result<Value, ExecutionError> {
    let s = string_arg(function, s)?;
    // Hashing reads the whole argument: charge it like a copy.
    charge_bytes(s.len())?;
    let digest = D::digest(s.as_bytes());
    Ok(Value::String(Arc::new(ivpol_verify::encoding::hex(
        &digest,
    ))))
}
