//! The cold path (`serve --no-cache`) against what it must wait for: the
//! longest chain of registry round trips a key-based validate depends on.
//!
//! A cold validate asks for everything discovery reads at once (the
//! referrers, the tag-schema index, the `.sig` manifest), then for the
//! signature layer the manifest names: two dependent round trips, whatever
//! the number of requests. Each link is measured as the cold path sends
//! it, on the paths it asks for: discovery's three together, each on a
//! connection of its own, and the layer alone. The loopback registry
//! shares the two cores and spends a millisecond of CPU on most of these
//! requests, so three at once take it longer than the slowest alone; that
//! figure is reported too.
//!
//! [`Delayed`] puts the registry a fixed delay away, as a registry across a
//! network is: there the chain is mostly the delay, and the cold path's
//! concurrency shows (sent one after another, discovery's three requests
//! would wait three delays).

use crate::load;
use crate::report::median;
use anyhow::Result;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The registry requests of a cold validate, by their link in its chain.
pub struct Paths {
    /// Discovery, sent together: referrers, tag-schema index, `.sig` manifest.
    pub discovery: Vec<String>,
    /// The signature layer, asked for once the `.sig` manifest names it.
    pub layer: String,
}

/// The chain's links: each a p50 round trip, in ms.
#[derive(Default, Clone, Copy)]
pub struct Chain {
    /// Discovery's requests sent together, to the last answer.
    pub discovery_ms: f64,
    /// The slowest of discovery's requests sent alone; not in the chain.
    pub discovery_alone_ms: f64,
    pub layer_ms: f64,
}

impl Chain {
    /// Measures the links of `paths` at `addr`, each for `each`.
    pub async fn measure(addr: &str, paths: &Paths, each: Duration) -> Result<Chain> {
        let discovery_ms = load::round_trip_together(addr, &paths.discovery, each)
            .await?
            .quantile_ms(0.5);
        let mut discovery_alone_ms = 0f64;
        for path in &paths.discovery {
            let run = load::round_trip(addr, path, each).await?;
            discovery_alone_ms = discovery_alone_ms.max(run.quantile_ms(0.5));
        }
        let layer_ms = load::round_trip(addr, &paths.layer, each)
            .await?
            .quantile_ms(0.5);
        Ok(Chain {
            discovery_ms,
            discovery_alone_ms,
            layer_ms,
        })
    }

    pub fn ms(&self) -> f64 {
        self.discovery_ms + self.layer_ms
    }
}

/// One cold measurement at one connection, with the chain it waits for.
#[derive(Default)]
pub struct Cold {
    /// The median of the rounds' p50s.
    pub p50_ms: f64,
    pub calls_per_request: f64,
    /// Each link's median over the rounds.
    pub chain: Chain,
    /// The median of the rounds' p50 above their chain.
    above_ms: f64,
    /// The delay [`Delayed`] added to each request; zero for the registry
    /// itself.
    pub delay_ms: f64,
}

impl Cold {
    /// From rounds of (p50, the chain measured right after it).
    pub fn of_rounds(rounds: &[(f64, Chain)], calls_per_request: f64, delay_ms: f64) -> Cold {
        let of = |f: &dyn Fn(&(f64, Chain)) -> f64| median(rounds.iter().map(f).collect());
        Cold {
            p50_ms: of(&|r| r.0),
            calls_per_request,
            chain: Chain {
                discovery_ms: of(&|r| r.1.discovery_ms),
                discovery_alone_ms: of(&|r| r.1.discovery_alone_ms),
                layer_ms: of(&|r| r.1.layer_ms),
            },
            above_ms: of(&|r| r.0 - r.1.ms()),
            delay_ms,
        }
    }

    /// How far the p50 is above the chain of round trips: the median of
    /// the rounds' differences.
    pub fn above_chain_ms(&self) -> f64 {
        self.above_ms
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "p50_ms": self.p50_ms,
            "calls_per_request": self.calls_per_request,
            "chain_ms": self.chain.ms(),
            "chain_discovery_ms": self.chain.discovery_ms,
            "discovery_alone_ms": self.chain.discovery_alone_ms,
            "chain_layer_ms": self.chain.layer_ms,
            "above_chain_ms": self.above_chain_ms(),
            "registry_delay_ms": self.delay_ms,
        })
    }

    pub fn render(&self) -> String {
        let registry = if self.delay_ms > 0.0 {
            format!("the registry {:.0} ms away", self.delay_ms)
        } else {
            "the loopback registry".to_string()
        };
        format!(
            "cold validate, {registry}, 1 connection: p50 {:.2} ms, {:.1} registry calls a request; its chain of round trips {:.2} ms (discovery {:.2}, its slowest request alone {:.2}; then the signature layer {:.2}); p50 above the chain, the median of {} rounds: {:.2} ms",
            self.p50_ms,
            self.calls_per_request,
            self.chain.ms(),
            self.chain.discovery_ms,
            self.chain.discovery_alone_ms,
            self.chain.layer_ms,
            crate::COLD_ROUNDS,
            self.above_chain_ms()
        )
    }
}

/// A registry `delay` away: a TCP proxy on 127.0.0.1 in front of it that
/// holds each chunk a client sends for `delay` before passing it on, and
/// passes answers straight back. Connections are kept as the client keeps
/// them, so a round trip through it is the registry's plus the delay.
/// Blocking threads, two a connection, so that the delay is the OS's
/// sleep and not rounded up to an async runtime's millisecond ticks.
pub struct Delayed {
    pub addr: String,
    stop: Arc<AtomicBool>,
}

impl Delayed {
    pub fn start(upstream: &str, delay: Duration) -> Result<Delayed> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?.to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let (upstream, stopped) = (upstream.to_string(), stop.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if stopped.load(Ordering::Relaxed) {
                    return;
                }
                let (Ok(client), upstream) = (client, upstream.clone()) else {
                    continue;
                };
                // A connection that fails ends; the client sees it.
                std::thread::spawn(move || relay(client, &upstream, delay));
            }
        });
        Ok(Delayed { addr, stop })
    }
}

impl Drop for Delayed {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accept loop to see it.
        let _ = TcpStream::connect(&self.addr);
    }
}

fn relay(client: TcpStream, upstream: &str, delay: Duration) -> std::io::Result<()> {
    let server = TcpStream::connect(upstream)?;
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    let (mut from_server, mut to_client) = (server.try_clone()?, client.try_clone()?);
    std::thread::spawn(move || std::io::copy(&mut from_server, &mut to_client));
    let (mut from_client, mut to_server) = (client, server);
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = from_client.read(&mut buf)?;
        if n == 0 {
            return to_server.shutdown(Shutdown::Write);
        }
        std::thread::sleep(delay);
        to_server.write_all(&buf[..n])?;
    }
}
