//! Artifact references: `[oci://]REGISTRY/REPOSITORY[:TAG][@sha256:HEX]`.
//!
//! Parsed by the reference parser the component uses (`ivpol_refs`, with
//! go-containerregistry's grammar: no host-like first segment means Docker
//! Hub, as `docker pull` reads it), then held to the distribution spec's
//! stricter grammar for names this host pushes and pulls, so that a typo
//! fails before any network call.

use anyhow::{bail, Result};
use std::fmt;

/// A reference as `push`, `pull` and `inspect` take it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reference {
    /// `host[:port]` as written, lowercased (Docker Hub as `docker.io`).
    pub registry: String,
    /// The repository, `library/` added for a one-segment Docker Hub name.
    pub repository: String,
    /// The tag as written, kept beside a digest.
    pub tag: Option<String>,
    /// `sha256:<64 lowercase hex>`
    pub digest: Option<String>,
}

impl Reference {
    /// Parses `input`, with or without the `oci://` prefix.
    pub(crate) fn parse(input: &str) -> Result<Reference> {
        let s = input.strip_prefix("oci://").unwrap_or(input);
        if s.contains("://") {
            bail!("{input:?} is not an OCI reference (REGISTRY/REPOSITORY[:TAG][@sha256:DIGEST])");
        }
        let image = match ivpol_refs::parse(s) {
            Ok(image) => image,
            Err(e) => bail!(
                "{input:?} is not an OCI reference (REGISTRY/REPOSITORY[:TAG][@sha256:DIGEST]): {}",
                e.reason()
            ),
        };
        check_repository(image.repository(), input)?;
        if let Some(t) = image.written_tag() {
            check_tag(t, input)?;
        }
        Ok(Reference {
            registry: image.info_registry().to_ascii_lowercase(),
            repository: image.repository().to_string(),
            tag: image.written_tag().map(str::to_string),
            digest: image.digest().map(str::to_string),
        })
    }

    /// Where the distribution API is served: Docker Hub's API host differs
    /// from its name.
    pub(crate) fn api_host(&self) -> &str {
        ivpol_refs::api_host(&self.registry)
    }

    /// The tag or digest a manifest is fetched by (`latest` by default).
    pub(crate) fn manifest_reference(&self) -> &str {
        self.digest
            .as_deref()
            .or(self.tag.as_deref())
            .unwrap_or("latest")
    }

    /// The same repository and tag, pinned to `digest`.
    pub(crate) fn pinned(&self, digest: &str) -> Reference {
        Reference {
            digest: Some(digest.to_string()),
            ..self.clone()
        }
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)?;
        if let Some(t) = &self.tag {
            write!(f, ":{t}")?;
        }
        if let Some(d) = &self.digest {
            write!(f, "@{d}")?;
        }
        Ok(())
    }
}

/// `d` if it is a sha256 digest (`sha256:<64 lowercase hex>`), the only
/// algorithm the host writes and reads; `input` names it in the error.
pub(crate) fn parse_digest(d: &str, input: &str) -> Result<String> {
    match d.strip_prefix("sha256:") {
        Some(hex)
            if hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) =>
        {
            Ok(d.to_string())
        }
        _ => bail!("{input:?}: the digest {d:?} is not sha256:<64 lowercase hex>"),
    }
}

/// Path components `[a-z0-9]+([._]|__|-+)[a-z0-9]+...`, joined by `/`:
/// go-containerregistry checks only the characters, so `a/b_` or `a//b`
/// would pass it and fail at the registry.
fn check_repository(repo: &str, input: &str) -> Result<()> {
    let component_ok = |c: &str| {
        let b = c.as_bytes();
        let alnum = |x: &u8| x.is_ascii_lowercase() || x.is_ascii_digit();
        !b.is_empty()
            && b.first().is_some_and(alnum)
            && b.last().is_some_and(alnum)
            && b.iter()
                .all(|x| alnum(x) || matches!(x, b'.' | b'_' | b'-'))
            && !c.contains("..")
    };
    if repo.is_empty() || repo.len() > 255 || !repo.split('/').all(component_ok) {
        bail!("{input:?}: {repo:?} is not a valid repository name (lowercase letters, digits and . _ - separators)");
    }
    Ok(())
}

/// A tag starts with a word character (go-containerregistry also takes `.`
/// and `-` there, which the distribution grammar refuses).
fn check_tag(tag: &str, input: &str) -> Result<()> {
    let b = tag.as_bytes();
    let word = |x: &u8| x.is_ascii_alphanumeric() || *x == b'_';
    if b.is_empty()
        || b.len() > 128
        || !word(&b[0])
        || !b.iter().all(|x| word(x) || matches!(x, b'.' | b'-'))
    {
        bail!("{input:?}: {tag:?} is not a valid tag");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn parses_registry_port_tag_and_digest() {
        let r = Reference::parse("oci://127.0.0.1:5000/ivpol/policy:v1").expect("valid");
        assert_eq!(r.registry, "127.0.0.1:5000");
        assert_eq!(r.repository, "ivpol/policy");
        assert_eq!(r.tag.as_deref(), Some("v1"));
        assert_eq!(r.manifest_reference(), "v1");
        let r = Reference::parse(&format!("ghcr.io/a/b:v1@{D}")).expect("valid");
        assert_eq!(r.manifest_reference(), D);
        assert_eq!(r.to_string(), format!("ghcr.io/a/b:v1@{D}"));
        let r = Reference::parse("localhost:5000/x").expect("valid");
        assert_eq!(
            (r.registry.as_str(), r.manifest_reference()),
            ("localhost:5000", "latest")
        );
    }

    #[test]
    fn docker_hub_names_are_expanded() {
        let r = Reference::parse("nginx:1").expect("valid");
        assert_eq!(
            (r.registry.as_str(), r.repository.as_str()),
            ("docker.io", "library/nginx")
        );
        assert_eq!(r.api_host(), "registry-1.docker.io");
        let r = Reference::parse("acme/policy").expect("valid");
        assert_eq!(r.repository, "acme/policy");
    }

    #[test]
    fn refuses_malformed_references() {
        for (bad, why) in [
            ("", "a repository name must be specified"),
            ("oci://", "a repository name must be specified"),
            ("https://ghcr.io/a/b", "is not an OCI reference"),
            ("ghcr.io/UPPER/case", "repository can only contain"),
            ("ghcr.io/a/b:", "must specify a tag name"),
            ("ghcr.io/a/b:-tag", "is not a valid tag"),
            ("ghcr.io/a/b@sha256:abc", "invalid checksum digest length"),
            ("ghcr.io/a/b@md5:0123", "unsupported digest algorithm"),
            ("ghcr.io//b", "is not a valid repository name"),
            ("ghcr.io/a b", "repository can only contain"),
            ("ghcr.io/a/b_", "is not a valid repository name"),
        ] {
            let e = Reference::parse(bad).expect_err(bad).to_string();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }
}
