//! Image references parsed once per instance: a request's policies all
//! resolve the same images, and so do the requests after it. Parsing is a
//! function of the text alone, so a kept result can be handed to any
//! policy; a tag's digest is not kept here (it is resolved per policy,
//! under its registry credentials). A kept parse is shared, not copied:
//! a reference is eight strings.

use super::reference::{self, ImageRef, ImageRefError};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Keyed by the text with foldhash, seeded per process: each of a request's
/// policies looks up each of its images here.
type Memo = HashMap<String, Arc<ImageRef>, foldhash::fast::RandomState>;

/// Most references kept; when full the memo starts again empty.
const MAX_ENTRIES: usize = 256;
/// Longer texts are parsed every time (a reference is far shorter).
const MAX_TEXT_BYTES: usize = 512;

static PARSED: Mutex<Option<Memo>> = Mutex::new(None);

/// [`reference::parse`], answered from the memo when `text` parsed before.
/// Errors are not kept: they are rare, and each carries its input.
pub fn parse(text: &str) -> Result<Arc<ImageRef>, ImageRefError> {
    if text.len() > MAX_TEXT_BYTES {
        return reference::parse(text).map(Arc::new);
    }
    let mut memo = PARSED.lock().unwrap_or_else(|p| p.into_inner());
    let memo = memo.get_or_insert_with(Memo::default);
    if let Some(kept) = memo.get(text) {
        return Ok(kept.clone());
    }
    let parsed = Arc::new(reference::parse(text)?);
    if memo.len() >= MAX_ENTRIES {
        memo.clear();
    }
    memo.insert(text.to_string(), parsed.clone());
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_reference_is_the_parse_of_its_text() {
        let digest = format!("ghcr.io/a/b:1@sha256:{}", "ab".repeat(32));
        for text in [
            "nginx",
            "localhost:5000/x",
            &digest,
            "bad:tag:",
            "UPPER/case",
        ] {
            let first = parse(text).map(|r| (*r).clone()).map_err(|e| e.to_string());
            let again = parse(text).map(|r| (*r).clone()).map_err(|e| e.to_string());
            let direct = reference::parse(text).map_err(|e| e.to_string());
            assert_eq!(first, direct);
            assert_eq!(again, direct);
        }
    }

    #[test]
    fn the_memo_stays_bounded() {
        for i in 0..MAX_ENTRIES * 3 {
            parse(&format!("r.io/app{i}:v")).unwrap();
        }
        let memo = PARSED.lock().unwrap();
        assert!(memo.as_ref().map_or(0, HashMap::len) <= MAX_ENTRIES);
        let long = format!("r.io/{}:v", "a".repeat(MAX_TEXT_BYTES));
        drop(memo);
        let _ = parse(&long);
        let memo = PARSED.lock().unwrap();
        assert!(!memo.as_ref().is_some_and(|m| m.contains_key(&long)));
    }
}
