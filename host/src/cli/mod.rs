//! Command-line interface: one file per subcommand.

mod component;
mod inspect;
mod pull;
mod push;
mod registry;
mod serve;
mod sigstore;

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
    /// Push the component to a registry as a CNCF Wasm OCI artifact.
    Push(push::PushArgs),
    /// Pull a Wasm component artifact from a registry into a file.
    Pull(pull::PullArgs),
    /// Show a component's world, imports, exports, size and digest.
    Inspect(inspect::InspectArgs),
    /// Sigstore tools run by the component (the sigstore-conformance client).
    Sigstore {
        #[command(flatten)]
        component: component::ComponentArgs,
        // For `--component oci://` only: the component itself gets no network.
        #[command(flatten)]
        registry: registry::RegistryArgs,
        #[command(subcommand)]
        command: sigstore::SigstoreCommand,
    },
}

pub async fn run() -> ExitCode {
    init_tracing();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => serve::run(args).await,
        Command::Push(args) => push::run(args).await,
        Command::Pull(args) => pull::run(args).await,
        Command::Inspect(args) => inspect::run(args).await,
        Command::Sigstore {
            component,
            registry,
            command,
        } => {
            let cache = component.cache_dir();
            match component.bytes(&registry).await {
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
