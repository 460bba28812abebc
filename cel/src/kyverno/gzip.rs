//! `kyverno.gzip`: `gzip.compress(string) -> bytes` and
//! `gzip.decompress(bytes) -> string`.
//!
//! The compressed bytes are a valid gzip stream (no name, modification time
//! 0, as Kyverno writes them) but not byte for byte Go's: its deflate
//! encoder chooses other blocks. Decompressing either gives the same text.

use super::{add_each, charge_bytes, no_overload, string_arg, MAX_OUTPUT_BYTES};
use cel::{Context, ExecutionError, Value};
use std::io::{Read, Write};
use std::sync::Arc;

pub(super) fn register(ctx: &mut Context<'_, '_>) {
    add_each(ctx, &["gzip.compress"], |s: Value| compress(&s));
    add_each(ctx, &["gzip.decompress"], |b: Value| decompress(&b));
}

fn compress(s: &Value) -> Result<Value, ExecutionError> {
    let text = string_arg("gzip.compress", s)?;
    charge_bytes(text.len())?;
    let failed = |e: std::io::Error| ExecutionError::function_error("gzip.compress", e);
    let mut encoder = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::default());
    encoder.write_all(text.as_bytes()).map_err(failed)?;
    let bytes = encoder.finish().map_err(failed)?;
    Ok(Value::Bytes(Arc::new(bytes)))
}

fn decompress(b: &Value) -> Result<Value, ExecutionError> {
    let Value::Bytes(bytes) = b else {
        return Err(no_overload("gzip.decompress", &[b]));
    };
    let failed = |e: String| ExecutionError::function_error("gzip.decompress", e);
    // A few kilobytes can inflate to gigabytes: read one byte past the
    // bound, and refuse what reaches it.
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes.as_slice())
        .take(MAX_OUTPUT_BYTES as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| failed(e.to_string()))?;
    if out.len() > MAX_OUTPUT_BYTES {
        return Err(failed(format!(
            "the decompressed data is larger than {MAX_OUTPUT_BYTES} bytes"
        )));
    }
    charge_bytes(out.len())?;
    let text =
        String::from_utf8(out).map_err(|_| failed("the decompressed data is not UTF-8".into()))?;
    Ok(Value::String(Arc::new(text)))
}
