//! The WIT glue: exports `ivpol:admission/engine` over the native engine.
//! The only wasm-specific code in the guest.

use crate::admission::Operation as EOperation;
use crate::engine::report::{self, Process};
use crate::engine::review::{self, Unjudgeable as EUnjudgeable};
use crate::engine::{self, Phase as EPhase, Status as EStatus};
use crate::oci::wasi_transport::WasiTransport;
use crate::policy::exception::ExceptionScope as EExceptionScope;
use crate::policy::PolicyKind as EPolicyKind;
use crate::policy::{Refused, SourceDocument};

wit_bindgen::generate!({
    world: "policy-module",
    path: "../wit",
    // The WASI interfaces the world imports are those of the `wasip2`
    // crate, which the transport calls (the same WASI 0.2.12 WIT).
    with: {
        "wasi:http/types@0.2.12": wasip2::http::types,
        "wasi:http/outgoing-handler@0.2.12": wasip2::http::outgoing_handler,
        "wasi:io/error@0.2.12": wasip2::io::error,
        "wasi:io/poll@0.2.12": wasip2::io::poll,
        "wasi:io/streams@0.2.12": wasip2::io::streams,
        "wasi:clocks/monotonic-clock@0.2.12": wasip2::clocks::monotonic_clock,
        "wasi:clocks/wall-clock@0.2.12": wasip2::clocks::wall_clock,
    },
});

use ivpol::admission::registry_credentials;

mod reports;

use crate::verify::standalone;
use crate::verify::{Reason as VReason, VerifyError};
use exports::ivpol::admission::engine::WebhookOptions;
use exports::ivpol::admission::engine::{Guest, GuestPolicySet};
use exports::ivpol::admission::notary::Descriptor;
use exports::ivpol::admission::sigstore::{ArtifactSignatures, Signer};
use ivpol::admission::types::{
    Actions, Answer, AttestorKind, CacheUse, Diagnostic, Document, ExceptionScope, FailureReply,
    LoadOptions, Operation, Phase, PolicyInfo, PolicyKind, PolicyResult, Reason, RejectedPolicy,
    ReportEntry, RequestHead, Route, Status, StatusQuery, Subject, Unjudgeable, Verdict,
    Verification, VerificationFailure,
};
use ivpol::admission::verification_cache::CredentialScope;

struct Component;

impl Guest for Component {
    type PolicySet = PolicySet;
}

/// The WIT resource: one compiled policy set per instance.
struct PolicySet(engine::PolicySet);

impl GuestPolicySet for PolicySet {
    fn new(documents: Vec<Document>, options: LoadOptions) -> Self {
        let mut sources = Vec::new();
        let mut refused = Vec::new();
        for d in documents {
            match d.refused {
                Some(reason) => refused.push(Refused {
                    source: d.source,
                    stub: d.content,
                    reason,
                }),
                None => sources.push(SourceDocument {
                    source: d.source,
                    content: d.content,
                }),
            }
        }
        let exceptions = match options.exceptions {
            ExceptionScope::None => EExceptionScope::None,
            ExceptionScope::Any => EExceptionScope::Any,
            ExceptionScope::Namespaces(n) => EExceptionScope::Namespaces(n),
        };
        let options = crate::policy::LoadOptions {
            exceptions,
            refused,
            ..Default::default()
        };
        let resources = std::sync::Arc::new(HostResources);
        let set = engine::PolicySet::load_with_resources(&sources, resources, options);
        let set = set.with_cache(std::sync::Arc::new(HostCache));
        PolicySet(set.with_keys(std::sync::Arc::new(HostKeys)))
    }

    fn diagnostics(&self) -> Vec<Diagnostic> {
        self.0
            .diagnostics()
            .iter()
            .map(|d| Diagnostic {
                source: d.source.clone(),
                document: d.document,
                policy: d.policy.clone(),
                message: d.message.clone(),
            })
            .collect()
    }

    fn policies(&self) -> Vec<PolicyInfo> {
        self.0
            .policies()
            .map(|p| PolicyInfo {
                name: p.name.clone(),
                namespace: p.namespace.clone(),
                kind: policy_kind(p.kind),
                timeout_seconds: p.spec.timeout_seconds(),
                registry_secrets: p.registry_secrets(),
                kms_keys: p.kms_keys(),
            })
            .collect()
    }

    fn rejected(&self) -> Vec<RejectedPolicy> {
        self.0
            .rejected()
            .iter()
            .map(|r| RejectedPolicy {
                name: r.name.clone(),
                namespace: r.namespace.clone(),
                kind: policy_kind(r.kind),
                message: r.message.clone(),
            })
            .collect()
    }

    fn webhook_configurations(&self, options: WebhookOptions) -> Result<String, String> {
        let options = crate::webhooks::Options {
            service_name: options.service_name,
            service_namespace: options.service_namespace,
            service_port: options.service_port,
            ca: match options.inject_ca_from {
                Some(certificate) => crate::webhooks::Ca::InjectedFrom(certificate),
                None => crate::webhooks::Ca::Bundle(options.ca_bundle),
            },
            exclude_namespaces: options.exclude_namespaces,
            force_failure_policy_ignore: options.force_failure_policy_ignore,
            naming: match options.kyverno_names {
                true => crate::webhooks::Naming::Kyverno,
                false => crate::webhooks::Naming::Ivpol,
            },
        };
        crate::webhooks::configurations(self.0.policies(), &options).map(|v| v.to_string())
    }

    fn review(&self, route: Route, body: Vec<u8>) -> Result<Answer, Unjudgeable> {
        let route = engine_route(route);
        // Registry calls are bounded by the host's deadline too; this keeps a
        // single call from outliving the longest policy timeout.
        let timeout_ns = u64::from(self.0.max_timeout_seconds()) * 1_000_000_000;
        let transport = std::sync::Arc::new(wasi_transport(timeout_ns));
        let answer = self
            .0
            .review(&route, &body, &HostNamespaces, transport)
            .map_err(unjudgeable)?;
        Ok(wit_answer(answer))
    }

    fn failure_answer(&self, route: Route, head: RequestHead, cause: String) -> FailureReply {
        let (response, v) =
            self.0
                .failure_answer(&engine_route(route), &head.uid, &head.namespace, &cause);
        FailureReply {
            response,
            // A failure answer goes into no report.
            verdict: verdict(v, None),
        }
    }

    fn status_conditions(&self, queries: Vec<StatusQuery>, now: String) -> Vec<String> {
        let queries: Vec<engine::status::StatusQuery> = (queries.into_iter())
            .map(|q| engine::status::StatusQuery {
                name: q.name,
                namespace: q.namespace,
                stale: q.stale,
                webhook: q.webhook,
            })
            .collect();
        self.0.status_conditions(&queries, &now)
    }

    fn review_policy(&self, body: Vec<u8>) -> Result<Answer, Unjudgeable> {
        let answer = self.0.review_policy(&body).map_err(unjudgeable)?;
        Ok(wit_answer(answer))
    }

    fn evaluate_json(&self, payload: String) -> Result<Verdict, String> {
        let timeout_ns = u64::from(self.0.max_timeout_seconds()) * 1_000_000_000;
        let transport = std::sync::Arc::new(wasi_transport(timeout_ns));
        // The WIT error is the text the CLI prints.
        self.0
            .evaluate_json(&payload, transport)
            .map(|v| verdict(v, Some(Process::Background)))
            .map_err(|e| e.to_string())
    }

    fn evaluate(
        &self,
        resource: String,
        operation: Operation,
        namespace_object: Option<String>,
        background: bool,
    ) -> Result<Verdict, String> {
        let timeout_ns = u64::from(self.0.max_timeout_seconds()) * 1_000_000_000;
        let transport = std::sync::Arc::new(wasi_transport(timeout_ns));
        let mode = match background {
            true => engine::Mode::Background,
            false => engine::Mode::Cli,
        };
        self.0
            .evaluate(
                &resource,
                engine_operation(operation).as_str(),
                namespace_object.as_deref(),
                mode,
                transport,
            )
            .map(|v| verdict(v, Some(Process::Background)))
            .map_err(|e| e.to_string())
    }
}

/// The wasi:http transport, naming each request's secrets to the host
/// through the `registry-credentials` import.
fn wasi_transport(timeout_ns: u64) -> WasiTransport {
    WasiTransport {
        timeout_ns,
        present: registry_credentials::present,
    }
}

/// The WIT route as the engine's.
fn engine_route(route: Route) -> review::Route {
    review::Route {
        phase: match route.phase {
            Phase::Mutate => EPhase::Mutate,
            Phase::Validate => EPhase::Validate,
        },
        namespaced: route.namespaced,
        names: route.names,
        trapped: (route.trapped.into_iter())
            .map(|t| review::Trapped {
                name: t.name,
                cause: t.cause,
            })
            .collect(),
    }
}

/// The engine's answer as the WIT record.
fn wit_answer(answer: review::Answer) -> Answer {
    let s = answer.subject;
    Answer {
        response: answer.response,
        subject: Subject {
            uid: s.uid,
            namespace: s.namespace,
            kind: s.kind,
            name: s.name,
            operation: operation(s.operation),
            api_version: s.api_version,
            object_uid: s.object_uid,
        },
        verdict: (answer.verdict)
            .map(|v| verdict(v, answer.reported.then_some(Process::Admission))),
        reported: answer.reported,
    }
}

fn policy_kind(kind: EPolicyKind) -> PolicyKind {
    match kind {
        EPolicyKind::Cluster => PolicyKind::ImageValidatingPolicy,
        EPolicyKind::Namespaced => PolicyKind::NamespacedImageValidatingPolicy,
    }
}

fn operation(op: EOperation) -> Operation {
    match op {
        EOperation::Create => Operation::Create,
        EOperation::Update => Operation::Update,
        EOperation::Delete => Operation::Delete,
        EOperation::Connect => Operation::Connect,
    }
}

fn engine_operation(op: Operation) -> EOperation {
    match op {
        Operation::Create => EOperation::Create,
        Operation::Update => EOperation::Update,
        Operation::Delete => EOperation::Delete,
        Operation::Connect => EOperation::Connect,
    }
}

fn unjudgeable(e: EUnjudgeable) -> Unjudgeable {
    match e {
        EUnjudgeable::NotJson(m) => Unjudgeable::NotJson(m),
        EUnjudgeable::NotAdmissionReview(m) => Unjudgeable::NotAdmissionReview(m),
        EUnjudgeable::MalformedRequest(e) => Unjudgeable::MalformedRequest(e.to_string()),
        EUnjudgeable::UnreadableNamespace(e) => Unjudgeable::UnreadableNamespace(e.to_string()),
    }
}

/// `spec.validationActions` as the WIT flags.
fn actions(names: &[String]) -> Actions {
    names
        .iter()
        .fold(Actions::empty(), |acc, a| match a.as_str() {
            "Deny" => acc | Actions::DENY,
            "Warn" => acc | Actions::WARN,
            "Audit" => acc | Actions::AUDIT,
            _ => acc,
        })
}

/// The host's verification cache (WIT `verification-cache`).
struct HostCache;

fn scope(c: &engine::cache::Credentials) -> CredentialScope {
    CredentialScope {
        registries: c.registries.clone(),
        secrets: c.secrets.clone(),
        tenant: c.tenant.clone(),
    }
}

impl engine::cache::VerificationCache for HostCache {
    fn get(&self, key: &str, credentials: &engine::cache::Credentials) -> Option<Vec<u8>> {
        ivpol::admission::verification_cache::get(key, &scope(credentials))
    }
    fn put(&self, key: &str, credentials: &engine::cache::Credentials, value: &[u8]) {
        ivpol::admission::verification_cache::put(key, &scope(credentials), value)
    }
    fn get_digest(&self, image: &str, credentials: &engine::cache::Credentials) -> Option<String> {
        ivpol::admission::verification_cache::get_digest(image, &scope(credentials))
    }
    fn put_digest(&self, image: &str, credentials: &engine::cache::Credentials, digest: &str) {
        ivpol::admission::verification_cache::put_digest(image, &scope(credentials), digest)
    }
}

/// The KMS keys the host reads (WIT `signing-keys`).
struct HostKeys;

impl engine::keys::KeySource for HostKeys {
    fn public_key(&self, uri: &str, tenant: Option<&str>) -> Result<String, String> {
        ivpol::admission::signing_keys::public_key(uri, tenant)
    }

    fn trust_file(&self, path: &str, tenant: Option<&str>) -> Result<String, String> {
        ivpol::admission::signing_keys::trust_file(path, tenant)
    }
}

/// The namespaces the host knows (WIT `namespaces`).
struct HostNamespaces;

impl review::Namespaces for HostNamespaces {
    fn get(&self, name: &str) -> Option<String> {
        ivpol::admission::namespaces::get(name)
    }
}

/// The cluster objects the host grants (WIT `cluster-resources`).
struct HostResources;

impl crate::cel::resource_lib::ResourceSource for HostResources {
    fn granted(&self) -> Vec<String> {
        ivpol::admission::cluster_resources::granted()
    }

    fn get(
        &self,
        api_version: &str,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<serde_json::Value>, String> {
        let found =
            ivpol::admission::cluster_resources::get(api_version, resource, namespace, name)?;
        found
            .map(|text| serde_json::from_str(&text).map_err(|e| format!("{resource} {name}: {e}")))
            .transpose()
    }

    fn list(
        &self,
        api_version: &str,
        resource: &str,
        namespace: &str,
    ) -> Result<serde_json::Value, String> {
        let text = ivpol::admission::cluster_resources::list(api_version, resource, namespace)?;
        serde_json::from_str(&text).map_err(|e| format!("{resource} list: {e}"))
    }
}

/// The engine's verdict as the WIT record; each result with its report
/// entry, worded for a judgement made where `report` says, when it says.
fn verdict(v: engine::Verdict, report: Option<Process>) -> Verdict {
    Verdict {
        allowed: v.allowed,
        message: v.message,
        warnings: v.warnings,
        patch: v.patch,
        results: v
            .results
            .into_iter()
            .map(|r| PolicyResult {
                report: report.map(|process| report_entry(report::entry(&r, process))),
                policy: r.policy,
                namespace: r.namespace,
                status: match r.status {
                    EStatus::Pass => Status::Pass,
                    EStatus::Fail => Status::Fail,
                    EStatus::Skip => Status::Skip,
                    EStatus::Error => Status::Error,
                },
                message: r.message,
                actions: actions(&r.actions),
                audit_annotations: r.audit_annotations,
                exceptions: r.exceptions,
                verifications: r.verifications.into_iter().map(verification).collect(),
            })
            .collect(),
    }
}

fn report_entry(e: report::ReportEntry) -> ReportEntry {
    ReportEntry {
        policy: e.policy,
        rule: e.rule,
        message: e.message,
        warn_message: e.warn_message,
        properties: e.properties,
        category: e.meta.category,
        severity: e.meta.severity.map(str::to_string),
        scored: e.meta.scored,
        reported: e.meta.reported,
        audit: e.audit,
    }
}

fn verification(v: engine::Verification) -> Verification {
    Verification {
        summary: v.summary,
        image: v.image,
        digest: v.digest,
        attestor: v.attestor,
        attestor_kind: match v.attestor_kind {
            engine::VerifierKind::Cosign => AttestorKind::Cosign,
            engine::VerifierKind::Notary => AttestorKind::Notary,
        },
        micros: v.micros,
        attestation: v.attestation,
        cache: match v.cache {
            engine::CacheUse::Hit => CacheUse::Hit,
            engine::CacheUse::Miss => CacheUse::Miss,
            engine::CacheUse::Unkeyed => CacheUse::Unkeyed,
        },
        failure: v.failure.map(|f| VerificationFailure {
            reason: reason(f.reason),
            message: f.message,
            registry: f.registry,
            status: f.status,
        }),
    }
}

fn reason(r: VReason) -> Reason {
    match r {
        VReason::NotFound => Reason::NotFound,
        VReason::BadSignature => Reason::BadSignature,
        VReason::Identity => Reason::Identity,
        VReason::UntrustedChain => Reason::UntrustedChain,
        VReason::TransparencyLog => Reason::TransparencyLog,
        VReason::Timestamp => Reason::Timestamp,
        VReason::PayloadMismatch => Reason::PayloadMismatch,
        VReason::AttestationMissing => Reason::AttestationMissing,
        VReason::Registry => Reason::Registry,
        VReason::RegistryRefused => Reason::RegistryRefused,
        VReason::Revocation => Reason::Revocation,
        VReason::Malformed => Reason::Malformed,
    }
}

impl exports::ivpol::admission::sigstore::Guest for Component {
    fn verify_bundle(
        bundle: Vec<u8>,
        artifact_sha256: Vec<u8>,
        signer: Signer,
        trusted_root: Option<String>,
    ) -> Result<(), VerificationFailure> {
        let signer = standalone_signer(signer);
        let now = crate::verify::unix_now();
        standalone::verify_bundle(
            &bundle,
            &artifact_sha256,
            signer,
            trusted_root.as_deref(),
            now,
        )
        .map_err(failure)
    }

    fn verify_artifact(
        digest: String,
        signatures: ArtifactSignatures,
        signer: Signer,
        trusted_root: Option<String>,
        ignore_tlog: bool,
    ) -> Result<(), VerificationFailure> {
        let sig_layers: Vec<(String, Vec<u8>)> = signatures
            .sig_layers
            .into_iter()
            .map(|b| (b.digest, b.content))
            .collect();
        let fetched = engine::Fetched {
            sig_manifest: signatures.sig_manifest.as_deref(),
            sig_layers: &sig_layers,
            bundles: &signatures.bundles,
        };
        engine::verify_artifact(
            &digest,
            &fetched,
            &standalone_signer(signer),
            trusted_root.as_deref(),
            ignore_tlog,
            crate::verify::unix_now(),
        )
        .map_err(failure)
    }
}

impl exports::ivpol::admission::notary::Guest for Component {
    fn verify_envelope(
        envelope: Vec<u8>,
        envelope_media_type: String,
        target: Descriptor,
        certs: String,
        tsa_certs: Option<String>,
    ) -> Result<(), VerificationFailure> {
        let target = crate::notary::Target {
            digest: target.digest,
            media_type: target.media_type,
            size: target.size,
        };
        crate::notary::standalone::verify_notary(
            &envelope,
            &envelope_media_type,
            &target,
            &certs,
            tsa_certs.as_deref(),
            crate::verify::unix_now(),
        )
        .map_err(failure)
    }
}

/// A standalone verification's failure, as admission reports one (no
/// registry is involved).
fn failure(e: VerifyError) -> VerificationFailure {
    VerificationFailure {
        reason: reason(e.reason()),
        message: e.to_string(),
        registry: None,
        status: None,
    }
}

fn standalone_signer(signer: Signer) -> standalone::Signer {
    match signer {
        Signer::Identity(i) => standalone::Signer::Identity {
            subject: i.subject,
            issuer: i.issuer,
        },
        Signer::Key(pem) => standalone::Signer::Key(pem),
    }
}

export!(Component);
