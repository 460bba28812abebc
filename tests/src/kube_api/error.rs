//! Failed requests as the API server words them: `metav1.Status` bodies
//! with the reason, code, message and details it gives.

use super::resources::ResourceType;
use serde_json::{json, Value};

/// A failed request: the `Status` object the server answers with.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The HTTP status code, also the Status' `code`.
    pub code: u16,
    /// `NotFound`, `AlreadyExists`, `Conflict`, `Expired`, `Invalid`, ...
    pub reason: String,
    pub message: String,
    /// The Status' `details`, if any.
    pub details: Option<Value>,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for ApiError {}

/// One entry of an `Invalid` error's `details.causes`.
#[derive(Debug, Clone)]
pub(crate) struct FieldError {
    field: String,
    reason: &'static str,
    text: String,
}

impl FieldError {
    pub(crate) fn required(field: &str, detail: &str) -> FieldError {
        FieldError {
            field: field.into(),
            reason: "FieldValueRequired",
            text: format!("Required value: {detail}"),
        }
    }

    pub(crate) fn forbidden(field: &str, detail: &str) -> FieldError {
        FieldError {
            field: field.into(),
            reason: "FieldValueForbidden",
            text: format!("Forbidden: {detail}"),
        }
    }

    pub(crate) fn invalid(field: &str, value: &str, detail: &str) -> FieldError {
        FieldError {
            field: field.into(),
            reason: "FieldValueInvalid",
            text: format!("Invalid value: {value}: {detail}"),
        }
    }

    pub(crate) fn not_supported(field: &str, value: &str, supported: &[&str]) -> FieldError {
        let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        FieldError {
            field: field.into(),
            reason: "FieldValueNotSupported",
            text: format!(
                "Unsupported value: {value:?}: supported values: {}",
                list.join(", ")
            ),
        }
    }

    fn line(&self) -> String {
        format!("{}: {}", self.field, self.text)
    }
}

impl ApiError {
    pub(crate) fn new(code: u16, reason: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            reason: reason.into(),
            message: message.into(),
            details: None,
        }
    }

    fn with_details(mut self, details: Value) -> ApiError {
        self.details = Some(details);
        self
    }

    /// `details` naming an object of `res`, as in NotFound or Conflict.
    fn object_details(res: &ResourceType, name: &str) -> Value {
        let mut d = json!({"name": name, "kind": res.plural});
        if !res.group.is_empty() {
            d["group"] = json!(res.group);
        }
        d
    }

    pub(crate) fn not_found(res: &ResourceType, name: &str) -> ApiError {
        ApiError::new(
            404,
            "NotFound",
            format!("{} {name:?} not found", res.qualified()),
        )
        .with_details(ApiError::object_details(res, name))
    }

    /// A namespaced write into a namespace that does not exist.
    pub(crate) fn namespace_not_found(ns: &str) -> ApiError {
        ApiError::new(404, "NotFound", format!("namespaces {ns:?} not found"))
            .with_details(json!({"name": ns, "kind": "namespaces"}))
    }

    pub(crate) fn already_exists(res: &ResourceType, name: &str) -> ApiError {
        ApiError::new(
            409,
            "AlreadyExists",
            format!("{} {name:?} already exists", res.qualified()),
        )
        .with_details(ApiError::object_details(res, name))
    }

    /// A write whose `metadata.resourceVersion` is not the stored one.
    pub(crate) fn conflict(res: &ResourceType, name: &str) -> ApiError {
        ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} {name:?}: the object has been modified; \
                 please apply your changes to the latest version and try again",
                res.qualified()
            ),
        )
        .with_details(ApiError::object_details(res, name))
    }

    /// A delete whose precondition (`uid` or `resourceVersion`) failed.
    pub(crate) fn precondition(
        res: &ResourceType,
        name: &str,
        what: &str,
        wanted: &str,
        actual: &str,
    ) -> ApiError {
        ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} {name:?}: Precondition failed: \
                 {what} in precondition: {wanted}, {what} in object meta: {actual}",
                res.qualified()
            ),
        )
        .with_details(ApiError::object_details(res, name))
    }

    /// 410 Gone, reason `Expired`: a resource version older than the history kept.
    pub(crate) fn expired(message: impl Into<String>) -> ApiError {
        ApiError::new(410, "Expired", message)
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(400, "BadRequest", message)
    }

    /// 422 `Invalid` for `{kind}.{group} "name"`, one cause per field error.
    pub(crate) fn invalid(group: &str, kind: &str, name: &str, errors: &[FieldError]) -> ApiError {
        let qualified = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let lines: Vec<String> = errors.iter().map(FieldError::line).collect();
        let summary = match lines.as_slice() {
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        };
        let causes: Vec<Value> = errors
            .iter()
            .map(|e| json!({"reason": e.reason, "message": e.text, "field": e.field}))
            .collect();
        let mut details = json!({"name": name, "kind": kind, "causes": causes});
        if !group.is_empty() {
            details["group"] = json!(group);
        }
        ApiError::new(
            422,
            "Invalid",
            format!("{qualified} {name:?} is invalid: {summary}"),
        )
        .with_details(details)
    }

    /// A path naming no resource this server serves.
    pub(crate) fn no_route() -> ApiError {
        ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    pub(crate) fn method_not_allowed() -> ApiError {
        ApiError::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
    }

    pub(crate) fn unsupported_media_type(content_type: &str, accepted: &[&str]) -> ApiError {
        ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format ({content_type:?}) - \
                 accepted media types include: {}",
                accepted.join(", ")
            ),
        )
    }

    pub(crate) fn too_large(limit: usize) -> ApiError {
        ApiError::new(
            413,
            "RequestEntityTooLarge",
            format!("the request body is larger than {limit} bytes"),
        )
    }

    pub(crate) fn unauthorized() -> ApiError {
        ApiError::new(401, "Unauthorized", "Unauthorized")
    }

    pub(crate) fn timeout(message: impl Into<String>) -> ApiError {
        ApiError::new(504, "Timeout", message)
    }

    /// The `metav1.Status` body.
    pub fn status(&self) -> Value {
        let mut s = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            s["details"] = d.clone();
        }
        s
    }
}
