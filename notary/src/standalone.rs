//! Verification of a Notary Project envelope outside admission, with the
//! trust stores given directly instead of by a policy's attestor: `ivpol
//! notary verify`, through the component's `notary` export. The same
//! verifier the engine uses for Notary attestors; the cosign and Sigstore
//! bundle counterparts are `ivpol_verify::standalone`, whose
//! [`StandaloneError`] this shares.

use super::{Target, Trust};
use ivpol_verify::standalone::StandaloneError;
use ivpol_verify::x509::Certificate;
use ivpol_verify::VerifyError;

/// Verifies one Notary Project envelope (`media_type`
/// `application/jose+json` or `application/cose`) for `target` at `now`,
/// under the trust policy a Kyverno `notary` attestor builds: `certs` is
/// its `certs` (PEM, the `ca` trust store), `tsa_certs` its `tsaCerts`.
pub fn verify_notary(
    envelope: &[u8],
    media_type: &str,
    target: &Target,
    certs: &str,
    tsa_certs: Option<&str>,
    now: i64,
) -> Result<(), VerifyError> {
    let trust = Trust {
        roots: Certificate::read_pem(certs).map_err(StandaloneError::Certs)?,
        tsa_roots: match tsa_certs {
            Some(pem) => Certificate::read_pem(pem).map_err(StandaloneError::TsaCerts)?,
            None => Vec::new(),
        },
        signing_authority_roots: Vec::new(),
    };
    super::verify(envelope, media_type, target, &trust, now).map(|_| ())
}
