//! The functions an IVP expression may call, and why the others are refused.
//!
//! cel-rust does not type-check, so without this list a misspelt or
//! unimplemented function would only fail at request time. Checking at load
//! time turns it into a diagnostic naming the function.

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
    // Kubernetes' URL library
    "url",
    "isURL",
    "getScheme",
    "getHost",
    "getHostname",
    "getPort",
    "getEscapedPath",
    "getQuery",
    // Kubernetes' IP library
    "ip",
    "isIP",
    "ip.isCanonical",
    "family",
    "isUnspecified",
    "isLoopback",
    "isLinkLocalMulticast",
    "isLinkLocalUnicast",
    "isGlobalUnicast",
    // Kubernetes' CIDR library
    "cidr",
    "isCIDR",
    "containsIP",
    "containsCIDR",
    "masked",
    "prefixLength",
    // Kubernetes' format library
    "format.named",
    "format.dns1123Label",
    "format.dns1123Subdomain",
    "format.dns1035Label",
    "format.qualifiedName",
    "format.dns1123LabelPrefix",
    "format.dns1123SubdomainPrefix",
    "format.dns1035LabelPrefix",
    "format.labelValue",
    "format.uri",
    "format.uuid",
    "format.byte",
    "format.date",
    "format.datetime",
    "validate",
];

/// Whether a call to `name` can be evaluated. A call of a namespaced
/// function (`optional.none()`, `ip.isCanonical(s)`) is, to the parser, a
/// call of `none` on `optional`, so the last segment of a listed qualified
/// name is accepted too.
pub(super) fn is_supported(name: &str) -> bool {
    is_operator(name)
        || STANDARD.iter().chain(KYVERNO).any(|known| {
            *known == name || known.rsplit_once('.').is_some_and(|(_, last)| last == name)
        })
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
    fn unknown_and_unimplemented_functions_are_explained() {
        assert!(is_supported("verifyImageSignatures"));
        assert!(!is_supported("sha256"));
        assert!(unsupported_reason("sha256").contains("not implemented by ivpol"));
        assert!(unsupported_reason("nope").contains("undeclared reference"));
    }

    #[test]
    fn namespaced_functions_are_supported_by_their_last_segment() {
        // The parser reports `optional.none()` as a call of `none`.
        for f in [
            "none",
            "of",
            "quote",
            "isCanonical",
            "dns1123Label",
            "named",
        ] {
            assert!(is_supported(f), "{f}");
        }
        assert!(!is_supported("optional"));
        assert!(!is_supported("isCanon"));
        // And they compile and run.
        let bindings = crate::cel::Bindings::builder().build();
        for src in [
            "optional.none() == optional.none()",
            "optional.of(1).value() == 1",
            "strings.quote('a') == '\"a\"'",
            "base64.encode(b'a') == 'YQ=='",
            "math.abs(-1) == 1",
            "lists.range(2) == [0, 1]",
        ] {
            let got =
                crate::cel::compile(src).and_then(|e| e.eval(&bindings).map_err(|e| e.to_string()));
            assert_eq!(got, Ok(cel::Value::Bool(true)), "{src}");
        }
    }
}
