//! Registry token auth done by the host: the distribution registry in its
//! `auth: token` variant, with a small in-test token server issuing ES256
//! JWTs. Anonymous pulls of public repositories work; private ones need the
//! credentials from `--registry-config`, which only the host ever reads.

use base64::Engine as _;
use ivpol_tests::fixtures::{Pusher, OCI_MANIFEST};
use ivpol_tests::policy::pod_policy;
use ivpol_tests::registry::Registry;
use ivpol_tests::review::create_pod;
use ivpol_tests::{Options, Server};
use ring::signature::{EcdsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const SERVICE: &str = "ivpol-test-registry";
const ISSUER: &str = "ivpol-test-issuer";
const USER: &str = "alice";
const PASSWORD: &str = "s3cret-never-in-the-guest";

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

struct TokenServer {
    addr: String,
    cert_pem: String,
    key: Arc<EcdsaKeyPair>,
    cert_der: Vec<u8>,
    /// Token requests that carried the right Basic credentials.
    authenticated: Arc<AtomicUsize>,
    anonymous: Arc<AtomicUsize>,
}

impl TokenServer {
    fn start() -> TokenServer {
        let key_pair = rcgen::KeyPair::generate().expect("P-256 key");
        let cert = rcgen::CertificateParams::new(vec!["token-issuer".into()])
            .expect("params")
            .self_signed(&key_pair)
            .expect("self-signed");
        let rng = ring::rand::SystemRandom::new();
        let key = Arc::new(
            EcdsaKeyPair::from_pkcs8(
                &ECDSA_P256_SHA256_FIXED_SIGNING,
                &key_pair.serialize_der(),
                &rng,
            )
            .expect("ring key"),
        );
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let server = TokenServer {
            addr,
            cert_pem: cert.pem(),
            cert_der: cert.der().to_vec(),
            key,
            authenticated: Arc::default(),
            anonymous: Arc::default(),
        };
        let (key, der, auth, anon) = (
            server.key.clone(),
            server.cert_der.clone(),
            server.authenticated.clone(),
            server.anonymous.clone(),
        );
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut line = String::new();
                let _ = reader.read_line(&mut line);
                let mut has_creds = false;
                let expected = format!(
                    "authorization: basic {}",
                    base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"))
                )
                .to_ascii_lowercase();
                let mut header = String::new();
                while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
                    if header.trim().to_ascii_lowercase() == expected {
                        has_creds = true;
                    }
                    header.clear();
                }
                let query = line
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or("")
                    .split_once('?')
                    .map(|(_, q)| q)
                    .unwrap_or("");
                let scope = query
                    .split('&')
                    .find_map(|kv| kv.strip_prefix("scope="))
                    .unwrap_or("");
                let scope = scope
                    .replace("%3A", ":")
                    .replace("%2F", "/")
                    .replace("%2C", ",");
                let mut parts = scope.split(':');
                let (_, name, actions) = (
                    parts.next(),
                    parts.next().unwrap_or(""),
                    parts.next().unwrap_or(""),
                );
                let granted: Vec<&str> = if has_creds {
                    auth.fetch_add(1, Ordering::SeqCst);
                    actions.split(',').filter(|a| !a.is_empty()).collect()
                } else {
                    anon.fetch_add(1, Ordering::SeqCst);
                    if name.starts_with("public/") {
                        vec!["pull"]
                    } else {
                        vec![]
                    }
                };
                let token = mint(&key, &der, name, &granted);
                let body =
                    format!(r#"{{"token":"{token}","access_token":"{token}","expires_in":300}}"#);
                let mut out = stream;
                let _ = write!(out, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
            }
        });
        server
    }

    fn registry(&self) -> Registry {
        let dir = std::env::temp_dir().join(format!("ivpol-token-{}", self.addr.replace(':', "-")));
        std::fs::create_dir_all(&dir).expect("dir");
        let bundle = dir.join("token.crt");
        std::fs::write(&bundle, &self.cert_pem).expect("write bundle");
        Registry::start_with_auth(&format!(
            "auth:\n  token:\n    realm: http://{}/token\n    service: {SERVICE}\n    issuer: {ISSUER}\n    rootcertbundle: {}\n",
            self.addr,
            bundle.display()
        ))
    }

    /// A push-capable token, for the fixture generator.
    fn bearer(&self, name: &str) -> String {
        format!(
            "Bearer {}",
            mint(&self.key, &self.cert_der, name, &["pull", "push"])
        )
    }
}

fn mint(key: &EcdsaKeyPair, cert_der: &[u8], name: &str, actions: &[&str]) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let header = serde_json::json!({
        "alg": "ES256", "typ": "JWT",
        "x5c": [base64::engine::general_purpose::STANDARD.encode(cert_der)],
    });
    let claims = serde_json::json!({
        "iss": ISSUER, "sub": USER, "aud": SERVICE,
        "exp": now + 300, "nbf": now - 10, "iat": now, "jti": format!("{now}-{name}-{}", actions.len()),
        "access": [{"type": "repository", "name": name, "actions": actions}],
    });
    let signing_input = format!(
        "{}.{}",
        b64url(header.to_string().as_bytes()),
        b64url(claims.to_string().as_bytes())
    );
    let rng = ring::rand::SystemRandom::new();
    let sig = key.sign(&rng, signing_input.as_bytes()).expect("sign");
    format!("{signing_input}.{}", b64url(sig.as_ref()))
}

/// Pins every Pod image; no signature checks.
fn pin() -> String {
    pod_policy(
        "pin",
        "\"CREATE\"",
        "  attestors: []\n  validations:\n    - expression: \"true\"\n",
    )
}

fn server(tokens: &TokenServer, reg: &Registry, config: Option<&std::path::Path>) -> Server {
    let mut extra_args = vec![
        "--insecure-registry".into(),
        reg.addr.clone(),
        "--insecure-registry".into(),
        tokens.addr.clone(),
    ];
    if let Some(c) = config {
        extra_args.push("--registry-config".into());
        extra_args.push(c.display().to_string());
    }
    Server::start_with(
        &[("pin.yaml", &pin())],
        Options {
            extra_args,
            ..Options::default()
        },
    )
}

#[test]
fn anonymous_and_authenticated_pulls_through_the_host() {
    let tokens = TokenServer::start();
    let reg = tokens.registry();
    let public = Pusher {
        addr: &reg.addr,
        auth: Some(tokens.bearer("public/app")),
    }
    .image("public/app", "v1", OCI_MANIFEST, "amd64");
    let private = Pusher {
        addr: &reg.addr,
        auth: Some(tokens.bearer("private/app")),
    }
    .image("private/app", "v1", OCI_MANIFEST, "amd64");
    let pub_image = format!("{}/public/app:v1", reg.addr);
    let priv_image = format!("{}/private/app:v1", reg.addr);

    // No credentials: the public repository resolves with an anonymous token...
    let s = server(&tokens, &reg, None);
    let r = s.review("/ivpol/mutate/pin", &create_pod(&[&pub_image]));
    assert_eq!(r["allowed"], true, "{r}");
    let pinned = base64::engine::general_purpose::STANDARD
        .decode(r["patch"].as_str().unwrap_or_default())
        .expect("patch");
    assert!(String::from_utf8_lossy(&pinned).contains(&public), "{r}");
    // ...the private one is refused by the registry.
    let r = s.review("/ivpol/mutate/pin", &create_pod(&[&priv_image]));
    let msg = r["status"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("registry answered HTTP 401"), "{msg}");
    assert_eq!(tokens.authenticated.load(Ordering::SeqCst), 0);

    // With --registry-config the host presents the credentials to the token server.
    let config = s.dir.path().join("config.json");
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    std::fs::write(
        &config,
        format!(r#"{{"auths":{{"{}":{{"auth":"{auth}"}}}}}}"#, reg.addr),
    )
    .expect("config");
    let s = server(&tokens, &reg, Some(&config));
    let r = s.review("/ivpol/mutate/pin", &create_pod(&[&priv_image]));
    assert_eq!(r["allowed"], true, "{r}");
    let patch = String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(r["patch"].as_str().unwrap_or_default())
            .expect("base64"),
    )
    .expect("utf8");
    assert!(patch.contains(&private), "{patch}");
    assert!(tokens.authenticated.load(Ordering::SeqCst) >= 1);
    // Neither the password nor a token shows up in anything the host answers.
    assert!(
        !r.to_string().contains(PASSWORD) && !r.to_string().contains("eyJ"),
        "{r}"
    );
    // A second request reuses the cached token: no new token request.
    let before =
        tokens.authenticated.load(Ordering::SeqCst) + tokens.anonymous.load(Ordering::SeqCst);
    let again = s.review("/ivpol/mutate/pin", &create_pod(&[&priv_image]));
    assert_eq!(again["allowed"], true);
    let after =
        tokens.authenticated.load(Ordering::SeqCst) + tokens.anonymous.load(Ordering::SeqCst);
    assert_eq!(before, after, "the token was fetched again");
}

/// A policy's `credentials.secrets`: only the secret's NAME leaves the
/// component; the host reads it from `--secrets-dir` and answers the challenge.
#[test]
fn policy_credentials_secrets_are_read_by_the_host() {
    let tokens = TokenServer::start();
    let reg = tokens.registry();
    let digest = Pusher {
        addr: &reg.addr,
        auth: Some(tokens.bearer("private/app")),
    }
    .image("private/app", "v1", OCI_MANIFEST, "amd64");
    let image = format!("{}/private/app:v1", reg.addr);
    let policy = pin().replace(
        "  attestors: []",
        "  credentials:\n    secrets: [regcred]\n  attestors: []",
    );
    let start = |secrets: Option<&std::path::Path>| {
        let mut extra_args = vec![
            "--insecure-registry".into(),
            reg.addr.clone(),
            "--insecure-registry".into(),
            tokens.addr.clone(),
        ];
        if let Some(d) = secrets {
            extra_args.push("--secrets-dir".into());
            extra_args.push(d.display().to_string());
        }
        Server::start_with(
            &[("pin.yaml", &policy)],
            Options {
                extra_args,
                ..Options::default()
            },
        )
    };
    // No --secrets-dir: a clear error, not an anonymous attempt.
    let s = start(None);
    let r = s.review("/ivpol/mutate/pin", &create_pod(&[&image]));
    assert!(
        r["status"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("no --secrets-dir"),
        "{r}"
    );
    // The secret as a Kubernetes Secret manifest of type dockerconfigjson.
    let dir = s.dir.path().join("secrets");
    std::fs::create_dir(&dir).expect("dir");
    let config = format!(
        r#"{{"auths":{{"{}":{{"username":"{USER}","password":"{PASSWORD}"}}}}}}"#,
        reg.addr
    );
    let secret = format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: regcred}}\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: {}\n",
        base64::engine::general_purpose::STANDARD.encode(config)
    );
    std::fs::write(dir.join("regcred"), secret).expect("secret");
    let s2 = start(Some(&dir));
    let r = s2.review("/ivpol/mutate/pin", &create_pod(&[&image]));
    assert_eq!(r["allowed"], true, "{r}");
    let patch = base64::engine::general_purpose::STANDARD
        .decode(r["patch"].as_str().unwrap_or_default())
        .expect("patch");
    assert!(String::from_utf8_lossy(&patch).contains(&digest), "{r}");
    // A secret that is not there.
    std::fs::remove_file(dir.join("regcred")).expect("rm");
    let s3 = start(Some(&dir));
    let r = s3.review("/ivpol/mutate/pin", &create_pod(&[&image]));
    assert!(
        r["status"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("registry secret regcred not found"),
        "{r}"
    );
}
