//! Conversion between JSON (what Kubernetes objects are) and CEL values.
//!
//! Kubernetes' CEL treats JSON numbers that are integers as `int`, everything
//! else as `double`; we do the same so that `object.spec.replicas == 2` holds.

use cel::objects::{Key, Map};
use cel::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// A JSON value as a CEL value.
pub fn to_cel(json: &serde_json::Value) -> Value {
    match json {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => match n.as_u64() {
                Some(u) => Value::UInt(u),
                None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
        },
        serde_json::Value::String(s) => Value::String(Arc::new(s.clone())),
        serde_json::Value::Array(items) => {
            Value::List(Arc::new(items.iter().map(to_cel).collect()))
        }
        serde_json::Value::Object(fields) => {
            let map: HashMap<Key, Value> = fields
                .iter()
                .map(|(k, v)| (Key::String(Arc::new(k.clone())), to_cel(v)))
                .collect();
            Value::Map(Map { map: Arc::new(map) })
        }
    }
}

/// A CEL value as JSON, for values that have a JSON form (no opaque values).
pub fn to_json(value: &Value) -> Option<serde_json::Value> {
    Some(match value {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => serde_json::Value::Bool(*b),
        Value::Int(i) => serde_json::Value::from(*i),
        Value::UInt(u) => serde_json::Value::from(*u),
        Value::Float(f) => serde_json::Number::from_f64(*f).map(serde_json::Value::Number)?,
        Value::String(s) => serde_json::Value::String(s.to_string()),
        Value::List(items) => {
            serde_json::Value::Array(items.iter().map(to_json).collect::<Option<Vec<_>>>()?)
        }
        Value::Map(map) => {
            let mut out = serde_json::Map::new();
            for (k, v) in map.map.iter() {
                let key = match k {
                    Key::String(s) => s.to_string(),
                    Key::Int(i) => i.to_string(),
                    Key::Uint(u) => u.to_string(),
                    Key::Bool(b) => b.to_string(),
                };
                out.insert(key, to_json(v)?);
            }
            serde_json::Value::Object(out)
        }
        _ => return None,
    })
}

/// A CEL string value.
pub fn string(s: impl Into<String>) -> Value {
    Value::String(Arc::new(s.into()))
}

/// A CEL `map(string, V)` from pairs.
pub fn string_map(entries: impl IntoIterator<Item = (String, Value)>) -> Value {
    let map: HashMap<Key, Value> = entries
        .into_iter()
        .map(|(k, v)| (Key::String(Arc::new(k)), v))
        .collect();
    Value::Map(Map { map: Arc::new(map) })
}

/// A short, user-facing rendering of a value's type, for error messages.
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::List(_) => "list",
        Value::Map(_) => "map",
        Value::Function(..) => "function",
        Value::Int(_) => "int",
        Value::UInt(_) => "uint",
        Value::Float(_) => "double",
        Value::String(_) => "string",
        Value::Bytes(_) => "bytes",
        Value::Bool(_) => "bool",
        Value::Duration(_) => "duration",
        Value::Timestamp(_) => "timestamp",
        Value::Opaque(_) => "opaque",
        Value::Struct(_) => "struct",
        Value::Null => "null",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integers_are_int_and_fractions_double() {
        assert_eq!(to_cel(&json!(2)), Value::Int(2));
        assert_eq!(to_cel(&json!(2.5)), Value::Float(2.5));
        assert_eq!(to_cel(&json!(u64::MAX)), Value::UInt(u64::MAX));
    }

    #[test]
    fn round_trips_objects() {
        let doc = json!({"a": [1, "x", null, true], "b": {"c": 1.5}});
        assert_eq!(to_json(&to_cel(&doc)), Some(doc));
    }
}
