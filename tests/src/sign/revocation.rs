//! Revocation material for certificate chains: the extensions that name a
//! certificate's OCSP servers and CRL distribution points, CRLs built byte
//! by byte (so that any date, key or entry can be had), and a real
//! `openssl ocsp` responder on a loopback port.

use super::ca::{self, CaCert};
use super::der::{self, explicit, int, oid, seq, tlv};
use super::keys::{KeyKind, KeyPair};
use super::tsa::generalized_time;
use std::io::BufRead;
use std::process::{Child, Command, Stdio};

const OID_AIA: &str = "1.3.6.1.5.5.7.1.1";
const OID_AD_OCSP: &str = "1.3.6.1.5.5.7.48.1";
const OID_CRL_DP: &str = "2.5.29.31";
const OID_FRESHEST_CRL: &str = "2.5.29.46";
const OID_OCSP_SIGNING: &str = "1.3.6.1.5.5.7.3.9";
/// CRLReason certificateHold and removeFromCRL (RFC 5280 §5.3.1).
pub const REASON_HOLD: u8 = 6;
pub const REASON_REMOVE_FROM_CRL: u8 = 8;
pub const REASON_KEY_COMPROMISE: u8 = 1;

/// Where a certificate says its revocation status is.
#[derive(Clone, Debug, Default)]
pub struct Endpoints {
    pub ocsp: Vec<String>,
    pub crl: Vec<String>,
    /// Name a freshest (delta) CRL too.
    pub delta_crl: bool,
}

impl Endpoints {
    pub fn crl(url: &str) -> Endpoints {
        Endpoints {
            crl: vec![url.to_string()],
            ..Endpoints::default()
        }
    }

    pub fn ocsp(url: &str) -> Endpoints {
        Endpoints {
            ocsp: vec![url.to_string()],
            ..Endpoints::default()
        }
    }

    /// OCSP first, with this CRL to fall back on.
    pub fn and_crl(mut self, url: &str) -> Endpoints {
        self.crl.push(url.to_string());
        self
    }

    /// The AIA and CRL distribution point extensions naming these.
    pub fn extensions(&self) -> Vec<Vec<u8>> {
        let uri = |u: &String| tlv(0x86, u.as_bytes());
        let points = |urls: &[String]| {
            seq(&urls
                .iter()
                .map(|u| seq(&[explicit(0, &explicit(0, &uri(u)))]))
                .collect::<Vec<_>>())
        };
        let mut exts = Vec::new();
        if !self.ocsp.is_empty() {
            let access: Vec<Vec<u8>> = (self.ocsp.iter())
                .map(|u| seq(&[oid(OID_AD_OCSP), uri(u)]))
                .collect();
            exts.push(ca::ext(OID_AIA, false, &seq(&access)));
        }
        if !self.crl.is_empty() {
            exts.push(ca::ext(OID_CRL_DP, false, &points(&self.crl)));
        }
        if self.delta_crl {
            exts.push(ca::ext(OID_FRESHEST_CRL, false, &points(&self.crl)));
        }
        exts
    }
}

/// The serial number of a DER certificate (the INTEGER's content).
pub fn serial(cert_der: &[u8]) -> Vec<u8> {
    let (_, cert, _) = der::read(cert_der);
    let (_, tbs, _) = der::read(cert);
    let (_, _, rest) = der::read(tbs); // [0] version
    let (tag, serial, _) = der::read(rest);
    assert_eq!(tag, 0x02, "the serial is an INTEGER");
    serial.to_vec()
}

/// One revoked certificate of a CRL.
#[derive(Clone, Debug)]
pub struct CrlEntry {
    pub serial: Vec<u8>,
    pub revoked_at: i64,
    pub reason: Option<u8>,
    pub invalidity_date: Option<i64>,
}

impl CrlEntry {
    /// `cert` (DER), revoked at `at` without a reason.
    pub fn of(cert: &[u8], at: i64) -> CrlEntry {
        CrlEntry {
            serial: serial(cert),
            revoked_at: at,
            reason: None,
            invalidity_date: None,
        }
    }

    pub fn reason(mut self, reason: u8) -> CrlEntry {
        self.reason = Some(reason);
        self
    }

    pub fn invalid_from(mut self, t: i64) -> CrlEntry {
        self.invalidity_date = Some(t);
        self
    }

    fn der(&self) -> Vec<u8> {
        let mut exts = Vec::new();
        if let Some(r) = self.reason {
            exts.push(ca::ext("2.5.29.21", false, &tlv(0x0a, &[r])));
        }
        if let Some(t) = self.invalidity_date {
            exts.push(ca::ext("2.5.29.24", false, &generalized_time(t)));
        }
        let mut parts = vec![tlv(0x02, &self.serial), der::time(self.revoked_at)];
        if !exts.is_empty() {
            parts.push(seq(&exts));
        }
        seq(&parts)
    }
}

/// A CRL as [`Crl::der`] builds it: issued by `issuer`, current for an hour
/// from `this_update` unless told otherwise.
#[derive(Clone, Debug)]
pub struct Crl {
    pub this_update: i64,
    pub next_update: Option<i64>,
    pub entries: Vec<CrlEntry>,
    /// Signed with this key instead of the issuer's.
    pub signer: Option<KeyPair>,
    /// A critical CRL extension nobody understands.
    pub unknown_critical: bool,
}

impl Crl {
    pub fn new(this_update: i64) -> Crl {
        Crl {
            this_update,
            next_update: Some(this_update + 3600),
            entries: Vec::new(),
            signer: None,
            unknown_critical: false,
        }
    }

    pub fn revoke(mut self, entry: CrlEntry) -> Crl {
        self.entries.push(entry);
        self
    }

    pub fn next_update(mut self, t: Option<i64>) -> Crl {
        self.next_update = t;
        self
    }

    pub fn signed_by(mut self, key: KeyPair) -> Crl {
        self.signer = Some(key);
        self
    }

    pub fn unknown_critical(mut self) -> Crl {
        self.unknown_critical = true;
        self
    }

    /// The DER CRL (v2) of `issuer`, with a CRL number and the issuer's key
    /// identifier.
    pub fn der(&self, issuer: &CaCert) -> Vec<u8> {
        let key = self.signer.as_ref().unwrap_or(&issuer.key);
        let (alg, hash) = ca::sig_alg(key);
        let mut exts = vec![
            ca::ext("2.5.29.20", false, &int(1)),
            ca::ext(
                "2.5.29.35",
                false,
                &seq(&[der::implicit(
                    0,
                    &ca::key_identifier(&issuer.key.spki_der()),
                )]),
            ),
        ];
        if self.unknown_critical {
            exts.push(ca::ext("1.3.6.1.4.1.32473.9.9", true, &der::null()));
        }
        let mut tbs = vec![
            int(1),
            alg.clone(),
            issuer.name.clone(),
            der::time(self.this_update),
        ];
        if let Some(t) = self.next_update {
            tbs.push(der::time(t));
        }
        if !self.entries.is_empty() {
            tbs.push(seq(&self
                .entries
                .iter()
                .map(CrlEntry::der)
                .collect::<Vec<_>>()));
        }
        tbs.push(explicit(0, &seq(&exts)));
        let tbs = seq(&tbs);
        let signature = key.sign_with(&tbs, hash);
        seq(&[tbs, alg, der::bits(&signature)])
    }
}

/// The status an OCSP responder gives a certificate; certificates it is
/// not told about are `unknown` to it.
#[derive(Clone, Debug)]
pub enum OcspStatus {
    Good,
    Revoked(i64),
}

/// A delegated OCSP responder of `issuer`: its certificate (EKU
/// OCSPSigning, or none when `authorized` is false) and key.
#[derive(Clone, Debug)]
pub struct Responder {
    pub cert: Vec<u8>,
    pub key: KeyPair,
}

impl Responder {
    pub fn new(issuer: &CaCert, seed: &str, authorized: bool) -> Responder {
        let key = KeyPair::from_seed(KeyKind::P256, &format!("{seed} ocsp responder"));
        let mut exts = vec![ca::ext("2.5.29.15", true, &[0x03, 0x02, 0x07, 0x80])];
        if authorized {
            exts.push(ca::ext("2.5.29.37", false, &seq(&[oid(OID_OCSP_SIGNING)])));
        }
        let subject = ca::full_name("US", "WA", "ivpol.test", &format!("{seed} OCSP responder"));
        let cert = ca::end_entity(issuer, &subject, &key, ca::CA_WINDOW, exts);
        Responder { cert, key }
    }
}

/// What `openssl ocsp` answers from: an index of certificates, the CA
/// they are from and the responder that signs.
struct Index {
    dir: tempfile::TempDir,
}

impl Index {
    fn write(issuer: &CaCert, responder: &Responder, statuses: &[(Vec<u8>, OcspStatus)]) -> Index {
        let dir = tempfile::tempdir().expect("temp dir");
        let stamp = |t: i64| {
            let (y, mo, d, h, mi, s) = super::civil(t);
            format!("{:02}{mo:02}{d:02}{h:02}{mi:02}{s:02}Z", y % 100)
        };
        let lines: String = statuses
            .iter()
            .map(|(cert, status)| {
                let serial = super::hex(&serial(cert)).to_uppercase();
                let expiry = stamp(ca::CA_WINDOW.not_after.min(2_524_607_999));
                match status {
                    OcspStatus::Good => format!("V\t{expiry}\t\t{serial}\tunknown\t/CN=leaf\n"),
                    OcspStatus::Revoked(at) => format!(
                        "R\t{expiry}\t{},keyCompromise\t{serial}\tunknown\t/CN=leaf\n",
                        stamp(*at)
                    ),
                }
            })
            .collect();
        let write =
            |name: &str, text: String| std::fs::write(dir.path().join(name), text).expect("write");
        write("index.txt", lines);
        write("index.txt.attr", "unique_subject = no\n".into());
        write("ca.pem", issuer.pem());
        write("responder.pem", der::pem("CERTIFICATE", &responder.cert));
        write("responder.key", responder.key.private_pem());
        Index { dir }
    }

    fn args(&self) -> Vec<String> {
        let p = |name: &str| self.dir.path().join(name).display().to_string();
        vec![
            "ocsp".into(),
            "-index".into(),
            p("index.txt"),
            "-CA".into(),
            p("ca.pem"),
            "-rsigner".into(),
            p("responder.pem"),
            "-rkey".into(),
            p("responder.key"),
            "-nmin".into(),
            "60".into(),
        ]
    }
}

/// A real `openssl ocsp` responder on a loopback port, stopped on drop.
pub struct OcspResponder {
    child: Child,
    /// `http://127.0.0.1:<port>`
    pub url: String,
    _index: Index,
}

impl OcspResponder {
    /// Starts on `port` (certificates name the responder's URL before it
    /// runs, so the caller picks the port).
    pub fn start_on(
        port: u16,
        issuer: &CaCert,
        responder: &Responder,
        statuses: &[(Vec<u8>, OcspStatus)],
    ) -> OcspResponder {
        let index = Index::write(issuer, responder, statuses);
        // `-timeout`: a client that connects and says nothing would
        // otherwise hold the one-at-a-time responder for ever.
        let mut child = Command::new("openssl")
            .args(index.args())
            .args(["-port", &port.to_string(), "-ignore_err", "-timeout", "5"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start openssl ocsp");
        // It prints `ACCEPT [::]:<port> PID=<pid>` once it listens (probing
        // with a bare connection would be such a silent client).
        let mut stdout = std::io::BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut line = String::new();
        stdout
            .read_line(&mut line)
            .expect("read openssl ocsp's output");
        assert!(
            line.starts_with("ACCEPT"),
            "openssl ocsp did not listen: {line:?}"
        );
        // Drained, so that a later line never meets a closed pipe.
        std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
        OcspResponder {
            child,
            url: format!("http://127.0.0.1:{port}"),
            _index: index,
        }
    }
}

impl Drop for OcspResponder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
