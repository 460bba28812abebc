//! Image globs (`images::glob`): a pattern and a subject, separated by the
//! first NUL byte, compiled and matched.
#![no_main]

use ivpol_guest::images::glob::{image_matches_glob, Glob};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let parts = ivpol_fuzz::split(data, 2);
    let Ok(pattern) = std::str::from_utf8(parts[0]) else {
        return;
    };
    let subject = parts
        .get(1)
        .and_then(|s| std::str::from_utf8(s).ok())
        .unwrap_or("ghcr.io/kyverno/test-verify-image:signed");
    if let Ok(glob) = Glob::compile(pattern) {
        let _ = glob.pattern();
        let _ = image_matches_glob(&glob, subject);
        let _ = glob.matches(pattern);
    }
});
