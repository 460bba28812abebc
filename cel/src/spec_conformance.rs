//! The core language against the cel-spec conformance suite
//! (`conformance/cel/cel-spec/`): every vector runs through ivpol's CEL
//! environment, and the result must be the expected one, exactly (an
//! `int` is not a `uint`), or an error where one is expected.
//!
//! Vectors that fail today are listed, with the reason, in
//! `EXPECTED_FAILURES.tsv`: the test fails on any other failure and on a
//! listed one that starts passing, so the list cannot go stale. The load
//! check's type inference (`check`) is held to the suite's checked types:
//! where it knows a type, it must be cel-go's.

use super::check::{output_type, Ty, TypeError};
use super::{env, new_context};
use cel::objects::Key;
use cel::Value;
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../conformance/cel/cel-spec/");

/// What a vector expects.
enum Expected {
    Value(Value),
    /// An expression that must be true, comparing the vector's own
    /// expression with the expected value in CEL, for values a
    /// `cel::Value` does not carry as such (type values) or that compare
    /// by meaning (durations, timestamps).
    Holds(String),
    Error,
}

fn run(t: &Json) -> Result<(), String> {
    let text = |k: &str| t.get(k).and_then(Json::as_str).unwrap_or_default();
    let expr = text("expr");
    if t.get("container").is_some() {
        return Err("needs a container (ivpol's environment has none)".into());
    }
    if t.get("checkOnly").is_some() || t.get("typedResult").is_some() {
        return Err("a check-only vector (no evaluation)".into());
    }
    let expected = match (t.get("value"), t.get("evalError")) {
        (Some(v), _) => expected(v, expr)?,
        (None, Some(_)) => Expected::Error,
        // The suite's default matcher.
        (None, None) => Expected::Value(Value::Bool(true)),
    };
    let program = env().compile(expr).map_err(|e| format!("parse: {e}"));
    if let (Ok(p), Some(want)) = (&program, t.get("type").and_then(Json::as_str)) {
        if t.get("disableCheck").is_none() {
            match output_type(p.expression()) {
                Ok(got) if got.is_dyn() || same_type(&got, want) => {}
                // The suite's environment does not make literals
                // homogeneous; Kyverno's does.
                Err(TypeError::Heterogeneous { .. }) => {}
                Ok(got) => return Err(format!("check: inferred {got}, cel-go says {want}")),
                Err(e) => return Err(format!("check: refused what cel-go accepts: {e}")),
            }
        }
    }
    let mut ctx = new_context();
    if let Some(bindings) = t.get("bindings").and_then(Json::as_object) {
        for (name, b) in bindings {
            let value = b.get("value").ok_or("a binding without a value")?;
            ctx.add_variable_from_value(name.clone(), value_of(value)?);
        }
    }
    let result = program.and_then(|p| p.execute(&ctx).map_err(|e| e.to_string()));
    match (expected, result) {
        (Expected::Error, Err(_)) => Ok(()),
        (Expected::Error, Ok(v)) => Err(format!("expected an error, got {v:?}")),
        (_, Err(e)) => Err(format!("error: {e}")),
        (Expected::Value(want), Ok(got)) if strict_eq(&want, &got) => Ok(()),
        (Expected::Value(want), Ok(got)) => Err(format!("got {got:?}, want {want:?}")),
        (Expected::Holds(check), Ok(got)) => {
            let holds = env()
                .compile(&check)
                .map_err(|e| e.to_string())?
                .execute(&ctx);
            match holds {
                Ok(Value::Bool(true)) => Ok(()),
                other => Err(format!("got {got:?}: {check} is {other:?}")),
            }
        }
    }
}

/// The expectation a protobuf `cel.expr.Value` in JSON gives.
fn expected(v: &Json, expr: &str) -> Result<Expected, String> {
    if let Some(t) = v.get("typeValue").and_then(Json::as_str) {
        return Ok(Expected::Holds(format!("({expr}) == {t}")));
    }
    if let Some(o) = v.get("objectValue") {
        let value = o.get("value").and_then(Json::as_str).unwrap_or_default();
        return match o.get("@type").and_then(Json::as_str).unwrap_or_default() {
            "type.googleapis.com/google.protobuf.Duration" => {
                Ok(Expected::Holds(format!("({expr}) == duration('{value}')")))
            }
            "type.googleapis.com/google.protobuf.Timestamp" => {
                Ok(Expected::Holds(format!("({expr}) == timestamp('{value}')")))
            }
            other => Err(format!("a protobuf message ({other})")),
        };
    }
    Ok(Expected::Value(value_of(v)?))
}

fn value_of(v: &Json) -> Result<Value, String> {
    let (kind, inner) = v
        .as_object()
        .and_then(|o| o.iter().next())
        .ok_or("an empty value")?;
    let number = |s: &Json| -> Option<String> {
        s.as_str()
            .map(str::to_string)
            .or_else(|| s.as_number().map(|n| n.to_string()))
    };
    Ok(match kind.as_str() {
        "int64Value" => Value::Int(number(inner).and_then(|s| s.parse().ok()).ok_or("int")?),
        "uint64Value" => Value::UInt(number(inner).and_then(|s| s.parse().ok()).ok_or("uint")?),
        "doubleValue" => Value::Float(match inner.as_str() {
            Some("NaN") => f64::NAN,
            Some("Infinity") => f64::INFINITY,
            Some("-Infinity") => f64::NEG_INFINITY,
            _ => number(inner).and_then(|s| s.parse().ok()).ok_or("double")?,
        }),
        "stringValue" => Value::String(Arc::new(inner.as_str().unwrap_or_default().into())),
        "bytesValue" => {
            use base64::Engine;
            let b = base64::engine::general_purpose::STANDARD
                .decode(inner.as_str().unwrap_or_default())
                .map_err(|e| e.to_string())?;
            Value::Bytes(Arc::new(b))
        }
        "boolValue" => Value::Bool(inner.as_bool().unwrap_or_default()),
        "nullValue" => Value::Null,
        "listValue" => {
            let items = inner.get("values").and_then(Json::as_array);
            let items = items
                .map(|v| v.iter().map(value_of).collect())
                .unwrap_or(Ok(vec![]))?;
            Value::List(Arc::new(items))
        }
        "mapValue" => {
            let mut map = std::collections::HashMap::new();
            for entry in inner
                .get("entries")
                .and_then(Json::as_array)
                .into_iter()
                .flatten()
            {
                let key = match value_of(entry.get("key").ok_or("a key")?)? {
                    Value::String(s) => Key::String(s),
                    Value::Int(i) => Key::Int(i),
                    Value::UInt(u) => Key::Uint(u),
                    Value::Bool(b) => Key::Bool(b),
                    other => return Err(format!("a map key {other:?}")),
                };
                map.insert(key, value_of(entry.get("value").ok_or("a value")?)?);
            }
            Value::Map(cel::objects::Map { map: Arc::new(map) })
        }
        other => return Err(format!("a {other}")),
    })
}

/// Equality that tells `1`, `1u` and `1.0` apart, and finds NaN equal to
/// itself, as the suite's expectations mean.
fn strict_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => x == y || (x.is_nan() && y.is_nan()),
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(a, b)| strict_eq(a, b))
        }
        (Value::Map(x), Value::Map(y)) => {
            x.map.len() == y.map.len()
                && x.map
                    .iter()
                    .all(|(k, v)| y.map.get(k).is_some_and(|w| strict_eq(v, w)))
        }
        (Value::Int(_), Value::Int(_))
        | (Value::UInt(_), Value::UInt(_))
        | (Value::String(_), Value::String(_))
        | (Value::Bytes(_), Value::Bytes(_))
        | (Value::Bool(_), Value::Bool(_))
        | (Value::Null, Value::Null) => a == b,
        _ => false,
    }
}

/// Whether the inferred type is cel-go's (its printed form), a `dyn` in
/// it standing for any type.
fn same_type(got: &Ty, want: &str) -> bool {
    let pattern = regex::escape(&got.to_string().replace(' ', "")).replace("dyn", ".*");
    regex::Regex::new(&format!("^{pattern}$")).is_ok_and(|re| re.is_match(&want.replace(' ', "")))
}

#[test]
fn cel_spec_conformance() {
    let vectors: Vec<Json> = serde_json::from_str(
        &std::fs::read_to_string(format!("{DIR}simple.json")).expect("simple.json"),
    )
    .expect("JSON");
    let listed: BTreeMap<String, String> =
        std::fs::read_to_string(format!("{DIR}EXPECTED_FAILURES.tsv"))
            .expect("EXPECTED_FAILURES.tsv")
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .filter_map(|l| l.split_once('\t'))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
    let mut passed: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut unexpected = Vec::new();
    let mut fixed = Vec::new();
    let mut failing = BTreeSet::new();
    for t in &vectors {
        let suite = t["suite"].as_str().unwrap_or_default();
        let id = format!("{suite}/{}", t["name"].as_str().unwrap_or_default());
        let outcome = run(t);
        let top = suite.split('/').next().unwrap_or(suite).to_string();
        let entry = passed.entry(top).or_default();
        entry.1 += 1;
        match (&outcome, listed.contains_key(&id)) {
            (Ok(()), false) => entry.0 += 1,
            (Ok(()), true) => fixed.push(id.clone()),
            (Err(e), false) => unexpected.push(format!("{id}\t{e}")),
            (Err(_), true) => {}
        }
        if let Err(e) = outcome {
            failing.insert(format!("{id}\t{}", e.replace(['\n', '\t'], " ")));
        }
    }
    if std::env::var_os("IVPOL_CEL_SPEC_WRITE").is_some() {
        let list: Vec<String> = failing.into_iter().collect();
        std::fs::write(format!("{DIR}failures.out"), list.join("\n") + "\n").unwrap();
    }
    for (suite, (ok, all)) in &passed {
        eprintln!("{suite}: {ok}/{all}");
    }
    assert!(
        unexpected.is_empty(),
        "failures not listed:\n{}",
        unexpected.join("\n")
    );
    assert!(
        fixed.is_empty(),
        "listed but now passing (remove them):\n{}",
        fixed.join("\n")
    );
}
