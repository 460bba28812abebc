//! The vendored upstream vectors of these libraries
//! (`conformance/cel/{kubernetes,cel-go}/*.json`, data derived from
//! Kubernetes', apimachinery's and cel-go's test tables; provenance in
//! `conformance/SOURCES.md`), each run through [`compile`] and
//! [`Expression::eval`](crate::Expression::eval).
//!
//! A vector has an `expr` and one of: `expect`, the CEL source of the
//! expected value (equal, and of the same type); `error`, a substring of
//! the expected runtime error; `compile_error`, an upstream type-check
//! error, which ivpol's conservative check may report at load or at run time.
//! `vars` are JSON values bound as variables.
//!
//! The ones ivpol does not pass are listed in [`EXPECTED_FAILURES`] with
//! the reason, and must still fail: a fix makes the test fail until its
//! entry is removed.

use crate::{compile_heterogeneous, convert, Bindings};
use cel::Value;
use serde_json::Value as Json;

/// The vector files, by their path under `conformance/cel/`.
const FILES: &[(&str, &str)] = &[
    (
        "kubernetes/lists.json",
        include_str!("../../../conformance/cel/kubernetes/lists.json"),
    ),
    (
        "kubernetes/quantity.json",
        include_str!("../../../conformance/cel/kubernetes/quantity.json"),
    ),
    (
        "kubernetes/semver.json",
        include_str!("../../../conformance/cel/kubernetes/semver.json"),
    ),
    (
        "cel-go/bindings.json",
        include_str!("../../../conformance/cel/cel-go/bindings.json"),
    ),
    (
        "cel-go/lists.json",
        include_str!("../../../conformance/cel/cel-go/lists.json"),
    ),
    (
        "cel-go/sets.json",
        include_str!("../../../conformance/cel/cel-go/sets.json"),
    ),
    (
        "cel-go/regex.json",
        include_str!("../../../conformance/cel/cel-go/regex.json"),
    ),
];

/// The vectors ivpol fails: file, vector name, why.
const EXPECTED_FAILURES: &[(&str, &str, &str)] = &[
    (
        "kubernetes/lists.json",
        "self.emptyDurations.sum() == duration('0')",
        "the zero of an empty list's sum comes from its declared type (list(duration) in the \
         schema); ivpol has no schema types, so an empty list sums to the int overload's 0, as \
         `dyn([]).sum()` does in Kubernetes",
    ),
    (
        "cel-go/lists.json",
        "[ExampleType{name: 'foo'}, ExampleType{name: 'bar'}, ExampleType{name: 'baz'}].sortBy(e, e.name) == [ExampleType{name: 'bar'}, ExampleType{name: 'baz'}, ExampleType{name: 'foo'}]",
        "ExampleType is a message type of cel-go's test environment, not of Kyverno's",
    ),
    (
        "cel-go/lists.json",
        "[ExampleType{name: 'a'}, ExampleType{name: 'b'}, ExampleType{name: 'a'}].distinct() == [ExampleType{name: 'a'}, ExampleType{name: 'b'}]",
        "ExampleType is a message type of cel-go's test environment, not of Kyverno's",
    ),
    (
        "cel-go/lists.json",
        "TestListsRuntimeErrors dyn({}).flatten()",
        "an error, but cel-rust words a missing overload `found no matching overload for \
         'flatten' applied to 'map.()'`, cel-go `no such overload`",
    ),
    (
        "cel-go/lists.json",
        "TestListsRuntimeErrors dyn({}).flatten(0)",
        "an error, worded by cel-rust (see above)",
    ),
    (
        "cel-go/lists.json",
        "TestListsRuntimeErrors [].flatten(dyn('1'))",
        "an error, worded by cel-rust (see above)",
    ),
    (
        "cel-go/regex.json",
        "TestRegexRuntimeErrors regex.extract('foo bar', '(')",
        "an error, but a pattern that does not parse is worded by Rust's regex crate \
         (`unclosed group`), not by Go's regexp (`missing closing )`)",
    ),
    (
        "cel-go/regex.json",
        "TestRegexRuntimeErrors regex.extractAll('foo bar', '[a-z')",
        "an error, worded by Rust's regex crate (see above)",
    ),
];

/// Runs one vector: `Err` says how it failed.
fn run(vector: &Json) -> Result<(), String> {
    let text = |key: &str| vector.get(key).and_then(Json::as_str);
    let expr = text("expr").ok_or("no expr")?;
    let mut bindings = Bindings::builder();
    if let Some(vars) = vector.get("vars").and_then(Json::as_object) {
        for (name, value) in vars {
            bindings = bindings.value(name.clone(), convert::to_cel(value));
        }
    }
    let bindings = bindings.build();
    if let Some(upstream) = text("compile_error") {
        return match compile_heterogeneous(expr).map(|e| e.eval(&bindings)) {
            Err(_) | Ok(Err(_)) => Ok(()),
            Ok(Ok(got)) => Err(format!("got {got:?}, wanted an error ({upstream})")),
        };
    }
    let got = compile_heterogeneous(expr)
        .map_err(|e| format!("load: {e}"))?
        .eval(&bindings);
    if let Some(wanted) = text("error") {
        return match got {
            Err(e) if e.to_string().contains(wanted) => Ok(()),
            Err(e) => Err(format!("error `{e}`, wanted one containing `{wanted}`")),
            Ok(v) => Err(format!("got {v:?}, wanted an error containing `{wanted}`")),
        };
    }
    let expect = text("expect").ok_or("no expect, error or compile_error")?;
    let want = compile_heterogeneous(expect)
        .map_err(|e| format!("expect: {e}"))?
        .eval(&Bindings::builder().build())
        .map_err(|e| format!("expect: {e}"))?;
    let got = got.map_err(|e| format!("error `{e}`, wanted {want:?}"))?;
    match same(&got, &want) {
        true => Ok(()),
        false => Err(format!("got {got:?}, wanted {want:?}")),
    }
}

/// Equal and of the same type (`1 == 1.0` is not a pass for `expect: 1`).
fn same(a: &Value, b: &Value) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b) && a == b
}

/// Per file: (passed, total), and the failures not listed as expected.
fn outcomes() -> (Vec<(&'static str, usize, usize)>, Vec<String>) {
    let mut rates = Vec::new();
    let mut problems = Vec::new();
    for (file, text) in FILES {
        let doc: Json = serde_json::from_str(text).expect("valid JSON");
        let vectors = doc["vectors"].as_array().expect("vectors");
        let mut passed = 0;
        for vector in vectors {
            let name = vector["name"].as_str().unwrap_or("?");
            let expected = EXPECTED_FAILURES
                .iter()
                .any(|(f, n, _)| f == file && *n == name);
            match (run(vector), expected) {
                (Ok(()), false) => passed += 1,
                (Ok(()), true) => problems.push(format!(
                    "{file} `{name}` passes now: remove it from EXPECTED_FAILURES"
                )),
                (Err(e), false) => problems.push(format!("{file} `{name}`: {e}")),
                (Err(_), true) => {}
            }
        }
        rates.push((*file, passed, vectors.len()));
    }
    (rates, problems)
}

#[test]
fn vendored_vectors_pass_except_the_listed_ones() {
    let (rates, problems) = outcomes();
    for (file, passed, total) in &rates {
        eprintln!("{file}: {passed}/{total}");
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_expected_failure_names_a_vector() {
    for (file, name, why) in EXPECTED_FAILURES {
        assert!(!why.is_empty(), "{file} `{name}` needs a reason");
        let text = FILES
            .iter()
            .find(|(f, _)| f == file)
            .map(|(_, t)| *t)
            .unwrap_or_else(|| panic!("no file {file}"));
        let doc: Json = serde_json::from_str(text).expect("valid JSON");
        let found = doc["vectors"]
            .as_array()
            .expect("vectors")
            .iter()
            .any(|v| v["name"].as_str() == Some(name));
        assert!(found, "{file} has no vector `{name}`");
    }
}

/// The pass rates `docs/cel.md` gives must be the ones the test measures.
#[test]
fn the_documented_pass_rates_are_current() {
    let docs = include_str!("../../../docs/cel.md");
    let labels = [
        ("kubernetes/lists.json", "| Kubernetes lists |"),
        ("kubernetes/quantity.json", "| Kubernetes quantity |"),
        ("kubernetes/semver.json", "| Kubernetes semver |"),
        ("cel-go/bindings.json", "| cel-go bindings |"),
        (
            "cel-go/lists.json",
            "| cel-go lists (+ optional `first`, `last`, `unwrap`) |",
        ),
        ("cel-go/sets.json", "| cel-go sets |"),
        ("cel-go/regex.json", "| cel-go regex |"),
    ];
    let (rates, _) = outcomes();
    assert_eq!(rates.len(), labels.len());
    for (file, passed, total) in rates {
        let label = labels
            .iter()
            .find(|(f, _)| *f == file)
            .map(|(_, l)| *l)
            .expect("a label");
        let row = docs
            .lines()
            .find(|line| line.starts_with(label))
            .unwrap_or_else(|| panic!("docs/cel.md has no row {label}"));
        assert!(
            row.ends_with(&format!("| {passed}/{total} |")),
            "docs/cel.md: {row}, measured {passed}/{total}"
        );
    }
}

/// Every function Kubernetes declares for the lists (1.24), quantity
/// (1.29) and semver (1.31, 1.33) libraries, from apiserver's
/// `library_compatibility_test.go`, loads.
#[test]
fn kubernetes_function_names_load() {
    for name in [
        "isSorted",
        "sum",
        "max",
        "min",
        "indexOf",
        "lastIndexOf",
        "add",
        "asApproximateFloat",
        "asInteger",
        "compareTo",
        "isGreaterThan",
        "isInteger",
        "isLessThan",
        "isQuantity",
        "quantity",
        "sign",
        "sub",
        "isSemver",
        "major",
        "minor",
        "patch",
        "semver",
    ] {
        assert!(crate::known::is_supported(name), "{name}");
    }
}

/// Each vector file's provenance row in `conformance/SOURCES.files.tsv`
/// has its current sha256.
#[test]
fn the_provenance_rows_are_current() {
    use sha2::{Digest, Sha256};
    let sources = include_str!("../../../conformance/SOURCES.files.tsv");
    for (file, text) in FILES {
        let dest = format!("cel/{file}");
        let row = sources
            .lines()
            .find(|line| line.split('\t').next() == Some(dest.as_str()))
            .unwrap_or_else(|| panic!("SOURCES.files.tsv has no row for {dest}"));
        let sha = ivpol_verify::encoding::hex(&Sha256::digest(text.as_bytes()));
        assert_eq!(row.split('\t').nth(4), Some(sha.as_str()), "{dest}");
    }
}
