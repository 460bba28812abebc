//! Runs the vectors derived from Kubernetes' own tests of these libraries
//! (`conformance/cel/kubernetes/*.json`, provenance in
//! `conformance/SOURCES.files.tsv`) through `crate::compile` and
//! evaluation. A vector passes when the expression evaluates to the value
//! of its `expect` expression, fails with an error containing its `error`
//! text, or, for a `compile_error` (a cel-go type-check error), fails to
//! compile. The vectors that do not pass are listed, with why, in
//! [`EXPECTED_FAILURES`]; the test fails if one of them starts passing, so
//! the list cannot go stale.

use crate::{compile, convert, Bindings};
use cel::Value;
use serde_json::Value as Json;

/// The vector files, by library (`ip_cidr_crd`: the IP and CIDR rules of
/// the CRD validation tests).
const LIBRARIES: [&str; 5] = ["urls", "ip", "cidr", "format", "ip_cidr_crd"];

/// `(library, vector name, why it does not pass)`.
const EXPECTED_FAILURES: &[(&str, &str, &str)] = &[
    (
        "ip",
        "passing cidr into isIP returns compile error",
        "the load-time check knows no overloads of these context functions: the call is rejected when it runs (no such overload), not at load",
    ),
    (
        "cidr",
        "compilation error for cidr(int)",
        "the load-time check knows no overloads of these context functions: the call is rejected when it runs (no such overload), not at load",
    ),
];

fn load(library: &str) -> Json {
    let path = format!(
        "{}/../conformance/cel/kubernetes/{library}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn eval(src: &str, bindings: &Bindings) -> Result<Value, String> {
    compile(src)?.eval(bindings).map_err(|e| e.to_string())
}

/// Why the vector does not pass, if it does not.
fn check(vector: &Json, bindings: &Bindings) -> Option<String> {
    let expr = vector["expr"].as_str()?;
    if vector.get("compile_error").is_some() {
        return match compile(expr) {
            Err(_) => None,
            Ok(e) => Some(format!(
                "compiles; evaluating gives {:?}",
                e.eval(bindings).map_err(|e| e.to_string())
            )),
        };
    }
    let got = eval(expr, bindings);
    if let Some(want) = vector.get("error").and_then(Json::as_str) {
        return match got {
            Err(e) if e.contains(want) => None,
            other => Some(format!("want an error containing {want:?}, got {other:?}")),
        };
    }
    let want_src = vector["expect"].as_str()?;
    let want = match eval(want_src, bindings) {
        Ok(v) => v,
        Err(e) => {
            return Some(format!(
                "expected value {want_src:?} does not evaluate: {e}"
            ))
        }
    };
    match got {
        Ok(v) if v == want => None,
        other => Some(format!("want {want:?}, got {other:?}")),
    }
}

/// The failing vectors of `library`: `(name, why)`, and how many there are.
fn run(library: &str) -> (usize, Vec<(String, String)>) {
    let file = load(library);
    let mut bindings = Bindings::builder();
    if let Some(this) = file.get("self") {
        bindings = bindings.value("self", convert::to_cel(this));
    }
    let bindings = bindings.build();
    let vectors = file["vectors"].as_array().cloned().unwrap_or_default();
    let failures = vectors
        .iter()
        .filter_map(|v| {
            let name = v["name"].as_str().unwrap_or_default().to_string();
            check(v, &bindings).map(|why| (name, why))
        })
        .collect();
    (vectors.len(), failures)
}

#[test]
fn kubernetes_library_vectors() {
    let mut report = vec![];
    let mut unexpected = vec![];
    for library in LIBRARIES {
        let (total, failures) = run(library);
        assert!(total > 0, "{library}: no vectors");
        report.push(format!(
            "{library}: {}/{total} pass",
            total - failures.len()
        ));
        for (name, why) in &failures {
            if !EXPECTED_FAILURES
                .iter()
                .any(|(l, n, _)| *l == library && n == name)
            {
                unexpected.push(format!("{library}: {name}: {why}"));
            }
        }
        for (l, n, reason) in EXPECTED_FAILURES.iter().filter(|(l, ..)| *l == library) {
            assert!(
                failures.iter().any(|(name, _)| name == n),
                "{l}: {n} passes now: remove it from EXPECTED_FAILURES ({reason})"
            );
        }
    }
    eprintln!("{}", report.join("\n"));
    assert!(unexpected.is_empty(), "{}", unexpected.join("\n"));
}

#[test]
fn the_type_check_failures_still_fail_when_run() {
    let bindings = Bindings::builder().build();
    for src in ["isIP(cidr(\"192.168.0.0/24\"))", "cidr(192168)"] {
        let got = eval(src, &bindings);
        assert!(
            got.as_ref().is_err_and(|e| e.contains("no such overload")),
            "{src}: {got:?}"
        );
    }
}
