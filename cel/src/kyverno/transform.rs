//! `kyverno.transform` and `kyverno.user`, the two libraries that reshape
//! request data: `listObjToMap` (also `transform.listObjToMap`) and
//! `parseServiceAccount` (also `user.parseServiceAccount`), with Kyverno's
//! error texts.

use super::{add_each, convert, no_overload, string_arg};
use cel::objects::{Key, Map};
use cel::{Context, ExecutionError, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// The prefix of a service account's user name.
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

pub(super) fn register(ctx: &mut Context<'_, '_>) {
    add_each(
        ctx,
        &["listObjToMap", "transform.listObjToMap"],
        |keys: Value, values: Value, key_name: Value, value_name: Value| {
            list_obj_to_map(&keys, &values, &key_name, &value_name)
        },
    );
    add_each(
        ctx,
        &["parseServiceAccount", "user.parseServiceAccount"],
        |user: Value| parse_service_account(&user),
    );
}

fn failed(message: impl Into<String>) -> ExecutionError {
    ExecutionError::function_error("listObjToMap", message.into())
}

/// A map from each `keys[i][key_name]` to `values[i][value_name]` (`null`
/// when absent); the last of equal keys wins.
fn list_obj_to_map(
    keys: &Value,
    values: &Value,
    key_name: &Value,
    value_name: &Value,
) -> Result<Value, ExecutionError> {
    let (
        Value::List(keys),
        Value::List(values),
        Value::String(key_name),
        Value::String(value_name),
    ) = (keys, values, key_name, value_name)
    else {
        return Err(no_overload(
            "listObjToMap",
            &[keys, values, key_name, value_name],
        ));
    };
    if keys.len() != values.len() {
        return Err(failed(format!(
            "listObjToMap must take lists of equal length. list1: {}, list2: {}",
            keys.len(),
            values.len()
        )));
    }
    cel::cost::charge(keys.len() as u64)?;
    let mut out = HashMap::with_capacity(keys.len());
    for (key_entry, value_entry) in keys.iter().zip(values.iter()) {
        let Value::Map(key_entry) = key_entry else {
            return Err(failed(
                "object cannot be handled as a map string to any in the key object list",
            ));
        };
        let Some(Value::String(key)) = field(key_entry, key_name) else {
            return Err(failed(
                "the passed key name cannot be handled as a string in the key object list",
            ));
        };
        let Value::Map(value_entry) = value_entry else {
            return Err(failed(
                "object cannot be handled as a map string to any in the value object list",
            ));
        };
        let value = field(value_entry, value_name)
            .cloned()
            .unwrap_or(Value::Null);
        out.insert(Key::String(key.clone()), value);
    }
    Ok(Value::Map(Map { map: Arc::new(out) }))
}

fn field<'a>(map: &'a Map, name: &Arc<String>) -> Option<&'a Value> {
    map.map.get(&Key::String(name.clone()))
}

/// `{name, namespace}` of a `system:serviceaccount:<namespace>:<name>`
/// user; both empty for any other user.
fn parse_service_account(user: &Value) -> Result<Value, ExecutionError> {
    let user = string_arg("parseServiceAccount", user)?;
    let (namespace, name) = user
        .strip_prefix(SERVICE_ACCOUNT_PREFIX)
        .and_then(|rest| rest.split_once(':'))
        .unwrap_or_default();
    Ok(convert::string_map([
        ("name".to_string(), convert::string(name)),
        ("namespace".to_string(), convert::string(namespace)),
    ]))
}
