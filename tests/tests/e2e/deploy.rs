//! The manifests in `deploy/`, checked without a cluster: they parse, name
//! themselves, ask for no RBAC, run `ivpol serve` with flags the real binary
//! has, probe routes the server answers, and the Service reaches the
//! container's port. (No cluster runs them here.)

use ivpol_tests::{ivpol_bin, precompile_cache_dir, Server};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

/// Every document of every YAML file in deploy/, with its file name.
fn manifests() -> Vec<(String, Value)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(deploy_dir())
        .expect("deploy/")
        .map(|e| e.expect("entry").path())
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no manifests in deploy/");
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).expect("read manifest");
        let name = f
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        for doc in serde_yaml_ng::Deserializer::from_str(&text) {
            let v: Value = serde::Deserialize::deserialize(doc)
                .unwrap_or_else(|e| panic!("{name} is not valid YAML: {e}"));
            if !v.is_null() {
                out.push((name.clone(), v));
            }
        }
    }
    out
}

fn one<'a>(all: &'a [(String, Value)], kind: &str) -> &'a Value {
    let found: Vec<&Value> = all
        .iter()
        .filter(|(_, v)| v["kind"] == kind)
        .map(|(_, v)| v)
        .collect();
    assert_eq!(found.len(), 1, "one {kind} expected in deploy/");
    found[0]
}

#[test]
fn every_manifest_parses_and_names_itself() {
    let all = manifests();
    for (file, v) in &all {
        for field in ["apiVersion", "kind"] {
            assert!(
                v[field].as_str().is_some_and(|s| !s.is_empty()),
                "{file}: no {field}"
            );
        }
        assert!(
            v["metadata"]["name"]
                .as_str()
                .is_some_and(|s| !s.is_empty()),
            "{file}: no metadata.name"
        );
    }
    let kinds: Vec<&str> = all.iter().filter_map(|(_, v)| v["kind"].as_str()).collect();
    for kind in [
        "Namespace",
        "ServiceAccount",
        "Deployment",
        "Service",
        "ConfigMap",
        "PodDisruptionBudget",
        "PriorityClass",
    ] {
        assert!(kinds.contains(&kind), "no {kind} in deploy/: {kinds:?}");
    }
    for kind in ["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"] {
        assert!(kinds.contains(&kind), "no {kind} in deploy/: {kinds:?}");
    }
}

/// The apply set holds no Secret: re-applying `deploy/` must never blank
/// the serving certificate a certificate manager (or an operator) wrote.
/// The Secret the pods mount is made by hand, and deploy/README.md says
/// how, under the name the Deployment mounts.
#[test]
fn the_apply_set_never_overwrites_the_tls_secret() {
    let all = manifests();
    let secrets: Vec<&String> = (all.iter())
        .filter(|(_, v)| v["kind"] == "Secret")
        .map(|(file, _)| file)
        .collect();
    assert!(secrets.is_empty(), "a Secret in the apply set: {secrets:?}");
    let d = one(&all, "Deployment");
    let volumes = d["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .expect("volumes");
    let tls = (volumes.iter())
        .find_map(|v| v["secret"]["secretName"].as_str())
        .expect("a Secret volume");
    let readme = std::fs::read_to_string(deploy_dir().join("README.md")).expect("README");
    assert!(
        readme.contains(&format!("create secret generic {tls} -n ivpol")),
        "deploy/README.md does not say how to create {tls}"
    );
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
        "patch",
        "openreports.io",
        "reports",
        Some("team"),
        Some("x")
    ));
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
    let d = one(&all, "Deployment");
    assert_eq!(d["spec"]["replicas"], 3);
    let c = container(d);
    let args = strings(&c["args"]);
    assert_eq!(args.first().map(String::as_str), Some("serve"), "{args:?}");
    let help = Command::new(ivpol_bin())
        .args(["serve", "--help"])
        .output()
        .expect("ivpol serve --help");
    assert!(help.status.success());
    let help = String::from_utf8_lossy(&help.stdout);
    for flag in args.iter().filter(|a| a.starts_with("--")) {
        let documented = help
            .split(|ch: char| ch.is_whitespace() || ch == ',' || ch == '=' || ch == '[')
            .any(|w| w == flag);
        assert!(documented, "`ivpol serve` has no {flag}:\n{help}");
    }
    let value_of = |flag: &str| {
        let i = args
            .iter()
            .position(|a| a == flag)
            .unwrap_or_else(|| panic!("no {flag}"));
        args.get(i + 1).cloned().unwrap_or_default()
    };
    assert_eq!(value_of("--listen"), "0.0.0.0:9443");
    assert_eq!(value_of("--tls-cert"), "/tls/tls.crt");
    assert_eq!(value_of("--tls-key"), "/tls/tls.key");
    assert_eq!(value_of("--policies"), "/policies");
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
    let c = container(one(&all, "Deployment"));
    let args = strings(&c["args"]);
    let number = |flag: &str| -> u64 {
        let i = args.iter().position(|a| a == flag);
        let value = i.and_then(|i| args.get(i + 1));
        value
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("deploy/ must set {flag} to a number: {args:?}"))
    };
    let needed = 2 * number("--max-instances") * number("--instance-memory-mib") + 256;
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
    let d = one(&all, "Deployment");
    let s = one(&all, "Service");
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
    let sa = one(&all, "ServiceAccount");
    assert_eq!(
        d["spec"]["template"]["spec"]["serviceAccountName"],
        sa["metadata"]["name"]
    );
}

/// The probes ask for routes `ivpol serve` answers, on its port.
#[test]
fn the_probes_hit_routes_the_server_answers() {
    let all = manifests();
    let d = one(&all, "Deployment");
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
    let d = one(&all, "Deployment");
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
    let s = one(&all, "Service");
    let out = Command::new(ivpol_bin())
        .arg("webhooks")
        .arg("--policies")
        .arg(&dir)
        .args([
            "--service",
            s["metadata"]["name"].as_str().unwrap_or_default(),
        ])
        .args([
            "--namespace",
            s["metadata"]["namespace"].as_str().unwrap_or_default(),
        ])
        .arg("--ca-bundle")
        .arg(&ca)
        .args(["-o", "json"])
        .arg("--cache-dir")
        .arg(precompile_cache_dir())
        .output()
        .expect("ivpol webhooks");
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
}

/// `(IVPOL_CACHE_DIR, the cache volume's mountPath, whether /tmp is a
/// volume)` of the shipped Deployment.
fn cache_layout(deployment: &Value) -> (String, String, bool) {
    let c = container(deployment);
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
    let (env, mount, tmp) = cache_layout(one(&all, "Deployment"));
    let below = Path::new(&env)
        .strip_prefix(&mount)
        .expect("IVPOL_CACHE_DIR is inside the cache volume");
    assert!(
        !below.as_os_str().is_empty(),
        "the cache is below the mount point, not at it"
    );
    assert!(tmp, "/tmp is a volume: the root file system is read-only");
    let uid = one(&all, "Deployment")["spec"]["template"]["spec"]["securityContext"]["runAsUser"]
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
    let d = one(&all, "Deployment");
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
    let d = one(&all, "Deployment");
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
