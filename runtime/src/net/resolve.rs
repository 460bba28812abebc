//! DNS for registry connections, done inside the connector so that the
//! addresses the policy checked are the addresses dialled.
//!
//! [`CheckedResolver`] is the resolver of the client's `HttpConnector`: it
//! looks a name up once, checks every address against the policy
//! ([`NetPolicy::check_resolved`]) and hands only an approved answer to
//! the connector. Nothing resolves the name a second time between the
//! check and the connect, which closes DNS rebinding. A lookup is bounded
//! by the request's deadline (carried in [`DEADLINE`]) and by
//! [`MAX_LOOKUP`].
//!
//! The lookup itself is a [`Lookup`]: the system resolver, or, for tests
//! only, a script of successive answers per name read from the file named
//! by [`TEST_DNS_ENV`]. That variable is never set in production; when it
//! is, every start logs a warning saying so.

use super::policy::NetPolicy;
use hyper_util::client::legacy::connect::dns::Name;
use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// The environment variable naming a scripted-DNS file. Test-only.
pub(crate) const TEST_DNS_ENV: &str = "IVPOL_TEST_ONLY_DNS_ANSWERS";

/// No lookup runs longer than this, deadline or not (a lookup left running
/// in the background by the connection pool is bounded too).
pub(crate) const MAX_LOOKUP: Duration = Duration::from_secs(10);

tokio::task_local! {
    /// The deadline of the registry request being sent, read by the
    /// resolver when the connector asks it for a name.
    pub static DEADLINE: Instant;
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Resolves a name to its addresses.
pub(crate) trait Lookup: Send + Sync {
    fn lookup(&self, name: &str) -> BoxFuture<std::io::Result<Vec<IpAddr>>>;

    /// Addresses to treat as public (test scripts only; never in production).
    fn public_for_test(&self) -> &[IpAddr] {
        &[]
    }
}

/// The system resolver (getaddrinfo, through tokio).
pub(crate) struct SystemLookup;

impl Lookup for SystemLookup {
    fn lookup(&self, name: &str) -> BoxFuture<std::io::Result<Vec<IpAddr>>> {
        let name = name.to_string();
        Box::pin(async move {
            Ok(tokio::net::lookup_host((name.as_str(), 0))
                .await?
                .map(|a| a.ip())
                .collect())
        })
    }
}

/// One scripted answer.
#[derive(Clone, Debug)]
enum Answer {
    Addrs(Vec<IpAddr>),
    /// A resolver that never answers.
    Stall,
}

/// Test-only DNS:
///
/// ```json
/// {"answers": {"rebind.test": [["127.0.0.2"], ["127.0.0.1"], "stall"]},
///  "public_for_test": ["127.0.0.2"]}
/// ```
///
/// An answer is a list of addresses or the string `"stall"` (a resolver
/// that never answers). The n-th lookup of a name gets its n-th answer, and
/// the last answer repeats. A name not in the script does not resolve (no
/// fallback to the system resolver). `public_for_test` lists addresses the
/// policy then treats as public, so that a hermetic test can stand for a
/// public registry on a loopback address.
pub(crate) struct ScriptedLookup {
    script: HashMap<String, Vec<Answer>>,
    public: Vec<IpAddr>,
    asked: Mutex<HashMap<String, usize>>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Script {
    answers: HashMap<String, Vec<serde_json::Value>>,
    #[serde(default)]
    public_for_test: Vec<IpAddr>,
}

impl ScriptedLookup {
    pub(crate) fn from_file(path: &std::path::Path) -> Result<ScriptedLookup, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{TEST_DNS_ENV}: reading {}: {e}", path.display()))?;
        ScriptedLookup::parse(&text).map_err(|e| format!("{TEST_DNS_ENV}: {}: {e}", path.display()))
    }

    pub(crate) fn parse(text: &str) -> Result<ScriptedLookup, String> {
        let doc: Script = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let mut script = HashMap::new();
        for (name, answers) in doc.answers {
            let mut parsed = Vec::new();
            for a in answers {
                parsed.push(match a {
                    serde_json::Value::String(s) if s == "stall" => Answer::Stall,
                    serde_json::Value::Array(addrs) => Answer::Addrs(
                        addrs
                            .iter()
                            .map(|v| {
                                v.as_str()
                                    .and_then(|s| s.parse().ok())
                                    .ok_or_else(|| format!("{name}: {v} is not an IP address"))
                            })
                            .collect::<Result<_, _>>()?,
                    ),
                    other => return Err(format!("{name}: {other} is not an answer")),
                });
            }
            if parsed.is_empty() {
                return Err(format!("{name} has no answer"));
            }
            script.insert(name.to_ascii_lowercase(), parsed);
        }
        Ok(ScriptedLookup {
            script,
            public: doc.public_for_test,
            asked: Mutex::default(),
        })
    }
}

impl Lookup for ScriptedLookup {
    fn lookup(&self, name: &str) -> BoxFuture<std::io::Result<Vec<IpAddr>>> {
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        let answer = self.script.get(&name).map(|answers| {
            let mut asked = match self.asked.lock() {
                Ok(a) => a,
                Err(poisoned) => poisoned.into_inner(),
            };
            let n = asked.entry(name.clone()).or_insert(0);
            let answer = answers[(*n).min(answers.len() - 1)].clone();
            *n = n.saturating_add(1);
            answer
        });
        tracing::warn!(%name, ?answer, "test-only DNS answer");
        Box::pin(async move {
            match answer {
                Some(Answer::Addrs(a)) => Ok(a),
                Some(Answer::Stall) => std::future::pending().await,
                None => Err(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("{name} is not in the test DNS script"),
                )),
            }
        })
    }

    fn public_for_test(&self) -> &[IpAddr] {
        &self.public
    }
}

/// The lookup the process uses: the system's, unless the test-only
/// variable is set.
pub(crate) fn lookup_from_env() -> Result<Arc<dyn Lookup>, String> {
    match std::env::var_os(TEST_DNS_ENV) {
        None => Ok(Arc::new(SystemLookup)),
        Some(path) => {
            let scripted = ScriptedLookup::from_file(std::path::Path::new(&path))?;
            tracing::warn!(
                "{TEST_DNS_ENV} is set: registry names resolve from the TEST-ONLY script {}, not from DNS. Never set this in production.",
                std::path::Path::new(&path).display()
            );
            Ok(Arc::new(scripted))
        }
    }
}

/// Why a name got no address to dial.
#[derive(Debug)]
pub(crate) enum ResolveError {
    /// The policy refuses what the name resolved to.
    Refused(String),
    /// The lookup did not finish in time.
    Timeout(String),
    /// The lookup failed.
    Failed(String),
}

impl std::fmt::Display for ResolveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResolveError::Refused(why) | ResolveError::Failed(why) => f.write_str(why),
            ResolveError::Timeout(name) => write!(f, "resolving {name} timed out"),
        }
    }
}

impl std::error::Error for ResolveError {}

impl ResolveError {
    /// The `ResolveError` somewhere in an error's source chain.
    pub(crate) fn find<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a ResolveError> {
        let mut cur = Some(e);
        while let Some(err) = cur {
            if let Some(r) = err.downcast_ref::<ResolveError>() {
                return Some(r);
            }
            cur = err.source();
        }
        None
    }
}

/// The connector's resolver: one lookup, checked, and nothing else dialled.
#[derive(Clone)]
pub(crate) struct CheckedResolver {
    pub policy: Arc<NetPolicy>,
    pub lookup: Arc<dyn Lookup>,
}

impl CheckedResolver {
    /// The approved addresses of `name` (port 0: the connector sets it).
    pub(crate) async fn resolve(
        &self,
        name: &str,
        deadline: Instant,
    ) -> Result<Vec<IpAddr>, ResolveError> {
        let limit = Instant::now()
            .checked_add(MAX_LOOKUP)
            .map_or(deadline, |cap| cap.min(deadline));
        let addrs = match tokio::time::timeout_at(limit.into(), self.lookup.lookup(name)).await {
            Err(_) => return Err(ResolveError::Timeout(name.to_string())),
            Ok(Err(e)) => return Err(ResolveError::Failed(format!("cannot resolve {name}: {e}"))),
            Ok(Ok(a)) => a,
        };
        let overrides = self.lookup.public_for_test();
        let public = |ip: &IpAddr| overrides.contains(ip) || super::policy::is_public(ip);
        self.policy
            .check_resolved_by(name, &addrs, &public)
            .map_err(ResolveError::Refused)?;
        Ok(addrs)
    }
}

impl tower_service::Service<Name> for CheckedResolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = ResolveError;
    type Future = BoxFuture<Result<Self::Response, ResolveError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), ResolveError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        // Read here, while the request's task is being polled; a lookup
        // without one (not from `send_once`) gets the cap alone.
        let deadline = DEADLINE
            .try_with(|d| *d)
            .unwrap_or_else(|_| Instant::now() + MAX_LOOKUP);
        let this = self.clone();
        Box::pin(async move {
            let addrs = this.resolve(name.as_str(), deadline).await?;
            Ok(addrs
                .into_iter()
                .map(|ip| SocketAddr::new(ip, 0))
                .collect::<Vec<_>>()
                .into_iter())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolver(script: &str) -> CheckedResolver {
        CheckedResolver {
            policy: Arc::new(NetPolicy::default()),
            lookup: Arc::new(ScriptedLookup::parse(script).expect("script")),
        }
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(5)
    }

    #[tokio::test]
    async fn each_lookup_is_checked_on_its_own_answer() {
        let r = resolver(r#"{"answers": {"rebind.test": [["8.8.8.8"], ["127.0.0.1"]]}}"#);
        let first = r
            .resolve("rebind.test", soon())
            .await
            .expect("public first");
        assert_eq!(first, vec!["8.8.8.8".parse::<IpAddr>().expect("ip")]);
        let err = r
            .resolve("rebind.test", soon())
            .await
            .expect_err("private next");
        assert!(matches!(err, ResolveError::Refused(_)), "{err}");
        assert!(err.to_string().contains("127.0.0.1"), "{err}");
        // The last answer repeats.
        let e = r
            .resolve("REBIND.test.", soon())
            .await
            .expect_err("refused")
            .to_string();
        assert!(
            e.contains("resolves to the non-public address 127.0.0.1"),
            "{e}"
        );
        let err = r
            .resolve("unknown.test", soon())
            .await
            .expect_err("unknown");
        assert!(matches!(err, ResolveError::Failed(_)), "{err}");
    }

    #[tokio::test]
    async fn a_stalled_lookup_ends_at_the_deadline() {
        let r = resolver(r#"{"answers": {"slow.test": ["stall"]}}"#);
        let deadline = Instant::now() + Duration::from_millis(200);
        let err = r.resolve("slow.test", deadline).await.expect_err("stalled");
        assert!(matches!(err, ResolveError::Timeout(_)), "{err}");
    }

    #[test]
    fn bad_scripts_are_refused() {
        for bad in [
            "",
            "[]",
            r#"{"a": [["1.2.3.4"]]}"#,
            r#"{"answers": {"a": []}}"#,
            r#"{"answers": {"a": [["not-an-ip"]]}}"#,
            r#"{"answers": {"a": ["sometimes"]}}"#,
            r#"{"answers": {"a": [[1]]}}"#,
            r#"{"answers": {}, "public_for_test": ["x"]}"#,
        ] {
            // Any refusal will do: these are the test-only script's own syntax errors.
            assert!(ScriptedLookup::parse(bad).is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn test_scripts_can_declare_loopback_public() {
        let r = resolver(
            r#"{"answers": {"reg.test": [["127.0.0.2"], ["127.0.0.1"]]}, "public_for_test": ["127.0.0.2"]}"#,
        );
        assert!(r.resolve("reg.test", soon()).await.is_ok());
        let e = r
            .resolve("reg.test", soon())
            .await
            .expect_err("refused")
            .to_string();
        assert!(
            e.contains("resolves to the non-public address 127.0.0.1"),
            "{e}"
        );
    }
}
