//! One admission request from its HTTP body to its HTTP answer: the
//! AdmissionReview envelope is parsed here, once, and the AdmissionReview
//! response is written here. The host only routes bytes, and reads the
//! [`Answer`]'s typed record for its decision log, metrics and reports.

use super::{NamespaceError, Phase, PolicyResult, PolicySet, Scope, Verdict};
use crate::admission::{Operation, Request, RequestError};
use crate::oci::Transport;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The route a request came in on: `/{ivpol,nivpol}/{validate,mutate}/<names>`.
#[derive(Debug, Clone)]
pub struct Route {
    /// Mutate or validate.
    pub phase: Phase,
    /// `/nivpol/`: the NamespacedImageValidatingPolicies of the request's
    /// namespace; `/ivpol/`: the cluster policies.
    pub namespaced: bool,
    /// Policy names from the path; empty means every policy in scope.
    pub names: Vec<String>,
    /// Policies that trapped the component on this same request, found
    /// by the host judging each alone on a fresh instance: each is an
    /// `error` result mapped by its actions, and is not evaluated again,
    /// so that the others are judged as if it were not there.
    pub trapped: Vec<Trapped>,
}

/// A policy that trapped the component on the request, and why (the
/// host's words: the kind of trap or the memory limit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trapped {
    /// The policy's name (in the route's scope).
    pub name: String,
    /// Why its call gave no answer, without any wasm backtrace.
    pub cause: String,
}

/// The Namespace objects the host knows (`serve --kubernetes` or
/// `--namespaces`). Asked only when a policy in scope needs the
/// namespace's labels or object.
pub trait Namespaces {
    /// The Namespace object `name` as JSON; none when it is not known.
    fn get(&self, name: &str) -> Option<String>;
}

/// Who and what a request is about, as far as its envelope says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    /// `request.uid`.
    pub uid: String,
    /// `request.namespace`; empty for a cluster-scoped object.
    pub namespace: String,
    /// `request.kind.kind`.
    pub kind: String,
    /// `request.name`.
    pub name: String,
    /// `request.operation`.
    pub operation: Operation,
    /// `request.kind` as an apiVersion.
    pub api_version: String,
    /// The object's `metadata.uid` (`oldObject`'s on DELETE); empty when
    /// it has none.
    pub object_uid: String,
    /// `request.dryRun`.
    pub dry_run: bool,
}

impl Subject {
    /// What `req`'s envelope says of it.
    pub fn of(req: &Request) -> Subject {
        let kind = &req.kind;
        let api_version = match kind.group.is_empty() {
            true => kind.version.clone(),
            false => format!("{}/{}", kind.group, kind.version),
        };
        let object_uid = req.resource_object().uid().to_string();
        Subject {
            uid: req.uid.clone(),
            namespace: req.namespace.clone(),
            kind: kind.kind.clone(),
            name: req.name.clone(),
            operation: req.operation,
            api_version,
            object_uid,
            dry_run: req.dry_run,
        }
    }
}

ivpol_verify::debug_as_display!(Unjudgeable);
/// Why a body cannot be judged (WIT `unjudgeable`). The host then answers
/// by the uid it can scan from the body.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unjudgeable {
    /// The body is not JSON.
    #[error("{0}")]
    NotJson(String),
    /// JSON, but not an `admission.k8s.io/v1` AdmissionReview with a request.
    #[error("{0}")]
    NotAdmissionReview(String),
    /// The request lacks a field the judgement needs, or holds one it
    /// cannot take.
    #[error(transparent)]
    MalformedRequest(#[from] RequestError),
    /// The host's Namespace object for the request's namespace cannot be
    /// read, and a policy in scope needs it.
    #[error(transparent)]
    UnreadableNamespace(#[from] NamespaceError),
}

/// The answer to one request.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The AdmissionReview response, as JSON.
    pub response: Vec<u8>,
    /// Who and what the request was about.
    pub subject: Subject,
    /// The policies' verdict; none when the request was answered without
    /// evaluating any (a mutate route's DELETE).
    pub verdict: Option<Verdict>,
    /// Whether the verdict's results go into the resource's policy report
    /// ([`admission_reported`]).
    pub reported: bool,
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default, rename = "apiVersion")]
    api_version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(borrow, default)]
    request: Option<&'a RawValue>,
}

/// Kyverno's mutate routes act on every operation but DELETE.
fn mutated(operation: Operation) -> bool {
    !matches!(operation, Operation::Delete)
}

impl PolicySet {
    /// Judges the AdmissionReview `body` that came in on `route`. The error
    /// says why the body cannot be judged at all; the host then answers by
    /// the uid it can scan from the body, as it does when the component
    /// cannot answer.
    pub fn review(
        &self,
        route: &Route,
        body: &[u8],
        namespaces: &dyn Namespaces,
        transport: Arc<dyn Transport + Send + Sync>,
    ) -> Result<Answer, Unjudgeable> {
        let req = request(body)?;
        if req.uid.is_empty() {
            return Err(RequestError::Missing("uid").into());
        }
        let subject = Subject::of(&req);
        if route.phase == Phase::Mutate && !mutated(req.operation) {
            let response = written(ResponseOut::allowed(&req.uid));
            return Ok(Answer {
                response,
                subject,
                verdict: None,
                reported: false,
            });
        }
        let scope = scope_of(route, &req.namespace);
        let lookup = |name: &str| namespaces.get(name);
        let verdict = self.admit_request(route, &scope, &req, &lookup, transport)?;
        let reported = route.phase == Phase::Validate && admission_reported(&subject, &verdict);
        Ok(Answer {
            response: response(&req.uid, &verdict),
            subject,
            verdict: Some(verdict),
            reported,
        })
    }

    /// The response and verdict for the request `uid` (in `namespace`) on
    /// `route` when [`PolicySet::review`] gave none (`cause`: a trap, the
    /// deadline, no instance): [`PolicySet::failed`], nothing evaluated,
    /// and the body not read (it may be what could not be judged).
    pub fn failure_answer(
        &self,
        route: &Route,
        uid: &str,
        namespace: &str,
        cause: &str,
    ) -> (Vec<u8>, Verdict) {
        let verdict = self.failed(route, &scope_of(route, namespace), cause);
        (response(uid, &verdict), verdict)
    }
}

/// Whether Kyverno's audit handler reports the results of a validate
/// request in its resource's policy report (`pkg/webhooks/resource/ivpol`
/// `audit`): not a dry run nor a DELETE, about a namespaced object with a
/// UID, and judged by no policy that denies (a request a `Deny` policy
/// judged was refused, or the background scan reports it). Which of the
/// results are reported is then each policy's own
/// ([`ReportMeta::reported`](ivpol_policy::policy::ReportMeta::reported)).
pub fn admission_reported(subject: &Subject, verdict: &Verdict) -> bool {
    !subject.dry_run
        && subject.operation != Operation::Delete
        && !subject.object_uid.is_empty()
        && !subject.namespace.is_empty()
        && !verdict.results.is_empty()
        && !verdict.results.iter().any(PolicyResult::denies)
}

/// The policies a route reaches for a request in `namespace`: that
/// namespace's for `/nivpol/`, the cluster's for `/ivpol/`.
fn scope_of(route: &Route, namespace: &str) -> Scope {
    match route.namespaced {
        true => Scope::Namespaced(namespace.to_string()),
        false => Scope::Cluster,
    }
}

/// The request of the AdmissionReview `body`: read with the envelope in one
/// pass, or, when that finds something wrong, by [`envelope`] and
/// [`Request::parse`], whose errors say what.
fn request(body: &[u8]) -> Result<Request, Unjudgeable> {
    let body = utf8(body)?;
    if let Some(read) = Request::from_review(body) {
        return Ok(read?);
    }
    Ok(Request::parse(envelope(body)?.get())?)
}

/// `body` as text: serde_json's `&str` reader is the one the component's
/// other JSON goes through (`ivpol_refs::json`).
pub(super) fn utf8(body: &[u8]) -> Result<&str, Unjudgeable> {
    std::str::from_utf8(body).map_err(|e| {
        Unjudgeable::NotJson(format!(
            "body is not valid JSON: it is not UTF-8 at byte {}",
            e.valid_up_to()
        ))
    })
}

/// The `request` of an AdmissionReview `admission.k8s.io/v1`, as its text.
pub(super) fn envelope(body: &str) -> Result<&RawValue, Unjudgeable> {
    use Unjudgeable::NotAdmissionReview;
    let doc: Envelope = serde_json::from_str(body).map_err(|e| match e.is_data() {
        true => NotAdmissionReview(format!("body is not an AdmissionReview: {e}")),
        false => Unjudgeable::NotJson(format!("body is not valid JSON: {e}")),
    })?;
    let kind = doc.kind.unwrap_or_default();
    if kind != "AdmissionReview" {
        return Err(NotAdmissionReview(format!(
            "kind must be AdmissionReview, got {kind:?}"
        )));
    }
    let api_version = doc.api_version.unwrap_or_default();
    if api_version != "admission.k8s.io/v1" {
        return Err(NotAdmissionReview(format!(
            "apiVersion must be admission.k8s.io/v1, got {api_version:?}"
        )));
    }
    doc.request
        .filter(|r| r.get().starts_with('{'))
        .ok_or_else(|| NotAdmissionReview("AdmissionReview has no request".into()))
}

/// The AdmissionReview response for a verdict.
pub fn response(uid: &str, verdict: &Verdict) -> Vec<u8> {
    let patch = verdict.patch.as_ref();
    written(ResponseOut {
        allowed: verdict.allowed,
        audit_annotations: audit_annotations(verdict),
        patch: patch.map(|p| base64::engine::general_purpose::STANDARD.encode(p)),
        patch_type: patch.map(|_| "JSONPatch"),
        status: (verdict.message.as_deref()).map(|message| StatusOut {
            message,
            status: "Failure",
        }),
        uid,
        warnings: &verdict.warnings,
    })
}

/// An AdmissionReview's `response`. Its fields, and those of the types
/// around it, are declared in the order of their keys: written, it is the
/// bytes serde_json writes for the same `Value` (whose maps sort their
/// keys), without building one.
#[derive(Serialize)]
struct ResponseOut<'a> {
    allowed: bool,
    #[serde(
        rename = "auditAnnotations",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    audit_annotations: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch: Option<String>,
    #[serde(rename = "patchType", skip_serializing_if = "Option::is_none")]
    patch_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<StatusOut<'a>>,
    uid: &'a str,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    warnings: &'a [String],
}

impl<'a> ResponseOut<'a> {
    /// Allowed, with nothing else to say.
    fn allowed(uid: &'a str) -> ResponseOut<'a> {
        ResponseOut {
            allowed: true,
            audit_annotations: BTreeMap::new(),
            patch: None,
            patch_type: None,
            status: None,
            uid,
            warnings: &[],
        }
    }
}

#[derive(Serialize)]
struct StatusOut<'a> {
    message: &'a str,
    status: &'static str,
}

#[derive(Serialize)]
struct ReviewOut<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    kind: &'static str,
    response: ResponseOut<'a>,
}

fn written(response: ResponseOut<'_>) -> Vec<u8> {
    let review = ReviewOut {
        api_version: "admission.k8s.io/v1",
        kind: "AdmissionReview",
        response,
    };
    // An allowed response with its annotations is a few hundred bytes:
    // room for it at once, not grown from serde_json's 128.
    let mut out = Vec::with_capacity(1024);
    match serde_json::to_writer(&mut out, &review) {
        Ok(()) => out,
        Err(_) => Vec::new(),
    }
}

/// The longest audit annotation value written (the reasons of one policy).
const MAX_ANNOTATION_VALUE: usize = 4096;

/// One `auditAnnotations` entry per policy that verified something: the
/// key `verification.<policy>` (the API server prefixes the webhook's name
/// and a `/`, and drops keys that are not qualified names: at most 63
/// characters of `[A-Za-z0-9._-]`, alphanumeric at both ends), the value
/// each verification's outcome, `; `-joined.
fn audit_annotations(v: &Verdict) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for r in v.results.iter().filter(|r| !r.verifications.is_empty()) {
        let text: Vec<&str> = r.verifications.iter().map(|x| x.summary.as_str()).collect();
        let mut value = text.join("; ");
        if value.len() > MAX_ANNOTATION_VALUE {
            let mut end = MAX_ANNOTATION_VALUE;
            while !value.is_char_boundary(end) {
                end -= 1;
            }
            value.truncate(end);
            value.push('…');
        }
        out.insert(annotation_key(&r.policy, r.namespace.as_deref()), value);
    }
    out
}

/// A qualified-name key for `policy` (of `namespace`): at most 63
/// characters, each outside `[A-Za-z0-9._-]` written as `-`, ending
/// alphanumeric.
pub fn annotation_key(policy: &str, namespace: Option<&str>) -> String {
    const MAX: usize = 63;
    let parts = match namespace {
        Some(ns) => ["verification.", ns, ".", policy],
        None => ["verification.", policy, "", ""],
    };
    let kept = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    let mut key = String::with_capacity(MAX + 16);
    for part in parts {
        // Names are nearly always kept whole: copied, not char by char.
        match part.bytes().all(|b| kept(char::from(b))) {
            true => key.push_str(part),
            false => key.extend(part.chars().map(|c| if kept(c) { c } else { '-' })),
        }
        if key.len() >= MAX {
            break;
        }
    }
    // One ASCII byte per character of the parts: the first MAX bytes are
    // the first MAX characters.
    key.truncate(MAX);
    let end = key
        .trim_end_matches(|c: char| !c.is_ascii_alphanumeric())
        .len();
    key.truncate(end);
    key
}

#[cfg(test)]
mod tests {
    use super::super::{CacheUse, PolicyResult, Status, Verdict, Verification, VerifierKind};
    use super::*;
    use serde_json::{json, Map, Value};

    /// The response as it was written before: a `Value` built and
    /// serialised (its maps sort their keys).
    fn via_value(uid: &str, v: &Verdict) -> Vec<u8> {
        let mut resp = json!({ "uid": uid, "allowed": v.allowed });
        if let Some(message) = &v.message {
            resp["status"] = json!({ "status": "Failure", "message": message });
        }
        if !v.warnings.is_empty() {
            resp["warnings"] = json!(v.warnings);
        }
        let annotations: Map<String, Value> = audit_annotations(v)
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        if !annotations.is_empty() {
            resp["auditAnnotations"] = Value::Object(annotations);
        }
        if let Some(patch) = &v.patch {
            resp["patchType"] = json!("JSONPatch");
            resp["patch"] = json!(base64::engine::general_purpose::STANDARD.encode(patch));
        }
        let review = json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": resp,
        });
        serde_json::to_vec(&review).unwrap()
    }

    fn verified(policy: &str, summary: &str) -> PolicyResult {
        PolicyResult {
            policy: policy.into(),
            namespace: Some("team-a".into()),
            status: Status::Pass,
            message: String::new(),
            actions: vec!["Deny".into()],
            audit_annotations: vec![],
            exceptions: vec![],
            verifications: vec![Verification {
                image: "r.io/app".into(),
                digest: None,
                attestor: "key".into(),
                attestor_kind: VerifierKind::Cosign,
                micros: 0,
                attestation: None,
                cache: CacheUse::Hit,
                failure: None,
                summary: summary.into(),
            }],
            background: true,
            report: Default::default(),
        }
    }

    #[test]
    fn responses_are_the_bytes_a_value_would_write() {
        let mut denied = Verdict {
            allowed: false,
            message: Some("Policy p failed: \"quoted\" \u{e9}".into()),
            warnings: vec!["w1".into(), "w2".into()],
            patch: Some(r#"[{"op":"add"}]"#.into()),
            results: vec![verified("b", "x ok"), verified("a", "y ok")],
        };
        for v in [Verdict::default(), denied.clone()] {
            assert_eq!(response("u-1", &v), via_value("u-1", &v));
        }
        denied.patch = None;
        denied.warnings.clear();
        assert_eq!(response("u", &denied), via_value("u", &denied));
        let allowed = written(ResponseOut::allowed("u"));
        assert_eq!(allowed, br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"allowed":true,"uid":"u"}}"#);
    }
}
