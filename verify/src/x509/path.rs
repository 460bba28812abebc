//! Path building: from a leaf through candidate issuers to a trust
//! anchor, every certificate valid at the time asked and fit for its place
//! in the path, by the rules the `x509` module's docs list.

use super::{Certificate, Purpose, X509Error, MAX_PATH_LEN};

/// Signature checks one `verify_chain` may spend on path building.
const MAX_SIGNATURE_CHECKS: usize = 64;

const OID_CODE_SIGNING: &str = "1.3.6.1.5.5.7.3.3";
const OID_ANY_EKU: &str = "2.5.29.37.0";

/// Builds and checks a path from `leaf` to a certificate of `roots` (any
/// of which is a trust anchor), using `intermediates` and `roots` as
/// candidate issuers, all valid at `at` (unix seconds). Returns the path
/// leaf..anchor.
pub fn verify_chain(
    leaf: &Certificate,
    intermediates: &[Certificate],
    roots: &[Certificate],
    at: i64,
    purpose: Purpose,
) -> Result<Vec<Certificate>, X509Error> {
    if roots.is_empty() {
        return Err(X509Error::NoRoots);
    }
    leaf.check_valid_at(at)?;
    leaf.check_critical_extensions()?;
    check_leaf_purpose(leaf, purpose)?;
    if roots.iter().any(|r| r == leaf) {
        return Ok(vec![leaf.clone()]);
    }
    let mut path = vec![leaf.clone()];
    let mut budget = MAX_SIGNATURE_CHECKS;
    let mut last_error = None;
    if build(
        &mut path,
        intermediates,
        roots,
        at,
        purpose,
        &mut budget,
        &mut last_error,
    ) {
        return Ok(path);
    }
    Err(match last_error {
        Some(e) => X509Error::NoChain {
            subject: leaf.subject(),
            source: Box::new(e),
        },
        None => X509Error::NoIssuer {
            subject: leaf.subject(),
            issuer: leaf.cert.tbs_certificate().issuer().to_string(),
        },
    })
}

fn check_leaf_purpose(leaf: &Certificate, purpose: Purpose) -> Result<(), X509Error> {
    if purpose != Purpose::CodeSigning {
        return Ok(());
    }
    // No EKU extension means any usage (Go's crypto/x509 rule).
    let eku = leaf.ext_key_usage()?;
    if eku.is_some_and(|eku| {
        !eku.iter()
            .any(|o| o == OID_CODE_SIGNING || o == OID_ANY_EKU)
    }) {
        return Err(X509Error::NotCodeSigning(leaf.subject()));
    }
    if let Some(ku) = leaf.key_usage()? {
        if !ku.digital_signature() {
            return Err(X509Error::NoDigitalSignature(leaf.subject()));
        }
    }
    Ok(())
}

/// Checks `issuer` may issue for a path with `below` CA certificates under
/// it (excluding the leaf).
fn check_issuer(
    issuer: &Certificate,
    below: usize,
    at: i64,
    purpose: Purpose,
) -> Result<(), X509Error> {
    issuer.check_valid_at(at)?;
    issuer.check_critical_extensions()?;
    match issuer.basic_constraints()? {
        Some(bc) if bc.ca => {
            if let Some(max) = bc.path_len_constraint {
                if below > usize::from(max) {
                    return Err(X509Error::PathLength {
                        subject: issuer.subject(),
                        max,
                        below,
                    });
                }
            }
        }
        _ => return Err(X509Error::NotCa(issuer.subject())),
    }
    if let Some(ku) = issuer.key_usage()? {
        if !ku.key_cert_sign() {
            return Err(X509Error::NoKeyCertSign(issuer.subject()));
        }
    }
    if purpose == Purpose::CodeSigning {
        if let Some(eku) = issuer.ext_key_usage()? {
            if !eku
                .iter()
                .any(|o| o == OID_CODE_SIGNING || o == OID_ANY_EKU)
            {
                return Err(X509Error::CaNotCodeSigning(issuer.subject()));
            }
        }
    }
    Ok(())
}

fn build(
    path: &mut Vec<Certificate>,
    intermediates: &[Certificate],
    roots: &[Certificate],
    at: i64,
    purpose: Purpose,
    budget: &mut usize,
    last_error: &mut Option<X509Error>,
) -> bool {
    let Some(current) = path.last().cloned() else {
        return false;
    };
    let issuer_name = current.issuer_der();
    // Anchors first, so the shortest path to a root wins.
    let candidates = roots
        .iter()
        .map(|c| (c, true))
        .chain(intermediates.iter().map(|c| (c, false)));
    for (candidate, is_root) in candidates {
        if candidate.subject_der() != issuer_name {
            continue;
        }
        if path.iter().any(|p| p == candidate) {
            continue;
        }
        let is_anchor = is_root || roots.iter().any(|r| r == candidate);
        if *budget == 0 {
            *last_error = Some(X509Error::Budget);
            return false;
        }
        *budget -= 1;
        if let Err(e) = current.verify_signed_by(candidate) {
            *last_error = Some(e);
            continue;
        }
        // CA certificates below this issuer, the leaf excluded.
        let below = path.len() - 1;
        if let Err(e) = check_issuer(candidate, below, at, purpose) {
            *last_error = Some(e);
            continue;
        }
        path.push(candidate.clone());
        if is_anchor {
            return true;
        }
        if path.len() < MAX_PATH_LEN
            && build(path, intermediates, roots, at, purpose, budget, last_error)
        {
            return true;
        }
        if path.len() >= MAX_PATH_LEN {
            *last_error = Some(X509Error::PathTooLong);
        }
        path.pop();
    }
    false
}
