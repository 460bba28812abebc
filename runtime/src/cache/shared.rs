//! The verification cache shared across replicas (`--shared-cache`): a
//! second level behind each replica's own cache, in Valkey or Redis, so
//! that N replicas verify an image once between them rather than N times.
//!
//! - **Keys** are the local cache's keys (policy content, function,
//!   attestors, digest, the credentials' identity), hashed to a fixed
//!   length under `ivpol:v1:`.
//! - **Values** carry an HMAC-SHA256 over the key and the value, with a key
//!   only the replicas hold (`--shared-cache-key-file`, from a Secret). A
//!   store that others can write to cannot forge a verdict, nor move one
//!   to another key: an entry that fails its MAC is ignored, counted
//!   (`ivpol_shared_cache_rejected_total`) and logged, and the replica
//!   verifies on its own.
//! - Only full successes are stored, as locally, and they expire with the
//!   local TTL. Nothing negative is shared.
//! - **Single flight across replicas**: a replica that misses takes a short
//!   lock key (`SET NX PX`); the others poll for its result until it lands,
//!   the lock goes, or their deadline, then verify on their own.
//! - **A store that is down or slow** costs each call at most
//!   `--shared-cache-timeout`, after which the replica verifies locally;
//!   after a failure it is not asked again for [`BACKOFF`]. It never
//!   decides admission.

use super::resp::{Connection, Reply, RespError};
use crate::metrics::metrics;
use anyhow::{bail, Context, Result};
use ring::hmac;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// A replica that could not reach the store leaves it alone this long.
pub(crate) const BACKOFF: Duration = Duration::from_secs(1);
/// Largest value shared: bigger verified attestations stay local.
pub(crate) const MAX_VALUE: usize = 1 << 20;
/// How long a replica's claim on a key lasts in the store, at most: longer
/// than a verification takes, short enough that a replica that died
/// holding it delays the others only this long.
const LOCK_TTL: Duration = Duration::from_secs(10);
/// How often a replica waiting on another's claim looks for its result.
const POLL: Duration = Duration::from_millis(20);
/// Connections kept open for reuse.
const IDLE_CONNECTIONS: usize = 8;
/// Commands in flight to the store at once, each on a connection of its
/// own: with the idle ones, at most 32 connections are open, however many
/// requests arrive while the store is slow.
const IN_FLIGHT: usize = 24;
/// Stored before the MAC and the value: the format's version.
const VERSION: &[u8] = b"ivpol1";
/// Bytes of an HMAC-SHA256.
const MAC_LEN: usize = 32;
/// What the key file must hold at least.
const MIN_KEY_BYTES: usize = 32;

/// The shared cache's settings (`serve`'s `--shared-cache-*` flags).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct SharedCacheArgs {
    /// A Valkey or Redis server every replica shares verification results
    /// through: `redis://[user@]host:port[/db]`, or `rediss://` for TLS.
    /// Only successes are shared, each with a MAC (--shared-cache-key-file).
    #[arg(
        long = "shared-cache",
        value_name = "URL",
        requires = "shared_cache_key_file"
    )]
    pub shared_cache: Option<String>,
    /// The file holding the key (at least 32 bytes, as from a Secret) every
    /// replica MACs shared entries with; an entry that fails its MAC is
    /// ignored.
    #[arg(
        long = "shared-cache-key-file",
        value_name = "FILE",
        requires = "shared_cache"
    )]
    pub shared_cache_key_file: Option<PathBuf>,
    /// The file holding the store's password (AUTH), if it has one.
    #[arg(
        long = "shared-cache-password-file",
        value_name = "FILE",
        requires = "shared_cache"
    )]
    pub shared_cache_password_file: Option<PathBuf>,
    /// PEM CA certificates for a `rediss://` store, besides the web's roots.
    #[arg(
        long = "shared-cache-ca",
        value_name = "FILE",
        requires = "shared_cache"
    )]
    pub shared_cache_ca: Option<PathBuf>,
    /// How long one exchange with the store may take before the replica
    /// verifies on its own (e.g. 50ms, 1s).
    #[arg(long = "shared-cache-timeout", default_value = "100ms", value_parser = crate::duration::parse_duration)]
    pub shared_cache_timeout: Duration,
}

/// Where the store is, as `--shared-cache` says.
#[derive(Clone, Debug, PartialEq, Eq)]
struct StoreUrl {
    tls: bool,
    host: String,
    port: u16,
    user: Option<String>,
    password: Option<String>,
    db: Option<u32>,
}

/// Where the store is and how to reach it.
#[derive(Clone)]
pub struct SharedConfig {
    url: StoreUrl,
    /// None: plain TCP.
    tls: Option<Arc<rustls::ClientConfig>>,
    key: hmac::Key,
    /// The salt of the credentials' identities in the keys, the same in
    /// every replica that holds the key (`net::identity::share_salt`).
    salt: [u8; 16],
    timeout: Duration,
}

impl SharedConfig {
    /// Has this process key its entries as every replica with the key
    /// does; false when it keyed with a random salt already.
    pub(crate) fn share_salt(&self) -> bool {
        crate::net::identity::share_salt(self.salt)
    }
}

/// The credential salt of the replicas holding `key`: secret as the key
/// is, so a store's readers still cannot test a password against a key.
fn credential_salt(key: &hmac::Key) -> [u8; 16] {
    let tag = hmac::sign(key, b"ivpol credential identity salt");
    let mut salt = [0; 16];
    salt.copy_from_slice(&tag.as_ref()[..16]);
    salt
}

impl std::fmt::Debug for SharedConfig {
    // No password and no key in logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedConfig")
            .field("host", &self.url.host)
            .field("port", &self.url.port)
            .field("tls", &self.url.tls)
            .field("db", &self.url.db)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl SharedCacheArgs {
    /// The settings, reading the key and password files; none without
    /// `--shared-cache`.
    pub fn config(&self) -> Result<Option<SharedConfig>> {
        let (Some(url), Some(key_file)) = (&self.shared_cache, &self.shared_cache_key_file) else {
            return Ok(None);
        };
        let key = read_secret(key_file)?;
        if key.len() < MIN_KEY_BYTES {
            bail!(
                "{}: the shared cache's key must be at least {MIN_KEY_BYTES} bytes",
                key_file.display()
            );
        }
        let password = match &self.shared_cache_password_file {
            Some(f) => {
                Some(String::from_utf8(read_secret(f)?).context("the password is not UTF-8")?)
            }
            None => None,
        };
        let mut url = parse_url(url)?;
        url.password = password.or(url.password);
        let tls = match url.tls {
            true => Some(Arc::new(crate::net::tls_client_config(
                self.shared_cache_ca.as_deref(),
            )?)),
            false => None,
        };
        let key = hmac::Key::new(hmac::HMAC_SHA256, &key);
        Ok(Some(SharedConfig {
            url,
            tls,
            salt: credential_salt(&key),
            key,
            timeout: self.shared_cache_timeout,
        }))
    }
}

/// A secret file's bytes, without the line end a Secret often has.
fn read_secret(path: &Path) -> Result<Vec<u8>> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(bytes.trim_ascii().to_vec())
}

/// `redis://[user[:password]@]host[:port][/db]` or `rediss://...`.
fn parse_url(url: &str) -> Result<StoreUrl> {
    let (tls, rest) = match url.split_once("://") {
        Some(("redis", rest)) => (false, rest),
        Some(("rediss", rest)) => (true, rest),
        _ => bail!("--shared-cache {url:?}: not a redis:// or rediss:// URL"),
    };
    let (authority, db) = match rest.split_once('/') {
        Some((a, "")) => (a, None),
        Some((a, db)) => {
            let db = db
                .parse()
                .with_context(|| format!("--shared-cache: database {db:?}"))?;
            (a, Some(db))
        }
        None => (rest, None),
    };
    let (userinfo, hostport) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    let (user, password) = match userinfo.map(|u| u.split_once(':').unwrap_or((u, ""))) {
        Some((u, p)) => (
            Some(u.to_string()).filter(|u| !u.is_empty()),
            Some(p.to_string()).filter(|p| !p.is_empty()),
        ),
        None => (None, None),
    };
    // `[v6]:port`, `[v6]`, `host:port` or `host`.
    let (host, port) = match hostport.strip_prefix('[') {
        Some(v6) => {
            let (host, rest) = v6
                .split_once(']')
                .with_context(|| format!("--shared-cache {url:?}: an unclosed [ in the host"))?;
            (host, rest.strip_prefix(':'))
        }
        None => match hostport.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (hostport, None),
        },
    };
    let port = match port {
        Some(p) => p
            .parse()
            .with_context(|| format!("--shared-cache: port {p:?}"))?,
        None => 6379,
    };
    if host.is_empty() {
        bail!("--shared-cache {url:?}: no host");
    }
    Ok(StoreUrl {
        tls,
        host: host.to_string(),
        port,
        user,
        password,
        db,
    })
}

trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<S: AsyncRead + AsyncWrite + Unpin + Send> Stream for S {}

type Conn = Connection<Box<dyn Stream>>;

/// The client every instance of a replica shares.
pub(crate) struct SharedCache {
    config: SharedConfig,
    idle: Mutex<Vec<Conn>>,
    /// A permit per command in flight ([`IN_FLIGHT`]).
    in_flight: tokio::sync::Semaphore,
    /// Until when the store is left alone after a failure.
    down_until: Mutex<Option<Instant>>,
}

/// What a lookup in the store found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// A verified value, its MAC checked.
    Hit(Vec<u8>),
    /// Nothing: this replica now holds the replicas' claim on the key.
    Claimed,
    /// Nothing, and no claim: the store is unavailable, or another
    /// replica's claim outlasted the deadline.
    Missed,
}

/// What one `GET` found.
#[derive(Debug, PartialEq, Eq)]
enum Found {
    Value(Vec<u8>),
    Nothing,
    /// A value that failed its MAC.
    Forged,
}

fn hit(value: Vec<u8>) -> Lookup {
    metrics().shared_cache_hits.inc();
    Lookup::Hit(value)
}

/// Runs `task` on the current runtime, if there is one (a claim released
/// from a drop outside one is left to expire).
fn spawn_detached(task: impl std::future::Future<Output = ()> + Send + 'static) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(task);
    }
}

/// The store's name for `key`'s entry, and for the claim on it.
fn store_keys(key: &str) -> (String, String) {
    let hash = Sha256::digest(key.as_bytes());
    let hex = ivpol_refs::encoding::hex(&hash);
    (
        format!("ivpol:v1:entry:{hex}"),
        format!("ivpol:v1:claim:{hex}"),
    )
}

impl SharedCache {
    pub(crate) fn new(config: SharedConfig) -> SharedCache {
        SharedCache {
            config,
            idle: Mutex::new(Vec::new()),
            in_flight: tokio::sync::Semaphore::new(IN_FLIGHT),
            down_until: Mutex::new(None),
        }
    }

    /// Looks `key` up in the store. On a miss this replica claims the key
    /// for the replicas (to verify it), or waits for the replica that holds
    /// the claim, for at most half the time left before `deadline`: a
    /// claimant that died keeps its claim until it expires, and the waiter
    /// must still have time to verify on its own.
    pub(crate) async fn get(self: &Arc<Self>, key: &str, deadline: Instant) -> Lookup {
        let (entry, claim) = store_keys(key);
        let now = Instant::now();
        let give_up = now + deadline.saturating_duration_since(now) / 2;
        let mut waited = false;
        loop {
            let found = match self.fetch(&entry).await {
                Ok(Found::Value(value)) => return hit(value),
                Ok(found) => found,
                Err(()) => return Lookup::Missed,
            };
            let lock = [
                b"SET",
                claim.as_bytes(),
                b"1",
                b"NX",
                b"PX",
                &millis(LOCK_TTL),
            ];
            match self.exchange(&lock).await {
                // Claimed: when there was nothing, look once more (the
                // claimant before may have stored between the two), then
                // verify. A forged entry is verified over.
                Ok(Reply::Status(_)) => {
                    if found == Found::Nothing {
                        if let Ok(Found::Value(value)) = self.fetch(&entry).await {
                            self.release_claim(key);
                            return hit(value);
                        }
                    }
                    metrics().shared_cache_misses.inc();
                    return Lookup::Claimed;
                }
                Ok(_) => {
                    if !waited {
                        metrics().shared_cache_waits.inc();
                        waited = true;
                    }
                    if Instant::now() + POLL >= give_up {
                        metrics().shared_cache_misses.inc();
                        return Lookup::Missed;
                    }
                    tokio::time::sleep(POLL).await;
                }
                Err(()) => return Lookup::Missed,
            }
        }
    }

    /// Stores a full success of `key` for `ttl`, then ends this replica's
    /// claim on it when it holds one. In the background: the request does
    /// not wait.
    pub(crate) fn put(self: &Arc<Self>, key: &str, value: &[u8], ttl: Duration, claimed: bool) {
        if value.len() > MAX_VALUE {
            if claimed {
                self.release_claim(key);
            }
            return;
        }
        let (entry, claim) = store_keys(key);
        let sealed = seal(&self.config.key, &entry, value);
        let me = self.clone();
        spawn_detached(async move {
            let set = [b"SET", entry.as_bytes(), &sealed, b"PX", &millis(ttl)];
            if me.exchange(&set).await.is_ok() && claimed {
                let _ = me.exchange(&[b"DEL", claim.as_bytes()]).await;
            }
        });
    }

    /// Ends this replica's claim on `key` without a result (its
    /// verification failed), so that the others stop waiting for it.
    pub(crate) fn release_claim(self: &Arc<Self>, key: &str) {
        let (_, claim) = store_keys(key);
        let me = self.clone();
        spawn_detached(async move {
            let _ = me.exchange(&[b"DEL", claim.as_bytes()]).await;
        });
    }

    /// What is stored under `entry`: a value whose MAC fails is counted,
    /// logged and not used. `Err` when the store did not answer.
    async fn fetch(&self, entry: &str) -> Result<Found, ()> {
        let reply = self.exchange(&[b"GET", entry.as_bytes()]).await?;
        let Reply::Bulk(Some(sealed)) = reply else {
            return Ok(Found::Nothing);
        };
        match open(&self.config.key, entry, &sealed) {
            Some(value) => Ok(Found::Value(value.to_vec())),
            None => {
                metrics().shared_cache_rejected.inc();
                tracing::warn!(entry, "a shared cache entry failed its MAC and was ignored");
                Ok(Found::Forged)
            }
        }
    }

    /// One command, within the timeout, on a pooled connection; `Err`
    /// (counted, logged, and the store left alone for [`BACKOFF`]) when the
    /// store is down, slow or refuses. Waiting for a turn ([`IN_FLIGHT`])
    /// counts against the timeout: a store too slow for the load is slow.
    async fn exchange(&self, args: &[&[u8]]) -> Result<Reply, ()> {
        if self.down() {
            return Err(());
        }
        let max = VERSION.len() + MAC_LEN + MAX_VALUE;
        let timeout = self.config.timeout;
        let done = tokio::time::timeout(timeout, async {
            let _turn = self.in_flight.acquire().await?;
            // A store that failed while this command waited for its turn
            // is left alone, as at the start.
            if self.down() {
                return Ok(None);
            }
            let mut conn = match self.idle_connection() {
                Some(c) => c,
                None => self.connect().await?,
            };
            let reply = conn.command(args, max).await?;
            Ok::<_, anyhow::Error>(Some((conn, reply)))
        })
        .await;
        match done {
            Ok(Ok(Some((conn, reply)))) => {
                self.keep(conn);
                Ok(reply)
            }
            Ok(Ok(None)) => Err(()),
            Ok(Err(e)) => {
                self.failed(&format!("{e:#}"));
                Err(())
            }
            Err(_) => {
                self.failed(&format!("no answer within {timeout:?}"));
                Err(())
            }
        }
    }

    fn down(&self) -> bool {
        let mut until = self.down_until.lock().unwrap_or_else(|p| p.into_inner());
        match *until {
            Some(t) if Instant::now() < t => true,
            Some(_) => {
                *until = None;
                false
            }
            None => false,
        }
    }

    fn failed(&self, why: &str) {
        metrics().shared_cache_errors.inc();
        let mut until = self.down_until.lock().unwrap_or_else(|p| p.into_inner());
        if until.is_none() {
            tracing::warn!(
                "the shared cache is unavailable ({why}); verifying locally for {BACKOFF:?}"
            );
        }
        *until = Some(Instant::now() + BACKOFF);
    }

    fn idle_connection(&self) -> Option<Conn> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop()
    }

    fn keep(&self, conn: Conn) {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < IDLE_CONNECTIONS {
            idle.push(conn);
        }
    }

    /// A new connection, authenticated and on its database.
    async fn connect(&self) -> Result<Conn> {
        let c = &self.config.url;
        let tcp = TcpStream::connect((c.host.as_str(), c.port))
            .await
            .with_context(|| format!("connecting to {}:{}", c.host, c.port))?;
        let _ = tcp.set_nodelay(true);
        let stream: Box<dyn Stream> = match &self.config.tls {
            None => Box::new(tcp),
            Some(tls) => {
                let name = rustls::pki_types::ServerName::try_from(c.host.clone())
                    .context("the shared cache's host as a TLS name")?;
                let connector = tokio_rustls::TlsConnector::from(tls.clone());
                Box::new(
                    connector
                        .connect(name, tcp)
                        .await
                        .context("TLS with the store")?,
                )
            }
        };
        let mut conn = Connection::new(stream);
        if let Some(password) = &c.password {
            let mut auth: Vec<&[u8]> = vec![b"AUTH"];
            if let Some(user) = &c.user {
                auth.push(user.as_bytes());
            }
            auth.push(password.as_bytes());
            expect_ok(conn.command(&auth, 0).await, "AUTH")?;
        }
        if let Some(db) = c.db {
            expect_ok(
                conn.command(&[b"SELECT", db.to_string().as_bytes()], 0)
                    .await,
                "SELECT",
            )?;
        }
        Ok(conn)
    }
}

fn expect_ok(reply: Result<Reply, RespError>, what: &str) -> Result<()> {
    match reply.with_context(|| format!("{what} to the store"))? {
        Reply::Status(_) => Ok(()),
        other => bail!("{what} to the store: unexpected reply {other:?}"),
    }
}

fn millis(d: Duration) -> Vec<u8> {
    d.as_millis().max(1).to_string().into_bytes()
}

/// The bytes the MAC covers: the format's version, the entry's name
/// (length-prefixed) and the value, so that a value moved to another entry
/// fails.
fn signed_bytes(entry: &str, value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(VERSION.len() + 8 + entry.len() + value.len());
    out.extend_from_slice(VERSION);
    out.extend_from_slice(&(entry.len() as u64).to_be_bytes());
    out.extend_from_slice(entry.as_bytes());
    out.extend_from_slice(value);
    out
}

/// What is stored: the version, the MAC, the value.
fn seal(key: &hmac::Key, entry: &str, value: &[u8]) -> Vec<u8> {
    let tag = hmac::sign(key, &signed_bytes(entry, value));
    let mut out = Vec::with_capacity(VERSION.len() + MAC_LEN + value.len());
    out.extend_from_slice(VERSION);
    out.extend_from_slice(tag.as_ref());
    out.extend_from_slice(value);
    out
}

/// The value in `sealed` when it was sealed for `entry` with `key`.
fn open<'a>(key: &hmac::Key, entry: &str, sealed: &'a [u8]) -> Option<&'a [u8]> {
    let rest = sealed.strip_prefix(VERSION)?;
    if rest.len() < MAC_LEN {
        return None;
    }
    let (mac, value) = rest.split_at(MAC_LEN);
    hmac::verify(key, &signed_bytes(entry, value), mac).ok()?;
    Some(value)
}

#[cfg(test)]
mod tests;
