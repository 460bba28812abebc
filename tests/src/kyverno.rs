//! Kyverno's own CLI test cases (vendored in `conformance/kyverno/`) made to
//! run offline: their images, `ghcr.io/kyverno/test-verify-image:{signed,
//! unsigned}`, are rebuilt in the local registry under the same repository
//! and tags, signed by the fixture generator's Notary CA with a signed
//! CycloneDX SBOM referrer, and each case's files are copied with `ghcr.io`
//! pointing at that registry and Kyverno's Notary test certificate replaced
//! by the generator's root. Nothing else in the cases is changed.

use crate::fixtures::OCI_MANIFEST;
use crate::sign::notary::NotarySigner;
use crate::sign::notary::{attach_referrer, Format, NotaryCa, NotaryLeaf, NotaryOpts};
use crate::sign::{now, KeyKind, Window};
use crate::verifying::Setup;
use std::path::{Path, PathBuf};

/// The repository Kyverno's IVP tests use, without its registry.
pub const REPO: &str = "kyverno/test-verify-image";

/// The vendored Kyverno test tree.
pub fn conformance_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/kyverno")
}

/// The local stand-in for ghcr.io, with Kyverno's test images.
pub struct KyvernoImages {
    pub setup: Setup,
    /// PEM of the Notary root that signed `:signed` and its SBOM.
    pub root_pem: String,
}

impl KyvernoImages {
    /// Pushes `:signed` (Notary-signed, with a signed CycloneDX SBOM
    /// referrer of type `sbom/cyclone-dx`) and `:unsigned`.
    pub fn push() -> KyvernoImages {
        let setup = Setup::new();
        let p = setup.pusher();
        let ca = NotaryCa::new("ivpol-kyverno-cases");
        let t = now();
        let leaf = ca.leaf(NotaryLeaf::new(
            KeyKind::P256,
            Window::new(t - 3600, t + 86400),
        ));
        let signer = NotarySigner::new(leaf);
        let opts = NotaryOpts::new(Format::Jws);
        let signed = p.image(REPO, "signed", OCI_MANIFEST, "amd64");
        signer.sign(&p, REPO, &signed, &opts);
        let sbom = serde_json::json!({
            "bomFormat": "CycloneDX",
            "specVersion": "1.5",
            "components": [{"type": "application", "name": "test-verify-image"}],
        });
        let (sbom_digest, _) = attach_referrer(
            &p,
            REPO,
            &signed,
            "sbom/cyclone-dx",
            "application/vnd.cyclonedx+json",
            &sbom,
        );
        signer.sign(&p, REPO, &sbom_digest, &opts);
        p.image(REPO, "unsigned", OCI_MANIFEST, "amd64");
        KyvernoImages {
            root_pem: ca.root_pem(),
            setup,
        }
    }

    /// The registry's `HOST:PORT`.
    pub fn addr(&self) -> &str {
        &self.setup.reg.addr
    }

    /// A copy of the case directory `rel` (under `conformance/kyverno/`)
    /// pointed at this registry and trust root.
    pub fn localize(&self, rel: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        copy_dir(&conformance_dir().join(rel), dir.path(), &|text| {
            self.rewrite(text)
        });
        dir
    }

    /// `ghcr.io` → the local registry; every PEM certificate block → the
    /// generator's root, at the block's own indentation.
    pub fn rewrite(&self, text: &str) -> String {
        replace_certificates(&text.replace("ghcr.io", self.addr()), &self.root_pem)
    }
}

fn copy_dir(from: &Path, to: &Path, rewrite: &dyn Fn(&str) -> String) {
    for entry in std::fs::read_dir(from).expect("case directory").flatten() {
        let src = entry.path();
        let dst = to.join(entry.file_name());
        if src.is_dir() {
            std::fs::create_dir_all(&dst).expect("mkdir");
            copy_dir(&src, &dst, rewrite);
        } else {
            let text = std::fs::read_to_string(&src).expect("case file");
            std::fs::write(&dst, rewrite(&text)).expect("write case file");
        }
    }
}

const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
const END: &str = "-----END CERTIFICATE-----";

/// Replaces each certificate block with `pem`, indented like the block.
fn replace_certificates(text: &str, pem: &str) -> String {
    let mut out = String::new();
    let mut in_block = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with(BEGIN) {
            let indent = &line[..line.len() - trimmed.len()];
            for (i, pem_line) in pem.trim_end().lines().enumerate() {
                if i > 0 {
                    out.push('\n');
                }
                out.push_str(indent);
                out.push_str(pem_line);
            }
            out.push('\n');
            in_block = !trimmed.contains(END);
            continue;
        }
        if in_block {
            in_block = !trimmed.starts_with(END);
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::replace_certificates;

    #[test]
    fn certificate_blocks_are_replaced_at_their_indentation() {
        let yaml = "certs:\n  value: |-\n    -----BEGIN CERTIFICATE-----\n    AAAA\n    -----END CERTIFICATE-----\nnext: 1\n";
        let out = replace_certificates(
            yaml,
            "-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\n",
        );
        assert_eq!(
            out,
            "certs:\n  value: |-\n    -----BEGIN CERTIFICATE-----\n    BBBB\n    -----END CERTIFICATE-----\nnext: 1\n"
        );
    }
}
