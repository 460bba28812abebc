//! A YAML or JSON document as a JSON value, refusing a mapping that holds
//! one key twice. serde_json's own `Value` keeps the last one silently, so
//! `message:` written twice would load with whichever came last; the API
//! server rejects duplicate fields, and Kyverno's CLI refuses the file
//! (sigs.k8s.io/yaml: `key "message" already set in map`).

use serde::de::{Deserialize, Deserializer, Error, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;

/// How a duplicate key is reported (sigs.k8s.io/yaml's words).
const ALREADY_SET: &str = "already set in map";

/// Whether `e` is a duplicate key's error (the document was read to its
/// end; only its value is refused).
pub(super) fn is_duplicate_key(e: &impl fmt::Display) -> bool {
    e.to_string().contains(ALREADY_SET)
}

/// A JSON value read with duplicate keys refused.
pub(super) struct Strict(pub Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Strict, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML or JSON value")
    }

    fn visit_bool<E: Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E: Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: Error>(self, v: f64) -> Result<Value, E> {
        // As serde_json's Value: a float JSON cannot hold is null.
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E: Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E: Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E: Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Strict::deserialize(d).map(|s| s.0)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Strict(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(A::Error::custom(format!("key {key:?} {ALREADY_SET}")));
            }
            let Strict(value) = map.next_value()?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(yaml: &str) -> Result<Value, String> {
        serde_yaml_ng::from_str::<Strict>(yaml)
            .map(|s| s.0)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn documents_read_as_serde_json_reads_them() {
        let yaml = "a: 1\nb: [true, null, 2.5, -3, x]\nc: {d: ~}\ne: 18446744073709551615\n";
        let plain: Value = serde_yaml_ng::from_str(yaml).expect("plain");
        assert_eq!(read(yaml), Ok(plain));
    }

    #[test]
    fn a_key_given_twice_is_refused_with_its_line() {
        let why = read("spec:\n  validations: []\n  message: a\n  message: b\n").expect_err("dup");
        assert!(why.contains("key \"message\" already set in map"), "{why}");
        // The mapping that holds it, by path and line.
        assert!(why.starts_with("spec: "), "{why}");
        assert!(why.contains("line 2"), "{why}");
        // The same key in two mappings is no duplicate.
        assert!(read("a: {k: 1}\nb: {k: 2}\n").is_ok());
        let json = read(r#"{"kind": "ImageValidatingPolicy", "kind": "Other"}"#);
        assert!(json.expect_err("json").contains("\"kind\""));
    }
}
