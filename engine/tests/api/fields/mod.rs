//! Every `spec` field of the vendored CRDs is either read or refused
//! (`docs/security.md`: "enforce or refuse every policy field"): a field that
//! is parsed and ignored is a bypass.
//!
//! The test walks every property path under `spec` of Kyverno's
//! ImageValidatingPolicy, NamespacedImageValidatingPolicy and
//! PolicyException CRDs (`conformance/kyverno/config/crds`, every served
//! version) and holds them against one table, an entry per path. Each entry
//! proves one of:
//! - `Decides` / `Background` / `Webhook` / `Timeout`: the engine reads the
//!   field: the admission verdict (or the background scan, the generated
//!   webhook configurations, the deadline) differs between two policy sets
//!   that differ only in that field;
//! - `Refused`: a policy setting the field is rejected at load with a
//!   diagnostic naming the field's path;
//! - `Elsewhere`: the proof needs real signatures and lives in the named
//!   test, which must exist and name the field;
//! - `Parent`: an object or list whose every child has its own proof.
//!
//! A CRD path missing from the table, or a table path the CRDs lack, fails
//! the test: a new Kyverno field cannot arrive unnoticed.

use super::*;
use std::collections::{BTreeMap, BTreeSet};

mod documents;
mod exception_table;
mod policy_table;

use documents::*;
use exception_table::exception_table;
use policy_table::policy_table;

const CRDS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../conformance/kyverno/config/crds/policies.kyverno.io/"
);

/// Every property path under `spec`, `[]` marking list items, over all
/// versions of the CRD in `file`.
fn crd_paths(file: &str) -> BTreeSet<String> {
    fn walk(schema: &serde_yaml_ng::Value, path: &str, out: &mut BTreeSet<String>) {
        if let Some(props) = schema.get("properties").and_then(|p| p.as_mapping()) {
            for (k, v) in props {
                let k = k.as_str().expect("property names are strings");
                let p = format!("{path}.{k}");
                out.insert(p.clone());
                walk(v, &p, out);
            }
        }
        if let Some(items) = schema.get("items") {
            walk(items, &format!("{path}[]"), out);
        }
        if let Some(extra) = schema.get("additionalProperties") {
            if extra.is_mapping() {
                walk(extra, &format!("{path}{{}}"), out);
            }
        }
    }
    let text = std::fs::read_to_string(format!("{CRDS}{file}")).expect("vendored CRD");
    let crd: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).expect("CRD YAML");
    let mut out = BTreeSet::new();
    let versions = crd["spec"]["versions"].as_sequence().expect("versions");
    assert!(!versions.is_empty());
    for v in versions {
        let spec = &v["schema"]["openAPIV3Schema"]["properties"]["spec"];
        assert!(spec.is_mapping(), "{file}: no spec schema");
        walk(spec, "spec", &mut out);
    }
    out
}

enum Proof {
    /// Validate-phase verdicts of `request` differ between `a` and `b`.
    Decides {
        a: String,
        b: String,
        request: Value,
    },
    /// Verdicts differ with this phase, request and namespace object.
    DecidesWith {
        a: String,
        b: String,
        phase: Phase,
        request: Value,
        namespace: Option<String>,
    },
    /// The background scan of `resource` differs.
    Background {
        a: String,
        b: String,
        resource: Value,
    },
    /// The generated webhook configurations differ.
    Webhook { a: String, b: String },
    /// `PolicySet::max_timeout_seconds` (the deadline) differs.
    Timeout { a: String, b: String },
    /// `doc` is refused with a diagnostic naming the field.
    Refused(String),
    /// Proven by `test` in `file` (relative to the workspace).
    Elsewhere {
        file: &'static str,
        test: &'static str,
    },
    /// Each child has its own proof.
    Parent,
}

use Proof::*;

/// What a proof compares of a verdict.
fn summary(v: &Verdict) -> String {
    format!(
        "{} {:?} {:?} {:?} {:?}",
        v.allowed,
        v.message,
        v.warnings,
        v.patch,
        v.results
            .iter()
            .map(|r| (
                &r.policy,
                r.status,
                &r.message,
                &r.audit_annotations,
                &r.exceptions
            ))
            .collect::<Vec<_>>()
    )
}

fn loaded(doc: &str) -> PolicySet {
    load(&[doc.to_string()])
}

/// `doc` turned into a NamespacedImageValidatingPolicy in `default`.
fn namespaced(doc: &str) -> String {
    doc.replace(
        "kind: ImageValidatingPolicy\nmetadata:\n  name: f\n",
        "kind: NamespacedImageValidatingPolicy\nmetadata:\n  name: f\n  namespace: default\n",
    )
    .replace(
        "kind: ImageValidatingPolicy\n",
        "kind: NamespacedImageValidatingPolicy\n",
    )
}

fn webhooks(doc: &str) -> Value {
    let set = loaded(doc);
    let options = ivpol_engine::webhooks::Options {
        service_name: "ivpol".into(),
        service_namespace: "ivpol-system".into(),
        service_port: 443,
        ca: ivpol_engine::webhooks::Ca::Bundle(b"PEM".to_vec()),
        exclude_namespaces: Vec::new(),
        force_failure_policy_ignore: false,
        naming: ivpol_engine::webhooks::Naming::Kyverno,
    };
    ivpol_engine::webhooks::configurations(set.policies().filter(|p| p.autogen.is_none()), &options)
        .expect("configurations")
}

/// Runs one proof; `Err` says why it does not hold.
fn prove(path: &str, proof: &Proof, scope: &Scope) -> Result<(), String> {
    let differ = |what: &str, a: String, b: String| {
        if a == b {
            Err(format!("{what} is the same either way: {a}"))
        } else {
            Ok(())
        }
    };
    match proof {
        Decides { a, b, request } => {
            let run = |doc: &str| {
                summary(&admit_with(
                    &loaded(doc),
                    Phase::Validate,
                    scope,
                    &[],
                    request,
                    None,
                ))
            };
            differ("the verdict", run(a), run(b))
        }
        DecidesWith {
            a,
            b,
            phase,
            request,
            namespace,
        } => {
            let run = |doc: &str| {
                summary(&admit_with(
                    &loaded(doc),
                    *phase,
                    scope,
                    &[],
                    request,
                    namespace.as_deref(),
                ))
            };
            differ("the verdict", run(a), run(b))
        }
        Background { a, b, resource } => {
            let run = |doc: &str| {
                let v = loaded(doc)
                    .evaluate(
                        &resource.to_string(),
                        "CREATE",
                        None,
                        ivpol_engine::engine::Mode::Background,
                        std::sync::Arc::new(Offline),
                    )
                    .map_err(|e| e.to_string());
                format!("{:?}", v.map(|v| summary(&v)))
            };
            differ("the background scan", run(a), run(b))
        }
        Webhook { a, b } => differ(
            "the webhooks",
            webhooks(a).to_string(),
            webhooks(b).to_string(),
        ),
        Timeout { a, b } => differ(
            "the deadline",
            loaded(a).max_timeout_seconds().to_string(),
            loaded(b).max_timeout_seconds().to_string(),
        ),
        Refused(doc) => {
            let set = PolicySet::load(&[SourceDocument {
                source: "fields.yaml".into(),
                content: doc.clone(),
            }]);
            if set.policies().next().is_some() {
                return Err("the policy loaded".into());
            }
            // The diagnostic names the field: its path with list indices.
            let leaf = path.rsplit('.').next().unwrap_or(path);
            let found = set.diagnostics().iter().any(|d| d.message.contains(leaf));
            if found {
                Ok(())
            } else {
                Err(format!(
                    "no diagnostic names {leaf}: {:?}",
                    set.diagnostics()
                ))
            }
        }
        Elsewhere { file, test } => {
            let source =
                std::fs::read_to_string(format!("{}/../{file}", env!("CARGO_MANIFEST_DIR")))
                    .map_err(|e| format!("{file}: {e}"))?;
            let start = source
                .find(&format!("fn {test}("))
                .ok_or_else(|| format!("{file} has no test {test}"))?;
            let body = &source[start..];
            let body = &body[..body.find("\n}\n").unwrap_or(body.len())];
            // The test must set the field: its name appears in its body
            // (or in a helper it calls, named in `HELPERS`).
            let leaf = path
                .rsplit('.')
                .next()
                .unwrap_or(path)
                .trim_end_matches("[]");
            let in_helper = HELPERS.iter().any(|(helper_file, h)| {
                let reachable = helper_file == file || helper_file.starts_with("tests/src/");
                if !reachable || !body.contains(&format!("{h}(")) {
                    return false;
                }
                let path = format!("{}/../{helper_file}", env!("CARGO_MANIFEST_DIR"));
                let text = std::fs::read_to_string(path).unwrap_or_default();
                let Some(start) = text.find(&format!("fn {h}(")) else {
                    return false;
                };
                let rest = &text[start..];
                rest[..rest.find("\n}\n").unwrap_or(rest.len())].contains(leaf)
            });
            if body.contains(leaf) || in_helper {
                Ok(())
            } else {
                Err(format!("{file}: {test} never mentions {leaf}"))
            }
        }
        Parent => Ok(()),
    }
}

/// A `Parent` entry must have children in the table, and only parents may.
fn check_parents(table: &BTreeMap<&'static str, Proof>, problems: &mut Vec<String>) {
    for (path, proof) in table {
        let has_children = table.keys().any(|k| {
            k.len() > path.len()
                && k.starts_with(path)
                && matches!(&k[path.len()..path.len() + 1], "." | "[")
        });
        match (proof, has_children) {
            (Parent, false) => problems.push(format!("{path}: a Parent without children")),
            (Parent, true) | (_, false) => {}
            (_, true) => {}
        }
    }
}

fn check(crd_files: &[&str], table: &BTreeMap<&'static str, Proof>, scopes: &[(&str, Scope)]) {
    let mut problems = Vec::new();
    let mut crd = BTreeSet::new();
    for file in crd_files {
        let paths = crd_paths(file);
        if !crd.is_empty() && paths != crd {
            problems.push(format!("{file}: spec differs from {}", crd_files[0]));
        }
        crd.extend(paths);
    }
    let listed: BTreeSet<String> = table.keys().map(|k| k.to_string()).collect();
    for missing in crd.difference(&listed) {
        problems.push(format!(
            "{missing}: in the CRD, not in the table: prove it is read or refuse it"
        ));
    }
    for extra in listed.difference(&crd) {
        problems.push(format!("{extra}: in the table, not in the CRD"));
    }
    check_parents(table, &mut problems);
    for (kind, scope) in scopes {
        for (path, proof) in table {
            let proof = match (kind, proof) {
                (&"NamespacedImageValidatingPolicy", Decides { a, b, request }) => Decides {
                    a: namespaced(a),
                    b: namespaced(b),
                    request: request.clone(),
                },
                (&"NamespacedImageValidatingPolicy", Refused(doc)) => Refused(namespaced(doc)),
                (&"NamespacedImageValidatingPolicy", _) => continue,
                _ => match proof {
                    Decides { a, b, request } => Decides {
                        a: a.clone(),
                        b: b.clone(),
                        request: request.clone(),
                    },
                    other => {
                        if let Err(e) = prove(path, other, scope) {
                            problems.push(format!("{kind} {path}: {e}"));
                        }
                        continue;
                    }
                },
            };
            if let Err(e) = prove(path, &proof, scope) {
                problems.push(format!("{kind} {path}: {e}"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn every_image_validating_policy_field_is_read_or_refused() {
    check(
        &[
            "policies.kyverno.io_imagevalidatingpolicies.yaml",
            "policies.kyverno.io_namespacedimagevalidatingpolicies.yaml",
        ],
        &policy_table(),
        &[
            ("ImageValidatingPolicy", Scope::Cluster),
            (
                "NamespacedImageValidatingPolicy",
                Scope::Namespaced("default".into()),
            ),
        ],
    );
}

#[test]
fn every_policy_exception_field_is_read_or_refused() {
    check(
        &["policies.kyverno.io_policyexceptions.yaml"],
        &exception_table(),
        &[("PolicyException", Scope::Cluster)],
    );
}
