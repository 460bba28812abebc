//! The manifests in `deploy/`, checked without a cluster: every overlay is
//! rendered by `kubectl kustomize`, every object parses into its
//! Kubernetes type with no field left over, and the objects fit together
//! (selectors, ports, names, certificates, RBAC against what ivpol does);
//! the Deployment runs `ivpol serve` with flags the real binary has, its
//! probes hit routes the server answers, and its cache works as the pod's
//! user. (No cluster runs them here.)

mod certificates;
mod pods;
mod rbac;

use ivpol_tests::kustomize::{self, deploy_dir};
use ivpol_tests::{ivpol_bin, precompile_cache_dir};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// The production install's objects (`kustomize::install`), each with its
/// `Kind/name`.
fn manifests() -> Vec<(String, Value)> {
    kustomize::install()
        .iter()
        .map(|v| {
            (
                format!("{}/{}", text(&v["kind"]), text(&v["metadata"]["name"])),
                v.clone(),
            )
        })
        .collect()
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// The one object of `kind` named `name`.
fn named<'a>(all: &'a [(String, Value)], kind: &str, name: &str) -> &'a Value {
    let found: Vec<&Value> = (all.iter())
        .filter(|(_, v)| v["kind"] == kind && v["metadata"]["name"] == name)
        .map(|(_, v)| v)
        .collect();
    assert_eq!(found.len(), 1, "one {kind} {name} expected in deploy/");
    found[0]
}

/// The only object of `kind`.
fn one<'a>(all: &'a [(String, Value)], kind: &str) -> &'a Value {
    let found: Vec<&Value> = (all.iter())
        .filter(|(_, v)| v["kind"] == kind)
        .map(|(_, v)| v)
        .collect();
    assert_eq!(found.len(), 1, "one {kind} expected in deploy/");
    found[0]
}

/// ivpol's Deployment and its Service (beside the metrics one).
fn deployment(all: &[(String, Value)]) -> &Value {
    named(all, "Deployment", "ivpol")
}

fn service(all: &[(String, Value)]) -> &Value {
    named(all, "Service", "ivpol")
}

/// `a` and `b` hold the same JSON, numbers compared by value (a typed
/// round trip turns `30` into `30.0`); the first difference otherwise.
fn same(a: &Value, b: &Value, path: &str) -> Result<(), String> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.as_f64() == y.as_f64() => Ok(()),
        (Value::Object(x), Value::Object(y)) => {
            if let Some(k) = y.keys().find(|k| !x.contains_key(*k)) {
                return Err(format!("{path}.{k}: {} appeared", y[k.as_str()]));
            }
            for (k, v) in x {
                match y.get(k) {
                    Some(w) => same(v, w, &format!("{path}.{k}"))?,
                    None => return Err(format!("{path}.{k}: {v} is no field of the type")),
                }
            }
            Ok(())
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => (x.iter().zip(y).enumerate())
            .try_for_each(|(i, (x, y))| same(x, y, &format!("{path}[{i}]"))),
        _ if a == b => Ok(()),
        _ => Err(format!("{path}: {a} became {b}")),
    }
}

/// `v` parsed as `T` and written back is `v`: a misspelt or misplaced field,
/// which the API server would drop or refuse, is a difference.
fn round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(v: &Value) -> Result<(), String> {
    let typed: T = serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
    let back = serde_json::to_value(&typed).map_err(|e| e.to_string())?;
    same(v, &back, "")
}

/// Parses a rendered object into its k8s-openapi type; the custom
/// resources of other projects (cert-manager, the Prometheus Operator) get
/// their group checked, as no Rust type of theirs is vendored.
fn typed(v: &Value) -> Result<(), String> {
    use k8s_openapi::api::{apps, batch, core, networking, policy, rbac, scheduling};
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    match (text(&v["apiVersion"]), text(&v["kind"])) {
        ("v1", "Namespace") => round_trip::<core::v1::Namespace>(v),
        ("v1", "ServiceAccount") => round_trip::<core::v1::ServiceAccount>(v),
        ("v1", "ConfigMap") => round_trip::<core::v1::ConfigMap>(v),
        // kustomize wraps long base64 lines, which the API server's
        // decoder (Go's) skips; k8s-openapi's does not.
        ("v1", "Secret") => round_trip::<core::v1::Secret>(&unwrapped_data(v)),
        ("v1", "Service") => round_trip::<core::v1::Service>(v),
        ("apps/v1", "Deployment") => round_trip::<apps::v1::Deployment>(v),
        ("batch/v1", "CronJob") => round_trip::<batch::v1::CronJob>(v),
        ("policy/v1", "PodDisruptionBudget") => round_trip::<policy::v1::PodDisruptionBudget>(v),
        ("scheduling.k8s.io/v1", "PriorityClass") => round_trip::<scheduling::v1::PriorityClass>(v),
        ("networking.k8s.io/v1", "NetworkPolicy") => round_trip::<networking::v1::NetworkPolicy>(v),
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => round_trip::<rbac::v1::ClusterRole>(v),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => {
            round_trip::<rbac::v1::ClusterRoleBinding>(v)
        }
        ("rbac.authorization.k8s.io/v1", "Role") => round_trip::<rbac::v1::Role>(v),
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => round_trip::<rbac::v1::RoleBinding>(v),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => {
            round_trip::<CustomResourceDefinition>(v)
        }
        ("cert-manager.io/v1", "Issuer" | "Certificate")
        | ("monitoring.coreos.com/v1", "ServiceMonitor") => match v["spec"].is_object() {
            true => Ok(()),
            false => Err("no spec".into()),
        },
        (api, kind) => Err(format!(
            "{api} {kind} is not a kind deploy/ is expected to hold"
        )),
    }
}

/// A Secret with the line breaks taken out of its base64 `data`.
fn unwrapped_data(secret: &Value) -> Value {
    let mut out = secret.clone();
    if let Some(data) = out["data"].as_object_mut() {
        for v in data.values_mut() {
            *v = Value::from(text(v).split_whitespace().collect::<String>());
        }
    }
    out
}

/// Every overlay renders, and every object in it parses into its type with
/// nothing left over and names itself in a namespace where it must.
#[test]
fn every_overlay_renders_into_typed_objects() {
    let (self_signed, _copy) = kustomize::self_signed();
    let dir = deploy_dir();
    for (overlay, objects) in [
        (
            "the install with every component",
            kustomize::install().to_vec(),
        ),
        (
            "overlays/cert-manager",
            kustomize::render(&dir.join("overlays/cert-manager")),
        ),
        (
            "overlays/with-kyverno-crds",
            kustomize::render(&dir.join("overlays/with-kyverno-crds")),
        ),
        ("overlays/self-signed", self_signed),
    ] {
        assert!(objects.len() > 10, "{overlay}: {} objects", objects.len());
        for v in &objects {
            let what = format!(
                "{overlay}: {} {}",
                text(&v["kind"]),
                text(&v["metadata"]["name"])
            );
            typed(v).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(!text(&v["metadata"]["name"]).is_empty(), "{what}: no name");
            let cluster_scoped = matches!(
                text(&v["kind"]),
                "Namespace"
                    | "ClusterRole"
                    | "ClusterRoleBinding"
                    | "PriorityClass"
                    | "CustomResourceDefinition"
            );
            assert_eq!(
                v["metadata"]["namespace"].is_string(),
                !cluster_scoped,
                "{what}: namespace"
            );
            if !cluster_scoped {
                assert_eq!(v["metadata"]["namespace"], "ivpol", "{what}");
            }
        }
    }
    let all = manifests();
    let kinds: Vec<&str> = all.iter().filter_map(|(_, v)| v["kind"].as_str()).collect();
    for kind in [
        "Namespace",
        "ServiceAccount",
        "Deployment",
        "Service",
        "ConfigMap",
        "PodDisruptionBudget",
        "PriorityClass",
        "NetworkPolicy",
        "Role",
        "ClusterRole",
        "RoleBinding",
        "ClusterRoleBinding",
        "Certificate",
        "Issuer",
        "ServiceMonitor",
        "CronJob",
    ] {
        assert!(kinds.contains(&kind), "no {kind} in the install: {kinds:?}");
    }
}

/// `ivpol webhooks -o json` for the policies in `policies`, pointed at
/// `service`, with the CA bundle `ca`.
fn webhooks_for(service: &Value, policies: &Path, ca: &Path) -> std::process::Output {
    Command::new(ivpol_bin())
        .arg("webhooks")
        .arg("--policies")
        .arg(policies)
        .args(["--service", text(&service["metadata"]["name"])])
        .args(["--namespace", text(&service["metadata"]["namespace"])])
        .arg("--ca-bundle")
        .arg(ca)
        .args(["-o", "json"])
        .arg("--cache-dir")
        .arg(precompile_cache_dir())
        .output()
        .expect("ivpol webhooks")
}

/// The value after `flag` in `args`.
fn value_of(args: &[String], flag: &str) -> String {
    let i = args
        .iter()
        .position(|a| a == flag)
        .unwrap_or_else(|| panic!("no {flag} in {args:?}"));
    args.get(i + 1).cloned().unwrap_or_default()
}

/// The port of an `ADDR` flag (`[::]:9090`).
fn port_of(addr: &str) -> u64 {
    addr.rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {addr}"))
}

/// Metrics: the container's `metrics` port is the one --metrics-listen
/// serves, the metrics Service reaches it, the ServiceMonitor selects that
/// Service and port, and the NetworkPolicy covers ivpol's pods, opens the
/// admission port to all and the metrics port to the monitoring
/// namespace alone.
#[test]
fn metrics_have_their_port_service_monitor_and_network_policy() {
    let all = manifests();
    let d = deployment(&all);
    let c = container(d);
    let args = strings(&c["args"]);
    let metrics_port = port_of(&value_of(&args, "--metrics-listen"));
    assert_eq!(resolve_port(c, &Value::from("metrics")), Some(metrics_port));
    assert_eq!(
        resolve_port(c, &Value::from("https")),
        Some(port_of(&value_of(&args, "--listen")))
    );
    assert!(
        value_of(&args, "--listen").starts_with("[::]:"),
        "dual-stack"
    );
    let pods = &d["spec"]["template"]["metadata"]["labels"];
    let svc = named(&all, "Service", "ivpol-metrics");
    for (k, v) in svc["spec"]["selector"].as_object().expect("selector") {
        assert_eq!(&pods[k], v, "the metrics Service selects the pods");
    }
    let port = &svc["spec"]["ports"][0];
    assert_eq!(resolve_port(c, &port["targetPort"]), Some(metrics_port));
    let monitor = one(&all, "ServiceMonitor");
    assert!(
        selects(&monitor["spec"]["selector"], &svc["metadata"]["labels"]),
        "{monitor}"
    );
    assert!(
        !selects(
            &monitor["spec"]["selector"],
            &service(&all)["metadata"]["labels"]
        ),
        "not the admission Service"
    );
    assert_eq!(monitor["spec"]["endpoints"][0]["port"], port["name"]);
    let policy = one(&all, "NetworkPolicy");
    assert!(selects(&policy["spec"]["podSelector"], pods));
    let rules = policy["spec"]["ingress"].as_array().expect("ingress");
    let open_to_all: Vec<Option<u64>> = (rules.iter())
        .filter(|r| r.get("from").is_none())
        .flat_map(|r| r["ports"].as_array().cloned().unwrap_or_default())
        .map(|p| resolve_port(c, &p["port"]))
        .collect();
    assert_eq!(
        open_to_all,
        [resolve_port(c, &Value::from("https"))],
        "only the admission port is open to all"
    );
    let scrape = (rules.iter())
        .find(|r| r["ports"][0]["port"] == "metrics" || r["ports"][0]["port"] == metrics_port)
        .expect("a rule for the metrics port");
    assert_eq!(
        scrape["from"][0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"],
        "monitoring"
    );
}

/// The cloud-identity components annotate ivpol's ServiceAccount as each
/// cloud's identity webhook reads it, and the plugin component hands
/// `serve` the kubelet's config from a ConfigMap it mounts where the flag
/// points.
#[test]
fn the_cloud_identity_and_plugin_components_render_what_serve_reads() {
    for (component, annotation) in [
        ("aws-irsa", "eks.amazonaws.com/role-arn"),
        ("gke-workload-identity", "iam.gke.io/gcp-service-account"),
        ("aks-workload-identity", "azure.workload.identity/client-id"),
    ] {
        let all: Vec<(String, Value)> = kustomize::with_components(&[component])
            .into_iter()
            .map(|v| (component.to_string(), v))
            .collect();
        let sa = named(&all, "ServiceAccount", "ivpol");
        assert!(
            sa["metadata"]["annotations"][annotation].is_string(),
            "{component}: {sa}"
        );
        for (_, v) in &all {
            typed(v).unwrap_or_else(|e| panic!("{component}: {e}"));
        }
    }
    // AKS's webhook injects the identity into pods that carry its label.
    let aks: Vec<(String, Value)> = kustomize::with_components(&["aks-workload-identity"])
        .into_iter()
        .map(|v| ("aks".to_string(), v))
        .collect();
    let labels = &deployment(&aks)["spec"]["template"]["metadata"]["labels"];
    assert_eq!(labels["azure.workload.identity/use"], "true", "{labels}");
    let all: Vec<(String, Value)> = kustomize::with_components(&["credential-provider-plugins"])
        .into_iter()
        .map(|v| ("plugins".to_string(), v))
        .collect();
    let c = container(deployment(&all));
    let args = strings(&c["args"]);
    flags_exist("serve", &args);
    let config = value_of(&args, "--image-credential-provider-config");
    assert_eq!(
        value_of(&args, "--image-credential-provider-bin-dir"),
        "/plugins"
    );
    let mount = c["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| config.starts_with(&format!("{}/", text(&m["mountPath"]))))
        .unwrap_or_else(|| panic!("nothing mounted at {config}"));
    let volume = deployment(&all)["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["name"] == mount["name"])
        .expect("the mount's volume");
    let map = named(&all, "ConfigMap", text(&volume["configMap"]["name"]));
    let file = config.rsplit('/').next().unwrap_or_default();
    let kubelet: Value = serde_yaml_ng::from_str(text(&map["data"][file])).expect("YAML");
    assert_eq!(kubelet["apiVersion"], "kubelet.config.k8s.io/v1");
    assert_eq!(kubelet["kind"], "CredentialProviderConfig");
}

/// The shared-cache component hands `serve` its store, and the key and
/// password files from the Secret it mounts where the flags point.
#[test]
fn the_shared_cache_component_mounts_what_serve_reads() {
    let all: Vec<(String, Value)> = kustomize::with_components(&["shared-cache"])
        .into_iter()
        .map(|v| ("shared-cache".to_string(), v))
        .collect();
    for (_, v) in &all {
        typed(v).unwrap_or_else(|e| panic!("shared-cache: {e}"));
    }
    let c = container(deployment(&all));
    let args = strings(&c["args"]);
    flags_exist("serve", &args);
    assert!(value_of(&args, "--shared-cache").starts_with("redis://"));
    for flag in ["--shared-cache-key-file", "--shared-cache-password-file"] {
        let file = value_of(&args, flag);
        let mount = (c["volumeMounts"].as_array().into_iter().flatten())
            .find(|m| file.starts_with(&format!("{}/", text(&m["mountPath"]))))
            .unwrap_or_else(|| panic!("nothing mounted at {file}"));
        let volume = (deployment(&all)["spec"]["template"]["spec"]["volumes"].as_array())
            .into_iter()
            .flatten()
            .find(|v| v["name"] == mount["name"])
            .expect("the mount's volume");
        assert_eq!(
            volume["secret"]["secretName"], "ivpol-shared-cache",
            "{flag}"
        );
    }
}

/// Every `--flag` in `args` is one `ivpol <command> --help` lists.
fn flags_exist(command: &str, args: &[String]) {
    let help = Command::new(ivpol_bin())
        .args([command, "--help"])
        .output()
        .expect("--help");
    assert!(help.status.success());
    let help = String::from_utf8_lossy(&help.stdout);
    for flag in args.iter().filter(|a| a.starts_with("--")) {
        let documented = help
            .split(|ch: char| ch.is_whitespace() || ch == ',' || ch == '=' || ch == '[')
            .any(|w| w == flag);
        assert!(documented, "`ivpol {command}` has no {flag}:\n{help}");
    }
}

/// The image builds reproducibly: base images pinned by digest, the
/// toolchain the workspace declares (not whatever `stable` is that day),
/// the committed lockfile, and no build output or history in the context.
#[test]
fn the_image_build_is_pinned() {
    let dockerfile = std::fs::read_to_string(deploy_dir().join("Dockerfile")).expect("Dockerfile");
    let froms: Vec<&str> = (dockerfile.lines())
        .filter_map(|l| l.strip_prefix("FROM "))
        .map(|l| l.split_whitespace().next().unwrap_or_default())
        .collect();
    assert_eq!(froms.len(), 2, "{froms:?}");
    for image in &froms {
        let digest = image
            .split("@sha256:")
            .nth(1)
            .unwrap_or_else(|| panic!("{image} is not pinned by digest"));
        assert!(
            digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()),
            "{image}"
        );
    }
    let manifest = std::fs::read_to_string(deploy_dir().join("../Cargo.toml")).expect("Cargo.toml");
    let rust = (manifest.lines())
        .find_map(|l| l.strip_prefix("rust-version = "))
        .map(|v| v.trim_matches('"').to_string())
        .expect("rust-version");
    assert!(
        froms[0].starts_with(&format!("rust:{rust}")),
        "{} is not rust {rust}",
        froms[0]
    );
    assert!(
        dockerfile.contains(&format!("RUSTUP_TOOLCHAIN={rust}")),
        "the toolchain is not pinned to {rust}"
    );
    assert!(dockerfile.contains("cargo build --release --locked"));
    let ignore =
        std::fs::read_to_string(deploy_dir().join("../.dockerignore")).expect(".dockerignore");
    for entry in ["target/", ".git/"] {
        assert!(
            ignore.lines().any(|l| l == entry),
            "{entry} not in .dockerignore"
        );
    }
}

/// Each vendored CRD is the upstream file its provenance names (by
/// sha256), and together they define the kinds ivpol reads and writes.
#[test]
fn the_vendored_crds_are_the_files_their_provenance_names() {
    let dir = deploy_dir().join("crds");
    let provenance = std::fs::read_to_string(dir.join("PROVENANCE.md")).expect("PROVENANCE.md");
    let objects = kustomize::render(&dir);
    let mut kinds: Vec<&str> = objects
        .iter()
        .map(|v| text(&v["spec"]["names"]["kind"]))
        .collect();
    kinds.sort();
    assert_eq!(
        kinds,
        [
            "AdmissionResults",
            "ClusterPolicyReport",
            "ImageValidatingPolicy",
            "NamespacedImageValidatingPolicy",
            "PolicyException",
            "PolicyReport",
            "Report"
        ]
    );
    let files: Vec<_> = std::fs::read_dir(&dir)
        .expect("crds")
        .flatten()
        .map(|e| e.path())
        .collect();
    let crds: Vec<_> = files
        .iter()
        .filter(|p| {
            p.extension().is_some_and(|e| e == "yaml") && !p.ends_with("kustomization.yaml")
        })
        .collect();
    assert_eq!(crds.len(), 7);
    for path in crds {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let digest = ivpol_tests::fixtures::sha256(&std::fs::read(path).expect("read"));
        let row = (provenance.lines())
            .find(|l| l.starts_with(&format!("| `{name}`")))
            .unwrap_or_else(|| panic!("{name} has no provenance row"));
        assert!(
            row.contains(digest.trim_start_matches("sha256:")),
            "{name}: sha256 {digest} is not the one recorded"
        );
    }
}

fn container(deployment: &Value) -> &Value {
    let containers = deployment["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers");
    assert_eq!(containers.len(), 1);
    &containers[0]
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(String::from))
        .collect()
}

/// The container port a Service or probe port (number or name) refers to.
fn resolve_port(c: &Value, port: &Value) -> Option<u64> {
    let ports = c["ports"].as_array()?;
    match port {
        Value::Number(n) => ports
            .iter()
            .find(|p| p["containerPort"].as_u64() == n.as_u64())
            .and_then(|p| p["containerPort"].as_u64()),
        Value::String(name) => ports
            .iter()
            .find(|p| p["name"] == name.as_str())
            .and_then(|p| p["containerPort"].as_u64()),
        _ => None,
    }
}

/// The ConfigMap's policies load, and `ivpol webhooks` makes the
/// configurations for the Service in deploy/ (the README's command).
#[test]
fn the_config_map_policies_load_and_get_webhooks() {
    let all = manifests();
    let cm = one(&all, "ConfigMap");
    let d = deployment(&all);
    let volumes = d["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .expect("volumes");
    assert!(volumes
        .iter()
        .any(|v| v["configMap"]["name"] == cm["metadata"]["name"]));
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("policies");
    std::fs::create_dir(&dir).expect("dir");
    for (name, text) in cm["data"].as_object().expect("data") {
        std::fs::write(dir.join(name), text.as_str().expect("text")).expect("write");
    }
    let ca = ivpol_tests::certs::ca_file(tmp.path());
    let out = webhooks_for(service(&all), &dir, &ca);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("not loaded"), "{err}");
    let list: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let validating = &list["items"][1]["webhooks"][0];
    assert_eq!(validating["clientConfig"]["service"]["name"], "ivpol");
    assert_eq!(validating["clientConfig"]["service"]["namespace"], "ivpol");
    // ivpol's own namespace is never sent to ivpol.
    assert!(validating["namespaceSelector"]
        .to_string()
        .contains("\"ivpol\""));
    // The RBAC names exactly the configurations ivpol writes, each kind its own.
    let role = named(&all, "ClusterRole", "ivpol");
    for kind in [
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ] {
        let mut written: Vec<String> = (list["items"].as_array().into_iter().flatten())
            .filter(|i| i["kind"] == kind)
            .map(|i| text(&i["metadata"]["name"]).to_string())
            .collect();
        written.sort();
        let plural = format!("{}s", kind.to_lowercase());
        let mut granted: Vec<String> = (role["rules"].as_array().into_iter().flatten())
            .filter(|r| strings(&r["resources"]) == [plural.clone()])
            .flat_map(|r| strings(&r["resourceNames"]))
            .collect();
        granted.sort();
        assert_eq!(granted, written, "{kind}");
    }
}

/// Whether `selector` (a LabelSelector's `matchLabels`) selects `labels`.
fn selects(selector: &Value, labels: &Value) -> bool {
    let wanted = selector["matchLabels"].as_object().expect("matchLabels");
    !wanted.is_empty() && wanted.iter().all(|(k, v)| &labels[k] == v)
}
