//! Vendored notation envelopes (`conformance/notary/`) with the trust
//! store and target descriptor each one verifies against, run through
//! `ivpol notary verify`. The e2e tests check their outcomes; the bench
//! times the same envelopes natively and in the component.

use crate::sign::notary::Format;
use crate::{ivpol_bin, precompile_cache_dir};
use std::path::{Path, PathBuf};
use std::process::Command;

const DOCKER_V2: &str = "application/vnd.docker.distribution.manifest.v2+json";
const TRUST_STORE: &str = "notation-go/verifier/testdata/truststore/x509";

/// One envelope and what verifies it.
#[derive(Clone)]
pub struct NotaryCase {
    pub name: &'static str,
    pub envelope: PathBuf,
    pub format: Format,
    /// The `ca` trust store (PEM or DER files).
    pub certs: Vec<PathBuf>,
    /// The `tsa` trust store.
    pub tsa_certs: Vec<PathBuf>,
    pub target_media_type: &'static str,
    pub target_digest: &'static str,
    pub target_size: u64,
}

impl NotaryCase {
    /// `ivpol notary verify` on this case, with the shared precompile
    /// cache; add flags (or replace the certs) before running it.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(ivpol_bin());
        cmd.args(["notary", "--cache-dir"])
            .arg(precompile_cache_dir())
            .args(["verify", "--envelope"])
            .arg(&self.envelope)
            .args(["--envelope-type", envelope_type(self.format)])
            .args(["--target-media-type", self.target_media_type])
            .args(["--target-size", &self.target_size.to_string()]);
        for c in &self.certs {
            cmd.arg("--certs").arg(c);
        }
        for c in &self.tsa_certs {
            cmd.arg("--tsa-certs").arg(c);
        }
        cmd
    }
}

/// `--envelope-type`'s name for `format`.
fn envelope_type(format: Format) -> &'static str {
    match format {
        Format::Jws => "jws",
        Format::Cose => "cose",
    }
}

/// `conformance/notary/<path>`.
pub fn notary_file(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/notary")
        .join(path)
}

/// Two envelopes that verify: notation-go's JWS mock (PS384, a CA chain,
/// no timestamp) and its COSE envelope with an RFC 3161 countersignature
/// (a DER TSA root).
pub fn notary_cases() -> [NotaryCase; 2] {
    [
        NotaryCase {
            name: "jws-ca",
            envelope: notary_file("notation-go/internal/mock/testdata/ca_valid_sig_env.json"),
            format: Format::Jws,
            certs: vec![notary_file(&format!(
                "{TRUST_STORE}/ca/valid-trust-store/NotationTestRoot.pem"
            ))],
            tsa_certs: Vec::new(),
            target_media_type: DOCKER_V2,
            target_digest:
                "sha256:60043cf45eaebc4c0867fea485a039b598f52fd09fd5b07b0b2d2f88fad9d74e",
            target_size: 528,
        },
        NotaryCase {
            name: "cose-timestamped",
            envelope: notary_file(
                "notation-go/verifier/testdata/timestamp/sigEnv/coseWithTimestamp.sig",
            ),
            format: Format::Cose,
            certs: vec![notary_file(&format!(
                "{TRUST_STORE}/ca/valid-trust-store/TestTimestamp.crt"
            ))],
            tsa_certs: vec![notary_file(&format!(
                "{TRUST_STORE}/tsa/test-timestamp/globalsignRoot.cer"
            ))],
            target_media_type: DOCKER_V2,
            target_digest:
                "sha256:c0669ef34cdc14332c0f1ab0c2c01acb91d96014b172f1a76f3a39e63d1f0bda",
            target_size: 528,
        },
    ]
}
