//! The Kubernetes CEL regex library: `find` and `findAll` on strings.

use cel::extractors::This;
use cel::{Context, ExecutionError, Value};
use std::sync::Arc;

pub(super) fn register(ctx: &mut Context<'_, '_>) {
    let _ = ctx.add_function("find", find);
    let _ = ctx.add_function("findAll", find_all);
}

fn compile(pattern: &Value, function: &str) -> Result<regex::Regex, ExecutionError> {
    let Value::String(p) = pattern else {
        return Err(ExecutionError::function_error(
            function,
            "pattern must be a string",
        ));
    };
    cel::regex_cache::compiled(p).map_err(|e| ExecutionError::function_error(function, e))
}

fn target(this: &Value, function: &str) -> Result<Arc<String>, ExecutionError> {
    match this {
        Value::String(s) => Ok(s.clone()),
        _ => Err(ExecutionError::function_error(
            function,
            "receiver must be a string",
        )),
    }
}

/// `s.find(re)`: the first match, or `""`.
fn find(This(this): This<Value>, pattern: Value) -> Result<Value, ExecutionError> {
    let s = target(&this, "find")?;
    let re = compile(&pattern, "find")?;
    let found = re
        .find(&s)
        .map(|m| m.as_str().to_string())
        .unwrap_or_default();
    Ok(Value::String(Arc::new(found)))
}

/// `s.findAll(re)` and `s.findAll(re, n)`: all (or the first `n`) matches.
fn find_all(
    ftx: &cel::FunctionContext,
    This(this): This<Value>,
    pattern: Value,
) -> Result<Value, ExecutionError> {
    let s = target(&this, "findAll")?;
    let re = compile(&pattern, "findAll")?;
    let limit = match ftx.args.get(1).map(|v| Value::try_from(v.as_ref())) {
        Some(Ok(Value::Int(n))) if n >= 0 => usize::try_from(n).unwrap_or(usize::MAX),
        Some(Ok(Value::Int(_))) | None => usize::MAX,
        Some(_) => {
            return Err(ExecutionError::function_error(
                "findAll",
                "limit must be an int",
            ))
        }
    };
    let found: Vec<Value> = re
        .find_iter(&s)
        .take(limit)
        .map(|m| Value::String(Arc::new(m.as_str().to_string())))
        .collect();
    Ok(Value::List(Arc::new(found)))
}

#[cfg(test)]
mod tests {
    use crate::{compile, convert, Bindings};
    use cel::Value;

    fn eval(src: &str) -> Result<Value, String> {
        compile(src)?
            .eval(&Bindings::builder().build())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn find_and_find_all() {
        assert_eq!(
            eval("'abc 123 def 456'.find('[0-9]+')"),
            Ok(convert::string("123"))
        );
        assert_eq!(eval("'abc'.find('[0-9]+')"), Ok(convert::string("")));
        assert_eq!(eval("'a1b2c3'.findAll('[0-9]').size()"), Ok(Value::Int(3)));
        assert_eq!(
            eval("'a1b2c3'.findAll('[0-9]', 2).size()"),
            Ok(Value::Int(2))
        );
        assert_eq!(
            eval("'a'.find('(')"),
            Err("Error executing function 'find': regex parse error:\n    (\n    ^\nerror: unclosed group".into())
        );
    }
}
