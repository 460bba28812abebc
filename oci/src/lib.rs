//! A small OCI distribution client (distribution-spec 1.1), over a
//! [`Transport`] so that the logic is the same natively (tests) and in the
//! component (wasi:http).
//!
//! Everything fetched is checked against the digest it claims: a
//! `Docker-Content-Digest` header is never trusted alone.

// Nothing here needs unsafe code.
#![forbid(unsafe_code)]
// The engine reads this crate's API from its docs: every public item says
// what it is.
#![deny(missing_docs)]

pub mod budget;
mod client;
pub mod digest;
mod error;
pub mod json_shape;
pub mod transport;
#[cfg(target_arch = "wasm32")]
pub mod wasi_transport;

pub use budget::{
    Budget, Budgeted, MAX_FETCHES_IN_FLIGHT, MAX_PARSED_VALUES_PER_EVALUATION,
    MAX_REGISTRY_BYTES_PER_EVALUATION,
};
pub use client::{Client, Manifest, Platform};
pub use error::{OciError, OciErrorKind};
pub use transport::{HttpRequest, HttpResponse, Transport, TransportError};

/// Media types a manifest GET accepts, in the order the registry should prefer them.
pub const MANIFEST_MEDIA_TYPES: [&str; 4] = [
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
];

/// Limits (`docs/security.md`, Bounds, and Kyverno's referrer limits). Every object is
/// also charged to the evaluation's [`budget`], and JSON is checked for its
/// shape ([`json_shape`]) before it is parsed.
pub const MAX_MANIFEST_BYTES: usize = 4 << 20;
/// The most bytes of an image config blob read.
pub const MAX_CONFIG_BYTES: usize = 4 << 20;
/// The most bytes of one referrer layer or signature layer read.
pub const MAX_REFERRER_LAYER_BYTES: usize = 10 << 20;
/// The most referrers of one type a listing may hold, as in Kyverno, and the
/// most signature layers or bundles read for one image.
pub const MAX_REFERRERS: usize = 50;
/// The most HTTP redirects followed for one request.
pub const MAX_REDIRECTS: usize = 5;
/// Characters of registry-supplied text (error details, claimed subjects)
/// an error message quotes.
pub const MAX_QUOTED_CHARS: usize = 256;

/// `text`, cut to [`MAX_QUOTED_CHARS`] characters (marked with `…`).
pub fn clip(text: &str) -> String {
    // No more bytes than the limit in characters: nothing to count.
    if text.len() <= MAX_QUOTED_CHARS {
        return text.to_string();
    }
    match text.char_indices().nth(MAX_QUOTED_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cut at the character limit, never inside a character, and only
    /// when longer.
    #[test]
    fn clip_counts_characters_not_bytes() {
        let short = "é".repeat(MAX_QUOTED_CHARS);
        assert_eq!(clip(&short), short);
        let ascii = "a".repeat(MAX_QUOTED_CHARS);
        assert_eq!(clip(&ascii), ascii);
        let long = "é".repeat(MAX_QUOTED_CHARS + 1);
        assert_eq!(clip(&long), format!("{short}…"));
        let longer = format!("{ascii}b");
        assert_eq!(clip(&longer), format!("{ascii}…"));
    }
}
