//! Command-line interface: one file per subcommand.

mod component;
mod serve;
mod sigstore;
mod webhooks;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Kyverno ImageValidatingPolicy verification as a WebAssembly component.
#[derive(Parser)]
#[command(name = "ivpol", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the mutate and validate admission webhooks over HTTP(S).
    Serve(serve::ServeArgs),
    /// Print the webhook configurations Kyverno would register for the policies.
    Webhooks(webhooks::WebhooksArgs),
    /// Sigstore tools run by the component (the sigstore-conformance client).
    Sigstore {
        #[command(flatten)]
        component: component::ComponentArgs,
        #[command(subcommand)]
        command: sigstore::SigstoreCommand,
    },
}

pub async fn run() -> ExitCode {
    init_tracing();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => serve::run(args).await,
        Command::Webhooks(args) => webhooks::run(args).await,
        Command::Sigstore { component, command } => {
            let cache = component.cache_dir();
            match component.bytes() {
                Ok(bytes) => sigstore::run(command, &bytes, cache.as_deref()).await,
                Err(e) => Err(e),
            }
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ivpol: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("IVPOL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
