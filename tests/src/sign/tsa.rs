//! An own RFC 3161 timestamp authority: a self-signed root and a TSA
//! certificate (critical EKU timeStamping), and `TimeStampToken`s built
//! byte by byte, so that `genTime` can be any time (`openssl ts -reply`
//! always stamps "now").

use super::ca::{self, CaCert, Window, CA_WINDOW};
use super::der::{self, explicit, int, octets, oid, seq, set, tlv};
use super::keys::{KeyKind, KeyPair, SigHash};

pub const OID_TIME_STAMPING: &str = "1.3.6.1.5.5.7.3.8";
const OID_SIGNED_DATA: &str = "1.2.840.113549.1.7.2";
const OID_CT_TST_INFO: &str = "1.2.840.113549.1.9.16.1.4";
const OID_CONTENT_TYPE: &str = "1.2.840.113549.1.9.3";
const OID_MESSAGE_DIGEST: &str = "1.2.840.113549.1.9.4";
const OID_SIGNING_CERTIFICATE_V2: &str = "1.2.840.113549.1.9.16.2.47";
const OID_ECDSA_SHA256: &str = "1.2.840.10045.4.3.2";
/// The TSA policy the tokens name: under IANA's enterprise number for
/// documentation (RFC 5612), as no verifier here pins a policy.
pub const TSA_POLICY: &str = "1.3.6.1.4.1.32473.1.1";

/// A timestamp authority. Same seed = same certificates and tokens.
#[derive(Clone, Debug)]
pub struct Tsa {
    pub root: CaCert,
    /// The TSA (signer) certificate, DER.
    pub cert: Vec<u8>,
    pub key: KeyPair,
    pub window: Window,
}

/// The AlgorithmIdentifier of a hash; parameters absent (RFC 5754).
pub(crate) fn hash_alg(hash: SigHash) -> Vec<u8> {
    seq(&[oid(match hash {
        SigHash::Sha256 => "2.16.840.1.101.3.4.2.1",
        SigHash::Sha384 => "2.16.840.1.101.3.4.2.2",
        SigHash::Sha512 => "2.16.840.1.101.3.4.2.3",
    })])
}

/// GeneralizedTime whatever the year: RFC 3161 `genTime` has no UTCTime form.
pub(crate) fn generalized_time(unix: i64) -> Vec<u8> {
    let (y, mo, d, h, mi, s) = super::civil(unix);
    tlv(
        0x18,
        format!("{y:04}{mo:02}{d:02}{h:02}{mi:02}{s:02}Z").as_bytes(),
    )
}

fn attribute(dotted: &str, value: Vec<u8>) -> Vec<u8> {
    seq(&[oid(dotted), set(&[value])])
}

/// DER `SET OF`: elements in ascending order of their encodings (X.690
/// §11.6), which strict parsers (the `der` crate) insist on.
fn der_set_of(mut items: Vec<Vec<u8>>) -> Vec<u8> {
    items.sort();
    set(&items)
}

impl Tsa {
    pub fn new(seed: &str) -> Tsa {
        Tsa::with_endpoints(seed, &super::revocation::Endpoints::default())
    }

    /// A TSA whose certificate names these revocation endpoints.
    pub fn with_endpoints(seed: &str, endpoints: &super::revocation::Endpoints) -> Tsa {
        let root_key = KeyPair::from_seed(KeyKind::P384, &format!("{seed}-tsa-root"));
        let root = ca::ca_cert(
            &root_key,
            ca::full_name("US", "WA", "ivpol.test", &format!("{seed} TSA root")),
            None,
            CA_WINDOW,
            Some(0),
        );
        let key = KeyPair::from_seed(KeyKind::P256, &format!("{seed}-tsa"));
        let mut exts = vec![
            ca::ext("2.5.29.15", true, &[0x03, 0x02, 0x07, 0x80]),
            // RFC 3161 §2.3: the only EKU, and critical.
            ca::ext("2.5.29.37", true, &seq(&[oid(OID_TIME_STAMPING)])),
        ];
        exts.extend(endpoints.extensions());
        let subject = ca::full_name("US", "WA", "ivpol.test", &format!("{seed} TSA"));
        let cert = ca::end_entity(&root, &subject, &key, CA_WINDOW, exts);
        Tsa {
            root,
            cert,
            key,
            window: CA_WINDOW,
        }
    }

    pub fn root_pem(&self) -> String {
        self.root.pem()
    }

    pub fn cert_pem(&self) -> String {
        der::pem("CERTIFICATE", &self.cert)
    }

    /// An RFC 3161 `TimeStampToken` (CMS ContentInfo / SignedData over a
    /// TSTInfo) for `message` hashed with `hash`, with `genTime` = `at`.
    pub fn timestamp(&self, message: &[u8], hash: SigHash, at: i64) -> Vec<u8> {
        let tst_info = self.tst_info(message, hash, at);
        let signed_attrs = self.signed_attrs(&tst_info);
        let signature = self.key.sign_with(&signed_attrs, SigHash::Sha256);
        let signed_data = seq(&[
            // version 3: the content is not id-data (RFC 5652 §5.1)
            int(3),
            set(&[hash_alg(SigHash::Sha256)]),
            seq(&[oid(OID_CT_TST_INFO), explicit(0, &octets(&tst_info))]),
            // certificates [0] IMPLICIT: the signer's, for verifiers that
            // take the chain from the token (notation, openssl)
            tlv(0xa0, &self.cert),
            set(&[self.signer_info(&signed_attrs, &signature)]),
        ]);
        seq(&[oid(OID_SIGNED_DATA), explicit(0, &signed_data)])
    }

    /// A granted `TimeStampResp` (status 0 and [`Tsa::timestamp`]'s
    /// token), what a TSA answers and cosign keeps in its
    /// `dev.sigstore.cosign/rfc3161timestamp` annotation.
    pub fn response(&self, message: &[u8], hash: SigHash, at: i64) -> Vec<u8> {
        seq(&[seq(&[int(0)]), self.timestamp(message, hash, at)])
    }

    fn tst_info(&self, message: &[u8], hash: SigHash, at: i64) -> Vec<u8> {
        let serial = ca::serial_of(&[message, &at.to_be_bytes(), &self.cert]);
        seq(&[
            int(1),
            oid(TSA_POLICY),
            seq(&[hash_alg(hash), octets(&hash.digest(message))]),
            der::uint(&serial),
            generalized_time(at),
        ])
    }

    /// contentType, messageDigest and signing-certificate-v2 (RFC 5816), as
    /// the DER `SET OF Attribute` the signature covers.
    fn signed_attrs(&self, tst_info: &[u8]) -> Vec<u8> {
        // ESSCertIDv2 with the DEFAULT sha256 hash algorithm left out (DER)
        // and issuerSerial naming the TSA certificate.
        let ess_cert_id = seq(&[
            octets(&SigHash::Sha256.digest(&self.cert)),
            seq(&[seq(&[explicit(4, &self.root.name)]), self.serial()]),
        ]);
        der_set_of(vec![
            attribute(OID_CONTENT_TYPE, oid(OID_CT_TST_INFO)),
            attribute(
                OID_MESSAGE_DIGEST,
                octets(&SigHash::Sha256.digest(tst_info)),
            ),
            attribute(OID_SIGNING_CERTIFICATE_V2, seq(&[seq(&[ess_cert_id])])),
        ])
    }

    fn signer_info(&self, signed_attrs: &[u8], signature: &[u8]) -> Vec<u8> {
        // signedAttrs [0] IMPLICIT: the SET's content under tag 0xa0.
        let (_, attrs_content, _) = der::read(signed_attrs);
        seq(&[
            int(1),
            seq(&[self.root.name.clone(), self.serial()]),
            hash_alg(SigHash::Sha256),
            tlv(0xa0, attrs_content),
            seq(&[oid(OID_ECDSA_SHA256)]),
            octets(signature),
        ])
    }

    /// The TSA certificate's serialNumber, as DER (copied from its TBS).
    fn serial(&self) -> Vec<u8> {
        let (_, cert, _) = der::read(&self.cert);
        let (_, tbs, _) = der::read(cert);
        let (_, _, after_version) = der::read(tbs);
        let (tag, serial, _) = der::read(after_version);
        assert_eq!(tag, 0x02, "TBSCertificate serialNumber");
        tlv(0x02, serial)
    }
}
