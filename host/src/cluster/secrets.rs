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
use crate::net::auth::Keychain;
use crate::net::SecretSource;
use k8s_openapi::api::core::v1::Secret;
use kube::{Api, Client};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, RwLock};

/// At most this many Secrets are fetched; the rest are errors.
const MAX_SECRETS: usize = 256;

pub(crate) struct ClusterSecrets {
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
    pub(crate) async fn refresh(&self) {
        let wanted: Vec<String> = self
            .wanted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned()
            .collect();
        let mut fetched = BTreeMap::new();
        for (i, name) in wanted.into_iter().enumerate() {
            let result = match i < MAX_SECRETS {
                true => self.fetch(&name).await,
                false => Err(format!(
                    "registry secret {name}: policies name more than {MAX_SECRETS} secrets"
                )),
            };
            if let Err(e) = &result {
                tracing::warn!("{e}");
            }
            fetched.insert(name, result);
        }
        *self.fetched.write().unwrap_or_else(|p| p.into_inner()) = fetched;
    }

    async fn fetch(&self, name: &str) -> Result<Keychain, String> {
        let (namespace, secret) = match name.split_once('/') {
            Some((ns, secret)) => (ns, secret),
            None => (self.own_namespace.as_str(), name),
        };
        if !is_object_name(namespace) || !is_object_name(secret) {
            return Err(format!("invalid registry secret name {name:?}"));
        }
        let api = Api::<Secret>::namespaced(self.client.clone(), namespace);
        let found = api
            .get_opt(secret)
            .await
            .map_err(|e| format!("registry secret {secret} in namespace {namespace}: {e}"))?;
        let Some(found) = found else {
            return Err(format!(
                "registry secret {secret} not found in namespace {namespace}"
            ));
        };
        let text = serde_json::to_string(&found).map_err(|e| e.to_string())?;
        Keychain::from_secret_text(secret, &text)
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
