//! `sha256:<hex>` digests computed from bytes.

use sha2::{Digest, Sha256};

/// The OCI digest of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    format!(
        "sha256:{}",
        ivpol_refs::encoding::hex(&Sha256::digest(bytes))
    )
}

/// Whether `s` is a well-formed sha256 digest.
pub fn is_sha256(s: &str) -> bool {
    s.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vector() {
        assert_eq!(
            sha256(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert!(is_sha256(&sha256(b"x")));
        assert!(!is_sha256("sha256:XYZ"));
        assert!(!is_sha256("sha512:00"));
    }
}
