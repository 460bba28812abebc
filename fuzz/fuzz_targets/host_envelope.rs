//! The host's uid and namespace scan, used on bodies the component could
//! not judge (too large, malformed, a trap): it never reads past the
//! input nor returns an out-of-bounds uid.
#![no_main]

#[path = "../../server/src/envelope.rs"]
#[allow(dead_code)]
mod envelope;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(uid) = envelope::scan_uid(data) {
        assert!(!uid.is_empty() && uid.len() <= 256, "scan_uid bound");
    }
    if let Some(ns) = envelope::scan_namespace(data) {
        assert!(ns.len() <= 63, "scan_namespace bound");
    }
});
