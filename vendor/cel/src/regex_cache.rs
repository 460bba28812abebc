//! Compiled patterns kept for the next call (a patch of ivpol's, see
//! `PATCH.md`): `matches` compiled its pattern on every call, and building a
//! regex costs far more than running it, so a policy that checks each of a
//! pod's images against one pattern paid that cost per image and request.
//!
//! The cache is bounded three ways, since a pattern may come from the
//! object under review: at most [`MAX_KEPT`] patterns (a full cache is
//! emptied), none longer than [`MAX_PATTERN_BYTES`], and each kept regex
//! built with small size limits for its program and its lazy DFA's cache,
//! so that all of them together hold a few MiB at most. A pattern that does
//! not fit those limits is compiled as before, every time, with the crate's
//! default limits: what matches, and what is an error, is the same with and
//! without the cache.

use regex::{Regex, RegexBuilder};
use std::cell::RefCell;
use std::collections::HashMap;

/// The most patterns kept at once.
pub const MAX_KEPT: usize = 16;
/// The longest pattern kept, in bytes.
pub const MAX_PATTERN_BYTES: usize = 512;
/// The size limit of a kept regex's compiled program, and of its lazy
/// DFA's cache (the crate's defaults are 10 MiB and 2 MiB).
const KEPT_SIZE_LIMIT: usize = 128 << 10;

thread_local! {
    static KEPT: RefCell<HashMap<String, Regex>> = RefCell::new(HashMap::new());
}

/// `pattern` compiled, as `Regex::new` compiles it, from the cache when it
/// is there.
pub fn compiled(pattern: &str) -> Result<Regex, regex::Error> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Regex::new(pattern);
    }
    if let Some(kept) = KEPT.with(|k| k.borrow().get(pattern).cloned()) {
        return Ok(kept);
    }
    let small = RegexBuilder::new(pattern)
        .size_limit(KEPT_SIZE_LIMIT)
        .dfa_size_limit(KEPT_SIZE_LIMIT)
        .build();
    match small {
        Ok(regex) => {
            KEPT.with(|k| {
                let mut kept = k.borrow_mut();
                if kept.len() >= MAX_KEPT {
                    kept.clear();
                }
                kept.insert(pattern.to_string(), regex.clone());
            });
            Ok(regex)
        }
        // Invalid, or too large to keep: as without the cache.
        Err(_) => Regex::new(pattern),
    }
}

/// How many patterns are kept now.
#[cfg(test)]
fn kept() -> usize {
    KEPT.with(|k| k.borrow().len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_is_compiled_once_and_matches_as_before() {
        let before = kept();
        let re = compiled("^ghcr\\.io/kept-once/.*$").expect("compiles");
        assert!(re.is_match("ghcr.io/kept-once/app:v1"));
        assert!(!re.is_match("docker.io/kept-once/app:v1"));
        let again = compiled("^ghcr\\.io/kept-once/.*$").expect("compiles");
        assert!(again.is_match("ghcr.io/kept-once/x"));
        assert!(kept() <= before + 1 && kept() >= 1);
    }

    #[test]
    fn the_cache_stays_within_its_bound() {
        for i in 0..(3 * MAX_KEPT) {
            let re = compiled(&format!("^bound-{i}$")).expect("compiles");
            assert!(re.is_match(&format!("bound-{i}")));
            assert!(kept() <= MAX_KEPT);
        }
    }

    #[test]
    fn errors_and_large_patterns_are_as_without_the_cache() {
        let err = compiled("(").expect_err("invalid");
        assert_eq!(
            err.to_string(),
            Regex::new("(").expect_err("invalid").to_string()
        );
        // Too large for the kept limits, within the crate's defaults.
        let large = "\\w{200}";
        assert!(RegexBuilder::new(large)
            .size_limit(KEPT_SIZE_LIMIT)
            .build()
            .is_err());
        let re = compiled(large).expect("compiles with the default limits");
        assert!(re.is_match(&"a".repeat(200)));
        let long = format!("^{}$", "a".repeat(MAX_PATTERN_BYTES));
        assert!(compiled(&long).expect("compiles").is_match(&"a".repeat(MAX_PATTERN_BYTES)));
    }
}
