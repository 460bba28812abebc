//! moto's server: a local stand-in for the AWS APIs (ECR's
//! `GetAuthorizationToken`, KMS) that the AWS SDK in `ivpol` reaches through
//! its standard endpoint override, `AWS_ENDPOINT_URL`. `cargo xtask test`
//! installs it into a venv and names its `moto_server` in `IVPOL_MOTO_SERVER`
//! (and the venv's python, with boto3, in `IVPOL_MOTO_PYTHON`).

use crate::registry::free_port;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The account moto answers for by default.
pub const ACCOUNT: &str = "123456789012";
/// The region the tests use.
pub const REGION: &str = "us-east-1";
/// The password of moto's ECR token for [`ACCOUNT`].
pub const ECR_PASSWORD: &str = "123456789012-auth-token";

/// The ECR registry host of [`ACCOUNT`] in [`REGION`].
pub fn ecr_host() -> String {
    format!("{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com")
}

/// A running moto server, killed on drop.
pub struct Moto {
    child: Child,
    pub endpoint: String,
}

fn tool(var: &str) -> PathBuf {
    match std::env::var_os(var) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => panic!("{var} is not set: run these tests with `cargo xtask test` (it installs moto)"),
    }
}

impl Moto {
    pub fn start() -> Moto {
        let port = free_port();
        let child = Command::new(tool("IVPOL_MOTO_SERVER"))
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start moto_server");
        let moto = Moto {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
        };
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "moto_server did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        moto
    }

    /// The environment an AWS SDK needs to talk to this server only: test
    /// keys, the region, no shared config files, no instance metadata.
    pub fn env(&self) -> Vec<(String, String)> {
        [
            ("AWS_ENDPOINT_URL", self.endpoint.as_str()),
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
            ("AWS_REGION", REGION),
            // boto3's name for it.
            ("AWS_DEFAULT_REGION", REGION),
            ("AWS_EC2_METADATA_DISABLED", "true"),
            ("AWS_CONFIG_FILE", "/nonexistent"),
            ("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    /// Runs `script` with the venv's python (boto3 at hand), against this
    /// server; its stdout, trimmed. Panics when it fails.
    pub fn python(&self, script: &str) -> String {
        let out = Command::new(tool("IVPOL_MOTO_PYTHON"))
            .args(["-c", script])
            .envs(self.env())
            .output()
            .expect("run python");
        assert!(
            out.status.success(),
            "python failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

impl Moto {
    /// Creates an ECC_NIST_P256 signing key in KMS under `alias/<alias>`.
    pub fn kms_key(&self, alias: &str) {
        self.python(&format!(
            "import boto3\nk = boto3.client('kms')\nid = k.create_key(KeySpec='ECC_NIST_P256', KeyUsage='SIGN_VERIFY')['KeyMetadata']['KeyId']\nk.create_alias(AliasName='alias/{alias}', TargetKeyId=id)"
        ));
    }

    /// KMS `Sign` of `message` (ECDSA over SHA-256) with `alias/<alias>`:
    /// the DER signature.
    pub fn kms_sign(&self, alias: &str, message: &[u8]) -> Vec<u8> {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD;
        let script = format!(
            "import boto3, base64\nk = boto3.client('kms')\ns = k.sign(KeyId='alias/{alias}', Message=base64.b64decode('{}'), MessageType='RAW', SigningAlgorithm='ECDSA_SHA_256')['Signature']\nprint(base64.b64encode(s).decode())",
            b64.encode(message)
        );
        b64.decode(self.python(&script))
            .expect("a base64 signature")
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
