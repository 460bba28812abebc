//! The component's AdmissionRequest decoding (`admission::Request::parse`,
//! the `request` object the host hands over), then the accessors the engine
//! calls on every request.
#![no_main]

use ivpol_guest::admission::{labels_of, Request};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(request) = Request::parse(text) {
        let _ = request.attrs();
        let _ = request.request_attrs();
        let _ = request.is_namespace_object();
        let _ = labels_of(request.resource_object());
    }
});
