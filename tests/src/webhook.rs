//! The webhook component (`webhook/`), built for the tests that run it under
//! a standard wasi:http host (`wasi-http-host/`, [`host_bin`]): the guest
//! profile into the guest's target directory, as `runtime/build.rs` builds
//! the policy module, so the two share their dependencies' builds.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The component's path, built once per test process.
pub fn component() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(build).clone()
}

fn build() -> PathBuf {
    let target = crate::target_dir().join("guest");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .args(["build", "--profile", "guest", "-p", "ivpol-webhook"])
        .args(["--target", "wasm32-wasip2", "--target-dir"])
        .arg(&target);
    // What the outer build set for itself must not reach this one.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "RUSTC_WORKSPACE_WRAPPER",
        "CLIPPY_ARGS",
    ] {
        cmd.env_remove(var);
    }
    // Linted as the policy module is, so both reuse the same crate builds.
    if let Ok(driver) = std::env::var("IVPOL_GUEST_CLIPPY") {
        cmd.env("RUSTC_WORKSPACE_WRAPPER", driver)
            .env("CLIPPY_ARGS", "-D__CLIPPY_HACKERY__warnings");
    }
    let status = cmd
        .status()
        .expect("running cargo for the webhook component");
    assert!(status.success(), "building the webhook component failed");
    target.join("wasm32-wasip2/guest/ivpol_webhook.wasm")
}

/// The standard wasi:http host (`tests/wasi-http-host/`), as the
/// workspace's debug build left it (`cargo xtask test` builds every target
/// first; a test cannot build it while its own cargo holds the directory).
pub fn host_bin() -> PathBuf {
    let bin = crate::target_dir().join("debug").join("wasi-http-host");
    assert!(
        bin.exists(),
        "{} is missing: build it with `cargo build -p ivpol-wasi-http-host`",
        bin.display()
    );
    bin
}
