//! Public keys a policy names but does not hold (`cosign.key.kms`): the
//! component has no cloud credentials, so the host fetches them (WIT
//! `signing-keys`) and the engine verifies with the PEM it gets, exactly
//! as for `key.data`. The verification cache binds the PEM (a KMS key is a
//! per-request source, like an expression).

use std::sync::Arc;

/// Where `kms` keys come from.
pub trait KeySource: Send + Sync {
    /// The PEM public key `uri` names, for a policy of `tenant` (the
    /// namespace of a namespaced policy); why not, when it cannot be read.
    fn public_key(&self, uri: &str, tenant: Option<&str>) -> Result<String, String>;
    /// The contents of the trust file `path` (`tuf.root.path`), which the
    /// host reads from the directories its operator lists.
    fn trust_file(&self, path: &str, tenant: Option<&str>) -> Result<String, String>;
}

/// The engine's key source.
pub type SharedKeys = Arc<dyn KeySource>;

/// No key source (native tests): every KMS key is an error.
pub struct NoKeys;

impl KeySource for NoKeys {
    fn public_key(&self, uri: &str, _tenant: Option<&str>) -> Result<String, String> {
        Err(format!(
            "{uri}: no KMS key source (the host fetches KMS keys)"
        ))
    }

    fn trust_file(&self, path: &str, _tenant: Option<&str>) -> Result<String, String> {
        Err(format!(
            "{path}: no trust file source (the host reads them)"
        ))
    }
}

/// A key source that holds nothing.
pub fn none() -> SharedKeys {
    Arc::new(NoKeys)
}

/// What the engine reads through the host during a verification.
#[derive(Clone)]
pub struct HostServices {
    /// The verification cache.
    pub cache: super::cache::SharedCache,
    /// The KMS keys.
    pub keys: SharedKeys,
}

impl Default for HostServices {
    fn default() -> HostServices {
        HostServices {
            cache: super::cache::none(),
            keys: none(),
        }
    }
}
