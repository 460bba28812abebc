//! The AdmissionRequest as the engine reads it (`admission.k8s.io/v1`).
//!
//! Only the fields matching and CEL need are typed; the whole request's JSON
//! text is the CEL variable `request`, kept, or cut from the AdmissionReview
//! when an expression first reads it.

use std::sync::{Arc, OnceLock};

mod object;
pub mod patch;
pub mod synthetic;

pub use object::Object;

use crate::matching::RequestAttrs;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::BTreeMap;

/// A resource type as an AdmissionRequest names it (`resource`,
/// `requestResource`).
#[derive(Debug, Clone, Deserialize, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct GroupVersionResource {
    /// The API group, empty for the core group.
    #[serde(default)]
    pub group: String,
    /// The API version.
    #[serde(default)]
    pub version: String,
    /// The resource's plural name, such as `pods`.
    #[serde(default)]
    pub resource: String,
}

/// An object's kind as an AdmissionRequest names it (`kind`).
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct GroupVersionKind {
    /// The API group, empty for the core group.
    #[serde(default)]
    pub group: String,
    /// The API version.
    #[serde(default)]
    pub version: String,
    /// The kind, such as `Pod`.
    #[serde(default)]
    pub kind: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawRequest<'a> {
    #[serde(default)]
    uid: String,
    kind: Option<GroupVersionKind>,
    resource: Option<GroupVersionResource>,
    #[serde(default)]
    sub_resource: String,
    // Borrowed: nearly always the same as `resource`, then never kept.
    #[serde(borrow)]
    request_resource: Option<RawResource<'a>>,
    #[serde(borrow)]
    request_sub_resource: Option<Cow<'a, str>>,
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: String,
    #[serde(borrow)]
    operation: Option<Cow<'a, str>>,
    // Kept as text: only what every request needs of them is read
    // (`Object`), and the rest when something reads them whole.
    #[serde(borrow, default)]
    object: Option<&'a RawValue>,
    #[serde(borrow, default)]
    old_object: Option<&'a RawValue>,
    dry_run: Option<bool>,
}

/// A [`GroupVersionResource`] as read from the review, borrowed from its
/// text where it has no escapes.
#[derive(Debug, Clone, Deserialize)]
struct RawResource<'a> {
    #[serde(borrow, default)]
    group: Cow<'a, str>,
    #[serde(borrow, default)]
    version: Cow<'a, str>,
    #[serde(borrow, default)]
    resource: Cow<'a, str>,
}

impl RawResource<'_> {
    fn is(&self, r: &GroupVersionResource) -> bool {
        self.group == r.group && self.version == r.version && self.resource == r.resource
    }

    fn owned(&self) -> GroupVersionResource {
        GroupVersionResource {
            group: self.group.to_string(),
            version: self.version.to_string(),
            resource: self.resource.to_string(),
        }
    }
}

/// A parsed AdmissionRequest.
#[derive(Debug, Clone)]
pub struct Request {
    /// `uid`: the request's identifier, echoed in the response.
    pub uid: String,
    /// `kind`: the kind of the object; empty when absent.
    pub kind: GroupVersionKind,
    /// `resource`: the resource being requested.
    pub resource: GroupVersionResource,
    /// `subResource`: the subresource requested, empty for none.
    pub sub_resource: String,
    /// `requestResource`: the resource as originally requested, before any
    /// conversion by the API server; none when it is `resource` (and
    /// `requestSubResource`, if any, is `subResource`).
    pub request_resource: Option<GroupVersionResource>,
    /// `requestSubResource`: the subresource as originally requested; none
    /// when `requestResource` is.
    pub request_sub_resource: Option<String>,
    /// `name`: the object's name, empty when not yet known.
    pub name: String,
    /// `namespace`: the object's namespace, empty for a cluster-scoped one.
    pub namespace: String,
    /// `operation`: what is being done to the object.
    pub operation: Operation,
    /// `object`; `null` when absent (DELETE).
    pub object: Object,
    /// `oldObject`; `null` when absent (CREATE).
    pub old_object: Object,
    /// The request as received (valid JSON), for the CEL variable
    /// `request`, which is only parsed again if an expression reads it
    /// ([`Request::raw`]).
    raw: RawText,
    /// `dryRun`: nothing the request does will be persisted.
    pub dry_run: bool,
}

/// `request.operation`: the admission operations of Kubernetes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// `CREATE`: the object is being created.
    Create,
    /// `UPDATE`: the object is being changed.
    Update,
    /// `DELETE`: the object is being deleted.
    Delete,
    /// `CONNECT`: a connection to the object is being made (`exec`, `attach`, a
    /// proxy).
    Connect,
}

impl Operation {
    /// The operation as an AdmissionRequest spells it (`CREATE`, ...).
    pub fn parse(name: &str) -> Option<Operation> {
        match name {
            "CREATE" => Some(Operation::Create),
            "UPDATE" => Some(Operation::Update),
            "DELETE" => Some(Operation::Delete),
            "CONNECT" => Some(Operation::Connect),
            _ => None,
        }
    }

    /// Its name in an AdmissionRequest.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

/// Why the `request` of an AdmissionReview cannot be judged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// Not JSON.
    #[error("request is not valid JSON: {0}")]
    NotJson(String),
    /// JSON, but not the AdmissionRequest shape.
    #[error("request is not an AdmissionRequest: {0}")]
    NotAdmissionRequest(String),
    /// A field the judgement needs is absent.
    #[error("request.{0} is required")]
    Missing(&'static str),
    /// An operation Kubernetes does not send.
    #[error("request.operation {0:?} is not one of CREATE, UPDATE, DELETE, CONNECT")]
    Operation(String),
    /// `object` or `oldObject` that is not an object.
    #[error("request.{0} must be an object")]
    NotAnObject(&'static str),
}

/// The request's text: known, or cut from the AdmissionReview it came in
/// on when something first reads it ([`RawText::get`]). Cheap to clone.
#[derive(Debug, Clone)]
pub struct RawText(Text);

#[derive(Debug, Clone)]
enum Text {
    Known(Arc<str>),
    InReview(Arc<InReview>),
}

impl RawText {
    /// The text (valid JSON).
    pub fn get(&self) -> Arc<str> {
        match &self.0 {
            Text::Known(text) => text.clone(),
            Text::InReview(review) => (review.request)
                .get_or_init(|| request_text(&review.body))
                .clone(),
        }
    }
}

#[derive(Debug)]
struct InReview {
    body: Arc<str>,
    request: OnceLock<Arc<str>>,
}

/// An AdmissionReview with its request read in the same pass.
#[derive(Deserialize)]
struct Review<'a> {
    #[serde(default, rename = "apiVersion")]
    api_version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(borrow, default)]
    request: Option<MapOnly<RawRequest<'a>>>,
}

/// A review's `request`, as the envelope's `request`: only a JSON object
/// (serde's derived structs would also take an array of the fields).
struct MapOnly<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for MapOnly<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Fields<T> {
            type Value = MapOnly<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<MapOnly<T>, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(MapOnly)
            }
        }
        d.deserialize_map(Fields(std::marker::PhantomData))
    }
}

/// The `request` text of the AdmissionReview `body`, which was read as one
/// before; empty (not JSON, so `request` is unbound and an expression
/// reading it fails) if it somehow no longer reads.
fn request_text(body: &str) -> Arc<str> {
    #[derive(Deserialize)]
    struct Envelope<'a> {
        #[serde(borrow, default)]
        request: Option<&'a RawValue>,
    }
    let text = serde_json::from_str::<Envelope>(body)
        .ok()
        .and_then(|e| e.request)
        .map_or("", RawValue::get);
    Arc::from(text)
}

impl Request {
    /// The request of the AdmissionReview `body`, read in the same pass as
    /// the envelope (the request's text is cut from the body only if
    /// something reads it). None unless `body` is an `admission.k8s.io/v1`
    /// AdmissionReview whose request is an object of the AdmissionRequest's
    /// shape: then the envelope and [`Request::parse`] of its `request`
    /// say why, their messages placed in the request's own text.
    pub fn from_review(body: &str) -> Option<Result<Request, RequestError>> {
        let review: Review = serde_json::from_str(body).ok()?;
        let v1 = review.kind.as_deref() == Some("AdmissionReview")
            && review.api_version.as_deref() == Some("admission.k8s.io/v1");
        let MapOnly(parsed) = review.request.filter(|_| v1)?;
        let raw = RawText(Text::InReview(Arc::new(InReview {
            body: Arc::from(body),
            request: OnceLock::new(),
        })));
        Some(Request::read(parsed, raw))
    }

    /// Parses the `request` field of an AdmissionReview.
    pub fn parse(json: &str) -> Result<Request, RequestError> {
        let parsed: RawRequest = serde_json::from_str(json).map_err(|e| match e.is_data() {
            true => RequestError::NotAdmissionRequest(e.to_string()),
            false => RequestError::NotJson(e.to_string()),
        })?;
        Request::read(parsed, RawText(Text::Known(Arc::from(json))))
    }

    /// The request's text, for the CEL variable `request`.
    pub fn raw(&self) -> &RawText {
        &self.raw
    }

    /// The request from its fields as read.
    fn read(parsed: RawRequest<'_>, raw: RawText) -> Result<Request, RequestError> {
        let resource = parsed.resource.ok_or(RequestError::Missing("resource"))?;
        let named = parsed.operation.ok_or(RequestError::Missing("operation"))?;
        let operation =
            Operation::parse(&named).ok_or_else(|| RequestError::Operation(named.into_owned()))?;
        let same_sub =
            (parsed.request_sub_resource.as_deref()).is_none_or(|sub| sub == parsed.sub_resource);
        let (request_resource, request_sub_resource) = match &parsed.request_resource {
            Some(rr) if same_sub && rr.is(&resource) => (None, None),
            None => (None, None),
            Some(rr) => (
                Some(rr.owned()),
                parsed.request_sub_resource.map(Cow::into_owned),
            ),
        };
        let object = |field, raw: Option<&RawValue>| {
            let text = raw.map_or("null", RawValue::get);
            if !(text == "null" || text.starts_with('{')) {
                return Err(RequestError::NotAnObject(field));
            }
            Object::read(text, &resource.resource)
                .map_err(|e| RequestError::NotAdmissionRequest(e.to_string()))
        };
        let (object, old_object) = (
            object("object", parsed.object)?,
            object("oldObject", parsed.old_object)?,
        );
        Ok(Request {
            uid: parsed.uid,
            kind: parsed.kind.unwrap_or_default(),
            resource,
            sub_resource: parsed.sub_resource,
            request_resource,
            request_sub_resource,
            name: parsed.name,
            namespace: parsed.namespace,
            operation,
            object,
            old_object,
            raw,
            dry_run: parsed.dry_run.unwrap_or(false),
        })
    }

    /// `object`, or `oldObject` when there is none (DELETE), as Kyverno does.
    pub fn resource_object(&self) -> &Object {
        if self.object.is_null() {
            &self.old_object
        } else {
            &self.object
        }
    }

    /// The attributes `resourceRules` match against.
    pub fn attrs(&self) -> RequestAttrs {
        RequestAttrs {
            group: self.resource.group.clone(),
            version: self.resource.version.clone(),
            resource: self.resource.resource.clone(),
            subresource: self.sub_resource.clone(),
            operation: self.operation.as_str().to_string(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }

    /// The attributes of the resource as originally requested, when it
    /// differs (the API server sends it whether or not it does: nearly
    /// always the same resource, which matching need not try twice).
    pub fn request_attrs(&self) -> Option<RequestAttrs> {
        let rr = self.request_resource.as_ref()?;
        let sub = self
            .request_sub_resource
            .as_ref()
            .unwrap_or(&self.sub_resource);
        if *rr == self.resource && *sub == self.sub_resource {
            return None;
        }
        let mut attrs = self.attrs();
        attrs.group = rr.group.clone();
        attrs.version = rr.version.clone();
        attrs.resource = rr.resource.clone();
        if let Some(sub) = &self.request_sub_resource {
            attrs.subresource = sub.clone();
        }
        Some(attrs)
    }

    /// Whether the request is for a Namespace itself (core `namespaces`, no
    /// subresource).
    pub fn is_namespace_object(&self) -> bool {
        self.resource.group.is_empty()
            && self.resource.resource == "namespaces"
            && self.sub_resource.is_empty()
    }
}

/// `metadata.labels` of an object, empty when absent or malformed.
pub fn labels_of(object: &serde_json::Value) -> Option<BTreeMap<String, String>> {
    if object.is_null() {
        return None;
    }
    let labels = object
        .pointer("/metadata/labels")
        .and_then(|l| l.as_object());
    Some(
        labels
            .map(|m| {
                ivpol_refs::sort::map(
                    m.iter()
                        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string()))),
                )
            })
            .unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod_request() -> serde_json::Value {
        json!({
            "uid": "u1",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "namespace": "default",
            "name": "p",
            "operation": "CREATE",
            "object": {"metadata": {"name": "p", "labels": {"a": "b"}}}
        })
    }

    #[test]
    fn parses_a_pod_create() {
        let r = Request::parse(&pod_request().to_string()).expect("parses");
        assert_eq!(r.uid, "u1");
        assert_eq!(r.attrs().resource, "pods");
        assert_eq!(
            r.object.labels().and_then(|l| l.get("a").cloned()),
            Some("b".into())
        );
        assert!(r.old_object.is_null());
    }

    #[test]
    fn the_requested_resource_counts_only_when_it_differs() {
        let with = |resource: serde_json::Value, sub: Option<&str>| {
            let mut r = pod_request();
            r["requestResource"] = resource;
            if let Some(sub) = sub {
                r["requestSubResource"] = json!(sub);
            }
            Request::parse(&r.to_string()).expect("parses")
        };
        let pods = json!({"group": "", "version": "v1", "resource": "pods"});
        assert_eq!(with(pods.clone(), None).request_attrs(), None);
        assert_eq!(with(pods.clone(), Some("")).request_attrs(), None);
        let status = with(pods, Some("status")).request_attrs();
        assert_eq!(status.map(|a| a.subresource).as_deref(), Some("status"));
        let beta = json!({"group": "", "version": "v1beta1", "resource": "pods"});
        let converted = with(beta, None).request_attrs().expect("differs");
        assert_eq!(
            (converted.version.as_str(), converted.name.as_str()),
            ("v1beta1", "p")
        );
    }

    /// Fields read in place are read as their escapes say: the same
    /// resource and operation written with escapes are the same ones.
    #[test]
    fn escaped_fields_read_as_their_text() {
        let mut r = pod_request();
        r["requestResource"] = json!({"group": "", "version": "v1", "resource": "pods"});
        let plain = r.to_string();
        let escaped = plain
            .replace(r#""resource":"pods""#, r#""resource":"p\u006fds""#)
            .replace(r#""CREATE""#, r#""\u0043REATE""#);
        assert_ne!(plain, escaped);
        let read = Request::parse(&escaped).expect("parses");
        assert_eq!(read.operation, Operation::Create);
        assert_eq!(read.request_attrs(), None);
        r["requestResource"]["version"] = json!("v1beta1");
        let other = r.to_string().replace("v1beta1", r"v1be\u0074a1");
        let converted = Request::parse(&other).expect("parses").request_attrs();
        assert_eq!(converted.map(|a| a.version).as_deref(), Some("v1beta1"));
        let bad = escaped.replace(r#""\u0043REATE""#, r#""\u0043RE\tATE""#);
        assert_eq!(
            Request::parse(&bad).map(|_| ()),
            Err(RequestError::Operation("CRE\tATE".into()))
        );
    }

    #[test]
    fn rejects_bad_requests() {
        assert!(matches!(
            Request::parse("not json"),
            Err(RequestError::NotJson(_))
        ));
        assert!(matches!(
            Request::parse("[1]"),
            Err(RequestError::NotAdmissionRequest(_))
        ));
        let mut r = pod_request();
        r["operation"] = json!("PATCH");
        assert_eq!(
            Request::parse(&r.to_string()).unwrap_err(),
            RequestError::Operation("PATCH".into())
        );
        let mut r = pod_request();
        r.as_object_mut().map(|o| o.remove("resource"));
        assert_eq!(
            Request::parse(&r.to_string()).unwrap_err(),
            RequestError::Missing("resource")
        );
        let mut r = pod_request();
        r["object"] = json!("str");
        assert_eq!(
            Request::parse(&r.to_string()).unwrap_err(),
            RequestError::NotAnObject("object")
        );
        // The text users see in the denial.
        assert_eq!(
            RequestError::Missing("resource").to_string(),
            "request.resource is required"
        );
    }

    /// An object nested past the JSON parser's depth limit is refused
    /// with the request, so an object that reads is one whose tree parses.
    #[test]
    fn an_object_nested_past_the_depth_limit_is_refused() {
        let deep = format!("{}1{}", "{\"a\":".repeat(200), "}".repeat(200));
        let text = pod_request()
            .to_string()
            .replace("\"object\":{", &format!("\"object\":{{\"deep\":{deep},"));
        assert!(matches!(
            Request::parse(&text),
            Err(RequestError::NotAdmissionRequest(_) | RequestError::NotJson(_))
        ));
        // Around the limit: whatever reads has its tree.
        let mut read = 0;
        for levels in 100..140 {
            let nested = format!("{}1{}", "{\"a\":".repeat(levels), "}".repeat(levels));
            let text = pod_request()
                .to_string()
                .replace("\"object\":{", &format!("\"object\":{{\"deep\":{nested},"));
            if let Ok(req) = Request::parse(&text) {
                assert!(
                    req.object.tree()["deep"]["a"].is_object(),
                    "{levels} levels"
                );
                read += 1;
            }
        }
        assert!((1..40).contains(&read), "{read} of 40 read");
    }

    #[test]
    fn delete_uses_old_object() {
        let mut r = pod_request();
        r["operation"] = json!("DELETE");
        r["oldObject"] = r["object"].clone();
        r["object"] = serde_json::Value::Null;
        let req = Request::parse(&r.to_string()).expect("parses");
        assert_eq!(req.resource_object().tree()["metadata"]["name"], "p");
    }

    fn review(request: &str) -> String {
        format!(
            r#"{{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
                "request": {request}, "response": null}}"#
        )
    }

    /// What one pass reads of a review is what its request's own parse
    /// reads, the request's text included, cut from the body as it came.
    #[test]
    fn a_review_reads_as_its_request_does() {
        let mut r = pod_request();
        r["oldObject"] = json!({"metadata": {"uid": "o"}});
        let request = serde_json::to_string_pretty(&r).expect("text");
        let one = Request::from_review(&review(&request))
            .expect("a review")
            .expect("reads");
        let two = Request::parse(&request).expect("parses");
        assert_eq!(
            format!("{one:?}").split("raw:").next(),
            format!("{two:?}").split("raw:").next()
        );
        assert_eq!(one.object, two.object);
        assert_eq!(one.old_object.uid(), "o");
        assert_eq!(one.object.image_lists(), two.object.image_lists());
        assert_eq!(&*one.raw().get(), request.as_str());
        assert_eq!(&*two.raw().get(), request.as_str());
    }

    /// Anything but a v1 AdmissionReview whose request is an object of the
    /// AdmissionRequest's shape is left to the envelope and `parse`, whose
    /// messages place an error in the request's own text.
    #[test]
    fn a_review_that_does_not_read_is_left_to_the_envelope() {
        let request = pod_request().to_string();
        let mut bad_types = pod_request();
        bad_types["name"] = json!(7);
        // The request's fields as an array, which serde's derived structs
        // read; the envelope takes only an object.
        let array = r#"["u1", null, {"group": "", "version": "v1", "resource": "pods"}, "",
            null, null, "p", "default", "CREATE", {"metadata": {}}, null, null]"#;
        assert!(serde_json::from_str::<RawRequest>(array).is_ok());
        for body in [
            "not json".to_string(),
            review(&request).replace("AdmissionReview", "Other"),
            review(&request).replace("admission.k8s.io/v1", "admission.k8s.io/v1beta1"),
            review("null"),
            review("\"text\""),
            review(array),
            review(&bad_types.to_string()),
            r#"{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1"}"#.to_string(),
        ] {
            assert!(Request::from_review(&body).is_none(), "{body}");
        }
        // The request's own errors are parse's.
        let mut no_resource = pod_request();
        no_resource
            .as_object_mut()
            .expect("object")
            .remove("resource");
        let mut bad_operation = pod_request();
        bad_operation["operation"] = json!("PATCH");
        let mut not_an_object = pod_request();
        not_an_object["object"] = json!([1]);
        for r in [no_resource, bad_operation, not_an_object] {
            let one = Request::from_review(&review(&r.to_string())).expect("a review");
            assert_eq!(
                one.unwrap_err(),
                Request::parse(&r.to_string()).unwrap_err()
            );
        }
    }
}
