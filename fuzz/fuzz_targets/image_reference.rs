//! Image references as written in pods (`images::reference::parse`) and
//! every accessor the engine and the OCI client use.
#![no_main]

use ivpol_guest::images::reference::parse;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse(text) {
        Ok(r) => {
            let _ = (r.registry(), r.repository(), r.tag(), r.digest());
            let _ = (r.identifier(), r.contains_digest(), r.original());
            let _ = (r.written_tag(), r.info_registry(), r.info_path());
            let _ = (r.name(), r.tagged_name(), r.to_string());
        }
        Err(e) => {
            let _ = (e.input(), e.reason());
        }
    }
});
