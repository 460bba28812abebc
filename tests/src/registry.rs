//! A real registry for the tests: Debian's `docker-registry` (CNCF
//! distribution 2.8) on 127.0.0.1 at a free port, with a throw-away config
//! and storage; stopped on drop.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Registry {
    child: Child,
    /// `127.0.0.1:<port>`
    pub addr: String,
    _dir: tempfile::TempDir,
}

/// A port nothing listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

impl Registry {
    /// Starts an anonymous, plain-HTTP registry.
    pub fn start() -> Registry {
        Registry::start_with_auth("")
    }

    /// Starts a registry with an extra `auth:` section (YAML, indented 0).
    pub fn start_with_auth(auth: &str) -> Registry {
        Registry::start_config(None, "", auth)
    }

    /// Starts a TLS registry serving the storage of `other` (so images pushed
    /// to the plain one are there), with this PEM certificate and key.
    pub fn start_tls_over(other: &Registry, cert: &Path, key: &Path) -> Registry {
        let tls = format!(
            "  tls:\n    certificate: {}\n    key: {}\n",
            cert.display(),
            key.display()
        );
        Registry::start_config(Some(&other.storage()), &tls, "")
    }

    /// As [`Registry::start_tls_over`], with an extra top-level section (e.g. `auth:`).
    pub fn start_tls_over_with(other: &Registry, cert: &Path, key: &Path, extra: &str) -> Registry {
        let tls = format!(
            "  tls:\n    certificate: {}\n    key: {}\n",
            cert.display(),
            key.display()
        );
        Registry::start_config(Some(&other.storage()), &tls, extra)
    }

    /// A TLS registry with `auth: htpasswd` for `user`/`password` (the
    /// registry wants TLS for Basic auth), serving the storage of a plain,
    /// anonymous one that is returned with it (to put fixtures in).
    /// Certificate and key are written to `dir`; the certificate, the CA
    /// to trust, is returned.
    pub fn start_basic_auth(
        dir: &Path,
        user: &str,
        password: &str,
    ) -> (Registry, Registry, PathBuf) {
        let plain = Registry::start();
        let htpasswd = dir.join("htpasswd");
        let hash = bcrypt::hash(password, 5).expect("bcrypt");
        std::fs::write(&htpasswd, format!("{user}:{hash}\n")).expect("htpasswd");
        // Also `ghcr.io`, an ECR host and an Artifact Registry host, which
        // tests resolve here to stand for GitHub's, Amazon's and Google's
        // registries (the credential providers serve their own names only).
        let names = vec![
            "127.0.0.1".into(),
            "ghcr.io".into(),
            crate::moto::ecr_host(),
            "europe-docker.pkg.dev".into(),
        ];
        let cert = rcgen::generate_simple_self_signed(names).expect("cert");
        let (crt, key) = (dir.join("tls.crt"), dir.join("tls.key"));
        std::fs::write(&crt, cert.cert.pem()).expect("cert");
        std::fs::write(&key, cert.key_pair.serialize_pem()).expect("key");
        let auth = format!(
            "auth:\n  htpasswd:\n    realm: basic-realm\n    path: {}\n",
            htpasswd.display()
        );
        let tls = Registry::start_tls_over_with(&plain, &crt, &key, &auth);
        (plain, tls, crt)
    }

    fn storage(&self) -> PathBuf {
        self._dir.path().join("data")
    }

    fn start_config(storage: Option<&Path>, http_extra: &str, top_extra: &str) -> Registry {
        let dir = tempfile::tempdir().expect("temp dir");
        let port = free_port();
        let addr = format!("127.0.0.1:{port}");
        let data = storage
            .map(Path::to_path_buf)
            .unwrap_or_else(|| dir.path().join("data"));
        let config = format!(
            "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {addr}\n{http_extra}{top_extra}",
            data.display()
        );
        let config_path = dir.path().join("config.yml");
        std::fs::write(&config_path, config).expect("write registry config");
        let child = Command::new(registry_bin())
            .arg("serve")
            .arg(&config_path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start docker-registry (cargo xtask test installs it)");
        let registry = Registry {
            child,
            addr,
            _dir: dir,
        };
        registry.wait_ready();
        registry
    }

    fn wait_ready(&self) {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(30) {
            // A TCP accept is enough: TLS and token variants answer /v2/ differently.
            if std::net::TcpStream::connect(&self.addr).is_ok() {
                std::thread::sleep(Duration::from_millis(100));
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("docker-registry did not start on {}", self.addr);
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

fn registry_bin() -> String {
    std::env::var("IVPOL_TEST_REGISTRY").unwrap_or_else(|_| "docker-registry".into())
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
