//! The pods `deploy/` runs: the server's Deployment (its flags, memory,
//! Service, probes, cache, availability and pod security) and the scan's
//! CronJob.

use super::{
    container, deployment, flags_exist, manifests, named, one, resolve_port, selects, service,
    strings, text, value_of,
};
use ivpol_tests::Server;
use serde_json::Value;
use std::path::Path;

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
