use super::*;
use crate::x509::der_wrap;
use p256::ecdsa::signature::Signer;
use p256::pkcs8::EncodePublicKey;

/// 2026-01-01T00:00:00Z, the `genTime` of every made token.
pub const GEN_TIME: i64 = 1_767_225_600;
/// SHA-1's OID, for the signing-certificate (v1) attribute.
pub const ID_SHA1: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.14.3.2.26");

/// DER `SEQUENCE` of `parts`.
pub fn seq(parts: &[&[u8]]) -> Vec<u8> {
    der_wrap(0x30, &parts.concat())
}

/// The DER of `o`.
pub fn oid(o: ObjectIdentifier) -> Vec<u8> {
    o.to_der().unwrap()
}

/// DER `SET OF`: the elements sorted by their encodings.
pub fn set_of(mut parts: Vec<Vec<u8>>) -> Vec<u8> {
    parts.sort();
    der_wrap(0x31, &parts.concat())
}

/// The made TSA's P-256 key.
pub fn key() -> p256::ecdsa::SigningKey {
    p256::ecdsa::SigningKey::from_slice(&[7u8; 32]).unwrap()
}

/// A self-signed P-256 certificate `CN=<cn>` with serial `serial`,
/// valid 2025..2100, with a critical timeStamping EKU.
pub fn tsa_cert(key: &p256::ecdsa::SigningKey, cn: &str, serial: u8) -> Certificate {
    let alg = seq(&[&oid(ID_ECDSA_SHA256)]);
    let atv = seq(&[
        &[0x06, 0x03, 0x55, 0x04, 0x03],
        &der_wrap(0x0c, cn.as_bytes()),
    ]);
    let name = seq(&[&der_wrap(0x31, &atv)]);
    let validity = seq(&[
        &der_wrap(0x17, b"250101000000Z"),
        &der_wrap(0x18, b"21000101000000Z"),
    ]);
    let spki = key.verifying_key().to_public_key_der().unwrap();
    let eku = seq(&[
        &oid(ObjectIdentifier::new_unwrap("2.5.29.37")),
        &[0x01, 0x01, 0xff],
        &der_wrap(0x04, &seq(&[&oid(ID_KP_TIME_STAMPING)])),
    ]);
    let tbs = seq(&[
        &[0xa0, 0x03, 0x02, 0x01, 0x02],
        &[0x02, 0x01, serial],
        &alg,
        &name,
        &validity,
        &name,
        spki.as_bytes(),
        &der_wrap(0xa3, &seq(&[&eku])),
    ]);
    let sig: p256::ecdsa::Signature = key.sign(&tbs);
    let mut bits = vec![0u8];
    bits.extend_from_slice(sig.to_der().as_bytes());
    Certificate::from_der(&seq(&[&tbs, &alg, &der_wrap(0x03, &bits)])).unwrap()
}

/// The OID of hash `h`.
pub fn hash_oid(h: HashAlgorithm) -> ObjectIdentifier {
    match h {
        HashAlgorithm::Sha256 => ID_SHA256,
        HashAlgorithm::Sha384 => ID_SHA384,
        HashAlgorithm::Sha512 => ID_SHA512,
        HashAlgorithm::Sha224 => ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.4"),
    }
}

/// `IssuerSerial` naming `cert`.
pub fn issuer_serial(cert: &Certificate) -> Vec<u8> {
    seq(&[
        &seq(&[&der_wrap(0xa4, &cert.issuer_der())]),
        &serial_der(cert),
    ])
}

/// The DER of `cert`'s serial number.
fn serial_der(cert: &Certificate) -> Vec<u8> {
    cert.inner()
        .tbs_certificate()
        .serial_number()
        .to_der()
        .unwrap()
}

/// An `ESSCertIDv2`: `hash_algorithm` `None` leaves the SHA-256 default
/// implicit.
pub fn ess_cert_id_v2(
    hash_algorithm: Option<ObjectIdentifier>,
    cert_hash: &[u8],
    issuer_serial: Option<Vec<u8>>,
) -> Vec<u8> {
    let alg = hash_algorithm.map(|o| seq(&[&oid(o)])).unwrap_or_default();
    seq(&[
        &alg,
        &der_wrap(0x04, cert_hash),
        &issuer_serial.unwrap_or_default(),
    ])
}

/// The signing-certificate-v2 attribute over `ids`.
pub fn v2_attr(ids: &[Vec<u8>]) -> Vec<u8> {
    let value = seq(&[&seq(&[&ids.concat()])]);
    seq(&[&oid(ID_AA_SIGNING_CERTIFICATE_V2), &der_wrap(0x31, &value)])
}

/// The common form: the first ESSCertIDv2 hashes `cert` with SHA-256.
pub fn v2_for(cert: &Certificate) -> Vec<u8> {
    v2_attr(&[ess_cert_id_v2(
        None,
        &HashAlgorithm::Sha256.digest(cert.der()),
        None,
    )])
}

/// A signing-certificate (v1) attribute: `ESSCertID { certHash (SHA-1) }`.
pub fn v1_attr() -> Vec<u8> {
    let value = seq(&[&seq(&[&seq(&[&der_wrap(0x04, &[0u8; 20])])])]);
    seq(&[&oid(ID_AA_SIGNING_CERTIFICATE), &der_wrap(0x31, &value)])
}

/// A `TimeStampToken` (ContentInfo) over `message` with an
/// `imprint_hash` imprint, signed by `key` as `cert` (embedded), with
/// `extra_attrs` among the signed attributes.
pub fn token(
    key: &p256::ecdsa::SigningKey,
    cert: &Certificate,
    message: &[u8],
    imprint_hash: HashAlgorithm,
    extra_attrs: &[Vec<u8>],
) -> Vec<u8> {
    let sha256 = seq(&[&oid(ID_SHA256)]);
    let tst = seq(&[
        &[0x02, 0x01, 0x01],
        &oid(ObjectIdentifier::new_unwrap("1.3.6.1.4.1.32473.1")),
        &seq(&[
            &seq(&[&oid(hash_oid(imprint_hash))]),
            &der_wrap(0x04, &imprint_hash.digest(message)),
        ]),
        &[0x02, 0x01, 0x05],
        &der_wrap(0x18, b"20260101000000Z"),
    ]);
    let mut attrs = vec![
        seq(&[&oid(ID_CONTENT_TYPE), &der_wrap(0x31, &oid(ID_CT_TST_INFO))]),
        seq(&[
            &oid(ID_MESSAGE_DIGEST),
            &der_wrap(0x31, &der_wrap(0x04, &HashAlgorithm::Sha256.digest(&tst))),
        ]),
    ];
    attrs.extend(extra_attrs.iter().cloned());
    let signed_attrs = set_of(attrs);
    let sig: p256::ecdsa::Signature = key.sign(&signed_attrs);
    let mut implicit = signed_attrs.clone();
    implicit[0] = 0xa0;
    let serial = serial_der(cert);
    let signer_info = seq(&[
        &[0x02, 0x01, 0x01],
        &seq(&[&cert.issuer_der(), &serial]),
        &sha256,
        &implicit,
        &seq(&[&oid(ID_ECDSA_SHA256)]),
        &der_wrap(0x04, sig.to_der().as_bytes()),
    ]);
    let signed_data = seq(&[
        &[0x02, 0x01, 0x03],
        &der_wrap(0x31, &sha256),
        &seq(&[&oid(ID_CT_TST_INFO), &der_wrap(0xa0, &der_wrap(0x04, &tst))]),
        &der_wrap(0xa0, cert.der()),
        &der_wrap(0x31, &signer_info),
    ]);
    seq(&[&oid(ID_SIGNED_DATA), &der_wrap(0xa0, &signed_data)])
}
