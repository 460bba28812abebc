//! `soak`: mixed traffic against a real `ivpol serve` and a loopback
//! registry for a while, sampling the server's memory every second
//! (`cargo xtask soak --minutes N`). Not part of the test suite.
//!
//! 64 client threads send, in turn: validate with a cache hit (a signed,
//! pinned image), a cold verification (an unsigned image: failures are
//! never cached, so each one goes to the registry), mutate with pinning
//! (a tag), and bad input (malformed bodies with and without a uid).
//! Stalled clients open connections and send half a request header.
//! A slow tenant sends, from 8 more threads, Pods in namespace `attacker`
//! whose image sits on a registry that answers after 12 s, judged by that
//! namespace's NamespacedImageValidatingPolicy: the normal traffic's
//! latency (p50, p99, max) shows whether it starves everyone else.
//!
//! It fails (exit 1) when any good request gets a wrong or error answer,
//! or the server dies; it prints requests by kind, the RSS peak, and the
//! RSS slope over the run after a warm-up (least squares, MiB/min).

use ivpol_tests::faulty::{Answer, Faulty};
use ivpol_tests::policy::{key_attestor, pod_policy, verifying_policy};
use ivpol_tests::review::{create_pod, patch, pod, review};
use ivpol_tests::sign::{KeyKind, SignOpts, Signer};
use ivpol_tests::verifying::Setup;
use ivpol_tests::{Options, Server};
use serde_json::Value;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const CLIENTS: usize = 64;
const STALLED: usize = 16;
/// Threads of the slow tenant.
const SLOW_TENANT: usize = 8;
/// How long the slow tenant's registry takes to answer (past the deadline).
const SLOW_REGISTRY: Duration = Duration::from_secs(12);

#[derive(Default)]
struct Counts {
    hit: AtomicU64,
    cold: AtomicU64,
    mutate: AtomicU64,
    bad: AtomicU64,
    stalled: AtomicU64,
    slow_tenant: AtomicU64,
    wrong: AtomicU64,
    /// Microseconds each good request of the normal traffic took.
    latencies: Mutex<Vec<u32>>,
}

/// What the traffic needs: the server, and the requests with their answers.
struct Traffic {
    base: String,
    signed: String,
    unsigned: String,
    tagged: String,
    /// The slow tenant's image.
    slow: String,
}

fn main() {
    let minutes: f64 = std::env::args()
        .skip_while(|a| a != "--minutes")
        .nth(1)
        .and_then(|m| m.parse().ok())
        .unwrap_or(1.0);
    let run = Duration::from_secs_f64(minutes * 60.0);
    let setup = Setup::new();
    let signer = Signer::keyed(KeyKind::P256);
    let (signed_tag, digest) = setup.image("soak/signed");
    signer.sign_image(
        &setup.pusher(),
        "soak/signed",
        &digest,
        &SignOpts::default(),
    );
    let signed = format!("{}/soak/signed@{digest}", setup.reg.addr);
    let (unsigned, _) = setup.image("soak/unsigned");
    let verify = verifying_policy(
        "verify",
        &key_attestor("key", &signer.public_pem()),
        "",
        "images.containers.all(i, verifyImageSignatures(i, [attestors.key]) > 0)",
        "not signed",
    );
    let pin = pod_policy(
        "pin",
        "\"CREATE\", \"UPDATE\"",
        "  attestors: []\n  validations:\n    - expression: \"true\"\n",
    );
    let faulty = Faulty::start();
    faulty.on("/v2/slow/app/manifests/v1", Answer::Slow(SLOW_REGISTRY));
    let slow_tenant = pod_policy(
        "slow",
        "\"CREATE\"",
        "  validationConfigurations: {mutateDigest: false, verifyDigest: false, required: false}\n  attestors: []\n  validations:\n    - expression: \"getImageData(object.spec.containers[0].image).digest != ''\"\n",
    )
    .replace(
        "kind: ImageValidatingPolicy\nmetadata:\n  name: slow\n",
        "kind: NamespacedImageValidatingPolicy\nmetadata:\n  name: slow\n  namespace: attacker\n",
    );
    let server = Server::start_with(
        &[
            ("verify.yaml", &verify),
            ("pin.yaml", &pin),
            ("slow.yaml", &slow_tenant),
        ],
        Options {
            extra_args: vec![
                "--insecure-registry".into(),
                setup.reg.addr.clone(),
                "--insecure-registry".into(),
                faulty.addr.clone(),
            ],
            ..Options::default()
        },
    );
    let traffic = Arc::new(Traffic {
        base: server.base.clone(),
        signed,
        unsigned,
        tagged: signed_tag,
        slow: format!("{}/slow/app:v1", faulty.addr),
    });
    let counts = Arc::new(Counts::default());
    let stop = Arc::new(AtomicBool::new(false));
    let first_wrong: Arc<Mutex<Option<String>>> = Arc::default();
    let mut workers = Vec::new();
    for i in 0..CLIENTS {
        let (t, c, s, w) = (
            traffic.clone(),
            counts.clone(),
            stop.clone(),
            first_wrong.clone(),
        );
        workers.push(std::thread::spawn(move || client(i, &t, &c, &s, &w)));
    }
    for _ in 0..STALLED {
        let (t, c, s) = (traffic.clone(), counts.clone(), stop.clone());
        workers.push(std::thread::spawn(move || stalled(&t.base, &c, &s)));
    }
    for _ in 0..SLOW_TENANT {
        let (t, c, s) = (traffic.clone(), counts.clone(), stop.clone());
        workers.push(std::thread::spawn(move || slow_tenant_client(&t, &c, &s)));
    }
    let samples = sample(&server, run, &stop);
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        let _ = w.join();
    }
    let mut server = server;
    let alive = server.alive();
    report(&counts, &samples, minutes, alive, &first_wrong);
    if !alive || counts.wrong.load(Ordering::Relaxed) > 0 {
        std::process::exit(1);
    }
}

/// One client: the four kinds of request in turn, each checked.
fn client(i: usize, t: &Traffic, c: &Counts, stop: &AtomicBool, wrong: &Mutex<Option<String>>) {
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(30))
        .build();
    let mut n = i;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let started = Instant::now();
        let outcome = match n % 10 {
            0..=3 => expect(&agent, t, "/ivpol/validate/verify", &t.signed, true).map(|()| &c.hit),
            4 | 5 => {
                expect(&agent, t, "/ivpol/validate/verify", &t.unsigned, false).map(|()| &c.cold)
            }
            6..=8 => pinned(&agent, t).map(|()| &c.mutate),
            _ => bad_input(&agent, t).map(|()| &c.bad),
        };
        match outcome {
            Ok(counter) => {
                counter.fetch_add(1, Ordering::Relaxed);
                if !std::ptr::eq(counter, &c.bad) {
                    let took = u32::try_from(started.elapsed().as_micros()).unwrap_or(u32::MAX);
                    let mut all = c.latencies.lock().unwrap_or_else(|p| p.into_inner());
                    all.push(took);
                }
            }
            Err(why) => {
                c.wrong.fetch_add(1, Ordering::Relaxed);
                let mut first = wrong.lock().unwrap_or_else(|p| p.into_inner());
                first.get_or_insert(why);
            }
        }
    }
}

/// The slow tenant: Pods in `attacker` whose image is on the slow
/// registry, one after another; each is denied (the registry call runs out
/// of time), which is what the tenant's own policy says.
fn slow_tenant_client(t: &Traffic, c: &Counts, stop: &AtomicBool) {
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(30))
        .build();
    let body = review("CREATE", "attacker", &pod("slow", &[&t.slow])).to_string();
    let url = format!("{}/nivpol/validate/slow", t.base);
    while !stop.load(Ordering::Relaxed) {
        if post(&agent, &url, &body).is_ok() {
            c.slow_tenant.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The `q` quantile of `sorted`, in milliseconds.
fn quantile_ms(sorted: &[u32], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    f64::from(sorted[i.min(sorted.len() - 1)]) / 1000.0
}

fn post(agent: &ureq::Agent, url: &str, body: &str) -> Result<(u16, Value), String> {
    let resp = match agent.post(url).send_string(body) {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => return Err(format!("POST {url}: {e}")),
    };
    let status = resp.status();
    let body = resp.into_json().map_err(|e| format!("POST {url}: {e}"))?;
    Ok((status, body))
}

fn expect(
    agent: &ureq::Agent,
    t: &Traffic,
    path: &str,
    image: &str,
    allowed: bool,
) -> Result<(), String> {
    let review = create_pod(&[image]);
    let (status, body) = post(agent, &format!("{}{path}", t.base), &review.to_string())?;
    match (status, body["response"]["allowed"].as_bool()) {
        (200, Some(a)) if a == allowed => Ok(()),
        _ => Err(format!("{path} {image}: {status} {body}")),
    }
}

fn pinned(agent: &ureq::Agent, t: &Traffic) -> Result<(), String> {
    let review = create_pod(&[&t.tagged]);
    let url = format!("{}/ivpol/mutate/pin", t.base);
    let (status, body) = post(agent, &url, &review.to_string())?;
    let r = &body["response"];
    if status != 200 || r["allowed"] != true || r["patch"].is_null() {
        return Err(format!("mutate: {status} {body}"));
    }
    let ops = patch(r);
    match ops[0]["value"].as_str() {
        Some(v) if v.contains("@sha256:") => Ok(()),
        _ => Err(format!("mutate: no pin in {ops}")),
    }
}

/// Malformed bodies: with a uid they are denied (200), without one a 400.
fn bad_input(agent: &ureq::Agent, t: &Traffic) -> Result<(), String> {
    let url = format!("{}/ivpol/validate/verify", t.base);
    let (status, _) = post(agent, &url, "{not json")?;
    if status != 400 {
        return Err(format!("bad input without a uid: {status}"));
    }
    let (status, body) = post(agent, &url, r#"{"request":{"uid":"soak"},"kind":1}"#)?;
    if status != 200 || body["response"]["allowed"] != false {
        return Err(format!("bad input with a uid: {status} {body}"));
    }
    Ok(())
}

/// A client that sends half a request header and waits for the server to
/// hang up (or the run to end), again and again.
fn stalled(base: &str, c: &Counts, stop: &AtomicBool) {
    let addr = base.trim_start_matches("http://").to_string();
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut conn) = std::net::TcpStream::connect(&addr) else {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        let _ = conn.write_all(b"POST /ivpol/validate HTTP/1.1\r\nHost: x\r\n");
        let _ = conn.set_read_timeout(Some(Duration::from_millis(500)));
        let started = Instant::now();
        let mut buf = [0u8; 64];
        while !stop.load(Ordering::Relaxed) && started.elapsed() < Duration::from_secs(30) {
            match std::io::Read::read(&mut conn, &mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => continue,
                Err(_) => break,
            }
        }
        c.stalled.fetch_add(1, Ordering::Relaxed);
    }
}

/// One second of the server's memory: RSS, the linear memory of its
/// component instances (which only grows), and instances created so far.
#[derive(Clone, Copy)]
struct Sample {
    secs: f64,
    rss_mib: f64,
    wasm_mib: f64,
    instances: f64,
}

/// A [`Sample`] every second for `run`. The server's log (a decision line
/// per request) is drained as it goes, so the harness does not hoard it.
fn sample(server: &Server, run: Duration, stop: &AtomicBool) -> Vec<Sample> {
    let (pid, base) = (server.pid(), server.base.as_str());
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(2))
        .build();
    let start = Instant::now();
    let mut samples = Vec::new();
    while start.elapsed() < run && !stop.load(Ordering::Relaxed) {
        if let Some(kib) = rss_kib(pid) {
            let metrics = agent
                .get(&format!("{base}/metrics"))
                .call()
                .ok()
                .and_then(|r| r.into_string().ok())
                .unwrap_or_default();
            samples.push(Sample {
                secs: start.elapsed().as_secs_f64(),
                rss_mib: kib as f64 / 1024.0,
                wasm_mib: metric(&metrics, "ivpol_instance_memory_bytes") / 1048576.0,
                instances: metric(&metrics, "ivpol_instances_created_total"),
            });
        }
        drop(server.log());
        std::thread::sleep(Duration::from_secs(1));
    }
    samples
}

/// The value of an unlabelled metric in Prometheus text, 0 when absent.
fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or(0.0)
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Least-squares slope of `(seconds, MiB)` in MiB per minute.
fn slope(samples: &[(f64, f64)]) -> f64 {
    let n = samples.len() as f64;
    if n < 2.0 {
        return 0.0;
    }
    let mean_x = samples.iter().map(|s| s.0).sum::<f64>() / n;
    let mean_y = samples.iter().map(|s| s.1).sum::<f64>() / n;
    let cov: f64 = samples
        .iter()
        .map(|(x, y)| (x - mean_x) * (y - mean_y))
        .sum();
    let var: f64 = samples.iter().map(|(x, _)| (x - mean_x).powi(2)).sum();
    if var == 0.0 {
        0.0
    } else {
        cov / var * 60.0
    }
}

fn report(
    c: &Counts,
    samples: &[Sample],
    minutes: f64,
    alive: bool,
    wrong: &Mutex<Option<String>>,
) {
    let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
    // The first fifth (at least 30 s) warms caches and the instance pool.
    let warm = (minutes * 60.0 / 5.0).max(30.0);
    let steady: Vec<Sample> = samples.iter().copied().filter(|s| s.secs >= warm).collect();
    let series = |f: fn(&Sample) -> f64| -> Vec<(f64, f64)> {
        steady.iter().map(|s| (s.secs, f(s))).collect()
    };
    let peak = samples.iter().map(|s| s.rss_mib).fold(0.0, f64::max);
    let last = samples.last().copied();
    let last_rss = last.map_or(0.0, |s| s.rss_mib);
    println!("soak: {minutes} min, {CLIENTS} clients, {STALLED} stalled clients");
    println!(
        "requests: cache hit {}, cold {}, mutate {}, bad input {}; stalled connections {}",
        get(&c.hit),
        get(&c.cold),
        get(&c.mutate),
        get(&c.bad),
        get(&c.stalled)
    );
    println!(
        "wrong or error answers to good requests: {}; server alive: {alive}",
        get(&c.wrong)
    );
    let mut latencies = c
        .latencies
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    latencies.sort_unstable();
    println!(
        "normal traffic beside a slow tenant ({SLOW_TENANT} threads, registry answering after {}s, {} requests): p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        SLOW_REGISTRY.as_secs(),
        get(&c.slow_tenant),
        quantile_ms(&latencies, 0.5),
        quantile_ms(&latencies, 0.99),
        quantile_ms(&latencies, 1.0),
    );
    if let Some(first) = wrong.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
        println!("first wrong answer: {first}");
    }
    println!(
        "RSS: peak {peak:.1} MiB, last {last_rss:.1} MiB, slope after {warm:.0} s: {:+.2} MiB/min ({} samples)",
        slope(&series(|s| s.rss_mib)),
        samples.len()
    );
    println!(
        "instance linear memory: last {:.1} MiB, slope {:+.2} MiB/min; RSS less linear memory: slope {:+.2} MiB/min; instances created: {}",
        last.map_or(0.0, |s| s.wasm_mib),
        slope(&series(|s| s.wasm_mib)),
        slope(&series(|s| s.rss_mib - s.wasm_mib)),
        last.map_or(0.0, |s| s.instances),
    );
    write_samples(samples);
}

/// Every sample, for a closer look: `target/soak/samples.csv`.
fn write_samples(samples: &[Sample]) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/soak");
    let mut csv = String::from("seconds,rss_mib,wasm_mib,instances_created\n");
    for s in samples {
        csv.push_str(&format!(
            "{:.0},{:.1},{:.1},{}\n",
            s.secs, s.rss_mib, s.wasm_mib, s.instances
        ));
    }
    let path = dir.join("samples.csv");
    match std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, csv)) {
        Ok(()) => println!("samples: {}", path.display()),
        Err(e) => println!("cannot write {}: {e}", path.display()),
    }
}
