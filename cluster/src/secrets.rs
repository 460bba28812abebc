//! The registry Secrets loaded policies name, fetched by name.
//!
//! A cluster policy's `credentials.secrets` are read from ivpol's own
//! namespace, as Kyverno reads them. A NamespacedImageValidatingPolicy's
//! are read from its own namespace only (the component names them
//! `<namespace>/<name>`): Kyverno reads them from its own namespace for
//! those too, which would let any namespace's policy authors use the
//! credentials of every other team; ivpol deliberately does not.
//!
//! Only the Secrets policies name are fetched, each with a GET, and never
//! listed. The set is replaced whenever a policy set loads and fetched
//! again on every reload tick, so a rotated Secret reaches registry
//! authentication within `--reload-interval`.

use super::is_object_name;
use ivpol_runtime::net::auth::Keychain;
use ivpol_runtime::net::SecretSource;
use k8s_openapi::api::core::v1::Secret;
use kube::{Api, Client};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, RwLock};

/// At most this many Secrets are fetched; the rest are errors.
const MAX_SECRETS: usize = 256;

pub struct ClusterSecrets {
    client: Client,
    own_namespace: String,
    wanted: Mutex<BTreeSet<String>>,
    /// The last fetch of each wanted Secret.
    fetched: RwLock<BTreeMap<String, Result<Keychain, String>>>,
}

impl ClusterSecrets {
    pub(crate) fn new(client: Client, own_namespace: String) -> ClusterSecrets {
        ClusterSecrets {
            client,
            own_namespace,
            wanted: Mutex::default(),
            fetched: RwLock::default(),
        }
    }

    /// Makes `names` the wanted set and fetches all of them.
    pub(crate) async fn want(&self, names: BTreeSet<String>) {
        *self.wanted.lock().unwrap_or_else(|p| p.into_inner()) = names;
        self.refresh().await;
    }

    /// Fetches every wanted Secret again.
    pub async fn refresh(&self) {
        let wanted: Vec<String> = self
            .wanted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned()
            .collect();
        let mut fetched = BTreeMap::new();
        for (i, name) in wanted.into_iter().enumerate() {
            let outcome = match i < MAX_SECRETS {
                true => self.fetch(&name).await,
                false => Fetched::Refused(format!(
                    "registry secret {name}: policies name more than {MAX_SECRETS} secrets"
                )),
            };
            let previous = self
                .fetched
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .get(&name)
                .cloned();
            let result = settle(previous, outcome);
            if let Err(e) = &result {
                tracing::warn!("{e}");
            }
            fetched.insert(name, result);
        }
        *self.fetched.write().unwrap_or_else(|p| p.into_inner()) = fetched;
    }

    async fn fetch(&self, name: &str) -> Fetched {
        let (namespace, secret) = match name.split_once('/') {
            Some((ns, secret)) => (ns, secret),
            None => (self.own_namespace.as_str(), name),
        };
        if !is_object_name(namespace) || !is_object_name(secret) {
            return Fetched::Refused(format!("invalid registry secret name {name:?}"));
        }
        let api = Api::<Secret>::namespaced(self.client.clone(), namespace);
        let why = |e: &dyn std::fmt::Display| {
            format!("registry secret {secret} in namespace {namespace}: {e}")
        };
        let found = match api.get_opt(secret).await {
            Ok(found) => found,
            Err(kube::Error::Api(e)) if e.code == 403 => return Fetched::Refused(why(&e)),
            Err(e) => return Fetched::Transient(why(&e)),
        };
        let Some(found) = found else {
            return Fetched::Refused(format!(
                "registry secret {secret} not found in namespace {namespace}"
            ));
        };
        let text = match serde_json::to_string(&found) {
            Ok(t) => t,
            Err(e) => return Fetched::Refused(e.to_string()),
        };
        match Keychain::from_secret_text(secret, &text) {
            Ok(keychain) => Fetched::Found(keychain),
            Err(e) => Fetched::Refused(e),
        }
    }
}

/// One fetch of a Secret.
enum Fetched {
    Found(Keychain),
    /// Deleted, forbidden (403), or not a registry secret: its credentials
    /// go.
    Refused(String),
    /// The API server did not answer as it should (a timeout, a 5xx):
    /// nothing is known of the Secret now.
    Transient(String),
}

/// What a fetch leaves: a transient error keeps the last good credentials,
/// so that one API server hiccup does not turn every private image into a
/// denial until the next refresh; a deletion or a 403 removes them.
fn settle(
    previous: Option<Result<Keychain, String>>,
    outcome: Fetched,
) -> Result<Keychain, String> {
    match (outcome, previous) {
        (Fetched::Found(keychain), _) => Ok(keychain),
        (Fetched::Refused(why), _) => Err(why),
        (Fetched::Transient(why), Some(Ok(last_good))) => {
            tracing::warn!("{why}; keeping the last good credentials");
            Ok(last_good)
        }
        (Fetched::Transient(why), _) => Err(why),
    }
}

impl SecretSource for ClusterSecrets {
    fn keychain(&self, name: &str) -> Result<Keychain, String> {
        let fetched = self.fetched.read().unwrap_or_else(|p| p.into_inner());
        match fetched.get(name) {
            Some(result) => result.clone(),
            None => Err(format!(
                "registry secret {name} was not fetched: no loaded policy names it"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keychain(user: &str) -> Keychain {
        let config = format!(
            r#"{{"auths": {{"registry.example.com": {{"username": "{user}", "password": "p"}}}}}}"#
        );
        Keychain::parse(&config).expect("docker config")
    }

    fn user(result: &Result<Keychain, String>) -> Option<String> {
        let keychain = result.as_ref().ok()?;
        let credential = keychain.get("registry.example.com", None)?;
        Some(credential.basic_header())
    }

    #[test]
    fn a_transient_error_keeps_the_last_good_credentials_and_a_deletion_does_not() {
        let good = Ok(keychain("alice"));
        let kept = settle(Some(good.clone()), Fetched::Transient("timeout".into()));
        assert_eq!(user(&kept), user(&good));
        let gone = settle(Some(good.clone()), Fetched::Refused("not found".into()));
        assert_eq!(gone.err().as_deref(), Some("not found"));
        let never = settle(None, Fetched::Transient("timeout".into()));
        assert_eq!(never.err().as_deref(), Some("timeout"));
        let rotated = settle(Some(good.clone()), Fetched::Found(keychain("bob")));
        assert_ne!(user(&rotated), user(&good));
    }
}
