//! A real Valkey/Redis for the shared-cache tests: Debian's `redis-server`
//! on 127.0.0.1 at a free port, with no persistence, and `redis-cli` to
//! look at and tamper with what the replicas stored; stopped on drop.

use crate::registry::free_port;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Redis {
    child: Child,
    pub port: u16,
    /// The password `AUTH` needs, if any.
    password: Option<String>,
    /// The CA of the TLS port's certificate (for `localhost`), with TLS.
    pub ca: Option<PathBuf>,
    dir: tempfile::TempDir,
}

impl Redis {
    /// A plain store without a password.
    pub fn start() -> Redis {
        Redis::start_with(None, false)
    }

    /// A store wanting `password`, on TLS (a certificate for `localhost`)
    /// when `tls`.
    pub fn start_with(password: Option<&str>, tls: bool) -> Redis {
        let dir = tempfile::tempdir().expect("tempdir");
        let port = free_port();
        let mut cmd = Command::new("redis-server");
        cmd.args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir.path());
        let ca = tls.then(|| {
            let (ca, cert, key) = localhost_certs(&dir);
            cmd.args(["--port", "0", "--tls-port", &port.to_string()])
                .arg("--tls-cert-file")
                .arg(&cert)
                .arg("--tls-key-file")
                .arg(&key)
                .arg("--tls-ca-cert-file")
                .arg(&ca)
                .args(["--tls-auth-clients", "no"]);
            ca
        });
        if !tls {
            cmd.args(["--port", &port.to_string()]);
        }
        if let Some(p) = password {
            cmd.args(["--requirepass", p]);
        }
        let log = std::fs::File::create(dir.path().join("redis.log")).expect("log");
        let child = cmd
            .stdout(log)
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server (cargo xtask test installs it)");
        let redis = Redis {
            child,
            port,
            password: password.map(String::from),
            ca,
            dir,
        };
        redis.wait_ready();
        redis
    }

    /// `redis://` (or `rediss://localhost`) without the password.
    pub fn url(&self) -> String {
        match self.ca {
            Some(_) => format!("rediss://localhost:{}", self.port),
            None => format!("redis://127.0.0.1:{}", self.port),
        }
    }

    /// Runs `redis-cli` with `args` against this store; its stdout.
    pub fn cli(&self, args: &[&str]) -> String {
        let mut cmd = Command::new("redis-cli");
        cmd.args(["-h", "127.0.0.1", "-p", &self.port.to_string()]);
        if let Some(ca) = &self.ca {
            cmd.args(["--tls", "--sni", "localhost", "--cacert"])
                .arg(ca);
        }
        if let Some(p) = &self.password {
            cmd.args(["--no-auth-warning", "-a", p]);
        }
        let out = cmd.args(args).output().expect("redis-cli");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The keys matching `pattern`, sorted.
    pub fn keys(&self, pattern: &str) -> Vec<String> {
        let mut keys: Vec<String> = (self.cli(&["--scan", "--pattern", pattern]).lines())
            .map(str::to_string)
            .filter(|k| !k.is_empty())
            .collect();
        keys.sort();
        keys
    }

    /// Stops the store (a store that died mid-run).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.cli(&["PING"]).trim() == "PONG" {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let log = std::fs::read_to_string(self.dir.path().join("redis.log")).unwrap_or_default();
        panic!(
            "redis-server did not answer PING on port {}:\n{log}",
            self.port
        );
    }

    /// A file in the store's directory holding `text` (a key, a password).
    pub fn secret_file(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, format!("{text}\n")).expect("secret file");
        path
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A CA, and a certificate and key for `localhost` it signed, in `dir`.
/// Each has a name of its own: OpenSSL (redis-cli) takes a leaf named like
/// its issuer for a self-signed one.
fn localhost_certs(dir: &tempfile::TempDir) -> (PathBuf, PathBuf, PathBuf) {
    let named = |sans: Vec<String>, cn: &str| {
        let mut params = rcgen::CertificateParams::new(sans).expect("params");
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        params
    };
    let ca_key = rcgen::KeyPair::generate().expect("key");
    let mut params = named(Vec::new(), "ivpol test store CA");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = params.self_signed(&ca_key).expect("CA");
    let key = rcgen::KeyPair::generate().expect("key");
    let cert = named(vec!["localhost".to_string()], "localhost")
        .signed_by(&key, &ca, &ca_key)
        .expect("leaf");
    let paths = (
        dir.path().join("ca.crt"),
        dir.path().join("redis.crt"),
        dir.path().join("redis.key"),
    );
    std::fs::write(&paths.0, ca.pem()).expect("ca");
    std::fs::write(&paths.1, cert.pem()).expect("cert");
    std::fs::write(&paths.2, key.serialize_pem()).expect("key");
    paths
}
