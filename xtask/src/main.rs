//! `cargo xtask`: project automation that plain cargo cannot express.
//!
//! - `cargo xtask test`: installs the system packages the tests need (Debian,
//!   via apt-get) and the oracles the fixture cross-checks use (openssl, and
//!   sigstore-python in a venv under the target dir) and moto's server (a
//!   stand-in for AWS, in a venv of its own), builds the `ivpol`
//!   binary with its embedded component, and runs every test of the
//!   workspace, end-to-end ones included, then the tests of the oracles'
//!   workspace (`oracles/`), after rustfmt and `deny`; its build is the
//!   `lint` build.
//! - `cargo xtask lint`: rustfmt check, then the build of both workspaces
//!   with clippy-driver as the members' compiler, `-D warnings`, the
//!   component (built for wasm32-wasip2) included.
//! - `cargo xtask deny`: `cargo deny check` over licenses, bans and sources
//!   (`deny.toml`) of both workspaces, and duplicate versions in the
//!   component's tree (`guest/deny.toml`).
//! - `cargo xtask soak [--minutes N]`: mixed traffic against `ivpol serve`
//!   for N minutes (default 1), RSS sampled every second; fails on any
//!   wrong answer to a good request (not part of `test`).
//! - `cargo xtask oracles`: installs only the cross-check oracles and prints
//!   the `export` lines that let `cargo test -p ivpol-tests --test e2e
//!   fixtures_crosscheck` run on its own: `eval "$(cargo xtask oracles)"`.
//!   (The oracles linked in as crates, in `oracles/`, need no install.)
//! - `cargo xtask fuzz [--seconds N] [TARGET...]`: runs the libFuzzer
//!   targets of `fuzz/` (`fuzz.rs`); not part of `test`.

#![forbid(unsafe_code)]

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

mod checks;
mod fuzz;
mod layers;

/// Debian packages the test suite needs, as (command it provides, package).
const SYSTEM_PACKAGES: &[(&str, &str)] = &[
    // The CNCF distribution registry 2.8 the end-to-end tests push to.
    ("docker-registry", "docker-registry"),
    // The oracle of the fixture cross-checks (signatures, chains, SETs).
    ("openssl", "openssl"),
    // sigstore-js runs on Debian's node (18 on Debian 12).
    ("node", "nodejs"),
    ("npm", "npm"),
    // Valkey/Redis, the store the shared-cache tests' replicas share (its
    // package brings redis-cli, which they read the store with).
    ("redis-server", "redis-server"),
    // binaryen's optimiser, which runtime/build.rs runs on the component's
    // core module (7.1 to 6.0 MB).
    ("wasm-opt", "binaryen"),
    // A real docker credential helper, run by the credential-helper tests.
    (
        "docker-credential-ecr-login",
        "amazon-ecr-credential-helper",
    ),
];

/// Debian packages that provide no command of their own, checked with dpkg.
const LIBRARY_PACKAGES: &[&str] = &[
    // `python3 -m venv` for the sigstore-python oracle (pulls in python3).
    "python3-venv",
    // openssl-sys, under the oci-wasm crate the wkg interop tests
    // (oracles/) pull and push with (native-tls): the headers and
    // pkg-config to find them.
    "libssl-dev",
    "pkg-config",
];

/// The sigstore-python release the cross-checks verify bundles with.
const SIGSTORE_PYTHON: &str = "4.5.1";

/// The Notary envelope oracles, installed into the same venv: jwcrypto for
/// JWS, pycose for COSE. pycose 1.1.0 fails on cbor2 6 (arrays decode as
/// tuples), so cbor2 stays on 5.
const NOTARY_PYTHON: &[(&str, &str)] = &[
    ("jwcrypto", "1.6.1"),
    ("pycose", "1.1.0"),
    ("cbor2", "5.9.0"),
];

/// moto, the local stand-in for AWS (ECR tokens, KMS keys) the
/// credential-provider and KMS tests run against.
const MOTO: &str = "5.2.6";

/// sigstore-js for public-key bundles; 2.1 is the last line that runs on
/// node 18 (`^18.17.0 || >=20.5.0`).
const SIGSTORE_JS: &[&str] = &[
    "@sigstore/verify@2.1.1",
    "@sigstore/bundle@2.3.2",
    "@sigstore/protobuf-specs@0.3.2",
];

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("test") => test(&args[1..]),
        Some("lint") => checks::lint(),
        Some("deny") => checks::deny(),
        Some("oracles") => oracles(),
        Some("bench") => bench(&args[1..]),
        Some("soak") => soak(&args[1..]),
        Some("fuzz") => fuzz::fuzz(&args[1..]),
        _ => {
            eprintln!(
                "usage: cargo xtask <test [cargo test args...] | bench [--duration SECS] | soak [--minutes N] | fuzz [--seconds N] [TARGET...] | lint | deny | oracles>"
            );
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
    // `cargo run` gave this process xtask's package variables. Build
    // scripts that watch such variables (ring's do) would see them change
    // between a build from here and one from a shell, and rebuild each
    // time; drop them so both builds are the same build.
    for (var, _) in std::env::vars_os() {
        let name = var.to_string_lossy();
        if [
            "CARGO_PKG_",
            "CARGO_MANIFEST_",
            "CARGO_CRATE_",
            "CARGO_BIN_",
        ]
        .iter()
        .any(|p| name.starts_with(p))
            || name == "CARGO_PRIMARY_PACKAGE"
        {
            cmd.env_remove(&var);
        }
    }
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

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"))
}

/// The oracles' workspace: the tests whose oracle is a crate linked in
/// (sigstore-verify, oci-wasm) and brings a second RustCrypto generation,
/// kept out of the product's Cargo.lock with a lockfile of their own.
const ORACLES_MANIFEST: &str = "oracles/Cargo.toml";

/// `cargo SUBCOMMAND --manifest-path oracles/Cargo.toml`, building into the
/// root workspace's target dir (not `oracles/target`), so that a crate both
/// workspaces build with the same version, features and profile is built
/// once.
fn oracles_cargo(subcommand: &str) -> Command {
    let mut cmd = cargo();
    cmd.args([subcommand, "--manifest-path", ORACLES_MANIFEST])
        .env("CARGO_TARGET_DIR", target_dir());
    cmd
}

/// Installs what the fixture cross-checks need; returns the environment
/// that tells the tests where each oracle is.
fn install_oracles() -> Result<Vec<(&'static str, PathBuf)>> {
    install_system_packages()?;
    let python = install_sigstore_python()?;
    let node_modules = install_sigstore_js()?;
    let moto = install_moto()?;
    let moto_server = moto.with_file_name("moto_server");
    let on_path = |c: &str| {
        find_on_path(c).with_context(|| format!("{c} is not on PATH after installing it"))
    };
    Ok(vec![
        ("IVPOL_OPENSSL", on_path("openssl")?),
        ("IVPOL_SIGSTORE_PYTHON", python),
        ("IVPOL_NODE", on_path("node")?),
        ("IVPOL_SIGSTORE_JS", node_modules),
        ("IVPOL_MOTO_SERVER", moto_server),
        ("IVPOL_MOTO_PYTHON", moto),
    ])
}

fn oracles() -> Result<()> {
    for (var, path) in install_oracles()? {
        println!("export {var}={}", path.display());
    }
    Ok(())
}

/// sigstore-js under the target dir; returns its node_modules.
fn install_sigstore_js() -> Result<PathBuf> {
    let dir = target_dir().join("xtask").join("sigstore-js");
    let modules = dir.join("node_modules");
    let version = |pkg: &str| -> Option<String> {
        let manifest = std::fs::read_to_string(modules.join(pkg).join("package.json")).ok()?;
        let at = manifest.find("\"version\"")?;
        let rest = &manifest[at + 9..];
        let start = rest.find('"')? + 1;
        let end = start + rest[start..].find('"')?;
        Some(rest[start..end].to_string())
    };
    let ready = SIGSTORE_JS.iter().all(|spec| {
        let (pkg, want) = spec.rsplit_once('@').expect("name@version");
        version(pkg).as_deref() == Some(want)
    });
    if ready {
        return Ok(modules);
    }
    eprintln!(
        "xtask: installing {} into {}",
        SIGSTORE_JS.join(" "),
        dir.display()
    );
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::write(dir.join("package.json"), "{\"private\": true}\n")?;
    run(Command::new("npm")
        .current_dir(&dir)
        .args(["install", "--no-audit", "--no-fund", "--silent"])
        .args(SIGSTORE_JS))?;
    Ok(modules)
}

fn test(extra: &[String]) -> Result<()> {
    // Style and supply chain first: they fail in minutes, not after the
    // whole suite.
    checks::fmt()?;
    layers::check()?;
    checks::deny()?;
    require_kubectl()?;
    let oracles = install_oracles()?;
    // The end-to-end tests drive the real binary, so build it first, with
    // every target of the workspace: features are then resolved as
    // `cargo test --workspace` resolves them (dev-dependencies such as
    // kube included), so the test build reuses all of it. Building only
    // `-p ivpol-host` resolved them differently and compiled wasmtime twice.
    // This build (the oracles' workspace's too) is also the clippy run; the
    // tests keep its environment so that cargo does not compile the members
    // again without it.
    checks::build_linted()?;
    let bin = target_dir().join("debug").join("ivpol");
    let env = checks::clippy_env()?;
    run(cargo()
        .args(["test", "--workspace"])
        .args(extra)
        .envs(env.clone())
        .env("IVPOL_BIN", &bin)
        .envs(oracles.clone()))?;
    // The oracles' workspace next, with the same binary and environment.
    // Cargo's own options (`-p`, ...) name the root's packages; only the
    // test binaries' arguments, after `--` (a name filter, ...), apply here.
    run(oracles_cargo("test")
        .args(harness_args(extra))
        .envs(env)
        .env("IVPOL_BIN", &bin)
        .envs(oracles))
}

/// The arguments after `--` in `cargo xtask test ARGS`, with the `--`.
fn harness_args(extra: &[String]) -> &[String] {
    let at = extra.iter().position(|a| a == "--").unwrap_or(extra.len());
    &extra[at..]
}

/// A venv under the target dir holding `packages` (`name`, pip's
/// requirement with extras, version); returns its python. Quick when they
/// are already there at the right versions (an older venv gets the missing
/// ones added).
fn install_venv(name: &str, packages: &[(&str, &str, &str)]) -> Result<PathBuf> {
    let venv = target_dir().join("xtask").join(name);
    let python = venv.join("bin").join("python");
    let versions: Vec<(&str, &str)> = packages.iter().map(|(n, _, v)| (*n, *v)).collect();
    let check = format!(
        "import sys, importlib.metadata as m; sys.exit(any(m.version(n) != v for n, v in {versions:?}))"
    );
    let ready = |python: &Path| {
        Command::new(python)
            .args(["-c", &check])
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    };
    if ready(&python) {
        return Ok(python);
    }
    let pins: Vec<String> = packages
        .iter()
        .map(|(_, requirement, version)| format!("{requirement}=={version}"))
        .collect();
    eprintln!(
        "xtask: installing {} into {}",
        pins.join(" "),
        venv.display()
    );
    if !python.is_file() {
        // Debian's python3 (where python3-venv belongs), not whatever is first on PATH.
        let system_python = ["/usr/bin/python3"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
            .or_else(|| find_on_path("python3"))
            .context("no python3: apt-get install python3-venv")?;
        run(Command::new(system_python)
            .args(["-m", "venv", "--clear"])
            .arg(&venv))?;
    }
    run(Command::new(venv.join("bin").join("pip"))
        .args(["install", "-q", "--disable-pip-version-check"])
        .args(&pins))?;
    if !ready(&python) {
        bail!(
            "{} are still not importable from {}",
            pins.join(" "),
            python.display()
        );
    }
    Ok(python)
}

/// sigstore-python and the Notary oracles, in one venv.
fn install_sigstore_python() -> Result<PathBuf> {
    let packages: Vec<(&str, &str, &str)> = std::iter::once(("sigstore", SIGSTORE_PYTHON))
        .chain(NOTARY_PYTHON.iter().copied())
        .map(|(name, version)| (name, name, version))
        .collect();
    install_venv("sigstore-venv", &packages)
}

/// moto's server, in a venv of its own (its boto and cryptography pins
/// need not agree with sigstore's); returns the venv's python.
fn install_moto() -> Result<PathBuf> {
    install_venv("moto-venv", &[("moto", "moto[server]", MOTO)])
}

/// The performance run (`docs/performance.md`): release builds of `ivpol` and the
/// bench, a loopback registry, one table. Writes `target/bench/report.md` and every figure by name
/// in `target/bench/report.json`.
fn bench(extra: &[String]) -> Result<()> {
    install_system_packages()?;
    run(cargo().args([
        "build",
        "--release",
        "-p",
        "ivpol-host",
        "-p",
        "ivpol-bench",
    ]))?;
    let release = target_dir().join("release");
    let out = target_dir().join("bench");
    std::fs::create_dir_all(&out)?;
    run(Command::new(release.join("ivpol-bench"))
        .args(extra)
        .arg("--out")
        .arg(out.join("report.md"))
        .arg("--json")
        .arg(out.join("report.json"))
        .env("IVPOL_BIN", release.join("ivpol")))
}

/// `cargo xtask soak [--minutes N]`: mixed traffic against `ivpol serve`
/// and a loopback registry, RSS sampled every second (`tests/src/bin/soak.rs`).
/// Not part of `cargo xtask test`.
fn soak(extra: &[String]) -> Result<()> {
    install_system_packages()?;
    run(cargo().args(["build", "--workspace", "--all-targets"]))?;
    let debug = target_dir().join("debug");
    run(Command::new(debug.join("soak"))
        .args(extra)
        .env("IVPOL_BIN", debug.join("ivpol")))
}

/// Installs each missing package with apt-get (the machines run Debian as root).
fn install_system_packages() -> Result<()> {
    let missing: Vec<&str> = SYSTEM_PACKAGES
        .iter()
        .filter(|(command, _)| !on_path(command))
        .map(|(_, package)| *package)
        .chain(
            LIBRARY_PACKAGES
                .iter()
                .copied()
                .filter(|p| !dpkg_installed(p)),
        )
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

/// `kubectl kustomize` renders deploy/ in the tests. It is not installed
/// here: Debian's `kubernetes-client` (1.20) is too old for kustomize 5
/// and conflicts with the kubectl the machines carry.
fn require_kubectl() -> Result<()> {
    if !on_path("kubectl") {
        bail!("the tests render deploy/ with `kubectl kustomize`: install kubectl 1.27 or later (kustomize 5), not Debian's kubernetes-client");
    }
    Ok(())
}

fn on_path(command: &str) -> bool {
    find_on_path(command).is_some()
}

fn find_on_path(command: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&paths)
        .chain(["/usr/sbin".into(), "/usr/bin".into()])
        .map(|dir| dir.join(command))
        .find(|p| p.is_file())
}

fn dpkg_installed(package: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", package])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::harness_args;

    #[test]
    fn only_the_test_binaries_arguments_reach_the_oracles_workspace() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(harness_args(&[]).is_empty());
        assert!(harness_args(&args(&["-p", "ivpol-host"])).is_empty());
        assert_eq!(
            harness_args(&args(&["-p", "ivpol-tests", "--", "wkg", "--nocapture"])),
            args(&["--", "wkg", "--nocapture"])
        );
    }
}
