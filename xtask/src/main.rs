//! `cargo xtask`: project automation that plain cargo cannot express.
//!
//! - `cargo xtask test`: installs the system packages the tests need (Debian,
//!   via apt-get), builds the `ivpol` binary with its embedded component, and
//!   runs every test of the workspace, end-to-end ones included.
//! - `cargo xtask lint`: rustfmt check and clippy with `-D warnings`.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Debian packages the test suite needs, as (command it provides, package).
const SYSTEM_PACKAGES: &[(&str, &str)] = &[
    // The CNCF distribution registry 2.8 the end-to-end tests push to.
    ("docker-registry", "docker-registry"),
];

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("test") => test(&args[1..]),
        Some("lint") => lint(),
        _ => {
            eprintln!("usage: cargo xtask <test [cargo test args...] | lint>");
            bail!("unknown or missing xtask command")
        }
    }
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(workspace());
    cmd
}

fn run(cmd: &mut Command) -> Result<()> {
    eprintln!("xtask: running {cmd:?}");
    let status = cmd.status().with_context(|| format!("starting {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed with {status}");
    }
    Ok(())
}

fn test(extra: &[String]) -> Result<()> {
    install_system_packages()?;
    // The end-to-end tests drive the real binary, so build it first.
    run(cargo().args(["build", "-p", "ivpol-host"]))?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"));
    let bin = target.join("debug").join("ivpol");
    run(cargo()
        .args(["test", "--workspace"])
        .args(extra)
        .env("IVPOL_BIN", bin))
}

fn lint() -> Result<()> {
    run(cargo().args(["fmt", "--all", "--check"]))?;
    run(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))
}

/// Installs each missing package with apt-get (the machines run Debian as root).
fn install_system_packages() -> Result<()> {
    let missing: Vec<&str> = SYSTEM_PACKAGES
        .iter()
        .filter(|(command, _)| !on_path(command))
        .map(|(_, package)| *package)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    eprintln!("xtask: installing {}", missing.join(" "));
    run(Command::new("apt-get").arg("update").arg("-q"))?;
    run(Command::new("apt-get")
        .args(["install", "-y", "-q", "--no-install-recommends"])
        .args(&missing)
        .env("DEBIAN_FRONTEND", "noninteractive"))
}

fn on_path(command: &str) -> bool {
    let paths = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&paths)
        .chain(["/usr/sbin".into(), "/usr/bin".into()])
        .any(|dir| dir.join(command).is_file())
}
