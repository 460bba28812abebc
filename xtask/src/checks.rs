//! The style and supply-chain checks `cargo xtask test` runs before the
//! tests (and `cargo xtask lint` runs alone): rustfmt, clippy with
//! `-D warnings` on the workspace and on the component as it is built (for
//! wasm32-wasip2), and `cargo deny` over licenses, bans and sources.

use super::{cargo, run, target_dir, workspace};
use anyhow::Result;
use std::path::PathBuf;
use std::process::Command;

/// The cargo-deny release the checks run, installed under the target dir.
const CARGO_DENY: &str = "0.20.2";

/// rustfmt and clippy, workspace and component.
pub fn lint() -> Result<()> {
    run(cargo().args(["fmt", "--all", "--check"]))?;
    run(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    // The component's own build: cfgs such as wasm32-only code are only
    // seen there. Its own target dir, as the host's build script keeps.
    let guest_dir = target_dir().join("guest-clippy");
    run(cargo()
        .args([
            "clippy",
            "-p",
            "ivpol-guest",
            "--target",
            "wasm32-wasip2",
            "--target-dir",
        ])
        .arg(&guest_dir)
        .args(["--", "-D", "warnings"]))
}

/// `cargo deny check licenses bans sources` with `deny.toml`, and bans
/// again over the component's tree alone with `guest/deny.toml`, which
/// also refuses duplicate crate versions there. Advisories are not
/// checked: the RustSec database cannot be fetched here (`docs/security.md`).
pub fn deny() -> Result<()> {
    let deny = install_cargo_deny()?;
    run(Command::new(&deny).current_dir(workspace()).args([
        "--all-features",
        "check",
        "licenses",
        "bans",
        "sources",
    ]))?;
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

/// `cargo-deny` at [`CARGO_DENY`], installed once under the target dir.
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
            .arg(&root))?;
    }
    Ok(bin)
}
