//! DSSE envelopes: the signature covers
//! PAE = `"DSSEv1" SP len(type) SP type SP len(payload) SP payload`.
//!
//! Specification: <https://github.com/secure-systems-lab/dsse/blob/master/protocol.md>

use serde::Deserialize;

use super::encoding::{b64decode, EncodingError};
use super::keys::{HashAlgorithm, KeySpec, PublicKey};
use super::{Reason, Shared};

crate::debug_as_display!(DsseError);
/// Why a DSSE envelope was not accepted.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum DsseError {
    /// The envelope is over [`MAX_ENVELOPE`].
    #[error("DSSE envelope larger than 16 MiB")]
    TooLarge,
    /// The envelope is not DSSE JSON (the parser's error).
    #[error("invalid DSSE envelope: {0}")]
    Json(#[source] Shared<serde_json::Error>),
    /// The payload or a signature is not base64.
    #[error(transparent)]
    Encoding(#[from] EncodingError),
    /// The envelope carries no signature.
    #[error("DSSE envelope has no signatures")]
    NoSignatures,
    /// The envelope carries more signatures than are read.
    #[error("DSSE envelope has more than {max} signatures")]
    TooManySignatures {
        /// The most read.
        max: usize,
    },
    /// No signature verifies with the key.
    #[error("no DSSE signature verifies with the {algorithm} key")]
    NoSignatureVerifies {
        /// The key's type.
        algorithm: KeySpec,
    },
}

impl DsseError {
    /// The class of this failure: an envelope is evidence, so every failure
    /// here is [`Reason::Malformed`] until a stage classes it.
    pub fn reason(&self) -> Reason {
        match self {
            DsseError::Encoding(e) => e.reason(),
            _ => Reason::Malformed,
        }
    }
}

/// Largest envelope accepted.
pub const MAX_ENVELOPE: usize = 16 << 20;
/// Most signatures read from one envelope.
const MAX_SIGNATURES: usize = 16;

/// A parsed DSSE envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// The payload's type (`application/vnd.in-toto+json` for attestations).
    pub payload_type: String,
    /// The decoded payload bytes.
    pub payload: Vec<u8>,
    /// Decoded signatures, in envelope order.
    pub signatures: Vec<Vec<u8>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EnvelopeJson {
    payload_type: String,
    payload: String,
    #[serde(default)]
    signatures: Vec<SignatureJson>,
}

#[derive(Deserialize)]
struct SignatureJson {
    sig: String,
}

impl Envelope {
    /// Reads an envelope, bounded in bytes and signatures.
    pub fn parse(json: &[u8]) -> Result<Envelope, DsseError> {
        if json.len() > MAX_ENVELOPE {
            return Err(DsseError::TooLarge);
        }
        let env: EnvelopeJson =
            ivpol_refs::json::from_slice(json).map_err(|e| DsseError::Json(e.into()))?;
        if env.signatures.is_empty() {
            return Err(DsseError::NoSignatures);
        }
        if env.signatures.len() > MAX_SIGNATURES {
            return Err(DsseError::TooManySignatures {
                max: MAX_SIGNATURES,
            });
        }
        Ok(Envelope {
            payload: b64decode("DSSE payload", &env.payload)?,
            signatures: env
                .signatures
                .iter()
                .map(|s| b64decode("DSSE signature", &s.sig))
                .collect::<Result<_, _>>()?,
            payload_type: env.payload_type,
        })
    }

    /// The pre-authentication encoding the signatures cover.
    pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
        let mut out = format!(
            "DSSEv1 {} {} {} ",
            payload_type.len(),
            payload_type,
            payload.len()
        )
        .into_bytes();
        out.extend_from_slice(payload);
        out
    }

    /// At least one signature verifies under `key`; returns it.
    pub fn verify(&self, key: &PublicKey, hash: Option<HashAlgorithm>) -> Result<&[u8], DsseError> {
        let pae = Envelope::pae(&self.payload_type, &self.payload);
        self.signatures
            .iter()
            .find(|sig| key.verify(&pae, sig, hash).is_ok())
            .map(Vec::as_slice)
            .ok_or_else(|| DsseError::NoSignatureVerifies {
                algorithm: key.key_spec(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::{b64encode, pem_encode};
    use p256::ecdsa::signature::Signer;
    use spki::EncodePublicKey;

    #[test]
    fn pae_and_verify() {
        assert_eq!(
            Envelope::pae("application/vnd.in-toto+json", b"{}"),
            b"DSSEv1 28 application/vnd.in-toto+json 2 {}".to_vec()
        );
        let sk = p256::ecdsa::SigningKey::from_slice(&[5u8; 32]).unwrap();
        let key = PublicKey::from_pem(&pem_encode(
            "PUBLIC KEY",
            sk.verifying_key().to_public_key_der().unwrap().as_bytes(),
        ))
        .unwrap();
        let sig: p256::ecdsa::Signature = sk.sign(&Envelope::pae("t", b"hello"));
        let json = format!(
            r#"{{"payloadType":"t","payload":"{}","signatures":[{{"keyid":"","sig":"AAAA"}},{{"sig":"{}"}}]}}"#,
            b64encode(b"hello"),
            b64encode(sig.to_der().as_bytes())
        );
        let env = Envelope::parse(json.as_bytes()).unwrap();
        assert_eq!(env.payload, b"hello");
        env.verify(&key, None).unwrap();
        let none_verifies: Result<&[u8], DsseError> = Err(DsseError::NoSignatureVerifies {
            algorithm: KeySpec::Ec(256),
        });
        let mut other = env.clone();
        other.payload_type = "u".into();
        assert_eq!(other.verify(&key, None), none_verifies);
        other = env.clone();
        other.payload = b"hellO".to_vec();
        assert_eq!(other.verify(&key, None), none_verifies);
        assert!(matches!(
            Envelope::parse(br#"{"payloadType":"t","payload":"","signatures":[]}"#),
            Err(DsseError::NoSignatures)
        ));
        assert!(matches!(Envelope::parse(b"[]"), Err(DsseError::Json(_))));
    }
}
