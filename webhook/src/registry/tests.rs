//! The challenge answering over a scripted transport: what is sent, to
//! whom, with which credential. The end-to-end test runs the component
//! against the test registry's token variant.

use super::*;
use base64::Engine as _;

type Answer = Box<dyn Fn(&HttpRequest) -> HttpResponse + Send + Sync>;

/// Answers each request with `answer`, keeping what was sent.
struct Script {
    sent: Mutex<Vec<HttpRequest>>,
    answer: Answer,
}

impl Transport for Script {
    fn send(&self, request: &HttpRequest, _max: usize) -> Result<HttpResponse, TransportError> {
        self.sent.lock().expect("lock").push(request.clone());
        Ok((self.answer)(request))
    }
}

fn status(status: u16, headers: &[(&str, &str)], body: &str) -> HttpResponse {
    HttpResponse {
        status,
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        body: body.as_bytes().to_vec(),
    }
}

fn header<'a>(r: &'a HttpRequest, name: &str) -> Option<&'a str> {
    let found = r.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name));
    found.map(|(_, v)| v.as_str())
}

const CHALLENGE: &str =
    r#"Bearer realm="https://auth.test/token",service="reg",scope="repository:app:pull""#;

/// A registry at `reg.test` that wants a token from `auth.test`, which
/// grants `token-of-<user or anonymous>`.
fn token_registry() -> Arc<Script> {
    Arc::new(Script {
        sent: Mutex::default(),
        answer: Box::new(|r| {
            if r.url.starts_with("https://auth.test/") {
                let user = header(r, "authorization")
                    .and_then(|a| a.strip_prefix("Basic "))
                    .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
                    .map(|b| {
                        String::from_utf8_lossy(&b)
                            .split(':')
                            .next()
                            .unwrap_or("")
                            .to_string()
                    })
                    .unwrap_or_else(|| "anonymous".into());
                return status(
                    200,
                    &[],
                    &format!(r#"{{"token":"token-of-{user}","expires_in":300}}"#),
                );
            }
            match header(r, "authorization") {
                Some(a) if a.starts_with("Bearer token-of-") => status(200, &[], a),
                _ => status(401, &[("WWW-Authenticate", CHALLENGE)], ""),
            }
        }),
    })
}

fn through(script: &Arc<Script>, registries: Registries) -> Authenticating {
    Authenticating {
        inner: script.clone(),
        registries: Arc::new(registries),
    }
}

fn get(url: &str, secrets: &[&str]) -> HttpRequest {
    let mut r = HttpRequest::get(url.into(), vec![]);
    r.secrets = secrets.iter().map(|s| s.to_string()).collect();
    r
}

/// A policy directory holding `files` (relative path, contents).
fn policy_dir(files: &[(&str, &str)]) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("ivpol-webhook-reg-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        std::fs::write(path, text).expect("write");
    }
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

fn config(registry: &str, user: &str) -> String {
    format!(r#"{{"auths":{{"{registry}":{{"username":"{user}","password":"pw-{user}"}}}}}}"#)
}

#[test]
fn an_anonymous_token_is_fetched_once_and_presented() {
    let script = token_registry();
    let t = through(&script, Registries::new(None, ""));
    for _ in 0..2 {
        let answer = t.send(&get("https://reg.test/v2/app/manifests/v1", &[]), 1024);
        assert_eq!(answer.expect("sent").body, b"Bearer token-of-anonymous");
    }
    let sent = script.sent.lock().expect("lock");
    let token_requests: Vec<_> = sent
        .iter()
        .filter(|r| r.url.contains("auth.test"))
        .collect();
    assert_eq!(token_requests.len(), 1, "the token is kept: {sent:?}");
    assert_eq!(
        token_requests[0].url,
        "https://auth.test/token?service=reg&scope=repository%3Aapp%3Apull"
    );
    assert_eq!(header(token_requests[0], "authorization"), None);
}

#[test]
fn credentials_come_from_the_policy_secret_then_the_instance_config() {
    let secret = config("reg.test", "from-secret");
    let dir = policy_dir(&[
        (".docker/config.json", &config("reg.test", "from-config")),
        (".secrets/mounted/.dockerconfigjson", &secret),
        (".secrets/plain", &config("reg.test", "from-plain")),
        (".secrets/elsewhere", &config("other.test", "not-this-one")),
    ]);
    let script = token_registry();
    let t = through(&script, Registries::new(Some(&dir), ""));
    let url = "https://reg.test/v2/app/manifests/v1";
    for (secrets, user) in [
        (&[][..], "from-config"),
        (&["mounted"][..], "from-secret"),
        (&["team-a/plain"][..], "from-plain"),
        (&["elsewhere", "plain"][..], "from-plain"),
        (&["elsewhere"][..], "from-config"),
    ] {
        let answer = t.send(&get(url, secrets), 1024).expect("sent");
        let want = format!("Bearer token-of-{user}");
        assert_eq!(String::from_utf8_lossy(&answer.body), want, "{secrets:?}");
    }
    let e = t
        .send(&get(url, &["missing"]), 1024)
        .expect_err("no such secret");
    assert!(
        e.to_string().contains("registry secret missing not found"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn docker_hubs_api_host_finds_the_login_of_its_index() {
    let auths = registry_auth::parse_auths(&serde_json::json!({
        "auths": {"https://index.docker.io/v1/": {"auth": "dXNlcjpwYXNz"}}
    }))
    .expect("auths");
    let found = lookup(&auths, "registry-1.docker.io").map(|c| c.username);
    assert_eq!(found.as_deref(), Some("user"));
    assert!(lookup(&auths, "ghcr.io").is_none());
}

#[test]
fn a_credential_goes_only_to_its_registry_and_that_registrys_realm() {
    let dir = policy_dir(&[(".docker/config.json", &config("other.test", "alice"))]);
    let script = token_registry();
    let t = through(&script, Registries::new(Some(&dir), ""));
    let answer = t.send(&get("https://reg.test/v2/app/manifests/v1", &[]), 1024);
    assert_eq!(answer.expect("sent").body, b"Bearer token-of-anonymous");
    let sent = script.sent.lock().expect("lock");
    assert!(
        sent.iter().all(|r| !format!("{r:?}").contains("alice")),
        "{sent:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_broken_instance_config_fails_every_request_by_name() {
    let dir = policy_dir(&[(".docker/config.json", "{not json")]);
    let registries = Registries::new(Some(&dir), "");
    assert!(registries
        .config_problem()
        .is_some_and(|p| p.contains("not a docker config")));
    let script = token_registry();
    let t = through(&script, registries);
    let e = t
        .send(&get("https://reg.test/v2/app/manifests/v1", &[]), 1024)
        .expect_err("refused");
    assert!(e.to_string().contains(".docker/config.json"), "{e}");
    assert!(
        script.sent.lock().expect("lock").is_empty(),
        "nothing is sent"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn plain_http_goes_only_to_the_listed_registries() {
    let registries = Registries::new(None, " 127.0.0.1:5000 ,Reg.Test");
    let url = |u: &str| registries.routed_url(u);
    assert_eq!(
        url("https://127.0.0.1:5000/v2/").expect("listed"),
        "http://127.0.0.1:5000/v2/"
    );
    assert_eq!(
        url("https://reg.test/v2/").expect("listed"),
        "http://reg.test/v2/"
    );
    assert_eq!(
        url("https://127.0.0.1:5001/v2/").expect("https"),
        "https://127.0.0.1:5001/v2/"
    );
    let e = url("http://127.0.0.1:5001/v2/").expect_err("plain HTTP");
    assert!(
        e.to_string().contains("not in IVPOL_INSECURE_REGISTRIES"),
        "{e}"
    );
    assert!(url("ftp://reg.test/x").is_err());
    // An Authorization the request carries is never sent; the marker of a
    // revocation fetch is dropped, its URL kept as asked.
    let mut r = get("http://ocsp.example/x", &[]);
    r.headers = vec![
        ("Authorization".into(), "Basic c3RvbGVu".into()),
        (REVOCATION_FETCH_HEADER.into(), "1".into()),
    ];
    let routed = registries.routed(&r).expect("routed");
    assert!(
        routed.request.headers.is_empty(),
        "{:?}",
        routed.request.headers
    );
    assert_eq!(routed.request.url, "http://ocsp.example/x");
    assert!(!routed.answer_challenges);
}

#[test]
fn a_token_endpoint_that_refuses_is_named() {
    let script = Arc::new(Script {
        sent: Mutex::default(),
        answer: Box::new(|r| match r.url.contains("auth.test") {
            true => status(403, &[], "no"),
            false => status(401, &[("WWW-Authenticate", CHALLENGE)], ""),
        }),
    });
    let t = through(&script, Registries::new(None, ""));
    let e = t
        .send(&get("https://reg.test/v2/app/manifests/v1", &[]), 1024)
        .expect_err("refused");
    assert_eq!(
        e.to_string(),
        "request to auth.test failed: the token endpoint answered HTTP 403"
    );
}

#[test]
fn tokens_are_bounded_and_expire() {
    let tokens = Tokens::default();
    let key = |i: usize| TokenKey {
        realm: format!("r{i}"),
        service: String::new(),
        scope: String::new(),
        credential: String::new(),
    };
    for i in 0..MAX_TOKENS * 3 {
        tokens.put(key(i), "t".into(), Duration::from_secs(60));
        assert!(tokens.0.lock().expect("lock").len() <= MAX_TOKENS);
    }
    tokens.put(key(0), "brief".into(), RENEW_EARLY);
    assert_eq!(tokens.get(&key(0)), None, "kept no longer than its life");
    tokens.put(key(1), "t".into(), Duration::MAX);
    assert_eq!(tokens.get(&key(1)).as_deref(), Some("t"));
}
