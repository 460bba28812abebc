//! Revocation of Notary chains end to end, as notation checks it under
//! Kyverno's `strict` trust policy: certificates signed by the fixture
//! generator's CA name CRLs (served by a double on a loopback port, built
//! byte by byte) or a real `openssl ocsp` responder, and `ivpol serve`
//! decides. A revoked certificate denies, an unknown status denies naming
//! the endpoint, a certificate naming no endpoint passes.

use ivpol_tests::cli::{pod_yaml, Workdir};
use ivpol_tests::http_double::{self, Response};
use ivpol_tests::policy::{notary_attestor, notary_signatures_policy, NOTARY_NOT_SIGNED};
use ivpol_tests::sign::notary::{Format, NotaryCa, NotaryLeaf, NotaryOpts, NotarySigner};
use ivpol_tests::sign::revocation::{
    Crl, CrlEntry, Endpoints, OcspResponder, OcspStatus, Responder, REASON_HOLD,
    REASON_KEY_COMPROMISE, REASON_REMOVE_FROM_CRL,
};
use ivpol_tests::sign::tsa::Tsa;
use ivpol_tests::sign::{now, KeyKind, KeyPair, Window};
use ivpol_tests::verifying::{assert_admitted, validate, Setup};
use ivpol_tests::Server;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const HOUR: i64 = 3600;

/// CRLs served by path. They are set after the double starts, since the
/// certificates that name them must name its port first.
struct CrlServer {
    base: String,
    addr: String,
    crls: Arc<Mutex<HashMap<String, Vec<u8>>>>,
    hits: Arc<AtomicUsize>,
}

impl CrlServer {
    fn start() -> CrlServer {
        let crls: Arc<Mutex<HashMap<String, Vec<u8>>>> = Arc::default();
        let hits = Arc::new(AtomicUsize::new(0));
        let (served, counted) = (crls.clone(), hits.clone());
        let addr = http_double::serve(move |r| {
            counted.fetch_add(1, Ordering::SeqCst);
            match served.lock().unwrap().get(r.path()) {
                Some(der) => Response {
                    status: 200,
                    content_type: "application/pkix-crl".into(),
                    headers: vec![],
                    body: der.clone(),
                },
                None => Response::json(404, "{}"),
            }
        });
        CrlServer {
            base: format!("http://{addr}"),
            addr: addr.to_string(),
            crls,
            hits,
        }
    }

    fn url(&self, name: &str) -> String {
        format!("{}/{name}.crl", self.base)
    }

    fn put(&self, name: &str, der: Vec<u8>) {
        self.crls
            .lock()
            .unwrap()
            .insert(format!("/{name}.crl"), der);
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// A leaf of `ca` called `cn`, valid for an hour either side of now,
/// naming `endpoints`.
fn leaf(ca: &NotaryCa, cn: &str, endpoints: Endpoints) -> NotarySigner {
    let t = now();
    NotarySigner::new(
        ca.leaf(
            NotaryLeaf::new(KeyKind::P256, Window::new(t - HOUR, t + HOUR))
                .cn(cn)
                .endpoints(endpoints),
        ),
    )
}

/// notation's name for the leaf `cn` of the generator's CA.
fn subject(cn: &str) -> String {
    format!("CN={cn},O=ivpol.test,ST=WA,C=US")
}

/// Signs a fresh image `repo` with `signer` (and `opts`); its reference.
fn signed(setup: &Setup, repo: &str, signer: &NotarySigner, opts: &NotaryOpts) -> String {
    let (image, digest) = setup.image(repo);
    signer.sign(&setup.pusher(), repo, &digest, opts);
    image
}

/// `policy` denies `image` with Kyverno's message, and the verification's
/// summary (the audit annotation) says `why`.
fn assert_denied_because(s: &Server, policy: &str, image: &str, why: &str) {
    let r = validate(s, policy, image);
    assert_eq!(r["allowed"], false, "{image}: {r}");
    assert_eq!(
        r["status"]["message"],
        format!("Policy {policy} failed: {NOTARY_NOT_SIGNED}")
    );
    let summary = r["auditAnnotations"][format!("verification.{policy}")]
        .as_str()
        .unwrap_or_default();
    assert!(summary.contains("revocation"), "{image}: {summary}");
    assert!(
        summary.contains(why),
        "{image}: wanted {why:?} in {summary}"
    );
}

fn serve(setup: &Setup, ca: &NotaryCa, tsa: Option<&Tsa>, revocation: &[&str]) -> Server {
    let root = ca.root_pem();
    let tsa_root = tsa.map(Tsa::root_pem);
    let attestor = notary_attestor("notary", &root, tsa_root.as_deref());
    let mut flags = Vec::new();
    for endpoint in revocation {
        flags.extend(["--allow-revocation", endpoint]);
    }
    setup.serve_with(&[notary_signatures_policy("notary", &attestor)], &flags)
}

#[test]
fn crls_revoke_signing_certificates_and_anything_unsure_denies() {
    let setup = Setup::new();
    let crls = CrlServer::start();
    let ca = NotaryCa::new("ivpol-revocation");
    let t = now();
    let opts = NotaryOpts::new(Format::Jws);
    let sign = |case: &str| {
        let signer = leaf(&ca, case, Endpoints::crl(&crls.url(case)));
        (
            signed(&setup, case, &signer, &opts),
            signer.leaf.der.clone(),
        )
    };
    let issuer = &ca.intermediate;
    let other_key = KeyPair::from_seed(KeyKind::P384, "not the intermediate's key");
    let (empty, _) = sign("empty");
    crls.put("empty", Crl::new(t - 60).der(issuer));
    let (revoked, cert) = sign("revoked");
    let entry = CrlEntry::of(&cert, t - 30).reason(REASON_KEY_COMPROMISE);
    crls.put("revoked", Crl::new(t - 60).revoke(entry).der(issuer));
    let (held, cert) = sign("held");
    let hold = CrlEntry::of(&cert, t - 30).reason(REASON_HOLD);
    crls.put("held", Crl::new(t - 60).revoke(hold).der(issuer));
    let (released, cert) = sign("released");
    let hold = CrlEntry::of(&cert, t - 50).reason(REASON_HOLD);
    let release = CrlEntry::of(&cert, t - 40).reason(REASON_REMOVE_FROM_CRL);
    let crl = Crl::new(t - 60).revoke(hold).revoke(release);
    crls.put("released", crl.der(issuer));
    let (stale, _) = sign("stale");
    crls.put("stale", Crl::new(t - 2 * HOUR).der(issuer));
    let (forged, _) = sign("forged");
    crls.put("forged", Crl::new(t - 60).signed_by(other_key).der(issuer));
    let (undated, _) = sign("undated");
    crls.put("undated", Crl::new(t - 60).next_update(None).der(issuer));
    let (critical, _) = sign("critical");
    crls.put("critical", Crl::new(t - 60).unknown_critical().der(issuer));
    let (missing, _) = sign("missing");
    let not_revocable = signed(
        &setup,
        "plain",
        &leaf(&ca, "plain", Endpoints::default()),
        &opts,
    );

    let s = serve(&setup, &ca, None, &[&crls.addr]);
    assert_admitted(&s, "notary", &empty);
    assert_admitted(&s, "notary", &released);
    assert_admitted(&s, "notary", &not_revocable);
    let revoked_msg = |cn: &str| {
        format!(
            "signing certificate with subject {:?} is revoked",
            subject(cn)
        )
    };
    assert_denied_because(&s, "notary", &revoked, &revoked_msg("revoked"));
    assert_denied_because(&s, "notary", &held, &revoked_msg("held"));
    let unknown = |cn: &str| {
        format!(
            "signing certificate with subject {:?} revocation status is unknown: CRL {}: ",
            subject(cn),
            crls.url(cn)
        )
    };
    for (image, cn, why) in [
        (&stale, "stale", "expired CRL. Current time"),
        (&forged, "forged", "CRL is not signed by CA"),
        (&undated, "undated", "CRL NextUpdate is not set"),
        (
            &critical,
            "critical",
            "unsupported critical extension found in CRL: 1.3.6.1.4.1.32473.9.9",
        ),
        (
            &missing,
            "missing",
            "the endpoint answered with status code 404",
        ),
    ] {
        assert_denied_because(&s, "notary", image, &format!("{}{why}", unknown(cn)));
    }
}

#[test]
fn a_real_ocsp_responder_decides_and_crls_back_it_up() {
    let setup = Setup::new();
    let crls = CrlServer::start();
    let ca = NotaryCa::new("ivpol-ocsp");
    let t = now();
    let opts = NotaryOpts::new(Format::Cose);
    // The responder's URL must be in the certificates before it starts, so
    // it listens on a port picked now; a second port stays closed.
    let port = ivpol_tests::registry::free_port();
    let ocsp_url = format!("http://127.0.0.1:{port}");
    let closed = format!("http://127.0.0.1:{}", ivpol_tests::registry::free_port());
    let unauthorized_port = ivpol_tests::registry::free_port();
    let unauthorized_url = format!("http://127.0.0.1:{unauthorized_port}");
    let good = leaf(&ca, "good", Endpoints::ocsp(&ocsp_url));
    let revoked = leaf(&ca, "revoked", Endpoints::ocsp(&ocsp_url));
    let stranger = leaf(&ca, "stranger", Endpoints::ocsp(&ocsp_url));
    let stranger_with_crl = leaf(
        &ca,
        "stranger-crl",
        Endpoints::ocsp(&ocsp_url).and_crl(&crls.url("fallback")),
    );
    let down = leaf(&ca, "down", Endpoints::ocsp(&closed));
    let second_server = leaf(
        &ca,
        "second-server",
        Endpoints {
            ocsp: vec![closed.clone(), ocsp_url.clone()],
            ..Endpoints::default()
        },
    );
    let unauthorized = leaf(&ca, "unauthorized", Endpoints::ocsp(&unauthorized_url));
    let stranger_port = ivpol_tests::registry::free_port();
    let stranger_url = format!("http://127.0.0.1:{stranger_port}");
    let foreign = leaf(&ca, "foreign", Endpoints::ocsp(&stranger_url));
    crls.put("fallback", Crl::new(t - 60).der(&ca.intermediate));
    let statuses = vec![
        (good.leaf.der.clone(), OcspStatus::Good),
        (second_server.leaf.der.clone(), OcspStatus::Good),
        (revoked.leaf.der.clone(), OcspStatus::Revoked(t - 60)),
    ];
    let _responder = OcspResponder::start_on(
        port,
        &ca.intermediate,
        &Responder::new(&ca.intermediate, "ivpol-ocsp", true),
        &statuses,
    );
    let unauthorized_statuses = vec![(unauthorized.leaf.der.clone(), OcspStatus::Good)];
    let _not_authorized = OcspResponder::start_on(
        unauthorized_port,
        &ca.intermediate,
        &Responder::new(&ca.intermediate, "ivpol-ocsp-other", false),
        &unauthorized_statuses,
    );
    // A responder another CA delegated to, answering for this CA's leaf.
    let other_ca = NotaryCa::new("ivpol-ocsp-stranger");
    let _foreign = OcspResponder::start_on(
        stranger_port,
        &ca.intermediate,
        &Responder::new(&other_ca.intermediate, "ivpol-ocsp-stranger", true),
        &[(foreign.leaf.der.clone(), OcspStatus::Good)],
    );
    let images: Vec<String> = [
        ("good", &good),
        ("revoked", &revoked),
        ("stranger", &stranger),
        ("stranger-crl", &stranger_with_crl),
        ("down", &down),
        ("second-server", &second_server),
        ("unauthorized", &unauthorized),
        ("foreign", &foreign),
    ]
    .iter()
    .map(|(repo, signer)| signed(&setup, repo, signer, &opts))
    .collect();
    let ocsp_port = port.to_string();
    let allowed = [
        format!("127.0.0.1:{ocsp_port}"),
        closed.trim_start_matches("http://").to_string(),
        format!("127.0.0.1:{unauthorized_port}"),
        format!("127.0.0.1:{stranger_port}"),
        crls.addr.clone(),
    ];
    let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
    let s = serve(&setup, &ca, None, &allowed);
    assert_admitted(&s, "notary", &images[0]);
    assert_denied_because(
        &s,
        "notary",
        &images[1],
        &format!(
            "signing certificate with subject {:?} is revoked",
            subject("revoked")
        ),
    );
    assert_denied_because(
        &s,
        "notary",
        &images[2],
        &format!("OCSP {ocsp_url}: the responder does not know the certificate"),
    );
    // Unknown to the responder, and the CRL it also names does not list it.
    assert_admitted(&s, "notary", &images[3]);
    assert_denied_because(&s, "notary", &images[4], &format!("OCSP {closed}: "));
    // The first server is down; the second one answers.
    assert_admitted(&s, "notary", &images[5]);
    assert_denied_because(
        &s,
        "notary",
        &images[6],
        "is not authorized for OCSP signing",
    );
    assert_denied_because(
        &s,
        "notary",
        &images[7],
        "bad signature on the responder certificate",
    );
}

#[test]
fn the_timestamping_chain_is_checked_too() {
    let setup = Setup::new();
    let crls = CrlServer::start();
    let ca = NotaryCa::new("ivpol-revocation-tsa");
    let t = now();
    let good_tsa = Tsa::with_endpoints("ivpol-tsa-good", &Endpoints::crl(&crls.url("tsa-good")));
    let revoked_tsa = Tsa::with_endpoints(
        "ivpol-tsa-revoked",
        &Endpoints::crl(&crls.url("tsa-revoked")),
    );
    crls.put("tsa-good", Crl::new(t - 60).der(&good_tsa.root));
    let entry = CrlEntry::of(&revoked_tsa.cert, t - 30);
    crls.put(
        "tsa-revoked",
        Crl::new(t - 60).revoke(entry).der(&revoked_tsa.root),
    );
    let signer = leaf(&ca, "stamped", Endpoints::default());
    let image = |tsa: &Tsa, repo: &str| {
        signed(
            &setup,
            repo,
            &signer,
            &NotaryOpts::new(Format::Jws).timestamp(tsa),
        )
    };
    let good = image(&good_tsa, "good-tsa");
    let revoked = image(&revoked_tsa, "revoked-tsa");
    for (tsa, image, admitted) in [(&good_tsa, &good, true), (&revoked_tsa, &revoked, false)] {
        let s = serve(&setup, &ca, Some(tsa), &[&crls.addr]);
        if admitted {
            assert_admitted(&s, "notary", image);
        } else {
            assert_denied_because(
                &s,
                "notary",
                image,
                "timestamping certificate with subject \"CN=ivpol-tsa-revoked TSA,O=ivpol.test,ST=WA,C=US\" is revoked",
            );
        }
    }
}

/// Endpoints are reached only within `--allow-revocation` (here, with
/// `--allow-registry` restricting the network); answers are cached by
/// issuer and URL, so a second image signed by the same leaf does not
/// fetch the CRL again.
#[test]
fn revocation_endpoints_are_allow_listed_and_their_answers_cached() {
    let setup = Setup::new();
    let crls = CrlServer::start();
    let ca = NotaryCa::new("ivpol-revocation-allow");
    let signer = leaf(&ca, "listed", Endpoints::crl(&crls.url("ca")));
    crls.put("ca", Crl::new(now() - 60).der(&ca.intermediate));
    let opts = NotaryOpts::new(Format::Jws);
    let first = signed(&setup, "first", &signer, &opts);
    let second = signed(&setup, "second", &signer, &opts);
    let attestor = notary_attestor("notary", &ca.root_pem(), None);
    let policy = [notary_signatures_policy("notary", &attestor)];
    let registry_only = setup.serve_with(&policy, &["--allow-registry", &setup.reg.addr]);
    assert_denied_because(
        &registry_only,
        "notary",
        &first,
        &format!(
            "CRL {}: request to {} denied by the host's network policy",
            crls.url("ca"),
            crls.addr
        ),
    );
    assert_eq!(crls.hits(), 0, "nothing outside the allow-list is asked");
    let listed = setup.serve_with(
        &policy,
        &[
            "--allow-registry",
            &setup.reg.addr,
            "--allow-revocation",
            &crls.addr,
        ],
    );
    assert_admitted(&listed, "notary", &first);
    assert_eq!(crls.hits(), 1);
    assert_admitted(&listed, "notary", &second);
    assert_eq!(crls.hits(), 1, "the CRL is cached for its issuer and URL");
}

/// `ivpol apply` checks revocation as `serve` does: a revoked leaf fails
/// with Kyverno's message, and `--explain` names why.
#[test]
fn apply_checks_revocation_too() {
    let setup = Setup::new();
    let crls = CrlServer::start();
    let ca = NotaryCa::new("ivpol-revocation-apply");
    let signer = leaf(&ca, "applied", Endpoints::crl(&crls.url("ca")));
    let image = signed(&setup, "applied", &signer, &NotaryOpts::new(Format::Cose));
    let w = Workdir::new();
    let (_, policy) =
        notary_signatures_policy("notary", &notary_attestor("notary", &ca.root_pem(), None));
    w.write("policy.yaml", &policy);
    w.write("pod.yaml", &pod_yaml("app", "default", &image));
    let apply = || {
        w.ivpol(&[
            "apply",
            "policy.yaml",
            "--resource",
            "pod.yaml",
            "--insecure-registry",
            &setup.reg.addr,
            "--allow-revocation",
            &crls.addr,
            "--explain",
        ])
    };
    crls.put("ca", Crl::new(now() - 60).der(&ca.intermediate));
    let run = apply();
    assert_eq!(run.code, 0, "{run}");
    let entry = CrlEntry::of(&signer.leaf.der, now() - 30);
    crls.put(
        "ca",
        Crl::new(now() - 60).revoke(entry).der(&ca.intermediate),
    );
    let run = apply();
    assert_eq!(run.code, 1, "{run}");
    assert!(run.stdout.contains(NOTARY_NOT_SIGNED), "{run}");
    let revoked = format!(
        "signing certificate with subject {:?} is revoked",
        subject("applied")
    );
    assert!(run.to_string().contains(&revoked), "{run}");
}
