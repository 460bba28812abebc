//! `cosign.key.kms`: public keys the policies name by URI, which the host
//! reads with its own identity and hands the component as PEM (WIT
//! `signing-keys`). The component verifies with them exactly as with
//! `key.data`, and its cache key binds the PEM it got.
//!
//! - `awskms://[ENDPOINT]/KEY` (a key id, `alias/<name>` or an ARN, whose
//!   region wins): KMS `GetPublicKey` through the AWS SDK.
//! - `gcpkms://projects/…/cryptoKeys/K[/cryptoKeyVersions/V]`: Cloud KMS
//!   `getPublicKey`, with Application Default Credentials.
//! - `azurekms://VAULT/KEY[/VERSION]`: Key Vault's get-key, with the host's
//!   Entra identity, to Azure's vault hosts only.
//! - `hashivault://KEY`: Vault transit's read-key (`VAULT_ADDR`,
//!   `VAULT_TOKEN`, `TRANSIT_SECRET_ENGINE_PATH`, `VAULT_CACERT`).
//! - `k8s://NAMESPACE/SECRET`: the Secret's `cosign.pub`, through the
//!   cluster integration (`serve --kubernetes`).
//!
//! Every key is read when the policy set loads (and again on each reload),
//! kept for [`FRESH`], a failure for [`FAILED_FRESH`]; a request that finds
//! none reads it within its deadline. A tenant (a namespaced policy) reads
//! `k8s://` keys of its own namespace only, and cloud keys only when the
//! operator shares the host's credentials with tenants.

mod aws;
mod azure;
pub(crate) mod files;
mod gcp;
mod kubernetes;
mod vault;

use super::entra::Entra;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a key is used before it is read again (a rotated key is picked
/// up within this, or at the next reload).
const FRESH: Duration = Duration::from_secs(300);
/// How long a failure is reused before the key is read again.
const FAILED_FRESH: Duration = Duration::from_secs(5);
/// The most keys kept.
const MAX_KEYS: u64 = 512;
/// No read runs longer than this (the request's deadline too).
const TIMEOUT: Duration = Duration::from_secs(10);
/// The most bytes a key (or the answer holding it) may have.
const MAX_ANSWER: usize = 256 << 10;

type Answer = Result<String, String>;

/// The keys read and where to read them.
pub(crate) struct Keys {
    kept: super::exec::Kept<Answer>,
    cluster: std::sync::OnceLock<kube::Client>,
    /// The host's Entra identity (`azurekms://`).
    entra: Arc<Entra>,
    /// The host's cloud client (`azurekms://`, `gcpkms://`).
    cloud: reqwest::Client,
}

impl Keys {
    pub(crate) fn new(entra: Arc<Entra>, cloud: reqwest::Client) -> Keys {
        Keys {
            kept: super::exec::Kept::new(MAX_KEYS),
            cluster: std::sync::OnceLock::new(),
            entra,
            cloud,
        }
    }

    /// Reads `k8s://` keys through `client` from now on.
    pub(crate) fn use_cluster(&self, client: kube::Client) {
        let _ = self.cluster.set(client);
    }

    /// The PEM key `uri` names for a policy of `tenant`, kept or read
    /// within `deadline`; `host_serves` says whether the host's cloud
    /// identity serves this policy (a cluster policy's, or shared).
    pub(crate) async fn public_key(
        &self,
        uri: &str,
        tenant: Option<&str>,
        host_serves: bool,
        deadline: Instant,
    ) -> Answer {
        let key = kept_as(uri, tenant);
        if let Some(answer) = self.kept.get(&key) {
            return answer;
        }
        self.read(key, uri, tenant, host_serves, deadline).await
    }

    /// Reads `uri` again now (at load and reload), whatever is kept.
    pub(crate) async fn refresh(&self, uri: &str, tenant: Option<&str>, host_serves: bool) {
        let key = kept_as(uri, tenant);
        let deadline = Instant::now() + TIMEOUT;
        let _ = self.read(key, uri, tenant, host_serves, deadline).await;
    }

    async fn read(
        &self,
        key: String,
        uri: &str,
        tenant: Option<&str>,
        host_serves: bool,
        deadline: Instant,
    ) -> Answer {
        let until = deadline.min(Instant::now() + TIMEOUT);
        let read = Box::pin(self.fetch(uri, tenant, host_serves));
        let answer = match tokio::time::timeout_at(until.into(), read).await {
            Ok(answer) => answer.and_then(pem_checked),
            Err(_) => Err("no answer in time".to_string()),
        };
        if let Err(why) = &answer {
            tracing::warn!(%uri, "key.kms: {why}");
        }
        let keep = if answer.is_ok() { FRESH } else { FAILED_FRESH };
        self.kept.put(key, answer.clone(), keep);
        answer
    }

    async fn fetch(&self, uri: &str, tenant: Option<&str>, host_serves: bool) -> Answer {
        let (scheme, rest) = uri
            .split_once("://")
            .ok_or_else(|| format!("{uri} is not a KMS URI"))?;
        if scheme != "k8s" && !host_serves {
            return Err("a namespaced policy's cloud keys are read with ivpol's identity only with --registry-config-for-namespaced".into());
        }
        let (source, answer) = match scheme {
            "awskms" => ("awskms", aws::public_key(rest).await),
            "hashivault" => ("hashivault", vault::public_key(rest).await),
            "gcpkms" => ("gcpkms", gcp::public_key(&self.cloud, rest).await),
            "azurekms" => (
                "azurekms",
                azure::public_key(&self.entra, &self.cloud, rest).await,
            ),
            "k8s" => {
                let client = self
                    .cluster
                    .get()
                    .ok_or("k8s:// keys are read from the cluster: run ivpol serve --kubernetes")?;
                ("k8s", kubernetes::public_key(client, rest, tenant).await)
            }
            other => return Err(format!("{other}:// keys are not implemented")),
        };
        crate::metrics::metrics().cloud_fetch(source, answer.is_ok());
        answer
    }
}

/// Where a key is kept: per tenant, since who may read it differs.
fn kept_as(uri: &str, tenant: Option<&str>) -> String {
    format!("{}\0{uri}", tenant.unwrap_or_default())
}

/// The key, when it is one PEM public key of a sane size.
fn pem_checked(pem: String) -> Answer {
    if pem.len() > MAX_ANSWER {
        return Err(format!("the key is over {MAX_ANSWER} bytes"));
    }
    if !pem.contains("-----BEGIN PUBLIC KEY-----") {
        return Err("the answer holds no PEM public key".into());
    }
    Ok(pem)
}

/// DER SubjectPublicKeyInfo as PEM.
fn spki_pem(der: &[u8]) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut pem = String::from("-----BEGIN PUBLIC KEY-----\n");
    for line in b64.as_bytes().chunks(64) {
        pem.push_str(&String::from_utf8_lossy(line));
        pem.push('\n');
    }
    pem.push_str("-----END PUBLIC KEY-----\n");
    pem
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn der_keys_become_pem_in_64_column_lines() {
        let pem = spki_pem(&[7u8; 91]);
        assert!(pem.starts_with("-----BEGIN PUBLIC KEY-----\n"));
        assert!(pem.lines().all(|l| l.len() <= 64));
        assert!(pem_checked(pem).is_ok());
        let e = pem_checked("not a key".into())
            .expect_err("refused")
            .to_string();
        assert!(e.contains("holds no PEM public key"), "{e}");
    }

    #[tokio::test]
    async fn tenants_use_the_hosts_cloud_identity_only_when_shared() {
        let tls = crate::net::tls_client_config(None).expect("tls");
        let client = crate::net::cloud::client(tls, &Default::default()).expect("client");
        let keys = Keys::new(Arc::new(Entra::new(client.clone())), client);
        let soon = Instant::now() + Duration::from_secs(5);
        let refused = keys
            .public_key("hashivault://k", Some("team"), false, soon)
            .await;
        assert!(refused
            .expect_err("tenant")
            .contains("--registry-config-for-namespaced"));
        let no_cluster = keys
            .public_key("k8s://team/key", Some("team"), false, soon)
            .await;
        assert!(no_cluster.expect_err("cluster").contains("--kubernetes"));
        let unknown = keys.public_key("ibmkms://x", None, true, soon).await;
        assert!(unknown.expect_err("ibm").contains("not implemented"));
    }
}
