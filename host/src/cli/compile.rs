//! `ivpol compile-component`, hidden: compiles the component read from
//! standard input into a precompiled artifact. `serve` runs it as a child
//! process (`runtime::precompiled`, `Compiler::Child`), so that cranelift's
//! working memory ends with the child instead of staying in the server.

use anyhow::{bail, Context, Result};
use clap::Args;
use std::io::Read as _;
use std::path::PathBuf;

/// The largest component taken from standard input.
const MAX_COMPONENT_BYTES: u64 = 256 << 20;

#[derive(Args)]
pub(super) struct CompileArgs {
    /// The server's instance memory limit, in bytes: an engine setting the
    /// artifact must be compiled with to load into the server's engine.
    #[arg(long = "instance-memory-bytes", value_name = "BYTES")]
    instance_memory: usize,
    /// Where to write the artifact (atomically).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
}

pub(super) fn run(args: CompileArgs) -> Result<()> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(MAX_COMPONENT_BYTES + 1)
        .read_to_end(&mut bytes)
        .context("reading the component from standard input")?;
    if bytes.len() as u64 > MAX_COMPONENT_BYTES {
        bail!("the component is larger than {MAX_COMPONENT_BYTES} bytes");
    }
    ivpol_runtime::precompiled::compile_to_file(&bytes, args.instance_memory, &args.out)
}
