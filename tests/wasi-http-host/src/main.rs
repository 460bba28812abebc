//! `wasi-http-host [--env KEY=VALUE]... COMPONENT [POLICY_DIR]`: serves a `wasi:http/proxy`
//! component on 127.0.0.1, a new instance per request, as `wasmtime serve`
//! does. It is built from wasmtime, wasmtime-wasi and wasmtime-wasi-http's
//! standard proxy bindings alone, with no ivpol code: the host that the
//! webhook component's tests run it under. `POLICY_DIR`, when given, is
//! preopened read-only as `/policies` (`wasmtime serve --dir DIR::/policies`);
//! each `--env` is an environment variable of every instance (`wasmtime
//! serve --env`).
//! Prints `listening ADDR` once it accepts connections.

use hyper::server::conn::http1;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::net::TcpListener;
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Engine, Result, Store};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::p2::bindings::http::types::Scheme;
use wasmtime_wasi_http::p2::bindings::ProxyPre;
use wasmtime_wasi_http::p2::body::HyperOutgoingBody;
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

struct Host {
    pre: ProxyPre<State>,
    policies: Option<PathBuf>,
    env: Vec<(String, String)>,
}

struct State {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    table: ResourceTable,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for State {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: wasmtime_wasi_http::default_hooks(),
        }
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let usage = "usage: wasi-http-host [--env KEY=VALUE]... COMPONENT [POLICY_DIR]";
    let mut args = std::env::args().skip(1).peekable();
    let mut env = Vec::new();
    while args.peek().is_some_and(|a| a == "--env") {
        let pair = args.nth(1).expect(usage);
        let (key, value) = pair.split_once('=').expect(usage);
        env.push((key.to_string(), value.to_string()));
    }
    let component = args.next().expect(usage);
    let policies = args.next().map(PathBuf::from);
    let engine = Engine::default();
    let component = Component::from_file(&engine, &component)?;
    let mut linker = Linker::new(&engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
    let pre = ProxyPre::new(linker.instantiate_pre(&component)?)?;
    let host = Arc::new(Host { pre, policies, env });
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    println!("listening {}", listener.local_addr()?);
    loop {
        let (client, _) = listener.accept().await?;
        let host = host.clone();
        tokio::task::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let host = host.clone();
                async move { host.handle(req).await }
            });
            let _ = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(client), service)
                .await;
        });
    }
}

impl Host {
    async fn handle(
        &self,
        req: hyper::Request<hyper::body::Incoming>,
    ) -> Result<hyper::Response<HyperOutgoingBody>> {
        let mut wasi = WasiCtx::builder();
        wasi.inherit_stderr();
        wasi.envs(&self.env);
        if let Some(dir) = &self.policies {
            wasi.preopened_dir(dir, "/policies", FsPerms::ReadOnly)?;
        }
        let state = State {
            wasi: wasi.build(),
            http: WasiHttpCtx::new(),
            table: ResourceTable::new(),
        };
        let mut store = Store::new(self.pre.engine(), state);
        let (sender, receiver) = tokio::sync::oneshot::channel();
        let req = store
            .data_mut()
            .http()
            .new_incoming_request(Scheme::Http, req)?;
        let out = store.data_mut().http().new_response_outparam(sender)?;
        let pre = self.pre.clone();
        let task = tokio::task::spawn(async move {
            let proxy = pre.instantiate_async(&mut store).await?;
            proxy
                .wasi_http_incoming_handler()
                .call_handle(store, req, out)
                .await
        });
        match receiver.await {
            Ok(Ok(resp)) => Ok(resp),
            Ok(Err(e)) => Err(e.into()),
            Err(_) => match task.await {
                Ok(Ok(())) => wasmtime::bail!("the component never set a response"),
                Ok(Err(e)) => Err(e),
                Err(e) => Err(e.into()),
            },
        }
    }
}
