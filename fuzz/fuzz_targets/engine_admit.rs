//! The component's whole request path, offline: the input as an
//! AdmissionReview body through `engine::PolicySet::review` on every
//! route, and as the `request` of one judged by `engine::PolicySet::admit`
//! in both phases
//! against the sample policies (matching, image extraction, CEL on the
//! request's objects; verifications fail fast on the offline transport),
//! and the same object through `evaluate` as `ivpol apply` would.
#![no_main]

use std::sync::{Arc, OnceLock};

use ivpol_guest::engine::review::{Namespaces, Route};
use ivpol_guest::engine::{Mode, Phase, PolicySet, Scope};
use ivpol_guest::oci::transport::Offline;
use ivpol_guest::policy::SourceDocument;
use libfuzzer_sys::fuzz_target;

macro_rules! sources {
    ($($path:literal),* $(,)?) => {
        [$(SourceDocument {
            source: $path.into(),
            content: include_str!(concat!("../../", $path)).into(),
        }),*]
    };
}

fn policies() -> &'static PolicySet {
    static P: OnceLock<PolicySet> = OnceLock::new();
    P.get_or_init(|| {
        let set = PolicySet::load(&sources![
            "policies/allowed-registries.yaml",
            "policies/no-latest-warn.yaml",
            "policies/require-digest-warn.yaml",
            "policies/require-digest.yaml",
            "policies/verify-cosign-key.yaml",
            "policies/verify-cosign-keyless.yaml",
            "policies/verify-notary-sbom.yaml",
            "policies/verify-slsa-provenance.yaml",
            "tests/examples/pin/pin-local.yaml",
            "tests/examples/verify/verify-local-key.yaml",
        ]);
        assert!(set.diagnostics().is_empty(), "{:?}", set.diagnostics());
        set
    })
}

const NAMESPACE: &str =
    r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default","labels":{"team":"a"}}}"#;

/// Every namespace is `default` with a team label.
struct EveryNamespace;

impl Namespaces for EveryNamespace {
    fn get(&self, _: &str) -> Option<String> {
        Some(NAMESPACE.to_string())
    }
}

fuzz_target!(|data: &[u8]| {
    let set = policies();
    for phase in [Phase::Validate, Phase::Mutate] {
        for namespaced in [false, true] {
            let route = Route {
                phase,
                namespaced,
                names: Vec::new(),
                trapped: Vec::new(),
            };
            let _ = set.review(&route, data, &EveryNamespace, Arc::new(Offline));
        }
    }
    let Ok(request) = std::str::from_utf8(data) else {
        return;
    };
    for phase in [Phase::Validate, Phase::Mutate] {
        let _ = set.admit(
            phase,
            &Scope::Cluster,
            &[],
            request,
            Some(NAMESPACE),
            Arc::new(Offline),
        );
    }
    // The request's object as a resource file (`ivpol apply`).
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(request) {
        if let Some(object) = v.get("object").filter(|o| o.is_object()) {
            let _ = set.evaluate(
                &object.to_string(),
                "CREATE",
                None,
                Mode::Cli,
                Arc::new(Offline),
            );
        }
    }
});
