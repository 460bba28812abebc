//! Kubernetes' IP library (`library/ip.go`): `ip(s)`, `isIP(s)`,
//! `ip.isCanonical(s)`, and on an IP `family()`, `isUnspecified()`,
//! `isLoopback()`, `isLinkLocalMulticast()`, `isLinkLocalUnicast()`,
//! `isGlobalUnicast()`.
//!
//! Addresses are parsed as Go's `netip.ParseAddr` parses them (so no
//! leading zeros in IPv4 octets, at most one `::`, an embedded IPv4 only in
//! the last 32 bits), with its error texts; as Kubernetes does, an address
//! with a zone (`fe80::1%eth0`) and an IPv4-mapped IPv6 address
//! (`::ffff:1.2.3.4`) are rejected.

use super::{add, go_quote, Call};
use cel::objects::Opaque;
use cel::{Context, ExecutionError, Value};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

/// The CEL type name of an IP address (Kubernetes' `net.IP`).
pub(crate) const IP_TYPE: &str = "net.IP";

/// An IP address value: never zoned, never IPv4-mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IpValue(pub(crate) IpAddr);

impl Opaque for IpValue {
    fn runtime_type_name(&self) -> &str {
        IP_TYPE
    }
}

/// Registers the IP functions (`ip` itself is shared with the CIDR
/// library: `super::register`).
pub(super) fn register(ctx: &mut Context<'_, '_>) {
    add(ctx, "isIP", |call| {
        Ok(Value::Bool(parse_ip(call.one_string()?).is_ok()))
    });
    add(ctx, "ip.isCanonical", |call| {
        let s = call.one_string()?;
        let addr = parse_ip(s).map_err(|e| call.error(e))?;
        Ok(Value::Bool(format_addr(addr) == s))
    });
    add(ctx, "family", |call| {
        let ip = call.receiver::<IpValue>(0)?;
        Ok(Value::Int(if ip.0.is_ipv4() { 4 } else { 6 }))
    });
    predicate(ctx, "isUnspecified", is_unspecified);
    predicate(ctx, "isLoopback", is_loopback);
    predicate(ctx, "isLinkLocalMulticast", is_link_local_multicast);
    predicate(ctx, "isLinkLocalUnicast", is_link_local_unicast);
    predicate(ctx, "isGlobalUnicast", is_global_unicast);
}

fn predicate(ctx: &mut Context<'_, '_>, name: &'static str, f: fn(IpAddr) -> bool) {
    add(ctx, name, move |call| {
        Ok(Value::Bool(f(call.receiver::<IpValue>(0)?.0)))
    });
}

/// `ip(s)`.
pub(super) fn parse_function(call: Call) -> Result<Value, ExecutionError> {
    let addr = parse_ip(call.one_string()?).map_err(|e| call.error(e))?;
    Ok(Value::Opaque(Arc::new(IpValue(addr))))
}

/// Kubernetes' `parseIPAddr`: Go's `netip.ParseAddr`, without zones or
/// IPv4-mapped IPv6 addresses. The error is Kubernetes' text.
pub(super) fn parse_ip(raw: &str) -> Result<IpAddr, String> {
    let quoted = || go_quote(raw.as_bytes());
    let (addr, zone) = parse_addr(raw).map_err(|e| {
        format!(
            "IP Address {} parse error during conversion from string: {e}",
            quoted()
        )
    })?;
    if zone {
        return Err(format!(
            "IP address {} with zone value is not allowed",
            quoted()
        ));
    }
    if is_4in6(addr) {
        return Err(format!(
            "IPv4-mapped IPv6 address {} is not allowed",
            quoted()
        ));
    }
    Ok(addr)
}

/// Whether `addr` is an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`).
pub(super) fn is_4in6(addr: IpAddr) -> bool {
    matches!(addr, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some())
}

/// Go's `netip.ParseAddr`: the address and whether it had a zone, or Go's
/// error text (`ParseAddr("..."): ...`).
pub(super) fn parse_addr(input: &str) -> Result<(IpAddr, bool), String> {
    for &c in input.as_bytes() {
        match c {
            b'.' => return parse_v4(input).map(|a| (IpAddr::V4(a), false)),
            b':' => return parse_v6(input),
            b'%' => return Err(addr_error(input, "missing IPv6 address", b"")),
            _ => {}
        }
    }
    Err(addr_error(input, "unable to parse IP", b""))
}

fn addr_error(input: &str, msg: &str, at: &[u8]) -> String {
    let q = go_quote(input.as_bytes());
    if at.is_empty() {
        format!("ParseAddr({q}): {msg}")
    } else {
        format!("ParseAddr({q}): {msg} (at {})", go_quote(at))
    }
}

fn parse_v4(input: &str) -> Result<Ipv4Addr, String> {
    v4_fields(input, input.as_bytes()).map(Ipv4Addr::from)
}

/// The four octets of `s`, part of `input` (for errors).
fn v4_fields(input: &str, s: &[u8]) -> Result<[u8; 4], String> {
    let mut fields = [0u8; 4];
    let (mut val, mut pos, mut digits) = (0u16, 0usize, 0usize);
    for (i, &c) in s.iter().enumerate() {
        if c.is_ascii_digit() {
            if digits == 1 && val == 0 {
                return Err(addr_error(
                    input,
                    "IPv4 field has octet with leading zero",
                    b"",
                ));
            }
            val = val * 10 + u16::from(c - b'0');
            digits += 1;
            if val > 255 {
                return Err(addr_error(input, "IPv4 field has value >255", b""));
            }
        } else if c == b'.' {
            if i == 0 || i == s.len() - 1 || s[i - 1] == b'.' {
                return Err(addr_error(
                    input,
                    "IPv4 field must have at least one digit",
                    &s[i..],
                ));
            }
            if pos == 3 {
                return Err(addr_error(input, "IPv4 address too long", b""));
            }
            fields[pos] = u8::try_from(val).unwrap_or(u8::MAX);
            pos += 1;
            val = 0;
            digits = 0;
        } else {
            return Err(addr_error(input, "unexpected character", &s[i..]));
        }
    }
    if pos < 3 {
        return Err(addr_error(input, "IPv4 address too short", b""));
    }
    fields[3] = u8::try_from(val).unwrap_or(u8::MAX);
    Ok(fields)
}

fn parse_v6(input: &str) -> Result<(IpAddr, bool), String> {
    let all = input.as_bytes();
    let (mut s, zone) = match all.iter().position(|&b| b == b'%') {
        Some(i) => {
            if i + 1 == all.len() {
                return Err(addr_error(input, "zone must be a non-empty string", b""));
            }
            (&all[..i], true)
        }
        None => (all, false),
    };
    let end = s.len();
    let mut ip = [0u8; 16];
    let mut ellipsis: Option<usize> = None;
    if s.len() >= 2 && s[0] == b':' && s[1] == b':' {
        ellipsis = Some(0);
        s = &s[2..];
        if s.is_empty() {
            return Ok((IpAddr::V6(Ipv6Addr::UNSPECIFIED), zone));
        }
    }
    let mut i = 0usize;
    while i < 16 {
        let mut off = 0usize;
        let mut acc = 0u32;
        while off < s.len() {
            let c = s[off];
            let digit = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => break,
            };
            acc = (acc << 4) + u32::from(digit);
            if off > 3 {
                return Err(addr_error(
                    input,
                    "each group must have 4 or less digits",
                    s,
                ));
            }
            if acc > 0xffff {
                return Err(addr_error(input, "IPv6 field has value >=2^16", s));
            }
            off += 1;
        }
        if off == 0 {
            return Err(addr_error(
                input,
                "each colon-separated field must have at least one digit",
                s,
            ));
        }
        if off < s.len() && s[off] == b'.' {
            if ellipsis.is_none() && i != 12 {
                return Err(addr_error(
                    input,
                    "embedded IPv4 address must replace the final 2 fields of the address",
                    s,
                ));
            }
            if i + 4 > 16 {
                return Err(addr_error(
                    input,
                    "too many hex fields to fit an embedded IPv4 at the end of the address",
                    s,
                ));
            }
            let v4 = v4_fields(input, &all[end - s.len()..end])?;
            ip[i..i + 4].copy_from_slice(&v4);
            s = b"";
            i += 4;
            break;
        }
        ip[i] = u8::try_from(acc >> 8).unwrap_or(0);
        ip[i + 1] = u8::try_from(acc & 0xff).unwrap_or(0);
        i += 2;
        s = &s[off..];
        if s.is_empty() {
            break;
        }
        if s[0] != b':' {
            return Err(addr_error(input, "unexpected character, want colon", s));
        } else if s.len() == 1 {
            return Err(addr_error(
                input,
                "colon must be followed by more characters",
                s,
            ));
        }
        s = &s[1..];
        if s[0] == b':' {
            if ellipsis.is_some() {
                return Err(addr_error(input, "multiple :: in address", s));
            }
            ellipsis = Some(i);
            s = &s[1..];
            if s.is_empty() {
                break;
            }
        }
    }
    if !s.is_empty() {
        return Err(addr_error(input, "trailing garbage after address", s));
    }
    if i < 16 {
        let Some(e) = ellipsis else {
            return Err(addr_error(input, "address string too short", b""));
        };
        let n = 16 - i;
        for j in (e..i).rev() {
            ip[j + n] = ip[j];
        }
        ip[e..e + n].fill(0);
    } else if ellipsis.is_some() {
        return Err(addr_error(
            input,
            "the :: must expand to at least one field of zeros",
            s,
        ));
    }
    Ok((IpAddr::V6(Ipv6Addr::from(ip)), zone))
}

/// Go's `netip.Addr.String()`: dotted IPv4; IPv6 in lower case with the
/// longest run of two or more zero groups (the first of equals) as `::`.
pub(crate) fn format_addr(addr: IpAddr) -> String {
    let v6 = match addr {
        IpAddr::V4(v4) => return v4.to_string(),
        IpAddr::V6(v6) => v6,
    };
    if let Some(v4) = v6.to_ipv4_mapped() {
        return format!("::ffff:{v4}");
    }
    let groups = v6.segments();
    let (mut zero_start, mut zero_end) = (8usize, 8usize);
    let mut i = 0;
    while i < 8 {
        let mut j = i;
        while j < 8 && groups[j] == 0 {
            j += 1;
        }
        if j - i >= 2 && j - i > zero_end - zero_start {
            zero_start = i;
            zero_end = j;
        }
        i = j.max(i + 1);
    }
    let mut out = String::new();
    let mut i = 0;
    while i < 8 {
        if i == zero_start {
            out.push_str("::");
            i = zero_end;
            if i >= 8 {
                break;
            }
        } else if i > 0 {
            out.push(':');
        }
        out.push_str(&format!("{:x}", groups[i]));
        i += 1;
    }
    out
}

fn is_unspecified(a: IpAddr) -> bool {
    a.is_unspecified()
}

fn is_loopback(a: IpAddr) -> bool {
    match a {
        IpAddr::V4(v4) => v4.octets()[0] == 127,
        IpAddr::V6(v6) => v6 == Ipv6Addr::LOCALHOST,
    }
}

fn is_multicast(a: IpAddr) -> bool {
    match a {
        IpAddr::V4(v4) => v4.octets()[0] & 0xf0 == 0xe0,
        IpAddr::V6(v6) => v6.octets()[0] == 0xff,
    }
}

fn is_link_local_multicast(a: IpAddr) -> bool {
    match a {
        IpAddr::V4(v4) => matches!(v4.octets(), [224, 0, 0, _]),
        IpAddr::V6(v6) => v6.segments()[0] & 0xff0f == 0xff02,
    }
}

fn is_link_local_unicast(a: IpAddr) -> bool {
    match a {
        IpAddr::V4(v4) => matches!(v4.octets(), [169, 254, _, _]),
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    }
}

/// Go's `IsGlobalUnicast`: private IPv4 and ULA IPv6 addresses count.
fn is_global_unicast(a: IpAddr) -> bool {
    if let IpAddr::V4(v4) = a {
        if v4.is_unspecified() || v4.is_broadcast() {
            return false;
        }
    }
    a != IpAddr::V6(Ipv6Addr::UNSPECIFIED)
        && !is_loopback(a)
        && !is_multicast(a)
        && !is_link_local_unicast(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(s: &str) -> String {
        format_addr(parse_addr(s).expect(s).0)
    }

    #[test]
    fn formats_as_go() {
        assert_eq!(canon("2001:DB8::68"), "2001:db8::68");
        assert_eq!(canon("2001:db8:0:0:1:0:0:1"), "2001:db8::1:0:0:1");
        assert_eq!(canon("2001:db8:0:1:1:1:1:1"), "2001:db8:0:1:1:1:1:1");
        assert_eq!(canon("::"), "::");
        assert_eq!(canon("::1.2.3.4"), "::102:304");
        assert_eq!(canon("1::"), "1::");
    }

    #[test]
    fn go_errors() {
        let e = |s: &str| parse_addr(s).unwrap_err();
        assert_eq!(e(""), r#"ParseAddr(""): unable to parse IP"#);
        assert_eq!(
            e("1.2.3.04"),
            r#"ParseAddr("1.2.3.04"): IPv4 field has octet with leading zero"#
        );
        assert_eq!(
            e("1.2.3."),
            r#"ParseAddr("1.2.3."): IPv4 field must have at least one digit (at ".")"#
        );
        assert_eq!(e("1.2.3"), r#"ParseAddr("1.2.3"): IPv4 address too short"#);
        assert_eq!(
            e("1:2:3:4:5:6:7:8:9"),
            r#"ParseAddr("1:2:3:4:5:6:7:8:9"): trailing garbage after address (at "9")"#
        );
        assert_eq!(
            e("1::2::3"),
            r#"ParseAddr("1::2::3"): multiple :: in address (at ":3")"#
        );
        assert_eq!(
            e("1:2:3:4:5:6:7:8:"),
            r#"ParseAddr("1:2:3:4:5:6:7:8:"): colon must be followed by more characters (at ":")"#
        );
        assert_eq!(
            e("0x7f.0.0.1"),
            r#"ParseAddr("0x7f.0.0.1"): unexpected character (at "x7f.0.0.1")"#
        );
        assert_eq!(e("%eth0"), r#"ParseAddr("%eth0"): missing IPv6 address"#);
        assert_eq!(e("999"), r#"ParseAddr("999"): unable to parse IP"#);
        assert_eq!(
            e("1:2:3:4:5:6:7"),
            r#"ParseAddr("1:2:3:4:5:6:7"): address string too short"#
        );
        assert_eq!(
            e("1:2:3:4::5:6:7:8"),
            r#"ParseAddr("1:2:3:4::5:6:7:8"): the :: must expand to at least one field of zeros"#
        );
        assert_eq!(
            e("12345::"),
            r#"ParseAddr("12345::"): each group must have 4 or less digits (at "12345::")"#
        );
        assert_eq!(
            e("::1.2.3.4.5"),
            r#"ParseAddr("::1.2.3.4.5"): IPv4 address too long"#
        );
        assert_eq!(
            e("fe80::1%"),
            r#"ParseAddr("fe80::1%"): zone must be a non-empty string"#
        );
        assert!(parse_addr("fe80::1%eth0").unwrap().1);
        assert_eq!(
            parse_ip("::ffff:1.2.3.4").unwrap_err(),
            r#"IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed"#
        );
        assert_eq!(
            parse_ip("fe80::1%eth0").unwrap_err(),
            r#"IP address "fe80::1%eth0" with zone value is not allowed"#
        );
        // Non-ASCII input is handled byte-wise, without panicking.
        assert_eq!(
            e("1.2.3.é"),
            r#"ParseAddr("1.2.3.é"): unexpected character (at "é")"#
        );
        assert_eq!(
            e("fe80::é"),
            r#"ParseAddr("fe80::é"): each colon-separated field must have at least one digit (at "é")"#
        );
    }

    #[test]
    fn predicates_follow_go() {
        let ip = |s: &str| parse_ip(s).unwrap();
        assert!(is_link_local_multicast(ip("ff12::1")), "flags are ignored");
        assert!(is_global_unicast(ip("10.0.0.1")));
        assert!(is_global_unicast(ip("fd00::1")));
        assert!(!is_global_unicast(ip("::")));
        assert!(!is_global_unicast(ip("fe80::1")));
        assert!(is_loopback(ip("127.1.2.3")));
    }
}
