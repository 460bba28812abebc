//! Which registries the component may reach, and over which scheme.
//!
//! - `--allow-registry HOST[:PORT]` (repeatable): only these hosts. Without
//!   any, every public host is allowed and loopback, private, link-local and
//!   other non-global addresses are refused (no SSRF into the cluster).
//! - `--insecure-registry HOST[:PORT]`: plain HTTP to that host, which is
//!   then allowed too. The component always asks for `https://`; the host
//!   downgrades for these registries, as Docker's `insecure-registries` does.
//!
//! The decision is split in two so that what is checked is what is
//! connected to: [`NetPolicy::route`] judges the name and port (and an IP
//! literal), and [`NetPolicy::check_resolved`] judges the addresses a name
//! resolved to, inside the connector, on the very lookup whose addresses
//! are then dialled (`resolve.rs`). A name that resolves to a public
//! address first and to a private one on the next lookup (DNS rebinding)
//! cannot get a private address past the check.
//!
//! "Public" is judged against the IANA special-purpose address registries
//! (see [`is_public`]); IPv6 forms that carry an IPv4 address (mapped,
//! compatible, NAT64, 6to4, Teredo) are judged by the IPv4 address inside.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

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

/// One `--resolve` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinnedAddress {
    pub host: String,
    pub port: u16,
    pub addrs: Vec<IpAddr>,
}

impl std::str::FromStr for PinnedAddress {
    type Err = String;

    /// `HOST:PORT:ADDR[,ADDR…]`; an IPv6 address in brackets
    /// (`reg.example:443:[::1]`).
    fn from_str(s: &str) -> Result<PinnedAddress, String> {
        let bad = || format!("{s:?} is not HOST:PORT:ADDR[,ADDR...]");
        let (host, rest) = s.split_once(':').ok_or_else(bad)?;
        let (port, addrs) = rest.split_once(':').ok_or_else(bad)?;
        let host = host.trim().to_ascii_lowercase();
        if host.is_empty() || host.contains(['/', '[', ']']) {
            return Err(bad());
        }
        let port = port
            .parse::<u16>()
            .map_err(|_| format!("{s:?}: bad port {port:?}"))?;
        let addrs = addrs
            .split(',')
            .map(|a| {
                a.trim()
                    .trim_matches(['[', ']'])
                    .parse::<IpAddr>()
                    .map_err(|_| format!("{s:?}: {a:?} is not an IP address"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(PinnedAddress { host, port, addrs })
    }
}

#[derive(Debug, Clone, Default)]
pub struct NetPolicy {
    pub allow: Vec<HostPort>,
    pub insecure: Vec<HostPort>,
    /// `--resolve`: names dialled at fixed addresses (`pinned.rs`).
    pub pins: Vec<PinnedAddress>,
    /// `--allow-revocation`: the OCSP and CRL endpoints certificates may
    /// send the component to ([`NetPolicy::revocation_route`]).
    pub revocation: Vec<HostPort>,
}

/// How a request may go out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    Https,
    Http,
}

impl NetPolicy {
    /// The route for `host:port`, or why it is refused, judged on the name
    /// and port alone. An IP literal is judged here; the addresses of a
    /// name are judged by [`NetPolicy::check_resolved`] when the connector
    /// resolves it.
    pub(crate) fn route(&self, host: &str, port: u16) -> Result<Route, String> {
        let host = host.trim_matches(['[', ']']).to_ascii_lowercase();
        if host.is_empty() {
            return Err("the request names no host".into());
        }
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
        if let Ok(ip) = host.parse::<IpAddr>() {
            if !is_public(&ip) {
                return Err(non_public(&host, &ip));
            }
        }
        Ok(Route::Https)
    }

    /// Whether a revocation fetch (an OCSP or CRL URL a certificate names)
    /// may go to `host:port`. The URL comes from a certificate, which
    /// whoever runs the signing CA wrote, so it gets its own list:
    /// `--allow-revocation` when given; else any public host, unless
    /// `--allow-registry` restricts the network. Names are judged again
    /// on their addresses by [`NetPolicy::check_resolved`].
    pub(crate) fn revocation_route(&self, host: &str, port: u16) -> Result<(), String> {
        let host = host.trim_matches(['[', ']']).to_ascii_lowercase();
        if host.is_empty() {
            return Err("the request names no host".into());
        }
        if !self.revocation.is_empty() || !self.allow.is_empty() {
            return match self.revocation.iter().any(|h| h.matches(&host, port)) {
                true => Ok(()),
                false => Err(format!("{host}:{port} is not in --allow-revocation")),
            };
        }
        match host.parse::<IpAddr>() {
            Ok(ip) if !is_public(&ip) => Err(non_public(&host, &ip)),
            _ => Ok(()),
        }
    }

    /// Whether the connector may dial `addrs`, which `name` just resolved
    /// to. A name the operator listed (`--allow-registry`,
    /// `--insecure-registry`, any port: the port was judged by
    /// [`NetPolicy::route`]) may resolve anywhere; any other name must
    /// resolve only to public addresses. One non-public address refuses
    /// the whole answer: a name that mixes them is not a registry to trust.
    #[cfg(test)]
    pub(crate) fn check_resolved(&self, name: &str, addrs: &[IpAddr]) -> Result<(), String> {
        self.check_resolved_by(name, addrs, &is_public)
    }

    /// [`NetPolicy::check_resolved`] with another judge of "public" (the
    /// test-only DNS script can declare loopback addresses public).
    pub(crate) fn check_resolved_by(
        &self,
        name: &str,
        addrs: &[IpAddr],
        is_public: &dyn Fn(&IpAddr) -> bool,
    ) -> Result<(), String> {
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        if addrs.is_empty() {
            return Err(format!("{name} resolves to no address"));
        }
        let listed = |list: &[HostPort]| list.iter().any(|h| h.host == name);
        if listed(&self.insecure) || listed(&self.allow) || listed(&self.revocation) {
            return Ok(());
        }
        match addrs.iter().find(|ip| !is_public(ip)) {
            Some(bad) => Err(non_public(&name, bad)),
            None => Ok(()),
        }
    }
}

fn non_public(host: &str, ip: &IpAddr) -> String {
    format!("{host} resolves to the non-public address {ip}; allow it with --allow-registry, --insecure-registry or --allow-revocation")
}

/// Globally reachable unicast, per the IANA IPv4 and IPv6 special-purpose
/// address registries; anything else (loopback, private, shared, link-local,
/// documentation, benchmarking, reserved, multicast, discard...) is not.
/// IPv6 addresses that carry an IPv4 address are judged by that address.
pub(crate) fn is_public(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(*v4),
        IpAddr::V6(v6) => is_public_v6(*v6),
    }
}

/// The non-global IPv4 ranges (address, prefix length).
const NON_PUBLIC_V4: &[([u8; 4], u8)] = &[
    ([0, 0, 0, 0], 8),       // "this network" (RFC 791)
    ([10, 0, 0, 0], 8),      // private (RFC 1918)
    ([100, 64, 0, 0], 10),   // shared address space, CGNAT (RFC 6598)
    ([127, 0, 0, 0], 8),     // loopback
    ([169, 254, 0, 0], 16),  // link-local, cloud metadata
    ([172, 16, 0, 0], 12),   // private
    ([192, 0, 0, 0], 24),    // IETF protocol assignments (RFC 6890)
    ([192, 0, 2, 0], 24),    // TEST-NET-1
    ([192, 88, 99, 0], 24),  // deprecated 6to4 relay anycast (RFC 7526)
    ([192, 168, 0, 0], 16),  // private
    ([198, 18, 0, 0], 15),   // benchmarking (RFC 2544)
    ([198, 51, 100, 0], 24), // TEST-NET-2
    ([203, 0, 113, 0], 24),  // TEST-NET-3
    ([224, 0, 0, 0], 4),     // multicast
    ([240, 0, 0, 0], 4),     // reserved, and 255.255.255.255 broadcast
];

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let bits = u32::from(ip);
    !NON_PUBLIC_V4
        .iter()
        .any(|(net, len)| in_prefix(bits.into(), u32::from_be_bytes(*net).into(), *len, 32))
}

/// Whether the top `len` bits of `addr` and `net` (both `width` bits wide) agree.
fn in_prefix(addr: u128, net: u128, len: u8, width: u8) -> bool {
    let shift = u32::from(width.saturating_sub(len));
    addr.checked_shr(shift).unwrap_or(0) == net.checked_shr(shift).unwrap_or(0)
}

/// The non-global IPv6 ranges outside the IPv4-carrying forms. Beyond
/// these, only 2000::/3 (global unicast) counts as public at all.
const NON_PUBLIC_V6: &[(u128, u8)] = &[
    (0x0100_0000_0000_0000 << 64, 64), // discard-only (RFC 6666)
    (0x2001_0000 << 96, 23),           // IETF protocol assignments (RFC 2928)
    (0x2001_0db8 << 96, 32),           // documentation (RFC 3849)
    (0x3fff << 112, 20),               // documentation (RFC 9637)
    (0x5f00 << 112, 16),               // SRv6 SIDs (RFC 9602)
    (0xfc00 << 112, 7),                // unique local
    (0xfe80 << 112, 10),               // link-local
    (0xfec0 << 112, 10),               // site-local, deprecated
    (0xff00 << 112, 8),                // multicast
];

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let bits = u128::from(ip);
    if bits == 0 || bits == 1 {
        return false; // unspecified ::, loopback ::1
    }
    if let Some(carried) = embedded_v4(ip) {
        return !carried.is_empty() && carried.into_iter().all(is_public_v4);
    }
    in_prefix(bits, 0x2000 << 112, 3, 128)
        && !NON_PUBLIC_V6
            .iter()
            .any(|(net, len)| in_prefix(bits, *net, *len, 128))
}

/// The IPv4 addresses an IPv6 address carries, if it is one of the forms
/// that reach an IPv4 host; every one of them must be public.
fn embedded_v4(ip: Ipv6Addr) -> Option<Vec<Ipv4Addr>> {
    let bits = u128::from(ip);
    let v4_at = |shift: u32| Ipv4Addr::from(((bits >> shift) & 0xffff_ffff) as u32);
    let last = v4_at(0);
    // IPv4-mapped ::ffff:0:0/96, IPv4-compatible ::/96 (deprecated),
    // IPv4-translated ::ffff:0:0:0/96 (SIIT), NAT64 64:ff9b::/96.
    for (net, len) in [
        (0xffffu128 << 32, 96),
        (0, 96),
        (0xffffu128 << 48, 96),
        (0x0064_ff9bu128 << 96, 96),
    ] {
        if in_prefix(bits, net, len, 128) {
            return Some(vec![last]);
        }
    }
    // Local-use NAT64 64:ff9b:1::/48 (RFC 8215): the operator picks the
    // RFC 6052 prefix length, so every layout possible inside a /48 is
    // read, and all must be public (fail closed).
    if in_prefix(bits, 0x0064_ff9b_0001u128 << 80, 48, 128) {
        return Some(rfc6052_candidates(bits));
    }
    // 6to4 2002::/16: the IPv4 address in bits 16..48.
    if in_prefix(bits, 0x2002u128 << 112, 16, 128) {
        return Some(vec![v4_at(80)]);
    }
    // Teredo 2001::/32: the server in bits 32..64, the client (the host
    // actually reached) in the last 32 bits, inverted.
    if in_prefix(bits, 0x2001_0000u128 << 96, 32, 128) {
        let client = Ipv4Addr::from(!u32::from(last));
        return Some(vec![v4_at(64), client]);
    }
    None
}

/// The IPv4 addresses a local-use NAT64 address may carry. RFC 6052 puts
/// the IPv4 address at a place that depends on the prefix length the
/// operator chose (/48, /56, /64 or /96 inside 64:ff9b:1::/48), with the
/// "u" octet (bits 64..72) and the suffix zero. Every layout the address
/// fits is read and all must be public, so no layout can smuggle a
/// private address; the /96 reading of an all-zero tail (0.0.0.0) is
/// dropped when a shorter layout fits.
fn rfc6052_candidates(bits: u128) -> Vec<Ipv4Addr> {
    let octet = |i: usize| ((bits >> (120 - 8 * i)) & 0xff) as u8;
    let zero = |from: usize| (from..16).all(|i| octet(i) == 0);
    // (octets holding the IPv4 address, first octet of the zero suffix)
    let layouts: [([usize; 4], usize); 3] = [
        ([6, 7, 9, 10], 11),   // /48
        ([7, 9, 10, 11], 12),  // /56
        ([9, 10, 11, 12], 13), // /64
    ];
    let mut out: Vec<Ipv4Addr> = layouts
        .iter()
        .filter(|(_, suffix)| octet(8) == 0 && zero(*suffix))
        .map(|(o, _)| Ipv4Addr::new(octet(o[0]), octet(o[1]), octet(o[2]), octet(o[3])))
        .collect();
    let last = Ipv4Addr::from((bits & 0xffff_ffff) as u32);
    if out.is_empty() || !last.is_unspecified() {
        out.push(last); // /96
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hp(s: &str) -> HostPort {
        s.parse().expect("valid")
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap_or_else(|_| panic!("{s} is an IP address"))
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
        let refused = |s: &str| s.parse::<HostPort>().expect_err(s);
        assert_eq!(refused("a/b"), "\"a/b\" is not HOST[:PORT]");
        assert_eq!(refused("a:x"), "\"a:x\": bad port \"x\"");
        assert_eq!(refused(""), "\"\" is not HOST[:PORT]");
    }

    #[test]
    fn default_policy_refuses_non_public_addresses() {
        let p = NetPolicy::default();
        assert_eq!(p.route("ghcr.io", 443), Ok(Route::Https));
        assert_eq!(p.check_resolved("ghcr.io", &[ip("140.82.112.34")]), Ok(()));
        assert_eq!(p.route("", 443), Err("the request names no host".into()));
        for bad in [
            "127.0.0.1",
            "10.0.0.1",
            "169.254.169.254",
            "192.168.1.1",
            "100.64.0.1",
            "::1",
            "fd00::1",
            "::ffff:10.0.0.1",
            "64:ff9b::a9fe:a9fe",
        ] {
            let addr = ip(bad);
            let err = p.check_resolved("evil.example", &[addr]).expect_err(bad);
            assert!(err.contains("non-public address"), "{err}");
            // One bad address among good ones refuses the whole answer.
            assert_eq!(
                p.check_resolved("evil.example", &[ip("140.82.112.34"), addr]),
                Err(err.clone())
            );
            let literal = Err(non_public(&bad.to_ascii_lowercase(), &addr));
            assert_eq!(p.route(bad, 443), literal, "{bad} literal");
            assert_eq!(p.route(&format!("[{bad}]"), 443), literal, "[{bad}]");
        }
        assert_eq!(
            p.check_resolved("empty.example", &[]),
            Err("empty.example resolves to no address".into())
        );
    }

    #[test]
    fn allow_list_and_insecure() {
        let p = NetPolicy {
            allow: vec![hp("ghcr.io"), hp("registry.internal")],
            insecure: vec![hp("127.0.0.1:5000"), hp("localhost:5000")],
            pins: vec![],
            revocation: vec![],
        };
        assert_eq!(p.route("ghcr.io", 443), Ok(Route::Https));
        assert_eq!(p.route("127.0.0.1", 5000), Ok(Route::Http));
        let unlisted =
            |host: &str, port: u16| Err(format!("{host}:{port} is not in --allow-registry"));
        assert_eq!(p.route("127.0.0.1", 5001), unlisted("127.0.0.1", 5001));
        assert_eq!(p.route("docker.io", 443), unlisted("docker.io", 443));
        // Names the operator listed may resolve to private addresses...
        assert_eq!(
            p.check_resolved("registry.internal", &[ip("10.1.2.3")]),
            Ok(())
        );
        assert_eq!(p.check_resolved("localhost.", &[ip("127.0.0.1")]), Ok(()));
        // ...others may not, whatever the allow-list.
        assert_eq!(
            p.check_resolved("other.example", &[ip("10.1.2.3")]),
            Err(non_public("other.example", &ip("10.1.2.3")))
        );
    }

    #[test]
    fn revocation_endpoints_have_their_own_list() {
        let open = NetPolicy::default();
        assert_eq!(open.revocation_route("crl.example", 80), Ok(()));
        assert_eq!(
            open.revocation_route("127.0.0.1", 80),
            Err(non_public("127.0.0.1", &ip("127.0.0.1")))
        );
        assert_eq!(
            open.revocation_route("[::1]", 80),
            Err(non_public("::1", &ip("::1")))
        );
        let registries_only = NetPolicy {
            allow: vec![hp("ghcr.io")],
            ..NetPolicy::default()
        };
        assert_eq!(
            registries_only.revocation_route("crl.example", 80),
            Err("crl.example:80 is not in --allow-revocation".into())
        );
        assert_eq!(
            registries_only.revocation_route("ghcr.io", 443),
            Err("ghcr.io:443 is not in --allow-revocation".into())
        );
        let listed = NetPolicy {
            allow: vec![hp("ghcr.io")],
            revocation: vec![hp("127.0.0.1:8888"), hp("ocsp.internal")],
            ..NetPolicy::default()
        };
        assert_eq!(listed.revocation_route("127.0.0.1", 8888), Ok(()));
        let unlisted =
            |host: &str, port: u16| Err(format!("{host}:{port} is not in --allow-revocation"));
        assert_eq!(
            listed.revocation_route("127.0.0.1", 8889),
            unlisted("127.0.0.1", 8889)
        );
        assert_eq!(
            listed.revocation_route("crl.example", 80),
            unlisted("crl.example", 80)
        );
        // A listed name may resolve to a private address, as listed registries may.
        assert_eq!(
            listed.check_resolved("ocsp.internal", &[ip("10.1.2.3")]),
            Ok(())
        );
        // Listing a revocation endpoint does not make it a registry.
        assert_eq!(
            listed.route("ocsp.internal", 443),
            Err("ocsp.internal:443 is not in --allow-registry".into())
        );
    }

    /// Every special-purpose range: one address inside is refused, and one
    /// just outside (where the neighbour is ordinary unicast) is allowed.
    #[test]
    fn special_purpose_ranges_are_not_public() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            // (range, first address inside, last inside / neighbour outside)
            ("0.0.0.0/8", "0.255.255.255", Some("1.0.0.0")),
            ("10.0.0.0/8", "10.255.255.255", Some("11.0.0.0")),
            ("100.64.0.0/10", "100.127.255.255", Some("100.128.0.0")),
            ("100.64.0.0/10 low", "100.64.0.0", Some("100.63.255.255")),
            ("127.0.0.0/8", "127.0.0.1", Some("128.0.0.1")),
            ("169.254.0.0/16", "169.254.169.254", Some("169.255.0.0")),
            ("172.16.0.0/12", "172.31.255.255", Some("172.32.0.0")),
            ("172.16.0.0/12 low", "172.16.0.0", Some("172.15.255.255")),
            ("192.0.0.0/24", "192.0.0.170", Some("192.0.1.0")),
            ("192.0.2.0/24", "192.0.2.1", Some("192.0.3.0")),
            ("192.88.99.0/24", "192.88.99.1", Some("192.88.100.0")),
            ("192.168.0.0/16", "192.168.255.255", Some("192.169.0.0")),
            ("198.18.0.0/15", "198.19.255.255", Some("198.20.0.0")),
            ("198.18.0.0/15 low", "198.18.0.0", Some("198.17.255.255")),
            ("198.51.100.0/24", "198.51.100.7", Some("198.51.101.0")),
            ("203.0.113.0/24", "203.0.113.7", Some("203.0.114.0")),
            ("224.0.0.0/4", "239.255.255.255", Some("223.255.255.255")),
            ("240.0.0.0/4", "240.0.0.1", None),
            ("255.255.255.255", "255.255.255.255", None),
            ("::/128", "::", None),
            ("::1/128", "::1", None),
            ("100::/64", "100::1", None),
            ("2001::/23", "2001:2::1", Some("2001:200::1")),
            ("2001:2::/48", "2001:2:0:ffff::1", Some("2001:200::1")),
            ("2001:db8::/32", "2001:db8::1", Some("2001:db9::1")),
            ("3fff::/20", "3fff:fff::1", Some("3fff:1000::1")),
            ("5f00::/16", "5f00::1", None),
            ("fc00::/7", "fdff::1", Some("fe00::1")),
            ("fe80::/10", "fe80::1", None),
            ("fec0::/10", "fec0::1", None),
            ("fec0::/10 high", "feff::1", None),
            ("ff00::/8", "ff02::1", None),
            ("outside 2000::/3", "4000::1", Some("2a00:1450::1")),
        ];
        for (range, inside, outside) in cases {
            assert!(!is_public(&ip(inside)), "{inside} is in {range}");
            if let Some(out) = outside {
                let o = ip(out);
                // Some neighbours are themselves special (fe00::1): only
                // check those that are ordinary global unicast.
                if !out.starts_with("fe") {
                    assert!(is_public(&o), "{out} is outside {range}");
                }
            }
        }
        for public in [
            "8.8.8.8",
            "140.82.112.34",
            "2a00:1450:4001::1",
            "2606:4700::1111",
        ] {
            assert!(is_public(&ip(public)), "{public}");
        }
    }

    /// IPv6 forms that reach an IPv4 host are judged by that host: public
    /// inside is allowed (DNS64/NAT64 clusters keep working), private is not.
    #[test]
    fn ipv6_forms_carrying_ipv4_are_judged_by_it() {
        let cases = [
            ("::ffff:8.8.8.8", "::ffff:10.0.0.1"),            // mapped
            ("::8.8.8.8", "::127.0.0.1"),                     // compatible
            ("::ffff:0:8.8.8.8", "::ffff:0:192.168.0.1"),     // SIIT translated
            ("64:ff9b::8.8.8.8", "64:ff9b::169.254.169.254"), // NAT64 well-known
            ("64:ff9b:1::8.8.8.8", "64:ff9b:1::10.0.0.1"),    // local NAT64, /96
            ("2002:0808:0808::1", "2002:0a00:0001::1"),       // 6to4
            ("2002:0808:0808::1", "2002:7f00:0001::1"),       // 6to4 loopback
            // Teredo: server 8.8.8.8; client 8.8.4.4 / 10.0.0.1, inverted.
            ("2001:0:808:808::f7f7:fbfb", "2001:0:808:808::f5ff:fffe"),
        ];
        for (good, bad) in cases {
            assert!(is_public(&ip(good)), "{good} carries a public IPv4");
            assert!(!is_public(&ip(bad)), "{bad} carries a non-public IPv4");
        }
        // A Teredo address with a private server is refused too.
        assert!(!is_public(&ip("2001:0:a00:1::f7f7:fbfb")));
        // Local-use NAT64 with a /48 layout: 10.0.0.1 split around the u octet...
        assert!(!is_public(&ip("64:ff9b:1:a00:0:100::")));
        // ...and 8.8.8.8 in that layout is allowed.
        assert!(is_public(&ip("64:ff9b:1:808:8:800::")));
        // The well-known NAT64 prefix's neighbours are not carriers.
        assert!(!is_public(&ip("64:ff9a::8.8.8.8")));
    }
}
