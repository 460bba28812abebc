//! The serving certificate: cert-manager's, which no apply blanks, or the
//! self-signed overlay's, which its CA vouches for under the Service's name.

use super::{
    container, deployment, manifests, named, one, service, strings, text, unwrapped_data, value_of,
    webhooks_for,
};
use ivpol_tests::kustomize::{self, deploy_dir};
use ivpol_tests::Server;
use serde_json::Value;

/// No apply set holds the serving certificate's Secret, except the
/// self-signed one, which makes it from the files its operator holds:
/// re-applying must never blank a Secret that cert-manager wrote. Under
/// cert-manager, the Certificate writes the Secret the pods mount, names
/// ivpol's Service, and is issued by the install's own CA; ivpol leaves the
/// caBundle to the injector, naming that Certificate.
#[test]
fn the_serving_certificate_comes_from_cert_manager_and_no_apply_blanks_it() {
    let base = kustomize::render(&deploy_dir().join("base"));
    let all = manifests();
    for objects in [&base, &all.iter().map(|(_, v)| v.clone()).collect()] {
        let secrets: Vec<&Value> = objects.iter().filter(|v| v["kind"] == "Secret").collect();
        assert!(secrets.is_empty(), "a Secret in the apply set: {secrets:?}");
    }
    let d = deployment(&all);
    let tls = mounted_secret(d);
    let cert = named(&all, "Certificate", "ivpol-tls");
    assert_eq!(cert["spec"]["secretName"], tls.as_str());
    let s = service(&all);
    let host = format!(
        "{}.{}.svc",
        text(&s["metadata"]["name"]),
        text(&s["metadata"]["namespace"])
    );
    assert!(strings(&cert["spec"]["dnsNames"]).contains(&host), "{cert}");
    let issuer = named(&all, "Issuer", text(&cert["spec"]["issuerRef"]["name"]));
    let ca = named(&all, "Certificate", "ivpol-ca");
    assert_eq!(ca["spec"]["isCA"], true);
    assert_eq!(issuer["spec"]["ca"]["secretName"], ca["spec"]["secretName"]);
    named(&all, "Issuer", text(&ca["spec"]["issuerRef"]["name"]));
    assert!(
        cert["spec"]["renewBefore"].is_string(),
        "renewed before it expires"
    );
    let args = strings(&container(d)["args"]);
    assert_eq!(
        value_of(&args, "--inject-ca-from"),
        format!(
            "{}/{}",
            text(&cert["metadata"]["namespace"]),
            text(&cert["metadata"]["name"])
        )
    );
    assert!(!args.iter().any(|a| a == "--ca-bundle"), "{args:?}");
}

/// The self-signed overlay: make-certs.sh makes a CA and a certificate for
/// ivpol's Service, the overlay turns them into the Secret the pods mount,
/// ivpol serves that pair, and a client trusting only that CA reaches it
/// under the Service's name, as the API server will; `ivpol webhooks`
/// takes the CA as the caBundle.
#[test]
fn the_self_signed_overlay_serves_a_certificate_its_ca_vouches_for() {
    use base64::Engine as _;
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let (objects, copy) = kustomize::self_signed();
    let all: Vec<(String, Value)> = objects.into_iter().map(|v| (String::new(), v)).collect();
    let secret = &unwrapped_data(one(&all, "Secret"));
    assert_eq!(
        secret["metadata"]["name"],
        mounted_secret(deployment(&all)).as_str()
    );
    assert_eq!(secret["type"], "kubernetes.io/tls");
    let file = |key: &str| {
        let b64 = text(&secret["data"][key]);
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(b64)
                .expect("base64"),
        )
        .expect("PEM")
    };
    let (cert, key, ca) = (file("tls.crt"), file("tls.key"), file("ca.crt"));
    let s = Server::start_with(
        &[],
        ivpol_tests::Options {
            tls: Some((&cert, &key)),
            ..Default::default()
        },
    );
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca.as_bytes()).expect("CA"))
        .expect("root");
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("ivpol.ivpol.svc").expect("name");
    let mut conn =
        rustls::ClientConnection::new(std::sync::Arc::new(config), name).expect("client");
    let mut tcp =
        std::net::TcpStream::connect(s.base.trim_start_matches("https://")).expect("connect");
    while conn.is_handshaking() {
        conn.complete_io(&mut tcp)
            .expect("the CA vouches for the served certificate");
    }
    let ca_file = copy.path().join("deploy/overlays/self-signed/ca.crt");
    let out = webhooks_for(service(&all), &deploy_dir().join("../policies"), &ca_file);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let readme = std::fs::read_to_string(deploy_dir().join("README.md")).expect("README");
    assert!(
        readme.contains("make-certs.sh"),
        "deploy/README.md does not say how to make them"
    );
}

/// The Secret volume the Deployment mounts at /tls.
fn mounted_secret(d: &Value) -> String {
    let volumes = d["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .expect("volumes");
    let name = (container(d)["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten())
    .find(|m| m["mountPath"] == "/tls")
    .map(|m| m["name"].clone())
    .expect("/tls mounted");
    (volumes.iter())
        .find(|v| v["name"] == name)
        .and_then(|v| v["secret"]["secretName"].as_str())
        .expect("a Secret volume")
        .to_string()
}
