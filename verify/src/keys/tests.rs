//! Keys read and signatures checked with every curve, RSA padding and
//! hash accepted, and the keys and PEM refused; `rsa_rng` for the other
//! modules' tests that make RSA keys.

use super::*;
use crate::encoding::pem_encode;

fn p256_key() -> p256::ecdsa::SigningKey {
    p256::ecdsa::SigningKey::from_slice(&[7u8; 32]).unwrap()
}

fn spki_pem<K: EncodePublicKey>(k: &K) -> String {
    pem_encode("PUBLIC KEY", k.to_public_key_der().unwrap().as_bytes())
}

#[test]
fn hash_names() {
    assert_eq!(
        HashAlgorithm::from_kyverno("").unwrap(),
        HashAlgorithm::Sha256
    );
    assert_eq!(
        HashAlgorithm::from_kyverno("sha256").unwrap(),
        HashAlgorithm::Sha256
    );
    assert_eq!(
        HashAlgorithm::from_kyverno("sha224").unwrap(),
        HashAlgorithm::Sha224
    );
    assert_eq!(
        HashAlgorithm::from_kyverno("sha384").unwrap(),
        HashAlgorithm::Sha384
    );
    assert_eq!(
        HashAlgorithm::from_kyverno("sha512").unwrap(),
        HashAlgorithm::Sha512
    );
    let e = HashAlgorithm::from_kyverno("md5").unwrap_err();
    assert_eq!(e, KeyError::UnsupportedHash("md5".into()).into(), "{e}");
}

#[test]
fn p256_der_raw_and_hashes() {
    use p256::ecdsa::signature::hazmat::PrehashSigner;
    use p256::ecdsa::signature::Signer;
    let sk = p256_key();
    let key = PublicKey::from_pem(&spki_pem(sk.verifying_key())).unwrap();
    assert_eq!(key.algorithm(), "ECDSA P-256");
    assert_eq!(
        key.key_id(),
        <[u8; 32]>::from(Sha256::digest(key.spki_der()))
    );
    let sig: p256::ecdsa::Signature = sk.sign(b"hello");
    key.verify(b"hello", sig.to_der().as_bytes(), None).unwrap();
    key.verify(b"hello", &sig.to_bytes(), None).unwrap();
    key.verify(
        b"hello",
        sig.to_der().as_bytes(),
        Some(HashAlgorithm::Sha256),
    )
    .unwrap();
    let bad: Result<(), KeyError> = Err(KeyError::BadSignature(KeySpec::Ec(256)));
    assert_eq!(key.verify(b"hellO", sig.to_der().as_bytes(), None), bad);
    // signed over sha256, checked over sha512
    assert_eq!(
        key.verify(
            b"hello",
            sig.to_der().as_bytes(),
            Some(HashAlgorithm::Sha512)
        ),
        bad
    );
    // sha512 digest, truncated by ECDSA
    let d = HashAlgorithm::Sha512.digest(b"m");
    let sig: p256::ecdsa::Signature = sk.sign_prehash(&d).unwrap();
    key.verify(b"m", sig.to_der().as_bytes(), Some(HashAlgorithm::Sha512))
        .unwrap();
    key.verify_digest(&d, HashAlgorithm::Sha512, sig.to_der().as_bytes())
        .unwrap();
    assert_eq!(
        key.verify_digest(&d[..32], HashAlgorithm::Sha512, sig.to_der().as_bytes()),
        Err(KeyError::DigestLength {
            hash: "sha512",
            expected: 64,
            got: 32
        })
    );
    assert_eq!(key.verify(b"m", b"garbage", None), bad);
}

#[test]
fn p384_sha256_and_native() {
    use p384::ecdsa::signature::hazmat::PrehashSigner;
    let sk = p384::ecdsa::SigningKey::from_slice(&[9u8; 48]).unwrap();
    let key = PublicKey::from_pem(&spki_pem(sk.verifying_key())).unwrap();
    for h in [HashAlgorithm::Sha256, HashAlgorithm::Sha384] {
        let sig: p384::ecdsa::Signature = sk.sign_prehash(&h.digest(b"msg")).unwrap();
        key.verify(b"msg", sig.to_der().as_bytes(), None).unwrap();
        assert_eq!(
            key.verify(b"other", sig.to_der().as_bytes(), None),
            Err(KeyError::BadSignature(KeySpec::Ec(384)))
        );
    }
}

#[test]
fn p521_native() {
    use p521::ecdsa::signature::hazmat::PrehashSigner;
    let mut secret = [0u8; 66];
    secret[65] = 5;
    let sk = p521::ecdsa::SigningKey::from_slice(&secret).unwrap();
    let vk = p521::ecdsa::VerifyingKey::from(&sk);
    let key = PublicKey::from_pem(&spki_pem(&vk)).unwrap();
    let sig: p521::ecdsa::Signature = sk
        .sign_prehash(&HashAlgorithm::Sha512.digest(b"msg"))
        .unwrap();
    key.verify(b"msg", sig.to_der().as_bytes(), None).unwrap();
    key.verify(b"msg", &sig.to_bytes(), None).unwrap();
    assert_eq!(
        key.verify(b"msX", sig.to_der().as_bytes(), None),
        Err(KeyError::BadSignature(KeySpec::Ec(521)))
    );
}

#[test]
fn ed25519_pure_and_ph() {
    use ed25519_dalek::Signer;
    let sk = ed25519_dalek::SigningKey::from_bytes(&[3u8; 32]);
    let key = PublicKey::from_pem(&spki_pem(&sk.verifying_key())).unwrap();
    let sig = sk.sign(b"msg");
    key.verify(b"msg", &sig.to_bytes(), None).unwrap();
    assert_eq!(
        key.verify(b"msh", &sig.to_bytes(), None),
        Err(KeyError::Ed25519)
    );
    let ph = sk
        .sign_prehashed(Sha512::new().chain_update(b"msg"), Some(b""))
        .unwrap();
    key.verify(b"msg", &ph.to_bytes(), None).unwrap();
    key.verify_digest(
        &HashAlgorithm::Sha512.digest(b"msg"),
        HashAlgorithm::Sha512,
        &ph.to_bytes(),
    )
    .unwrap();
    assert_eq!(
        key.verify_digest(
            &HashAlgorithm::Sha512.digest(b"msX"),
            HashAlgorithm::Sha512,
            &ph.to_bytes()
        ),
        Err(KeyError::BadDigestSignature {
            algorithm: KeySpec::Ed25519,
            hash: "sha512"
        })
    );
    assert_eq!(
        key.verify(b"msg", &ph.to_bytes()[..63], None),
        Err(KeyError::Ed25519Length(63))
    );
}

#[test]
fn rsa_pkcs1_and_pss() {
    use rsa::pkcs1::EncodeRsaPublicKey;
    use rsa::{Pkcs1v15Sign, Pss};
    let sk = rsa::PrivateKey::new(&mut rsa_rng(), 2048).unwrap();
    let pk = sk.to_public_key();
    let key = PublicKey::from_pem(&spki_pem(&pk)).unwrap();
    assert_eq!(key.algorithm(), "RSA-2048");
    // PKCS#1 label gives the same key.
    let pkcs1 = pem_encode("RSA PUBLIC KEY", pk.to_pkcs1_der().unwrap().as_bytes());
    assert_eq!(PublicKey::from_pem(&pkcs1).unwrap(), key);
    let d = HashAlgorithm::Sha256.digest(b"msg");
    let sig = sk.sign(Pkcs1v15Sign::new::<Sha256>(), &d).unwrap();
    key.verify(b"msg", &sig, None).unwrap();
    let bad: Result<(), KeyError> = Err(KeyError::BadSignature(KeySpec::Rsa(2048)));
    assert_eq!(key.verify(b"msh", &sig, None), bad);
    let pss = sk.sign(Pss::<Sha256>::new(), &d).unwrap();
    key.verify(b"msg", &pss, None).unwrap();
    key.verify_digest(&d, HashAlgorithm::Sha256, &pss).unwrap();
    assert_eq!(key.verify(b"msh", &pss, None), bad);
    let d512 = HashAlgorithm::Sha512.digest(b"msg");
    let sig512 = sk.sign(Pkcs1v15Sign::new::<Sha512>(), &d512).unwrap();
    key.verify(b"msg", &sig512, Some(HashAlgorithm::Sha512))
        .unwrap();
    // signed over sha512, checked over the default sha256
    assert_eq!(key.verify(b"msg", &sig512, None), bad);
}

#[test]
fn rsa_small_key_refused() {
    const RSA1024: &str = "-----BEGIN PUBLIC KEY-----\nMIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQCltr/0CLXWi9UosZf60tz6L/Ev\nxoy8pJH6xm16GOwogvnSomnIsoIQpKsx+Fpda/Bl06267lNMvoTtWJMzDv4qVV5f\nXHVWqu2l0wd78INVw808A954J3F694dUpy3xPJN/FILfRag99achXBslSi5ioev4\nJR3UMHTueGudtMVd7QIDAQAB\n-----END PUBLIC KEY-----\n";
    let e = PublicKey::from_pem(RSA1024).unwrap_err();
    assert_eq!(e, KeyError::RsaSize(1024).into(), "{e}");
}

#[test]
fn bad_pem() {
    assert_eq!(
        PublicKey::from_pem("").unwrap_err(),
        KeyError::NoKeyBlock.into()
    );
    assert!(matches!(
        PublicKey::read_pem("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"),
        Err(KeyError::Spki(_))
    ));
    assert!(matches!(
        PublicKey::from_spki_der(b"\x30\x00"),
        Err(KeyError::Spki(_))
    ));
}

/// The OS RNG for RSA key generation in tests.
pub(crate) fn rsa_rng() -> getrandom::SysRng {
    getrandom::SysRng
}
