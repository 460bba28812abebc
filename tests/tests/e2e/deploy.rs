//! The manifests in `deploy/`, checked without a cluster: every overlay is
//! rendered by `kubectl kustomize`, every object parses into its
//! Kubernetes type with no field left over, and the objects fit together
//! (selectors, ports, names, certificates, RBAC against what ivpol does);
//! the Deployment runs `ivpol serve` with flags the real binary has, its
//! probes hit routes the server answers, and its cache works as the pod's
//! user. (No cluster runs them here.)

use ivpol_tests::kustomize::{self, deploy_dir};
use ivpol_tests::{ivpol_bin, precompile_cache_dir, Server};
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

/// Every RoleBinding and ClusterRoleBinding names a role and ServiceAccounts
/// the install holds.
#[test]
fn every_binding_names_a_role_and_accounts_that_exist() {
    let all = manifests();
    for (what, b) in all
        .iter()
        .filter(|(_, v)| text(&v["kind"]).ends_with("Binding"))
    {
        let role = &b["roleRef"];
        named(&all, text(&role["kind"]), text(&role["name"]));
        for s in b["subjects"].as_array().expect("subjects") {
            assert_eq!(s["kind"], "ServiceAccount", "{what}");
            let sa = named(&all, "ServiceAccount", text(&s["name"]));
            assert_eq!(sa["metadata"]["namespace"], s["namespace"], "{what}");
        }
    }
}

/// No apply set holds the serving certificate's Secret, except the
/// self-signed one, which makes it from the files its operator holds:
/// re-applying must never blank a Secret that cert-manager wrote. Under
/// cert-manager, the Certificate writes the Secret the pods mount, names
/// ivpol's Service, and is issued by the install's own CA; ivpol leaves the
/// caBundle to the injector, naming that Certificate.
#[test]
fn the_serving_certificate_comes_from_cert_manager_and_no_apply_blanks_it() {
    let base = kustomize::render(&deploy_dir().join("base"));
    let all = manifests();
    for objects in [&base, &all.iter().map(|(_, v)| v.clone()).collect()] {
        let secrets: Vec<&Value> = objects.iter().filter(|v| v["kind"] == "Secret").collect();
        assert!(secrets.is_empty(), "a Secret in the apply set: {secrets:?}");
    }
    let d = deployment(&all);
    let tls = mounted_secret(d);
    let cert = named(&all, "Certificate", "ivpol-tls");
    assert_eq!(cert["spec"]["secretName"], tls.as_str());
    let s = service(&all);
    let host = format!(
        "{}.{}.svc",
        text(&s["metadata"]["name"]),
        text(&s["metadata"]["namespace"])
    );
    assert!(strings(&cert["spec"]["dnsNames"]).contains(&host), "{cert}");
    let issuer = named(&all, "Issuer", text(&cert["spec"]["issuerRef"]["name"]));
    let ca = named(&all, "Certificate", "ivpol-ca");
    assert_eq!(ca["spec"]["isCA"], true);
    assert_eq!(issuer["spec"]["ca"]["secretName"], ca["spec"]["secretName"]);
    named(&all, "Issuer", text(&ca["spec"]["issuerRef"]["name"]));
    assert!(
        cert["spec"]["renewBefore"].is_string(),
        "renewed before it expires"
    );
    let args = strings(&container(d)["args"]);
    assert_eq!(
        value_of(&args, "--inject-ca-from"),
        format!(
            "{}/{}",
            text(&cert["metadata"]["namespace"]),
            text(&cert["metadata"]["name"])
        )
    );
    assert!(!args.iter().any(|a| a == "--ca-bundle"), "{args:?}");
}

/// The self-signed overlay: make-certs.sh makes a CA and a certificate for
/// ivpol's Service, the overlay turns them into the Secret the pods mount,
/// ivpol serves that pair, and a client trusting only that CA reaches it
/// under the Service's name, as the API server will; `ivpol webhooks`
/// takes the CA as the caBundle.
#[test]
fn the_self_signed_overlay_serves_a_certificate_its_ca_vouches_for() {
    use base64::Engine as _;
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let (objects, copy) = kustomize::self_signed();
    let all: Vec<(String, Value)> = objects.into_iter().map(|v| (String::new(), v)).collect();
    let secret = &unwrapped_data(one(&all, "Secret"));
    assert_eq!(
        secret["metadata"]["name"],
        mounted_secret(deployment(&all)).as_str()
    );
    assert_eq!(secret["type"], "kubernetes.io/tls");
    let file = |key: &str| {
        let b64 = text(&secret["data"][key]);
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(b64)
                .expect("base64"),
        )
        .expect("PEM")
    };
    let (cert, key, ca) = (file("tls.crt"), file("tls.key"), file("ca.crt"));
    let s = Server::start_with(
        &[],
        ivpol_tests::Options {
            tls: Some((&cert, &key)),
            ..Default::default()
        },
    );
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca.as_bytes()).expect("CA"))
        .expect("root");
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("ivpol.ivpol.svc").expect("name");
    let mut conn =
        rustls::ClientConnection::new(std::sync::Arc::new(config), name).expect("client");
    let mut tcp =
        std::net::TcpStream::connect(s.base.trim_start_matches("https://")).expect("connect");
    while conn.is_handshaking() {
        conn.complete_io(&mut tcp)
            .expect("the CA vouches for the served certificate");
    }
    let ca_file = copy.path().join("deploy/overlays/self-signed/ca.crt");
    let out = webhooks_for(service(&all), &deploy_dir().join("../policies"), &ca_file);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let readme = std::fs::read_to_string(deploy_dir().join("README.md")).expect("README");
    assert!(
        readme.contains("make-certs.sh"),
        "deploy/README.md does not say how to make them"
    );
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

/// The Secret volume the Deployment mounts at /tls.
fn mounted_secret(d: &Value) -> String {
    let volumes = d["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .expect("volumes");
    let name = (container(d)["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten())
    .find(|m| m["mountPath"] == "/tls")
    .map(|m| m["name"].clone())
    .expect("/tls mounted");
    (volumes.iter())
        .find(|v| v["name"] == name)
        .and_then(|v| v["secret"]["secretName"].as_str())
        .expect("a Secret volume")
        .to_string()
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

/// Tenants: `admin` and `edit` (aggregated) may write NamespacedImage-
/// ValidatingPolicies, `view` may read them and the Reports; none of the
/// aggregated roles touches PolicyExceptions or cluster policies, which
/// only the explicit, unaggregated exception role may write.
#[test]
fn tenants_get_namespaced_policies_through_aggregation_and_exceptions_only_explicitly() {
    use ivpol_tests::rbac::{role_allows, Attributes};
    let all = manifests();
    let ask = |verb: &str, group: &str, resource: &str| Attributes {
        verb: verb.into(),
        group: group.into(),
        resource: resource.into(),
        namespace: Some("team".into()),
        name: None,
    };
    let aggregated_to = |to: &str| -> Vec<&Value> {
        (all.iter().map(|(_, v)| v))
            .filter(|v| v["kind"] == "ClusterRole")
            .filter(|v| {
                v["metadata"]["labels"][format!("rbac.authorization.k8s.io/aggregate-to-{to}")]
                    == "true"
            })
            .collect()
    };
    let may = |to: &str, a: &Attributes| aggregated_to(to).iter().any(|r| role_allows(r, a));
    let kyverno = "policies.kyverno.io";
    for to in ["admin", "edit"] {
        for verb in ["create", "update", "delete", "get", "list"] {
            assert!(
                may(to, &ask(verb, kyverno, "namespacedimagevalidatingpolicies")),
                "{to} {verb}"
            );
        }
    }
    assert!(may(
        "view",
        &ask("list", kyverno, "namespacedimagevalidatingpolicies")
    ));
    assert!(may("view", &ask("get", "openreports.io", "reports")));
    assert!(may("view", &ask("get", "wgpolicyk8s.io", "policyreports")));
    assert!(!may(
        "view",
        &ask("create", kyverno, "namespacedimagevalidatingpolicies")
    ));
    for to in ["admin", "edit", "view"] {
        for verb in ["create", "update", "patch", "delete"] {
            assert!(
                !may(to, &ask(verb, kyverno, "policyexceptions")),
                "{to} {verb} policyexceptions"
            );
            assert!(
                !may(to, &ask(verb, kyverno, "imagevalidatingpolicies")),
                "{to} {verb} cluster policies"
            );
        }
    }
    let exceptions = named(&all, "ClusterRole", "ivpol-policy-exception-editor");
    assert!(exceptions["metadata"]["labels"]
        .as_object()
        .is_none_or(|l| l.keys().all(|k| !k.contains("aggregate"))));
    assert!(role_allows(
        exceptions,
        &ask("create", kyverno, "policyexceptions")
    ));
    let readme = std::fs::read_to_string(deploy_dir().join("README.md")).expect("README");
    assert!(
        readme.contains("ivpol-policy-exception-editor"),
        "the explicit role is documented"
    );
}

/// The background scan's CronJob runs `ivpol scan` with flags the binary
/// has, as its own ServiceAccount, locked down as the server's pod, with
/// its cache below an emptyDir.
#[test]
fn the_scan_cron_job_runs_scan_as_its_own_account() {
    let all = manifests();
    let job = one(&all, "CronJob");
    assert_eq!(job["spec"]["concurrencyPolicy"], "Forbid");
    let pod = &job["spec"]["jobTemplate"]["spec"]["template"];
    let sa = text(&pod["spec"]["serviceAccountName"]);
    assert_eq!(sa, "ivpol-scan");
    named(&all, "ServiceAccount", sa);
    let c = &pod["spec"]["containers"][0];
    let args = strings(&c["args"]);
    assert_eq!(args.first().map(String::as_str), Some("scan"));
    assert!(args.iter().any(|a| a == "--kubernetes"));
    flags_exist("scan", &args);
    assert_eq!(c["image"], container(deployment(&all))["image"]);
    assert_eq!(pod["spec"]["securityContext"]["runAsNonRoot"], true);
    assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], true);
    let (env, mount, tmp) = cache_layout_of(c);
    assert!(env.starts_with(&format!("{mount}/")), "{env} below {mount}");
    assert!(tmp);
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

/// Least privilege: no wildcard, nothing that lists or writes Secrets, no
/// cluster-wide Secret access bound to ivpol, and no verb beyond the
/// issue's list for each resource.
#[test]
fn the_rbac_is_least_privilege() {
    use ivpol_tests::rbac::{allows, Attributes};
    let all = ivpol_tests::rbac::deploy_manifests();
    for role in all
        .iter()
        .filter(|v| v["kind"] == "ClusterRole" || v["kind"] == "Role")
    {
        for rule in role["rules"].as_array().expect("rules") {
            for field in ["apiGroups", "resources", "verbs"] {
                assert!(
                    !strings(&rule[field]).contains(&"*".to_string()),
                    "{}: a wildcard in {field}",
                    role["metadata"]["name"]
                );
            }
        }
    }
    let may =
        |verb: &str, group: &str, resource: &str, namespace: Option<&str>, name: Option<&str>| {
            allows(
                &all,
                "ivpol",
                "ivpol",
                &Attributes {
                    verb: verb.into(),
                    group: group.into(),
                    resource: resource.into(),
                    namespace: namespace.map(String::from),
                    name: name.map(String::from),
                },
            )
        };
    // What it needs.
    assert!(may(
        "watch",
        "policies.kyverno.io",
        "imagevalidatingpolicies",
        None,
        None
    ));
    assert!(may("list", "", "namespaces", None, None));
    assert!(may("get", "", "secrets", Some("ivpol"), Some("regcred")));
    assert!(may(
        "update",
        "coordination.k8s.io",
        "leases",
        Some("ivpol"),
        Some("ivpol")
    ));
    assert!(may(
        "get",
        "rbac.authorization.k8s.io",
        "clusterroles",
        None,
        Some("ivpol")
    ));
    // The scan writes and deletes reports under its own account; serve
    // (components/admission-reports) only adds admission results to the
    // resources' PolicyReports, and hands them over in its own namespace.
    for verb in ["get", "create", "patch"] {
        assert!(may(
            verb,
            "wgpolicyk8s.io",
            "policyreports",
            Some("team"),
            Some("x")
        ));
    }
    for verb in ["delete", "list"] {
        assert!(!may(
            verb,
            "wgpolicyk8s.io",
            "policyreports",
            Some("team"),
            Some("x")
        ));
    }
    for verb in ["create", "patch", "delete", "list"] {
        assert!(
            !may(verb, "openreports.io", "reports", Some("team"), Some("x")),
            "serve never writes openreports"
        );
    }
    for verb in ["create", "list", "delete"] {
        assert!(may(
            verb,
            "reports.ivpol.dev",
            "admissionresults",
            Some("ivpol"),
            None
        ));
        assert!(!may(
            verb,
            "reports.ivpol.dev",
            "admissionresults",
            Some("team"),
            None
        ));
    }
    for (verb, name) in [
        ("get", Some("admin")),
        ("list", None),
        ("update", Some("ivpol")),
    ] {
        assert!(
            !may(
                verb,
                "rbac.authorization.k8s.io",
                "clusterroles",
                None,
                name
            ),
            "{verb} clusterroles"
        );
    }
    assert!(may(
        "patch",
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
        None,
        Some("ivpol-resource-validating-webhook-cfg")
    ));
    // What it must not have.
    for verb in ["list", "watch", "create", "update", "patch", "delete"] {
        assert!(
            !may(verb, "", "secrets", Some("ivpol"), None),
            "{verb} secrets"
        );
    }
    assert!(
        !may("get", "", "secrets", Some("team"), Some("regcred")),
        "another namespace's secrets"
    );
    assert!(
        !may("get", "", "secrets", None, Some("regcred")),
        "secrets cluster-wide"
    );
    assert!(!may(
        "update",
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
        None,
        Some("ivpol-resource-mutating-webhook-cfg")
    ));
    // Webhook configurations: its own, by name, and no verb it never uses.
    let hooks = "validatingwebhookconfigurations";
    let admission = "admissionregistration.k8s.io";
    for verb in ["create", "get", "patch"] {
        assert!(may(
            verb,
            admission,
            hooks,
            None,
            Some("ivpol-policy-validating-webhook-cfg")
        ));
        assert!(
            !may(verb, admission, hooks, None, Some("someone-else")),
            "{verb} on another's configuration"
        );
    }
    for verb in ["update", "delete", "list"] {
        assert!(
            !may(
                verb,
                admission,
                hooks,
                None,
                Some("ivpol-resource-validating-webhook-cfg")
            ),
            "{verb} is never used on the configurations"
        );
    }
    assert!(!may(
        "delete",
        "policies.kyverno.io",
        "imagevalidatingpolicies",
        None,
        Some("p")
    ));
    assert!(
        !may("get", "", "configmaps", Some("team"), Some("x")),
        "nothing is granted by default"
    );
    assert!(!may(
        "update",
        "coordination.k8s.io",
        "leases",
        Some("kube-system"),
        Some("x")
    ));
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

#[test]
fn the_deployment_runs_serve_with_flags_the_binary_has() {
    let all = manifests();
    let d = deployment(&all);
    assert_eq!(d["spec"]["replicas"], 3);
    let c = container(d);
    let args = strings(&c["args"]);
    assert_eq!(args.first().map(String::as_str), Some("serve"), "{args:?}");
    flags_exist("serve", &args);
    assert_eq!(value_of(&args, "--listen"), "[::]:9443");
    assert_eq!(value_of(&args, "--tls-cert"), "/tls/tls.crt");
    assert_eq!(value_of(&args, "--tls-key"), "/tls/tls.key");
    assert_eq!(value_of(&args, "--policies"), "/policies");
    // The webhooks' owner is the install's own ClusterRole.
    named(
        &all,
        "ClusterRole",
        &value_of(&args, "--webhook-owner-cluster-role"),
    );
    // The mounts the flags read exist, read-only.
    let mounts: Vec<(String, bool)> = c["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            (
                m["mountPath"].as_str().unwrap_or_default().to_string(),
                m["readOnly"] == true,
            )
        })
        .collect();
    for path in ["/tls", "/policies"] {
        assert!(
            mounts.contains(&(path.to_string(), true)),
            "{path} not mounted read-only: {mounts:?}"
        );
    }
    // Locked down: non-root, read-only root, no capabilities; the token
    // is mounted for --kubernetes.
    let pod = &d["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(pod["automountServiceAccountToken"], true);
    assert!(args.iter().any(|a| a == "--kubernetes"), "{args:?}");
    let sc = &c["securityContext"];
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(strings(&sc["capabilities"]["drop"]), ["ALL"]);
    assert!(c["resources"]["requests"].is_object() && c["resources"]["limits"].is_object());
}

/// The pod's memory limit fits the instance pool with two policy-set
/// generations alive (a reload overlaps them) plus the host's 256 MiB:
/// 2 × --max-instances × --instance-memory-mib + 256 ≤ the limit in MiB.
#[test]
fn the_memory_limit_fits_two_generations_of_the_instance_pool() {
    let all = manifests();
    let c = container(deployment(&all));
    let args = strings(&c["args"]);
    let number = |flag: &str| -> u64 {
        let i = args.iter().position(|a| a == flag);
        let value = i.and_then(|i| args.get(i + 1));
        value
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("deploy/ must set {flag} to a number: {args:?}"))
    };
    // Each generation's pool, and the instance it keeps for failure answers.
    let needed = 2 * (number("--max-instances") + 1) * number("--instance-memory-mib") + 256;
    assert!(number("--instances") <= number("--max-instances"));
    let limit = c["resources"]["limits"]["memory"]
        .as_str()
        .expect("a memory limit");
    let limit_mib: u64 = match limit.strip_suffix("Gi") {
        Some(gi) => gi.parse::<u64>().expect("Gi") * 1024,
        None => limit
            .strip_suffix("Mi")
            .and_then(|m| m.parse().ok())
            .unwrap_or_else(|| panic!("memory limit {limit} is not in Mi or Gi")),
    };
    assert!(
        needed <= limit_mib,
        "the pool needs {needed} MiB but the limit is {limit}"
    );
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

#[test]
fn the_service_targets_the_container_port() {
    let all = manifests();
    let d = deployment(&all);
    let s = service(&all);
    let c = container(d);
    assert_eq!(s["metadata"]["namespace"], d["metadata"]["namespace"]);
    // The Service selects the pods.
    let labels = &d["spec"]["template"]["metadata"]["labels"];
    for (k, v) in s["spec"]["selector"].as_object().expect("selector") {
        assert_eq!(
            &labels[k], v,
            "the Service selector {k} does not match the pods"
        );
    }
    let ports = s["spec"]["ports"].as_array().expect("ports");
    assert_eq!(ports.len(), 1);
    assert_eq!(ports[0]["port"], 443, "ivpol webhooks defaults to port 443");
    assert_eq!(resolve_port(c, &ports[0]["targetPort"]), Some(9443));
    // And the pods' ServiceAccount is the one in deploy/.
    let sa = named(&all, "ServiceAccount", "ivpol");
    assert_eq!(
        d["spec"]["template"]["spec"]["serviceAccountName"],
        sa["metadata"]["name"]
    );
}

/// The probes ask for routes `ivpol serve` answers, on its port.
#[test]
fn the_probes_hit_routes_the_server_answers() {
    let all = manifests();
    let d = deployment(&all);
    let c = container(d);
    let server = Server::start(&[]);
    for probe in ["startupProbe", "readinessProbe", "livenessProbe"] {
        let get = &c[probe]["httpGet"];
        assert_eq!(get["scheme"], "HTTPS", "{probe}");
        assert_eq!(resolve_port(c, &get["port"]), Some(9443), "{probe}");
        let path = get["path"].as_str().expect("probe path");
        let (status, _) = server.get(path);
        assert_eq!(status, 200, "{probe} {path}");
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

/// `(IVPOL_CACHE_DIR, the cache volume's mountPath, whether /tmp is a
/// volume)` of the shipped Deployment.
fn cache_layout(deployment: &Value) -> (String, String, bool) {
    cache_layout_of(container(deployment))
}

/// [`cache_layout`] of one container.
fn cache_layout_of(c: &Value) -> (String, String, bool) {
    let env = (c["env"].as_array().into_iter().flatten())
        .find(|e| e["name"] == "IVPOL_CACHE_DIR")
        .and_then(|e| e["value"].as_str())
        .expect("IVPOL_CACHE_DIR in the container's env")
        .to_string();
    let mounts: Vec<&Value> = c["volumeMounts"].as_array().into_iter().flatten().collect();
    let mount = |name: &str| {
        (mounts.iter())
            .find(|m| m["name"] == name)
            .and_then(|m| m["mountPath"].as_str())
            .map(String::from)
    };
    let cache = mount("cache").expect("a cache volume");
    let tmp = mounts.iter().any(|m| m["mountPath"] == "/tmp");
    (env, cache, tmp)
}

/// The shipped pod runs as 65532 with a read-only root: the cache volume is
/// an emptyDir (root-owned, mode 0777), which that uid cannot make private,
/// so the cache is a directory below it, and `/tmp` is an emptyDir too. Run
/// as that uid against such a mount, the child compile caches its artifact
/// and the server never compiles in its own process. The cache at the
/// mount point itself, with no writable scratch directory, is what the pod
/// did before: the server then compiles in its own process, and says so in
/// its log and metric.
#[test]
fn the_shipped_pods_cache_works_as_a_non_root_user() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    if !root {
        eprintln!("skipped: running as another uid needs root");
        return;
    }
    let all = manifests();
    let (env, mount, tmp) = cache_layout(deployment(&all));
    let below = Path::new(&env)
        .strip_prefix(&mount)
        .expect("IVPOL_CACHE_DIR is inside the cache volume");
    assert!(
        !below.as_os_str().is_empty(),
        "the cache is below the mount point, not at it"
    );
    assert!(tmp, "/tmp is a volume: the root file system is read-only");
    let uid = deployment(&all)["spec"]["template"]["spec"]["securityContext"]["runAsUser"]
        .as_u64()
        .and_then(|u| u32::try_from(u).ok())
        .expect("runAsUser");
    let volumes = tempfile::tempdir().expect("temp dir");
    let empty_dir = |name: &str| {
        let d = volumes.path().join(name);
        std::fs::create_dir(&d).expect("mkdir");
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        d
    };
    std::fs::set_permissions(volumes.path(), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    let (cache_mount, tmp_mount) = (empty_dir("cache"), empty_dir("tmp"));
    let cache = cache_mount.join(below);
    let serve = |cache: &Path, tmpdir: &Path| {
        let tmpdir = tmpdir.display().to_string();
        Server::start_with(
            &[],
            ivpol_tests::Options {
                run_as: Some(uid),
                cache_dir: Some(cache),
                env: vec![("TMPDIR".into(), tmpdir)],
                ..Default::default()
            },
        )
    };
    let s = serve(&cache, &tmp_mount);
    assert_eq!(
        s.metric("ivpol_component_compiled_in_process"),
        0.0,
        "{}",
        s.log()
    );
    let cached = std::fs::read_dir(&cache).expect("the cache directory was made");
    assert!(
        cached.flatten().count() > 0,
        "an artifact was cached: {}",
        s.log()
    );
    drop(s);
    let s = serve(&cache_mount, Path::new("/nonexistent-scratch"));
    assert_eq!(
        s.metric("ivpol_component_compiled_in_process"),
        1.0,
        "{}",
        s.log()
    );
    assert!(s.log().contains("compiled in this process"), "{}", s.log());
}

/// Whether `selector` (a LabelSelector's `matchLabels`) selects `labels`.
fn selects(selector: &Value, labels: &Value) -> bool {
    let wanted = selector["matchLabels"].as_object().expect("matchLabels");
    !wanted.is_empty() && wanted.iter().all(|(k, v)| &labels[k] == v)
}

/// Losing a node or a rollout never takes admission down: three replicas,
/// a disruption budget that keeps two (on the pods' own labels), spread
/// over nodes and zones, a priority that outranks ordinary workloads, and
/// a startup probe that gives the first compile and API sync five minutes
/// before liveness may restart the pod.
#[test]
fn the_deployment_survives_a_node_loss_and_a_slow_start() {
    let all = manifests();
    let d = deployment(&all);
    let pod = &d["spec"]["template"];
    let labels = &pod["metadata"]["labels"];
    let replicas = d["spec"]["replicas"].as_u64().expect("replicas");
    let pdb = one(&all, "PodDisruptionBudget");
    assert_eq!(pdb["metadata"]["namespace"], d["metadata"]["namespace"]);
    assert!(selects(&pdb["spec"]["selector"], labels), "{pdb}");
    let min = pdb["spec"]["minAvailable"].as_u64().expect("minAvailable");
    assert!(
        min >= 2 && min < replicas,
        "one pod may go, two stay: {pdb}"
    );
    let spread = pod["spec"]["topologySpreadConstraints"]
        .as_array()
        .expect("spread");
    let keys: Vec<&str> = spread
        .iter()
        .filter_map(|c| c["topologyKey"].as_str())
        .collect();
    assert_eq!(
        keys,
        ["kubernetes.io/hostname", "topology.kubernetes.io/zone"]
    );
    for c in spread {
        assert!(selects(&c["labelSelector"], labels), "{c}");
        assert_eq!(c["maxSkew"], 1, "{c}");
    }
    let class = one(&all, "PriorityClass");
    assert_eq!(pod["spec"]["priorityClassName"], class["metadata"]["name"]);
    assert!(
        class["value"].as_u64().is_some_and(|v| v >= 1_000_000),
        "{class}"
    );
    let startup = &container(d)["startupProbe"];
    let budget = startup["failureThreshold"].as_u64().unwrap_or(3)
        * startup["periodSeconds"].as_u64().unwrap_or(10);
    assert!(budget >= 300, "five minutes for the first start: {startup}");
}

/// The namespace enforces the `restricted` Pod Security Standard, which the
/// pod meets (non-root, no capabilities, no privilege escalation, seccomp).
#[test]
fn the_namespace_enforces_the_restricted_pod_security_standard() {
    let all = manifests();
    let ns = one(&all, "Namespace");
    let labels = &ns["metadata"]["labels"];
    for mode in ["enforce", "audit", "warn"] {
        assert_eq!(
            labels[format!("pod-security.kubernetes.io/{mode}")],
            "restricted",
            "{ns}"
        );
    }
    let d = deployment(&all);
    let pod = &d["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    let c = container(d);
    assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
    assert_eq!(
        c["securityContext"]["capabilities"]["drop"],
        serde_json::json!(["ALL"])
    );
}
