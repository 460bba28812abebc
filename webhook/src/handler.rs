//! The wasi:http glue: `wasi:http/incoming-handler` over [`Webhook`]. The
//! policies load on the first request an instance serves, from the host's
//! preopened `/policies` when there is one, else from those baked in; the
//! registries' settings with them (`registry`).

use crate::registry::{Authenticating, Registries, INSECURE_REGISTRIES_ENV};
use crate::serve::{Documents, Reply, Webhook, MAX_BODY_BYTES};
use ivpol_oci::wasi_transport::WasiTransport;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use wasip2::http::types::{
    Fields, IncomingBody, IncomingRequest, Method, OutgoingBody, OutgoingResponse, ResponseOutparam,
};
use wasip2::io::streams::StreamError;

/// Where a host preopens the operator's policies (`wasmtime serve --dir`).
const POLICY_DIR: &str = "/policies";
/// How much of the body one read asks for.
const READ_CHUNK: u64 = 64 << 10;

struct Handler;

impl wasip2::exports::http::incoming_handler::Guest for Handler {
    fn handle(request: IncomingRequest, out: ResponseOutparam) {
        let Instance {
            webhook,
            registries,
        } = instance();
        let method = method(&request.method());
        let path = request.path_with_query().unwrap_or_default();
        let body = read_body(&request);
        let wasi = WasiTransport {
            timeout_ns: webhook.timeout_ns(),
            // No host holds credentials here: `Authenticating` answers
            // the registries' challenges itself.
            present: |_, _| {},
        };
        let transport = Arc::new(Authenticating {
            inner: Arc::new(wasi),
            registries: registries.clone(),
        });
        respond(
            out,
            webhook.answer(&method, &path, body.as_deref(), transport),
        );
    }
}

wasip2::http::proxy::export!(Handler);

/// The instance's policies and registries, loaded on first use.
struct Instance {
    webhook: Webhook,
    registries: Arc<Registries>,
}

fn instance() -> &'static Instance {
    static INSTANCE: OnceLock<Instance> = OnceLock::new();
    INSTANCE.get_or_init(|| {
        let dir = Path::new(POLICY_DIR);
        let (documents, dir) = match Documents::in_dir(dir) {
            Some(documents) => (documents, Some(dir)),
            None => (Documents::baked(), None),
        };
        let webhook = Webhook::load(documents);
        for line in webhook.diagnostics() {
            eprintln!("ivpol-webhook: {line}");
        }
        let insecure = std::env::var(INSECURE_REGISTRIES_ENV).unwrap_or_default();
        let registries = Registries::new(dir, &insecure);
        if let Some(why) = registries.config_problem() {
            eprintln!("ivpol-webhook: registry credentials: {why}");
        }
        Instance {
            webhook,
            registries: Arc::new(registries),
        }
    })
}

fn method(m: &Method) -> String {
    match m {
        Method::Get => "GET".into(),
        Method::Head => "HEAD".into(),
        Method::Post => "POST".into(),
        Method::Put => "PUT".into(),
        Method::Delete => "DELETE".into(),
        Method::Connect => "CONNECT".into(),
        Method::Options => "OPTIONS".into(),
        Method::Trace => "TRACE".into(),
        Method::Patch => "PATCH".into(),
        Method::Other(other) => other.clone(),
    }
}

/// The request's body, at most [`MAX_BODY_BYTES`]; none past that. A body
/// that breaks off is what arrived, which then does not parse.
fn read_body(request: &IncomingRequest) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let Ok(body) = request.consume() else {
        return Some(out);
    };
    if let Ok(stream) = body.stream() {
        loop {
            match stream.blocking_read(READ_CHUNK) {
                Ok(chunk) if out.len() + chunk.len() > MAX_BODY_BYTES => return None,
                Ok(chunk) => out.extend_from_slice(&chunk),
                Err(StreamError::Closed) | Err(StreamError::LastOperationFailed(_)) => break,
            }
        }
    }
    let _ = IncomingBody::finish(body);
    Some(out)
}

fn respond(out: ResponseOutparam, reply: Reply) {
    let json = [("content-type".to_string(), b"application/json".to_vec())];
    let headers = Fields::from_list(&json).unwrap_or_else(|_| Fields::new());
    let response = OutgoingResponse::new(headers);
    let _ = response.set_status_code(reply.status);
    let Ok(body) = response.body() else {
        return;
    };
    ResponseOutparam::set(out, Ok(response));
    if let Ok(stream) = body.write() {
        for chunk in reply.body.chunks(4096) {
            if stream.blocking_write_and_flush(chunk).is_err() {
                break;
            }
        }
    }
    let _ = OutgoingBody::finish(body, None);
}
