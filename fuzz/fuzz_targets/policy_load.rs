//! Policy documents (multi-document YAML or JSON): `policy::load` parses,
//! validates, autogenerates and compiles every CEL expression.
#![no_main]

use ivpol_guest::policy::{load, SourceDocument};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let set = load(&[SourceDocument {
        source: "fuzz.yaml".into(),
        content: text.into(),
    }]);
    // A document either loads or says why not.
    let _ = (
        set.policies.len(),
        set.exceptions.len(),
        set.diagnostics.len(),
    );
});
