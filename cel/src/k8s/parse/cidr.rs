//! Kubernetes' CIDR library (`library/cidr.go`): `cidr(s)`, `isCIDR(s)`,
//! and on a CIDR `containsIP(ip|string)`, `containsCIDR(cidr|string)`,
//! `ip()`, `masked()`, `prefixLength()`.
//!
//! Prefixes are parsed as Go's `netip.ParsePrefix` parses them, without
//! IPv4-mapped addresses, and keep their address as written:
//! `cidr('10.0.0.1/8')` is not equal to its `masked()`.

use super::ip::{self, IpValue};
use super::{add, go_quote, Call};
use cel::objects::Opaque;
use cel::{Context, ExecutionError, Value};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

/// The CEL type name of a CIDR (Kubernetes' `net.CIDR`).
pub(crate) const CIDR_TYPE: &str = "net.CIDR";

/// A prefix: an address, not necessarily masked, and a length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CidrValue {
    addr: IpAddr,
    bits: u8,
}

impl Opaque for CidrValue {
    fn runtime_type_name(&self) -> &str {
        CIDR_TYPE
    }
}

impl fmt::Display for CidrValue {
    /// Go's `netip.Prefix.String()`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", ip::format_addr(self.addr), self.bits)
    }
}

impl CidrValue {
    /// The prefix with the bits after its length cleared.
    fn masked(self) -> CidrValue {
        CidrValue {
            addr: mask(self.addr, self.bits),
            bits: self.bits,
        }
    }

    /// Go's `netip.Prefix.Contains`.
    fn contains(self, other: IpAddr) -> bool {
        other.is_ipv4() == self.addr.is_ipv4()
            && mask(other, self.bits) == mask(self.addr, self.bits)
    }

    /// Kubernetes' `containsCIDR`, as written: the other prefix's address
    /// must equal this prefix's network address (it is not masked first),
    /// and its length must not be shorter.
    fn contains_cidr(self, other: CidrValue) -> bool {
        self.masked()
            == CidrValue {
                addr: other.addr,
                bits: self.bits,
            }
            && self.bits <= other.bits
    }
}

fn mask(addr: IpAddr, bits: u8) -> IpAddr {
    match addr {
        IpAddr::V4(v4) => {
            let m = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(v4) & m))
        }
        IpAddr::V6(v6) => {
            let m = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(v6) & m))
        }
    }
}

pub(super) fn register(ctx: &mut Context<'_, '_>) {
    add(ctx, "cidr", |call| {
        let c = parse_cidr_value(call.one_string()?).map_err(|e| call.error(e))?;
        Ok(Value::Opaque(Arc::new(c)))
    });
    add(ctx, "isCIDR", |call| {
        Ok(Value::Bool(parse_cidr(call.one_string()?).is_ok()))
    });
    add(ctx, "containsIP", |call| {
        let c = *call.receiver::<CidrValue>(1)?;
        let addr = match &call.args[0] {
            Value::Opaque(o) => o.downcast_ref::<IpValue>().map(|ip| ip.0),
            // Kubernetes hands the failed conversion on as the argument,
            // and then reports the call itself: an invalid address is
            // `no such overload`, not its parse error.
            Value::String(s) => ip::parse_ip(s).ok(),
            _ => None,
        };
        let addr = addr.ok_or_else(|| call.no_overload())?;
        Ok(Value::Bool(c.contains(addr)))
    });
    add(ctx, "containsCIDR", |call| {
        let c = *call.receiver::<CidrValue>(1)?;
        let other = match &call.args[0] {
            Value::Opaque(o) => *o
                .downcast_ref::<CidrValue>()
                .ok_or_else(|| call.no_overload())?,
            Value::String(s) => parse_cidr_value(s).map_err(|e| call.error(e))?,
            _ => return Err(call.no_overload()),
        };
        Ok(Value::Bool(c.contains_cidr(other)))
    });
    add(ctx, "prefixLength", |call| {
        Ok(Value::Int(i64::from(call.receiver::<CidrValue>(0)?.bits)))
    });
    add(ctx, "masked", |call| {
        let c = call.receiver::<CidrValue>(0)?.masked();
        Ok(Value::Opaque(Arc::new(c)))
    });
}

/// `<cidr>.ip()`: the prefix's address as written.
pub(super) fn ip_member(call: Call) -> Result<Value, ExecutionError> {
    let c = call.receiver::<CidrValue>(0)?;
    Ok(Value::Opaque(Arc::new(IpValue(c.addr))))
}

/// `cidr(s)`'s conversion, with the text Kubernetes gives (its prefix
/// twice, as Kubernetes words it).
fn parse_cidr_value(s: &str) -> Result<CidrValue, String> {
    parse_cidr(s)
        .map_err(|e| format!("network address parse error during conversion from string: {e}"))
}

/// Kubernetes' `parseCIDR`.
fn parse_cidr(raw: &str) -> Result<CidrValue, String> {
    let c = parse_prefix(raw)
        .map_err(|e| format!("network address parse error during conversion from string: {e}"))?;
    if ip::is_4in6(c.addr) {
        return Err(format!(
            "IPv4-mapped IPv6 address {} is not allowed",
            go_quote(raw.as_bytes())
        ));
    }
    Ok(c)
}

/// Go's `netip.ParsePrefix`, with its error texts.
fn parse_prefix(s: &str) -> Result<CidrValue, String> {
    let err = |msg: &str| format!("netip.ParsePrefix({}): {msg}", go_quote(s.as_bytes()));
    let Some(slash) = s.rfind('/') else {
        return Err(err("no '/'"));
    };
    let (addr, zone) = ip::parse_addr(&s[..slash]).map_err(|e| err(&e))?;
    if zone {
        return Err(err("IPv6 zones cannot be present in a prefix"));
    }
    let bits_str = &s[slash + 1..];
    let bad_bits = || {
        err(&format!(
            "bad bits after slash: {}",
            go_quote(bits_str.as_bytes())
        ))
    };
    let first_ok = bits_str.len() <= 1 || matches!(bits_str.as_bytes()[0], b'1'..=b'9');
    if !first_ok || bits_str.is_empty() || !bits_str.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad_bits());
    }
    let bits: u64 = bits_str.parse().map_err(|_| bad_bits())?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    if bits > max {
        return Err(err("prefix length out of range"));
    }
    Ok(CidrValue {
        addr,
        bits: u8::try_from(bits).unwrap_or(0),
    })
}

/// `parse_cidr`, for the no-panic test.
#[cfg(test)]
pub(super) fn parse_cidr_for_test(s: &str) -> Result<String, String> {
    parse_cidr(s).map(|c| format!("{c} {} {}", c.masked(), c.contains(c.addr)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_prefix_errors() {
        let e = |s: &str| parse_prefix(s).unwrap_err();
        assert_eq!(e("1.2.3.4"), r#"netip.ParsePrefix("1.2.3.4"): no '/'"#);
        assert_eq!(
            e("1.2.3.4/33"),
            r#"netip.ParsePrefix("1.2.3.4/33"): prefix length out of range"#
        );
        assert_eq!(
            e("1.2.3.4/08"),
            r#"netip.ParsePrefix("1.2.3.4/08"): bad bits after slash: "08""#
        );
        assert_eq!(
            e("1.2.3.4/+8"),
            r#"netip.ParsePrefix("1.2.3.4/+8"): bad bits after slash: "+8""#
        );
        assert_eq!(
            e("fe80::1%eth0/64"),
            r#"netip.ParsePrefix("fe80::1%eth0/64"): IPv6 zones cannot be present in a prefix"#
        );
        assert!(e("1.2.3/8").starts_with(r#"netip.ParsePrefix("1.2.3/8"): ParseAddr("1.2.3"): "#));
        assert!(parse_prefix("1.2.3.4/0").is_ok());
        assert!(parse_cidr("::ffff:1.2.3.4/96")
            .unwrap_err()
            .contains("IPv4-mapped"));
    }

    #[test]
    fn containment_is_kubernetes() {
        let c = |s: &str| parse_cidr(s).unwrap();
        assert!(c("10.0.0.0/8").contains("10.255.1.1".parse().unwrap()));
        assert!(!c("10.0.0.0/8").contains("::a00:1".parse().unwrap()));
        assert!(c("10.0.0.0/8").contains_cidr(c("10.0.0.0/16")));
        // Kubernetes compares the other prefix's unmasked address.
        assert!(!c("10.0.0.0/8").contains_cidr(c("10.1.0.0/16")));
        assert!(c("0.0.0.0/0").contains("1.2.3.4".parse().unwrap()));
        assert_eq!(c("10.1.2.3/8").masked().to_string(), "10.0.0.0/8");
        assert_eq!(c("2001:db8:1::/32").masked().to_string(), "2001:db8::/32");
    }
}
