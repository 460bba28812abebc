use super::memory::MemoryRefused;
use super::pool::*;
use super::*;

const JSON_POLICY: &str = r#"apiVersion: policies.kyverno.io/v1beta1
kind: ImageValidatingPolicy
metadata:
  name: ivpol-json
spec:
  evaluation:
    mode: JSON
  matchConstraints:
    resourceRules:
      - apiGroups: [""]
        apiVersions: ["v1"]
        operations: ["CREATE"]
        resources: ["pods"]
  images:
    - name: bar
      expression: "[object.foo.bar]"
  validationConfigurations:
    verifyDigest: false
    required: false
  attestors: []
  validations:
    - expression: "images.bar.all(i, parseImageReference(i).tag() == 'signed')"
      message: image is not the signed one
"#;

fn cache() -> Arc<VerificationCache> {
    VerificationCache::new(&crate::cache::CacheConfig::disabled())
}

async fn pool() -> Pool {
    pool_within(Limits::default()).await
}

/// Runs `load` with this build's precompiled-component directory, one
/// test at a time: the component is compiled once per engine
/// configuration and build, not once per test (a compile is many seconds
/// of Cranelift), and a test waits rather than compiling beside another.
/// The entries' names bind the component and the engine, as in `serve`.
fn precompiled<T>(load: impl FnOnce(&Path) -> T) -> T {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    load(Path::new(concat!(env!("OUT_DIR"), "/test-precompiled")))
}

/// The JSON policy loaded in a pool bounded by `limits`.
async fn pool_within(limits: Limits) -> Pool {
    let net = Arc::new(Net::new(Default::default(), Default::default(), None, None).expect("net"));
    let runtime = precompiled(|dir| {
        Runtime::with_limits(
            EMBEDDED_COMPONENT,
            net,
            cache(),
            Some(dir),
            limits,
            Compiler::InProcess,
        )
    });
    let runtime = Arc::new(runtime.expect("component compiles"));
    let docs = vec![Document::file("json.yaml".into(), JSON_POLICY.into())];
    Pool::load(runtime, docs).await.expect("policies load")
}

/// JSON mode runs through the real component in wasmtime.
#[tokio::test]
async fn json_mode_payloads_pass_and_fail_in_the_component() {
    let pool = pool().await;
    assert!(pool.summary().diagnostics.is_empty());
    let deadline = Duration::from_secs(10);
    let pass = r#"{"foo":{"bar":"ghcr.io/kyverno/test-verify-image:signed"}}"#;
    let fail = r#"{"foo":{"bar":"ghcr.io/kyverno/test-verify-image:unsigned"}}"#;
    let v = pool
        .evaluate_json(pass.into(), deadline)
        .await
        .expect("no trap")
        .expect("valid");
    assert!(v.allowed);
    assert!(matches!(v.results[0].status, wit::Status::Pass));
    let v = pool
        .evaluate_json(fail.into(), deadline)
        .await
        .expect("no trap")
        .expect("valid");
    assert!(!v.allowed);
    assert_eq!(
        v.message.as_deref(),
        Some("Policy ivpol-json failed: image is not the signed one")
    );
    let bad = pool
        .evaluate_json("{".into(), deadline)
        .await
        .expect("no trap");
    let e = bad.expect_err("refused").to_string();
    assert!(e.contains("payload is not valid JSON"), "{e}");
}

/// An instance whose epoch deadline has passed traps, and the pool
/// recovers with a fresh instance.
#[tokio::test]
async fn a_short_deadline_never_poisons_the_pool() {
    let pool = pool().await;
    let payload = r#"{"foo":{"bar":"a:signed"}}"#.to_string();
    let trapped = pool
        .evaluate_json(payload.clone(), Duration::from_millis(0))
        .await;
    // A zero deadline is one tick; a fast evaluation may still finish within it.
    if trapped.is_err() {
        let why = format!("{:?}", trapped.err());
        assert!(why.contains("deadline"), "{why}");
    }
    let ok = pool
        .evaluate_json(payload, Duration::from_secs(10))
        .await
        .expect("fresh instance");
    assert!(ok.expect("valid").allowed);
}

/// A failed call is classified by the types in its error's chain, so a
/// message that merely reads like a deadline or a refusal is neither.
#[test]
fn call_failures_are_told_apart_by_type_not_text() {
    let interrupted = wasmtime::Error::new(wasmtime::Trap::Interrupt).context("in the guest");
    assert_eq!(CallFailure::of(&interrupted), CallFailure::Deadline);
    let refused = wasmtime::Error::new(MemoryRefused { limit: 1 << 20 }).context("memory.grow");
    assert_eq!(CallFailure::of(&refused), CallFailure::OutOfMemory);
    let bug = wasmtime::Error::new(wasmtime::Trap::UnreachableCodeReached);
    assert_eq!(
        CallFailure::of(&bug),
        CallFailure::Trap(wasmtime::Trap::UnreachableCodeReached)
    );
    let lookalike = wasmtime::Error::msg("interrupt: deadline; memory limit of 1 bytes reached");
    assert_eq!(CallFailure::of(&lookalike), CallFailure::Other);
}

/// The epoch deadline interrupting the real component is a deadline:
/// no tick is left beyond the current epoch, so the guest stops at its
/// first check whatever the machine's speed.
#[tokio::test]
async fn an_interrupted_call_is_a_deadline_failure() {
    let pool = pool().await;
    let deadline = Duration::from_secs(10);
    let (mut inst, _turn) = pool.acquire(deadline, "").await.expect("an instance");
    inst.store.set_epoch_deadline(0);
    let engine = inst.module.ivpol_admission_engine().policy_set();
    let out = engine
        .call_evaluate_json(&mut inst.store, inst.set, r#"{"foo":{"bar":"a:signed"}}"#)
        .await;
    let error = out.as_ref().expect_err("interrupted");
    assert_eq!(CallFailure::of(error), CallFailure::Deadline);
    assert_eq!(
        pool.settle(inst, out, deadline).err(),
        Some(Failure::Deadline(deadline))
    );
}

/// A payload the component cannot hold within its instance's memory makes
/// the limiter refuse; the call fails as out of memory, and the pool
/// answers the next call with a fresh instance.
#[tokio::test]
async fn a_refused_memory_growth_is_an_out_of_memory_failure() {
    let limit = 32 << 20;
    let pool = pool_within(Limits {
        instance_memory: limit,
        ..Limits::default()
    })
    .await;
    let deadline = Duration::from_secs(10);
    // 3.5 million zeros: 7 MiB as text, far more as parsed values.
    let zeros = vec!["0"; 3_500_000].join(",");
    let hungry = format!(r#"{{"pad":[{zeros}],"foo":{{"bar":"a:signed"}}}}"#);
    let (mut inst, turn) = pool.acquire(deadline, "").await.expect("an instance");
    arm_deadline(&mut inst, deadline);
    let engine = inst.module.ivpol_admission_engine().policy_set();
    let out = engine
        .call_evaluate_json(&mut inst.store, inst.set, &hungry)
        .await;
    let error = out.as_ref().expect_err("out of memory");
    assert_eq!(CallFailure::of(error), CallFailure::OutOfMemory);
    assert_eq!(
        pool.settle(inst, out, deadline).err(),
        Some(Failure::OutOfMemory(limit))
    );
    drop(turn);
    let failed = pool
        .evaluate_json(hungry, deadline)
        .await
        .expect_err("out of memory through the pool too");
    assert_eq!(
        failed.downcast_ref::<Failure>(),
        Some(&Failure::OutOfMemory(limit))
    );
    let ok = pool
        .evaluate_json(r#"{"foo":{"bar":"a:signed"}}"#.into(), deadline)
        .await
        .expect("a fresh instance");
    assert!(ok.expect("valid").allowed);
}

/// A namespace that holds its share of the instances waits for one of its
/// own turns (and says so when the deadline passes), while a request of
/// another namespace gets an instance at once.
#[tokio::test]
async fn a_namespace_over_its_share_waits_while_another_is_served() {
    let pool = pool_within(Limits {
        instances: 1,
        max_instances: 2,
        namespace_instances: 1,
        ..Limits::default()
    })
    .await;
    let short = Duration::from_millis(200);
    let _held = pool.acquire(short, "attacker").await.expect("its turn");
    match pool.acquire(short, "attacker").await.err() {
        Some(Failure::NamespaceBusy {
            namespace, turns, ..
        }) => assert_eq!((namespace.as_str(), turns), ("attacker", 1)),
        other => panic!("expected the namespace to be over its share: {other:?}"),
    }
    let served = pool.acquire(short, "victim").await;
    assert!(served.is_ok(), "{:?}", served.err());
}

/// With every one of the pool's turns held, a request waits for one: it
/// says the pool was busy when none came back within its deadline, and is
/// served when one comes back while it waits.
#[tokio::test]
async fn a_full_pool_is_busy_until_a_turn_comes_back() {
    let pool = Arc::new(
        pool_within(Limits {
            instances: 1,
            max_instances: 1,
            namespace_instances: 4,
            ..Limits::default()
        })
        .await,
    );
    let short = Duration::from_millis(200);
    let held = pool.acquire(short, "a").await.expect("the only turn");
    match pool.acquire(short, "b").await.err() {
        Some(Failure::Busy(deadline)) => assert_eq!(deadline, short),
        other => panic!("expected the pool to be busy: {other:?}"),
    }
    let waiting = {
        let pool = pool.clone();
        tokio::spawn(async move {
            let got = pool.acquire(Duration::from_secs(30), "b").await;
            got.map(|_| ())
        })
    };
    tokio::task::yield_now().await;
    drop(held);
    let served = waiting.await.expect("the waiting task");
    assert!(served.is_ok(), "{:?}", served.err());
}

/// The WASI interfaces Rust's standard library links into any
/// wasm32-wasip2 program, which `policy-module` leaves implicit (its
/// comment says so): the host links them with an empty environment, no
/// preopened directory and no inherited stdio.
const STD_IMPORTS: &[&str] = &[
    "wasi:cli/environment@0.2.12",
    "wasi:cli/exit@0.2.12",
    "wasi:cli/stdin@0.2.12",
    "wasi:cli/stdout@0.2.12",
    "wasi:cli/stderr@0.2.12",
    "wasi:cli/terminal-input@0.2.12",
    "wasi:cli/terminal-output@0.2.12",
    "wasi:cli/terminal-stdin@0.2.12",
    "wasi:cli/terminal-stdout@0.2.12",
    "wasi:cli/terminal-stderr@0.2.12",
    // HashMap's RandomState seed.
    "wasi:random/insecure-seed@0.2.12",
];

/// Every interface `world policy-module` imports, with those they use.
fn world_imports() -> std::collections::BTreeSet<String> {
    let mut resolve = wit_parser::Resolve::default();
    let wit = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../wit");
    let (package, _) = resolve.push_dir(&wit).expect("wit/ parses");
    let world = resolve
        .select_world(&[package], Some("policy-module"))
        .expect("the world");
    resolve.worlds[world]
        .imports
        .values()
        .filter_map(|item| match item {
            wit_parser::WorldItem::Interface { id, .. } => resolve.id_of(*id),
            _ => None,
        })
        .collect()
}

/// The WIT file is the whole contract: the component imports nothing
/// beyond its world and the standard library's WASI set, and it does
/// import the host services and wasi:http the world declares.
#[test]
fn the_component_imports_only_its_world() {
    let runtime = precompiled(|dir| Runtime::offline(EMBEDDED_COMPONENT, Some(dir)))
        .expect("component compiles");
    let actual: std::collections::BTreeSet<String> =
        runtime.component_imports().into_iter().collect();
    let world = world_imports();
    let beyond: Vec<&String> = actual
        .iter()
        .filter(|name| !world.contains(*name) && !STD_IMPORTS.contains(&name.as_str()))
        .collect();
    assert!(beyond.is_empty(), "imported beyond the world: {beyond:?}");
    for declared in [
        "ivpol:admission/verification-cache@0.1.0",
        "ivpol:admission/namespaces@0.1.0",
        "ivpol:admission/cluster-resources@0.1.0",
        "ivpol:admission/registry-credentials@0.1.0",
        "wasi:http/outgoing-handler@0.2.12",
        "wasi:clocks/wall-clock@0.2.12",
        "wasi:clocks/monotonic-clock@0.2.12",
    ] {
        assert!(world.contains(declared), "the world declares {declared}");
        assert!(
            actual.contains(declared),
            "the component imports {declared}: {actual:?}"
        );
    }
    // The implicit set is only what the standard library really links.
    let unused: Vec<&&str> = STD_IMPORTS
        .iter()
        .filter(|name| !actual.contains(**name))
        .collect();
    assert!(
        unused.is_empty(),
        "not imported, drop from STD_IMPORTS: {unused:?}"
    );
}
