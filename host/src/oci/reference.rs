//! Artifact references: `[oci://]REGISTRY/REPOSITORY[:TAG][@sha256:HEX]`.
//!
//! The registry part is required unless the first path segment cannot be a
//! host (no `.` or `:`, not `localhost`), in which case it is Docker Hub, as
//! `docker pull` reads it. Names are checked against the distribution
//! spec's grammar here, so that a typo fails before any network call.

use anyhow::{bail, Result};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// `host[:port]` as written (Docker Hub as `docker.io`).
    pub registry: String,
    pub repository: String,
    pub tag: Option<String>,
    /// `sha256:<64 lowercase hex>`
    pub digest: Option<String>,
}

impl Reference {
    pub fn parse(input: &str) -> Result<Reference> {
        let s = input.strip_prefix("oci://").unwrap_or(input);
        if s.is_empty() || s.contains("://") || s.chars().any(char::is_whitespace) {
            bail!("{input:?} is not an OCI reference (REGISTRY/REPOSITORY[:TAG][@sha256:DIGEST])");
        }
        let (rest, digest) = match s.split_once('@') {
            Some((r, d)) => (r, Some(parse_digest(d, input)?)),
            None => (s, None),
        };
        let (name, tag) = split_tag(rest);
        let (registry, repository) = split_registry(name);
        check_repository(&repository, input)?;
        if let Some(t) = tag {
            check_tag(t, input)?;
        }
        Ok(Reference {
            registry,
            repository,
            tag: tag.map(str::to_string),
            digest,
        })
    }

    /// Where the distribution API is served: Docker Hub's API host differs
    /// from its name.
    pub fn api_host(&self) -> &str {
        match self.registry.as_str() {
            "docker.io" | "index.docker.io" => "registry-1.docker.io",
            other => other,
        }
    }

    /// The tag or digest a manifest is fetched by (`latest` by default).
    pub fn manifest_reference(&self) -> &str {
        self.digest
            .as_deref()
            .or(self.tag.as_deref())
            .unwrap_or("latest")
    }

    /// The same repository and tag, pinned to `digest`.
    pub fn pinned(&self, digest: &str) -> Reference {
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

/// A `:tag` after the last `/` (a `:` before it is a port).
fn split_tag(s: &str) -> (&str, Option<&str>) {
    let last_slash = s.rfind('/').map_or(0, |i| i + 1);
    match s[last_slash..].rfind(':') {
        Some(i) => (&s[..last_slash + i], Some(&s[last_slash + i + 1..])),
        None => (s, None),
    }
}

fn split_registry(name: &str) -> (String, String) {
    match name.split_once('/') {
        Some((first, rest))
            if first.contains(['.', ':']) || first == "localhost" || first.starts_with('[') =>
        {
            (first.to_ascii_lowercase(), rest.to_string())
        }
        _ if !name.contains('/') => ("docker.io".into(), format!("library/{name}")),
        _ => ("docker.io".into(), name.to_string()),
    }
}

pub fn parse_digest(d: &str, input: &str) -> Result<String> {
    match d.strip_prefix("sha256:") {
        Some(hex)
            if hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) =>
        {
            Ok(d.to_string())
        }
        _ => bail!("{input:?}: the digest {d:?} is not sha256:<64 lowercase hex>"),
    }
}

/// Path components `[a-z0-9]+([._]|__|-+)[a-z0-9]+...`, joined by `/`.
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
        for bad in [
            "",
            "oci://",
            "https://ghcr.io/a/b",
            "ghcr.io/UPPER/case",
            "ghcr.io/a/b:",
            "ghcr.io/a/b:-tag",
            "ghcr.io/a/b@sha256:abc",
            "ghcr.io/a/b@md5:0123",
            "ghcr.io//b",
            "ghcr.io/a b",
            "ghcr.io/a/b_",
        ] {
            assert!(Reference::parse(bad).is_err(), "{bad:?}");
        }
    }
}
