//! The style and supply-chain checks `cargo xtask test` runs with the
//! tests (and `cargo xtask lint` runs alone): rustfmt, clippy with
//! `-D warnings` on the workspace, on the oracles' workspace (`oracles/`)
//! and on the component as it is built (for wasm32-wasip2), the crates'
//! allowed edges (`layers.rs`), and `cargo deny` over licenses, bans and
//! sources.

use super::{cargo, oracles_cargo, run, target_dir, workspace, ORACLES_MANIFEST};
use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::process::Command;

/// The cargo-deny release the checks run, installed under the target dir.
const CARGO_DENY: &str = "0.20.2";

/// rustfmt, the crate layers, then the workspace build with clippy's lints
/// (`-D warnings`).
pub fn lint() -> Result<()> {
    fmt()?;
    super::layers::check()?;
    build_linted()
}

/// `cargo fmt --all --check`, in the root workspace and the oracles'.
pub fn fmt() -> Result<()> {
    run(cargo().args(["fmt", "--all", "--check"]))?;
    run(cargo().args([
        "fmt",
        "--all",
        "--check",
        "--manifest-path",
        ORACLES_MANIFEST,
    ]))
}

/// `cargo build --workspace --all-targets` with clippy as the compiler of
/// the workspace's own crates, warnings denied; then the same for the
/// oracles' workspace, into the same target dir.
///
/// `cargo clippy` checks every dependency again in check mode, a second
/// compile of wasmtime that took 10 of CI's minutes; as
/// `RUSTC_WORKSPACE_WRAPPER`, clippy-driver lints and compiles the members
/// in the one build the tests need. The component, built for wasm32-wasip2
/// by the host's build script (where cfgs such as wasm32-only code are
/// seen), is linted the same way through `IVPOL_GUEST_CLIPPY`.
pub fn build_linted() -> Result<()> {
    run(cargo()
        .args(["build", "--workspace", "--all-targets"])
        .envs(clippy_env()?))?;
    run(oracles_cargo("build")
        .arg("--all-targets")
        .envs(clippy_env()?))
}

/// The environment that makes a cargo build a clippy run: pass it to every
/// build and test of `cargo xtask test`, since cargo rebuilds the members
/// when the wrapper changes.
pub fn clippy_env() -> Result<Vec<(&'static str, String)>> {
    let sysroot = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .args(["--print", "sysroot"])
        .output()
        .context("running rustc --print sysroot")?;
    let driver = PathBuf::from(String::from_utf8(sysroot.stdout)?.trim())
        .join("bin")
        .join("clippy-driver");
    if !driver.is_file() {
        bail!(
            "{} is missing: rustup component add clippy",
            driver.display()
        );
    }
    let driver = driver.to_string_lossy().into_owned();
    Ok(vec![
        ("RUSTC_WORKSPACE_WRAPPER", driver.clone()),
        // cargo-clippy's way of passing clippy-driver its arguments.
        ("CLIPPY_ARGS", CLIPPY_ARGS.join("__CLIPPY_HACKERY__")),
        ("IVPOL_GUEST_CLIPPY", driver),
    ])
}

/// What `cargo clippy -- -D warnings` hands clippy-driver.
const CLIPPY_ARGS: &[&str] = &["-D", "warnings"];

/// `cargo deny check licenses bans sources` with `deny.toml`, over the
/// root workspace and over the oracles' (their crates are linked into
/// tests CI runs, so the same licenses and sources apply), and bans again
/// over the component's tree alone with `guest/deny.toml`, which also
/// refuses duplicate crate versions there. Advisories are not checked: the
/// RustSec database cannot be fetched here (`docs/security.md`).
pub fn deny() -> Result<()> {
    let deny = install_cargo_deny()?;
    let check = ["check", "licenses", "bans", "sources"];
    run(Command::new(&deny)
        .current_dir(workspace())
        .arg("--all-features")
        .args(check))?;
    run(Command::new(&deny)
        .current_dir(workspace())
        .args(["--manifest-path", ORACLES_MANIFEST, "--config", "deny.toml"])
        .arg("--all-features")
        .args(check))?;
    // Its dev-dependencies are not shipped; guest/deny.toml picks the target.
    run(Command::new(&deny)
        .current_dir(workspace())
        .args([
            "--manifest-path",
            "guest/Cargo.toml",
            "--config",
            "guest/deny.toml",
        ])
        .args(["--exclude-dev", "check", "bans"]))
}

/// A release profile that compiles quickly (config overrides the installed
/// package's own `[profile.release]`).
const QUICK_RELEASE: [(&str, &str); 3] = [
    ("CARGO_PROFILE_RELEASE_LTO", "off"),
    ("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16"),
    ("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0"),
];

/// `cargo-deny` at [`CARGO_DENY`], installed once under the target dir.
///
/// Its own release profile is whole-program LTO in one codegen unit, four
/// minutes of a fresh CI run on two cores with nothing else to do. It
/// checks a lockfile in seconds however it is built, so it is built for
/// the build's speed: no LTO, parallel codegen units, no optimisation
/// (61 s to build, and 4 s to check the root's lockfile; `opt-level = 1`
/// took 126 s to build in the last fresh CI run).
fn install_cargo_deny() -> Result<PathBuf> {
    let root = target_dir().join("xtask").join("tools");
    let bin = root.join("bin").join("cargo-deny");
    let installed = Command::new(&bin)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains(CARGO_DENY))
        .unwrap_or(false);
    if !installed {
        run(cargo()
            .args([
                "install",
                "cargo-deny",
                "--locked",
                "--version",
                CARGO_DENY,
                "--root",
            ])
            .arg(&root)
            .envs(QUICK_RELEASE))?;
    }
    Ok(bin)
}
