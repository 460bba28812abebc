//! Binding a listener. The IPv6 wildcard (`--listen [::]:9443`, what
//! deploy/ uses) is bound dual-stack, IPv4 clients arriving as mapped
//! addresses, whatever the node's `net.ipv6.bindv6only`, so one address
//! serves both families on a dual-stack cluster. Where IPv6 is turned off
//! (a pod or node without it), the wildcard falls back to `0.0.0.0` on the
//! same port with a warning rather than failing to start.

use anyhow::{Context, Result};
use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use tokio::net::TcpListener;

/// The kernel's backlog for connections not yet accepted (connections
/// beyond `--max-connections` wait here).
const BACKLOG: i32 = 1024;
/// `EAFNOSUPPORT`: the kernel has no IPv6.
const NO_ADDRESS_FAMILY: i32 = 97;

/// Binds `addr`, dual-stack for the IPv6 wildcard (see the module comment).
pub(crate) fn bind(addr: SocketAddr) -> Result<TcpListener> {
    bind_with(addr, dual_stack)
}

/// [`bind`], with the dual-stack attempt given (a test stands in a kernel
/// without IPv6).
fn bind_with(
    addr: SocketAddr,
    dual_stack: impl FnOnce(SocketAddr) -> io::Result<std::net::TcpListener>,
) -> Result<TcpListener> {
    let std_listener = match addr.ip() == Ipv6Addr::UNSPECIFIED {
        false => std::net::TcpListener::bind(addr),
        true => match dual_stack(addr) {
            Err(e) if ipv6_unavailable(&e) => {
                let v4 = SocketAddr::from((Ipv4Addr::UNSPECIFIED, addr.port()));
                tracing::warn!("IPv6 is not available here ({e}): listening on {v4}, IPv4 only");
                std::net::TcpListener::bind(v4)
            }
            other => other,
        },
    }
    .with_context(|| format!("binding {addr}"))?;
    std_listener.set_nonblocking(true)?;
    TcpListener::from_std(std_listener).with_context(|| format!("listening on {addr}"))
}

/// An IPv6 socket that also accepts IPv4 (`IPV6_V6ONLY` off).
fn dual_stack(addr: SocketAddr) -> io::Result<std::net::TcpListener> {
    let socket = Socket::new(Domain::IPV6, Type::STREAM, Some(Protocol::TCP))?;
    socket.set_only_v6(false)?;
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    Ok(socket.into())
}

/// Whether binding failed because this host has no IPv6 at all (no
/// address family, or no IPv6 address to bind), not for a reason IPv4
/// would share (the port is taken, no permission).
fn ipv6_unavailable(e: &io::Error) -> bool {
    e.raw_os_error() == Some(NO_ADDRESS_FAMILY) || e.kind() == io::ErrorKind::AddrNotAvailable
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn connects(to: SocketAddr) -> bool {
        tokio::net::TcpStream::connect(to).await.is_ok()
    }

    /// `[::]` serves IPv4 and IPv6 clients on one port.
    #[tokio::test]
    async fn the_ipv6_wildcard_is_dual_stack() {
        let listener = bind("[::]:0".parse().expect("addr")).expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let accepting = tokio::spawn(async move {
            for _ in 0..2 {
                let _ = listener.accept().await;
            }
        });
        assert!(connects(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await);
        assert!(connects(SocketAddr::from((Ipv6Addr::LOCALHOST, port))).await);
        accepting.await.expect("accepted both");
    }

    /// Without IPv6 the wildcard falls back to IPv4 on the same port; any
    /// other failure is still an error.
    #[tokio::test]
    async fn without_ipv6_the_wildcard_falls_back_to_ipv4() {
        let no_ipv6 = |_| Err(io::Error::from_raw_os_error(NO_ADDRESS_FAMILY));
        let listener = bind_with("[::]:0".parse().expect("addr"), no_ipv6).expect("bind");
        let local = listener.local_addr().expect("addr");
        assert_eq!(local.ip(), Ipv4Addr::UNSPECIFIED);
        assert!(connects(SocketAddr::from((Ipv4Addr::LOCALHOST, local.port()))).await);
        let taken = |_| Err(io::Error::from(io::ErrorKind::AddrInUse));
        let e = bind_with("[::]:0".parse().expect("addr"), taken).expect_err("in use");
        assert!(format!("{e:#}").contains("binding [::]:0"), "{e:#}");
    }
}
