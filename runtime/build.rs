//! Builds the guest component for wasm32-wasip2 so that `ivpol` can embed it.
//!
//! The guest gets its own target directory (`target/guest`): the outer cargo
//! holds the lock on the main one, and sharing it would deadlock.
//! Set `IVPOL_GUEST_WASM=/path/to/component.wasm` to embed a prebuilt one.
//!
//! When binaryen's `wasm-opt` is on the PATH (Debian's `binaryen`, which
//! `cargo xtask test` and `bench` install), the component's core module is
//! optimised for size with it: 7.1 to 6.0 MB, the request path no slower
//! (docs/performance.md). `IVPOL_WASM_OPT` names another `wasm-opt`, or
//! `none` to skip the step. The component as embedded is also written to
//! `target/guest/ivpol-<profile>.wasm` (`debug` or `release`, as cargo's
//! `PROFILE` says), for the tests and the bench: a debug and a release
//! build may embed different bytes (the lint run builds the guest through
//! clippy-driver), so each names its own.

#[path = "build/optimise.rs"]
mod optimise;

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The guest's cargo profile (`[profile.guest]` in the workspace manifest).
const GUEST_PROFILE: &str = "guest";
const TARGET: &str = "wasm32-wasip2";

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let workspace = manifest_dir
        .parent()
        .expect("runtime/ lives in the workspace")
        .to_path_buf();
    let out = PathBuf::from(env::var("OUT_DIR").expect("set by cargo")).join("ivpol_guest.wasm");
    for p in [
        "guest/src",
        "guest/Cargo.toml",
        "cel",
        "oci",
        "policy",
        "engine",
        "shapes",
        "refs",
        "verify",
        "notary",
        "tuf",
        // The patched crates the guest links (cel's cost limit and more).
        "vendor",
        "wit",
        "Cargo.lock",
        // The guest's profile lives in the workspace manifest.
        "Cargo.toml",
    ] {
        println!("cargo:rerun-if-changed={}", workspace.join(p).display());
    }
    println!("cargo:rerun-if-env-changed=IVPOL_GUEST_WASM");
    println!("cargo:rerun-if-env-changed=IVPOL_GUEST_CLIPPY");
    println!("cargo:rerun-if-env-changed=IVPOL_WASM_OPT");
    if let Ok(prebuilt) = env::var("IVPOL_GUEST_WASM") {
        std::fs::copy(&prebuilt, &out).unwrap_or_else(|e| panic!("copying {prebuilt}: {e}"));
        return;
    }
    ensure_target();
    let target_dir = workspace.join("target").join("guest");
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&workspace)
        .args([
            "build",
            "--profile",
            GUEST_PROFILE,
            "-p",
            "ivpol-guest",
            "--target",
            TARGET,
            "--target-dir",
        ])
        .arg(&target_dir);
    // Settings meant for the outer (native) build must not leak into the guest's.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "RUSTC_WORKSPACE_WRAPPER",
        "CLIPPY_ARGS",
        "CARGO_MAKEFLAGS",
        "CARGO_PRIMARY_PACKAGE",
    ] {
        cmd.env_remove(var);
    }
    // `cargo xtask lint` and `test` lint the component as it is built:
    // clippy-driver compiles the guest crate, warnings denied.
    if let Ok(driver) = env::var("IVPOL_GUEST_CLIPPY") {
        cmd.env("RUSTC_WORKSPACE_WRAPPER", driver)
            .env("CLIPPY_ARGS", "-D__CLIPPY_HACKERY__warnings");
    }
    let status = cmd.status().expect("running cargo for the guest");
    assert!(status.success(), "building the guest component failed");
    let built = target_dir
        .join(TARGET)
        .join(GUEST_PROFILE)
        .join("ivpol_guest.wasm");
    let component =
        std::fs::read(&built).unwrap_or_else(|e| panic!("reading {}: {e}", built.display()));
    let component = optimise::component(component, &target_dir);
    let profile = env::var("PROFILE").expect("set by cargo");
    let as_embedded = target_dir.join(format!("ivpol-{profile}.wasm"));
    for path in [out, as_embedded] {
        std::fs::write(&path, &component)
            .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    }
}

/// rustup installs targets listed in rust-toolchain.toml only when it
/// installs the toolchain itself; add the target when it is missing.
fn ensure_target() {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = Command::new(rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| PathBuf::from(s.trim()));
    let installed = sysroot
        .map(|s| Path::new(&s).join("lib/rustlib").join(TARGET).exists())
        .unwrap_or(false);
    if !installed {
        let status = Command::new("rustup")
            .args(["target", "add", TARGET])
            .status();
        assert!(
            matches!(status, Ok(s) if s.success()),
            "the {TARGET} target is missing and `rustup target add {TARGET}` failed"
        );
    }
}
