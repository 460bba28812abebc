//! Fulcio identities and Kyverno's `keyless.identities[]`
//! rules, matched as cosign's `CheckCertificatePolicy` does, with
//! `additionalExtensions` and `subjectExpression` enforced too.
//!
//! Specification: <https://github.com/sigstore/fulcio/blob/main/docs/certificate-specification.md>

use std::collections::BTreeMap;

use der::Decode;
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::ext::pkix::SubjectAltName;

use super::Certificate;
use crate::{Reason, Result, Shared};

crate::debug_as_display!(FulcioError);
/// Why a Fulcio certificate's identity could not be read, or did not
/// match. A mismatch is [`Reason::Identity`]; the rest is unreadable.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum FulcioError {
    /// The subjectAltName extension does not parse.
    #[error("invalid subjectAltName extension: {0}")]
    SubjectAltName(#[source] der::Error),
    /// Fulcio's username otherName does not parse.
    #[error("invalid Fulcio username otherName: {0}")]
    Username(#[source] der::Error),
    /// The issuer extension (v2, 1.3.6.1.4.1.57264.1.8) does not parse.
    #[error("invalid Fulcio issuer (1.3.6.1.4.1.57264.1.8): {0}")]
    IssuerV2(#[source] der::Error),
    /// The issuer extension (v1, 1.3.6.1.4.1.57264.1.1) is not UTF-8.
    #[error("Fulcio issuer (1.3.6.1.4.1.57264.1.1) is not UTF-8")]
    IssuerV1,
    /// An identity regular expression over the length bound.
    #[error("identity regular expression too long")]
    RegexTooLong,
    /// An identity regular expression that does not compile.
    #[error("malformed identity regular expression {pattern:?}: {source}")]
    BadRegex {
        /// The expression.
        pattern: String,
        /// The compiler's error.
        source: Shared<regex::Error>,
    },
    /// No expected identity matched (Kyverno's wording: what the
    /// certificate holds, with its extensions when rules asked for some).
    #[error("none of the expected identities matched what was in the certificate, got subjects [{}] with issuer {}{}", .subjects.join(", "), .issuer.as_deref().unwrap_or("(none)"), extensions_text(.extensions.as_ref()))]
    NoIdentityMatched {
        /// The certificate's subject alternative names.
        subjects: Vec<String>,
        /// Its issuer, if it names one.
        issuer: Option<String>,
        /// Its GitHub workflow extensions, when a rule asked for some.
        extensions: Option<BTreeMap<String, String>>,
    },
}

/// ` and extensions [k="v", ...]`, as Kyverno's message shows them.
fn extensions_text(extensions: Option<&BTreeMap<String, String>>) -> String {
    let Some(extensions) = extensions else {
        return String::new();
    };
    let have: Vec<String> = extensions
        .iter()
        .map(|(k, v)| format!("{k}={v:?}"))
        .collect();
    format!(" and extensions [{}]", have.join(", "))
}

impl FulcioError {
    /// The class of this failure.
    pub fn reason(&self) -> Reason {
        match self {
            FulcioError::NoIdentityMatched { .. } => Reason::Identity,
            _ => Reason::Malformed,
        }
    }
}

const OID_OTHERNAME_USERNAME: &str = "1.3.6.1.4.1.57264.1.7";
const OID_ISSUER_V2: &str = "1.3.6.1.4.1.57264.1.8";
const OID_ISSUER_V1: &str = "1.3.6.1.4.1.57264.1.1";
/// Kyverno's `keyless.additionalExtensions` keys (cosign's
/// `CertExtensions` names) and the deprecated Fulcio v1 OIDs they name, in
/// that order (Fulcio `docs/oid-info.md`). The v1 extension values are the
/// raw claim bytes, not DER-wrapped; cosign compares `string(ext.Value)`.
pub const GITHUB_WORKFLOW_EXTENSIONS: [(&str, &str); 5] = [
    ("githubWorkflowTrigger", "1.3.6.1.4.1.57264.1.2"),
    ("githubWorkflowSha", "1.3.6.1.4.1.57264.1.3"),
    ("githubWorkflowName", "1.3.6.1.4.1.57264.1.4"),
    ("githubWorkflowRepository", "1.3.6.1.4.1.57264.1.5"),
    ("githubWorkflowRef", "1.3.6.1.4.1.57264.1.6"),
];

/// The OID an `additionalExtensions` key names, if ivpol knows the key.
pub fn extension_oid(key: &str) -> Option<&'static str> {
    GITHUB_WORKFLOW_EXTENSIONS
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, oid)| *oid)
}

/// Longest regular expression accepted in a rule.
const MAX_REGEX: usize = 4096;

/// Who a certificate was issued to: its SANs (emails, URIs, DNS names and
/// Fulcio username otherNames, in certificate order), the OIDC issuer and
/// the GitHub workflow extensions (by `additionalExtensions` key).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Identity {
    /// The subject alternative names, in certificate order.
    pub sans: Vec<String>,
    /// The OIDC issuer (Fulcio's v2 extension, else v1).
    pub issuer: Option<String>,
    /// The raw-string Fulcio v1 extensions (OIDs .2 to .6) the certificate
    /// carries, keyed by their `additionalExtensions` name. A value that is
    /// not UTF-8 is left out: it can equal no policy string.
    pub extensions: BTreeMap<String, String>,
}

impl Identity {
    /// Reads the identity of `cert`. A malformed SAN or issuer extension is
    /// an error.
    pub fn of(cert: &Certificate) -> Result<Identity, FulcioError> {
        let mut sans = Vec::new();
        let san = cert
            .inner()
            .tbs_certificate()
            .get_extension::<SubjectAltName>()
            .map_err(FulcioError::SubjectAltName)?;
        if let Some((_, SubjectAltName(names))) = san {
            for name in names {
                match name {
                    GeneralName::Rfc822Name(s) => sans.push(s.to_string()),
                    GeneralName::UniformResourceIdentifier(s) => sans.push(s.to_string()),
                    GeneralName::DnsName(s) => sans.push(s.to_string()),
                    GeneralName::OtherName(other)
                        if other.type_id.to_string() == OID_OTHERNAME_USERNAME =>
                    {
                        let s = other
                            .value
                            .decode_as::<der::asn1::Utf8StringRef<'_>>()
                            .map_err(FulcioError::Username)?;
                        sans.push(s.to_string());
                    }
                    _ => {}
                }
            }
        }
        let issuer = if let Some(v2) = cert.extension(OID_ISSUER_V2) {
            let s = der::asn1::Utf8StringRef::from_der(v2).map_err(FulcioError::IssuerV2)?;
            Some(s.to_string())
        } else if let Some(v1) = cert.extension(OID_ISSUER_V1) {
            Some(String::from_utf8(v1.to_vec()).map_err(|_| FulcioError::IssuerV1)?)
        } else {
            None
        };
        let extensions =
            ivpol_refs::sort::map(GITHUB_WORKFLOW_EXTENSIONS.iter().filter_map(|(key, oid)| {
                let value = std::str::from_utf8(cert.extension(oid)?).ok()?;
                Some((key.to_string(), value.to_string()))
            }));
        Ok(Identity {
            sans,
            issuer,
            extensions,
        })
    }
}

/// One entry of Kyverno's `keyless.identities[]`, with the attestor's
/// `additionalExtensions`. A missing (or empty) field imposes nothing;
/// every field given must hold (an exact value and a regexp for the same
/// name both apply: ignoring either would let a policy admit more than it
/// says). Regexps are unanchored searches, as Go's `regexp.MatchString` in
/// cosign: write `^…$` to match a whole value.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IdentityRule {
    /// The OIDC issuer, exactly.
    pub issuer: Option<String>,
    /// The subject (a SAN), exactly.
    pub subject: Option<String>,
    /// A regexp the issuer must match.
    pub issuer_regexp: Option<String>,
    /// A regexp the subject must match.
    pub subject_regexp: Option<String>,
    /// The regexp `subjectExpression` evaluated to for this request,
    /// matched against the SANs as `subject_regexp` is.
    pub subject_expression: Option<String>,
    /// `additionalExtensions`: extension name (a key of
    /// [`GITHUB_WORKFLOW_EXTENSIONS`]) to the exact value required. A
    /// certificate without the extension does not match.
    pub extensions: BTreeMap<String, String>,
}

fn nonempty(s: &Option<String>) -> Option<&str> {
    s.as_deref().filter(|s| !s.is_empty())
}

fn compile(re: &str) -> Result<regex::Regex, FulcioError> {
    if re.len() > MAX_REGEX {
        return Err(FulcioError::RegexTooLong);
    }
    regex::RegexBuilder::new(re)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| FulcioError::BadRegex {
            pattern: re.to_string(),
            source: e.into(),
        })
}

impl IdentityRule {
    /// Checks the rule's regular expressions compile.
    pub fn validate(&self) -> Result<(), FulcioError> {
        for re in [
            nonempty(&self.issuer_regexp),
            nonempty(&self.subject_regexp),
            self.subject_expression.as_deref(),
        ]
        .into_iter()
        .flatten()
        {
            compile(re)?;
        }
        Ok(())
    }

    /// Whether `id` satisfies this rule (false for a malformed regexp).
    pub fn matches(&self, id: &Identity) -> bool {
        let issuer = id.issuer.as_deref().unwrap_or("");
        let issuer_ok = nonempty(&self.issuer_regexp)
            .is_none_or(|re| compile(re).is_ok_and(|re| re.is_match(issuer)))
            && nonempty(&self.issuer).is_none_or(|want| want == issuer);
        let san_matches = |re: Option<&str>| {
            re.is_none_or(|re| compile(re).is_ok_and(|re| id.sans.iter().any(|s| re.is_match(s))))
        };
        let subject_ok = san_matches(nonempty(&self.subject_regexp))
            && san_matches(self.subject_expression.as_deref())
            && nonempty(&self.subject).is_none_or(|want| id.sans.iter().any(|s| s == want));
        let extensions_ok = self
            .extensions
            .iter()
            .all(|(key, want)| id.extensions.get(key) == Some(want));
        issuer_ok && subject_ok && extensions_ok
    }
}

/// At least one rule must match (no rules: anything matches, as cosign).
pub fn identities_match(rules: &[IdentityRule], id: &Identity) -> Result<(), FulcioError> {
    for rule in rules {
        rule.validate()?;
    }
    if rules.is_empty() || rules.iter().any(|r| r.matches(id)) {
        return Ok(());
    }
    let extensions = rules
        .iter()
        .any(|r| !r.extensions.is_empty())
        .then(|| id.extensions.clone());
    Err(FulcioError::NoIdentityMatched {
        subjects: id.sans.clone(),
        issuer: id.issuer.clone(),
        extensions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::x509::tests::{certs, DERIVED};

    fn rule(issuer: &str, subject: &str, ire: &str, sre: &str) -> IdentityRule {
        let o = |s: &str| (!s.is_empty()).then(|| s.to_string());
        IdentityRule {
            issuer: o(issuer),
            subject: o(subject),
            issuer_regexp: o(ire),
            subject_regexp: o(sre),
            ..Default::default()
        }
    }

    #[test]
    fn fulcio_identity() {
        let leaf = &certs(&format!(
            "{DERIVED}dir-img-cosign-fulcio-rekor-valid/cert.pem"
        ))[0];
        let id = Identity::of(leaf).unwrap();
        assert_eq!(id.sans, vec!["mitr@redhat.com"]);
        assert_eq!(id.issuer.as_deref(), Some("https://github.com/login/oauth"));
        let ok = |r: IdentityRule| identities_match(&[r], &id).is_ok();
        let refused = |r: IdentityRule| {
            matches!(
                identities_match(&[r], &id),
                Err(FulcioError::NoIdentityMatched { .. })
            )
        };
        assert!(ok(rule(
            "https://github.com/login/oauth",
            "mitr@redhat.com",
            "",
            ""
        )));
        assert!(ok(rule("", "mitr@redhat.com", "", "")));
        assert!(ok(rule("", "", "github", "")));
        assert!(ok(rule("", "", "", "@redhat\\.com$")));
        assert!(ok(IdentityRule::default()));
        assert!(refused(rule(
            "https://accounts.google.com",
            "mitr@redhat.com",
            "",
            ""
        )));
        assert!(refused(rule("", "this-does-not-match@example.com", "", "")));
        assert!(refused(rule("", "", "", "^redhat")));
        // An exact value and a regexp for the same name must both hold.
        assert!(refused(rule("wrong", "", "oauth$", "")));
        assert!(ok(rule("https://github.com/login/oauth", "", "oauth$", "")));
        assert!(refused(rule("", "x@y", "", "redhat")));
        assert!(ok(rule("", "mitr@redhat.com", "", "redhat")));
        let e = identities_match(&[rule("", "x@y", "", "")], &id).unwrap_err();
        assert!(matches!(
            &e,
            FulcioError::NoIdentityMatched { subjects, issuer: Some(issuer), extensions: None }
                if subjects == &["mitr@redhat.com"] && issuer == "https://github.com/login/oauth"
        ));
        assert_eq!(e.reason(), Reason::Identity);
        // Kyverno's message, which users see.
        assert_eq!(
            e.to_string(),
            "none of the expected identities matched what was in the certificate, \
             got subjects [mitr@redhat.com] with issuer https://github.com/login/oauth"
        );
        let mut wants_trigger = IdentityRule::default();
        wants_trigger
            .extensions
            .insert("githubWorkflowTrigger".into(), "push".into());
        let e = identities_match(&[wants_trigger], &id).unwrap_err();
        assert!(
            matches!(&e, FulcioError::NoIdentityMatched { extensions: Some(have), .. } if have.is_empty()),
            "{e}"
        );
        assert!(e.to_string().ends_with(" and extensions []"), "{e}");
        assert!(matches!(
            identities_match(&[rule("", "", "(", "")], &id),
            Err(FulcioError::BadRegex { .. })
        ));
        assert!(identities_match(&[], &id).is_ok());
        assert!(identities_match(
            &[
                rule("", "nope", "", ""),
                rule("", "mitr@redhat.com", "", "")
            ],
            &id
        )
        .is_ok());
    }

    #[test]
    fn pki_identity() {
        let leaf = &certs(&format!("{DERIVED}dir-img-cosign-pki-valid/cert.pem"))[0];
        let id = Identity::of(leaf).unwrap();
        assert_eq!(id.sans, vec!["qiwan@redhat.com", "myhost.example.com"]);
        assert_eq!(id.issuer, None);
    }
}
