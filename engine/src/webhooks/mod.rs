//! The MutatingWebhookConfiguration and ValidatingWebhookConfiguration
//! Kyverno would register for a set of IVP/NIVP policies (`ivpol webhooks`),
//! built the way Kyverno's webhook controller builds them
//! (`pkg/controllers/webhook/validating.go`, `buildWebhookRules`):
//!
//! - only policies with admission enabled, in Kubernetes mode, get webhooks;
//!   the mutating webhooks only for policies that pin at mutate
//!   (`mutateDigest || verifyDigest`, each unset meaning true);
//! - *fine-grained* policies (matchConditions, `matchPolicy: Exact` or
//!   `webhookConfiguration.timeoutSeconds`) get one webhook each;
//! - the others are grouped by the selectors they resolve to, one `-fail` and
//!   one `-ignore` webhook per group, the path naming every policy of it;
//! - rules are each policy's resourceRules plus its autogen pod-controller
//!   rules, de-duplicated and sorted; webhooks are sorted by name.
//!
//! What the API server would default on the way in (`matchPolicy`,
//! `reinvocationPolicy`, `timeoutSeconds`, empty selectors, rule `scope`) is
//! written out, so the output reads like `kubectl get -o yaml` of Kyverno's.
//!
//! Where Kyverno's result would be unusable, this does better and says so:
//! names that Kyverno would repeat (a cluster and a namespaced selector group
//! both called `-fail`) are told apart, and namespaced fine-grained policies
//! also cover pod controllers (Kyverno only autogenerates those for cluster
//! policies there, although its engine evaluates them).

mod conditions;
mod selectors;
#[cfg(test)]
mod tests;

use crate::matching::{LabelSelector, MatchPolicy, RuleWithOperations};
use crate::policy::autogen;
use crate::policy::{CompiledPolicy, PolicyKind};
use base64::Engine as _;
use conditions::match_conditions;
use ivpol_refs::sort;
use selectors::{config_namespace_selector, group_by_selectors, merge, namespace_selector};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

/// What the configurations and their webhooks are called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Naming {
    /// ivpol's own names (`ivpol-resource-*-webhook-cfg`, webhooks
    /// `validate.ivpol.io-…`), so that ivpol runs beside Kyverno, as a user
    /// migrating from it does, without either overwriting the other.
    #[default]
    Ivpol,
    /// Kyverno's names (`kyverno-resource-*-webhook-cfg`, webhooks
    /// `ivpol.validate.kyverno.svc-…`), for the places that expect them,
    /// such as Kyverno's chainsaw asserts.
    Kyverno,
}

/// The names one [`Naming`] gives.
struct Names {
    validate_prefix: &'static str,
    mutate_prefix: &'static str,
    validating_config: &'static str,
    mutating_config: &'static str,
    /// The label that marks the configurations as this installation's.
    managed_by: (&'static str, &'static str),
}

impl Naming {
    fn names(self) -> Names {
        match self {
            Naming::Ivpol => Names {
                validate_prefix: "validate.ivpol.io",
                mutate_prefix: "mutate.ivpol.io",
                validating_config: "ivpol-resource-validating-webhook-cfg",
                mutating_config: "ivpol-resource-mutating-webhook-cfg",
                managed_by: ("app.kubernetes.io/managed-by", "ivpol"),
            },
            // Kyverno's `pkg/config/config.go`; NIVP uses them too.
            Naming::Kyverno => Names {
                validate_prefix: "ivpol.validate.kyverno.svc",
                mutate_prefix: "ivpol.mutate.kyverno.svc",
                validating_config: "kyverno-resource-validating-webhook-cfg",
                mutating_config: "kyverno-resource-mutating-webhook-cfg",
                managed_by: ("webhook.kyverno.io/managed-by", "kyverno"),
            },
        }
    }

    /// The ValidatingWebhookConfiguration's name.
    pub fn validating_config(self) -> &'static str {
        self.names().validating_config
    }

    /// The MutatingWebhookConfiguration's name.
    pub fn mutating_config(self) -> &'static str {
        self.names().mutating_config
    }
}

/// The longest name the API server takes for a webhook (a DNS subdomain).
const MAX_WEBHOOK_NAME: usize = 253;
/// Hex digits of the namespace-and-name hash that makes a per-policy
/// webhook name unique: 48 bits.
const NAME_HASH_HEX: usize = 12;
/// The API server's default webhook timeout, which Kyverno leaves in place
/// unless a policy sets `webhookConfiguration.timeoutSeconds`.
const DEFAULT_TIMEOUT_SECONDS: i64 = 10;

/// Where the API server reaches ivpol, and the cluster-wide settings Kyverno
/// reads from its own configuration (the `webhooks` ConfigMap entry and
/// `--forceFailurePolicyIgnore`).
#[derive(Debug, Clone)]
pub struct Options {
    /// The name of the Service the API server sends admission requests to.
    pub service_name: String,
    /// The Service's namespace.
    pub service_namespace: String,
    /// The Service's port.
    pub service_port: u16,
    /// Where the API server's trust in ivpol's certificate comes from.
    pub ca: Ca,
    /// One `kubernetes.io/metadata.name NotIn [ns]` requirement each, merged
    /// into every namespaceSelector; Kyverno's Helm chart excludes
    /// `kube-system` and Kyverno's own namespace.
    pub exclude_namespaces: Vec<String>,
    /// Every webhook fails open, whatever the policies say.
    pub force_failure_policy_ignore: bool,
    /// Whose names the configurations and webhooks take.
    pub naming: Naming,
}

/// Who writes each webhook's `clientConfig.caBundle`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ca {
    /// ivpol, from the CA bundle file's bytes (PEM), base64-encoded.
    Bundle(Vec<u8>),
    /// cert-manager's CA injector, from the CA of this Certificate
    /// (`namespace/name`): ivpol writes the `cert-manager.io/inject-ca-from`
    /// annotation and leaves `caBundle` out of what it applies.
    InjectedFrom(String),
}

/// cert-manager's CA injector's annotation.
const INJECT_CA_FROM: &str = "cert-manager.io/inject-ca-from";

/// One webhook before rendering.
#[derive(Debug, Clone, PartialEq)]
struct Webhook {
    name: String,
    /// The name to take instead when `name` is not usable (another webhook
    /// has it): a per-policy webhook's hashed name.
    unique_name: Option<String>,
    path: String,
    fail: bool,
    namespace_selector: Option<LabelSelector>,
    object_selector: Option<LabelSelector>,
    rules: Vec<RuleWithOperations>,
    match_conditions: Vec<(String, String)>,
    exact: bool,
    timeout_seconds: Option<i64>,
}

/// Which configuration a set of webhooks goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Validate,
    Mutate,
}

/// The policy-validation webhook's configuration: one name whatever the
/// [`Naming`], since Kyverno's own (`kyverno-policy-validating-webhook-cfg`)
/// judges all of Kyverno's policy kinds and must not be replaced.
pub const POLICY_CONFIG_NAME: &str = "ivpol-policy-validating-webhook-cfg";
/// Its one webhook.
const POLICY_WEBHOOK_NAME: &str = "validate-policy.ivpol.io";
/// Where the API server sends it (the host's route of that name).
const POLICY_WEBHOOK_PATH: &str = "/ivpol/policy-validate";

/// The two resource configurations as a `v1` `List` (mutating first), then
/// the policy-validation one, in JSON.
///
/// `policies` are the loaded policies without their autogen variants.
/// An error means the configurations could not be made valid (two webhooks
/// with one name).
pub fn configurations<'a>(
    policies: impl IntoIterator<Item = &'a CompiledPolicy>,
    options: &Options,
) -> Result<Value, String> {
    let admitted: Vec<&CompiledPolicy> = policies
        .into_iter()
        .filter(|p| p.autogen.is_none() && p.spec.admission_enabled() && !p.spec.json_mode())
        .collect();
    let mutating: Vec<&CompiledPolicy> = admitted
        .iter()
        .copied()
        .filter(|p| p.spec.pins_at_mutate())
        .collect();
    let validate = webhooks_for(&admitted, Phase::Validate, options)?;
    let mutate = webhooks_for(&mutating, Phase::Mutate, options)?;
    let names = options.naming.names();
    Ok(json!({
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            config("MutatingWebhookConfiguration", names.mutating_config, &mutate, Phase::Mutate, options),
            config("ValidatingWebhookConfiguration", names.validating_config, &validate, Phase::Validate, options),
            policy_config(options),
        ],
    }))
}

/// The ValidatingWebhookConfiguration of the policy-validation webhook:
/// IVPs, NIVPs and PolicyExceptions on CREATE and UPDATE, failing closed
/// (a policy that cannot be checked is not let in), whatever
/// `force_failure_policy_ignore` says of the resource webhooks.
fn policy_config(options: &Options) -> Value {
    let rules = vec![RuleWithOperations {
        operations: vec!["CREATE".into(), "UPDATE".into()],
        api_groups: vec!["policies.kyverno.io".into()],
        api_versions: vec!["*".into()],
        resources: vec![
            "imagevalidatingpolicies".into(),
            "namespacedimagevalidatingpolicies".into(),
            "policyexceptions".into(),
        ],
        scope: Some("*".into()),
    }];
    let webhook = Webhook {
        name: POLICY_WEBHOOK_NAME.into(),
        unique_name: None,
        path: POLICY_WEBHOOK_PATH.into(),
        fail: true,
        namespace_selector: config_namespace_selector(options),
        object_selector: None,
        rules,
        match_conditions: Vec::new(),
        exact: false,
        timeout_seconds: None,
    };
    let always_closed = Options {
        force_failure_policy_ignore: false,
        naming: Naming::Ivpol,
        ..options.clone()
    };
    config(
        "ValidatingWebhookConfiguration",
        POLICY_CONFIG_NAME,
        &[webhook],
        Phase::Validate,
        &always_closed,
    )
}

/// The webhooks of one phase: cluster policies, then namespaced ones, each
/// built as Kyverno builds them, then sorted by name.
fn webhooks_for(
    policies: &[&CompiledPolicy],
    phase: Phase,
    options: &Options,
) -> Result<Vec<Webhook>, String> {
    let names = options.naming.names();
    let (prefix, phase_path) = match phase {
        Phase::Validate => (names.validate_prefix, "validate"),
        Phase::Mutate => (names.mutate_prefix, "mutate"),
    };
    let of_kind = |kind: PolicyKind| -> Vec<&CompiledPolicy> {
        policies
            .iter()
            .copied()
            .filter(|p| p.kind == kind)
            .collect()
    };
    let cluster = of_kind(PolicyKind::Cluster);
    let namespaced = of_kind(PolicyKind::Namespaced);
    let mut out = build(
        &cluster,
        prefix,
        &format!("/ivpol/{phase_path}"),
        options,
        "",
    );
    // Kyverno builds the namespaced webhooks in a second, independent pass,
    // so a single selector group of each kind is `<prefix>-fail` twice, which
    // the API server refuses. Namespaced groups are told apart whenever
    // cluster groups exist.
    let cluster_groups = out.iter().any(|w| !w.name.contains("-finegrained-"));
    let ns_tag = if cluster_groups { "-nivpol" } else { "" };
    out.extend(build(
        &namespaced,
        prefix,
        &format!("/nivpol/{phase_path}"),
        options,
        ns_tag,
    ));
    for w in &mut out {
        w.rules = sorted_rules(std::mem::take(&mut w.rules));
        if phase == Phase::Mutate {
            // Kyverno copies a mutating webhook from the validating shape
            // field by field and leaves `matchPolicy` out, so the API server
            // stores its default, Equivalent, even for `matchPolicy: Exact`.
            w.exact = false;
        }
    }
    take_unique_names(&mut out);
    sort::sort_by(&mut out, |a, b| a.name.cmp(&b.name));
    let mut seen = BTreeSet::new();
    for w in &out {
        if !seen.insert(w.name.as_str()) {
            return Err(format!(
                "two webhooks would both be named {:?} (a cluster policy and a namespaced one whose `<namespace>-<name>` spell the same); rename one of them",
                w.name
            ));
        }
    }
    Ok(out)
}

/// Kyverno's `buildWebhookRules` for one kind of policy.
///
/// `group_tag` goes before a selector group's hash suffix and forces it.
fn build(
    policies: &[&CompiledPolicy],
    prefix: &str,
    query_path: &str,
    options: &Options,
    group_tag: &str,
) -> Vec<Webhook> {
    let (mut fine, basic): (Vec<&CompiledPolicy>, Vec<&CompiledPolicy>) =
        policies.iter().copied().partition(|p| fine_grained(p));
    sort::sort_by(&mut fine, |a, b| {
        (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name))
    });
    let mut fail_list = Vec::new();
    let mut ignore_list = Vec::new();
    for p in fine {
        let fail = fails_closed(p, options);
        let kind = if fail { "fail" } else { "ignore" };
        let base = format!("{prefix}-{kind}-finegrained");
        let unique = hashed_webhook_name(&base, p);
        let name = match options.naming {
            Naming::Ivpol => unique.clone(),
            Naming::Kyverno => policy_webhook_name(&base, p),
        };
        let webhook = Webhook {
            name,
            unique_name: Some(unique),
            path: format!("{query_path}/{}", p.name),
            fail,
            namespace_selector: namespace_selector(p, options),
            object_selector: merge(p.match_constraints.object_selector.as_ref(), None),
            rules: policy_rules(p),
            match_conditions: match_conditions(p),
            exact: p.match_constraints.match_policy == Some(MatchPolicy::Exact),
            timeout_seconds: p
                .spec
                .webhook_configuration
                .as_ref()
                .and_then(|w| w.timeout_seconds),
        };
        if fail {
            fail_list.push(webhook);
        } else {
            ignore_list.push(webhook);
        }
    }
    let mut out = fail_list;
    out.append(&mut ignore_list);
    let groups = group_by_selectors(&basic, options);
    let several = groups.len() > 1 || !group_tag.is_empty();
    for (key, group) in groups {
        let suffix = if several {
            format!("{group_tag}-{}", &key[..8])
        } else {
            String::new()
        };
        let mut names: Vec<&str> = group.policies.iter().map(|p| p.name.as_str()).collect();
        sort::sort(&mut names);
        let path = format!("{query_path}/{}", names.join("/"));
        let mut fail_rules = Vec::new();
        let mut ignore_rules = Vec::new();
        for p in &group.policies {
            let rules = policy_rules(p);
            if fails_closed(p, options) {
                fail_rules.extend(rules);
            } else {
                ignore_rules.extend(rules);
            }
        }
        for (fail, rules) in [(true, fail_rules), (false, ignore_rules)] {
            if rules.is_empty() {
                continue;
            }
            let kind = if fail { "fail" } else { "ignore" };
            out.push(Webhook {
                name: format!("{prefix}-{kind}{suffix}"),
                unique_name: None,
                path: path.clone(),
                fail,
                namespace_selector: group.namespace_selector.clone(),
                object_selector: group.object_selector.clone(),
                rules,
                match_conditions: Vec::new(),
                exact: false,
                timeout_seconds: None,
            });
        }
    }
    out
}

/// A policy that needs a webhook of its own.
fn fine_grained(p: &CompiledPolicy) -> bool {
    !p.spec.match_conditions.is_empty()
        || p.match_constraints.match_policy == Some(MatchPolicy::Exact)
        || p.spec
            .webhook_configuration
            .as_ref()
            .is_some_and(|w| w.timeout_seconds.is_some())
}

fn fails_closed(p: &CompiledPolicy, options: &Options) -> bool {
    !options.force_failure_policy_ignore && p.spec.fail_closed()
}

/// Kyverno's `<name>-<policy>`, or `<name>-<namespace>-<policy>` for a
/// namespaced one. It may be too long for the API server, and two policies
/// may spell it alike (`c` in `a-b`, `b-c` in `a`): [`take_unique_names`]
/// then gives them their [`hashed_webhook_name`]s.
fn policy_webhook_name(name: &str, p: &CompiledPolicy) -> String {
    format!("{name}-{}", readable_owner(p))
}

fn readable_owner(p: &CompiledPolicy) -> String {
    match &p.namespace {
        Some(ns) if p.kind == PolicyKind::Namespaced => format!("{ns}-{}", p.name),
        _ => p.name.clone(),
    }
}

/// `<base>-<namespace>-<policy>-<hash>`: the readable part cut so that the
/// whole is at most 253 characters, and a hash of the kind, namespace and
/// name that no other policy shares. Always a valid webhook name, since
/// the base, namespaces and policy names are lower-case DNS names.
fn hashed_webhook_name(base: &str, p: &CompiledPolicy) -> String {
    let owner = format!(
        "{}/{}/{}",
        p.kind.as_str(),
        p.namespace.as_deref().unwrap_or_default(),
        p.name
    );
    let digest = Sha256::digest(owner.as_bytes());
    let hash: String = digest
        .iter()
        .flat_map(|b| [b >> 4, b & 0xf])
        .take(NAME_HASH_HEX)
        .map(|n| char::from_digit(u32::from(n), 16).unwrap_or('0'))
        .collect();
    let room = MAX_WEBHOOK_NAME.saturating_sub(base.len() + hash.len() + 2);
    let readable = readable_owner(p);
    let cut: String = readable.chars().take(room).collect();
    // A label may not end in `-` or `.`, nor be empty.
    let cut = cut.trim_end_matches(['-', '.']);
    match cut.is_empty() {
        true => format!("{base}-{hash}"),
        false => format!("{base}-{cut}-{hash}"),
    }
}

/// Gives every webhook whose name is too long, or shared with another, its
/// unique name (Kyverno's names can be both).
fn take_unique_names(webhooks: &mut [Webhook]) {
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for w in webhooks.iter() {
        *count.entry(w.name.clone()).or_default() += 1;
    }
    for w in webhooks.iter_mut() {
        let unusable = w.name.len() > MAX_WEBHOOK_NAME || count[&w.name] > 1;
        if let (true, Some(unique)) = (unusable, &w.unique_name) {
            w.name = unique.clone();
        }
    }
}

/// The policy's resourceRules and those of its autogen variants.
fn policy_rules(p: &CompiledPolicy) -> Vec<RuleWithOperations> {
    let own = p.match_constraints.resource_rules.iter().map(|r| r.rule());
    let variants = autogen::variants(&p.spec);
    let generated: Vec<RuleWithOperations> = variants
        .iter()
        .filter_map(|(_, spec)| spec.match_constraints.as_ref())
        .flat_map(|mc| mc.resource_rules.iter().map(|r| r.rule()))
        .collect();
    generated.into_iter().chain(own).collect()
}

/// Kyverno's `deDuplicatedRules` then `sortedRules`: each rule's lists
/// sorted, duplicates dropped, rules ordered by their lists (shorter first,
/// then element by element) and scope. An unset scope is the API's `*`.
fn sorted_rules(rules: Vec<RuleWithOperations>) -> Vec<RuleWithOperations> {
    let mut out: Vec<RuleWithOperations> = Vec::new();
    for mut r in rules {
        sort::sort(&mut r.api_groups);
        sort::sort(&mut r.api_versions);
        sort::sort(&mut r.resources);
        sort::sort(&mut r.operations);
        r.scope.get_or_insert_with(|| "*".into());
        if !out.contains(&r) {
            out.push(r);
        }
    }
    fn by_list(a: &[String], b: &[String]) -> std::cmp::Ordering {
        a.len().cmp(&b.len()).then_with(|| a.cmp(b))
    }
    sort::sort_by(&mut out, |a, b| {
        by_list(&a.api_groups, &b.api_groups)
            .then_with(|| by_list(&a.api_versions, &b.api_versions))
            .then_with(|| by_list(&a.resources, &b.resources))
            .then_with(|| by_list(&a.operations, &b.operations))
            .then_with(|| a.scope.cmp(&b.scope))
    });
    out
}

/// One configuration object.
fn config(kind: &str, name: &str, webhooks: &[Webhook], phase: Phase, options: &Options) -> Value {
    let managed_by = options.naming.names().managed_by;
    let mut out = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {
            "name": name,
            // The installation's label (Kyverno's own under its names) and
            // Kyverno's Helm chart's default annotation, which keeps AKS's
            // admissions enforcer away.
            "labels": {managed_by.0: managed_by.1},
            "annotations": {"admissions.enforcer/disabled": "true"},
        },
        "webhooks": webhooks.iter().map(|w| render(w, phase, options)).collect::<Vec<_>>(),
    });
    if let Ca::InjectedFrom(certificate) = &options.ca {
        out["metadata"]["annotations"][INJECT_CA_FROM] = json!(certificate);
    }
    out
}

fn render(w: &Webhook, phase: Phase, options: &Options) -> Value {
    let selector = |s: &Option<LabelSelector>| {
        s.as_ref()
            .and_then(|s| serde_json::to_value(s).ok())
            .unwrap_or_else(|| json!({}))
    };
    let mut out = json!({
        "admissionReviewVersions": ["v1"],
        "clientConfig": {
            "service": {
                "name": options.service_name,
                "namespace": options.service_namespace,
                "path": w.path,
                "port": options.service_port,
            },
        },
        "failurePolicy": if w.fail { "Fail" } else { "Ignore" },
        "matchPolicy": if w.exact { "Exact" } else { "Equivalent" },
        "name": w.name,
        "namespaceSelector": selector(&w.namespace_selector),
        "objectSelector": selector(&w.object_selector),
        "rules": serde_json::to_value(&w.rules).unwrap_or_else(|_| json!([])),
        "sideEffects": "NoneOnDryRun",
        "timeoutSeconds": w.timeout_seconds.unwrap_or(DEFAULT_TIMEOUT_SECONDS),
    });
    if let Ca::Bundle(pem) = &options.ca {
        out["clientConfig"]["caBundle"] =
            json!(base64::engine::general_purpose::STANDARD.encode(pem));
    }
    if !w.match_conditions.is_empty() {
        out["matchConditions"] = w
            .match_conditions
            .iter()
            .map(|(name, expression)| json!({"name": name, "expression": expression}))
            .collect();
    }
    if phase == Phase::Mutate {
        // Kyverno leaves it unset; the API server's default is Never.
        out["reinvocationPolicy"] = json!("Never");
    }
    out
}
