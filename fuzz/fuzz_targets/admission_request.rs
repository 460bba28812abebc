//! The component's AdmissionRequest decoding (`admission::Request::parse`,
//! the `request` object the host hands over), then the accessors the engine
//! calls on every request, and that an object's one-pass reading and its
//! tree agree on whether there is an object.
#![no_main]

use ivpol_guest::admission::Request;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(request) = Request::parse(text) {
        let _ = request.attrs();
        let _ = request.request_attrs();
        let _ = request.is_namespace_object();
        for object in [&request.object, &request.old_object] {
            let _ = object.labels();
            let _ = object.uid();
            let _ = object.image_lists();
            // An object that reads is one whose tree parses.
            assert_eq!(object.is_null(), object.tree().is_null());
        }
    }
});
