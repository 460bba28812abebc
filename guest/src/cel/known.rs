//! The functions an IVP expression may call, and why the others are refused.
//!
//! cel-rust does not type-check, so without this list a misspelt or
//! unimplemented function would only fail at request time. Checking at load
//! time turns it into a diagnostic naming the function.

use cel::common::ast::{EntryExpr, Expr};
use cel::IdedExpr;

/// CEL standard library and the cel-go extensions cel-rust implements.
const STANDARD: &[&str] = &[
    // standard library
    "size",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "string",
    "int",
    "uint",
    "double",
    "bool",
    "bytes",
    "type",
    "dyn",
    "duration",
    "timestamp",
    "getDate",
    "getDayOfMonth",
    "getDayOfWeek",
    "getDayOfYear",
    "getFullYear",
    "getHours",
    "getMilliseconds",
    "getMinutes",
    "getMonth",
    "getSeconds",
    "max",
    "min",
    // optional types
    "optional.of",
    "optional.none",
    "optional.ofNonZeroValue",
    "hasValue",
    "value",
    "orValue",
    "or",
    // strings extension
    "charAt",
    "indexOf",
    "lastIndexOf",
    "join",
    "lowerAscii",
    "upperAscii",
    "trim",
    "replace",
    "split",
    "substring",
    "format",
    "strings.quote",
    "reverse",
    // lists extension
    "distinct",
    "flatten",
    "sort",
    "sortBy",
    "lists.range",
    "slice",
    // math extension
    "math.abs",
    "math.bitAnd",
    "math.bitNot",
    "math.bitOr",
    "math.bitShiftLeft",
    "math.bitShiftRight",
    "math.bitXor",
    "math.ceil",
    "math.floor",
    "math.isFinite",
    "math.isInf",
    "math.isNaN",
    "math.round",
    "math.sign",
    "math.sqrt",
    "math.trunc",
    "math.greatest",
    "math.least",
    // encoders extension
    "base64.encode",
    "base64.decode",
    // optional library, version 2 (Kubernetes lists library: `k8s`)
    "first",
    "last",
    "optional.unwrap",
    "unwrapOpt",
];

/// Kyverno's and Kubernetes' functions implemented by this engine.
const KYVERNO: &[&str] = &[
    // image library
    "parseImageReference",
    "image",
    "isImage",
    "registry",
    "repository",
    "identifier",
    "tag",
    "digest",
    "containsDigest",
    // Kubernetes regex library
    "find",
    "findAll",
    // image data (registry access)
    "getImageData",
    "GetMetadata",
    "getMetadata",
    // image verification
    "verifyImageSignatures",
    "verifyAttestationSignatures",
    "extractPayload",
    // resource library (cluster objects the host granted)
    "Get",
    "get",
    "List",
    "list",
    // cel-go sets (`cel.bind` is a macro: it leaves no call behind)
    "sets.contains",
    "sets.equivalent",
    "sets.intersects",
    // Kubernetes lists library (`indexOf`, `lastIndexOf`: strings above)
    "isSorted",
    "sum",
    // Kubernetes quantity library
    "quantity",
    "isQuantity",
    "sign",
    "isInteger",
    "asInteger",
    "asApproximateFloat",
    "add",
    "sub",
    "isGreaterThan",
    "isLessThan",
    "compareTo",
    // Kubernetes semver library
    "semver",
    "isSemver",
    "major",
    "minor",
    "patch",
];

/// The functions `expr` calls, a namespaced one (`sets.contains(l, m)`,
/// `math.abs(x)`) by its qualified name when that is a function this
/// engine has: cel-rust's references name only its last segment.
pub(super) fn called_functions(expr: &IdedExpr) -> Vec<String> {
    let mut calls = Vec::new();
    collect_calls(expr, &mut calls);
    calls.sort_unstable();
    calls.dedup();
    calls
}

fn collect_calls(expr: &IdedExpr, calls: &mut Vec<String>) {
    match &expr.expr {
        Expr::Call(call) => {
            let qualified = call
                .target
                .as_ref()
                .and_then(|target| qualified_name(&target.expr))
                .map(|namespace| format!("{namespace}.{}", call.func_name))
                .filter(|name| is_supported(name));
            match (qualified, &call.target) {
                (Some(name), _) => calls.push(name),
                (None, target) => {
                    calls.push(call.func_name.clone());
                    if let Some(target) = target {
                        collect_calls(target, calls);
                    }
                }
            }
            for arg in &call.args {
                collect_calls(arg, calls);
            }
        }
        Expr::Comprehension(c) => {
            for e in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                collect_calls(e, calls);
            }
        }
        Expr::List(list) => list.elements.iter().for_each(|e| collect_calls(e, calls)),
        Expr::Map(map) => map
            .entries
            .iter()
            .for_each(|e| collect_entry(&e.expr, calls)),
        Expr::Struct(s) => s.entries.iter().for_each(|e| collect_entry(&e.expr, calls)),
        Expr::Select(select) => collect_calls(&select.operand, calls),
        _ => {}
    }
}

fn collect_entry(entry: &EntryExpr, calls: &mut Vec<String>) {
    match entry {
        EntryExpr::StructField(field) => collect_calls(&field.value, calls),
        EntryExpr::MapEntry(entry) => {
            collect_calls(&entry.key, calls);
            collect_calls(&entry.value, calls);
        }
    }
}

/// The dotted name an identifier, or a field selection on one, spells.
fn qualified_name(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Ident(name) => Some(name.clone()),
        Expr::Select(select) if !select.test => Some(format!(
            "{}.{}",
            qualified_name(&select.operand.expr)?,
            select.field
        )),
        _ => None,
    }
}

/// Whether a call to `name` can be evaluated.
pub(super) fn is_supported(name: &str) -> bool {
    is_operator(name) || STANDARD.contains(&name) || KYVERNO.contains(&name)
}

/// Operators and macro-internal calls appear as functions named `_+_`,
/// `@in`, `!_`, `_?._` and the like.
fn is_operator(name: &str) -> bool {
    name.starts_with('_') || name.starts_with('@') || name.starts_with('!') || name.starts_with('-')
}

/// Kyverno's library namespaces this engine does not implement.
const KYVERNO_LIBRARIES: &[&str] = &[
    "http",
    "globalContext",
    "user",
    "random",
    "time",
    "json",
    "yaml",
    "gzip",
    "hash",
    "transform",
];

/// The first function in `functions` that is neither an operator nor a
/// standard one: what a library call names.
pub(super) fn first_member<'a>(functions: &[&'a str]) -> Option<&'a str> {
    functions
        .iter()
        .copied()
        .find(|f| !is_operator(f) && !STANDARD.contains(f))
}

/// Whether `name` is one of Kyverno's (unimplemented) library namespaces.
pub(super) fn is_kyverno_library(name: &str) -> bool {
    KYVERNO_LIBRARIES.contains(&name)
}

/// Why `name` cannot be used, for the load diagnostic.
pub(super) fn unsupported_reason(name: &str) -> String {
    let namespace = name.split('.').next().unwrap_or(name);
    match namespace {
        "sha1" | "sha256" | "md5" | "listObjToMap" | "parseServiceAccount" => {
            format!("Kyverno function {name} is not implemented by ivpol")
        }
        "Post" | "post" | "ToGVR" | "toGVR" => format!(
            "Kyverno function resource.{name} is not implemented by ivpol (resource.get and resource.list are: it only reads)"
        ),
        _ => format!("undeclared reference to function {name}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_and_library_functions_are_supported() {
        for f in [
            "_&&_",
            "@in",
            "!_",
            "size",
            "lowerAscii",
            "parseImageReference",
        ] {
            assert!(is_supported(f), "{f}");
        }
    }

    #[test]
    fn namespaced_calls_are_named_in_full() {
        let env = crate::cel::env();
        let calls = |src: &str| called_functions(env.compile(src).expect("parses").expression());
        assert_eq!(
            calls("sets.contains([1], [math.abs(-1)])"),
            ["math.abs", "sets.contains"]
        );
        // Not a namespace this engine has: the plain member call.
        assert_eq!(calls("object.sets.contains('a')"), ["contains"]);
        assert_eq!(
            calls("{'k': [quantity('1')]}.k[0].isInteger()"),
            ["_[_]", "isInteger", "quantity"]
        );
    }

    #[test]
    fn unknown_and_unimplemented_functions_are_explained() {
        assert!(is_supported("verifyImageSignatures"));
        assert!(!is_supported("sha256"));
        assert!(unsupported_reason("sha256").contains("not implemented by ivpol"));
        assert!(unsupported_reason("nope").contains("undeclared reference"));
    }
}
