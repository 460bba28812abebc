//! Where the vendored cosign test data lives (`conformance/cosign`), for
//! this crate's tests and, with the `test-support` feature, the guest's.

/// containers/image's signature fixtures (keys, signatures, certificates).
pub const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../conformance/cosign/containers-image/signature/fixtures/"
);

/// Images and layers derived from those fixtures (`conformance/README.md`).
pub const DERIVED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../conformance/cosign/derived/"
);

/// The text of a test data file; a missing file fails the test that asked.
pub fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}
