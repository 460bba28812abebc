//! The functions an IVP expression may call, and why the others are refused.
//!
//! cel-rust does not type-check, so without this list a misspelt or
//! unimplemented function would only fail at request time. Checking at load
//! time turns it into a diagnostic naming the function.

/// The rest of CEL's standard library and the cel-go extensions cel-rust
/// implements (beyond [`CORE`] and [`STRINGS`]).
const STANDARD: &[&str] = &[
    // standard library
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

/// Kyverno's functions implemented by this engine, and the Kubernetes and
/// cel-go libraries that are not in the API server's matchConditions
/// environment (or not in every supported version of it).
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
    // Kyverno's libraries that need no cluster (`kyverno/`)
    "sha1",
    "sha256",
    "md5",
    "hash.sha1",
    "hash.sha256",
    "hash.md5",
    "json.unmarshal",
    "json.marshal",
    "yaml.parse",
    "gzip.compress",
    "gzip.decompress",
    "random",
    "random.random",
    "time.now",
    "time.truncate",
    "time.toCron",
    "listObjToMap",
    "transform.listObjToMap",
    "parseServiceAccount",
    "user.parseServiceAccount",
    // cel-go sets (`cel.bind` is a macro: it leaves no call behind)
    "sets.contains",
    "sets.equivalent",
    "sets.intersects",
    // cel-go regex extension
    "regex.replace",
    "regex.extract",
    "regex.extractAll",
    // Kubernetes semver library
    "semver",
    "isSemver",
    "major",
    "minor",
    "patch",
    // Kubernetes' IP library, beyond what `KUBERNETES` lists
    "ip.isCanonical",
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

/// The variables an IVP expression may read (`docs/cel.md`): a call on
/// any other name is a library call, and must name a known function.
const VARIABLES: &[&str] = &[
    "object",
    "oldObject",
    "request",
    "namespaceObject",
    "variables",
    "images",
    "attestors",
    "attestations",
    "image",
    "resource",
    "ref",
];

/// The variables a data-only expression may not read: what the policy
/// computes (and what computing it may call), and the cluster objects.
pub(super) const SERVICE_VARIABLES: &[&str] = &[
    "variables",
    "images",
    "attestors",
    "attestations",
    "resource",
    "ref",
];

/// The functions a data-only expression may not call: those that reach a
/// registry (with the policy's credentials) or the verifier.
pub(super) const SERVICE_FUNCTIONS: &[&str] = &[
    "getImageData",
    "GetMetadata",
    "getMetadata",
    "verifyImageSignatures",
    "verifyAttestationSignatures",
    "extractPayload",
];

/// The variables the API server binds for a webhook's matchConditions
/// (`authorizer` aside, which ivpol does not offer).
pub(super) const WEBHOOK_VARIABLES: &[&str] = &["object", "oldObject", "request"];

/// CEL's core functions, which every CEL environment (the API server's
/// matchConditions included) has.
const CORE: &[&str] = &[
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
];

/// cel-go's strings extension, in the API server's environment since
/// Kubernetes 1.27.
const STRINGS: &[&str] = &[
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
];

/// Kubernetes' own CEL libraries that the API server's matchConditions
/// environment has (since 1.28-1.31): regex, lists, quantity, URL, IP and
/// CIDR. Kyverno adds them too.
const KUBERNETES: &[&str] = &[
    "find",
    "findAll",
    "isSorted",
    "sum",
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
    "url",
    "isURL",
    "getScheme",
    "getHost",
    "getHostname",
    "getPort",
    "getEscapedPath",
    "getQuery",
    "ip",
    "isIP",
    "family",
    "isUnspecified",
    "isLoopback",
    "isLinkLocalMulticast",
    "isLinkLocalUnicast",
    "isGlobalUnicast",
    "cidr",
    "isCIDR",
    "containsIP",
    "containsCIDR",
    "masked",
    "prefixLength",
];

/// Whether the API server's matchConditions environment has `name`.
pub(super) fn api_server_has(name: &str) -> bool {
    is_operator(name)
        || [CORE, STRINGS, KUBERNETES]
            .iter()
            .any(|g| g.contains(&name))
}

/// Whether `name` is a variable an expression may read.
pub(super) fn is_variable(name: &str) -> bool {
    VARIABLES.contains(&name)
}

/// Whether a call to `name` can be evaluated.
pub(super) fn is_supported(name: &str) -> bool {
    is_operator(name)
        || [CORE, STRINGS, STANDARD, KUBERNETES, KYVERNO]
            .iter()
            .any(|g| g.contains(&name))
}

/// Operators and macro-internal calls appear as functions named `_+_`,
/// `@in`, `!_`, `_?._` and the like.
///
/// A macro's internal call may be qualified (`math.greatest` expands to
/// `math.@max`).
fn is_operator(name: &str) -> bool {
    let last = name.rsplit('.').next().unwrap_or(name);
    name.starts_with('_') || name.starts_with('!') || name.starts_with('-') || last.starts_with('@')
}

/// Kyverno's library namespaces this engine does not implement.
const KYVERNO_LIBRARIES: &[&str] = &["http", "globalContext"];

/// The first function in `functions` that is neither an operator nor a
/// standard one: what a library call names.
pub(super) fn first_member<'a>(functions: &[&'a str]) -> Option<&'a str> {
    functions
        .iter()
        .copied()
        .find(|f| !is_operator(f) && ![CORE, STRINGS, STANDARD].iter().any(|g| g.contains(f)))
}

/// Whether `name` is one of Kyverno's (unimplemented) library namespaces.
pub(super) fn is_kyverno_library(name: &str) -> bool {
    KYVERNO_LIBRARIES.contains(&name)
}

/// Why `name` cannot be used, for the load diagnostic.
pub(super) fn unsupported_reason(name: &str) -> String {
    let namespace = name.split('.').next().unwrap_or(name);
    match namespace {
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
        let env = crate::env();
        let calls = |src: &str| {
            let program = env.compile(src).expect("parses");
            super::super::calls::called(program.expression(), &is_supported, &is_variable)
                .expect("resolves")
        };
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
        assert!(is_supported("sha256"));
        assert!(!is_supported("sha512"));
        assert!(unsupported_reason("Post").contains("not implemented by ivpol"));
        assert!(unsupported_reason("nope").contains("undeclared reference"));
    }

    /// The parser reports `optional.none()` as a call of `none` on
    /// `optional`; the load check resolves it to its qualified name
    /// (`super::calls`), so the bare last segment is not a function.
    #[test]
    fn namespaced_functions_are_supported_by_their_qualified_name() {
        for f in [
            "optional.none",
            "strings.quote",
            "ip.isCanonical",
            "format.named",
        ] {
            assert!(is_supported(f), "{f}");
        }
        for f in ["none", "quote", "isCanonical", "named"] {
            assert!(!is_supported(f), "{f}");
        }
        // And they compile and run.
        let bindings = crate::Bindings::builder().build();
        for src in [
            "optional.none() == optional.none()",
            "optional.of(1).value() == 1",
            "strings.quote('a') == '\"a\"'",
            "base64.encode(b'a') == 'YQ=='",
            "math.abs(-1) == 1",
            "lists.range(2) == [0, 1]",
        ] {
            let got =
                crate::compile(src).and_then(|e| e.eval(&bindings).map_err(|e| e.to_string()));
            assert_eq!(got, Ok(cel::Value::Bool(true)), "{src}");
        }
    }
}
