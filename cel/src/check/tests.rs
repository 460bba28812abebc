use super::*;

fn ty(src: &str) -> Result<Ty, String> {
    let program = crate::env().compile(src).expect("parses");
    output_type(program.expression()).map_err(|e| e.to_string())
}

#[test]
fn infers_what_cannot_depend_on_the_request() {
    for (src, want) in [
        ("1 + 2", Ty::Int),
        ("'a' + 'b'", Ty::String),
        ("1 < 2.5", Ty::Bool),
        ("size(object.x)", Ty::Int),
        ("[1, 2].map(x, x * 2)", Ty::list(Ty::Int)),
        ("[1, 2].all(x, x > 0)", Ty::Bool),
        (
            "images.containers.map(i, verifyImageSignatures(i, [attestors.a])).all(n, n > 0)",
            Ty::Bool,
        ),
        ("images.containers[0]", Ty::String),
        ("object.spec.x", Ty::Dyn),
        // cel-go's overload resolution: only int + int takes an int.
        ("variables.x + 1", Ty::Int),
        ("'pod ' + object.metadata.name", Ty::String),
        ("object.a + object.b", Ty::Dyn),
        ("object.d - duration('1s')", Ty::Dyn),
        (
            "timestamp('2024-01-01T00:00:00Z') + object.d",
            Ty::Timestamp,
        ),
        ("[1] + object.l", Ty::list(Ty::Int)),
        ("namespaceObject.metadata.name", Ty::String),
        (
            "namespaceObject.metadata.labels",
            Ty::map(Ty::String, Ty::String),
        ),
        ("namespaceObject.spec.x", Ty::Dyn),
        ("ref", Ty::String),
        ("true ? 1 : 'a'", Ty::Dyn),
        ("{'a': 1}.a", Ty::Int),
        ("has(object.a)", Ty::Bool),
        (
            "timestamp('2025-01-01T00:00:00Z') - duration('1h')",
            Ty::Timestamp,
        ),
        ("isIP(object.a) && sets.contains([1], [1])", Ty::Bool),
        ("quantity('1').compareTo(quantity('2'))", Ty::Int),
        ("url('https://x').getHost()", Ty::String),
        ("request.operation", Ty::String),
        ("request.dryRun", Ty::Bool),
        ("request.userInfo.username", Ty::Dyn),
        (
            "[{'operation': 1}].map(request, request.operation)",
            Ty::list(Ty::Int),
        ),
    ] {
        assert_eq!(ty(src), Ok(want), "{src}");
    }
}

#[test]
fn refuses_operators_no_overload_takes_in_cel_gos_words() {
    for (src, want) in [
        (
            "1 + 'a'",
            "found no matching overload for '_+_' applied to '(int, string)'",
        ),
        (
            "1 && true",
            "found no matching overload for '_&&_' applied to '(int, bool)'",
        ),
        (
            "'a' < 1",
            "found no matching overload for '_<_' applied to '(string, int)'",
        ),
        (
            "!'a'",
            "found no matching overload for '!_' applied to '(string)'",
        ),
        (
            "[1].map(x, x + 'a')",
            "found no matching overload for '_+_' applied to '(int, string)'",
        ),
        (
            "1.5 % 2.0",
            "found no matching overload for '_%_' applied to '(double, double)'",
        ),
        (
            "-'a'",
            "found no matching overload for '-_' applied to '(string)'",
        ),
        (
            "'a' ? 1 : 2",
            "found no matching overload for '_?_:_' applied to '(string, int, int)'",
        ),
        ("[1, 'a']", "expected type 'int' but found 'string'"),
        ("[1, 2.0]", "expected type 'int' but found 'double'"),
        (
            "{'a': 1, 'b': true}",
            "expected type 'int' but found 'bool'",
        ),
        (
            "[[1], ['a']]",
            "expected type 'list(int)' but found 'list(string)'",
        ),
        (
            "verifyImageSignatures('x')",
            "found no matching overload for 'verifyImageSignatures' applied to '(string)'",
        ),
        (
            "'a'.startsWith('a', 'b')",
            "found no matching overload for 'startsWith' applied to '(string, string, string)'",
        ),
        (
            "sha256()",
            "found no matching overload for 'sha256' applied to '()'",
        ),
        (
            "request.operation + 1 == 2",
            "found no matching overload for '_+_' applied to '(string, int)'",
        ),
        (
            "size(1)",
            "found no matching overload for 'size' applied to '(int)'",
        ),
        (
            "true.size()",
            "found no matching overload for 'size' applied to '(bool)'",
        ),
        (
            "'abc'.startsWith(1)",
            "found no matching overload for 'startsWith' applied to '(string, int)'",
        ),
        (
            "verifyImageSignatures(1, [attestors.a])",
            "found no matching overload for 'verifyImageSignatures' applied to '(int, list(dyn))'",
        ),
        (
            "time.truncate(duration('1h'), duration('1h'))",
            "found no matching overload for 'time.truncate' applied to '(duration, duration)'",
        ),
    ] {
        assert_eq!(ty(src), Err(want.to_string()), "{src}");
    }
}

/// The overloads the environment declares decide for the functions it
/// declares: cel-rust's standard ones and the libraries in `k8s/`.
#[test]
fn declared_overloads_are_checked() {
    for (src, want) in [
        (
            "math.abs('a')",
            "found no matching overload for 'math.abs' applied to '(string)'",
        ),
        (
            "sets.contains([1], 'a')",
            "found no matching overload for 'sets.contains' applied to '(list(int), string)'",
        ),
        (
            "'abc'.lowerAscii(1)",
            "found no matching overload for 'lowerAscii' applied to '(string, int)'",
        ),
        (
            "[1].isSorted(1)",
            "found no matching overload for 'isSorted' applied to '(list(int), int)'",
        ),
    ] {
        assert_eq!(ty(src), Err(want.to_string()), "{src}");
    }
    for src in [
        "math.abs(-1)",
        "sets.contains([1], [1])",
        "[1, 2].isSorted()",
        "'a'.indexOf('a')",
        "[1].indexOf(1)",
        "quantity('1').add(1)",
        "math.round(1.5, 1)",
    ] {
        assert!(ty(src).is_ok(), "{src}: {:?}", ty(src));
    }
}

#[test]
fn dyn_is_never_an_error() {
    for src in [
        "object.a + 'x'",
        "object.a && true",
        "object.a < 1",
        "variables.x ? 1 : 2",
        "-object.n",
        "[object.a].map(x, x + 1)",
        "request.operation == 'CREATE' || object.a > 3",
        "[1, object.a, 2]",
        "[[], [1]]",
        "{'a': object.x, 'b': 1}",
    ] {
        assert!(ty(src).is_ok(), "{src}: {:?}", ty(src));
    }
}
