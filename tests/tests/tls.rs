//! `--tls-cert`/`--tls-key`: the webhook served over HTTPS (rustls).

use ivpol_tests::review::create_pod;
use ivpol_tests::{post_with, Options, Server};
use std::sync::Arc;

#[test]
fn serves_admission_reviews_over_https() {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
        .expect("self-signed certificate");
    let (cert_pem, key_pem) = (cert.cert.pem(), cert.key_pair.serialize_pem());
    let policy = r#"apiVersion: policies.kyverno.io/v1
kind: ImageValidatingPolicy
metadata: {name: tls}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  validationConfigurations: {mutateDigest: false, verifyDigest: false, required: false}
  attestors: []
  validations: [{expression: "false", message: over tls}]
"#;
    let s = Server::start_with(
        &[("p.yaml", policy)],
        Options {
            tls: Some((&cert_pem, &key_pem)),
            ..Options::default()
        },
    );
    assert!(s.base.starts_with("https://"), "{}", s.base);
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(cert.cert.der().clone())
        .expect("trust the test certificate");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let agent = ureq::AgentBuilder::new()
        .tls_config(Arc::new(config))
        .build();
    let url = s.base.replace("127.0.0.1", "localhost") + "/ivpol/validate/tls";
    let (status, body) = post_with(&agent, &url, &create_pod(&["ghcr.io/a/b:1"]).to_string());
    assert_eq!(status, 200);
    assert_eq!(
        body["response"]["status"]["message"],
        "Policy tls failed: over tls"
    );
}
