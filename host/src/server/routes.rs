//! Request routing and the handlers.

use super::review;
use super::AppState;
use crate::metrics::{metrics, PhaseLabels, RequestLabels};
use crate::runtime::wit;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};
use std::convert::Infallible;
use std::sync::Arc;

/// Kubernetes sends at most 3 MiB objects; a review body beyond that is refused.
pub const MAX_BODY_BYTES: usize = 3 << 20;

type Reply = Response<Full<Bytes>>;

/// Parsed admission route.
struct Route {
    phase: wit::Phase,
    namespaced: bool,
    names: Vec<String>,
}

fn parse_route(path: &str) -> Option<Route> {
    let mut parts = path.trim_start_matches('/').splitn(3, '/');
    let namespaced = match parts.next()? {
        "ivpol" => false,
        "nivpol" => true,
        _ => return None,
    };
    let phase = match parts.next()? {
        "validate" => wit::Phase::Validate,
        "mutate" => wit::Phase::Mutate,
        _ => return None,
    };
    let names = parts
        .next()
        .unwrap_or_default()
        .split('/')
        .filter(|n| !n.is_empty())
        .map(String::from)
        .collect();
    Some(Route {
        phase,
        namespaced,
        names,
    })
}

pub async fn handle(state: Arc<AppState>, req: Request<Incoming>) -> Result<Reply, Infallible> {
    let path = req.uri().path().to_string();
    let reply = match (req.method(), path.as_str()) {
        (&Method::GET, "/health/liveness") => json_reply(StatusCode::OK, json!({"status": "ok"})),
        (&Method::GET, "/health/readiness") => readiness(&state),
        (&Method::GET, "/metrics") => metrics_reply(),
        (method, p) => match parse_route(p) {
            Some(route) if method == Method::POST => admission(&state, route, req).await,
            Some(_) => error(
                StatusCode::METHOD_NOT_ALLOWED,
                format!("{method} is not allowed on {p}: use POST"),
            ),
            None => error(StatusCode::NOT_FOUND, format!("no route for {method} {p}")),
        },
    };
    Ok(reply)
}

fn readiness(state: &AppState) -> Reply {
    let summary = state.pool.summary();
    json_reply(
        StatusCode::OK,
        json!({
            "status": "ready",
            "policies": summary.policies.len(),
            "rejected": summary.diagnostics.len(),
        }),
    )
}

fn metrics_reply() -> Reply {
    let mut resp = Response::new(Full::new(Bytes::from(metrics().encode())));
    resp.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        ),
    );
    resp
}

/// One admission request, counted and timed by route, phase and verdict.
async fn admission(state: &AppState, route: Route, req: Request<Incoming>) -> Reply {
    let start = std::time::Instant::now();
    let labels = (
        if route.namespaced { "nivpol" } else { "ivpol" },
        match route.phase {
            wit::Phase::Validate => "validate",
            wit::Phase::Mutate => "mutate",
        },
    );
    let (reply, verdict) = decide(state, route, req).await;
    let m = metrics();
    m.requests
        .get_or_create(&RequestLabels {
            route: labels.0.into(),
            phase: labels.1.into(),
            verdict: verdict.into(),
        })
        .inc();
    m.latency
        .get_or_create(&PhaseLabels {
            phase: labels.1.into(),
        })
        .observe(start.elapsed().as_secs_f64());
    reply
}

/// The reply, and the verdict label: `allowed`, `denied` or `error`.
async fn decide(state: &AppState, route: Route, req: Request<Incoming>) -> (Reply, &'static str) {
    let body = match read_body(req, state.body_read_timeout).await {
        Ok(b) => b,
        Err(reply) => return (reply, "error"),
    };
    let review = match review::parse(&body) {
        Ok(r) => r,
        Err(e) => return (error(StatusCode::BAD_REQUEST, e), "error"),
    };
    // Kyverno's mutate routes only act on CREATE, UPDATE and CONNECT.
    if route.phase == wit::Phase::Mutate
        && !matches!(review.operation.as_str(), "CREATE" | "UPDATE" | "CONNECT")
    {
        return (
            json_reply(StatusCode::OK, review::allowed(&review.uid)),
            "allowed",
        );
    }
    let scope = if route.namespaced {
        wit::Scope::Namespaced(review.namespace.clone())
    } else {
        wit::Scope::Cluster
    };
    let namespace = crate::policies::namespace_object(&state.namespaces, &review.namespace);
    let deadline = state.pool.deadline(&route.names);
    let outcome = state
        .pool
        .admit(
            route.phase,
            scope,
            route.names,
            review.request,
            namespace,
            deadline,
        )
        .await;
    match outcome {
        Ok(Ok(verdict)) => {
            let label = if verdict.allowed { "allowed" } else { "denied" };
            let body = review::response(&review.uid, &verdict);
            (json_reply(StatusCode::OK, body), label)
        }
        Ok(Err(bad_request)) => (error(StatusCode::BAD_REQUEST, bad_request), "error"),
        Err(e) => {
            tracing::error!("evaluation failed: {e:#}");
            let message = format!("evaluation failed: {e:#}");
            (error(StatusCode::INTERNAL_SERVER_ERROR, message), "error")
        }
    }
}

async fn read_body(req: Request<Incoming>, timeout: std::time::Duration) -> Result<Bytes, Reply> {
    let too_large = || {
        error(
            StatusCode::BAD_REQUEST,
            format!("body is larger than {MAX_BODY_BYTES} bytes"),
        )
    };
    // No early refusal on Content-Length: reading up to the limit first lets
    // the client see the 400 instead of a reset connection.
    // A client that trickles (or stops sending) its body is cut off.
    let read = Limited::new(req.into_body(), MAX_BODY_BYTES).collect();
    let Ok(read) = tokio::time::timeout(timeout, read).await else {
        return Err(error(
            StatusCode::REQUEST_TIMEOUT,
            format!("the body was not received within {timeout:?}"),
        ));
    };
    match read {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            Err(too_large())
        }
        Err(e) => Err(error(
            StatusCode::BAD_REQUEST,
            format!("reading the body failed: {e}"),
        )),
    }
}

fn json_reply(status: StatusCode, body: Value) -> Reply {
    let mut resp = Response::new(Full::new(Bytes::from(body.to_string())));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    resp
}

fn error(status: StatusCode, message: String) -> Reply {
    json_reply(status, json!({ "error": message, "code": status.as_u16() }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_admission_routes() {
        let r = parse_route("/ivpol/validate/a/b").expect("route");
        assert_eq!(
            (r.namespaced, r.names.clone()),
            (false, vec!["a".to_string(), "b".to_string()])
        );
        assert!(matches!(r.phase, wit::Phase::Validate));
        let r = parse_route("/nivpol/mutate/x").expect("route");
        assert!(r.namespaced && matches!(r.phase, wit::Phase::Mutate));
        assert!(parse_route("/ivpol/validate").is_some_and(|r| r.names.is_empty()));
        assert!(parse_route("/ivpol/delete/x").is_none());
        assert!(parse_route("/other").is_none());
    }
}
