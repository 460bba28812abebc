//! A Fulcio-style CA: a self-signed root and an intermediate (ECDSA P-384,
//! ecdsa-with-SHA384, as Sigstore's), and short-lived leaf certificates with
//! an empty subject, a critical SAN, Fulcio's issuer extensions, critical
//! KeyUsage digitalSignature, EKU codeSigning, and an embedded SCT signed by
//! an own CT log ([`CtLog`]) over the RFC 6962 precertificate TBS.

use super::der::{self, explicit, implicit, int, octets, oid, seq, set, tlv, uint, utf8};
use super::keys::{KeyKind, KeyPair, SigHash};
use sha2::{Digest, Sha256};

pub const OID_FULCIO_ISSUER_V1: &str = "1.3.6.1.4.1.57264.1.1";
pub const OID_FULCIO_ISSUER_V2: &str = "1.3.6.1.4.1.57264.1.8";
pub const OID_FULCIO_OTHERNAME: &str = "1.3.6.1.4.1.57264.1.7";
pub const OID_SCT_LIST: &str = "1.3.6.1.4.1.11129.2.4.2";
pub const OID_CODE_SIGNING: &str = "1.3.6.1.5.5.7.3.3";

/// A validity window, Unix seconds, both ends inclusive (X.509 semantics).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub not_before: i64,
    pub not_after: i64,
}

impl Window {
    pub fn new(not_before: i64, not_after: i64) -> Window {
        Window {
            not_before,
            not_after,
        }
    }

    /// `[start, start + secs]`.
    pub fn starting(start: i64, secs: i64) -> Window {
        Window::new(start, start + secs)
    }

    /// A Fulcio leaf's 10 minutes, starting a minute before `t`.
    pub fn fulcio_at(t: i64) -> Window {
        Window::starting(t - 60, 600)
    }

    pub fn contains(&self, t: i64) -> bool {
        self.not_before <= t && t <= self.not_after
    }
}

/// The CA certificates' default window: 2021-01-01 to 2041-01-01.
pub const CA_WINDOW: Window = Window {
    not_before: 1_609_459_200,
    not_after: 2_240_611_200,
};

/// A certificate-transparency log that signs SCTs.
#[derive(Clone, Debug)]
pub struct CtLog {
    pub key: KeyPair,
    pub base_url: String,
}

impl Default for CtLog {
    fn default() -> Self {
        CtLog::new("ivpol-ctlog")
    }
}

impl CtLog {
    pub fn new(seed: &str) -> CtLog {
        CtLog {
            key: KeyPair::from_seed(KeyKind::P256, seed),
            base_url: "https://ctfe.ivpol.test".into(),
        }
    }

    /// SHA-256 of the log's SPKI.
    pub fn log_id(&self) -> [u8; 32] {
        self.key.key_id()
    }

    pub fn public_pem(&self) -> String {
        self.key.public_pem()
    }

    /// One serialized v1 SCT over a precertificate entry.
    pub fn sct(&self, issuer_spki: &[u8], precert_tbs: &[u8], timestamp_ms: u64) -> Vec<u8> {
        let mut signed = vec![0u8, 0u8];
        signed.extend(timestamp_ms.to_be_bytes());
        signed.extend([0u8, 1u8]); // precert_entry
        signed.extend(Sha256::digest(issuer_spki));
        let len = precert_tbs.len() as u32;
        signed.extend(&len.to_be_bytes()[1..]);
        signed.extend(precert_tbs);
        signed.extend([0u8, 0u8]); // no CT extensions
        let sig = self.key.sign(&signed);
        let mut sct = vec![0u8];
        sct.extend(self.log_id());
        sct.extend(timestamp_ms.to_be_bytes());
        sct.extend([0u8, 0u8]);
        sct.extend([4u8, 3u8]); // sha256, ecdsa
        sct.extend((sig.len() as u16).to_be_bytes());
        sct.extend(sig);
        sct
    }
}

/// The identity a leaf certificate's SAN names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Identity {
    /// rfc822Name (an OIDC email identity).
    Email(String),
    /// uniformResourceIdentifier (e.g. a GitHub workflow ref).
    Uri(String),
    /// Fulcio's OtherName 1.3.6.1.4.1.57264.1.7 (UTF8String username).
    OtherName(String),
}

impl Identity {
    pub fn value(&self) -> &str {
        match self {
            Identity::Email(s) | Identity::Uri(s) | Identity::OtherName(s) => s,
        }
    }

    fn general_name(&self) -> Vec<u8> {
        match self {
            Identity::Email(s) => implicit(1, s.as_bytes()),
            Identity::Uri(s) => implicit(6, s.as_bytes()),
            Identity::OtherName(s) => tlv(
                0xa0,
                &[oid(OID_FULCIO_OTHERNAME), explicit(0, &utf8(s))].concat(),
            ),
        }
    }
}

/// What a leaf certificate holds; [`LeafSpec::new`] gives Fulcio's shape.
#[derive(Clone, Debug)]
pub struct LeafSpec {
    pub identity: Identity,
    /// The OIDC issuer, written to 1.1 (raw) and 1.8 (UTF8String) unless turned off.
    pub issuer: Option<String>,
    pub issuer_v1: bool,
    pub issuer_v2: bool,
    pub window: Window,
    /// The leaf's key (default: P-256 derived from the identity).
    pub key: Option<KeyPair>,
    /// Embed an SCT from this log, at this time (ms; default `not_before`).
    pub sct: Option<(CtLog, Option<u64>)>,
    pub code_signing: bool,
    pub san_critical: bool,
    /// Extra extensions: (dotted OID, critical, extnValue content).
    pub extra: Vec<(String, bool, Vec<u8>)>,
}

impl LeafSpec {
    pub fn new(identity: Identity, issuer: &str, window: Window) -> LeafSpec {
        LeafSpec {
            identity,
            issuer: Some(issuer.to_string()),
            issuer_v1: true,
            issuer_v2: true,
            window,
            key: None,
            sct: None,
            code_signing: true,
            san_critical: true,
            extra: Vec::new(),
        }
    }

    pub fn key(mut self, key: KeyPair) -> LeafSpec {
        self.key = Some(key);
        self
    }

    /// Embeds an SCT from `log`, timestamped at the window's start.
    pub fn sct(mut self, log: &CtLog) -> LeafSpec {
        self.sct = Some((log.clone(), None));
        self
    }

    pub fn sct_at(mut self, log: &CtLog, timestamp_ms: u64) -> LeafSpec {
        self.sct = Some((log.clone(), Some(timestamp_ms)));
        self
    }

    /// A Fulcio extension that is a DER UTF8String (`1.3.6.1.4.1.57264.1.<n>`, n ≥ 8).
    pub fn fulcio_ext(mut self, n: u32, value: &str) -> LeafSpec {
        self.extra
            .push((format!("1.3.6.1.4.1.57264.1.{n}"), false, utf8(value)));
        self
    }

    /// A deprecated Fulcio v1 extension (`1.3.6.1.4.1.57264.1.<n>`, n in
    /// 2..=6: GitHub workflow trigger, SHA, name, repository, ref): the raw
    /// claim bytes, not DER-wrapped, as Fulcio writes them.
    pub fn fulcio_v1_ext(mut self, n: u32, value: &str) -> LeafSpec {
        assert!(
            (2..=6).contains(&n),
            "1.3.6.1.4.1.57264.1.{n} is no v1 workflow OID"
        );
        self.extra.push((
            format!("1.3.6.1.4.1.57264.1.{n}"),
            false,
            value.as_bytes().to_vec(),
        ));
        self
    }

    /// The five GitHub workflow extensions of a certificate issued to a
    /// workflow run in `repository` (trigger `push`, ref `refs/heads/main`).
    pub fn github_workflow(self, repository: &str, sha: &str) -> LeafSpec {
        self.fulcio_v1_ext(2, "push")
            .fulcio_v1_ext(3, sha)
            .fulcio_v1_ext(4, "release")
            .fulcio_v1_ext(5, repository)
            .fulcio_v1_ext(6, "refs/heads/main")
    }

    pub fn extension(mut self, dotted: &str, critical: bool, value: Vec<u8>) -> LeafSpec {
        self.extra.push((dotted.to_string(), critical, value));
        self
    }
}

/// An issued leaf: the certificate, its key and the chain above it.
#[derive(Clone, Debug)]
pub struct Leaf {
    pub der: Vec<u8>,
    pub key: KeyPair,
    pub window: Window,
    /// DER of the intermediate, then the root.
    pub chain: Vec<Vec<u8>>,
}

impl Leaf {
    pub fn pem(&self) -> String {
        der::pem("CERTIFICATE", &self.der)
    }

    /// What `dev.sigstore.cosign/chain` holds: intermediate then root, PEM.
    pub fn chain_pem(&self) -> String {
        self.chain
            .iter()
            .map(|c| der::pem("CERTIFICATE", c))
            .collect()
    }
}

/// A CA certificate and its key.
#[derive(Clone, Debug)]
pub struct CaCert {
    pub key: KeyPair,
    pub der: Vec<u8>,
    pub name: Vec<u8>,
}

impl CaCert {
    pub fn pem(&self) -> String {
        der::pem("CERTIFICATE", &self.der)
    }
}

/// The CA: root and intermediate, both with their own keys.
#[derive(Clone, Debug)]
pub struct Fulcio {
    pub root: CaCert,
    pub intermediate: CaCert,
    pub window: Window,
    pub uri: String,
}

impl Default for Fulcio {
    fn default() -> Self {
        Fulcio::new()
    }
}

fn name(org: &str, cn: &str) -> Vec<u8> {
    seq(&[
        set(&[seq(&[oid("2.5.4.10"), utf8(org)])]),
        set(&[seq(&[oid("2.5.4.3"), utf8(cn)])]),
    ])
}

/// An X.509 name `C=…, ST=…, O=…, CN=…` (the attributes a Notary trust
/// policy's `trustedIdentities` match on).
pub(crate) fn full_name(c: &str, st: &str, o: &str, cn: &str) -> Vec<u8> {
    seq(&[
        set(&[seq(&[oid("2.5.4.6"), der::printable(c)])]),
        set(&[seq(&[oid("2.5.4.8"), utf8(st)])]),
        set(&[seq(&[oid("2.5.4.10"), utf8(o)])]),
        set(&[seq(&[oid("2.5.4.3"), utf8(cn)])]),
    ])
}

/// An end-entity certificate for `key` named `subject`, issued by `issuer`:
/// `exts` first, then the subject and authority key identifiers.
pub(crate) fn end_entity(
    issuer: &CaCert,
    subject: &[u8],
    key: &KeyPair,
    window: Window,
    mut exts: Vec<Vec<u8>>,
) -> Vec<u8> {
    let spki = key.spki_der();
    exts.push(ext("2.5.29.14", false, &octets(&key_identifier(&spki))));
    exts.push(ext(
        "2.5.29.35",
        false,
        &seq(&[implicit(0, &key_identifier(&issuer.key.spki_der()))]),
    ));
    let serial = serial_of(&[
        subject,
        &spki,
        &window.not_before.to_be_bytes(),
        &window.not_after.to_be_bytes(),
        &issuer.der,
    ]);
    let (alg, _) = sig_alg(&issuer.key);
    sign_cert(
        tbs(&serial, &alg, &issuer.name, window, subject, &spki, &exts),
        &issuer.key,
    )
}

pub(crate) fn ext(dotted: &str, critical: bool, value: &[u8]) -> Vec<u8> {
    let mut parts = vec![oid(dotted)];
    if critical {
        parts.push(der::boolean(true));
    }
    parts.push(octets(value));
    seq(&parts)
}

pub(crate) fn sig_alg(key: &KeyPair) -> (Vec<u8>, SigHash) {
    match key.kind {
        KeyKind::P256 => (seq(&[oid("1.2.840.10045.4.3.2")]), SigHash::Sha256),
        KeyKind::P384 => (seq(&[oid("1.2.840.10045.4.3.3")]), SigHash::Sha384),
        KeyKind::Rsa2048 => (
            seq(&[oid("1.2.840.113549.1.1.11"), der::null()]),
            SigHash::Sha256,
        ),
        KeyKind::Ed25519 => (seq(&[oid("1.3.101.112")]), SigHash::Sha512),
        other => panic!("a CA key of kind {other:?} is not supported"),
    }
}

pub(crate) fn key_identifier(spki: &[u8]) -> Vec<u8> {
    Sha256::digest(spki)[..20].to_vec()
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn tbs(
    serial: &[u8],
    alg: &[u8],
    issuer: &[u8],
    window: Window,
    subject: &[u8],
    spki: &[u8],
    exts: &[Vec<u8>],
) -> Vec<u8> {
    seq(&[
        explicit(0, &int(2)),
        uint(serial),
        alg.to_vec(),
        issuer.to_vec(),
        seq(&[der::time(window.not_before), der::time(window.not_after)]),
        subject.to_vec(),
        spki.to_vec(),
        explicit(3, &seq(exts)),
    ])
}

pub(crate) fn sign_cert(tbs: Vec<u8>, issuer_key: &KeyPair) -> Vec<u8> {
    let (alg, hash) = sig_alg(issuer_key);
    let sig = issuer_key.sign_with(&tbs, hash);
    seq(&[tbs, alg, der::bits(&sig)])
}

pub(crate) fn serial_of(parts: &[&[u8]]) -> Vec<u8> {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_be_bytes());
        h.update(p);
    }
    let mut s = h.finalize()[..16].to_vec();
    s[0] &= 0x7f;
    s[0] |= 0x01;
    s
}

pub(crate) fn ca_cert(
    key: &KeyPair,
    subject: Vec<u8>,
    issuer: Option<&CaCert>,
    window: Window,
    path_len: Option<u64>,
) -> CaCert {
    let spki = key.spki_der();
    let signer = issuer.map(|i| &i.key).unwrap_or(key);
    let issuer_name = issuer.map(|i| i.name.clone()).unwrap_or(subject.clone());
    let (alg, _) = sig_alg(signer);
    let mut bc = vec![der::boolean(true)];
    if let Some(n) = path_len {
        bc.push(int(n));
    }
    let mut exts = vec![
        // keyCertSign | cRLSign
        ext("2.5.29.15", true, &[0x03, 0x02, 0x01, 0x06]),
        ext("2.5.29.19", true, &seq(&bc)),
        ext("2.5.29.14", false, &octets(&key_identifier(&spki))),
    ];
    if let Some(i) = issuer {
        exts.insert(1, ext("2.5.29.37", false, &seq(&[oid(OID_CODE_SIGNING)])));
        exts.push(ext(
            "2.5.29.35",
            false,
            &seq(&[implicit(0, &key_identifier(&i.key.spki_der()))]),
        ));
    }
    let serial = serial_of(&[&subject, &spki]);
    let der = sign_cert(
        tbs(&serial, &alg, &issuer_name, window, &subject, &spki, &exts),
        signer,
    );
    CaCert {
        key: key.clone(),
        der,
        name: subject,
    }
}

impl Fulcio {
    /// The default CA (seed `ivpol-fulcio`, window [`CA_WINDOW`]).
    pub fn new() -> Fulcio {
        Fulcio::with_seed("ivpol-fulcio", CA_WINDOW)
    }

    /// Another, unrelated CA (for "untrusted root" negatives), or one with
    /// its own validity window.
    pub fn with_seed(seed: &str, window: Window) -> Fulcio {
        let root_key = KeyPair::from_seed(KeyKind::P384, &format!("{seed}-root"));
        let inter_key = KeyPair::from_seed(KeyKind::P384, &format!("{seed}-intermediate"));
        let root = ca_cert(
            &root_key,
            name("ivpol.test", &format!("{seed}-root")),
            None,
            window,
            Some(1),
        );
        let intermediate = ca_cert(
            &inter_key,
            name("ivpol.test", &format!("{seed}-intermediate")),
            Some(&root),
            window,
            Some(0),
        );
        Fulcio {
            root,
            intermediate,
            window,
            uri: "https://fulcio.ivpol.test".into(),
        }
    }

    pub fn root_pem(&self) -> String {
        self.root.pem()
    }

    pub fn intermediate_pem(&self) -> String {
        self.intermediate.pem()
    }

    /// Intermediate then root, PEM (a `dev.sigstore.cosign/chain` value).
    pub fn chain_pem(&self) -> String {
        self.intermediate.pem() + &self.root.pem()
    }

    /// A Fulcio-shaped leaf for `identity` from `issuer`, valid in `window`,
    /// with an SCT from the default [`CtLog`].
    pub fn leaf(&self, identity: Identity, issuer: &str, window: Window) -> Leaf {
        self.issue(LeafSpec::new(identity, issuer, window).sct(&CtLog::default()))
    }

    /// A leaf exactly as `spec` says.
    pub fn issue(&self, spec: LeafSpec) -> Leaf {
        let key = spec.key.clone().unwrap_or_else(|| {
            KeyPair::from_seed(
                KeyKind::P256,
                &format!("leaf {} {}", spec.identity.value(), spec.window.not_before),
            )
        });
        let spki = key.spki_der();
        let inter = &self.intermediate;
        let inter_spki = inter.key.spki_der();
        let (alg, _) = sig_alg(&inter.key);
        let mut exts = vec![ext("2.5.29.15", true, &[0x03, 0x02, 0x07, 0x80])];
        if spec.code_signing {
            exts.push(ext("2.5.29.37", false, &seq(&[oid(OID_CODE_SIGNING)])));
        }
        exts.push(ext("2.5.29.14", false, &octets(&key_identifier(&spki))));
        exts.push(ext(
            "2.5.29.35",
            false,
            &seq(&[implicit(0, &key_identifier(&inter_spki))]),
        ));
        exts.push(ext(
            "2.5.29.17",
            spec.san_critical,
            &seq(&[spec.identity.general_name()]),
        ));
        if let Some(issuer) = &spec.issuer {
            if spec.issuer_v1 {
                exts.push(ext(OID_FULCIO_ISSUER_V1, false, issuer.as_bytes()));
            }
            if spec.issuer_v2 {
                exts.push(ext(OID_FULCIO_ISSUER_V2, false, &utf8(issuer)));
            }
        }
        for (dotted, critical, value) in &spec.extra {
            exts.push(ext(dotted, *critical, value));
        }
        let serial = serial_of(&[
            spec.identity.value().as_bytes(),
            &spki,
            &spec.window.not_before.to_be_bytes(),
            &spec.window.not_after.to_be_bytes(),
            &inter.der,
        ]);
        let subject = seq(&[]);
        if let Some((log, ts)) = &spec.sct {
            let precert = tbs(
                &serial,
                &alg,
                &inter.name,
                spec.window,
                &subject,
                &spki,
                &exts,
            );
            let ts = ts.unwrap_or(spec.window.not_before as u64 * 1000);
            let sct = log.sct(&inter_spki, &precert, ts);
            let mut list = (sct.len() as u16).to_be_bytes().to_vec();
            list.extend(sct);
            let mut tls = (list.len() as u16).to_be_bytes().to_vec();
            tls.extend(list);
            exts.push(ext(OID_SCT_LIST, false, &octets(&tls)));
        }
        let der = sign_cert(
            tbs(
                &serial,
                &alg,
                &inter.name,
                spec.window,
                &subject,
                &spki,
                &exts,
            ),
            &inter.key,
        );
        Leaf {
            der,
            key,
            window: spec.window,
            chain: vec![inter.der.clone(), self.root.der.clone()],
        }
    }
}
