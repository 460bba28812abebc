//! Kyverno's image CEL library: `parseImageReference`, the deprecated alias
//! `image`, `isImage`, and the member functions of `kyverno.image`.

use cel::extractors::This;
use cel::objects::Opaque;
use cel::{Context, ExecutionError, Value};
use ivpol_refs::reference::{self, ImageRef};
use std::sync::Arc;

/// The opaque `kyverno.image` value.
#[derive(Debug, PartialEq, Eq)]
pub struct ImageValue(pub ImageRef);

impl Opaque for ImageValue {
    fn runtime_type_name(&self) -> &str {
        "kyverno.image"
    }
}

/// Registers `parseImageReference`, `image`, `isImage` and the member functions
/// of `kyverno.image` on `ctx`.
pub fn register(ctx: &mut Context<'_, '_>) {
    let _ = ctx.add_function("parseImageReference", |s: Value| {
        parse("parseImageReference", s)
    });
    let _ = ctx.add_function("image", |s: Value| parse("image", s));
    let _ = ctx.add_function("isImage", |s: Value| match s {
        Value::String(s) => Ok(Value::Bool(reference::parse(&s).is_ok())),
        _ => Err(ExecutionError::function_error(
            "isImage",
            "argument must be a string",
        )),
    });
    let _ = ctx.add_function("registry", |This(v): This<Value>| {
        member(&v, "registry", |r| r.registry().to_string())
    });
    let _ = ctx.add_function("repository", |This(v): This<Value>| {
        member(&v, "repository", |r| r.repository().to_string())
    });
    let _ = ctx.add_function("identifier", |This(v): This<Value>| {
        member(&v, "identifier", |r| r.identifier().to_string())
    });
    let _ = ctx.add_function("tag", |This(v): This<Value>| {
        member(&v, "tag", |r| r.tag().unwrap_or_default().to_string())
    });
    let _ = ctx.add_function("digest", |This(v): This<Value>| {
        member(&v, "digest", |r| r.digest().unwrap_or_default().to_string())
    });
    let _ = ctx.add_function("containsDigest", |This(v): This<Value>| {
        image_of(&v, "containsDigest").map(|r| Value::Bool(r.contains_digest()))
    });
}

fn parse(function: &str, s: Value) -> Result<Value, ExecutionError> {
    let Value::String(s) = s else {
        return Err(ExecutionError::function_error(
            function,
            "argument must be a string",
        ));
    };
    let parsed = reference::parse(&s).map_err(|e| ExecutionError::function_error(function, e))?;
    Ok(Value::Opaque(Arc::new(ImageValue(parsed))))
}

fn image_of<'a>(v: &'a Value, function: &str) -> Result<&'a ImageRef, ExecutionError> {
    if let Value::Opaque(o) = v {
        if let Some(img) = o.downcast_ref::<ImageValue>() {
            return Ok(&img.0);
        }
    }
    Err(ExecutionError::function_error(
        function,
        "receiver must be a kyverno.image",
    ))
}

fn member(
    v: &Value,
    function: &str,
    f: impl Fn(&ImageRef) -> String,
) -> Result<Value, ExecutionError> {
    image_of(v, function).map(|r| Value::String(Arc::new(f(r))))
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
    fn parses_and_exposes_parts() {
        assert_eq!(
            eval("parseImageReference('ghcr.io/kyverno/test:v1').registry()"),
            Ok(convert::string("ghcr.io"))
        );
        assert_eq!(
            eval("parseImageReference('ghcr.io/kyverno/test:v1').repository()"),
            Ok(convert::string("kyverno/test"))
        );
        assert_eq!(
            eval("image('ghcr.io/a/b:v1').tag()"),
            Ok(convert::string("v1"))
        );
        assert_eq!(
            eval("image('ghcr.io/a/b:v1').digest()"),
            Ok(convert::string(""))
        );
        assert_eq!(
            eval("image('ghcr.io/a/b:v1').containsDigest()"),
            Ok(Value::Bool(false))
        );
        let pinned = format!("'ghcr.io/a/b@sha256:{}'", "a".repeat(64));
        assert_eq!(
            eval(&format!("image({pinned}).containsDigest()")),
            Ok(Value::Bool(true))
        );
    }

    #[test]
    fn is_image_and_errors() {
        assert_eq!(eval("isImage('nginx')"), Ok(Value::Bool(true)));
        assert_eq!(eval("isImage('NOT VALID')"), Ok(Value::Bool(false)));
        assert_eq!(
            eval("parseImageReference('NOT VALID')"),
            Err("Error executing function 'parseImageReference': could not parse reference: NOT VALID".into())
        );
        assert_eq!(
            eval("'x'.registry()"),
            Err("Error executing function 'registry': receiver must be a kyverno.image".into())
        );
    }
}
