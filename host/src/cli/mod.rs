//! Command-line interface: one file per subcommand.

mod apply;
mod compile;
mod component;
mod decision_line;
mod engine;
mod inspect;
mod logs;
mod notary;
mod pull;
mod push;
mod registry;
mod scan;
mod serve;
mod sigstore;
mod test;
mod timestamp;
mod uninstall;
mod webhooks;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Kyverno ImageValidatingPolicy verification as a WebAssembly component.
#[derive(Parser)]
#[command(name = "ivpol", version, about)]
struct Cli {
    /// Log lines as text, or one JSON object per line.
    #[arg(long = "log-format", global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the mutate and validate admission webhooks over HTTP(S).
    // Boxed: serve's flags are many times the size of the others'.
    Serve(Box<serve::ServeArgs>),
    /// Apply IVP/NIVP policies to resources from files, as `kyverno apply`.
    Apply(apply::ApplyArgs),
    /// Run `kyverno-test.yaml` tests (cli.kyverno.io/v1alpha1 Test), as `kyverno test`.
    Test(test::TestArgs),
    /// Re-verify resources from files with the background-enabled policies and
    /// print policy reports (wgpolicyk8s.io or openreports.io), as Kyverno's background scan.
    Scan(scan::ScanArgs),
    /// Push the component to a registry as a CNCF Wasm OCI artifact.
    Push(push::PushArgs),
    /// Pull a Wasm component artifact from a registry into a file.
    Pull(pull::PullArgs),
    /// Show a component's world, imports, exports, size and digest.
    Inspect(inspect::InspectArgs),
    /// Print the webhook configurations Kyverno would register for the policies.
    Webhooks(webhooks::WebhooksArgs),
    /// Delete the webhook configurations ivpol registered (run before
    /// deleting the Deployment, so no webhook calls a Service that is gone).
    Uninstall(uninstall::UninstallArgs),
    /// Compile the component on standard input into a precompiled artifact
    /// (run by `serve` as a child process).
    #[command(hide = true)]
    CompileComponent(compile::CompileArgs),
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
    /// Notary Project tools run by the component.
    Notary {
        #[command(flatten)]
        component: component::ComponentArgs,
        // For `--component oci://` only: the component itself gets no network.
        #[command(flatten)]
        registry: registry::RegistryArgs,
        #[command(subcommand)]
        command: notary::NotaryCommand,
    },
}

/// A subcommand's exit status.
pub(crate) type Exit = u8;
/// Bad usage, unreadable input, or policies that did not load.
pub(crate) const EXIT_USAGE: Exit = 2;

pub(crate) async fn run() -> ExitCode {
    let cli = Cli::parse();
    // `serve` logs a line per request: through the buffered writer.
    let buffered = matches!(cli.command, Command::Serve(_));
    init_tracing(cli.log_format, buffered);
    let offline = |r: anyhow::Result<Exit>| match r {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("ivpol: {e:#}");
            ExitCode::from(EXIT_USAGE)
        }
    };
    let result = match cli.command {
        Command::Apply(args) => return offline(apply::run(args).await),
        Command::Test(args) => return offline(test::run(args).await),
        Command::Scan(args) => return offline(scan::run(args).await),
        Command::Serve(args) => serve::run(*args).await,
        Command::Webhooks(args) => webhooks::run(args).await,
        Command::Uninstall(args) => uninstall::run(args).await,
        Command::Push(args) => push::run(args).await,
        Command::Pull(args) => pull::run(args).await,
        Command::Inspect(args) => inspect::run(args).await,
        Command::CompileComponent(args) => compile::run(args),
        Command::Sigstore {
            component,
            registry,
            command,
        } => match component.load(&registry).await {
            Ok((bytes, cache)) => sigstore::run(command, &bytes, cache.as_deref()).await,
            Err(e) => Err(e),
        },
        Command::Notary {
            component,
            registry,
            command,
        } => match component.load(&registry).await {
            Ok((bytes, cache)) => notary::run(command, &bytes, cache.as_deref()).await,
            Err(e) => Err(e),
        },
    };
    logs::flush();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ivpol: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_tracing(format: LogFormat, buffered: bool) {
    use decision_line::DecisionLine;
    use tracing_subscriber::fmt::format as formats;
    let filter = tracing_subscriber::EnvFilter::try_from_env("IVPOL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colours only for a person at a terminal: a log collector would store
    // the escape codes.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi);
    let text = || DecisionLine::text(formats::Format::default());
    let json = || DecisionLine::json(formats().json().flatten_event(true));
    match (format, buffered) {
        (LogFormat::Text, false) => logs
            .event_format(text())
            .with_writer(std::io::stderr)
            .init(),
        (LogFormat::Json, false) => logs
            .json()
            .flatten_event(true)
            .event_format(json())
            .with_writer(std::io::stderr)
            .init(),
        (LogFormat::Text, true) => logs
            .event_format(text())
            .with_writer(logs::Buffered::stderr())
            .init(),
        (LogFormat::Json, true) => logs
            .json()
            .flatten_event(true)
            .event_format(json())
            .with_writer(logs::Buffered::stderr())
            .init(),
    }
}
