//! `cargo xtask bench`: one run on this machine that starts a no-op hyper
//! webhook (the baseline), the real `ivpol serve` and a loopback registry,
//! drives each with the same AdmissionReview, and prints one table with
//! every ivpol figure also as a ratio to the baseline (`docs/performance.md`).
//!
//! Usage: `ivpol-bench [--duration SECS] [--out FILE] [--json FILE]
//! [--serve-arg ARG]... [--scaling-only]` with `IVPOL_BIN` set
//! to a release `ivpol`; `ivpol-bench noop` is the baseline server itself.
//! `--scaling-only` runs only the scaling scenarios (one server, the three
//! scenarios in turn) and prints their times, for profiling that server.
//! `--hit-only` runs only the cache hit at 64 connections against the
//! baseline, in turns, and prints the ratio of each turn and their median.

#![forbid(unsafe_code)]

mod cold;
mod load;
mod native;
mod noop;
mod report;
mod rss;
mod steal;

use anyhow::{bail, Context, Result};
use cold::Cold;
use ivpol_tests::policy::{key_attestor, pod_policy, verifying_policy};
use ivpol_tests::redis::Redis;
use ivpol_tests::registry::Registry;
use ivpol_tests::sign::oci::{digest_tag, BUNDLE_V03};
use ivpol_tests::sign::{KeyKind, SignOpts, Signer};
use ivpol_tests::{metric_sum, Options, Server};
use load::Measured;
use report::{ReplicaCalls, Report, Row, Scaling, BASELINE, COLD, HIT, MUTATE};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CONNECTIONS: [usize; 2] = [1, 64];
/// Containers and matching policies in the scaling scenarios.
const SCALE: usize = 10;
/// The turns each scaling scenario takes.
const SCALING_ROUNDS: usize = 5;
const ALLOWED: &str = "\"allowed\":true";
/// The registry requests a server made, from its `/metrics`.
const CALLS: &str = "ivpol_registry_requests_total";
/// How far away the registry double of the delayed cold scenario is: a
/// registry in the same region, a few times the loopback registry's own
/// time for a request.
const REGISTRY_DELAY: Duration = Duration::from_millis(5);
/// How long each of the cold path's requests is timed for its chain, in
/// each round.
const CHAIN_PROBE: Duration = Duration::from_millis(250);
/// The rounds the load table's scenarios take turns in, at each
/// connection count: the machine's speed drifts by a fifth within a
/// minute, and one sample of each side, taken seconds apart, put the same
/// build's cache hit anywhere from 23% to 37% of the baseline.
const LOAD_ROUNDS: usize = 5;
/// The rounds the cache hit and the baseline take turns in (`--hit-only`).
const HIT_ROUNDS: usize = 4;
/// The rounds a cold scenario and its chain take turns in.
pub(crate) const COLD_ROUNDS: usize = 5;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("noop") {
        return run_noop();
    }
    let mut duration = Duration::from_secs(5);
    let mut out: Option<PathBuf> = None;
    let mut json_out: Option<PathBuf> = None;
    let mut serve_args: Vec<String> = Vec::new();
    let mut scaling_only = false;
    let mut cold_only = false;
    let mut hit_only = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--duration" => {
                let secs: u64 = it.next().context("--duration SECS")?.parse()?;
                duration = Duration::from_secs(secs);
            }
            "--out" => out = Some(PathBuf::from(it.next().context("--out FILE")?)),
            "--serve-arg" => serve_args.push(it.next().context("--serve-arg ARG")?.clone()),
            "--json" => json_out = Some(PathBuf::from(it.next().context("--json FILE")?)),
            "--scaling-only" => scaling_only = true,
            "--cold-only" => cold_only = true,
            "--hit-only" => hit_only = true,
            other => bail!("unknown argument {other}"),
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    if scaling_only {
        let mut f = fixture();
        f.serve_args = serve_args;
        let s = runtime.block_on(scaling(&f, duration))?;
        println!("{}", s.render());
        return Ok(());
    }
    if hit_only {
        let mut f = fixture();
        f.serve_args = serve_args;
        println!("{}", runtime.block_on(hit(&f, duration))?);
        return Ok(());
    }
    if cold_only {
        let mut f = fixture();
        f.serve_args = serve_args;
        println!("{}", runtime.block_on(cold(&f, duration))?);
        return Ok(());
    }
    let report = runtime.block_on(bench(duration, serve_args))?;
    let text = report.render();
    println!("{text}");
    if let Some(path) = out {
        std::fs::write(&path, &text).with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = json_out {
        let json = serde_json::to_string_pretty(&report.to_json())?;
        std::fs::write(&path, json).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// The baseline server, in its own process like ivpol.
fn run_noop() -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        println!("listening {}", listener.local_addr()?);
        noop::serve(listener).await
    })
}

/// What the scenarios share: the registry, the signed image, the review.
struct Fixture {
    reg: Registry,
    policies: Vec<(String, String)>,
    review: String,
    /// The scaling scenarios: `SCALE` copies of the verify policy under
    /// other names, and a pod of `SCALE` containers (each its own signed
    /// repository, so no verification is shared).
    scaling_policies: Vec<(String, String)>,
    wide_review: String,
    /// Extra arguments for every `ivpol serve` (`--serve-arg`), such as
    /// `--component FILE` to profile a guest built with symbol names.
    serve_args: Vec<String>,
    /// The registry requests of the cold path, for its chain of round trips.
    cold_paths: cold::Paths,
}

fn fixture() -> Fixture {
    let reg = Registry::start();
    let p = ivpol_tests::fixtures::Pusher {
        addr: &reg.addr,
        auth: None,
    };
    let digest = p.image(
        "bench/app",
        "v1",
        ivpol_tests::fixtures::OCI_MANIFEST,
        "amd64",
    );
    let signer = Signer::keyed(KeyKind::P256);
    let sig = signer.sign_image(&p, "bench/app", &digest, &SignOpts::default());
    let pinned = format!("{}/bench/app@{digest}", reg.addr);
    let check =
        "images.containers.map(i, verifyImageSignatures(i, [attestors.cosign])).all(n, n > 0)";
    let verify = verifying_policy(
        "bench-verify",
        &key_attestor("cosign", &signer.public_pem()),
        "",
        check,
        "not signed",
    );
    let mutate = pod_policy(
        "bench-mutate",
        "\"CREATE\"",
        &format!(
            "  matchImageReferences:\n    - glob: '{}/*'\n  validationConfigurations:\n    mutateDigest: true\n    verifyDigest: false\n    required: false\n  attestors: []\n  validations:\n    - expression: 'true'\n",
            reg.addr
        ),
    );
    let review = ivpol_tests::review::create_pod(&[&pinned]).to_string();
    // The query value as the engine encodes it (`/` and `+` escaped).
    let bundles = BUNDLE_V03.replace('/', "%2F").replace('+', "%2B");
    let cold_paths = cold::Paths {
        discovery: vec![
            format!("/v2/bench/app/referrers/{digest}?artifactType={bundles}"),
            format!("/v2/bench/app/manifests/{}", digest_tag(&digest, "", "")),
            format!("/v2/{}/manifests/{}", sig.repo, sig.tag),
        ],
        layer: format!("/v2/{}/blobs/{}", sig.repo, sig.layer_digest),
    };
    let mut images = vec![pinned.clone()];
    for i in 1..SCALE {
        let repo = format!("bench/app{i}");
        let d = p.image(&repo, "v1", ivpol_tests::fixtures::OCI_MANIFEST, "amd64");
        signer.sign_image(&p, &repo, &d, &SignOpts::default());
        images.push(format!("{}/{repo}@{d}", reg.addr));
    }
    let refs: Vec<&str> = images.iter().map(String::as_str).collect();
    let wide_review = ivpol_tests::review::create_pod(&refs).to_string();
    let scaling_policies = (0..SCALE)
        .map(|i| {
            let name = format!("bench-verify-{i}");
            let yaml = verify.replace("name: bench-verify", &format!("name: {name}"));
            (format!("{name}.yaml"), yaml)
        })
        .collect();
    drop(p);
    Fixture {
        scaling_policies,
        wide_review,
        serve_args: Vec::new(),
        policies: vec![
            ("bench-verify.yaml".into(), verify),
            ("bench-mutate.yaml".into(), mutate),
        ],
        reg,
        review,
        cold_paths,
    }
}

fn serve(f: &Fixture, extra: &[&str]) -> Server {
    serve_policies(f, &f.policies, extra)
}

fn serve_policies(f: &Fixture, policies: &[(String, String)], extra: &[&str]) -> Server {
    let refs: Vec<(&str, &str)> = policies
        .iter()
        .map(|(n, y)| (n.as_str(), y.as_str()))
        .collect();
    let mut extra_args = vec!["--insecure-registry".to_string(), f.reg.addr.clone()];
    extra_args.extend(f.serve_args.iter().cloned());
    extra_args.extend(extra.iter().map(|s| s.to_string()));
    Server::start_with(
        &refs,
        Options {
            extra_args,
            ..Options::default()
        },
    )
}

fn addr_of(s: &Server) -> String {
    s.base.trim_start_matches("http://").to_string()
}

async fn bench(duration: Duration, serve_args: Vec<String>) -> Result<Report> {
    let cpu = steal::CpuTimes::now();
    let mut f = fixture();
    f.serve_args = serve_args;
    let noop = Noop::start()?;
    let ivpol = serve(&f, &[]);
    let cold = serve(&f, &["--no-cache"]);
    let (ia, ca) = (addr_of(&ivpol), addr_of(&cold));
    let spikes = ivpol_tests::target_dir().join("bench");
    let rss = rss::Sampler::start(&[ivpol.pid(), cold.pid()], spikes);
    // Warm up: compile paths, fill the cache and the instance pools.
    rss.phase("warm-up");
    for (addr, path) in [
        (&ia, "/ivpol/validate/bench-verify"),
        (&ia, "/ivpol/mutate/bench-mutate"),
        (&ca, "/ivpol/validate/bench-verify"),
    ] {
        warm_up(&f, addr, path).await?;
    }
    let mut report = Report::default();
    for conns in CONNECTIONS {
        let scenarios = [
            (BASELINE, noop.addr.as_str(), "/"),
            (HIT, ia.as_str(), "/ivpol/validate/bench-verify"),
            (MUTATE, ia.as_str(), "/ivpol/mutate/bench-mutate"),
            (COLD, ca.as_str(), "/ivpol/validate/bench-verify"),
        ];
        let share = duration / LOAD_ROUNDS as u32;
        let mut runs: Vec<Vec<Measured>> = scenarios.iter().map(|_| Vec::new()).collect();
        for round in 1..=LOAD_ROUNDS {
            for ((name, addr, path), runs) in scenarios.iter().zip(&mut runs) {
                rss.phase(format!(
                    "{name}, {conns} conns (round {round} of {LOAD_ROUNDS})"
                ));
                runs.push(load::run(addr, path, &f.review, ALLOWED, conns, share).await?);
            }
        }
        let baseline = &runs[0];
        for (i, ((name, ..), rounds)) in scenarios.iter().zip(&runs).enumerate() {
            let against = (i > 0).then_some(baseline.as_slice());
            report
                .rows
                .push(Row::of_rounds(name, conns, rounds, against));
        }
    }
    report.rss_mb = memory_mb(ivpol.pid(), "VmRSS:");
    let peaks = rss.stop();
    let (peak, cold_peak) = (peaks.first().cloned(), peaks.get(1).cloned());
    report.sampled_peak_rss_mb = peak.as_ref().map_or(f64::NAN, |p| p.mb);
    report.sampled_peak_rss_phase = peak.map(|p| p.phase).unwrap_or_default();
    report.cold_sampled_peak_rss_mb = cold_peak.map_or(f64::NAN, |p| p.mb);
    drop(cold);
    report.cold = cold_path(&f, None, duration).await?;
    report.cold_delayed = cold_path(&f, Some(REGISTRY_DELAY), duration).await?;
    report.scaling = scaling(&f, duration).await?;
    report.replicas = replicas(&f)?;
    report.native = native::time_all()?;
    report.peak_rss_mb = memory_mb(ivpol.pid(), "VmHWM:");
    report.instance_acquire_ms = acquire_ms(&ivpol);
    let text = ivpol.metrics_text();
    report.instances_created = metric_sum(&text, "ivpol_instances_created_total");
    report.instances_retired = metric_sum(&text, "ivpol_instances_retired_total");
    report.instance_memory_mb = metric_sum(&text, "ivpol_instance_memory_bytes") / 1e6;
    report.component_bytes = component_size()?;
    report.startup_cold_ms = startup_ms(&f, None)?;
    let cache = ivpol_tests::target_dir().join("bench-precompiled");
    startup_ms(&f, Some(&cache))?; // compiles into the cache
    report.startup_precompiled_ms = startup_ms(&f, Some(&cache))?;
    report.stolen = steal::CpuTimes::stolen_since_then(cpu);
    check_errors(&report)?;
    Ok(report)
}

/// Half a second of the review at 64 connections: compiles the paths and
/// fills the verification cache and the instance pool.
async fn warm_up(f: &Fixture, addr: &str, path: &str) -> Result<()> {
    load::run(
        addr,
        path,
        &f.review,
        ALLOWED,
        64,
        Duration::from_millis(500),
    )
    .await?;
    Ok(())
}

/// The cache hit at 64 connections alone (`--hit-only`), against the
/// baseline: the two take turns in [`HIT_ROUNDS`] rounds, so that both
/// see the machine's drift alike, and the figure is the median of the
/// rounds' ratios. Quick enough to interleave two builds of `ivpol`.
async fn hit(f: &Fixture, duration: Duration) -> Result<String> {
    let noop = Noop::start()?;
    let ivpol = serve(f, &[]);
    let addr = addr_of(&ivpol);
    let path = "/ivpol/validate/bench-verify";
    warm_up(f, &addr, path).await?;
    let share = duration / HIT_ROUNDS as u32;
    let (mut bases, mut hits) = (Vec::new(), Vec::new());
    for round in 1..=HIT_ROUNDS {
        eprintln!("bench: {HIT}, 64 conns (round {round} of {HIT_ROUNDS})");
        bases.push(load::run(&noop.addr, "/", &f.review, ALLOWED, 64, share).await?);
        let hit = load::run(&addr, path, &f.review, ALLOWED, 64, share).await?;
        if hit.errors > 0 {
            bail!("{HIT}: {} bad answers", hit.errors);
        }
        hits.push(hit);
    }
    // The same rounds and median as the whole bench's table.
    let row = Row::of_rounds(HIT, 64, &hits, Some(&bases));
    let mut lines: Vec<String> = (bases.iter().zip(&hits).zip(&row.round_ratios))
        .enumerate()
        .map(|(i, ((base, hit), ratio))| {
            format!(
                "round {}: baseline {:.0} req/s, cache hit {:.0} req/s, ratio {:.1}%",
                i + 1,
                base.rps(),
                hit.rps(),
                100.0 * ratio
            )
        })
        .collect();
    lines.push(format!(
        "{HIT}, 64 conns: median ratio {:.1}%",
        100.0 * row.ratio.unwrap_or(f64::NAN)
    ));
    Ok(lines.join("\n"))
}

/// The cold path alone (`--cold-only`), with the loopback registry and
/// with it [`REGISTRY_DELAY`] away, for comparing two guests
/// (`--serve-arg --component --serve-arg FILE`) in quick interleaved runs.
async fn cold(f: &Fixture, duration: Duration) -> Result<String> {
    let cpu = steal::CpuTimes::now();
    let near = cold_path(f, None, duration).await?;
    let far = cold_path(f, Some(REGISTRY_DELAY), duration).await?;
    let stolen = steal::CpuTimes::stolen_since_then(cpu).unwrap_or(f64::NAN);
    Ok(format!(
        "{}\n{}\nCPU time stolen by the hypervisor: {:.0}%",
        near.render(),
        far.render(),
        stolen * 100.0
    ))
}

/// A cold validate at one connection through a `--no-cache` server, the
/// registry `delay` away ([`cold::Delayed`]; none: the registry itself),
/// and the chain of round trips it waits for: the two take turns in
/// [`COLD_ROUNDS`] rounds, so that both see the registry's drift alike
/// (its time for a blob moves by a third from one second to the next).
async fn cold_path(f: &Fixture, delay: Option<Duration>, duration: Duration) -> Result<Cold> {
    let proxy = match delay {
        Some(delay) => Some(cold::Delayed::start(&f.reg.addr, delay)?),
        None => None,
    };
    let registry = proxy
        .as_ref()
        .map_or(f.reg.addr.as_str(), |p| p.addr.as_str());
    let review = f.review.replace(&f.reg.addr, registry);
    let server = serve(f, &["--no-cache", "--insecure-registry", registry]);
    let addr = addr_of(&server);
    let path = "/ivpol/validate/bench-verify";
    let warm_up = Duration::from_millis(500);
    load::run(&addr, path, &review, ALLOWED, 1, warm_up).await?;
    eprintln!(
        "bench: {COLD}, {:?} away, 1 conn",
        delay.unwrap_or_default()
    );
    let before = server.metric(CALLS);
    let (mut rounds, mut requests) = (Vec::new(), 0);
    for round in 1..=COLD_ROUNDS {
        eprintln!(
            "bench: {COLD}, {:?} away, 1 conn (round {round} of {COLD_ROUNDS})",
            delay.unwrap_or_default()
        );
        let share = duration / COLD_ROUNDS as u32;
        let run = load::run(&addr, path, &review, ALLOWED, 1, share).await?;
        if run.errors > 0 {
            bail!("{COLD}: {} bad answers", run.errors);
        }
        requests += run.requests;
        let chain = cold::Chain::measure(registry, &f.cold_paths, CHAIN_PROBE).await?;
        rounds.push((run.quantile_ms(0.5), chain));
    }
    let calls = server.metric(CALLS) - before;
    Ok(Cold::of_rounds(
        &rounds,
        calls / requests.max(1) as f64,
        delay.unwrap_or_default().as_secs_f64() * 1000.0,
    ))
}

/// Time per request at one connection with cache hits as the work grows:
/// one container and one policy, `SCALE` containers, `SCALE` policies.
///
/// The three scenarios take turns, in [`SCALING_ROUNDS`] rounds of a
/// share of `duration` each, and the increments are the medians of each
/// round's differences: this machine drifts by a fifth over a minute, and
/// scenarios run back to back in one round see the same drift.
async fn scaling(f: &Fixture, duration: Duration) -> Result<Scaling> {
    let server = serve_policies(f, &f.scaling_policies, &[]);
    let addr = addr_of(&server);
    let all: Vec<String> = (0..SCALE).map(|i| format!("bench-verify-{i}")).collect();
    let many = format!("/ivpol/validate/{}", all.join("/"));
    let one = "/ivpol/validate/bench-verify-0".to_string();
    let scenarios = [
        ("one container, one policy", one.clone(), &f.review),
        ("containers", one, &f.wide_review),
        ("policies", many, &f.review),
    ];
    for (_, path, body) in &scenarios {
        // Warm-up fills the verification cache for every image and policy.
        load::run(&addr, path, body, ALLOWED, 4, Duration::from_millis(500)).await?;
    }
    let share = duration / SCALING_ROUNDS as u32;
    let mut rounds = Vec::new();
    for round in 1..=SCALING_ROUNDS {
        let mut ms = [0.0; 3];
        for (i, (name, path, body)) in scenarios.iter().enumerate() {
            eprintln!("bench: scaling, {name}, 1 conn (round {round} of {SCALING_ROUNDS})");
            let m = load::run(&addr, path, body, ALLOWED, 1, share).await?;
            if m.errors > 0 {
                bail!("scaling scenario {path}: {} bad answers", m.errors);
            }
            ms[i] = 1000.0 / m.rps();
        }
        rounds.push(ms);
    }
    Ok(Scaling::of_rounds(&rounds, SCALE))
}

/// Two replicas judging the wide pod (`SCALE` signed images) at once for
/// the first time: the registry requests each makes, sharing a store
/// (`--shared-cache`, a real redis-server) and alone.
fn replicas(f: &Fixture) -> Result<ReplicaCalls> {
    let store = Redis::start();
    let key = store.secret_file("mac.key", &"k".repeat(48));
    let (url, key) = (store.url(), key.to_string_lossy().into_owned());
    let shared = [
        "--shared-cache",
        url.as_str(),
        "--shared-cache-key-file",
        key.as_str(),
    ];
    let first_time = |flags: &[&str]| -> Result<(f64, f64)> {
        let (a, b) = (serve(f, flags), serve(f, flags));
        let before = (a.metric(CALLS), b.metric(CALLS));
        let urls = [&a, &b].map(|s| format!("{}/ivpol/validate/bench-verify", s.base));
        let answers = std::thread::scope(|s| {
            let posts = urls.map(|url| {
                s.spawn(move || ivpol_tests::post_with(&ureq::agent(), &url, &f.wide_review))
            });
            posts.map(|p| p.join())
        });
        for answer in answers {
            let (_, body) = answer.map_err(|_| anyhow::anyhow!("a replica's request panicked"))?;
            if body["response"]["allowed"] != true {
                bail!("two replicas: the wide pod was not admitted: {body}");
            }
        }
        Ok((a.metric(CALLS) - before.0, b.metric(CALLS) - before.1))
    };
    Ok(ReplicaCalls {
        shared: first_time(&shared)?,
        alone: first_time(&[])?,
        images: SCALE,
    })
}

fn check_errors(report: &Report) -> Result<()> {
    for row in &report.rows {
        if row.errors > 0 {
            bail!(
                "{} at {} connections: {} bad answers",
                row.name,
                row.conns,
                row.errors
            );
        }
    }
    Ok(())
}

/// The baseline server process, killed on drop.
struct Noop {
    child: Child,
    addr: String,
}

impl Noop {
    fn start() -> Result<Noop> {
        let mut child = Command::new(std::env::current_exe()?)
            .arg("noop")
            .stdout(Stdio::piped())
            .spawn()?;
        let stdout = child.stdout.take().context("noop stdout")?;
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line)?;
        let addr = line
            .trim()
            .strip_prefix("listening ")
            .context("the noop server did not start")?
            .to_string();
        Ok(Noop { child, addr })
    }
}

impl Drop for Noop {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `/proc/<pid>/status` field, in MB.
fn memory_mb(pid: u32, field: &str) -> f64 {
    status_number(pid, field) / 1024.0
}

/// A `/proc/<pid>/status` field's number (kB for sizes); NaN when absent.
fn status_number(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .unwrap_or(f64::NAN)
}

/// Mean time to take an instance from the pool, from one `/metrics` scrape.
fn acquire_ms(s: &Server) -> f64 {
    let text = s.metrics_text();
    let sum = metric_sum(&text, "ivpol_instance_acquire_seconds_sum");
    let count = metric_sum(&text, "ivpol_instance_acquire_seconds_count");
    sum / count.max(1.0) * 1000.0
}

/// The embedded component's size: the file runtime/build.rs leaves for
/// this (release) build's `ivpol`; none there is an error, not a size of 0
/// that would meet the size target.
fn component_size() -> Result<u64> {
    let path = ivpol_tests::oci::component_file();
    std::fs::metadata(&path)
        .map(|m| m.len())
        .with_context(|| format!("no component at {}", path.display()))
}

/// Time from spawning `ivpol serve` to it listening with its policies
/// loaded: compiling the component (no `cache`, or an empty one) or loading
/// it precompiled.
fn startup_ms(f: &Fixture, cache: Option<&Path>) -> Result<f64> {
    let dir = tempfile::tempdir()?;
    let pdir = dir.path().join("policies");
    std::fs::create_dir(&pdir)?;
    for (name, yaml) in &f.policies {
        std::fs::write(pdir.join(name), yaml)?;
    }
    let mut cmd = Command::new(ivpol_tests::ivpol_bin());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--policies"])
        .arg(&pdir);
    match cache {
        Some(c) => cmd.arg("--cache-dir").arg(c),
        None => cmd.arg("--no-precompile-cache"),
    };
    cmd.env("IVPOL_LOG", "info")
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd.spawn()?;
    let stderr = child.stderr.take().context("stderr")?;
    let listening = BufReader::new(stderr)
        .lines()
        .map_while(Result::ok)
        .any(|l| l.contains("listening"));
    let elapsed = start.elapsed();
    let _ = child.kill();
    let _ = child.wait();
    if !listening {
        bail!("ivpol serve did not start");
    }
    Ok(elapsed.as_secs_f64() * 1000.0)
}

impl Row {
    /// A scenario from its rounds, and the baseline's rounds run beside
    /// them: req/s and latencies over every round, and the ratio to the
    /// baseline as the median of the rounds' ratios.
    fn of_rounds(
        name: &str,
        conns: usize,
        rounds: &[Measured],
        baseline: Option<&[Measured]>,
    ) -> Row {
        let all = Measured::merged(rounds);
        let ratios: Vec<f64> = baseline
            .map(|b| {
                rounds
                    .iter()
                    .zip(b)
                    .map(|(m, b)| m.rps() / b.rps())
                    .collect()
            })
            .unwrap_or_default();
        Row {
            name: name.to_string(),
            conns,
            rps: all.rps(),
            p50: all.quantile_ms(0.5),
            p99: all.quantile_ms(0.99),
            errors: all.errors,
            ratio: baseline.map(|_| report::median(ratios.clone())),
            round_ratios: ratios,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(requests: usize, secs: u64, latency_us: u64) -> Measured {
        Measured {
            requests,
            errors: 0,
            elapsed: Duration::from_secs(secs),
            latencies: vec![latency_us; requests],
        }
    }

    /// A round in which the machine ran slow for both sides keeps its
    /// ratio; one odd round does not move the median; req/s and latencies
    /// are over every round.
    #[test]
    fn a_rows_ratio_is_the_median_of_its_rounds() {
        let baseline = [run(1000, 1, 10), run(500, 1, 20), run(1000, 1, 10)];
        let hit = [run(300, 1, 40), run(150, 1, 80), run(900, 1, 40)];
        let row = Row::of_rounds(HIT, 64, &hit, Some(&baseline));
        assert_eq!(row.round_ratios, vec![0.3, 0.3, 0.9]);
        assert_eq!(row.ratio, Some(0.3));
        assert_eq!(row.rps, 450.0);
        assert_eq!(row.p50, 0.04);
        assert_eq!(row.p99, 0.08);
        let alone = Row::of_rounds(BASELINE, 64, &baseline, None);
        assert_eq!((alone.ratio, alone.round_ratios.len()), (None, 0));
    }
}
