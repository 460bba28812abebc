//! Reading an AdmissionReview request (`admission.k8s.io/v1`): the host
//! checks the envelope and echoes the uid; the `request` itself goes to the
//! component untouched. Self-contained (serde_json only), so the fuzz
//! targets build it on its own.

use serde_json::Value;

/// The parts of an AdmissionReview the host needs.
pub struct Review {
    pub uid: String,
    pub operation: String,
    pub namespace: String,
    /// `request.kind.kind` and `request.name`, for the decision log.
    pub kind: String,
    pub name: String,
    /// The `request` object, re-serialised for the component.
    pub request: String,
}

/// Parses and checks an AdmissionReview body; the error names the problem.
pub fn parse(body: &[u8]) -> Result<Review, String> {
    let doc: Value =
        serde_json::from_slice(body).map_err(|e| format!("body is not valid JSON: {e}"))?;
    let api_version = doc
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default();
    if kind != "AdmissionReview" {
        return Err(format!("kind must be AdmissionReview, got {kind:?}"));
    }
    if api_version != "admission.k8s.io/v1" {
        return Err(format!(
            "apiVersion must be admission.k8s.io/v1, got {api_version:?}"
        ));
    }
    let request = doc
        .get("request")
        .filter(|r| r.is_object())
        .ok_or("AdmissionReview has no request")?;
    let field = |name: &str| {
        request
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let uid = field("uid");
    if uid.is_empty() {
        return Err("request.uid is required".into());
    }
    Ok(Review {
        uid,
        operation: field("operation"),
        namespace: field("namespace"),
        kind: request
            .pointer("/kind/kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        name: field("name"),
        request: request.to_string(),
    })
}

/// The longest uid echoed back; Kubernetes' are 36 characters.
const MAX_UID_BYTES: usize = 256;

/// `request.uid` of a body that may be truncated or malformed elsewhere,
/// found by a cheap scan of the envelope's top level instead of a full
/// parse: enough to answer a request that cannot be judged.
pub fn scan_uid(body: &[u8]) -> Option<String> {
    let mut s = Scanner { b: body, i: 0 };
    s.expect(b'{')?;
    loop {
        let key = s.string()?;
        s.expect(b':')?;
        if key == "request" && s.peek()? == b'{' {
            return s.uid_in_request();
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

impl Scanner<'_> {
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

    fn string(&mut self) -> Option<String> {
        if self.peek()? != b'"' {
            return None;
        }
        let end = self.string_end()?;
        let raw = &self.b[self.i..end];
        self.i = end;
        serde_json::from_slice(raw).ok()
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

    /// `uid` among the members of the object at the cursor.
    fn uid_in_request(&mut self) -> Option<String> {
        self.expect(b'{')?;
        loop {
            let key = self.string()?;
            self.expect(b':')?;
            if key == "uid" {
                return self
                    .string()
                    .filter(|u| !u.is_empty() && u.len() <= MAX_UID_BYTES);
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
    use super::scan_uid;

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
