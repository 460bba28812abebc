//! JSON read from bytes through serde_json's `&str` reader.
//!
//! serde_json compiles its parser, and every `Deserialize` impl it drives,
//! once per reader. The component reads most of its JSON from strings, so
//! bytes go through the same reader after one UTF-8 check (which the
//! byte reader would make string by string anyway): one parser in the
//! component instead of two.

use serde::Deserialize;

/// `serde_json::from_slice`, through the `&str` reader. Bytes that are not
/// UTF-8 are a data error that says at which byte.
pub fn from_slice<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> serde_json::Result<T> {
    match std::str::from_utf8(bytes) {
        Ok(text) => serde_json::from_str(text),
        Err(e) => Err(serde::de::Error::custom(format_args!(
            "the JSON is not UTF-8 at byte {}",
            e.valid_up_to()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn reads_what_serde_json_reads() {
        for text in [r#"{"a":[1,2.5,"é"],"b":null}"#, "[]", "\"\\u00e9\"", " 1 "] {
            let want: Value = serde_json::from_slice(text.as_bytes()).unwrap();
            assert_eq!(from_slice::<Value>(text.as_bytes()).unwrap(), want);
        }
        assert_eq!(from_slice::<Value>(b"{\"a\":1}").unwrap(), json!({"a": 1}));
    }

    #[test]
    fn borrows_from_the_bytes() {
        let text: &str = from_slice(b"\"plain\"").unwrap();
        assert_eq!(text, "plain");
    }

    #[test]
    fn refuses_what_serde_json_refuses() {
        for bad in [&b"{"[..], b"", b"[1,]", b"\"\xff\"", b"{\"a\":1} x"] {
            assert!(serde_json::from_slice::<Value>(bad).is_err());
            assert!(from_slice::<Value>(bad).is_err(), "{bad:?}");
        }
        let e = from_slice::<Value>(b"[\"ok\", \"\xc3\"]").unwrap_err();
        assert_eq!(e.to_string(), "the JSON is not UTF-8 at byte 8");
    }
}
