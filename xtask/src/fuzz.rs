//! `cargo xtask fuzz [--seconds N] [TARGET...]`: runs the libFuzzer targets
//! of `fuzz/` (see docs/security.md, "Fuzzing").
//!
//! Installs cargo-fuzz if it is missing, builds the targets on the stable
//! toolchain (`-s none`: no sanitizer, so only stable `-C` flags are
//! passed), then runs each target (or the named ones) for N seconds with a
//! per-input timeout and an RSS limit. Runs start from the committed seeds
//! (`fuzz/corpus/<target>`) copied into `fuzz/target/corpus/<target>`,
//! which keeps what earlier runs found, so a run never writes into the
//! tree. Prints one line per target and fails if any target crashed,
//! timed out or ran out of memory; the input that did is kept under
//! `fuzz/target/artifacts/<target>/`. Not part of `cargo xtask test`.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::{cargo, run, workspace};

/// Seconds per target unless `--seconds` says otherwise.
const DEFAULT_SECONDS: u64 = 60;
/// libFuzzer's `-timeout`: one input taking longer is a failure.
const INPUT_TIMEOUT_SECS: u64 = 10;
/// libFuzzer's `-rss_limit_mb` and `-malloc_limit_mb`.
const RSS_LIMIT_MB: u64 = 2048;
/// The build every run uses: optimised, with debug assertions and overflow
/// checks (an overflow is a crash), no sanitizer (stable Rust).
const BUILD_FLAGS: &[&str] = &["-s", "none", "--release", "--debug-assertions"];

struct Args {
    seconds: u64,
    targets: Vec<String>,
}

fn parse_args(args: &[String]) -> Result<Args> {
    let mut seconds = DEFAULT_SECONDS;
    let mut targets = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seconds" => {
                let v = it.next().context("--seconds needs a number")?;
                seconds = v
                    .parse()
                    .with_context(|| format!("--seconds {v:?} is not a number"))?;
            }
            s if s.starts_with("--seconds=") => {
                let v = &s["--seconds=".len()..];
                seconds = v
                    .parse()
                    .with_context(|| format!("--seconds {v:?} is not a number"))?;
            }
            s if s.starts_with('-') => {
                bail!("unknown option {s}; usage: cargo xtask fuzz [--seconds N] [TARGET...]")
            }
            t => targets.push(t.to_string()),
        }
    }
    if seconds == 0 {
        bail!("--seconds must be at least 1");
    }
    Ok(Args { seconds, targets })
}

fn fuzz_dir() -> PathBuf {
    workspace().join("fuzz")
}

/// The targets: one `fuzz/fuzz_targets/<name>.rs` each, sorted.
fn all_targets() -> Result<Vec<String>> {
    let dir = fuzz_dir().join("fuzz_targets");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".rs"))
                .map(str::to_string)
        })
        .collect();
    names.sort();
    Ok(names)
}

fn ensure_cargo_fuzz() -> Result<()> {
    let present = cargo()
        .args(["fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if present {
        return Ok(());
    }
    eprintln!("xtask: cargo-fuzz is missing; installing it");
    run(cargo().args(["install", "cargo-fuzz", "--locked"]))
}

/// Copies the committed seeds of `target` into its scratch corpus.
fn scratch_corpus(target: &str) -> Result<PathBuf> {
    let seeds = fuzz_dir().join("corpus").join(target);
    let scratch = fuzz_dir().join("target").join("corpus").join(target);
    std::fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
    if seeds.is_dir() {
        for entry in std::fs::read_dir(&seeds)? {
            let entry = entry?;
            let to = scratch.join(entry.file_name());
            if entry.file_type()?.is_file() && !to.exists() {
                std::fs::copy(entry.path(), &to)
                    .with_context(|| format!("copying {}", entry.path().display()))?;
            }
        }
    }
    Ok(scratch)
}

/// What one run reported.
struct Outcome {
    runs: u64,
    cov: u64,
    features: u64,
    corpus: u64,
    /// The failure and the input that caused it, if any.
    failure: Option<String>,
}

/// The number after `key` (`cov: 123`) in `line`.
fn number_after(line: &str, key: &str) -> Option<u64> {
    let rest = &line[line.find(key)? + key.len()..];
    let digits: String = rest
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

fn outcome(log: &str, success: bool) -> Outcome {
    let mut o = Outcome {
        runs: 0,
        cov: 0,
        features: 0,
        corpus: 0,
        failure: None,
    };
    for line in log.lines() {
        if line.starts_with('#') && line.contains("cov:") {
            o.cov = number_after(line, "cov:").unwrap_or(o.cov);
            o.features = number_after(line, "ft:").unwrap_or(o.features);
            o.corpus = number_after(line, "corp:").unwrap_or(o.corpus);
            o.runs = line[1..]
                .split_whitespace()
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(o.runs);
        }
        if let Some(n) = number_after(line, "stat::number_of_executed_units:") {
            o.runs = n;
        }
    }
    if !success {
        let artifact = log
            .lines()
            .find_map(|l| {
                l.split_once("Test unit written to ")
                    .map(|(_, p)| p.trim().to_string())
            })
            .unwrap_or_else(|| "no input saved".into());
        let cause = log
            .lines()
            .find(|l| {
                l.contains("panicked at")
                    || l.contains("==ERROR")
                    || l.contains("ALARM: working on the last Unit")
                    || l.contains("out-of-memory")
            })
            .unwrap_or("the fuzzer exited with an error")
            .trim()
            .to_string();
        o.failure = Some(format!("{cause} ({artifact})"));
    }
    o
}

fn run_target(target: &str, seconds: u64, logs: &Path) -> Result<Outcome> {
    let corpus = scratch_corpus(target)?;
    let artifacts = fuzz_dir().join("target").join("artifacts").join(target);
    std::fs::create_dir_all(&artifacts)?;
    let log_path = logs.join(format!("{target}.log"));
    let log = std::fs::File::create(&log_path)
        .with_context(|| format!("creating {}", log_path.display()))?;
    let mut cmd = cargo();
    cmd.args(["fuzz", "run", "--fuzz-dir"])
        .arg(fuzz_dir())
        .args(BUILD_FLAGS)
        .arg(target)
        .arg(&corpus)
        .arg("--")
        .arg(format!("-max_total_time={seconds}"))
        .arg(format!("-timeout={INPUT_TIMEOUT_SECS}"))
        .arg(format!("-rss_limit_mb={RSS_LIMIT_MB}"))
        .arg(format!("-malloc_limit_mb={RSS_LIMIT_MB}"))
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .arg("-print_final_stats=1")
        .stdout(log.try_clone()?)
        .stderr(log);
    eprintln!(
        "xtask: fuzzing {target} for {seconds} s (log: {})",
        log_path.display()
    );
    let status = cmd
        .status()
        .with_context(|| format!("starting cargo fuzz run {target}"))?;
    let text = std::fs::read_to_string(&log_path).unwrap_or_default();
    Ok(outcome(&text, status.success()))
}

pub fn fuzz(args: &[String]) -> Result<()> {
    let args = parse_args(args)?;
    let known = all_targets()?;
    let targets = if args.targets.is_empty() {
        known.clone()
    } else {
        for t in &args.targets {
            if !known.contains(t) {
                bail!(
                    "no fuzz target {t:?}; the targets are: {}",
                    known.join(", ")
                );
            }
        }
        args.targets.clone()
    };
    ensure_cargo_fuzz()?;
    // Build once for every target; each `cargo fuzz run` then finds it built.
    run(cargo()
        .args(["fuzz", "build", "--fuzz-dir"])
        .arg(fuzz_dir())
        .args(BUILD_FLAGS))?;
    let logs = fuzz_dir().join("target").join("logs");
    std::fs::create_dir_all(&logs)?;
    let mut failed = Vec::new();
    let mut summary = Vec::new();
    for target in &targets {
        let o = run_target(target, args.seconds, &logs)?;
        let line = format!(
            "fuzz {target}: {} s, {} runs, cov {}, ft {}, corpus {}, crashes {}",
            args.seconds,
            o.runs,
            o.cov,
            o.features,
            o.corpus,
            if o.failure.is_some() { 1 } else { 0 }
        );
        println!("{line}");
        summary.push(line);
        if let Some(f) = o.failure {
            eprintln!("xtask: {target} failed: {f}");
            failed.push(format!("{target}: {f}"));
        }
    }
    println!("\nxtask fuzz summary:");
    for line in &summary {
        println!("  {line}");
    }
    if !failed.is_empty() {
        bail!(
            "fuzzing found {} failure(s):\n{}",
            failed.len(),
            failed.join("\n")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_libfuzzer_output() {
        let log = "#2\tINITED cov: 10 ft: 12 corp: 2/40b exec/s: 0 rss: 27Mb\n\
                   #4096\tpulse  cov: 50 ft: 60 corp: 9/1Kb lim: 40 exec/s: 2048 rss: 30Mb\n\
                   #8000\tDONE   cov: 55 ft: 70 corp: 11/2Kb lim: 40 exec/s: 4000 rss: 30Mb\n\
                   stat::number_of_executed_units: 8001\n";
        let o = outcome(log, true);
        assert_eq!((o.runs, o.cov, o.features, o.corpus), (8001, 55, 70, 11));
        assert!(o.failure.is_none());
        let crash = "#10\tNEW cov: 3 ft: 3 corp: 1/1b\n\
                     thread '<unnamed>' panicked at src/x.rs:1:1:\n\
                     ==1== ERROR: libFuzzer: deadly signal\n\
                     artifact_prefix='a/'; Test unit written to a/crash-123\n";
        let o = outcome(crash, false);
        let f = o.failure.expect("a failure");
        assert!(
            f.contains("panicked at") && f.contains("a/crash-123"),
            "{f}"
        );
    }

    #[test]
    fn parses_arguments() {
        let a = parse_args(&["--seconds".into(), "5".into(), "x509_chain".into()]).unwrap();
        assert_eq!((a.seconds, a.targets), (5, vec!["x509_chain".to_string()]));
        assert_eq!(parse_args(&[]).unwrap().seconds, DEFAULT_SECONDS);
        assert!(parse_args(&["--seconds".into(), "0".into()]).is_err());
        assert!(parse_args(&["--jobs".into()]).is_err());
    }
}
