//! Which fields of a Kyverno CLI test file `ivpol test` reads, and the
//! refusal of the others.
//!
//! The fields are those of Kyverno's `cli.kyverno.io/v1alpha1` `Test`
//! (`cmd/cli/kubectl-kyverno/apis/v1alpha1/test.go` and `test_result.go`).
//! Every one of them is either read or refused: a file that sets a field
//! ivpol would ignore (`clusterResources`, `variables`, a patched resource to
//! compare...) would pass or fail for the wrong reason, so it is not run.
//! An empty value (`variables: ""`, `checks: []`, `failOnMissingResources:
//! false`) asks for nothing and is accepted. Kyverno decodes test files
//! strictly (`UnmarshalStrict`), so a key neither knows, most likely a
//! typo, is refused too.

use serde_yaml_ng::Value;

/// The top-level fields `ivpol test` reads. `metadata` is read for its
/// `name` only; the rest of it describes the file and changes no result.
const TEST_READ: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "policies",
    "resources",
    "exceptions",
    "results",
];

/// Kyverno's top-level fields that `ivpol test` does not implement.
const TEST_REFUSED: &[&str] = &[
    "variables",
    "values",
    "userinfo",
    "clusterResources",
    "jsonPayload",
    "jsonPayloads",
    "httpPayloads",
    "envoyPayloads",
    "targetResources",
    "paramResources",
    "context",
    "apiCallResponses",
    "globalContextEntries",
    // kyverno-json assertions, dropped from Kyverno's Test in 2026 (#16929)
    // and still found in files written for earlier releases.
    "checks",
];

/// The `results[]` fields `ivpol test` reads.
const RESULT_READ: &[&str] = &[
    "policy",
    // Kyverno ignores it for ruleless policy kinds such as IVPs; so does ivpol.
    "rule",
    "kind",
    "resources",
    "result",
    "operation",
    // Single-resource and namespace forms Kyverno dropped in 2025 (#13481),
    // still read.
    "resource",
    "namespace",
    // Which policy type a result is about: only ImageValidatingPolicy
    // results run, the others are listed as not supported.
    "isImageValidatingPolicy",
    "isValidatingPolicy",
    "isValidatingAdmissionPolicy",
    "isMutatingAdmissionPolicy",
    "isMutatingPolicy",
    "isGeneratingPolicy",
    "isDeletingPolicy",
];

/// Kyverno's `results[]` fields that `ivpol test` does not implement. They
/// are refused in ImageValidatingPolicy results; in the others, which do
/// not run at all, they change nothing.
const RESULT_REFUSED: &[&str] = &[
    "resourceSpecs",
    "patchedResources",
    "generatedResource",
    "generatedResources",
    "cloneSourceResource",
    "failOnMissingResources",
    // Older forms Kyverno dropped in 2025 (#13481).
    "status",
    "patchedResource",
];

/// A field that keeps a test file from running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Refusal {
    /// A Kyverno field ivpol does not implement, set to a non-empty value.
    Unsupported(String),
    /// A key that is no field of Kyverno's Test (at the top level) or of its
    /// results (in `results[i]`).
    Unknown(String),
}

impl Refusal {
    /// The sentence printed for the test file `file`.
    pub(super) fn message(&self, file: &str) -> String {
        match self {
            Refusal::Unsupported(field) => format!(
                "{file}: field {field:?} is not supported by ivpol test; the file was not run"
            ),
            Refusal::Unknown(field) => format!(
                "{file}: unknown field {field:?} (not a field of Kyverno's cli.kyverno.io/v1alpha1 Test); the file was not run"
            ),
        }
    }
}

/// The fields of the parsed test file `doc` that keep it from running, in
/// file order. A document that is not a mapping is left to the parser.
pub(super) fn refusals(doc: &Value) -> Vec<Refusal> {
    let mut out = Vec::new();
    let Value::Mapping(top) = doc else {
        return out;
    };
    for (key, value) in top {
        let name = key_name(key);
        if TEST_REFUSED.contains(&name.as_str()) {
            if !is_empty(value) {
                out.push(Refusal::Unsupported(name));
            }
        } else if !TEST_READ.contains(&name.as_str()) {
            out.push(Refusal::Unknown(name));
        }
    }
    if let Some(Value::Sequence(results)) = top.get("results") {
        for (i, result) in results.iter().enumerate() {
            let Value::Mapping(fields) = result else {
                continue;
            };
            let runs = fields
                .get("isImageValidatingPolicy")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            for (key, value) in fields {
                let name = key_name(key);
                let field = format!("results[{i}].{name}");
                if RESULT_REFUSED.contains(&name.as_str()) {
                    if runs && !is_empty(value) {
                        out.push(Refusal::Unsupported(field));
                    }
                } else if !RESULT_READ.contains(&name.as_str()) {
                    out.push(Refusal::Unknown(field));
                }
            }
        }
    }
    out
}

/// A mapping key as written (keys are strings in every real test file).
fn key_name(key: &Value) -> String {
    match key {
        Value::String(s) => s.clone(),
        other => serde_yaml_ng::to_string(other)
            .unwrap_or_default()
            .trim_end()
            .to_string(),
    }
}

/// Whether `v` asks for nothing: null, `false`, `""`, or a list or mapping
/// of such values.
fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Sequence(items) => items.iter().all(is_empty),
        Value::Mapping(m) => m.values().all(is_empty),
        Value::Tagged(t) => is_empty(&t.value),
        Value::Number(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(yaml: &str) -> Vec<Refusal> {
        refusals(&serde_yaml_ng::from_str(yaml).expect("yaml"))
    }

    #[test]
    fn used_fields_are_refused_and_empty_ones_accepted() {
        let r = check(
            "metadata: {name: t, labels: {a: b}}\npolicies: [p.yaml]\nvariables: values.yaml\n\
             checks: []\nvalues: {globalValues: {}}\nuserinfo: ''\nclusterResources: [c.yaml]\npolcies: []\n",
        );
        assert_eq!(
            r,
            [
                Refusal::Unsupported("variables".into()),
                Refusal::Unsupported("clusterResources".into()),
                Refusal::Unknown("polcies".into()),
            ]
        );
        assert_eq!(
            r[0].message("t/kyverno-test.yaml"),
            "t/kyverno-test.yaml: field \"variables\" is not supported by ivpol test; the file was not run"
        );
    }

    #[test]
    fn result_fields_are_refused_only_where_the_result_runs() {
        let r = check(
            "results:\n\
             - {isMutatingPolicy: true, policy: m, patchedResources: p.yaml, result: pass, kind: Pod}\n\
             - {isImageValidatingPolicy: true, policy: i, patchedResources: p.yaml, failOnMissingResources: false, result: pass, kind: Pod}\n\
             - {isImageValidatingPolicy: true, policy: i, reslt: pass, kind: Pod}\n",
        );
        assert_eq!(
            r,
            [
                Refusal::Unsupported("results[1].patchedResources".into()),
                Refusal::Unknown("results[2].reslt".into()),
            ]
        );
    }
}
