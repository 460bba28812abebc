//! `ivpol sigstore verify-bundle`: the verify-bundle command of the
//! sigstore-conformance client interface, run by the component's own
//! bundle verifier. Exit status 0 means verified, anything else not.

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use ivpol_runtime::wit::VerificationFailure;
pub(crate) use ivpol_runtime::{sigstore as wit, Runtime};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Subcommand)]
pub(super) enum SigstoreCommand {
    /// Verify a Sigstore bundle for an artifact (file or sha256:<hex>).
    VerifyBundle(VerifyBundleArgs),
}

#[derive(Args)]
pub(super) struct VerifyBundleArgs {
    /// Use the Sigstore staging instance (needs --trusted-root: only the
    /// production root is built in).
    #[arg(long)]
    staging: bool,
    /// The bundle (`*.sigstore.json`).
    #[arg(long)]
    bundle: PathBuf,
    /// The signing certificate's expected SAN.
    #[arg(
        long = "certificate-identity",
        requires = "issuer",
        conflicts_with = "key"
    )]
    identity: Option<String>,
    /// The signing certificate's expected OIDC issuer.
    #[arg(long = "certificate-oidc-issuer", id = "issuer", requires = "identity")]
    issuer: Option<String>,
    /// PEM public key, for bundles signed with a managed key.
    #[arg(long)]
    key: Option<PathBuf>,
    /// Sigstore TrustedRoot JSON (default: the public-good production root).
    #[arg(long = "trusted-root")]
    trusted_root: Option<PathBuf>,
    /// Verify N times in one component instance and print the mean time
    /// of one verification (`cargo xtask bench` compares it with the same
    /// verifier built natively).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    repeat: u32,
    /// The artifact: a file, or `sha256:<64 hex>` when no such file exists.
    artifact: String,
}

pub(super) async fn run(
    command: SigstoreCommand,
    component: &[u8],
    cache: Option<&Path>,
) -> Result<()> {
    let SigstoreCommand::VerifyBundle(args) = command;
    let bundle = read(&args.bundle)?;
    let artifact = artifact_sha256(&args.artifact)?;
    let signer = match (&args.key, &args.identity, &args.issuer) {
        (Some(key), _, _) => {
            wit::Signer::Key(String::from_utf8(read(key)?).context("the key is not UTF-8 PEM")?)
        }
        (None, Some(subject), Some(issuer)) => wit::Signer::Identity(wit::Identity {
            subject: subject.clone(),
            issuer: issuer.clone(),
        }),
        _ => bail!("give --key, or --certificate-identity with --certificate-oidc-issuer"),
    };
    let trusted_root = match &args.trusted_root {
        Some(p) => Some(String::from_utf8(read(p)?).context("the trusted root is not UTF-8 JSON")?),
        None if args.staging => {
            bail!("--staging needs --trusted-root: only the production root is built in")
        }
        None => None,
    };
    // The verifier makes no registry calls; one bundle, one instance.
    let runtime = Runtime::offline(component, cache)?;
    let (outcome, took) = runtime
        .verify_bundle(bundle, artifact, signer, trusted_root, args.repeat)
        .await?;
    report(outcome, took, args.repeat, &args.artifact)
}

/// Prints a standalone verification's outcome for `subject`: `OK`, with
/// the mean time of one call when it was repeated, or the error to exit
/// with.
pub(super) fn report(
    outcome: std::result::Result<(), VerificationFailure>,
    took: Duration,
    repeat: u32,
    subject: &str,
) -> Result<()> {
    if let Err(why) = outcome {
        bail!("verification failed: {}", why.message);
    }
    println!("OK: {subject}");
    if repeat > 1 {
        let micros = took.as_secs_f64() * 1e6 / f64::from(repeat);
        println!("verification: {micros:.1} µs (mean of {repeat})");
    }
    Ok(())
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

/// The conformance rule: `sha256:<64 hex>` that is not a file on disk is a
/// digest; anything else is a path.
fn artifact_sha256(arg: &str) -> Result<Vec<u8>> {
    let path = Path::new(arg);
    if let Some(hex) = arg.strip_prefix("sha256:") {
        if hex.len() == 64 && !path.exists() {
            return decode_hex(hex).with_context(|| format!("{arg} is not a sha256 digest"));
        }
    }
    Ok(Sha256::digest(read(path)?).to_vec())
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    (0..hex.len())
        .step_by(2)
        .map(|i| {
            hex.get(i..i + 2)
                .and_then(|b| u8::from_str_radix(b, 16).ok())
        })
        .collect()
}
