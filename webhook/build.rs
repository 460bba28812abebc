//! Bakes a policy directory into the component (`IVPOL_WEBHOOK_POLICIES`,
//! the sample policies by default): what it serves when the host preopens
//! no `/policies`.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=IVPOL_WEBHOOK_POLICIES");
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let dir = std::env::var_os("IVPOL_WEBHOOK_POLICIES")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("../policies"));
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            matches!(
                p.extension().and_then(|x| x.to_str()),
                Some("yaml" | "yml" | "json")
            )
        })
        .collect();
    files.sort();
    let mut out = String::from("&[\n");
    for f in &files {
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let path = f.canonicalize().unwrap_or_else(|_| f.clone());
        out.push_str(&format!(
            "    ({name:?}, include_str!({:?})),\n",
            path.display().to_string()
        ));
    }
    out.push_str("]\n");
    let target = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo")).join("baked.rs");
    std::fs::write(&target, out).unwrap_or_else(|e| panic!("writing {}: {e}", target.display()));
}
