//! A registry with `auth: htpasswd` (Basic): the host answers the challenge
//! with the credentials from `--registry-config`; without them the registry
//! refuses, and the component never holds the password.

use base64::Engine as _;
use ivpol_tests::azure::Azure;
use ivpol_tests::fixtures::{Pusher, OCI_MANIFEST};
use ivpol_tests::policy::pod_policy;
use ivpol_tests::registry::Registry;
use ivpol_tests::review::create_pod;
use ivpol_tests::review::message;
use ivpol_tests::{Options, Server};

const PASSWORD: &str = "basic-s3cret-only-the-host-knows";

#[test]
fn basic_challenges_are_answered_by_the_host() {
    let dir = tempfile::tempdir().expect("dir");
    let (plain, reg, crt) = Registry::start_basic_auth(dir.path(), "bob", PASSWORD);
    // Images go in through the plain registry sharing the storage.
    let digest = Pusher {
        addr: &plain.addr,
        auth: None,
    }
    .image("app", "v1", OCI_MANIFEST, "amd64");
    let policy = pod_policy(
        "pin",
        "\"CREATE\"",
        "  attestors: []\n  validations:\n    - expression: \"true\"\n",
    );
    let image = format!("{}/app:v1", reg.addr);
    let start = |config: Option<&std::path::Path>| {
        let mut extra_args = vec![
            "--allow-registry".to_string(),
            reg.addr.clone(),
            "--registry-ca".into(),
            crt.display().to_string(),
        ];
        if let Some(c) = config {
            extra_args.push("--registry-config".into());
            extra_args.push(c.display().to_string());
        }
        Server::start_with(
            &[("pin.yaml", &policy)],
            Options {
                extra_args,
                ..Options::default()
            },
        )
    };
    let r = start(None).review("/ivpol/mutate/pin", &create_pod(&[&image]));
    assert!(
        r["status"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("registry answered HTTP 401"),
        "{r}"
    );
    let config = dir.path().join("config.json");
    std::fs::write(
        &config,
        format!(
            r#"{{"auths":{{"{}":{{"username":"bob","password":"{PASSWORD}"}}}}}}"#,
            reg.addr
        ),
    )
    .expect("config");
    let r = start(Some(&config)).review("/ivpol/mutate/pin", &create_pod(&[&image]));
    assert_eq!(r["allowed"], true, "{r}");
    let patch = base64::engine::general_purpose::STANDARD
        .decode(r["patch"].as_str().unwrap_or_default())
        .expect("patch");
    assert!(
        String::from_utf8_lossy(&patch).contains(&format!("{image}@{digest}")),
        "{r}"
    );
    assert!(!r.to_string().contains(PASSWORD));
}

/// A Basic-auth registry holding `repository:v1`, and the pinning policy
/// whose mutate answers show whether the host presented a credential.
struct Private {
    dir: tempfile::TempDir,
    /// The private registry's address, and the CA its certificate is from.
    addr: String,
    crt: std::path::PathBuf,
    image: String,
    policy: String,
    _registries: Vec<Registry>,
}

impl Private {
    fn start(repository: &str, policy_head: &str) -> Private {
        Private::start_as(repository, policy_head, "bob", PASSWORD)
    }

    /// A private registry whose only account is `user`/`password`.
    fn start_as(repository: &str, policy_head: &str, user: &str, password: &str) -> Private {
        let dir = tempfile::tempdir().expect("dir");
        let (plain, reg, crt) = Registry::start_basic_auth(dir.path(), user, password);
        let mut p = Private::holding(dir, &plain, repository, &reg.addr, crt, policy_head);
        p._registries = vec![plain, reg];
        p
    }

    /// An Azure Container Registry: the Azure double in front of a plain
    /// registry, which only its tokens pass.
    fn behind_azure(repository: &str, policy_head: &str) -> (Private, Azure) {
        let plain = Registry::start();
        let azure = Azure::start(&plain.addr);
        let addr = azure.addr.to_string();
        let dir = tempfile::tempdir().expect("dir");
        let crt = azure.crt.clone();
        let mut p = Private::holding(dir, &plain, repository, &addr, crt, policy_head);
        p._registries = vec![plain];
        (p, azure)
    }

    /// `repository:v1` pushed to `plain`, named at `addr`.
    fn holding(
        dir: tempfile::TempDir,
        plain: &Registry,
        repository: &str,
        addr: &str,
        crt: std::path::PathBuf,
        policy_head: &str,
    ) -> Private {
        Pusher {
            addr: &plain.addr,
            auth: None,
        }
        .image(repository, "v1", OCI_MANIFEST, "amd64");
        let policy = pod_policy(
            "pin",
            "\"CREATE\"",
            &format!("{policy_head}  attestors: []\n  validations:\n    - expression: \"true\"\n"),
        );
        Private {
            dir,
            addr: addr.to_string(),
            crt,
            image: format!("{addr}/{repository}:v1"),
            policy,
            _registries: Vec::new(),
        }
    }

    /// Names the image by `host` (at the registry's port) instead of its
    /// loopback address; returns the `--resolve` that dials `host` at the
    /// registry and the `--allow-registry` that lets the pin through.
    fn named_as(&mut self, host: &str) -> ([String; 2], [String; 2]) {
        let port = self.addr.rsplit(':').next().unwrap_or_default().to_string();
        self.image = format!("{host}:{port}/app:v1");
        (
            ["--resolve".into(), format!("{host}:{port}:127.0.0.1")],
            ["--allow-registry".into(), format!("{host}:{port}")],
        )
    }

    /// `pods` mutate answers of a server started with `extra` args and
    /// `env`, and its metrics after them.
    fn answers(
        &self,
        extra: &[String],
        env: Vec<(String, String)>,
        pods: usize,
    ) -> (Vec<serde_json::Value>, String) {
        let mut extra_args = vec![
            "--allow-registry".to_string(),
            self.addr.clone(),
            "--registry-ca".into(),
            self.crt.display().to_string(),
            // Every pod resolves its tag again, through the credential.
            "--digest-ttl".into(),
            "0s".into(),
        ];
        extra_args.extend_from_slice(extra);
        let s = Server::start_with(
            &[("pin.yaml", &self.policy)],
            Options {
                extra_args,
                env,
                ..Options::default()
            },
        );
        let answers = (0..pods)
            .map(|_| s.review("/ivpol/mutate/pin", &create_pod(&[&self.image])))
            .collect();
        (answers, s.metrics_text())
    }
}

/// Writes an executable shell script `name` into `dir`.
fn script(dir: &std::path::Path, name: &str, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).expect("script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// Docker credential helpers (`credHelpers` per registry, `credsStore` for
/// the rest) hold the password: the host runs `docker-credential-<name>
/// get` (no shell, the registry on stdin), answers the challenge with what
/// it prints, and reuses the answer instead of running it per request. A
/// helper that fails, or is missing, denies with its name and what it
/// said, not a bare 401; Debian's real ECR helper runs and, this being no
/// ECR registry, holds nothing, so the registry refuses anonymous access.
#[test]
fn credential_helpers_answer_for_the_registries_they_hold() {
    let p = Private::start("app", "");
    let addr = p.addr.clone();
    let bin = p.dir.path().join("bin");
    std::fs::create_dir(&bin).expect("bin");
    let calls = p.dir.path().join("calls");
    script(
        &bin,
        "docker-credential-ivpol-test",
        &format!(
            "[ \"$1\" = get ] || exit 2\nread server\necho \"$server\" >> {}\nif [ \"$server\" = \"{addr}\" ]; then printf '{{\"ServerURL\":\"%s\",\"Username\":\"bob\",\"Secret\":\"{PASSWORD}\"}}' \"$server\"; else echo 'credentials not found in native keychain'; exit 1; fi\n",
            calls.display(),
        ),
    );
    script(
        &bin,
        "docker-credential-broken",
        "echo 'error getting credentials - err: token expired, out: ``' >&2\nexit 1\n",
    );
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |config: String, pods: usize| {
        let file = p.dir.path().join("config.json");
        std::fs::write(&file, config).expect("config");
        let extra = ["--registry-config".to_string(), file.display().to_string()];
        p.answers(&extra, vec![("PATH".into(), path.clone())], pods)
    };
    // Per registry, twice: the helper runs once.
    let (answers, _) = run(format!(r#"{{"credHelpers":{{"{addr}":"ivpol-test"}}}}"#), 2);
    for r in &answers {
        assert_eq!(r["allowed"], true, "{r}");
        assert!(r["patch"].is_string(), "{r}");
        assert!(!r.to_string().contains(PASSWORD));
    }
    let ran = std::fs::read_to_string(&calls).expect("the helper ran");
    assert_eq!(
        ran.lines().collect::<Vec<_>>(),
        [addr.as_str()],
        "once, for the registry"
    );
    // As the default store, behind docker's `{}` placeholder.
    let (answers, metrics) = run(
        format!(r#"{{"credsStore":"ivpol-test","auths":{{"{addr}":{{}}}}}}"#),
        1,
    );
    assert!(answers[0]["patch"].is_string(), "{}", answers[0]);
    assert!(
        metrics
            .contains(r#"ivpol_credential_helper_runs_total{helper="ivpol-test",result="ok"} 1"#),
        "{metrics}"
    );
    // A failing helper is named, with what it said.
    let (answers, metrics) = run(format!(r#"{{"credHelpers":{{"{addr}":"broken"}}}}"#), 1);
    let m = message(&answers[0]);
    assert_eq!(answers[0]["allowed"], false, "{m}");
    assert!(
        m.contains("registry-auth: docker-credential-broken failed"),
        "{m}"
    );
    assert!(m.contains("token expired"), "{m}");
    assert!(!m.contains("HTTP 401"), "{m}");
    assert!(
        metrics.contains(r#"helper="broken",result="error""#),
        "{metrics}"
    );
    // A missing one too.
    let (answers, _) = run(format!(r#"{{"credHelpers":{{"{addr}":"absent"}}}}"#), 1);
    let m = message(&answers[0]);
    assert!(m.contains("docker-credential-absent: cannot run it"), "{m}");
    // Debian's ECR helper, for real: no ECR registry, so no credential.
    let (answers, metrics) = run(format!(r#"{{"credHelpers":{{"{addr}":"ecr-login"}}}}"#), 1);
    assert!(
        message(&answers[0]).contains("registry answered HTTP 401"),
        "{}",
        answers[0]
    );
    assert!(
        metrics.contains(r#"ivpol_credential_helper_runs_total{helper="ecr-login",result="ok"} 1"#),
        "{metrics}"
    );
}

/// The kubelet's credential provider plugins: a `CredentialProviderConfig`
/// and its bin dir, the plugin run with a `CredentialProviderRequest` for
/// the image its `matchImages` match and its answer cached by
/// `cacheKeyType` (here per registry, so one run for two pods). A plugin
/// that answers malformed JSON, fails or outlives the deadline denies and
/// names itself.
#[test]
fn kubelet_credential_plugins_answer_for_the_images_they_match() {
    // Two seconds for the whole request, so the slow plugin is cut short.
    let p = Private::start("team/app", "  webhookConfiguration: {timeoutSeconds: 2}\n");
    let addr = p.addr.clone();
    let bin = p.dir.path().join("plugins");
    std::fs::create_dir(&bin).expect("bin");
    let requests = p.dir.path().join("requests");
    let log = requests.display();
    script(
        &bin,
        "test-provider",
        &format!(
            "cat >> {log}\necho >> {log}\nprintf '{{\"apiVersion\":\"credentialprovider.kubelet.k8s.io/v1\",\"kind\":\"CredentialProviderResponse\",\"cacheKeyType\":\"Registry\",\"cacheDuration\":\"1m\",\"auth\":{{\"{addr}\":{{\"username\":\"bob\",\"password\":\"{PASSWORD}\"}}}}}}'\n",
        ),
    );
    script(&bin, "malformed", "echo '{not json'\n");
    script(&bin, "failing", "echo 'no role to assume' >&2\nexit 1\n");
    script(&bin, "slow", "sleep 30\n");
    let run = |provider: &str, pods: usize| {
        let config = p.dir.path().join("providers.yaml");
        std::fs::write(
            &config,
            format!("apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n  - name: {provider}\n    matchImages: [\"{addr}/team\"]\n    defaultCacheDuration: 10m\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n"),
        )
        .expect("config");
        let extra = [
            "--image-credential-provider-config".to_string(),
            config.display().to_string(),
            "--image-credential-provider-bin-dir".into(),
            bin.display().to_string(),
        ];
        p.answers(&extra, Vec::new(), pods).0
    };
    for r in run("test-provider", 2) {
        assert!(r["patch"].is_string(), "{r}");
    }
    let asked = std::fs::read_to_string(&requests).expect("the plugin ran");
    let asked: Vec<serde_json::Value> = asked
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a request"))
        .collect();
    assert_eq!(asked.len(), 1, "cached per registry: {asked:?}");
    assert_eq!(asked[0]["kind"], "CredentialProviderRequest");
    assert_eq!(
        asked[0]["apiVersion"],
        "credentialprovider.kubelet.k8s.io/v1"
    );
    assert_eq!(asked[0]["image"], format!("{addr}/team/app"));
    for (provider, said) in [
        (
            "malformed",
            "credential provider malformed: its answer is not a CredentialProviderResponse",
        ),
        (
            "failing",
            "credential provider failing failed (exit status: 1): no role to assume",
        ),
        ("slow", "credential provider slow: no answer in time"),
    ] {
        let r = &run(provider, 1)[0];
        assert_eq!(r["allowed"], false, "{r}");
        assert!(
            message(r).contains(&format!("registry-auth: {said}")),
            "{provider}: {}",
            message(r)
        );
    }
}

/// `credentials.providers: [github]`, as go-containerregistry's GitHub
/// keychain: `ghcr.io` gets `GITHUB_TOKEN` (as `GITHUB_ACTOR`) from the
/// host's environment, and only when the policy names the provider. Here
/// `ghcr.io` is dialled at the test registry through `--resolve`.
#[test]
fn the_github_provider_presents_the_hosts_token_to_ghcr() {
    let mut p = Private::start("app", "  credentials: {providers: [github]}\n");
    let (resolve, allow) = p.named_as("ghcr.io");
    let allowed = [&resolve[..], &allow[..]].concat();
    let env = || {
        vec![
            ("GITHUB_TOKEN".to_string(), PASSWORD.to_string()),
            ("GITHUB_ACTOR".to_string(), "bob".to_string()),
        ]
    };
    let r = p.answers(&allowed, env(), 1).0.remove(0);
    assert!(r["patch"].is_string(), "{r}");
    assert!(!r.to_string().contains(PASSWORD));
    // A name pinned to loopback but not listed in --allow-registry is
    // refused, as a DNS answer of loopback would be.
    let r = p.answers(&resolve, env(), 1).0.remove(0);
    assert_eq!(r["allowed"], false, "{r}");
    // The same registry and token, but a policy that names no provider.
    p.policy = p
        .policy
        .replace("  credentials: {providers: [github]}\n", "");
    let r = p.answers(&allowed, env(), 1).0.remove(0);
    assert!(message(&r).contains("registry answered HTTP 401"), "{r}");
}

/// `credentials.providers: [amazon]`: an ECR host gets the token of ECR's
/// `GetAuthorizationToken`, from moto's server through the AWS SDK's
/// endpoint override, signed with the SDK's credential chain (here the
/// environment's keys). The ECR name is dialled at the test registry
/// through `--resolve`.
#[test]
fn the_amazon_provider_presents_an_ecr_token_to_ecr() {
    use ivpol_tests::moto::{self, Moto};
    let moto = Moto::start();
    let provider = "  credentials: {providers: [amazon]}\n";
    let mut p = Private::start_as("app", provider, "AWS", moto::ECR_PASSWORD);
    let (resolve, allow) = p.named_as(&moto::ecr_host());
    let args = [&resolve[..], &allow[..]].concat();
    let (answers, metrics) = p.answers(&args, moto.env(), 2);
    for r in &answers {
        assert!(r["patch"].is_string(), "{r}");
        assert!(!r.to_string().contains(moto::ECR_PASSWORD));
    }
    assert!(
        metrics.contains("ivpol_cloud_fetches_total{source=\"amazon\",result=\"ok\"}"),
        "{metrics}"
    );
    // AWS unreachable: a denial naming the provider and the call, never an
    // anonymous retry that ends in a bare 401.
    let mut down = moto.env();
    down[0].1 = format!("http://127.0.0.1:{}", ivpol_tests::registry::free_port());
    let r = p.answers(&args, down, 1).0.remove(0);
    assert_eq!(r["allowed"], false, "{r}");
    assert!(
        message(&r).contains("registry-auth: amazon: ECR GetAuthorizationToken in us-east-1"),
        "{}",
        message(&r)
    );
    // A policy that names no provider reads anonymously.
    p.policy = p.policy.replace(provider, "");
    let r = p.answers(&args, moto.env(), 1).0.remove(0);
    assert!(message(&r).contains("registry answered HTTP 401"), "{r}");
    // The provider does not serve a host that is not ECR's: the registry's
    // loopback name reads anonymously, as in Kyverno.
    let other = Private::start_as("app", provider, "AWS", moto::ECR_PASSWORD);
    let r = other.answers(&[], moto.env(), 1).0.remove(0);
    assert!(message(&r).contains("registry answered HTTP 401"), "{r}");
}

/// `credentials.providers: [google]`: an Artifact Registry host gets the
/// access token of Application Default Credentials (here the metadata
/// server, as under GKE Workload Identity) as `oauth2accesstoken`'s
/// password, through Google's auth crate. The registry's name is dialled at
/// the test registry through `--resolve`.
#[test]
fn the_google_provider_presents_an_access_token_to_artifact_registry() {
    use ivpol_tests::gcp::Metadata;
    const TOKEN: &str = "ya29.test-access-token";
    let metadata = Metadata::start(TOKEN);
    let provider = "  credentials: {providers: [google]}\n";
    let mut p = Private::start_as("app", provider, "oauth2accesstoken", TOKEN);
    let (resolve, allow) = p.named_as("europe-docker.pkg.dev");
    let args = [&resolve[..], &allow[..]].concat();
    let home = p.dir.path().join("home");
    let (answers, metrics) = p.answers(&args, metadata.env(&home), 2);
    for r in &answers {
        assert!(r["patch"].is_string(), "{r}");
        assert!(!r.to_string().contains(TOKEN));
    }
    assert!(
        metrics.contains("ivpol_cloud_fetches_total{source=\"google\",result=\"ok\"}"),
        "{metrics}"
    );
    let seen = metadata.seen.lock().expect("seen").clone();
    assert!(
        seen.iter()
            .any(|p| p.contains("/service-accounts/default/token")),
        "{seen:?}"
    );
    // No metadata server: a denial naming the provider.
    let mut down = metadata.env(&home);
    down[0].1 = format!("127.0.0.1:{}", ivpol_tests::registry::free_port());
    let r = p.answers(&args, down, 1).0.remove(0);
    assert_eq!(r["allowed"], false, "{r}");
    assert!(
        message(&r).contains("registry-auth: google: "),
        "{}",
        message(&r)
    );
}

/// `credentials.providers: [azure]`: an ACR host gets, as the null GUID
/// user's password, the refresh token its `/oauth2/exchange` gives for the
/// host's Entra ID token (here workload identity, as on AKS, from the
/// Azure double's token endpoint). The registry's name is dialled at the
/// double through `--resolve`.
#[test]
fn the_azure_provider_exchanges_an_entra_token_at_the_registry() {
    use ivpol_tests::azure::REGISTRY;
    let provider = "  credentials: {providers: [azure]}\n";
    let (mut p, azure) = Private::behind_azure("app", provider);
    let (resolve, allow) = p.named_as(REGISTRY);
    let args = [&resolve[..], &allow[..]].concat();
    let (answers, metrics) = p.answers(&args, azure.env(), 2);
    for r in &answers {
        assert!(r["patch"].is_string(), "{r}");
        assert!(!r.to_string().contains("acr-signature"), "{r}");
    }
    assert!(
        metrics.contains("ivpol_cloud_fetches_total{source=\"azure\",result=\"ok\"}"),
        "{metrics}"
    );
    // One Entra token and one exchange serve both pods.
    let seen = azure.seen.lock().expect("seen").clone();
    let count = |what: &str| seen.iter().filter(|s| s.ends_with(what)).count();
    assert_eq!(count("/oauth2/v2.0/token"), 1, "{seen:?}");
    assert_eq!(count("/oauth2/exchange"), 1, "{seen:?}");
    // A federated token Entra ID does not match: a denial naming the
    // provider and Entra's reason.
    let r = p
        .answers(&args, azure.env_with_token("stale"), 1)
        .0
        .remove(0);
    assert_eq!(r["allowed"], false, "{r}");
    let why = message(&r);
    assert!(
        why.contains("registry-auth: azure: Entra ID token"),
        "{why}"
    );
    assert!(why.contains("AADSTS700213"), "{why}");
    // A policy that names no provider reads anonymously.
    p.policy = p.policy.replace(provider, "");
    let r = p.answers(&args, azure.env(), 1).0.remove(0);
    assert!(message(&r).contains("registry answered HTTP 401"), "{r}");
}
