//! Percent-encoding for URL query values (RFC 3986), and lowercase hex.

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

/// RFC 3986's unreserved characters, the only ones a query value keeps.
const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `s` as a query value: every byte but the unreserved characters
/// percent-encoded (a token request's `service` and `scope`, the referrers
/// API's `artifactType`).
pub fn query_value(s: &str) -> String {
    utf8_percent_encode(s, UNRESERVED).to_string()
}

/// Lowercase hex (digests in keys, names and file names).
pub fn hex(bytes: &[u8]) -> String {
    base16ct::lower::encode_string(bytes)
}

#[cfg(test)]
mod tests {
    use super::{hex, query_value};

    #[test]
    fn hex_is_lowercase_two_digits_a_byte() {
        assert_eq!(hex(&[0, 0x0f, 0xab, 0xff]), "000fabff");
        assert_eq!(hex(&[]), "");
    }

    #[test]
    fn only_unreserved_characters_stay() {
        assert_eq!(query_value("aZ09-._~"), "aZ09-._~");
        assert_eq!(
            query_value("repository:a/b:pull,push"),
            "repository%3Aa%2Fb%3Apull%2Cpush"
        );
        assert_eq!(
            query_value("Az09-._~ /:?#&=+%é"),
            "Az09-._~%20%2F%3A%3F%23%26%3D%2B%25%C3%A9"
        );
    }
}
