//! From an HTTP request to a reply: the URL layout, the verbs, and the
//! list and watch options, validated as the API server validates them.

use super::discovery;
use super::error::{ApiError, FieldError};
use super::http::{decode_segment, Request};
use super::ops::{Api, Continue, ListAt, ListQuery, PatchKind, Target};
use super::resources::Resources;
use super::selector::{FieldSelector, LabelSelector, Selectors};
use super::store::AtVersion;
use serde_json::{json, Value};
use std::time::Duration;

/// What to answer.
pub(crate) enum Reply {
    Json(u16, Value),
    Watch(WatchSpec),
}

/// Where a watch starts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Start {
    /// No (or `0`) resourceVersion: ADDED for what exists, then changes.
    Now,
    /// Changes after this version.
    After(u64),
    /// A version older than the history kept: one ERROR (410) event.
    Expired { asked: u64, oldest: u64 },
}

/// A watch request, validated.
#[derive(Debug, Clone)]
pub(crate) struct WatchSpec {
    pub target: Target,
    pub selectors: Selectors,
    pub start: Start,
    pub timeout: Duration,
    pub bookmarks: bool,
}

/// A watch without `timeoutSeconds` (or with 0) ends after this (the API
/// server picks 30 to 60 minutes).
const DEFAULT_WATCH_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Answers one authenticated request.
pub(crate) fn handle(api: &mut Api, req: &Request) -> Result<Reply, ApiError> {
    if req.param("dryRun").is_some() {
        return Err(ApiError::bad_request(
            "dryRun is not supported by this fake API server",
        ));
    }
    if req.method == "GET" {
        let host = req.header("host").unwrap_or("");
        if let Some(doc) = discovery::document(&api.resources, &req.path, host) {
            return Ok(Reply::Json(200, doc));
        }
    }
    let t = route(&api.resources, &req.path)?;
    let named = t.name.is_some();
    match (req.method.as_str(), named, t.status) {
        ("GET", false, _) if is_watch(req)? => watch_spec(api, t, req).map(Reply::Watch),
        ("GET", false, _) => Ok(Reply::Json(200, api.list(&t, &list_query(req)?)?)),
        ("POST", false, _) => Ok(Reply::Json(201, api.create(&t, json_body(req)?)?)),
        ("GET", true, _) if is_watch(req)? => Err(ApiError::method_not_allowed()),
        ("GET", true, _) => Ok(Reply::Json(200, api.get(&t)?)),
        ("PUT", true, _) => Ok(Reply::Json(200, api.replace(&t, json_body(req)?)?)),
        ("PATCH", true, _) => {
            let kind = patch_kind(api, &t, req)?;
            let (obj, created) = api.patch(&t, &kind, &req.body)?;
            Ok(Reply::Json(if created { 201 } else { 200 }, obj))
        }
        ("DELETE", true, false) => {
            let options = if req.body.is_empty() {
                json!({})
            } else {
                json_body(req)?
            };
            let last = api.delete(&t, &options)?;
            Ok(Reply::Json(200, deleted_status(api, &t, &last)))
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// The Status a delete answers with (no ReturnDeletedObject here).
fn deleted_status(api: &Api, t: &Target, last: &Value) -> Value {
    let rt = api.rt(t);
    let mut details = json!({
        "name": last["metadata"]["name"],
        "kind": rt.plural,
        "uid": last["metadata"]["uid"],
    });
    if !rt.group.is_empty() {
        details["group"] = json!(rt.group);
    }
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    })
}

/// Parses `/api/v1/...` or `/apis/{group}/{version}/...` into a target:
/// `[namespaces/{ns}/]{plural}[/{name}[/status]]`.
pub(crate) fn route(resources: &Resources, path: &str) -> Result<Target, ApiError> {
    let segs: Vec<String> = path
        .trim_matches('/')
        .split('/')
        .map(decode_segment)
        .collect();
    let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
    let (group, version, rest) = match segs.as_slice() {
        ["api", "v1", rest @ ..] => ("", "v1", rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return Err(ApiError::no_route()),
    };
    let namespaced = match rest {
        ["namespaces", ns, plural, tail @ ..] => resources
            .by_path(group, version, plural)
            .filter(|&id| resources.get(id).namespaced)
            .map(|id| (id, Some(ns.to_string()), tail)),
        _ => None,
    };
    let (res, ns, tail) = match (namespaced, rest) {
        (Some(found), _) => found,
        (None, [plural, tail @ ..]) => {
            let id = resources
                .by_path(group, version, plural)
                .ok_or_else(ApiError::no_route)?;
            (id, None, tail)
        }
        (None, []) => return Err(ApiError::no_route()),
    };
    let rt = resources.get(res);
    let (name, status) = match tail {
        [] => (None, false),
        [name] => (Some(name.to_string()), false),
        [name, "status"] if rt.has_status(version) => (Some(name.to_string()), true),
        _ => return Err(ApiError::no_route()),
    };
    if rt.namespaced && ns.is_none() && name.is_some() {
        // A namespaced object must be addressed in its namespace.
        return Err(ApiError::no_route());
    }
    Ok(Target {
        res,
        version: version.to_string(),
        ns,
        name,
        status,
    })
}

fn json_body(req: &Request) -> Result<Value, ApiError> {
    match req.content_type().as_deref() {
        None | Some("application/json") => {}
        Some(other) => {
            return Err(ApiError::unsupported_media_type(
                other,
                &["application/json"],
            ));
        }
    }
    serde_json::from_slice(&req.body)
        .map_err(|e| ApiError::bad_request(format!("the request body is not JSON: {e}")))
}

fn patch_kind(api: &Api, t: &Target, req: &Request) -> Result<PatchKind, ApiError> {
    let custom = api.rt(t).custom;
    let content_type = req.content_type().unwrap_or_default();
    let kind = match content_type.as_str() {
        "application/apply-patch+yaml" => PatchKind::Apply,
        "application/merge-patch+json" => PatchKind::Merge,
        "application/json-patch+json" => PatchKind::Json,
        // Custom resources have no strategic merge patch.
        "application/strategic-merge-patch+json" if !custom => PatchKind::Strategic,
        other => {
            let mut accepted = vec![
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/apply-patch+yaml",
            ];
            if !custom {
                accepted.push("application/strategic-merge-patch+json");
            }
            return Err(ApiError::unsupported_media_type(other, &accepted));
        }
    };
    let options =
        |errors: &[FieldError]| ApiError::invalid("meta.k8s.io", "PatchOptions", "", errors);
    let manager = req.param("fieldManager").unwrap_or("");
    if kind == PatchKind::Apply && manager.is_empty() {
        return Err(options(&[FieldError::required(
            "fieldManager",
            "is required for apply patch",
        )]));
    }
    if kind != PatchKind::Apply && req.param("force").is_some() {
        return Err(options(&[FieldError::forbidden(
            "force",
            "may not be specified for non-apply patch",
        )]));
    }
    Ok(kind)
}

/// `watch=true|1` (or `false|0`).
fn is_watch(req: &Request) -> Result<bool, ApiError> {
    bool_param(req, "watch")
}

fn bool_param(req: &Request, name: &str) -> Result<bool, ApiError> {
    match req.param(name) {
        None | Some("" | "false" | "0") => Ok(false),
        Some("true" | "1") => Ok(true),
        Some(other) => Err(ApiError::bad_request(format!(
            "{name}: invalid boolean {other:?}"
        ))),
    }
}

fn selectors(req: &Request) -> Result<Selectors, ApiError> {
    Ok(Selectors {
        labels: LabelSelector::parse(req.param("labelSelector").unwrap_or(""))
            .map_err(ApiError::bad_request)?,
        fields: FieldSelector::parse(req.param("fieldSelector").unwrap_or(""))
            .map_err(ApiError::bad_request)?,
    })
}

fn parse_rv(text: &str) -> Result<u64, ApiError> {
    text.parse()
        .map_err(|_| ApiError::bad_request(format!("invalid resource version {text:?}")))
}

fn list_options_invalid(errors: &[FieldError]) -> ApiError {
    ApiError::invalid("meta.k8s.io", "ListOptions", "", errors)
}

fn list_query(req: &Request) -> Result<ListQuery, ApiError> {
    let rv = req.param("resourceVersion").unwrap_or("");
    let rv_match = req.param("resourceVersionMatch").unwrap_or("");
    let token = req.param("continue").unwrap_or("");
    let mut errors = Vec::new();
    if !rv_match.is_empty() {
        if rv.is_empty() {
            errors.push(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if !token.is_empty() {
            errors.push(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        if rv_match != "Exact" && rv_match != "NotOlderThan" {
            errors.push(FieldError::not_supported(
                "resourceVersionMatch",
                rv_match,
                &["Exact", "NotOlderThan", ""],
            ));
        }
        if rv_match == "Exact" && rv == "0" {
            errors.push(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
    }
    if req.param("sendInitialEvents").is_some() {
        errors.push(FieldError::forbidden(
            "sendInitialEvents",
            "sendInitialEvents is forbidden for list",
        ));
    }
    if !errors.is_empty() {
        return Err(list_options_invalid(&errors));
    }
    if !token.is_empty() && !rv.is_empty() && rv != "0" {
        return Err(ApiError::bad_request(
            "specifying resource version is not allowed when using continue",
        ));
    }
    let at = match (rv, rv_match) {
        ("" | "0", _) => ListAt::Latest,
        (n, "Exact") => ListAt::Exact(parse_rv(n)?),
        (n, _) => ListAt::NotOlderThan(parse_rv(n)?),
    };
    let limit = match req.param("limit").unwrap_or("") {
        "" | "0" => None,
        n => Some(
            n.parse::<usize>()
                .map_err(|_| ApiError::bad_request(format!("invalid limit {n:?}")))?,
        ),
    };
    let resume = match token {
        "" => None,
        t => Some(Continue::decode(t)?),
    };
    Ok(ListQuery {
        selectors: selectors(req)?,
        limit,
        resume,
        at,
    })
}

/// Validates a watch's options. `sendInitialEvents` is refused as by an
/// API server without the WatchList feature.
fn watch_spec(api: &Api, target: Target, req: &Request) -> Result<WatchSpec, ApiError> {
    let rv_match = req.param("resourceVersionMatch").unwrap_or("");
    let initial_events = req.param("sendInitialEvents").is_some();
    let mut errors = Vec::new();
    if initial_events {
        if rv_match != "NotOlderThan" {
            errors.push(FieldError::forbidden(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        errors.push(FieldError::forbidden(
            "sendInitialEvents",
            "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
        ));
    }
    if !rv_match.is_empty() {
        if !initial_events {
            errors.push(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ));
        }
        if rv_match != "NotOlderThan" {
            errors.push(FieldError::not_supported(
                "resourceVersionMatch",
                rv_match,
                &["NotOlderThan"],
            ));
        }
    }
    if !errors.is_empty() {
        return Err(list_options_invalid(&errors));
    }
    let start = match req.param("resourceVersion").unwrap_or("") {
        "" | "0" => Start::Now,
        n => {
            let asked = parse_rv(n)?;
            match api.store.check_version(asked) {
                Ok(()) => Start::After(asked),
                Err(AtVersion::Expired(oldest)) => Start::Expired { asked, oldest },
                Err(AtVersion::TooLarge(current)) => {
                    return Err(ApiError::timeout(format!(
                        "Too large resource version: {asked}, current: {current}"
                    )))
                }
            }
        }
    };
    // As upstream, no timeout (or 0) means the server's own.
    let timeout = match req.param("timeoutSeconds").unwrap_or("") {
        "" | "0" => DEFAULT_WATCH_TIMEOUT,
        n => Duration::from_secs(
            n.parse()
                .map_err(|_| ApiError::bad_request(format!("invalid timeoutSeconds {n:?}")))?,
        ),
    };
    Ok(WatchSpec {
        target,
        selectors: selectors(req)?,
        start,
        timeout,
        bookmarks: bool_param(req, "allowWatchBookmarks")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube_api::resources::{builtins, from_crd};

    fn resources() -> Resources {
        let crd = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
spec:
  group: example.io
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - {name: v1, served: true, subresources: {status: {}}}
  - {name: v2, served: false}
"#;
        let mut r = Resources::new(builtins());
        r.add(from_crd(crd).expect("crd"));
        r
    }

    #[test]
    fn routes() {
        let r = resources();
        let t = route(&r, "/api/v1/namespaces/a/configmaps/b").expect("configmap");
        assert_eq!(
            (t.ns.as_deref(), t.name.as_deref(), t.status),
            (Some("a"), Some("b"), false)
        );
        let t = route(&r, "/api/v1/namespaces/a/status").expect("namespace status");
        assert_eq!(r.get(t.res).kind, "Namespace");
        assert!(t.status);
        let t = route(&r, "/apis/example.io/v1/widgets").expect("all namespaces");
        assert_eq!((t.ns, t.name), (None, None));
        assert!(
            route(&r, "/apis/example.io/v2/widgets").is_err(),
            "not served"
        );
        assert!(
            route(&r, "/apis/example.io/v1/widgets/x").is_err(),
            "no namespace"
        );
        assert!(route(&r, "/api/v1/namespaces/a/configmaps/b/status").is_err());
        assert!(route(&r, "/apis/coordination.k8s.io/v1/namespaces/a/leases/l").is_ok());
        assert!(route(
            &r,
            "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/w"
        )
        .is_ok());
    }
}
