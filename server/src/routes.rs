//! Request routing and the handlers.

use super::decision;
use super::envelope;
use super::review;
use super::{AppState, Listener};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use ivpol_refs::route::normalised;
use ivpol_runtime::metrics::{metrics, RequestLabels};
use ivpol_runtime::wit;
use serde_json::{json, Value};
use std::convert::Infallible;
use std::sync::Arc;

/// The largest AdmissionReview body read. An UPDATE carries `object` and
/// `oldObject`, each up to etcd's 1.5 MiB as stored (JSON can be half as
/// large again), plus the envelope: 8 MiB holds both with room. A larger
/// body is denied (by uid, when its start holds one), never admitted.
pub(super) const MAX_BODY_BYTES: usize = 8 << 20;

/// How much of a body past [`MAX_BODY_BYTES`] is read and dropped before
/// the answer, so that the client is still reading when it comes.
const MAX_DRAINED_BYTES: usize = 8 << 20;

/// The text of the host's own denial when the component gave no answer at
/// all (not even a failure answer); the cause follows it.
const LAST_RESORT: &str = "the admission request could not be evaluated";

type Reply = Response<Full<Bytes>>;

/// The admission route of `path` (`/ivpol|nivpol/validate|mutate[/names]`),
/// as the WIT defines it: the one route type of host and component (the
/// webhook component reads paths with the same parser).
fn parse_route(path: &str) -> Option<wit::Route> {
    let route = ivpol_refs::route::parse(path)?;
    Some(wit::Route {
        phase: match route.mutate {
            true => wit::Phase::Mutate,
            false => wit::Phase::Validate,
        },
        namespaced: route.namespaced,
        names: route.names,
        trapped: Vec::new(),
    })
}

pub(super) async fn handle(
    state: Arc<AppState>,
    serves: Listener,
    req: Request<Incoming>,
) -> Result<Reply, Infallible> {
    let path = normalised(req.uri().path());
    // HEAD gets what GET would, without the body (hyper leaves it out).
    let read = req.method() == Method::GET || req.method() == Method::HEAD;
    let metrics_here = match serves {
        Listener::Metrics => true,
        Listener::Admission => !state.metrics_elsewhere,
    };
    if serves == Listener::Metrics && !(read && path == "/metrics") {
        let method = req.method();
        return Ok(error(
            StatusCode::NOT_FOUND,
            format!("no route for {method} {path}: this listener serves GET /metrics only"),
        ));
    }
    let reply = match (req.method(), path.as_str()) {
        (_, "/health/liveness") if read => json_reply(StatusCode::OK, json!({"status": "ok"})),
        (_, "/health/readiness") if read => readiness(&state),
        (_, "/metrics") if read && metrics_here => metrics_reply(),
        (&Method::POST, POLICY_VALIDATION_PATH) => policy_validation(&state, req).await,
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

/// The policy-validation webhook's path: ImageValidatingPolicies,
/// NamespacedImageValidatingPolicies and PolicyExceptions on CREATE and
/// UPDATE, refused at `kubectl apply` when they would not load.
pub(crate) const POLICY_VALIDATION_PATH: &str = "/ivpol/policy-validate";

/// One policy object, judged by the component as `serve` would load it.
/// Anything that goes wrong denies: a policy that cannot be checked is
/// not let in on trust.
async fn policy_validation(state: &AppState, req: Request<Incoming>) -> Reply {
    let body = match read_body(req, state.body_read_timeout).await {
        Ok(b) => b,
        Err(unread) => return Decided::unjudged(&unread.prefix, unread.why, unread.status).reply,
    };
    let generation = state.live.current();
    let deadline = std::time::Duration::from_secs(10);
    let tenant = envelope::scan_namespace(&body).unwrap_or_default();
    match generation
        .pool
        .review_policy(&body, &tenant, deadline)
        .await
    {
        Ok(Ok(answer)) => {
            let s = &answer.subject;
            let verdict = answer.verdict.as_ref();
            tracing::info!(
                target: "ivpol::policy_validation",
                uid = %s.uid,
                namespace = %s.namespace,
                kind = %s.kind,
                name = %s.name,
                allowed = verdict.is_none_or(|v| v.allowed),
                message = verdict.and_then(|v| v.message.as_deref()).unwrap_or_default(),
                "policy checked"
            );
            bytes_reply(StatusCode::OK, answer.response)
        }
        Ok(Err(why)) => {
            Decided::unjudged(&body, why.message().to_string(), StatusCode::BAD_REQUEST).reply
        }
        Err(failure) => {
            let uid = envelope::scan_uid(&body).unwrap_or_default();
            tracing::error!(%uid, "the policy could not be checked: {failure}");
            deny(&uid, &format!("the policy could not be checked: {failure}"))
        }
    }
}

/// Ready while a policy set is loaded (the listener only opens once the
/// first one is) and no shutdown has begun. Reports the generation, what
/// loaded, the policies that did not load (each denies the requests in its
/// scope) and the stale ones (a reload rejected them; their last good
/// version still enforces), by name, with the error.
fn readiness(state: &AppState) -> Reply {
    let generation = state.live.current();
    let summary = generation.pool.summary();
    let rejected: Vec<Value> = summary
        .rejected
        .iter()
        .map(|r| json!({"name": r.name, "namespace": r.namespace, "kind": r.kind.as_str(), "error": r.message}))
        .collect();
    let stale: Vec<Value> = generation
        .stale
        .iter()
        .map(
            |s| json!({"name": s.name, "namespace": s.namespace, "kind": s.kind, "error": s.error}),
        )
        .collect();
    let draining = state.draining.load(std::sync::atomic::Ordering::SeqCst);
    let (status, code) = match draining {
        false => ("ready", StatusCode::OK),
        true => ("shutting down", StatusCode::SERVICE_UNAVAILABLE),
    };
    let mut body = json!({
        "status": status,
        "generation": generation.number,
        "hash": generation.hash,
        "policies": summary.policies.len(),
        "rejected": summary.diagnostics.len(),
        "stale": stale.len(),
        "lastReloadError": state.live.last_reload_error(),
    });
    // Tenants' diagnostics (CEL source and all) are the log's and their
    // policies' status; readiness, which anyone reaching the port can
    // read, lists them only when the operator asks.
    if state.readiness_details {
        body["rejectedPolicies"] = json!(rejected);
        body["stalePolicies"] = json!(stale);
    }
    json_reply(code, body)
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

/// One admission request, counted and timed by route, phase and verdict,
/// with its decision line.
async fn admission(state: &AppState, route: wit::Route, req: Request<Incoming>) -> Reply {
    let start = std::time::Instant::now();
    let labels = (
        if route.namespaced { "nivpol" } else { "ivpol" },
        match route.phase {
            wit::Phase::Validate => "validate",
            wit::Phase::Mutate => "mutate",
        },
    );
    let decided = decide(state, route, req).await;
    let took = start.elapsed();
    let s = &decided.subject;
    let subject = decision::Subject {
        uid: &s.uid,
        route: labels.0,
        phase: labels.1,
        namespace: &s.namespace,
        kind: &s.kind,
        name: &s.name,
        operation: s.operation.map_or("", wit::Operation::as_str),
    };
    let allowed =
        decided.verdict.as_ref().is_some_and(|v| v.allowed) || (decided.label == "allowed");
    decision::log(
        &subject,
        allowed,
        took,
        decided.verdict.as_ref(),
        decided.why.as_deref(),
    );
    if let Some(v) = &decided.verdict {
        decision::count(v, labels.1);
        if let (Some(reports), true) = (&state.admission_reports, decided.reported) {
            reports.record(&s.for_report(), v);
        }
    }
    let m = metrics();
    m.count_request(&RequestLabels {
        route: labels.0,
        phase: labels.1,
        verdict: decided.label,
    });
    m.observe_latency(labels.1, took.as_secs_f64());
    decided.reply
}

/// What [`decide`] did: the reply, the verdict label (`allowed`, `denied`
/// or `error`: no verdict from the policies, a request that could not be
/// judged), and what the decision line reports.
struct Decided {
    reply: Reply,
    label: &'static str,
    subject: Seen,
    verdict: Option<wit::Verdict>,
    /// The component's word that the verdict's results go into the
    /// resource's policy report (WIT `answer.reported`).
    reported: bool,
    why: Option<String>,
}

impl Decided {
    /// No answer from the component at all, not even a failure answer:
    /// denied by the uid a scan finds, with a fixed text and the cause.
    /// Nothing here weighs a policy (the component words every decision);
    /// this only keeps a request from being admitted on ivpol's failure.
    fn last_resort(subject: Seen, why: String) -> Decided {
        Decided::denied_unjudged(subject, LAST_RESORT, why, StatusCode::BAD_REQUEST)
    }

    /// A body that cannot be judged: denied by its uid when a scan finds
    /// one, otherwise answered with `status` (there is nothing to answer).
    fn unjudged(body: &[u8], why: String, status: StatusCode) -> Decided {
        let text = "the admission request cannot be evaluated";
        Decided::denied_unjudged(scanned(body), text, why, status)
    }

    /// A denial of `subject`'s uid reading `text: why`, or `status` with
    /// `why` when there is no uid to answer.
    fn denied_unjudged(subject: Seen, text: &str, why: String, status: StatusCode) -> Decided {
        let reply = match subject.uid.is_empty() {
            false => deny(&subject.uid, &format!("{text}: {why}")),
            true => error(status, why.clone()),
        };
        Decided {
            reply,
            label: "error",
            subject,
            verdict: None,
            reported: false,
            why: Some(why),
        }
    }
}

/// Who a request is about: the component's subject, or only the uid and
/// namespace a scan finds when it gave no answer (the rest stays empty).
#[derive(Default)]
struct Seen {
    uid: String,
    namespace: String,
    kind: String,
    name: String,
    operation: Option<wit::Operation>,
    api_version: String,
    object_uid: String,
}

impl From<wit::Subject> for Seen {
    fn from(s: wit::Subject) -> Seen {
        Seen {
            uid: s.uid,
            namespace: s.namespace,
            kind: s.kind,
            name: s.name,
            operation: Some(s.operation),
            api_version: s.api_version,
            object_uid: s.object_uid,
        }
    }
}

impl Seen {
    /// What admission reports need to know of the request.
    pub(crate) fn for_report(&self) -> ivpol_report::admission::Request<'_> {
        ivpol_report::admission::Request {
            api_version: &self.api_version,
            kind: &self.kind,
            name: &self.name,
            namespace: &self.namespace,
            object_uid: &self.object_uid,
        }
    }
}

/// What a scan of a body the component did not judge finds: its uid and
/// namespace, each empty when absent.
fn scanned(body: &[u8]) -> Seen {
    Seen {
        uid: envelope::scan_uid(body).unwrap_or_default(),
        namespace: envelope::scan_namespace(body).unwrap_or_default(),
        ..Seen::default()
    }
}

/// Reads the body and hands it to the component with the route; the
/// component parses the AdmissionReview, judges it and writes the
/// response. The host reads the body itself only when the component
/// cannot answer: then it denies by the uid it scans.
async fn decide(state: &AppState, route: wit::Route, req: Request<Incoming>) -> Decided {
    let body = match read_body(req, state.body_read_timeout).await {
        Ok(b) => b,
        Err(unread) => return Decided::unjudged(&unread.prefix, unread.why, unread.status),
    };
    // One generation for the whole request, even if a reload swaps it.
    let generation = state.live.current();
    let pool = &generation.pool;
    let deadline = pool.deadline(&route.names);
    let namespaces: Arc<dyn ivpol_runtime::Namespaces> = generation.clone();
    // Whose share of the instances the request takes: the namespace the
    // API server says it is in (a cheap scan; the component parses it).
    let tenant = envelope::scan_namespace(&body).unwrap_or_default();
    let outcome = pool
        .judge(route.clone(), &body, namespaces, &tenant, deadline)
        .await;
    match outcome {
        Ok(Ok(answer)) => {
            let label = match &answer.verdict {
                Some(v) if !v.allowed => "denied",
                _ => "allowed",
            };
            Decided {
                reply: bytes_reply(StatusCode::OK, answer.response),
                label,
                subject: answer.subject.into(),
                verdict: answer.verdict,
                reported: answer.reported,
                why: None,
            }
        }
        Ok(Err(why)) => {
            Decided::unjudged(&body, why.message().to_string(), StatusCode::BAD_REQUEST)
        }
        Err(failure) => {
            let why = failure.to_string();
            let subject = scanned(&body);
            tracing::error!(uid = %subject.uid, "no answer from the component: {}", failure.detail());
            metrics()
                .component_failures
                .get_or_create(&ivpol_runtime::metrics::FailureLabels {
                    reason: failure.reason(),
                })
                .inc();
            if subject.uid.is_empty() {
                return Decided::last_resort(subject, why);
            }
            let head = wit::RequestHead {
                uid: subject.uid.clone(),
                namespace: subject.namespace.clone(),
            };
            match pool.failure_answer(route, &head, &why).await {
                Ok(reply) => Decided {
                    reply: bytes_reply(StatusCode::OK, reply.response),
                    label: "error",
                    subject,
                    verdict: Some(reply.verdict),
                    reported: false,
                    why: Some(why),
                },
                Err(second) => {
                    tracing::error!(uid = %subject.uid, "no failure answer from the component either: {}", second.detail());
                    Decided::last_resort(subject, why)
                }
            }
        }
    }
}

fn deny(uid: &str, message: &str) -> Reply {
    json_reply(StatusCode::OK, review::denied(uid, message))
}

/// A body that was not read whole: what arrived (at most the limit), why,
/// and the status to answer when it holds no uid.
struct Unread {
    prefix: Vec<u8>,
    why: String,
    status: StatusCode,
}

/// The body, up to [`MAX_BODY_BYTES`], within `timeout`. Past the limit
/// (or the time) the start is kept, so the uid can still be answered. A
/// client that trickles (or stops sending) its body is cut off.
///
/// Past the limit the rest is read and dropped, up to [`MAX_DRAINED_BYTES`]
/// more and within the same `timeout`: a client that writes its whole body
/// before reading the answer, as HTTP clients do, would otherwise find the
/// connection closed under its write and never see the denial.
async fn read_body(req: Request<Incoming>, timeout: std::time::Duration) -> Result<Bytes, Unread> {
    // The API server never compresses a webhook's request; a compressed
    // body would only read as "not valid JSON", hiding why.
    if let Some(encoding) = req
        .headers()
        .get(hyper::header::CONTENT_ENCODING)
        .filter(|e| !e.as_bytes().eq_ignore_ascii_case(b"identity"))
    {
        return Err(Unread {
            prefix: Vec::new(),
            why: format!(
                "Content-Encoding {} is not supported: send the AdmissionReview uncompressed",
                String::from_utf8_lossy(encoding.as_bytes())
            ),
            status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
        });
    }
    let mut body = req.into_body();
    let mut buf: Vec<u8> = Vec::new();
    let read = async {
        let mut over: Option<usize> = None;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| {
                (
                    format!("reading the body failed: {e}"),
                    StatusCode::BAD_REQUEST,
                )
            })?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            if let Some(drained) = over.as_mut() {
                *drained = drained.saturating_add(data.len());
                if *drained > MAX_DRAINED_BYTES {
                    break;
                }
                continue;
            }
            if buf.len().saturating_add(data.len()) > MAX_BODY_BYTES {
                let room = MAX_BODY_BYTES - buf.len();
                buf.extend_from_slice(&data[..room]);
                over = Some(data.len() - room);
                continue;
            }
            buf.extend_from_slice(&data);
        }
        match over {
            Some(_) => Err((
                format!("body is larger than {MAX_BODY_BYTES} bytes"),
                StatusCode::BAD_REQUEST,
            )),
            None => Ok(()),
        }
    };
    let outcome = match tokio::time::timeout(timeout, read).await {
        Ok(done) => done,
        Err(_) => Err((
            format!("the body was not received within {timeout:?}"),
            StatusCode::REQUEST_TIMEOUT,
        )),
    };
    match outcome {
        // A byte order mark is no part of the JSON.
        Ok(()) if buf.starts_with(b"\xef\xbb\xbf") => Ok(Bytes::from(buf).slice(3..)),
        Ok(()) => Ok(Bytes::from(buf)),
        Err((why, status)) => Err(Unread {
            prefix: buf,
            why,
            status,
        }),
    }
}

fn json_reply(status: StatusCode, body: Value) -> Reply {
    bytes_reply(status, body.to_string().into_bytes())
}

fn bytes_reply(status: StatusCode, body: Vec<u8>) -> Reply {
    let mut resp = Response::new(Full::new(Bytes::from(body)));
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

    /// The host's own denial, when not even the component's failure
    /// answer came: a denial by the scanned uid with a fixed text and the
    /// cause, weighing no policy; a 400 when there is no uid to answer.
    #[test]
    fn the_last_resort_denies_with_a_fixed_text() {
        let seen = Seen {
            uid: "u-1".into(),
            ..Seen::default()
        };
        let d = Decided::last_resort(seen, "the pool is closed".into());
        assert_eq!(d.label, "error");
        assert!(d.verdict.is_none());
        assert_eq!(d.reply.status(), StatusCode::OK);
        let body = d.reply.into_body();
        let bytes = futures_body(body);
        let review: Value = serde_json::from_slice(&bytes).expect("JSON");
        assert_eq!(review["response"]["uid"], "u-1");
        assert_eq!(review["response"]["allowed"], false);
        assert_eq!(
            review["response"]["status"]["message"],
            format!("{LAST_RESORT}: the pool is closed")
        );
        let nobody = Decided::last_resort(Seen::default(), "x".into());
        assert_eq!(nobody.reply.status(), StatusCode::BAD_REQUEST);
    }

    /// The bytes of a reply body (always in memory here).
    fn futures_body(body: Full<Bytes>) -> Vec<u8> {
        use http_body_util::BodyExt;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        runtime
            .block_on(body.collect())
            .map(|c| c.to_bytes().to_vec())
            .unwrap_or_default()
    }

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

    #[test]
    fn paths_have_one_spelling() {
        for (raw, want) in [
            ("/ivpol/validate", "/ivpol/validate"),
            ("//ivpol/validate", "/ivpol/validate"),
            ("/ivpol//validate/", "/ivpol/validate"),
            ("/", "/"),
            ("", "/"),
        ] {
            assert_eq!(normalised(raw), want, "{raw:?}");
        }
    }
}
