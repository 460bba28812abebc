use super::*;

#[test]
fn parses_challenges() {
    let h = r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull,push""#;
    assert_eq!(
        parse_challenge(h),
        Some(Challenge::Bearer {
            realm: "https://auth.example/token".into(),
            service: "registry.example".into(),
            scope: "repository:a/b:pull,push".into()
        })
    );
    assert_eq!(
        parse_challenge(r#"Basic realm="Registry""#),
        Some(Challenge::Basic)
    );
    assert_eq!(parse_challenge("Negotiate"), None);
    assert_eq!(parse_challenge("Bearer service=x"), None);
}

#[test]
fn token_urls_carry_service_and_scope_encoded() {
    assert_eq!(
        token_url("https://a/token", "reg x", "repository:a/b:pull"),
        "https://a/token?service=reg%20x&scope=repository%3Aa%2Fb%3Apull"
    );
    assert_eq!(
        token_url("https://a/token?x=1", "s", ""),
        "https://a/token?x=1&service=s"
    );
}

/// What a hostile or sloppy token server can send gets a bounded lifetime
/// or a clear refusal, never a panic.
#[test]
fn token_answers_are_bounded() {
    let life = |body: &str| parse_token_response(body.as_bytes()).map(|(_, l)| l);
    let hour = Ok(MAX_TOKEN_LIFETIME);
    let minute = Ok(DEFAULT_TOKEN_LIFETIME);
    assert_eq!(
        life(r#"{"token":"t","expires_in":18446744073709551615}"#),
        hour
    );
    assert_eq!(life(r#"{"token":"t","expires_in":1e300}"#), minute);
    assert_eq!(
        life(r#"{"token":"t","expires_in":99999999999999999999999}"#),
        minute
    );
    assert_eq!(life(r#"{"token":"t","expires_in":-5}"#), minute);
    assert_eq!(life(r#"{"token":"t","expires_in":"300"}"#), minute);
    assert_eq!(life(r#"{"token":"t","expires_in":0}"#), minute);
    assert_eq!(life(r#"{"token":"t"}"#), minute);
    assert_eq!(
        life(r#"{"token":"t","expires_in":120}"#),
        Ok(Duration::from_secs(120))
    );
    assert_eq!(
        parse_token_response(br#"{"access_token":"x","expires_in":5}"#),
        Ok(("x".into(), Duration::from_secs(5)))
    );
    for (body, why) in [
        ("{}", "no token"),
        ("[1]", "no token"),
        ("not json", "not JSON"),
        (r#"{"token":""}"#, "empty"),
        (r#"{"token":7}"#, "no token"),
        ("{\"token\":\"a\\nb\"}", "header value"),
        ("{\"token\":\"a\\u007fb\"}", "header value"),
    ] {
        let err = parse_token_response(body.as_bytes()).expect_err(body);
        assert!(err.contains(why), "{body}: {err}");
    }
    let huge = format!(r#"{{"token":"{}"}}"#, "a".repeat(MAX_TOKEN_BYTES + 1));
    let e = parse_token_response(huge.as_bytes()).expect_err("refused");
    assert!(e.contains("more than 65536"), "{e}");
}

#[test]
fn credential_ids_bind_the_password() {
    let a = Credential {
        username: "_json_key".into(),
        password: "key-of-team-a".into(),
    };
    let b = Credential {
        username: "_json_key".into(),
        password: "key-of-team-b".into(),
    };
    assert_ne!(a.id(), b.id());
    assert_eq!(a.id(), a.clone().id());
    assert!(!a.id().contains("_json_key") && !a.id().contains("team"));
    // No ambiguity between where the username ends and the password starts.
    let c = Credential {
        username: "ab".into(),
        password: "c".into(),
    };
    let d = Credential {
        username: "a".into(),
        password: "bc".into(),
    };
    assert_ne!(c.id(), d.id());
    // Nor does a log line show the password.
    assert!(!format!("{a:?}").contains("team-a"), "{a:?}");
    assert_eq!(a.basic_header(), "Basic X2pzb25fa2V5OmtleS1vZi10ZWFtLWE=");
}

#[test]
fn docker_config_auths_both_ways() {
    let config: Value = serde_json::from_str(
        r#"{"auths":{
            "https://index.docker.io/v1/":{"auth":"dXNlcjpwYXNz"},
            "127.0.0.1:5000":{"username":"alice","password":"s3cret"},
            "helper.example":{}}}"#,
    )
    .expect("json");
    let mut auths = parse_auths(&config).expect("valid");
    auths.sort_by(|a, b| a.0.cmp(&b.0));
    let names: Vec<_> = auths
        .iter()
        .map(|(r, c)| (r.as_str(), c.username.as_str()))
        .collect();
    assert_eq!(
        names,
        [("127.0.0.1:5000", "alice"), ("index.docker.io", "user")]
    );
    for (bad, why) in [
        (
            r#"{"auths":{"x":{"auth":"!!"}}}"#,
            "auths.x.auth is not base64",
        ),
        (
            r#"{"auths":{"x":{"auth":"bm9jb2xvbg=="}}}"#,
            "auths.x.auth is not user:password",
        ),
        (r#"{"auths":[]}"#, "auths is not an object"),
    ] {
        let config: Value = serde_json::from_str(bad).expect("json");
        let e = parse_auths(&config).expect_err(bad);
        assert!(e.contains(why), "{bad}: {e}");
    }
    assert!(parse_auths(&serde_json::json!({}))
        .expect("none")
        .is_empty());
}

#[test]
fn docker_hubs_api_host_and_its_login_name_are_inverses() {
    for name in ["docker.io", "index.docker.io"] {
        assert_eq!(crate::api_host(name), "registry-1.docker.io");
    }
    assert_eq!(
        config_host(crate::api_host("index.docker.io")),
        "index.docker.io"
    );
    for host in ["ghcr.io", "registry.example.com:5000"] {
        assert_eq!(crate::api_host(host), host);
        assert_eq!(config_host(host), host);
    }
}
