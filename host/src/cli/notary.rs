//! `ivpol notary verify`: one Notary Project signature envelope verified
//! offline by the component's own Notary verifier, under the trust policy
//! a Kyverno `notary` attestor builds. Exit status 0 means verified.

use anyhow::{bail, Context, Result};
use base64::Engine as _;
use clap::{Args, Subcommand, ValueEnum};
pub(crate) use ivpol_runtime::{notary as wit, Runtime};
use std::path::{Path, PathBuf};

#[derive(Subcommand)]
pub(super) enum NotaryCommand {
    /// Verify a signature envelope for an artifact descriptor.
    Verify(VerifyArgs),
}

/// The envelope formats of the Notary Project, by the media type of the
/// signature layer that carries them.
#[derive(Clone, Copy, ValueEnum)]
enum EnvelopeType {
    /// JWS JSON (`application/jose+json`).
    Jws,
    /// COSE_Sign1 (`application/cose`).
    Cose,
}

impl EnvelopeType {
    fn media_type(self) -> &'static str {
        match self {
            EnvelopeType::Jws => "application/jose+json",
            EnvelopeType::Cose => "application/cose",
        }
    }
}

#[derive(Args)]
pub(super) struct VerifyArgs {
    /// The signature envelope (the signature manifest's one layer).
    #[arg(long)]
    envelope: PathBuf,
    /// The envelope's format.
    #[arg(long = "envelope-type", value_enum)]
    envelope_type: EnvelopeType,
    /// Trusted certificates, PEM or one DER certificate: the attestor's
    /// `certs` (the `ca` trust store). Repeatable.
    #[arg(long = "certs", required = true)]
    certs: Vec<PathBuf>,
    /// Trusted timestamping certificates, PEM or one DER certificate: the
    /// attestor's `tsaCerts`. Given, a countersignature is required.
    /// Repeatable.
    #[arg(long = "tsa-certs")]
    tsa_certs: Vec<PathBuf>,
    /// The signed artifact's media type.
    #[arg(long = "target-media-type")]
    target_media_type: String,
    /// The signed artifact's size in bytes.
    #[arg(long = "target-size")]
    target_size: u64,
    /// Verify N times in one component instance and print the mean time
    /// of one verification (`cargo xtask bench` compares it with the same
    /// verifier built natively).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    repeat: u32,
    /// The signed artifact's digest, `sha256:<hex>`.
    digest: String,
}

pub(super) async fn run(
    command: NotaryCommand,
    component: &[u8],
    cache: Option<&Path>,
) -> Result<()> {
    let NotaryCommand::Verify(args) = command;
    let envelope = read(&args.envelope)?;
    let certs = pem_of(&args.certs)?;
    let tsa_certs = match args.tsa_certs.is_empty() {
        true => None,
        false => Some(pem_of(&args.tsa_certs)?),
    };
    let target = wit::Descriptor {
        media_type: args.target_media_type,
        digest: args.digest.clone(),
        size: args.target_size,
    };
    // The verifier makes no registry calls; one envelope, one instance.
    let runtime = Runtime::offline(component, cache)?;
    let media_type = args.envelope_type.media_type();
    let (outcome, took) = runtime
        .verify_envelope(envelope, media_type, target, certs, tsa_certs, args.repeat)
        .await?;
    super::sigstore::report(outcome, took, args.repeat, &args.digest)
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

/// The certificates of `files` as one PEM text: PEM files as they are, any
/// other file taken as one DER certificate (notation's trust stores hold
/// both) and armoured. The component parses and checks every one.
fn pem_of(files: &[PathBuf]) -> Result<String> {
    let mut pem = String::new();
    for file in files {
        let bytes = read(file)?;
        if bytes.is_empty() {
            bail!("{} is empty: no certificate", file.display());
        }
        match std::str::from_utf8(&bytes) {
            Ok(text) if text.contains("-----BEGIN") => pem.push_str(text),
            _ => armour(&bytes, &mut pem),
        }
        pem.push('\n');
    }
    Ok(pem)
}

fn armour(der: &[u8], pem: &mut String) {
    let encoded = base64::engine::general_purpose::STANDARD.encode(der);
    pem.push_str("-----BEGIN CERTIFICATE-----\n");
    for line in encoded.as_bytes().chunks(64) {
        // Base64 is ASCII.
        pem.push_str(&String::from_utf8_lossy(line));
        pem.push('\n');
    }
    pem.push_str("-----END CERTIFICATE-----\n");
}
