//! `--resolve HOST:PORT:ADDR[,ADDR…]`, as curl's: connections to
//! `HOST:PORT` dial the given addresses instead of what DNS answers. It
//! is what a split-horizon network needs, and what tests use to reach a
//! registry that a provider names (`*.dkr.ecr.<region>.amazonaws.com`) on
//! a loopback address.
//!
//! [`PinnedConnector`] sits between the TLS layer and the TCP connector:
//! TLS still sees (and verifies the certificate for) the name, while the
//! TCP connector is handed an IP literal and never resolves. A pinned
//! address obeys the network policy as a looked-up one does
//! ([`NetPolicy::check_resolved_by`]): a name not listed in
//! `--allow-registry`/`--insecure-registry` may be pinned only to public
//! addresses.

pub use super::policy::PinnedAddress;
use super::policy::{is_public, NetPolicy};
use super::resolve::ResolveError;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// The TCP connector with the operator's pinned addresses in front of it.
#[derive(Clone)]
pub(crate) struct PinnedConnector<C> {
    pub inner: C,
    /// Holds the pins (`NetPolicy::pins`) and judges them.
    pub policy: Arc<NetPolicy>,
}

impl<C> PinnedConnector<C> {
    /// The addresses `uri` is pinned to, checked against the policy; none
    /// when it is not pinned.
    fn pinned(&self, uri: &http::Uri) -> Option<Result<&[IpAddr], ResolveError>> {
        let host = uri.host()?.trim_end_matches('.').to_ascii_lowercase();
        let https = uri.scheme_str() != Some("http");
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let pin = self
            .policy
            .pins
            .iter()
            .find(|p| p.host == host && p.port == port)?;
        Some(
            self.policy
                .check_resolved_by(&host, &pin.addrs, &is_public)
                .map(|()| pin.addrs.as_slice())
                .map_err(|why| ResolveError::Refused(format!("--resolve {host}:{port}: {why}"))),
        )
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<C> tower_service::Service<http::Uri> for PinnedConnector<C>
where
    C: tower_service::Service<http::Uri> + Clone + Send + 'static,
    C::Future: Send,
    C::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = C::Response;
    type Error = Box<dyn std::error::Error + Send + Sync>;
    type Future = BoxFuture<Result<C::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let dial = match self.pinned(&uri) {
            None => uri,
            Some(Err(refused)) => return Box::pin(async move { Err(refused.into()) }),
            Some(Ok(addrs)) => match with_address(&uri, addrs) {
                Ok(u) => u,
                Err(e) => return Box::pin(async move { Err(e.into()) }),
            },
        };
        let call = self.inner.call(dial);
        Box::pin(async move { call.await.map_err(Into::into) })
    }
}

/// `uri` with its host replaced by the first of `addrs` (the TCP connector
/// dials an IP literal as given, without a lookup).
fn with_address(uri: &http::Uri, addrs: &[IpAddr]) -> Result<http::Uri, ResolveError> {
    let addr = addrs
        .first()
        .ok_or_else(|| ResolveError::Refused("--resolve names no address".into()))?;
    let https = uri.scheme_str() != Some("http");
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let host = match addr {
        IpAddr::V4(a) => a.to_string(),
        IpAddr::V6(a) => format!("[{a}]"),
    };
    let scheme = uri.scheme_str().unwrap_or("https");
    format!("{scheme}://{host}:{port}/")
        .parse()
        .map_err(|_| ResolveError::Failed(format!("cannot dial {host}:{port}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::policy::HostPort;

    #[test]
    fn entries_parse_like_curls() {
        let p: PinnedAddress = "Reg.Example:5000:127.0.0.1,[::1]".parse().expect("pin");
        assert_eq!(p.host, "reg.example");
        assert_eq!(p.port, 5000);
        assert_eq!(
            p.addrs,
            vec![
                "127.0.0.1".parse::<IpAddr>().expect("v4"),
                "::1".parse().expect("v6")
            ]
        );
        for (bad, why) in [
            ("", "is not HOST:PORT:ADDR"),
            ("reg.example", "is not HOST:PORT:ADDR"),
            ("reg.example:5000", "is not HOST:PORT:ADDR"),
            ("reg.example:http:127.0.0.1", "bad port \"http\""),
            (
                "reg.example:5000:not-an-ip",
                "\"not-an-ip\" is not an IP address",
            ),
            (":5000:127.0.0.1", "is not HOST:PORT:ADDR"),
            ("reg.example:5000:", "\"\" is not an IP address"),
        ] {
            let e = bad.parse::<PinnedAddress>().expect_err(bad).to_string();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }

    fn connector(allow: &[&str]) -> PinnedConnector<()> {
        PinnedConnector {
            inner: (),
            policy: Arc::new(NetPolicy {
                pins: vec!["reg.example:443:127.0.0.1".parse().expect("pin")],
                revocation: vec![],
                allow: allow
                    .iter()
                    .map(|h| h.parse::<HostPort>().expect("host"))
                    .collect(),
                insecure: vec![],
            }),
        }
    }

    #[test]
    fn a_pin_obeys_the_network_policy() {
        let uri: http::Uri = "https://reg.example/v2/".parse().expect("uri");
        // Not listed: a loopback pin is refused as a loopback answer would be.
        let unlisted = connector(&[]);
        let refused = unlisted.pinned(&uri).expect("pinned");
        let why = refused.expect_err("loopback refused").to_string();
        assert!(why.contains("--resolve reg.example:443"), "{why}");
        // Listed: allowed, and only for the pinned port.
        let c = connector(&["reg.example"]);
        assert!(c.pinned(&uri).expect("pinned").is_ok());
        let other: http::Uri = "https://reg.example:5000/v2/".parse().expect("uri");
        assert!(c.pinned(&other).is_none());
        let dial = with_address(&uri, &["::1".parse().expect("v6")]).expect("dial");
        assert_eq!(dial.to_string(), "https://[::1]:443/");
    }
}
