//! The policy-validation webhook (`POST /ivpol/policy-validate`): an
//! ImageValidatingPolicy, NamespacedImageValidatingPolicy or
//! PolicyException being created or updated is loaded exactly as the
//! policy set loads its documents (the same exception scope, the same
//! granted resources), and refused with the same diagnostics. A broken
//! policy is then caught at `kubectl apply`, as Kyverno's own policy
//! webhook catches it, instead of denying in its scope after a reload.

use super::review::{self, Answer, Subject, Unjudgeable};
use super::{PolicySet, Verdict};
use crate::admission::{Operation, Request, RequestError};
use crate::policy::{self, SourceDocument};

/// The kinds this webhook judges; any other object is admitted untouched.
const POLICY_KINDS: &[&str] = &[
    "ImageValidatingPolicy",
    "NamespacedImageValidatingPolicy",
    "PolicyException",
];

impl PolicySet {
    /// Judges the AdmissionReview `body` of a policy object: denied with
    /// every load diagnostic of the object, `; `-joined, when it would not
    /// load; admitted otherwise (and on DELETE or CONNECT, and for kinds
    /// that are not policies).
    pub fn review_policy(&self, body: &[u8]) -> Result<Answer, Unjudgeable> {
        let raw = review::envelope(review::utf8(body)?)?;
        let req = Request::parse(raw.get())?;
        if req.uid.is_empty() {
            return Err(RequestError::Missing("uid").into());
        }
        let subject = Subject::of(&req);
        let problems = match req.operation {
            Operation::Create | Operation::Update => self.problems(&req),
            Operation::Delete | Operation::Connect => Vec::new(),
        };
        let kind = req.object.tree().get("kind").and_then(|k| k.as_str());
        let verdict = Verdict {
            allowed: problems.is_empty(),
            message: (!problems.is_empty()).then(|| {
                format!(
                    "{} {} is invalid: {}",
                    kind.unwrap_or("policy"),
                    req.name,
                    problems.join("; ")
                )
            }),
            warnings: Vec::new(),
            patch: None,
            results: Vec::new(),
        };
        Ok(Answer {
            response: review::response(&req.uid, &verdict),
            subject,
            verdict: Some(verdict),
            reported: false,
        })
    }

    /// The load diagnostics of the request's object, if it is a policy.
    fn problems(&self, req: &Request) -> Vec<String> {
        let mut object = (**req.object.tree()).clone();
        let kind = object
            .get("kind")
            .and_then(|k| k.as_str())
            .unwrap_or_default()
            .to_string();
        if !POLICY_KINDS.contains(&kind.as_str()) {
            return Vec::new();
        }
        // The API server sets the namespace of a namespaced object it
        // admits; the request says it even where the object leaves it out.
        if !req.namespace.is_empty() {
            if let Some(meta) = object.get_mut("metadata").and_then(|m| m.as_object_mut()) {
                meta.entry("namespace")
                    .or_insert_with(|| req.namespace.clone().into());
            }
        }
        let source = SourceDocument {
            source: format!("admission:{kind}/{}", req.name),
            content: object.to_string(),
        };
        let loaded = policy::load_with(&[source], &self.options);
        loaded.diagnostics.into_iter().map(|d| d.message).collect()
    }
}
