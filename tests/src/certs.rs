//! Serving certificates as a cluster holds them: a CA and a leaf for
//! `ivpol.ivpol.svc` it signed, as PEM files (`ca.crt`, `tls.crt`,
//! `tls.key`, the names cert-manager writes into a Secret).

use std::path::{Path, PathBuf};

/// Writes `ca.crt`, `tls.crt` and `tls.key` into `dir`; returns the paths
/// of the CA and of the leaf.
pub fn ca_and_leaf(dir: &Path) -> (PathBuf, PathBuf) {
    let ca_key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = params.self_signed(&ca_key).expect("CA");
    let leaf_key = rcgen::KeyPair::generate().expect("key");
    let leaf = rcgen::CertificateParams::new(vec!["ivpol.ivpol.svc".to_string()])
        .expect("params")
        .signed_by(&leaf_key, &ca, &ca_key)
        .expect("leaf");
    let (ca_path, leaf_path) = (dir.join("ca.crt"), dir.join("tls.crt"));
    std::fs::write(&ca_path, ca.pem()).expect("ca");
    std::fs::write(&leaf_path, leaf.pem()).expect("leaf");
    std::fs::write(dir.join("tls.key"), leaf_key.serialize_pem()).expect("key");
    (ca_path, leaf_path)
}

/// A CA certificate file (`ca.crt`) in `dir`.
pub fn ca_file(dir: &Path) -> PathBuf {
    ca_and_leaf(dir).0
}
