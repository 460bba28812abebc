//! Registry TLS: the host trusts the webpki roots plus `--registry-ca`, and
//! nothing else; the component only ever asks for HTTPS.

use base64::Engine as _;
use ivpol_tests::fixtures::{Pusher, OCI_MANIFEST};
use ivpol_tests::policy::pod_policy;
use ivpol_tests::registry::Registry;
use ivpol_tests::review::create_pod;
use ivpol_tests::{Options, Server};

#[test]
fn a_private_ca_is_trusted_only_when_given() {
    let plain = Registry::start();
    let digest = Pusher {
        addr: &plain.addr,
        auth: None,
    }
    .image("app", "v1", OCI_MANIFEST, "amd64");
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()])
        .expect("cert");
    let dir = tempfile::tempdir().expect("dir");
    let (crt, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    std::fs::write(&crt, cert.cert.pem()).expect("write cert");
    std::fs::write(&key, cert.key_pair.serialize_pem()).expect("write key");
    let tls = Registry::start_tls_over(&plain, &crt, &key);
    let policy = pod_policy(
        "pin",
        "\"CREATE\"",
        "  attestors: []\n  validations:\n    - expression: \"true\"\n",
    );
    let image = format!("{}/app:v1", tls.addr);
    let start = |with_ca: bool| {
        let mut extra_args = vec!["--allow-registry".to_string(), tls.addr.clone()];
        if with_ca {
            extra_args.push("--registry-ca".into());
            extra_args.push(crt.display().to_string());
        }
        Server::start_with(
            &[("pin.yaml", &policy)],
            Options {
                extra_args,
                ..Options::default()
            },
        )
    };
    let r = start(false).review("/ivpol/mutate/pin", &create_pod(&[&image]));
    let msg = r["status"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains(&format!("request to {} failed", tls.addr)),
        "{msg}"
    );
    // Said as what it is, not as a refused connection.
    assert!(msg.contains("certificate is not trusted"), "{msg}");
    let r = start(true).review("/ivpol/mutate/pin", &create_pod(&[&image]));
    assert_eq!(r["allowed"], true, "{r}");
    let patch = base64::engine::general_purpose::STANDARD
        .decode(r["patch"].as_str().unwrap_or_default())
        .expect("base64 patch");
    assert!(
        String::from_utf8_lossy(&patch).contains(&format!("{image}@{digest}")),
        "{r}"
    );
}
