//! The end-to-end test harness: starts the real `ivpol` binary on a free
//! loopback port with a throw-away policy directory, and speaks
//! AdmissionReview to it over HTTP(S).

#![forbid(unsafe_code)]

pub mod azure;
pub mod certs;
pub mod cli;
pub mod conformance;
pub mod faulty;
pub mod fixtures;
pub mod gcp;
pub mod http_double;
pub mod kube_api;
pub mod kustomize;
pub mod kyverno;
pub mod moto;
pub mod notary_cases;
pub mod oci;
pub mod policy;
pub mod rbac;
pub mod redis;
pub mod registry;
pub mod review;
pub mod sign;
pub mod token;
pub mod vault;
pub mod verifying;
pub mod webhook;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The `ivpol` binary under test: `$IVPOL_BIN`, else the workspace's debug build.
pub fn ivpol_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("IVPOL_BIN") {
        return PathBuf::from(p);
    }
    let bin = target_dir().join("debug").join("ivpol");
    assert!(
        bin.exists(),
        "{} is missing: build it with `cargo build -p ivpol-host` (`cargo xtask test` does)",
        bin.display()
    );
    bin
}

/// The workspace's cargo target directory.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
}

/// Where test servers keep the precompiled component, so that only the
/// first server of a run pays for compiling it.
pub fn precompile_cache_dir() -> PathBuf {
    target_dir().join("ivpol-precompiled")
}

/// A running `ivpol serve`; killed on drop.
pub struct Server {
    child: Child,
    pub base: String,
    pub dir: tempfile::TempDir,
    startup: String,
    log: mpsc::Receiver<String>,
}

/// Options for [`Server::start_with`].
#[derive(Default)]
pub struct Options<'a> {
    pub namespaces: Option<&'a str>,
    pub tls: Option<(&'a str, &'a str)>,
    pub extra_args: Vec<String>,
    /// Extra environment variables for the server process.
    pub env: Vec<(String, String)>,
    /// The precompile cache; none means the run's shared one
    /// ([`precompile_cache_dir`]).
    pub cache_dir: Option<&'a Path>,
    /// `--no-precompile-cache` instead of any cache directory.
    pub no_precompile_cache: bool,
    /// Run the server as this uid and gid (through `setpriv`; the test
    /// must run as root), as the shipped pod runs it as 65532.
    pub run_as: Option<u32>,
}

impl Server {
    /// Starts `ivpol serve` with these policy files (name, YAML).
    pub fn start(policies: &[(&str, &str)]) -> Server {
        Server::start_with(policies, Options::default())
    }

    pub fn start_with(policies: &[(&str, &str)], opts: Options) -> Server {
        let dir = tempfile::tempdir().expect("temp dir");
        let pdir = dir.path().join("policies");
        std::fs::create_dir(&pdir).expect("policy dir");
        for (name, content) in policies {
            std::fs::write(pdir.join(name), content).expect("write policy");
        }
        let mut cmd = match opts.run_as {
            None => Command::new(ivpol_bin()),
            Some(uid) => {
                let readable = std::fs::Permissions::from_mode(0o755);
                std::fs::set_permissions(dir.path(), readable).expect("chmod the temp dir");
                let mut cmd = Command::new("setpriv");
                let id = uid.to_string();
                cmd.args(["--reuid", &id, "--regid", &id, "--clear-groups"])
                    .arg(ivpol_bin());
                cmd
            }
        };
        cmd.arg("serve")
            .arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--policies")
            .arg(&pdir);
        match opts.no_precompile_cache {
            true => cmd.arg("--no-precompile-cache"),
            false => cmd.arg("--cache-dir").arg(
                opts.cache_dir
                    .map_or_else(precompile_cache_dir, Path::to_path_buf),
            ),
        };
        if let Some(ns) = opts.namespaces {
            let p = dir.path().join("namespaces.yaml");
            std::fs::write(&p, ns).expect("write namespaces");
            cmd.arg("--namespaces").arg(p);
        }
        let scheme = match opts.tls {
            Some((cert, key)) => {
                let (c, k) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
                std::fs::write(&c, cert).expect("write cert");
                std::fs::write(&k, key).expect("write key");
                cmd.arg("--tls-cert").arg(c).arg("--tls-key").arg(k);
                "https"
            }
            None => "http",
        };
        cmd.args(&opts.extra_args);
        cmd.envs(opts.env.iter().map(|(k, v)| (k, v)));
        cmd.env("IVPOL_LOG", "info").env("NO_COLOR", "1");
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn ivpol");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let (addr, startup) =
            wait_for_listen(&rx).unwrap_or_else(|log| panic!("ivpol did not start:\n{log}"));
        Server {
            child,
            base: format!("{scheme}://{addr}"),
            dir,
            startup,
            log: rx,
        }
    }

    /// POSTs `body` to `path` and returns (HTTP status, JSON body).
    pub fn post(&self, path: &str, body: &str) -> (u16, serde_json::Value) {
        post_with(&ureq::agent(), &format!("{}{path}", self.base), body)
    }

    pub fn get(&self, path: &str) -> (u16, serde_json::Value) {
        let resp = match ureq::get(&format!("{}{path}", self.base)).call() {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("GET {path}: {e}"),
        };
        let status = resp.status();
        (status, resp.into_json().unwrap_or(serde_json::Value::Null))
    }

    /// The sum of every sample of the Prometheus metric `name` at
    /// `/metrics` (all label sets), 0 when it has none yet.
    pub fn metric(&self, name: &str) -> f64 {
        metric_sum(&self.metrics_text(), name)
    }

    /// The Prometheus text at `/metrics`.
    pub fn metrics_text(&self) -> String {
        ureq::get(&format!("{}/metrics", self.base))
            .call()
            .unwrap_or_else(|e| panic!("GET /metrics: {e}"))
            .into_string()
            .expect("metrics text")
    }

    /// POSTs an AdmissionReview and returns its `response`, asserting HTTP 200.
    pub fn review(&self, path: &str, review: &serde_json::Value) -> serde_json::Value {
        let (status, body) = self.post(path, &review.to_string());
        assert_eq!(status, 200, "POST {path}: {body}");
        body["response"].clone()
    }

    /// The startup lines, then what the server logged since the last call:
    /// each line is handed out once, so a long run (the soak) does not keep
    /// them all. Callers that wait for a line collect the calls.
    pub fn log(&self) -> String {
        let later: Vec<String> = self.log.try_iter().collect();
        format!("{}\n{}", self.startup, later.join("\n"))
    }

    /// The server's process id (for its memory use).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The `--policies` directory the server watches.
    pub fn policy_dir(&self) -> PathBuf {
        self.dir.path().join("policies")
    }

    /// Sends the server a signal (`HUP`, `TERM`, `INT`).
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{name} failed");
    }

    /// The exit code once the process has ended, waiting at most `limit`;
    /// none if it is still running (or was killed by a signal).
    pub fn wait_exit(&mut self, limit: Duration) -> Option<i32> {
        let end = std::time::Instant::now() + limit;
        while std::time::Instant::now() < end {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// Waits up to `limit` for a log line containing `needle`: a line the
    /// server has written may not have come through its stderr reader yet.
    /// Err holds everything collected while waiting.
    pub fn wait_for_log(&self, limit: Duration, needle: &str) -> Result<(), String> {
        let mut log = String::new();
        match self.eventually(limit, |s| {
            log.push_str(&s.log());
            log.contains(needle)
        }) {
            true => Ok(()),
            false => Err(log),
        }
    }

    /// Polls `check` every 100 ms for at most `limit`; true once it held.
    pub fn eventually(&self, limit: Duration, mut check: impl FnMut(&Server) -> bool) -> bool {
        let end = std::time::Instant::now() + limit;
        loop {
            if check(self) {
                return true;
            }
            if std::time::Instant::now() >= end {
                return false;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// POSTs with a given agent (for TLS).
pub fn post_with(agent: &ureq::Agent, url: &str, body: &str) -> (u16, serde_json::Value) {
    let resp = match agent
        .post(url)
        .set("Content-Type", "application/json")
        .send_string(body)
    {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("POST {url}: {e}"),
    };
    let status = resp.status();
    (status, resp.into_json().unwrap_or(serde_json::Value::Null))
}

/// Waits for the `listening on` line; returns the address and the lines before it.
fn wait_for_listen(rx: &mpsc::Receiver<String>) -> Result<(String, String), String> {
    let mut seen = Vec::new();
    loop {
        match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(line) => {
                if let Some(rest) = line.split("listening on ").nth(1) {
                    // The address ends the text line, or the JSON message.
                    let addr = rest
                        .split('"')
                        .next()
                        .unwrap_or_default()
                        .trim()
                        .trim_start_matches("http://")
                        .trim_start_matches("https://");
                    return Ok((addr.to_string(), seen.join("\n")));
                }
                seen.push(line);
            }
            Err(_) => return Err(seen.join("\n")),
        }
    }
}

/// The sum of the samples of `name` in a Prometheus text exposition.
pub fn metric_sum(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let metric = series.split('{').next()?;
            (metric == name).then(|| value.parse::<f64>().ok())?
        })
        .sum()
}
