//! The identity of the registry credentials a verification depends on.
//!
//! The component keys the verification cache by what it knows (policy,
//! trust material, repository, digest) and names the registries and the
//! policy's secrets; the host completes the key with a salted hash of the
//! credential it presents to each registry (anonymous included). So an
//! entry fetched with one account is never a hit for another, and a
//! rotated secret starts afresh. The salt is random per process: the keys
//! never reveal a hash that could be tested against a guessed password.
//! Replicas that share a cache (`--shared-cache`) must key alike, so they
//! share a salt derived from the key only they hold ([`share_salt`]).

#[cfg(test)]
use super::auth::Keychain;
use super::Net;
use sha2::{Digest, Sha256};
use std::hash::BuildHasher;
use std::sync::OnceLock;

static SALT: OnceLock<[u8; 16]> = OnceLock::new();

/// Salts the credentials' identities with `salt` instead of random bits,
/// so that replicas sharing a cache key their entries alike. False when
/// this process has keyed with another salt already.
pub(crate) fn share_salt(salt: [u8; 16]) -> bool {
    SALT.set(salt).is_ok() || SALT.get() == Some(&salt)
}

/// 128 random bits for this process, from the standard library's seeded
/// hasher (no extra dependency), unless [`share_salt`] set them.
fn salt() -> &'static [u8; 16] {
    SALT.get_or_init(|| {
        let mut out = [0u8; 16];
        for (i, chunk) in out.chunks_mut(8).enumerate() {
            let v = std::collections::hash_map::RandomState::new().hash_one(i);
            chunk.copy_from_slice(&v.to_be_bytes());
        }
        out
    })
}

fn part(h: &mut Sha256, s: &[u8]) {
    h.update((s.len() as u64).to_be_bytes());
    h.update(s);
}

/// The hash state after the identity of a credential scope: the salt, the
/// number of registries, and each registry with its credential's identity.
/// A key is completed from it with [`Identity::key`], so one scope's
/// identity is worked out once per call however many keys it completes.
#[derive(Clone)]
pub(crate) struct Identity {
    hash: Sha256,
    /// Whether every credential it binds is fixed for the process's life
    /// ([`Net::fixed_credential`]): then it holds for later calls too.
    lasting: bool,
}

impl Identity {
    /// `key` completed with this identity, as lowercase hex.
    pub(crate) fn key(&self, key: &str) -> String {
        let mut h = self.hash.clone();
        part(&mut h, key.as_bytes());
        ivpol_refs::encoding::hex(&h.finalize())
    }
}

/// The most credential scopes whose identity one call keeps: a request
/// names one per policy and set of registries, so a few.
const MAX_IDENTITIES: usize = 16;

/// The identities an instance worked out, by credential scope (registries,
/// secrets, tenant): every image a call checks against the same registry
/// and secrets shares one. At the start of each call only the lasting ones
/// stay ([`Identities::start_call`]): an identity that binds a secret, a
/// helper's, a provider's or a plugin's credential is worked out afresh,
/// so a rotated credential keys the next request anew.
#[derive(Default)]
pub(crate) struct Identities(Vec<Known>);

/// A scope and its identity.
struct Known {
    registries: Vec<String>,
    secrets: Vec<String>,
    tenant: Option<String>,
    identity: Identity,
    /// The keys last completed with it, and what they became: a lasting
    /// scope completes the same few keys request after request (the
    /// images a workload runs), and a SHA-256 each time was 0.6% of the
    /// server's CPU at a cache hit (docs/performance.md).
    completed: Vec<(String, String)>,
}

/// The most completed keys a scope keeps.
const MAX_COMPLETED: usize = 8;

impl Known {
    fn key(&mut self, key: &str) -> String {
        if let Some((_, done)) = self.completed.iter().find(|(k, _)| k == key) {
            return done.clone();
        }
        let done = self.identity.key(key);
        if self.completed.len() == MAX_COMPLETED {
            self.completed.remove(0);
        }
        self.completed.push((key.to_string(), done.clone()));
        done
    }
}

impl Identities {
    /// `key` completed with the identity kept for the scope, if one is.
    pub(crate) fn key(
        &mut self,
        registries: &[String],
        secrets: &[String],
        tenant: Option<&str>,
        key: &str,
    ) -> Option<String> {
        self.0
            .iter_mut()
            .find(|k| {
                k.registries == registries && k.secrets == secrets && k.tenant.as_deref() == tenant
            })
            .map(|k| k.key(key))
    }

    /// Forgets every identity that may not hold for a new call.
    pub(crate) fn start_call(&mut self) {
        self.0.retain(|k| k.identity.lasting);
    }

    /// `key` completed with `identity`, which is kept for the scope while
    /// there is room.
    pub(crate) fn keep(
        &mut self,
        registries: &[String],
        secrets: &[String],
        tenant: Option<&str>,
        identity: Identity,
        key: &str,
    ) -> String {
        if self.0.len() >= MAX_IDENTITIES {
            return identity.key(key);
        }
        let mut known = Known {
            registries: registries.to_vec(),
            secrets: secrets.to_vec(),
            tenant: tenant.map(String::from),
            identity,
            completed: Vec::new(),
        };
        let done = known.key(key);
        self.0.push(known);
        done
    }
}

impl Net {
    /// `key` completed with [`Net::identity`] in one step (the tests').
    #[cfg(test)]
    pub(crate) async fn scoped_key(
        &self,
        key: &str,
        registries: &[String],
        secrets: &[String],
        tenant: Option<&str>,
        deadline: std::time::Instant,
    ) -> Option<String> {
        let identity = self.identity(registries, secrets, tenant, deadline).await?;
        Some(identity.key(key))
    }

    /// The identity of the credentials the host presents to each of
    /// `registries` (`host[:port]`) for a policy naming `secrets`. None
    /// when the policy's secrets cannot be read, or a credential helper
    /// fails: the verification then runs, and fails on the same error.
    pub(crate) async fn identity(
        &self,
        registries: &[String],
        secrets: &[String],
        tenant: Option<&str>,
        deadline: std::time::Instant,
    ) -> Option<Identity> {
        let host = self.host_keychain_serves(tenant);
        let policy = self.secrets_keychain(secrets, host).ok()?;
        let mut lasting = secrets.is_empty() && policy.is_none();
        let mut h = Sha256::new();
        part(&mut h, salt());
        part(&mut h, &(registries.len() as u64).to_be_bytes());
        for registry in registries {
            part(&mut h, registry.as_bytes());
            // The credential's own id (the token cache keys by it too).
            let parsed: http::uri::Authority = registry.parse().ok()?;
            lasting &= self.fixed_credential(parsed.host(), parsed.port_u16(), host);
            let credential = self
                .credential(
                    parsed.host(),
                    parsed.port_u16(),
                    None,
                    policy.as_ref(),
                    host,
                    deadline,
                )
                .await
                .ok()?;
            match (
                credential,
                host.then(|| self.plugin_serving(registry)).flatten(),
            ) {
                (Some(c), _) => part(&mut h, c.id().as_bytes()),
                // A kubelet plugin may hold a credential for some of the
                // registry's repositories: the key says whose they were.
                (None, Some(plugin)) => part(&mut h, format!("\0plugin {plugin}").as_bytes()),
                (None, None) => part(&mut h, b"\0anonymous"),
            }
        }
        Some(Identity { hash: h, lasting })
    }

    /// Whether the credential [`Net::credential`] presents to `host:port`
    /// without a policy's secrets is fixed for the process's life: an
    /// `auths` entry of the operator's keychain, or none and no kubelet
    /// plugin to ask. A helper's, a provider's or a plugin's credential may
    /// change between calls (tokens expire, answers are cached for a time).
    /// The keychain is read once at start; the plugins and whether the
    /// keychain serves tenants are set before anything is served.
    fn fixed_credential(&self, host: &str, port: Option<u16>, host_keychain: bool) -> bool {
        use super::auth::Source;
        match host_keychain.then(|| self.keychain.source(host, port)) {
            None => true,
            Some(Some(Source::Stored(_))) => true,
            Some(Some(Source::Helper(_) | Source::Provider(_))) => false,
            Some(None) => self.plugins.get().is_none(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::policy::NetPolicy;

    fn net(config: &str, secrets: Option<&std::path::Path>) -> Net {
        let keychain = Keychain::parse(config).expect("keychain");
        Net::new(NetPolicy::default(), keychain, secrets, None).expect("net")
    }

    fn block<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(f)
    }

    fn later() -> std::time::Instant {
        std::time::Instant::now() + std::time::Duration::from_secs(10)
    }

    fn registries(r: &[&str]) -> Vec<String> {
        r.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn keys_bind_the_credential_of_each_registry() {
        let a = net(
            r#"{"auths":{"r.io":{"username":"u","password":"a"}}}"#,
            None,
        );
        let b = net(
            r#"{"auths":{"r.io":{"username":"u","password":"b"}}}"#,
            None,
        );
        let anon = net("{}", None);
        let key = |n: &Net, r: &[&str]| {
            block(n.scoped_key("k", &registries(r), &[], None, later())).expect("key")
        };
        assert_eq!(key(&a, &["r.io"]), key(&a, &["r.io"]));
        // The same username with another password is another identity.
        assert_ne!(key(&a, &["r.io"]), key(&b, &["r.io"]));
        assert_ne!(key(&a, &["r.io"]), key(&anon, &["r.io"]));
        // A registry the credential is not for reads anonymously.
        assert_eq!(key(&a, &["other.io"]), key(&anon, &["other.io"]));
        assert_ne!(key(&a, &["r.io"]), key(&a, &["r.io", "other.io"]));
        assert_ne!(
            block(a.scoped_key("k", &registries(&["r.io"]), &[], None, later())),
            block(a.scoped_key("k2", &registries(&["r.io"]), &[], None, later()))
        );
    }

    /// A secrets directory `name` holding the secret `team`, with its own
    /// credential for r.io.
    fn team_secret(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(
            dir.join("team"),
            r#"{"auths":{"r.io":{"username":"u","password":"team"}}}"#,
        )
        .expect("write");
        dir
    }

    #[test]
    fn a_policy_secret_wins_and_an_unreadable_one_gives_no_key() {
        let dir = team_secret("ivpol-identity");
        let n = net(
            r#"{"auths":{"r.io":{"username":"u","password":"host"}}}"#,
            Some(&dir),
        );
        let with =
            block(n.scoped_key("k", &registries(&["r.io"]), &["team".into()], None, later()));
        let without = block(n.scoped_key("k", &registries(&["r.io"]), &[], None, later()));
        assert!(with.is_some() && without.is_some());
        assert_ne!(with, without);
        assert_eq!(
            block(n.scoped_key(
                "k",
                &registries(&["r.io"]),
                &["missing".into()],
                None,
                later()
            )),
            None
        );
    }

    /// A kept identity completes keys as the whole lookup does, and only for
    /// the scope it was worked out for; at most `MAX_IDENTITIES` are kept.
    #[test]
    fn a_kept_identity_keys_as_a_fresh_one_for_its_scope_only() {
        let n = net(
            r#"{"auths":{"r.io":{"username":"u","password":"a"}}}"#,
            None,
        );
        let regs = registries(&["r.io"]);
        let identity = block(n.identity(&regs, &[], None, later())).expect("identity");
        let mut kept = Identities::default();
        let first = kept.keep(&regs, &[], None, identity, "k0");
        assert_eq!(
            Some(first),
            block(n.scoped_key("k0", &regs, &[], None, later()))
        );
        // More keys than a scope remembers, twice over: each is completed
        // as a fresh lookup completes it, remembered or not.
        for round in 0..2 {
            for i in 0..2 * MAX_COMPLETED {
                let key = format!("k{i}");
                let fresh = block(n.scoped_key(&key, &regs, &[], None, later()));
                let again = kept.key(&regs, &[], None, &key);
                assert_eq!(again, fresh, "round {round}, {key}");
            }
        }
        assert_eq!(kept.0[0].completed.len(), MAX_COMPLETED);
        assert!(kept.key(&regs, &["s".into()], None, "k0").is_none());
        assert!(kept.key(&regs, &[], Some("team"), "k0").is_none());
        assert!(kept
            .key(&registries(&["r.io", "q.io"]), &[], None, "k0")
            .is_none());
        for i in 0..2 * MAX_IDENTITIES {
            let other = registries(&[&format!("r{i}.io")]);
            let identity = block(n.identity(&other, &[], None, later())).expect("identity");
            let key = kept.keep(&other, &[], None, identity, "k0");
            let fresh = block(n.scoped_key("k0", &other, &[], None, later()));
            assert_eq!(Some(key), fresh, "{i}: completed whether kept or not");
        }
        assert_eq!(kept.0.len(), MAX_IDENTITIES);
    }

    /// Only identities of credentials fixed for the process's life outlast
    /// a call: a policy's secret, a helper's or a provider's credential is
    /// looked up again by the next call.
    #[test]
    fn only_fixed_credentials_outlast_a_call() {
        let dir = team_secret("ivpol-lasting");
        let n = net(
            r#"{"auths":{"r.io":{"username":"u","password":"a"}},
                "credHelpers":{"h.io":"helper"}}"#,
            Some(&dir),
        );
        let stored = registries(&["r.io"]);
        let anonymous = registries(&["q.io"]);
        let team = vec!["team".to_string()];
        let mut kept = Identities::default();
        let mut keep = |regs: &[String], secrets: &[String], tenant: Option<&str>| {
            let identity = block(n.identity(regs, secrets, tenant, later())).expect("identity");
            kept.keep(regs, secrets, tenant, identity, "k");
        };
        keep(&stored, &[], None);
        keep(&anonymous, &[], None);
        keep(&stored, &team, None);
        // A tenant reads r.io anonymously (the host's keychain is not
        // theirs): fixed as well.
        keep(&stored, &[], Some("t"));
        kept.start_call();
        assert!(kept.key(&stored, &[], None, "k").is_some());
        assert!(kept.key(&anonymous, &[], None, "k").is_some());
        assert!(kept.key(&stored, &[], Some("t"), "k").is_some());
        assert!(kept.key(&stored, &team, None, "k").is_none());
        assert_eq!(kept.0.len(), 3);
        // A helper's credential may change between calls; the keychain
        // does not serve a tenant, so the tenant's access is anonymous.
        assert!(!n.fixed_credential("h.io", None, true));
        assert!(n.fixed_credential("h.io", None, false));
        assert!(n.fixed_credential("r.io", None, true));
    }
}
