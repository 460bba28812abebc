use super::*;
use p256::ecdsa::signature::hazmat::{PrehashSigner, PrehashVerifier};
use p256::ecdsa::{Signature, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

/// Deterministic bytes: SHA-256 of a counter, as many as asked.
struct Bytes(u64);

impl Bytes {
    fn take(&mut self, n: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            self.0 += 1;
            out.extend_from_slice(&Sha256::digest(self.0.to_be_bytes()));
        }
        out.truncate(n);
        out
    }

    fn key(&mut self) -> SigningKey {
        loop {
            if let Ok(key) = SigningKey::from_slice(&self.take(32)) {
                return key;
            }
        }
    }
}

fn table_of(key: &VerifyingKey) -> Table {
    Table::new(ProjectivePoint::from(*key.as_affine())).expect("a key's table")
}

/// Ours, with the key's table and without, give `ecdsa`'s answer; returns it.
fn agree(table: &Table, key: &VerifyingKey, digest: &[u8], sig: &Signature) -> bool {
    let sig = sig.normalize_s();
    let theirs = key.verify_prehash(digest, &sig).is_ok();
    let ours = [
        verify(table, digest, &sig),
        verify_once(key.as_affine(), digest, &sig),
    ];
    assert_eq!(
        ours,
        [theirs; 2],
        "digest {} signature {}",
        hex(digest),
        hex(&sig.to_bytes())
    );
    theirs
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn with_scalars(r: Scalar, s: Scalar) -> Option<Signature> {
    Signature::from_scalars(r.to_bytes(), s.to_bytes()).ok()
}

#[test]
fn the_table_verifies_exactly_as_ecdsa_does() {
    let mut bytes = Bytes(0);
    for round in 0..64 {
        let signer = bytes.key();
        let key = *signer.verifying_key();
        let table = table_of(&key);
        let digest = bytes.take([28, 32, 48, 64][round % 4]);
        let sig: Signature = signer.sign_prehash(&digest).expect("signing");
        assert!(agree(&table, &key, &digest, &sig), "a good signature");
        // The high-S twin of a good signature is good too (normalised).
        let (r, s) = (*sig.r(), *sig.s());
        let twin = with_scalars(r, -s).expect("non-zero");
        assert!(agree(&table, &key, &digest, &twin), "its high-S twin");
        // Tampered: the digest, r, s, and another key. Only a digest's
        // first 256 bits count (a change past them verifies, in both).
        let mut other_digest = digest.clone();
        other_digest[round % 28] ^= 1 << (round % 8);
        assert!(!agree(&table, &key, &other_digest, &sig));
        if digest.len() > 32 {
            let mut tail = digest.clone();
            tail[32] ^= 1;
            assert!(agree(&table, &key, &tail, &sig), "past the order's bits");
        }
        if let Some(bad) = with_scalars(r + Scalar::ONE, s) {
            assert!(!agree(&table, &key, &digest, &bad));
        }
        if let Some(bad) = with_scalars(r, s + Scalar::ONE) {
            assert!(!agree(&table, &key, &digest, &bad));
        }
        let stranger = *bytes.key().verifying_key();
        assert!(!agree(&table_of(&stranger), &stranger, &digest, &sig));
    }
}

#[test]
fn edge_scalars_and_digests_agree_with_ecdsa() {
    let mut bytes = Bytes(1 << 32);
    let minus_one = -Scalar::ONE;
    let scalars = [
        Scalar::ONE,
        minus_one,
        Scalar::ONE + Scalar::ONE,
        minus_one - Scalar::ONE,
    ];
    let digests = [
        vec![0u8; 32],
        vec![0xff; 32],
        vec![0xff; 64],
        vec![0x01; 28],
        minus_one.to_bytes().to_vec(),
    ];
    let generator = VerifyingKey::from_affine(AffinePoint::GENERATOR).expect("G is a key");
    let keys = [generator, *bytes.key().verifying_key()];
    for key in &keys {
        let table = table_of(key);
        for digest in &digests {
            for r in scalars {
                for s in scalars {
                    let sig = with_scalars(r, s).expect("non-zero");
                    agree(&table, key, digest, &sig);
                }
            }
        }
    }
}

#[test]
fn the_generator_signs_with_the_key_one() {
    // Q = G (private key 1): u1·G + u2·G sums entries of the same table.
    let signer = SigningKey::from_slice(&Scalar::ONE.to_bytes()).expect("key one");
    let key = *signer.verifying_key();
    let digest = Sha256::digest(b"the generator").to_vec();
    let sig: Signature = signer.sign_prehash(&digest).expect("signing");
    assert!(agree(
        generator().expect("the generator's table"),
        &key,
        &digest,
        &sig
    ));
}

#[test]
fn a_key_gets_its_table_on_its_second_verification() {
    let mut bytes = Bytes(2 << 32);
    let mut seen = Seen::new();
    let key = *bytes.key().verifying_key();
    let spki = key.to_sec1_point(false).as_bytes().to_vec();
    assert!(seen.table_for(&spki, key.as_affine()).is_none(), "one use");
    let first = seen.table_for(&spki, key.as_affine()).expect("a table");
    let again = seen.table_for(&spki, key.as_affine()).expect("the table");
    assert!(Arc::ptr_eq(&first, &again), "made once");
    assert_eq!(seen.tables(), 1);
}

#[test]
fn tables_and_the_keys_waiting_for_one_are_bounded() {
    let mut bytes = Bytes(3 << 32);
    let mut seen = Seen::new();
    let keys: Vec<VerifyingKey> = (0..MAX_TABLES + 4)
        .map(|_| *bytes.key().verifying_key())
        .collect();
    for key in &keys {
        let spki = key.to_sec1_point(false).as_bytes().to_vec();
        seen.table_for(&spki, key.as_affine());
        assert!(seen.table_for(&spki, key.as_affine()).is_some());
        assert!(seen.tables() <= MAX_TABLES);
    }
    assert_eq!(seen.tables(), MAX_TABLES);
    for i in 0..(MAX_SEEN as u64 * 2) {
        let spki = i.to_be_bytes();
        seen.table_for(&spki, keys[0].as_affine());
        assert!(seen.keys.len() <= MAX_SEEN);
    }
}

#[test]
fn a_public_key_verifies_the_same_before_and_after_its_table() {
    use crate::keys::{HashAlgorithm, PublicKey};
    use p256::pkcs8::EncodePublicKey;
    let mut bytes = Bytes(4 << 32);
    let signer = bytes.key();
    let der = signer.verifying_key().to_public_key_der().expect("der");
    let key = PublicKey::from_spki_der(der.as_bytes()).expect("key");
    let digest = Sha256::digest(b"an image's payload").to_vec();
    let sig: Signature = signer.sign_prehash(&digest).expect("signing");
    let good = sig.to_der().as_bytes().to_vec();
    let mut bad = good.clone();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    for _ in 0..3 {
        assert!(key
            .verify_digest(&digest, HashAlgorithm::Sha256, &good)
            .is_ok());
        assert!(key
            .verify_digest(&digest, HashAlgorithm::Sha256, &bad)
            .is_err());
    }
}
