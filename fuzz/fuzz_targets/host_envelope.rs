//! The host's AdmissionReview decoding: the full parse and the cheap uid
//! scan used on bodies that are too large or malformed.
#![no_main]

#[path = "../../host/src/server/envelope.rs"]
#[allow(dead_code)]
mod envelope;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let uid = envelope::scan_uid(data);
    if let Some(uid) = &uid {
        assert!(!uid.is_empty() && uid.len() <= 256, "scan_uid bound");
    }
    if let Ok(review) = envelope::parse(data) {
        assert!(!review.uid.is_empty());
    }
});
