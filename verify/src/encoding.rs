//! Small encoding helpers shared by the verifiers: base64 (std, padded,
//! whitespace tolerated as Go's decoders do for PEM-ish input), hex and PEM.

use base64::Engine;

use super::Reason;

crate::debug_as_display!(EncodingError);
/// Why base64, hex or PEM text could not be decoded. `what` names the
/// field, as the messages always have.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodingError {
    /// Base64 text over the size read anywhere.
    #[error("{what}: base64 text too long")]
    Base64TooLong {
        /// The field.
        what: String,
    },
    /// Text that is not standard padded base64 (the decoder's error).
    #[error("{what}: invalid base64: {source}")]
    Base64 {
        /// The field.
        what: String,
        /// The decoder's error.
        source: base64::DecodeError,
    },
    /// Hex of odd length.
    #[error("{what}: odd-length hex")]
    HexLength {
        /// The field.
        what: String,
    },
    /// Hex with a character outside 0-9a-fA-F.
    #[error("{what}: invalid hex")]
    Hex {
        /// The field.
        what: String,
    },
    /// A `-----BEGIN ` with no closing dashes.
    #[error("PEM: malformed BEGIN line")]
    PemBegin,
    /// A block that never ends.
    #[error("PEM: no END line for {label}")]
    PemNoEnd {
        /// The block's label.
        label: String,
    },
    /// A block over the size read.
    #[error("PEM: {label} block larger than {max} bytes")]
    PemBlockTooLarge {
        /// The block's label.
        label: String,
        /// The most bytes of text read.
        max: usize,
    },
    /// More blocks than are read.
    #[error("PEM: more than {max} blocks")]
    PemTooManyBlocks {
        /// The most blocks read.
        max: usize,
    },
    /// A block with RFC 1421 headers, which no format here uses.
    #[error("PEM: {label} block has headers")]
    PemHeaders {
        /// The block's label.
        label: String,
    },
}

impl EncodingError {
    /// The class of this failure: text that cannot be decoded is
    /// [`Reason::Malformed`].
    pub fn reason(&self) -> Reason {
        Reason::Malformed
    }
}

/// Largest base64 text accepted anywhere (16 MiB of text).
const MAX_B64: usize = 16 << 20;

/// Decodes standard (padded) base64, ignoring ASCII whitespace. `what` names
/// the field in the error.
pub fn b64decode(what: &str, s: &str) -> Result<Vec<u8>, EncodingError> {
    if s.len() > MAX_B64 {
        return Err(EncodingError::Base64TooLong { what: what.into() });
    }
    let cleaned: String = s.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    base64::engine::general_purpose::STANDARD
        .decode(cleaned.as_bytes())
        .map_err(|source| EncodingError::Base64 {
            what: what.into(),
            source,
        })
}

/// Standard padded base64.
pub fn b64encode(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    ivpol_refs::encoding::hex(bytes)
}

/// Decodes hex (either case).
pub fn unhex(what: &str, s: &str) -> Result<Vec<u8>, EncodingError> {
    base16ct::mixed::decode_vec(s).map_err(|e| {
        let what = what.into();
        match e {
            base16ct::Error::InvalidLength => EncodingError::HexLength { what },
            base16ct::Error::InvalidEncoding => EncodingError::Hex { what },
        }
    })
}

/// One PEM block: its label and DER contents.
pub struct PemBlock {
    /// The label of its `-----BEGIN …-----` line.
    pub label: String,
    /// The decoded contents.
    pub der: Vec<u8>,
}

/// Every PEM block in `text`, in order, at most `max_blocks` of them and each
/// at most `max_block` bytes of text. Text outside blocks is ignored (as Go's
/// `pem.Decode` loop does).
pub fn pem_blocks(
    text: &str,
    max_blocks: usize,
    max_block: usize,
) -> Result<Vec<PemBlock>, EncodingError> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("-----BEGIN ") {
        let after = &rest[start + "-----BEGIN ".len()..];
        let Some(label_end) = after.find("-----") else {
            return Err(EncodingError::PemBegin);
        };
        let label = &after[..label_end];
        let body_and_rest = &after[label_end + 5..];
        let end_marker = format!("-----END {label}-----");
        let Some(end) = body_and_rest.find(&end_marker) else {
            return Err(EncodingError::PemNoEnd {
                label: label.into(),
            });
        };
        let body = &body_and_rest[..end];
        if body.len() > max_block {
            return Err(EncodingError::PemBlockTooLarge {
                label: label.into(),
                max: max_block,
            });
        }
        if out.len() >= max_blocks {
            return Err(EncodingError::PemTooManyBlocks { max: max_blocks });
        }
        // Headers (RFC 1421 "Key: value" lines) are not used by any format here.
        if body.contains(':') {
            return Err(EncodingError::PemHeaders {
                label: label.into(),
            });
        }
        let der = b64decode(&format!("PEM {label}"), body)?;
        out.push(PemBlock {
            label: label.to_string(),
            der,
        });
        rest = &body_and_rest[end + end_marker.len()..];
    }
    Ok(out)
}

/// PEM text of `der` under `label`, 64 columns, trailing newline (Go's
/// `pem.Encode` layout).
pub fn pem_encode(label: &str, der: &[u8]) -> String {
    let b64 = b64encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrips() {
        assert_eq!(b64decode("x", "aGVs\nbG8=\n").unwrap(), b"hello");
        assert!(matches!(
            b64decode("x", "!!"),
            Err(EncodingError::Base64 { what, .. }) if what == "x"
        ));
        assert_eq!(hex(&[0, 0xab]), "00ab");
        assert_eq!(unhex("x", "00AB").unwrap(), vec![0, 0xab]);
        let odd = unhex("x", "0").unwrap_err();
        assert_eq!(odd, EncodingError::HexLength { what: "x".into() });
        assert_eq!(odd.to_string(), "x: odd-length hex");
        let bad = unhex("x", "zz").unwrap_err();
        assert_eq!(bad, EncodingError::Hex { what: "x".into() });
        assert_eq!(bad.to_string(), "x: invalid hex");
        assert_eq!(hex(&[0, 0xab, 0x7f]), "00ab7f");
        let pem = pem_encode("CERTIFICATE", b"abc");
        let blocks = pem_blocks(&format!("junk\n{pem}{pem}"), 10, 1000).unwrap();
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[0].der, b"abc");
        assert!(matches!(
            pem_blocks(&format!("{pem}{pem}"), 1, 1000),
            Err(EncodingError::PemTooManyBlocks { max: 1 })
        ));
        assert!(matches!(
            pem_blocks("-----BEGIN X-----\nabc", 1, 1000),
            Err(EncodingError::PemNoEnd { label }) if label == "X"
        ));
    }
}
