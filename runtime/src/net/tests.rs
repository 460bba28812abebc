use super::challenge::repository_of;
use super::*;
use http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use http_body_util::BodyExt;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A one-shot HTTP server that records the request head it receives.
async fn recording_server() -> (String, tokio::task::JoinHandle<String>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let handle = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.expect("accept");
        let mut buf = vec![0u8; 8192];
        let n = stream.read(&mut buf).await.unwrap_or(0);
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
            .await;
        String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase()
    });
    (addr, handle)
}

fn guest_request(url: &str, headers: &[(&str, &str)]) -> http::Request<WasiBody> {
    let mut b = http::Request::builder().method("GET").uri(url);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    let body = http_body_util::Empty::<Bytes>::new()
        .map_err(|never| match never {})
        .boxed_unsync();
    b.body(body).expect("request")
}

/// Whatever credential-looking header the guest sets never leaves the
/// host, and the host's own credentials are only added on a challenge.
/// The policy secrets come typed beside the request
/// (`registry-credentials`), not in it: one the host cannot read fails the
/// request rather than falling back to the default keychain.
#[tokio::test]
async fn guest_authorization_is_stripped_and_secrets_come_beside_the_request() {
    let (addr, seen) = recording_server().await;
    let policy = NetPolicy {
        allow: vec![],
        insecure: vec![addr.parse().expect("host:port")],
        pins: vec![],
        revocation: vec![],
    };
    let keychain = Keychain::parse(&format!(
        r#"{{"auths":{{"{addr}":{{"username":"u","password":"host-only"}}}}}}"#
    ))
    .expect("keychain");
    let dir = std::env::temp_dir();
    let net = Arc::new(Net::new(policy, keychain, Some(&dir), None).expect("net"));
    let url = format!("https://{addr}/v2/app/manifests/v1");
    let req = || guest_request(&url, &[("authorization", "Bearer forged-by-guest")]);
    let deadline = Instant::now() + std::time::Duration::from_secs(5);
    let err = net
        .clone()
        .send(
            req(),
            Presented {
                secrets: Arc::from(["ivpol-no-such-secret".to_string()]),
                tenant: None,
            },
            deadline,
        )
        .await
        .expect_err("a named secret that cannot be read");
    assert!(
        format!("{err:?}").contains("ivpol-no-such-secret"),
        "{err:?}"
    );
    let resp = net
        .send(req(), Presented::default(), deadline)
        .await
        .expect("sent");
    assert_eq!(resp.status(), 200);
    let head = seen.await.expect("recorded");
    assert!(head.starts_with("get /v2/app/manifests/v1 "), "{head}");
    assert!(!head.contains("authorization"), "{head}");
    assert!(!head.contains("host-only"), "{head}");
}

/// The host's own requests (OCI push) carry their body and a known
/// Authorization, go out over plain HTTP only for an insecure
/// registry, and are refused with the policy's reason otherwise.
#[tokio::test]
async fn host_requests_carry_body_and_auth_under_the_same_policy() {
    let (addr, seen) = recording_server().await;
    let policy = NetPolicy {
        allow: vec![],
        insecure: vec![addr.parse().expect("host:port")],
        pins: vec![],
        revocation: vec![],
    };
    let net = Net::new(policy, Keychain::default(), None, None).expect("net");
    let deadline = Instant::now() + std::time::Duration::from_secs(5);
    let req = |uri: String| HostRequest {
        method: http::Method::PUT,
        uri: uri.parse().expect("uri"),
        headers: http::HeaderMap::new(),
        body: Bytes::from_static(b"blob-bytes"),
        auth: Some("Bearer known".into()),
    };
    let (resp, used) = net
        .request(
            req(format!("https://{addr}/v2/a/blobs/uploads/x")),
            deadline,
        )
        .await
        .expect("sent");
    assert_eq!(resp.status(), 200);
    assert_eq!(used.as_deref(), Some("Bearer known"));
    let head = seen.await.expect("request seen");
    assert!(head.starts_with("put /v2/a/blobs/uploads/x"), "{head}");
    assert!(head.contains("authorization: bearer known"), "{head}");
    assert!(head.ends_with("blob-bytes"), "{head}");
    let err = net
        .request(req("https://10.0.0.1/v2/".into()), deadline)
        .await
        .expect_err("refused");
    assert!(err.to_string().contains("non-public address"), "{err}");
}

#[tokio::test]
async fn refused_destinations_are_denied_before_any_connection() {
    let net =
        Arc::new(Net::new(NetPolicy::default(), Keychain::default(), None, None).expect("net"));
    let deadline = Instant::now() + std::time::Duration::from_secs(5);
    for url in [
        "https://127.0.0.1:1/v2/",
        "https://169.254.169.254/latest/meta-data",
        "http://[::1]:5000/v2/",
    ] {
        let err = net
            .clone()
            .send(guest_request(url, &[]), Presented::default(), deadline)
            .await
            .expect_err(url);
        assert!(
            matches!(err, HttpError::HttpRequestDenied),
            "{url}: {err:?}"
        );
    }
    assert_eq!(net.sent.load(Ordering::Relaxed), 0, "nothing was sent");
}

/// The component may only read: anything but GET and HEAD is denied
/// before it reaches the policy or the network.
#[tokio::test]
async fn only_get_and_head_leave_the_host() {
    let (addr, _seen) = recording_server().await;
    let policy = NetPolicy {
        allow: vec![],
        insecure: vec![addr.parse().expect("host:port")],
        pins: vec![],
        revocation: vec![],
    };
    let net = Arc::new(Net::new(policy, Keychain::default(), None, None).expect("net"));
    let deadline = Instant::now() + Duration::from_secs(5);
    for method in [
        "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE",
    ] {
        let mut req = guest_request(&format!("https://{addr}/v2/a/blobs/uploads/"), &[]);
        *req.method_mut() = method.parse().expect("method");
        let err = net
            .clone()
            .send(req, Presented::default(), deadline)
            .await
            .expect_err(method);
        assert!(
            matches!(err, HttpError::HttpRequestDenied),
            "{method}: {err:?}"
        );
    }
    assert_eq!(net.sent.load(Ordering::Relaxed), 0, "nothing was sent");
    let mut head = guest_request(&format!("https://{addr}/v2/"), &[]);
    *head.method_mut() = http::Method::HEAD;
    assert_eq!(
        net.clone()
            .send(head, Presented::default(), deadline)
            .await
            .expect("HEAD")
            .status(),
        200
    );
}

/// A registry and its token endpoint on one address: tokens are
/// `tok-<the Basic credentials>`, and the registry echoes the token.
async fn token_registry() -> (String, Arc<AtomicU64>) {
    use hyper::service::service_fn;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let fetched = Arc::new(AtomicU64::new(0));
    let (realm, count) = (format!("http://{addr}/token"), fetched.clone());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (realm, count) = (realm.clone(), count.clone());
            let service = service_fn(move |req: http::Request<hyper::body::Incoming>| {
                let auth = req
                    .headers()
                    .get(AUTHORIZATION)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_string();
                let mut resp = http::Response::new(Full::new(Bytes::new()));
                if req.uri().path() == "/token" {
                    count.fetch_add(1, Ordering::SeqCst);
                    let basic = auth.trim_start_matches("Basic ");
                    *resp.body_mut() = Full::new(Bytes::from(format!(
                        r#"{{"token":"tok-{basic}","expires_in":18446744073709551615}}"#
                    )));
                } else if let Some(token) = auth.strip_prefix("Bearer ") {
                    *resp.body_mut() = Full::new(Bytes::from(token.to_string()));
                } else {
                    *resp.status_mut() = http::StatusCode::UNAUTHORIZED;
                    let challenge = format!(
                        r#"Bearer realm="{realm}",service="reg",scope="repository:app:pull""#
                    );
                    resp.headers_mut()
                        .insert(WWW_AUTHENTICATE, challenge.parse().expect("header"));
                }
                async move { Ok::<_, std::convert::Infallible>(resp) }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service),
            );
        }
    });
    (addr, fetched)
}

/// Two secrets with the same username (`_json_key`, as every GCP
/// service-account key has) never share a bearer token; one secret
/// reuses its own, even when the server says it lives forever.
#[tokio::test]
async fn same_username_different_secrets_get_distinct_tokens() {
    let (addr, fetched) = token_registry().await;
    let policy = NetPolicy {
        allow: vec![],
        insecure: vec![addr.parse().expect("host:port")],
        pins: vec![],
        revocation: vec![],
    };
    let net = Net::new(policy, Keychain::default(), None, None).expect("net");
    let secret = |password: &str| {
        Keychain::parse(&format!(
            r#"{{"auths":{{"{addr}":{{"username":"_json_key","password":"{password}"}}}}}}"#
        ))
        .expect("keychain")
    };
    let (team_a, team_b) = (secret("key-of-team-a"), secret("key-of-team-b"));
    let uri: http::Uri = format!("http://{addr}/v2/app/manifests/v1")
        .parse()
        .expect("uri");
    let headers = http::HeaderMap::new();
    let token_for = |keychain: &Keychain| {
        let req = Outgoing {
            method: &http::Method::GET,
            uri: &uri,
            headers: &headers,
            body: Bytes::new(),
            port: uri.port_u16(),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        let net = &net;
        let keychain = keychain.clone();
        async move {
            let (resp, _) = net
                .with_auth(req, None, Some(&keychain), true, deadline)
                .await
                .expect("sent");
            assert_eq!(resp.status(), 200);
            let body = resp.into_body().collect().await.expect("body").to_bytes();
            String::from_utf8_lossy(&body).into_owned()
        }
    };
    let a = token_for(&team_a).await;
    let b = token_for(&team_b).await;
    assert_ne!(a, b, "team B was handed team A's token");
    assert_eq!(fetched.load(Ordering::SeqCst), 2);
    assert_eq!(token_for(&team_a).await, a);
    assert_eq!(token_for(&team_b).await, b);
    assert_eq!(
        fetched.load(Ordering::SeqCst),
        2,
        "cached tokens are reused"
    );
}

/// A listener that counts the connections it accepts (and closes them).
async fn counting_listener(ip: &str, port: u16) -> Option<Arc<AtomicU64>> {
    let listener = tokio::net::TcpListener::bind((ip, port)).await.ok()?;
    let count = Arc::new(AtomicU64::new(0));
    let c = count.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            c.fetch_add(1, Ordering::SeqCst);
            drop(stream);
        }
    });
    Some(count)
}

/// DNS rebinding: the name's first answer is "public" (a loopback
/// address the test script declares public), the next is loopback. The
/// host dials what it checked, and refuses the rebound answer; nothing
/// ever reaches the rebound address.
#[tokio::test]
async fn connects_only_to_the_addresses_it_checked() {
    let trap = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = trap.local_addr().expect("addr").port();
    drop(trap);
    let (Some(checked), Some(rebound)) = (
        counting_listener("127.0.0.2", port).await,
        counting_listener("127.0.0.1", port).await,
    ) else {
        panic!("cannot listen on 127.0.0.1 and 127.0.0.2 port {port}");
    };
    let script = r#"{"answers": {"rebind.test": [["127.0.0.2"], ["127.0.0.1"]]},
                         "public_for_test": ["127.0.0.2"]}"#;
    let lookup = Arc::new(resolve::ScriptedLookup::parse(script).expect("script"));
    let net = Arc::new(
        Net::with_lookup(
            NetPolicy::default(),
            Keychain::default(),
            None,
            None,
            lookup,
        )
        .expect("net"),
    );
    let url = format!("https://rebind.test:{port}/v2/");
    let deadline = Instant::now() + Duration::from_secs(10);
    // First lookup: the checked address is dialled (its TLS fails: it is no registry).
    let first = net
        .clone()
        .send(guest_request(&url, &[]), Presented::default(), deadline)
        .await;
    assert!(
        !matches!(first, Err(HttpError::HttpRequestDenied)),
        "{:?}",
        first.err()
    );
    assert_eq!(checked.load(Ordering::SeqCst), 1);
    // Second lookup: rebound to loopback, refused before any connect.
    let second = net
        .clone()
        .send(guest_request(&url, &[]), Presented::default(), deadline)
        .await;
    assert!(
        matches!(second, Err(HttpError::HttpRequestDenied)),
        "{:?}",
        second.err()
    );
    assert_eq!(
        rebound.load(Ordering::SeqCst),
        0,
        "the rebound address was reached"
    );
}

/// A resolver that never answers costs the request its deadline, no more.
#[tokio::test]
async fn dns_lookups_end_at_the_request_deadline() {
    let script = r#"{"answers": {"slow.test": ["stall"]}}"#;
    let lookup = Arc::new(resolve::ScriptedLookup::parse(script).expect("script"));
    let net = Arc::new(
        Net::with_lookup(
            NetPolicy::default(),
            Keychain::default(),
            None,
            None,
            lookup,
        )
        .expect("net"),
    );
    let deadline = Instant::now() + Duration::from_millis(300);
    let bound = tokio::time::timeout(
        Duration::from_secs(30),
        net.send(
            guest_request("https://slow.test/v2/", &[]),
            Presented::default(),
            deadline,
        ),
    )
    .await
    .expect("the lookup outlived the deadline by far");
    let e = bound.expect_err("refused").to_string();
    assert!(e.contains("DNS lookup timed out"), "{e}");
}

/// The host-wide keychain (`--registry-config`) is the operator's: a
/// namespaced policy's requests (`Presented::tenant`) go without it, unless
/// `--registry-config-for-namespaced` shares it, so that a tenant cannot
/// read the private images host-wide credentials reach.
#[tokio::test]
async fn the_host_keychain_serves_tenants_only_when_shared() {
    let (addr, _fetched) = token_registry().await;
    let policy = NetPolicy {
        allow: vec![],
        insecure: vec![addr.parse().expect("host:port")],
        pins: vec![],
        revocation: vec![],
    };
    let keychain = Keychain::parse(&format!(
        r#"{{"auths":{{"{addr}":{{"username":"operator","password":"host-wide"}}}}}}"#
    ))
    .expect("keychain");
    let net = Arc::new(Net::new(policy, keychain, None, None).expect("net"));
    let url = format!("http://{addr}/v2/app/manifests/v1");
    let token = |tenant: Option<&str>| {
        let net = net.clone();
        let presented = Presented {
            secrets: Arc::default(),
            tenant: tenant.map(Arc::from),
        };
        let req = guest_request(&url, &[]);
        async move {
            let deadline = Instant::now() + Duration::from_secs(10);
            let resp = net.send(req, presented, deadline).await.expect("sent");
            let body = resp.into_body().collect().await.expect("body").to_bytes();
            String::from_utf8_lossy(&body).into_owned()
        }
    };
    let operator = token(None).await;
    assert_ne!(
        operator, "tok-",
        "the cluster policy got the host's credentials"
    );
    assert_eq!(
        token(Some("team")).await,
        "tok-",
        "the tenant went anonymous"
    );
    let later = Instant::now() + Duration::from_secs(10);
    let registries = std::slice::from_ref(&addr);
    let (operator_key, tenant_key) = (
        net.scoped_key("k", registries, &[], None, later).await,
        net.scoped_key("k", registries, &[], Some("team"), later)
            .await,
    );
    assert_ne!(operator_key, tenant_key);
    net.share_keychain_with_tenants();
    assert_eq!(token(Some("team")).await, operator);
    assert_eq!(
        net.scoped_key("k", registries, &[], None, later).await,
        net.scoped_key("k", registries, &[], Some("team"), later)
            .await
    );
}

/// A registry that reads each request and never answers, holding the
/// connection open.
async fn silent_registry() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut buf = vec![0u8; 8192];
            let _ = stream.read(&mut buf).await;
            held.push(stream);
        }
    });
    addr
}

/// One slow registry holds at most `--registry-inflight` of the host's
/// requests: the next waits for a turn and, past its deadline, fails
/// naming the registry; another registry is not affected.
#[tokio::test]
async fn a_slow_registry_holds_at_most_its_in_flight_share() {
    let (slow, other) = (silent_registry().await, silent_registry().await);
    let policy = NetPolicy {
        allow: vec![],
        insecure: vec![
            slow.parse().expect("host:port"),
            other.parse().expect("host:port"),
        ],
        pins: vec![],
        revocation: vec![],
    };
    let net = Arc::new(Net::new(policy, Keychain::default(), None, None).expect("net"));
    net.limit_inflight_per_registry(1);
    let send = |addr: &str, wait: Duration| {
        let net = net.clone();
        let req = guest_request(&format!("http://{addr}/v2/"), &[]);
        async move {
            net.send(req, Presented::default(), Instant::now() + wait)
                .await
                .map(|_| ())
        }
    };
    let holding = tokio::spawn(send(&slow, Duration::from_secs(5)));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let refused = send(&slow, Duration::from_millis(300))
        .await
        .expect_err("no turn");
    assert!(
        format!("{refused:?}").contains("1 requests to")
            && format!("{refused:?}").contains("in flight"),
        "{refused:?}"
    );
    // Another registry has its own turns: this one reaches it and then
    // waits for its (silent) answer until the deadline instead.
    let elsewhere = send(&other, Duration::from_millis(300))
        .await
        .expect_err("silent");
    assert!(
        !format!("{elsewhere:?}").contains("in flight"),
        "{elsewhere:?}"
    );
    holding.abort();
}

/// A policy's registry Secret may name a credential helper only when the
/// operator lists it (`--allow-credential-helper`): the helper would run
/// with ivpol's own identity. The operator's `--registry-config` helpers
/// always run.
#[tokio::test]
async fn a_secret_names_only_the_credential_helpers_the_operator_allows() {
    let later = Instant::now() + Duration::from_secs(10);
    let secret = Keychain::parse(r#"{"credHelpers":{"r.io":"ivpol-absent"}}"#).expect("secret");
    let net = Net::new(NetPolicy::default(), Keychain::default(), None, None).expect("net");
    let refused = net
        .credential("r.io", None, None, Some(&secret), true, later)
        .await
        .expect_err("not allowed");
    assert!(
        refused.contains("--allow-credential-helper does not list"),
        "{refused}"
    );
    net.allow_secret_credential_helpers(vec!["ivpol-absent".into()]);
    let ran = net
        .credential("r.io", None, None, Some(&secret), true, later)
        .await
        .expect_err("not installed");
    assert!(
        ran.contains("docker-credential-ivpol-absent: cannot run it"),
        "{ran}"
    );
    // The operator's own config names it: it runs without the flag.
    let operator = Keychain::parse(r#"{"credsStore":"ivpol-absent"}"#).expect("config");
    let net = Net::new(NetPolicy::default(), operator, None, None).expect("net");
    let ran = net
        .credential("r.io", Some(5000), None, None, true, later)
        .await
        .expect_err("ran");
    assert!(ran.contains("cannot run it"), "{ran}");
    // Docker's `{}` placeholder is no credential of its own.
    let placeholder = Keychain::parse(r#"{"auths":{"r.io":{}}}"#).expect("config");
    assert!(placeholder.source("r.io", None).is_none());
}

#[test]
fn the_repository_of_a_registry_path() {
    assert_eq!(repository_of("/v2/team/app/manifests/v1"), Some("team/app"));
    assert_eq!(repository_of("/v2/a/blobs/sha256:x"), Some("a"));
    assert_eq!(
        repository_of("/v2/a/manifests/b/manifests/c"),
        Some("a/manifests/b")
    );
    assert_eq!(repository_of("/v2/a/referrers/sha256:x"), Some("a"));
    assert_eq!(repository_of("/v2/"), None);
    assert_eq!(repository_of("/token"), None);
}

/// Kubelet credential plugins are the operator's, like --registry-config:
/// a namespaced policy's requests never run them (unless the operator
/// shares), and its verifications never share a cache key with the
/// operator's for a registry a plugin serves.
#[tokio::test]
async fn kubelet_plugins_serve_tenants_only_when_shared() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("dir");
    let config = dir.path().join("providers.yaml");
    std::fs::write(
        &config,
        "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n  - name: test-plugin\n    matchImages: [\"r.io\"]\n    defaultCacheDuration: 1m\n    apiVersion: credentialprovider.kubelet.k8s.io/v1\n",
    )
    .expect("config");
    // It holds a credential for one repository of r.io only.
    let plugin = dir.path().join("test-plugin");
    std::fs::write(
        &plugin,
        "#!/bin/sh\ncat > /dev/null\nprintf '{\"apiVersion\":\"credentialprovider.kubelet.k8s.io/v1\",\"kind\":\"CredentialProviderResponse\",\"cacheKeyType\":\"Image\",\"auth\":{\"r.io/private\":{\"username\":\"u\",\"password\":\"p\"}}}'\n",
    )
    .expect("plugin");
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let net = Net::new(NetPolicy::default(), Keychain::default(), None, None).expect("net");
    net.use_credential_plugins(kubelet::Plugins::load(&config, dir.path()).expect("plugins"));
    let later = Instant::now() + Duration::from_secs(10);
    let tenant = net
        .credential("r.io", None, Some("private/app"), None, false, later)
        .await;
    assert_eq!(tenant, Ok(None), "a tenant's request runs no plugin");
    let operator = net
        .credential("r.io", None, Some("private/app"), None, true, later)
        .await;
    assert_eq!(
        operator.expect("ran").map(|c| c.username),
        Some("u".to_string())
    );
    let elsewhere = net
        .credential("r.io", None, Some("public/app"), None, true, later)
        .await;
    assert_eq!(elsewhere, Ok(None), "no credential for that repository");
    let registries = ["r.io".to_string()];
    let (operator_key, tenant_key) = (
        net.scoped_key("k", &registries, &[], None, later).await,
        net.scoped_key("k", &registries, &[], Some("team"), later)
            .await,
    );
    assert!(operator_key.is_some() && tenant_key.is_some());
    assert_ne!(
        operator_key, tenant_key,
        "the plugin's registry is keyed apart"
    );
    let other = ["other.io".to_string()];
    assert_eq!(
        net.scoped_key("k", &other, &[], None, later).await,
        net.scoped_key("k", &other, &[], Some("team"), later).await,
        "a registry no plugin serves is anonymous for both"
    );
}

/// `credentials.providers: [github]` presents `GITHUB_TOKEN` to `ghcr.io`
/// only, for a cluster policy; a namespaced policy naming it is refused
/// unless the operator shares the host's credentials.
#[tokio::test]
async fn the_github_provider_serves_ghcr_for_cluster_policies() {
    let github = Keychain::github(Some("tok".into()), None);
    let cred = github.get("ghcr.io", None).expect("ghcr.io");
    assert_eq!(
        (cred.username.as_str(), cred.password.as_str()),
        ("unset", "tok")
    );
    assert!(github.get("ghcr.io", Some(443)).is_some(), "any port");
    assert!(github.get("docker.io", None).is_none());
    assert!(Keychain::github(None, Some("me".into()))
        .get("ghcr.io", None)
        .is_none());
    let mut net = Net::new(NetPolicy::default(), Keychain::default(), None, None).expect("net");
    net.github = Keychain::github(Some("tok".into()), Some("bot".into()));
    let names = ["provider:github".to_string()];
    let cluster = net
        .secrets_keychain(&names, true)
        .expect("cluster")
        .expect("keychain");
    assert_eq!(
        cluster.get("ghcr.io", None).map(|c| c.username.as_str()),
        Some("bot")
    );
    let tenant = net.secrets_keychain(&names, false).expect_err("tenant");
    assert!(
        tenant.contains("--registry-config-for-namespaced"),
        "{tenant}"
    );
    let unknown = net.secrets_keychain(&["provider:oracle".to_string()], true);
    assert!(unknown.expect_err("oracle").contains("not implemented"));
    // A cloud provider serves its own hosts only, after stored credentials.
    let amazon = net
        .secrets_keychain(&["provider:amazon".to_string()], true)
        .expect("amazon")
        .expect("keychain");
    let ecr = "123456789012.dkr.ecr.eu-west-1.amazonaws.com";
    assert_eq!(
        amazon.source(ecr, None),
        Some(auth::Source::Provider("amazon"))
    );
    assert_eq!(amazon.source("ghcr.io", None), None);
    let azure = net
        .secrets_keychain(&["provider:azure".to_string()], true)
        .expect("azure")
        .expect("keychain");
    assert_eq!(
        azure.source("team.azurecr.io", Some(443)),
        Some(auth::Source::Provider("azure"))
    );
    assert_eq!(azure.source(ecr, None), None);
}
