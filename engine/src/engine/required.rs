//! `validationConfigurations.required` (`docs/compatibility.md`): every matched image
//! must have passed a cryptographic check by SOME policy in the same request.
//!
//! The record is shared by all policies of one request and only ever ORs in
//! successes, so a catch-all `required` policy can rely on checks others made.

use std::collections::BTreeMap;

ivpol_verify::debug_as_display!(Unverified);
/// Why a `required` policy's matched image fails it (Kyverno's texts).
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unverified {
    /// No policy of the request tried to verify it.
    #[error(
        "image {0} is not verified: no policy performed a signature or attestation check on it"
    )]
    NotChecked(String),
    /// Every attempt failed.
    #[error("image {0} failed signature or attestation verification")]
    Failed(String),
}

#[derive(Debug, Default)]
/// Which images a verification function tried in this evaluation, and whether one verified each.
pub struct Verifications {
    by_image: BTreeMap<String, bool>,
}

impl Verifications {
    /// Records a verification attempt for `image`.
    pub fn record(&mut self, image: &str, verified: bool) {
        // Every policy of a request records the same images: look before
        // copying the name.
        match self.by_image.get_mut(image) {
            Some(entry) => *entry |= verified,
            None => {
                self.by_image.insert(image.to_string(), verified);
            }
        }
    }

    /// The `required` check for a policy's matched images, with Kyverno's messages.
    pub fn enforce(&self, images: &[String]) -> Result<(), Unverified> {
        for image in images {
            match self.by_image.get(image) {
                None => return Err(Unverified::NotChecked(image.clone())),
                Some(false) => return Err(Unverified::Failed(image.clone())),
                Some(true) => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_for_unattempted_and_failed() {
        let mut v = Verifications::default();
        let imgs = vec!["a".to_string()];
        assert_eq!(v.enforce(&imgs), Err(Unverified::NotChecked("a".into())));
        v.record("a", false);
        assert_eq!(v.enforce(&imgs), Err(Unverified::Failed("a".into())));
        // Kyverno's text for the one users see most.
        assert_eq!(
            Unverified::Failed("a".into()).to_string(),
            "image a failed signature or attestation verification"
        );
        v.record("a", true);
        v.record("a", false);
        assert_eq!(v.enforce(&imgs), Ok(()));
        assert_eq!(v.enforce(&[]), Ok(()));
    }
}
