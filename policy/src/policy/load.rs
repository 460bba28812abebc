//! From documents (multi-document YAML or JSON) to compiled policies plus
//! diagnostics. A bad document never stops the others from loading.

#[cfg(test)]
mod tests;

use super::compile::{compile_policy, CompiledPolicy, PolicyKind};
use super::exception::{self, CompiledException, ExceptionScope};
use super::report_meta::ReportMeta;
use super::spec::{Metadata, Spec};
use super::{autogen, validate};
use serde::Deserialize;

/// One input file (or other source) of policy documents.
#[derive(Debug, Clone)]
pub struct SourceDocument {
    /// The name of the source (a file path), as diagnostics print it.
    pub source: String,
    /// The source's text: one or more YAML or JSON documents.
    pub content: String,
}

/// A document that did not load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The [`SourceDocument::source`] the document came from.
    pub source: String,
    /// The document's index in its source, from 0.
    pub document: u32,
    /// The document's `metadata.name`, when it could be read.
    pub policy: Option<String>,
    /// What is wrong, with the field path when there is one.
    pub message: String,
    /// The kind of policy the document would have been, when it may have
    /// been one: a request in that policy's scope is denied, since ivpol
    /// cannot know what the policy would have matched (see [`claim`]).
    pub kind: Option<PolicyKind>,
    /// The namespace of a NamespacedImageValidatingPolicy.
    pub namespace: Option<String>,
}

/// What a rejected document may have been: its kind and namespace when it
/// names an ImageValidatingPolicy or NamespacedImageValidatingPolicy, and a
/// cluster policy when it could not be read at all (a file that is not
/// YAML may hold one). Exceptions and other kinds claim nothing: a
/// PolicyException that did not load exempts nothing, which only denies more.
fn claim(value: &serde_json::Value) -> (Option<PolicyKind>, Option<String>) {
    let text = |v: Option<&serde_json::Value>| v.and_then(|v| v.as_str()).map(str::to_string);
    match text(value.get("kind")).as_deref() {
        Some("ImageValidatingPolicy") => (Some(PolicyKind::Cluster), None),
        Some("NamespacedImageValidatingPolicy") => {
            let ns = text(value.get("metadata").and_then(|m| m.get("namespace")));
            // As `kubectl apply` does for a namespaced object without a namespace.
            (
                Some(PolicyKind::Namespaced),
                Some(ns.unwrap_or_else(|| "default".into())),
            )
        }
        _ => (None, None),
    }
}

/// The outcome of loading a set of documents.
#[derive(Default)]
pub struct LoadedSet {
    /// Loaded policies, autogen variants included (they share the policy's name).
    pub policies: Vec<CompiledPolicy>,
    /// Loaded PolicyExceptions; the engine attaches them to the policies they name.
    pub exceptions: Vec<CompiledException>,
    /// One per problem, for the documents that did not load.
    pub diagnostics: Vec<Diagnostic>,
}

/// What one document loads into.
enum Loaded {
    Policies(Vec<CompiledPolicy>),
    Exception(CompiledException),
}

/// Upper bounds that keep a hostile policy directory from exhausting the guest.
const MAX_DOCUMENT_BYTES: usize = 1 << 20;
const MAX_DOCUMENTS: usize = 1000;

/// What the host grants the documents it hands over.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// The cluster resources policies may read (the `resource` library);
    /// without any, a policy that uses the library is refused.
    pub granted: Vec<String>,
    /// Where exceptions to cluster policies may come from.
    pub exceptions: ExceptionScope,
    /// Documents the host refused to hand over whole (WIT
    /// `document.refused`): each becomes a diagnostic.
    pub refused: Vec<Refused>,
    /// No ivpol host behind the engine (the webhook component): a policy
    /// that needs what only the host holds (a cloud credential provider, a
    /// KMS key, a trust file) is refused at load.
    pub without_host: bool,
}

/// A document the host refused (over a budget, too large): it arrives as a
/// stub naming only its kind, name and namespace, so that its refusal is
/// charged to the routes it would have served and nowhere else.
#[derive(Debug, Clone)]
pub struct Refused {
    /// As [`SourceDocument::source`].
    pub source: String,
    /// The stub: `apiVersion`, `kind` and `metadata` (name, namespace).
    pub stub: String,
    /// Why the host refused it.
    pub reason: String,
}

/// Loads every document of `sources`, granting no cluster resources (a
/// policy that reads them does not load) and taking exceptions from any
/// namespace, as for the operator's own policy files.
pub fn load(sources: &[SourceDocument]) -> LoadedSet {
    load_with(sources, &LoadOptions::default())
}

/// [`load`] with what `options` grant.
pub fn load_with(sources: &[SourceDocument], options: &LoadOptions) -> LoadedSet {
    let mut set = LoadedSet::default();
    for refused in &options.refused {
        set.diagnostics.push(refusal(refused));
    }
    for src in sources {
        load_source(src, options, &mut set);
    }
    set
}

/// The diagnostic of a refused document. Its stub says what it would have
/// been: a namespaced policy or exception claims its namespace only (an
/// exception claims nothing, which only denies more).
fn refusal(refused: &Refused) -> Diagnostic {
    let diagnostic = Diagnostic {
        source: refused.source.clone(),
        document: 0,
        policy: None,
        message: refused.reason.clone(),
        kind: Some(PolicyKind::Cluster),
        namespace: None,
    };
    let stub: serde_json::Value = match serde_json::from_str(&refused.stub) {
        Ok(v) if refused.stub.len() <= MAX_STUB_BYTES => v,
        // A file the host refused whole (its compile trapped) names its
        // policy in YAML: the same line scan as a file that does not parse.
        _ => return recovered(diagnostic, &refused.stub),
    };
    let (kind, namespace) = claim(&stub);
    let policy = stub
        .pointer("/metadata/name")
        .and_then(|n| n.as_str())
        .map(str::to_string);
    Diagnostic {
        policy,
        kind,
        namespace,
        ..diagnostic
    }
}

/// A stub holds a kind and two names: anything longer is not one.
const MAX_STUB_BYTES: usize = 4096;

fn load_source(src: &SourceDocument, options: &LoadOptions, set: &mut LoadedSet) {
    let diag = |index: usize, policy: Option<String>, message: String| Diagnostic {
        source: src.source.clone(),
        document: u32::try_from(index).unwrap_or(u32::MAX),
        policy,
        message,
        // Until the document is read, it may have been any cluster policy.
        kind: Some(PolicyKind::Cluster),
        namespace: None,
    };
    if src.content.len() > MAX_DOCUMENT_BYTES {
        let message = format!("file is larger than {MAX_DOCUMENT_BYTES} bytes");
        set.diagnostics
            .push(recovered(diag(0, None, message), &src.content));
        return;
    }
    for (index, doc) in serde_yaml_ng::Deserializer::from_str(&src.content).enumerate() {
        if index >= MAX_DOCUMENTS {
            set.diagnostics.push(diag(
                index,
                None,
                format!("more than {MAX_DOCUMENTS} documents"),
            ));
            return;
        }
        let value = match super::strict_json::Strict::deserialize(doc) {
            Ok(super::strict_json::Strict(serde_json::Value::Null)) => continue,
            Ok(super::strict_json::Strict(v)) => v,
            Err(e) => {
                let message = format!("not valid YAML or JSON: {e}");
                let text = nth_document(&src.content, index);
                set.diagnostics
                    .push(recovered(diag(index, None, message), text));
                // A key given twice leaves the stream readable; the YAML
                // stream cannot be resynchronised after a syntax error.
                if super::strict_json::is_duplicate_key(&e) {
                    continue;
                }
                return;
            }
        };
        match load_document(&value, options) {
            Ok(Loaded::Policies(policies)) => set.policies.extend(policies),
            Ok(Loaded::Exception(e)) => set.exceptions.push(e),
            Err((policy, messages)) => {
                let (kind, namespace) = claim(&value);
                set.diagnostics
                    .extend(messages.into_iter().map(|m| Diagnostic {
                        kind,
                        namespace: namespace.clone(),
                        ..diag(index, policy.clone(), m)
                    }))
            }
        }
    }
}

type LoadError = (Option<String>, Vec<String>);

/// How much of a broken document is scanned for its names.
const MAX_SCANNED_BYTES: usize = 64 << 10;

/// The `index`th `---`-separated document of `text`, as far as lines tell
/// (the YAML stream could not be read past a syntax error).
fn nth_document(text: &str, index: usize) -> &str {
    let mut start = 0;
    let mut seen = 0;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_end() == "---" && offset > 0 {
            if seen == index {
                return &text[start..offset];
            }
            seen += 1;
            start = offset + line.len();
        }
        offset += line.len();
    }
    &text[start.min(text.len())..]
}

/// `diagnostic` for a document that could not be parsed, with the kind,
/// name and namespace it declares when a line scan finds them: a broken
/// file that names `p1` then denies on `/ivpol/validate/p1`, and a broken
/// NIVP on its own namespace's routes, not only on the unnamed cluster
/// route.
fn recovered(diagnostic: Diagnostic, text: &str) -> Diagnostic {
    let scan = scan_names(text);
    let (kind, namespace) = match scan.kind.as_deref() {
        Some("NamespacedImageValidatingPolicy") => (
            Some(PolicyKind::Namespaced),
            Some(scan.namespace.unwrap_or_else(|| "default".into())),
        ),
        // A PolicyException (or any other kind) claims nothing.
        Some(k) if k != "ImageValidatingPolicy" => (None, None),
        _ => (Some(PolicyKind::Cluster), None),
    };
    Diagnostic {
        policy: scan.name,
        kind,
        namespace,
        ..diagnostic
    }
}

/// What a line scan reads of a document's `kind` and `metadata`.
#[derive(Default)]
struct Scanned {
    kind: Option<String>,
    name: Option<String>,
    namespace: Option<String>,
}

/// Reads `kind:` at the top level and `name:` / `namespace:` indented
/// under `metadata:` (block-style YAML, as policies are written), from the
/// first [`MAX_SCANNED_BYTES`]; values that are not Kubernetes names are
/// ignored. Best effort: a document it cannot read this way claims the
/// unnamed cluster route, as before.
fn scan_names(text: &str) -> Scanned {
    let mut end = text.len().min(MAX_SCANNED_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = Scanned::default();
    let mut in_metadata = false;
    for line in text[..end].lines() {
        let indented = line.starts_with([' ', '\t']);
        let Some((key, value)) = key_value(line) else {
            continue;
        };
        match (key, indented) {
            ("kind", false) => out.kind = out.kind.or(value),
            ("metadata", false) => in_metadata = true,
            ("name", true) if in_metadata => out.name = out.name.or(value),
            ("namespace", true) if in_metadata => out.namespace = out.namespace.or(value),
            (_, false) => in_metadata = false,
            _ => {}
        }
    }
    out
}

/// A line's `key: value` (quotes and a trailing comma dropped), the value
/// only when it is a Kubernetes-style name or kind.
fn key_value(line: &str) -> Option<(&str, Option<String>)> {
    let (key, value) = line.trim().split_once(':')?;
    let key = key.trim().trim_matches('"');
    let value = value
        .trim()
        .trim_end_matches(',')
        .trim()
        .trim_matches(['"', '\'']);
    let name_like = !value.is_empty()
        && value.len() <= 253
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    Some((key, name_like.then(|| value.to_string())))
}

/// Loads one document into its policy and autogen variants, or an exception.
fn load_document(value: &serde_json::Value, options: &LoadOptions) -> Result<Loaded, LoadError> {
    let api_version = value
        .get("apiVersion")
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    let kind = value
        .get("kind")
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    let metadata: Metadata = value
        .get("metadata")
        .filter(|m| !m.is_null())
        .cloned()
        .map(serde_json::from_value)
        .transpose()
        .map_err(|e| (None, vec![format!("metadata: {e}")]))?
        .unwrap_or_default();
    let name = metadata.name.clone();
    let fail = |messages: Vec<String>| (name.clone(), messages);
    let is_exception = kind == "PolicyException";
    let kind = match is_exception {
        true => exception_version(api_version).map(|()| PolicyKind::Cluster),
        false => policy_kind(api_version, kind),
    }
    .map_err(|m| fail(vec![m]))?;
    let Some(policy_name) = name.clone().filter(|n| !n.is_empty()) else {
        return Err(fail(vec!["metadata.name: Required value".into()]));
    };
    if is_exception {
        let spec = value
            .get("spec")
            .cloned()
            .unwrap_or(serde_json::Value::Null);
        if spec.is_null() {
            return Err(fail(vec!["spec: Required value".into()]));
        }
        return exception::compile(&metadata, spec, &options.exceptions)
            .map(Loaded::Exception)
            .map_err(fail);
    }
    let namespace = match kind {
        PolicyKind::Cluster => None,
        // As `kubectl apply` does for a namespaced object without a namespace.
        PolicyKind::Namespaced => Some(
            metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".into()),
        ),
    };
    let spec_json = value
        .get("spec")
        .cloned()
        .unwrap_or(serde_json::Value::Null);
    if spec_json.is_null() {
        return Err(fail(vec!["spec: Required value".into()]));
    }
    let spec: Spec = serde_path_to_error::deserialize(spec_json).map_err(|e| {
        let path = e.path().to_string();
        fail(vec![format!("spec.{path}: {}", e.into_inner())])
    })?;
    let mut problems = validate::validate(&spec);
    if let Some(ns) = &namespace {
        problems.extend(validate::check_namespaced_keys(&spec, ns));
    }
    if options.without_host {
        problems.extend(validate::check_hostless(&spec));
    }
    if !problems.is_empty() {
        return Err(fail(problems));
    }
    let mut variants = vec![(spec.clone(), None)];
    variants.extend(
        autogen::variants(&spec)
            .into_iter()
            .map(|(n, s)| (s, Some(n))),
    );
    let content_hash = crate::oci::digest::sha256(&serde_json::to_vec(value).unwrap_or_default());
    let mut compiled = Vec::new();
    for (variant, autogen_name) in variants {
        let mut policy =
            compile_policy(&policy_name, namespace.clone(), kind, variant, autogen_name)
                .map_err(&fail)?;
        if let (Some(path), true) = (&policy.reads_resources, options.granted.is_empty()) {
            return Err(fail(vec![format!(
                "{path}: Kyverno library resource (resource.get) reads cluster objects, and the host grants none: run ivpol serve --kubernetes --grant-resource <resource> (e.g. configmaps)"
            )]));
        }
        policy.content_hash = content_hash.clone();
        policy.report = ReportMeta::of(&metadata);
        compiled.push(policy);
    }
    Ok(Loaded::Policies(compiled))
}

/// The served versions of Kyverno's CEL PolicyException.
fn exception_version(api_version: &str) -> Result<(), String> {
    match api_version {
        "policies.kyverno.io/v1alpha1" | "policies.kyverno.io/v1beta1" | "policies.kyverno.io/v1" => {
            Ok(())
        }
        _ => Err(format!(
            "apiVersion {api_version:?} is not served for kind PolicyException (policies.kyverno.io v1alpha1, v1beta1 or v1; kyverno.io exceptions apply to ClusterPolicy rules, not to image validating policies)"
        )),
    }
}

fn policy_kind(api_version: &str, kind: &str) -> Result<PolicyKind, String> {
    match (api_version, kind) {
        (
            "policies.kyverno.io/v1alpha1" | "policies.kyverno.io/v1beta1" | "policies.kyverno.io/v1",
            "ImageValidatingPolicy",
        ) => Ok(PolicyKind::Cluster),
        (
            "policies.kyverno.io/v1beta1" | "policies.kyverno.io/v1",
            "NamespacedImageValidatingPolicy",
        ) => Ok(PolicyKind::Namespaced),
        (_, "ImageValidatingPolicy" | "NamespacedImageValidatingPolicy") => Err(format!(
            "apiVersion {api_version:?} is not served for kind {kind} (policies.kyverno.io v1alpha1, v1beta1 or v1)"
        )),
        ("", _) | (_, "") => Err("apiVersion and kind are required".into()),
        _ => Err(format!(
            "{api_version} {kind} is not an ImageValidatingPolicy or NamespacedImageValidatingPolicy"
        )),
    }
}
