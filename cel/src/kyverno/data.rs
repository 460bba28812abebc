//! `kyverno.json` and `kyverno.yaml`: `json.unmarshal(s)`,
//! `json.marshal(v)` and `yaml.parse(s)`, with Go's semantics: a decoded
//! document holds its numbers as `double` (Go decodes into `float64`), and
//! `json.marshal` writes what Go's `json.Marshal` writes (sorted keys, no
//! spaces, `<`, `>` and `&` escaped, Go's float format).

use super::{add_each, charge_bytes, no_overload, string_arg, MAX_OUTPUT_BYTES};
use cel::objects::{Key, Map};
use cel::{Context, ExecutionError, Value};
use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Arc;

pub(super) fn register(ctx: &mut Context<'_, '_>) {
    add_each(ctx, &["json.unmarshal"], |s: Value| unmarshal(&s));
    add_each(ctx, &["json.marshal"], |v: Value| marshal(&v));
    add_each(ctx, &["yaml.parse"], |s: Value| parse_yaml(&s));
}

fn unmarshal(s: &Value) -> Result<Value, ExecutionError> {
    let text = string_arg("json.unmarshal", s)?;
    // What is built is about as large as the text.
    charge_bytes(text.len())?;
    let json: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| ExecutionError::function_error("json.unmarshal", e))?;
    Ok(json_as_go(&json))
}

/// A JSON document as Go's `json.Unmarshal` into `any` makes it: every
/// number a `float64`.
fn json_as_go(json: &serde_json::Value) -> Value {
    match json {
        serde_json::Value::Number(n) => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        serde_json::Value::Array(items) => {
            Value::List(Arc::new(items.iter().map(json_as_go).collect()))
        }
        serde_json::Value::Object(fields) => {
            let map: HashMap<Key, Value> = fields
                .iter()
                .map(|(k, v)| (Key::String(Arc::new(k.clone())), json_as_go(v)))
                .collect();
            Value::Map(Map { map: Arc::new(map) })
        }
        other => super::convert::to_cel(other),
    }
}

fn parse_yaml(s: &Value) -> Result<Value, ExecutionError> {
    let text = string_arg("yaml.parse", s)?;
    charge_bytes(text.len())?;
    let yaml: serde_yaml_ng::Value = serde_yaml_ng::from_str(text)
        .map_err(|e| ExecutionError::function_error("yaml.parse", e))?;
    yaml_as_go(&yaml)
}

/// A YAML document as sigs.k8s.io/yaml decodes it into `any`: through JSON,
/// so numbers are `float64` and keys are strings (a scalar key becomes its
/// text).
fn yaml_as_go(yaml: &serde_yaml_ng::Value) -> Result<Value, ExecutionError> {
    use serde_yaml_ng::Value as Y;
    Ok(match yaml {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(*b),
        Y::Number(n) => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        Y::String(s) => Value::String(Arc::new(s.clone())),
        Y::Sequence(items) => Value::List(Arc::new(
            items.iter().map(yaml_as_go).collect::<Result<_, _>>()?,
        )),
        Y::Mapping(entries) => {
            let mut map = HashMap::with_capacity(entries.len());
            for (k, v) in entries {
                let key = match k {
                    Y::String(s) => s.clone(),
                    Y::Number(n) => n.to_string(),
                    Y::Bool(b) => b.to_string(),
                    Y::Null => "null".to_string(),
                    _ => {
                        return Err(ExecutionError::function_error(
                            "yaml.parse",
                            "a mapping key must be a scalar",
                        ))
                    }
                };
                map.insert(Key::String(Arc::new(key)), yaml_as_go(v)?);
            }
            Value::Map(Map { map: Arc::new(map) })
        }
        Y::Tagged(tagged) => yaml_as_go(&tagged.value)?,
    })
}

fn marshal(v: &Value) -> Result<Value, ExecutionError> {
    let mut out = String::new();
    write_go_json(v, &mut out)?;
    charge_bytes(out.len())?;
    Ok(Value::String(Arc::new(out)))
}

/// Writes `v` as Go's `json.Marshal` writes the native value cel-go
/// converts it to.
fn write_go_json(v: &Value, out: &mut String) -> Result<(), ExecutionError> {
    if out.len() > MAX_OUTPUT_BYTES {
        return Err(ExecutionError::function_error(
            "json.marshal",
            format!("the result is larger than {MAX_OUTPUT_BYTES} bytes"),
        ));
    }
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::UInt(u) => {
            let _ = write!(out, "{u}");
        }
        Value::Float(f) => out.push_str(&go_float(*f)?),
        Value::String(s) => go_string(s, out),
        // Go writes a []byte as standard base64.
        Value::Bytes(b) => go_string(&ivpol_verify::encoding::b64encode(b), out),
        // time.Time as RFC 3339 with nanoseconds; time.Duration as its
        // nanoseconds.
        Value::Timestamp(t) => go_string(&rfc3339_nano(t), out),
        Value::Duration(d) => {
            let _ = write!(out, "{}", d.num_nanoseconds().unwrap_or(i64::MAX));
        }
        Value::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json(item, out)?;
            }
            out.push(']');
        }
        Value::Map(map) => {
            let mut entries = Vec::with_capacity(map.map.len());
            for (k, v) in map.map.iter() {
                let Key::String(k) = k else {
                    return Err(ExecutionError::function_error(
                        "json.marshal",
                        "a map key must be a string",
                    ));
                };
                entries.push((k, v));
            }
            ivpol_refs::sort::sort_by(&mut entries, |a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_string(k, out);
                out.push(':');
                write_go_json(v, out)?;
            }
            out.push('}');
        }
        other => return Err(no_overload("json.marshal", &[other])),
    }
    Ok(())
}

/// A float as Go's encoding/json writes it: the shortest representation,
/// in exponent form below 1e-6 and from 1e21 (`1e+21`, `1e-7`).
fn go_float(f: f64) -> Result<String, ExecutionError> {
    if !f.is_finite() {
        let shown = if f.is_nan() {
            "NaN"
        } else if f > 0.0 {
            "+Inf"
        } else {
            "-Inf"
        };
        return Err(ExecutionError::function_error(
            "json.marshal",
            format!("json: unsupported value: {shown}"),
        ));
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let s = format!("{f:e}");
        // Rust writes `1e21` and `1e-7`; Go `1e+21` and `1e-7`.
        return Ok(match s.split_once('e') {
            Some((mantissa, exp)) if !exp.starts_with('-') => format!("{mantissa}e+{exp}"),
            _ => s,
        });
    }
    Ok(format!("{f}"))
}

/// A JSON string as Go writes it: HTML-safe (`<`, `>`, `&` as `\u003c`...),
/// U+2028 and U+2029 escaped, other control characters as `\uXXXX` except
/// the short escapes.
fn go_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Go's `time.RFC3339Nano`: the fraction without trailing zeros, `Z` for
/// UTC.
fn rfc3339_nano(t: &chrono::DateTime<chrono::FixedOffset>) -> String {
    let mut s = t.format("%Y-%m-%dT%H:%M:%S").to_string();
    let nanos = t.timestamp_subsec_nanos();
    if nanos > 0 {
        let fraction = format!("{nanos:09}");
        s.push('.');
        s.push_str(fraction.trim_end_matches('0'));
    }
    match t.offset().local_minus_utc() {
        0 => s.push('Z'),
        _ => s.push_str(&t.format("%:z").to_string()),
    }
    s
}
