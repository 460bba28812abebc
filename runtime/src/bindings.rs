//! Host bindings for the `engine-contract` world (`wit/admission.wit`):
//! the component's `policy-module` world without its WASI imports, which
//! the host links from wasmtime-wasi and wasmtime-wasi-http.

wasmtime::component::bindgen!({
    world: "engine-contract",
    path: "../wit",
    imports: { default: async },
    exports: { default: async },
});

use ivpol::admission::types::{Actions, AttestorKind, Operation, PolicyKind, Unjudgeable};

impl Operation {
    /// The operation as an AdmissionRequest spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }

    /// The operation an AdmissionRequest (or a Kyverno test file) names.
    pub fn parse(name: &str) -> Option<Operation> {
        [
            Operation::Create,
            Operation::Update,
            Operation::Delete,
            Operation::Connect,
        ]
        .into_iter()
        .find(|op| op.as_str() == name)
    }
}

impl PolicyKind {
    /// The policy's `kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyKind::ImageValidatingPolicy => "ImageValidatingPolicy",
            PolicyKind::NamespacedImageValidatingPolicy => "NamespacedImageValidatingPolicy",
        }
    }
}

impl AttestorKind {
    /// The attestor's kind as a policy names it, lower-cased (metrics and
    /// the decision log).
    pub fn as_str(self) -> &'static str {
        match self {
            AttestorKind::Cosign => "cosign",
            AttestorKind::Notary => "notary",
        }
    }
}

impl Actions {
    /// The actions as `spec.validationActions` names them, in Kyverno's
    /// order (Deny, Warn, Audit).
    pub fn names(self) -> Vec<&'static str> {
        [
            (Actions::DENY, "Deny"),
            (Actions::WARN, "Warn"),
            (Actions::AUDIT, "Audit"),
        ]
        .into_iter()
        .filter(|(flag, _)| self.contains(*flag))
        .map(|(_, name)| name)
        .collect()
    }
}

impl Unjudgeable {
    /// Why, in words (bindgen's `Display` is the `Debug` form).
    pub fn message(&self) -> &str {
        match self {
            Unjudgeable::NotJson(why)
            | Unjudgeable::NotAdmissionReview(why)
            | Unjudgeable::MalformedRequest(why)
            | Unjudgeable::UnreadableNamespace(why) => why,
        }
    }
}
