//! A real registry for the tests: Debian's `docker-registry` (CNCF
//! distribution 2.8) on 127.0.0.1 at a free port, with a throw-away config
//! and storage; stopped on drop.

use std::net::TcpListener;
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
        let dir = tempfile::tempdir().expect("temp dir");
        let port = free_port();
        let addr = format!("127.0.0.1:{port}");
        let config = format!(
            "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {addr}\n{auth}",
            dir.path().join("data").display()
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
            match ureq::get(&format!("http://{}/v2/", self.addr)).call() {
                Ok(_) | Err(ureq::Error::Status(_, _)) => return,
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
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
