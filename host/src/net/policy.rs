//! Which registries the component may reach, and over which scheme.
//!
//! - `--allow-registry HOST[:PORT]` (repeatable): only these hosts. Without
//!   any, every public host is allowed and loopback, private, link-local and
//!   other non-global addresses are refused (no SSRF into the cluster).
//! - `--insecure-registry HOST[:PORT]`: plain HTTP to that host, which is
//!   then allowed too. The component always asks for `https://`; the host
//!   downgrades for these registries, as Docker's `insecure-registries` does.

use std::net::IpAddr;

/// `HOST[:PORT]`; without a port it matches every port of the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPort {
    pub host: String,
    pub port: Option<u16>,
}

impl std::str::FromStr for HostPort {
    type Err = String;

    fn from_str(s: &str) -> Result<HostPort, String> {
        let s = s
            .trim()
            .trim_start_matches("https://")
            .trim_start_matches("http://")
            .trim_end_matches('/');
        if s.is_empty() || s.contains('/') {
            return Err(format!("{s:?} is not HOST[:PORT]"));
        }
        let (host, port) = match s.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') || h.ends_with(']') => {
                let port = p
                    .parse::<u16>()
                    .map_err(|_| format!("{s:?}: bad port {p:?}"))?;
                (h, Some(port))
            }
            _ => (s, None),
        };
        Ok(HostPort {
            host: host.trim_matches(['[', ']']).to_ascii_lowercase(),
            port,
        })
    }
}

impl HostPort {
    fn matches(&self, host: &str, port: u16) -> bool {
        self.host == host && self.port.is_none_or(|p| p == port)
    }
}

#[derive(Debug, Clone, Default)]
pub struct NetPolicy {
    pub allow: Vec<HostPort>,
    pub insecure: Vec<HostPort>,
}

/// How a request may go out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Https,
    Http,
}

impl NetPolicy {
    /// The route for `host:port`, or why it is refused. `resolve` gives the
    /// addresses the name resolves to (only consulted without an allow-list).
    pub async fn route<F, Fut>(&self, host: &str, port: u16, resolve: F) -> Result<Route, String>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = std::io::Result<Vec<IpAddr>>>,
    {
        let host = host.trim_matches(['[', ']']).to_ascii_lowercase();
        if self.insecure.iter().any(|h| h.matches(&host, port)) {
            return Ok(Route::Http);
        }
        if !self.allow.is_empty() {
            return if self.allow.iter().any(|h| h.matches(&host, port)) {
                Ok(Route::Https)
            } else {
                Err(format!("{host}:{port} is not in --allow-registry"))
            };
        }
        let addrs = match host.parse::<IpAddr>() {
            Ok(ip) => vec![ip],
            Err(_) => resolve()
                .await
                .map_err(|e| format!("cannot resolve {host}: {e}"))?,
        };
        if addrs.is_empty() {
            return Err(format!("{host} resolves to no address"));
        }
        if let Some(bad) = addrs.iter().find(|ip| !is_public(ip)) {
            return Err(format!("{host} resolves to the non-public address {bad}; allow it with --allow-registry or --insecure-registry"));
        }
        Ok(Route::Https)
    }
}

/// Global unicast: not loopback, private, link-local, CGNAT, multicast, documentation or unspecified.
pub fn is_public(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || o[0] == 0
                || (o[0] == 100 && (o[1] & 0xc0) == 64)
                || (o[0] == 192 && o[1] == 0 && o[2] == 0)
                || o[0] >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(&IpAddr::V4(v4));
            }
            let s = v6.segments();
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || (s[0] == 0x2001 && s[1] == 0x0db8))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hp(s: &str) -> HostPort {
        s.parse().expect("valid")
    }

    async fn route(
        p: &NetPolicy,
        host: &str,
        port: u16,
        addrs: Vec<IpAddr>,
    ) -> Result<Route, String> {
        p.route(host, port, || async move { Ok(addrs) }).await
    }

    #[test]
    fn parses_host_port() {
        assert_eq!(
            hp("ghcr.io"),
            HostPort {
                host: "ghcr.io".into(),
                port: None
            }
        );
        assert_eq!(
            hp("127.0.0.1:5000"),
            HostPort {
                host: "127.0.0.1".into(),
                port: Some(5000)
            }
        );
        assert_eq!(
            hp("[::1]:5000"),
            HostPort {
                host: "::1".into(),
                port: Some(5000)
            }
        );
        assert!("a/b".parse::<HostPort>().is_err());
        assert!("a:x".parse::<HostPort>().is_err());
    }

    #[tokio::test]
    async fn default_policy_refuses_non_public_addresses() {
        let p = NetPolicy::default();
        let public: IpAddr = "140.82.112.34".parse().expect("ip");
        assert_eq!(
            route(&p, "ghcr.io", 443, vec![public]).await,
            Ok(Route::Https)
        );
        for bad in [
            "127.0.0.1",
            "10.0.0.1",
            "169.254.169.254",
            "192.168.1.1",
            "100.64.0.1",
            "::1",
            "fd00::1",
            "::ffff:10.0.0.1",
        ] {
            let ip: IpAddr = bad.parse().expect("ip");
            assert!(
                route(&p, "evil.example", 443, vec![ip]).await.is_err(),
                "{bad}"
            );
            assert!(route(&p, bad, 443, vec![]).await.is_err(), "{bad} literal");
        }
    }

    #[tokio::test]
    async fn allow_list_and_insecure() {
        let p = NetPolicy {
            allow: vec![hp("ghcr.io")],
            insecure: vec![hp("127.0.0.1:5000")],
        };
        assert_eq!(route(&p, "ghcr.io", 443, vec![]).await, Ok(Route::Https));
        assert_eq!(route(&p, "127.0.0.1", 5000, vec![]).await, Ok(Route::Http));
        assert!(route(&p, "127.0.0.1", 5001, vec![]).await.is_err());
        assert!(route(&p, "docker.io", 443, vec![]).await.is_err());
    }
}
