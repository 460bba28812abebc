//! The crates' layers: which workspace crates each member may depend on
//! (normal and build dependencies; a test's dev-dependencies are its own
//! business). `cargo xtask lint` reads the graph from `cargo metadata` and
//! fails on an edge this table does not list, so that a new edge, one
//! running back up above all, is a decision written down here and in
//! `docs/architecture.md`, never an accident.

use super::{cargo, workspace};
use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::collections::BTreeSet;

/// Each member and the members it may depend on. Lower layers first:
/// `refs` under everything; the verifier, the CEL environment and the OCI
/// client over it; Notary and TUF over the verifier; requests, matching and
/// policies over those; the engine (evaluation, verification, results,
/// webhook configurations) over them all; the guest, the component's WIT
/// glue, over the engine, and beside it the webhook component (the engine
/// under any wasi:http host). On the host's side, which shares only `refs`
/// with the component: the runtime (wasmtime, the capabilities, the
/// network; it embeds the built component), the cluster over it, the
/// reports over both, the server over the three, and the `ivpol` binary
/// (the command line) on top. The bench drives the verifier natively,
/// through the guest's re-exports, with the tests' fixtures.
const ALLOWED: &[(&str, &[&str])] = &[
    ("ivpol-refs", &[]),
    ("ivpol-verify", &["ivpol-refs"]),
    ("ivpol-notary", &["ivpol-refs", "ivpol-verify"]),
    ("ivpol-tuf", &["ivpol-refs", "ivpol-verify"]),
    ("ivpol-cel", &["ivpol-refs", "ivpol-verify"]),
    ("ivpol-oci", &["ivpol-refs"]),
    ("ivpol-shapes", &["ivpol-refs"]),
    (
        "ivpol-policy",
        &["ivpol-cel", "ivpol-oci", "ivpol-refs", "ivpol-verify"],
    ),
    (
        "ivpol-engine",
        &[
            "ivpol-cel",
            "ivpol-notary",
            "ivpol-oci",
            "ivpol-policy",
            "ivpol-refs",
            "ivpol-tuf",
            "ivpol-verify",
        ],
    ),
    (
        "ivpol-guest",
        &[
            "ivpol-cel",
            "ivpol-engine",
            "ivpol-notary",
            "ivpol-oci",
            "ivpol-policy",
            "ivpol-shapes",
            "ivpol-tuf",
            "ivpol-verify",
        ],
    ),
    (
        "ivpol-webhook",
        &["ivpol-engine", "ivpol-oci", "ivpol-policy", "ivpol-refs"],
    ),
    ("ivpol-runtime", &["ivpol-refs"]),
    ("ivpol-cluster", &["ivpol-refs", "ivpol-runtime"]),
    (
        "ivpol-report",
        &["ivpol-cluster", "ivpol-refs", "ivpol-runtime"],
    ),
    (
        "ivpol-server",
        &[
            "ivpol-cluster",
            "ivpol-refs",
            "ivpol-report",
            "ivpol-runtime",
        ],
    ),
    (
        "ivpol-host",
        &[
            "ivpol-cluster",
            "ivpol-refs",
            "ivpol-report",
            "ivpol-runtime",
            "ivpol-server",
        ],
    ),
    ("ivpol-tests", &[]),
    ("ivpol-wasi-http-host", &[]),
    ("ivpol-bench", &["ivpol-guest", "ivpol-tests"]),
    ("xtask", &[]),
];

/// Fails when the workspace has an edge, or a member, [`ALLOWED`] does not list.
pub fn check() -> Result<()> {
    let out = cargo()
        .current_dir(workspace())
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .output()
        .context("running cargo metadata")?;
    if !out.status.success() {
        bail!("cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    }
    let metadata: Value = serde_json::from_slice(&out.stdout).context("cargo metadata's JSON")?;
    let problems = unexpected(&edges(&metadata), ALLOWED);
    if !problems.is_empty() {
        bail!(
            "crate edges the layers do not allow (xtask/src/layers.rs):\n{}",
            problems.join("\n")
        );
    }
    println!("crate layers: every edge is an allowed one");
    Ok(())
}

/// `(member, member it depends on)` for every normal or build dependency
/// between workspace members.
fn edges(metadata: &Value) -> BTreeSet<(String, String)> {
    let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
    let members: BTreeSet<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let mut out = BTreeSet::new();
    for p in &packages {
        let name = p["name"].as_str().unwrap_or_default();
        for d in p["dependencies"].as_array().into_iter().flatten() {
            let dep = d["name"].as_str().unwrap_or_default();
            let kind = d["kind"].as_str();
            if members.contains(dep) && kind != Some("dev") {
                out.insert((name.to_string(), dep.to_string()));
            }
        }
        out.insert((name.to_string(), String::new()));
    }
    out
}

/// Each edge (and each member, as `(name, "")`) the table does not allow.
fn unexpected(edges: &BTreeSet<(String, String)>, allowed: &[(&str, &[&str])]) -> Vec<String> {
    edges
        .iter()
        .filter_map(|(from, to)| {
            let Some((_, deps)) = allowed.iter().find(|(n, _)| n == from) else {
                return Some(format!("{from}: a member the table does not list"));
            };
            (!to.is_empty() && !deps.contains(&to.as_str())).then(|| format!("{from} -> {to}"))
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn metadata(packages: Value) -> Value {
        json!({ "packages": packages })
    }

    #[test]
    fn an_unlisted_edge_or_member_is_named_and_dev_dependencies_are_free() {
        let m = metadata(json!([
            {"name": "ivpol-refs", "dependencies": []},
            {"name": "ivpol-guest", "dependencies": [{"name": "ivpol-oci", "kind": null}]},
            {"name": "ivpol-oci", "dependencies": [
                {"name": "ivpol-refs", "kind": null},
                {"name": "ivpol-guest", "kind": null},
                {"name": "ivpol-cel", "kind": "dev"},
                {"name": "serde_json", "kind": null}
            ]},
            {"name": "ivpol-new", "dependencies": []}
        ]));
        assert_eq!(
            unexpected(&edges(&m), ALLOWED),
            [
                "ivpol-new: a member the table does not list",
                "ivpol-oci -> ivpol-guest"
            ]
        );
    }

    #[test]
    fn the_table_allows_no_edge_back_up() {
        // A member may only depend on members listed before it.
        for (i, (name, deps)) in ALLOWED.iter().enumerate() {
            for dep in *deps {
                let below = ALLOWED[..i].iter().any(|(n, _)| n == dep);
                assert!(below, "{name} -> {dep} runs back up the table");
            }
        }
    }
}
