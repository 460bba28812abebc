//! What the host reads of an AdmissionReview body itself: only the uid
//! (and the namespace), found by a cheap scan, and only to answer a request
//! the component could not judge (a trap, a deadline, a body too large or
//! malformed). Everything else is the component's (`PolicySet::review`).
//! Self-contained (serde_json only), so the fuzz targets build it on its
//! own.

use std::borrow::Cow;

/// The longest uid echoed back; Kubernetes' are 36 characters.
const MAX_UID_BYTES: usize = 256;

/// `request.uid` of a body that may be truncated or malformed elsewhere,
/// found by a cheap scan of the envelope's top level instead of a full
/// parse: enough to answer a request that cannot be judged.
pub(super) fn scan_uid(body: &[u8]) -> Option<String> {
    scan_request_field(body, "uid").filter(|u| !u.is_empty() && u.len() <= MAX_UID_BYTES)
}

/// `request.namespace`, by the same scan: which namespaced policies a
/// request that could not be judged was for.
pub(super) fn scan_namespace(body: &[u8]) -> Option<String> {
    scan_request_field(body, "namespace").filter(|n| n.len() <= MAX_NAMESPACE_BYTES)
}

/// A Namespace name is a DNS label.
const MAX_NAMESPACE_BYTES: usize = 63;

/// The string member `key` of the top-level `request` object.
fn scan_request_field(body: &[u8], key: &str) -> Option<String> {
    let mut s = Scanner { b: body, i: 0 };
    s.expect(b'{')?;
    loop {
        let name = s.string()?;
        s.expect(b':')?;
        if name == "request" && s.peek()? == b'{' {
            return s.member_of_object(key);
        }
        s.skip_value()?;
        if s.peek()? != b',' {
            return None;
        }
        s.i += 1;
    }
}

/// A cursor over JSON text that reads strings and skips values.
struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Scanner<'a> {
    /// The next non-whitespace byte, not consumed.
    fn peek(&mut self) -> Option<u8> {
        while self.b.get(self.i)?.is_ascii_whitespace() {
            self.i += 1;
        }
        self.b.get(self.i).copied()
    }

    fn expect(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// The end (exclusive) of the string starting at `self.i`.
    fn string_end(&self) -> Option<usize> {
        let mut j = self.i + 1;
        loop {
            match *self.b.get(j)? {
                b'\\' => j += 2,
                b'"' => return Some(j + 1),
                _ => j += 1,
            }
        }
    }

    /// The string at the cursor, decoded as JSON decodes it: borrowed when
    /// it has no escapes (nearly every key), so that finding a member
    /// allocates nothing for the keys before it.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        if self.peek()? != b'"' {
            return None;
        }
        let end = self.string_end()?;
        let raw = &self.b[self.i..end];
        self.i = end;
        let inner = &raw[1..raw.len() - 1];
        // JSON refuses control characters in a string; escapes decode.
        if inner.iter().all(|&b| b >= b' ' && b != b'\\') {
            return std::str::from_utf8(inner).ok().map(Cow::Borrowed);
        }
        serde_json::from_slice(raw).ok().map(Cow::Owned)
    }

    /// Skips one value; containers by bracket depth, strings included.
    fn skip_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.i = self.string_end()?,
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match *self.b.get(self.i)? {
                        b'"' => {
                            self.i = self.string_end()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.i += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
            }
            _ => {
                while !matches!(*self.b.get(self.i)?, b',' | b'}' | b']') {
                    self.i += 1;
                }
            }
        }
        Some(())
    }

    /// The string member `wanted` of the object at the cursor.
    fn member_of_object(&mut self, wanted: &str) -> Option<String> {
        self.expect(b'{')?;
        loop {
            let key = self.string()?;
            self.expect(b':')?;
            if key == wanted {
                return self.string().map(Cow::into_owned);
            }
            self.skip_value()?;
            if self.peek()? != b',' {
                return None;
            }
            self.i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{scan_namespace, scan_uid};

    #[test]
    fn the_namespace_is_found_beside_the_uid() {
        let body = br#"{"request":{"uid":"u","object":{"metadata":{"namespace":"inner"}},"namespace":"team-a"}}"#;
        assert_eq!(scan_namespace(body).as_deref(), Some("team-a"));
        assert_eq!(scan_namespace(br#"{"request":{"uid":"u"}}"#), None);
        let long = format!(r#"{{"request":{{"namespace":"{}"}}}}"#, "n".repeat(64));
        assert_eq!(scan_namespace(long.as_bytes()), None);
    }

    #[test]
    fn keys_and_values_decode_as_json_decodes_them() {
        // Escaped keys match; escaped and Unicode values decode.
        let body = r#"{"re\u0071uest":{"name\u0073pace":"t\u00e9am-\"a\"","uid":"é"}}"#;
        assert_eq!(
            scan_namespace(body.as_bytes()).as_deref(),
            Some("téam-\"a\"")
        );
        assert_eq!(scan_uid(body.as_bytes()).as_deref(), Some("é"));
        // What JSON refuses is not found: a raw control character, bytes
        // that are not UTF-8.
        assert_eq!(scan_uid(b"{\"request\":{\"uid\":\"a\tb\"}}"), None);
        assert_eq!(scan_uid(b"{\"request\":{\"uid\":\"a\xffb\"}}"), None);
    }

    #[test]
    fn the_uid_is_found_in_truncated_and_malformed_bodies() {
        let full = br#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"kind":{"group":""},"uid":"u-1","object":{"metadata":{"uid":"not-this"}}}}"#;
        assert_eq!(scan_uid(full).as_deref(), Some("u-1"));
        // Cut after the uid, as a body over the limit is.
        let cut = &full[..full.len() - 30];
        assert_eq!(scan_uid(cut).as_deref(), Some("u-1"));
        // Strings holding brackets, quotes and keys are skipped whole.
        let tricky = br#"{"x":"{\"request\":{\"uid\":\"forged\"}}","y":[1,{"a":"]"}],"request":{"object":{"uid":"inner"},"uid":"real"}}"#;
        assert_eq!(scan_uid(tricky).as_deref(), Some("real"));
        // An escaped uid is decoded as JSON decodes it.
        assert_eq!(
            scan_uid(br#"{"request":{"uid":"a\u0062c"}}"#).as_deref(),
            Some("abc")
        );
    }

    #[test]
    fn no_uid_is_guessed() {
        for body in [
            &b""[..],
            b"not json",
            br#"{"request":{"object":{"uid":"inner"}}}"#,
            br#"{"request":{"uid":""}}"#,
            br#"{"request":{"uid":5}}"#,
            br#"{"request":"u"}"#,
            br#"{"other":{"uid":"x"}}"#,
            br#"{"request":{"kind":{"group":"","uid":"nested"}"#,
            br#"[{"request":{"uid":"x"}}]"#,
        ] {
            assert_eq!(scan_uid(body), None, "{}", String::from_utf8_lossy(body));
        }
        let long = format!(r#"{{"request":{{"uid":"{}"}}}}"#, "x".repeat(300));
        assert_eq!(scan_uid(long.as_bytes()), None);
    }
}
