//! The component's core module through binaryen's `wasm-opt`, spliced back
//! into the component (a module of build.rs).
//!
//! A component built by wasm-component-ld holds the guest as one core
//! module section next to small adapter shims. `wasm-opt` keeps the
//! module's exports and the imports it uses, so the component's other
//! sections, which name them, still hold. The result is kept beside its
//! input, so a second build (debug after release) of the same guest skips
//! the run.

use std::path::Path;
use std::process::Command;

/// Size first: -Oz measured no slower on the request path than -O2.
const LEVEL: &str = "-Oz";
/// The features rustc's wasm32 targets emit by default, and SIMD128, which
/// the guest is built with (`.cargo/config.toml`); binaryen 108 validates
/// nothing else unless told.
const FEATURES: &[&str] = &[
    "--enable-simd",
    "--enable-bulk-memory",
    "--enable-sign-ext",
    "--enable-mutable-globals",
    "--enable-nontrapping-float-to-int",
    "--enable-multivalue",
    "--enable-reference-types",
];
/// A component section holding a core module.
const CORE_MODULE: u8 = 1;
/// A custom section's id, in components as in core modules.
const CUSTOM: u8 = 0;
/// `\0asm`, the component-model version and layer.
const PREAMBLE: usize = 8;

/// `component` with its core module optimised, or as it was when there is
/// no `wasm-opt` (with a warning) or `IVPOL_WASM_OPT=none`.
pub fn component(component: Vec<u8>, work: &Path) -> Vec<u8> {
    let tool = match std::env::var("IVPOL_WASM_OPT") {
        Ok(v) if v == "none" => return without_names(&component),
        Ok(path) => path,
        Err(_) if runs("wasm-opt") => "wasm-opt".to_string(),
        Err(_) => {
            println!(
                "cargo:warning=wasm-opt (Debian's binaryen) not found: the component is not \
                 optimised for size"
            );
            return without_names(&component);
        }
    };
    let input = work.join("ivpol.input.wasm");
    let output = work.join("ivpol.opt.wasm");
    let stamp = work.join("ivpol.wasm-opt");
    let recipe = format!("{tool} {LEVEL} {}", FEATURES.join(" "));
    let unchanged = std::fs::read(&input).is_ok_and(|old| old == component)
        && std::fs::read_to_string(&stamp).is_ok_and(|s| s == recipe);
    if unchanged {
        if let Ok(done) = std::fs::read(&output) {
            return done;
        }
    }
    let optimised = without_names(&splice(&component, work, &tool));
    write(&output, &optimised);
    write(&input, &component);
    write(&stamp, recipe.as_bytes());
    optimised
}

fn splice(component: &[u8], work: &Path, tool: &str) -> Vec<u8> {
    let (start, body) = largest_core_module(component);
    let core = work.join("core.wasm");
    let core_opt = work.join("core.opt.wasm");
    write(&core, &component[body.clone()]);
    let status = Command::new(tool)
        .arg(LEVEL)
        .args(FEATURES)
        .arg(&core)
        .arg("-o")
        .arg(&core_opt)
        .status()
        .unwrap_or_else(|e| panic!("running {tool}: {e}"));
    assert!(
        status.success(),
        "{tool} failed on the component's core module"
    );
    let optimised = std::fs::read(&core_opt).expect("reading wasm-opt's output");
    // Only the spliced component is kept.
    let _ = std::fs::remove_file(&core);
    let _ = std::fs::remove_file(&core_opt);
    let mut out = component[..start].to_vec();
    out.push(CORE_MODULE);
    leb128(&mut out, optimised.len());
    out.extend_from_slice(&optimised);
    out.extend_from_slice(&component[body.end..]);
    out
}

/// The component without its top-level `component-name` and `producers`
/// custom sections: names for debuggers and the toolchain's versions
/// (13 KB), which nothing that runs the component reads. Its core module
/// keeps no names either (the guest profile strips them).
fn without_names(component: &[u8]) -> Vec<u8> {
    const DROPPED: [&[u8]; 2] = [b"component-name", b"producers"];
    let mut out = component[..PREAMBLE].to_vec();
    let mut at = PREAMBLE;
    while at < component.len() {
        let (size, body) = read_leb128(component, at + 1);
        let end = body + size;
        assert!(end <= component.len(), "truncated component section");
        let dropped = component[at] == CUSTOM
            && DROPPED
                .iter()
                .any(|name| custom_name(&component[body..end]) == Some(name));
        if !dropped {
            out.extend_from_slice(&component[at..end]);
        }
        at = end;
    }
    out
}

/// A custom section's name, from its contents.
fn custom_name(contents: &[u8]) -> Option<&[u8]> {
    let (len, start) = read_leb128(contents, 0);
    contents.get(start..start.checked_add(len)?)
}

/// The offset of the largest core module section's id byte, and the range
/// of its contents.
fn largest_core_module(component: &[u8]) -> (usize, std::ops::Range<usize>) {
    let mut at = PREAMBLE;
    let mut best: Option<(usize, std::ops::Range<usize>)> = None;
    while at < component.len() {
        let id = component[at];
        let (size, body) = read_leb128(component, at + 1);
        let range = body..body + size;
        assert!(range.end <= component.len(), "truncated component section");
        let larger = best.as_ref().is_none_or(|(_, r)| r.len() < range.len());
        if id == CORE_MODULE && larger {
            best = Some((at, range.clone()));
        }
        at = range.end;
    }
    best.expect("the component holds no core module")
}

fn read_leb128(bytes: &[u8], mut at: usize) -> (usize, usize) {
    let (mut value, mut shift) = (0usize, 0);
    loop {
        let byte = bytes[at];
        at += 1;
        value |= usize::from(byte & 0x7f) << shift;
        shift += 7;
        if byte < 0x80 {
            return (value, at);
        }
    }
}

fn leb128(out: &mut Vec<u8>, mut value: usize) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn runs(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}
