//! Container image reference parsing with go-containerregistry
//! `name.ParseReference` semantics (default, non-strict options), plus the
//! two normalised spellings Kyverno derives from a reference.
//!
//! # Research findings (Go sources read)
//!
//! * go-containerregistry `pkg/name/{ref,tag,digest,repository,registry,check,options}.go`:
//!   `ParseReference` tries `NewTag` first, then `NewDigest`, and on failure
//!   returns exactly `could not parse reference: <input>` (the specific cause is
//!   discarded; we keep it as [`ImageRefError::reason`]).
//!   An omitted registry becomes `index.docker.io`, and a literal `docker.io` is
//!   rewritten to `index.docker.io`. `RepositoryStr()` prefixes `library/` to a
//!   single-segment repository on that registry. A missing tag means `latest`.
//!   Tag and digest together (`r:t@sha256:…`) parse as a *Digest* whose base
//!   is re-parsed via `NewTag(base).Repository.Name()`: the tag is validated
//!   and then dropped, so `TagStr` is unavailable and `Identifier()` is the digest.
//! * kyverno/sdk `extensions/cel/libs/image/impl.go` (used by kyverno
//!   `pkg/cel/...`): `registry()` is `Context().RegistryStr()`, `repository()`
//!   is `Context().RepositoryStr()`, `tag()` is `TagStr()` only for a `name.Tag`
//!   (else `""`), `digest()` is `DigestStr()` only for a `name.Digest` (else
//!   `""`), `identifier()` is `Identifier()`. So for `nginx` the CEL library
//!   returns registry `index.docker.io` (not `docker.io`), repository
//!   `library/nginx`, tag/identifier `latest`, digest `""`. For
//!   `r:t@sha256:…` it returns tag `""` (confirmed by sdk `lib_test.go`).
//!   [`ImageRef::registry`] and friends return exactly these values.
//! * kyverno `pkg/image/verification/evaluator/policy.go` `MutateDigest` pins
//!   `info.String()` + `@digest`, where `info` comes from
//!   `pkg/utils/api/image.go` -> `pkg/utils/image/infos.go` `GetImageInfo`:
//!   it prepends the configured default registry (`docker.io`, from
//!   `pkg/config/config.go`) when the first path segment is not a host, then
//!   parses with distribution's non-normalising `reference.Parse`. Nothing
//!   else is rewritten: `nginx` becomes `docker.io/nginx:latest` (no
//!   `library/`; see `infos_test.go`), `docker.io/library/nginx` stays as
//!   written, `index.docker.io/...` stays `index.docker.io`. `String()` is
//!   `registry/path@digest` when a digest is present, else `registry/path:tag`.
//!   [`ImageRef::tagged_name`] and `Display` reproduce this (with Kyverno's
//!   default configuration: `defaultRegistry=docker.io`,
//!   `enableDefaultRegistryMutation=true`). Hence the product wording
//!   "nginx is docker.io/library/nginx:latest" matches neither Kyverno path:
//!   CEL gives `index.docker.io` + `library/nginx`; mutation gives
//!   `docker.io/nginx:latest`.
//! * Registry validation is `url.Parse("//"+registry).Host == registry`,
//!   modelled on Go 1.26 `net/url` (kyverno `go.mod`: go 1.26.6): bracketed
//!   hosts must hold a valid non-IPv4 IPv6 address, `[` may only come first,
//!   ports are `:` plus zero or more digits (after the last `:` for the
//!   scheme-less parse ggcr does), `%`-escapes always change `Host` and so
//!   fail, as do `?`, `#`, `@` and control bytes.
//!
//! Known non-goal: distribution's `reference.Parse` (mutate path) rejects
//! some references ggcr accepts (e.g. tags starting with `.` or `-`); Kyverno
//! then fails the mutation. We only model ggcr acceptance.

#[cfg(test)]
mod tests;

use std::fmt;
use std::net::Ipv6Addr;

/// go-containerregistry `name.DefaultRegistry`.
const DEFAULT_REGISTRY: &str = "index.docker.io";
/// Rewritten to [`DEFAULT_REGISTRY`] by go-containerregistry.
const DEFAULT_REGISTRY_ALIAS: &str = "docker.io";
/// Kyverno's default `defaultRegistry` config value, used by the mutate path.
const KYVERNO_DEFAULT_REGISTRY: &str = "docker.io";
const DEFAULT_NAMESPACE: &str = "library";
const DEFAULT_TAG: &str = "latest";
const TAG_CHARS: &str = "abcdefghijklmnopqrstuvwxyz0123456789_-.ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const REPOSITORY_CHARS: &str = "abcdefghijklmnopqrstuvwxyz0123456789_-./";
const DIGEST_PREFIX: &str = "sha256:";
const SHA256_HEX_LEN: usize = 64;

/// A parsed image reference.
///
/// Holds both go-containerregistry's view (what Kyverno's CEL image library
/// exposes) and the spelling as written (what Kyverno's mutate path uses).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ImageRef {
    original: String,
    /// ggcr `RegistryStr()`.
    registry: String,
    /// ggcr `RepositoryStr()`.
    repository: String,
    /// ggcr `TagStr()`; only for tag references (defaulted to `latest`).
    tag: Option<String>,
    /// ggcr `DigestStr()`; only for digest references.
    digest: Option<String>,
    /// Registry exactly as written, if any.
    written_registry: Option<String>,
    /// Repository path exactly as written.
    written_path: String,
    /// Tag exactly as written, if any (kept for `r:t@digest`).
    written_tag: Option<String>,
}

/// Why a string is not an image reference.
///
/// `Display` is go-containerregistry's `ParseReference` error text, which is
/// also the runtime error Kyverno's CEL `parseImageReference` reports.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("could not parse reference: {input}")]
pub struct ImageRefError {
    input: String,
    reason: String,
}

impl ImageRefError {
    /// The string that failed to parse.
    pub fn input(&self) -> &str {
        &self.input
    }

    /// The specific cause, worded like go-containerregistry's inner errors
    /// (which `ParseReference` itself discards).
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl ImageRef {
    /// Registry as Kyverno CEL `registry()` returns it (`index.docker.io` for
    /// Docker Hub, including when written `docker.io`).
    pub fn registry(&self) -> &str {
        &self.registry
    }

    /// Repository as Kyverno CEL `repository()` returns it (`library/nginx`
    /// for `nginx`).
    pub fn repository(&self) -> &str {
        &self.repository
    }

    /// Tag as Kyverno CEL `tag()` returns it: `Some` only for tag references
    /// (`latest` when omitted); `None` for digest references, even
    /// `r:t@sha256:…` (CEL returns `""`).
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    /// Digest (`sha256:<hex>`) as Kyverno CEL `digest()` returns it.
    pub fn digest(&self) -> Option<&str> {
        self.digest.as_deref()
    }

    /// go-containerregistry `Reference.Identifier()`: the digest for a digest
    /// reference, otherwise the tag.
    pub fn identifier(&self) -> &str {
        match (&self.digest, &self.tag) {
            (Some(d), _) => d,
            (None, Some(t)) => t,
            // Unreachable by construction; fall back like a defaulted tag.
            (None, None) => DEFAULT_TAG,
        }
    }

    /// Kyverno CEL `containsDigest()`.
    pub fn contains_digest(&self) -> bool {
        self.digest.is_some()
    }

    /// The input exactly as given (ggcr `String()`).
    pub fn original(&self) -> &str {
        &self.original
    }

    /// The tag as written in the input, if any. Unlike [`ImageRef::tag`] this
    /// survives alongside a digest and is never defaulted.
    pub fn written_tag(&self) -> Option<&str> {
        self.written_tag.as_deref()
    }

    /// Registry as Kyverno's `ImageInfo.Registry` has it: as written, or
    /// `docker.io` when omitted.
    pub fn info_registry(&self) -> &str {
        self.written_registry
            .as_deref()
            .unwrap_or(KYVERNO_DEFAULT_REGISTRY)
    }

    /// Repository path as Kyverno's `ImageInfo.Path` has it: as written, with
    /// no `library/` prefix added.
    pub fn info_path(&self) -> &str {
        &self.written_path
    }

    /// `registry/repository` in go-containerregistry's form
    /// (`Context().Name()`, e.g. `index.docker.io/library/nginx`), i.e.
    /// [`ImageRef::registry`] and [`ImageRef::repository`] joined.
    pub fn name(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }

    /// The reference as container runtimes resolve it: the host in lower
    /// case, without a trailing dot or the default HTTPS port, Docker Hub
    /// under one name (`docker.io`, its official images under `library/`),
    /// then the repository and the tag or digest
    /// (`REGISTRY.EXAMPLE.COM:443/team/app:1` is
    /// `registry.example.com/team/app:1`; `nginx` is
    /// `docker.io/library/nginx:latest`). Two spellings a runtime pulls
    /// from one place have one canonical form, so a policy matching images
    /// by host cannot be escaped by spelling the host differently.
    pub fn canonical(&self) -> String {
        let host = self.registry.to_ascii_lowercase();
        let (name, port) = split_port(&host);
        let name = name.trim_end_matches('.');
        let port = port.filter(|p| *p != "443");
        let host = match (name, port) {
            ("index.docker.io" | "registry-1.docker.io" | "docker.io", None) => {
                "docker.io".to_string()
            }
            (name, Some(port)) => format!("{name}:{port}"),
            (name, None) => name.to_string(),
        };
        let repository = match host == "docker.io" && !self.repository.contains('/') {
            true => format!("{DEFAULT_NAMESPACE}/{}", self.repository),
            false => self.repository.clone(),
        };
        match (&self.digest, &self.tag) {
            (Some(d), _) => format!("{host}/{repository}@{d}"),
            (None, Some(t)) => format!("{host}/{repository}:{t}"),
            (None, None) => format!("{host}/{repository}"),
        }
    }

    /// `registry/path:tag` the way Kyverno's mutate path spells it (e.g.
    /// `docker.io/nginx:latest`); the tag is the written one, else `latest`.
    /// Kyverno pins by appending `@<digest>` to this string.
    pub fn tagged_name(&self) -> String {
        let tag = self.written_tag.as_deref().unwrap_or(DEFAULT_TAG);
        format!("{}/{}:{}", self.info_registry(), self.written_path, tag)
    }
}

/// Kyverno `ImageInfo.String()`: `registry/path@digest` when a digest is
/// present, else `registry/path:tag`. This is the string Kyverno's mutate path
/// matches globs against.
impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.digest {
            Some(d) => write!(f, "{}/{}@{}", self.info_registry(), self.written_path, d),
            None => f.write_str(&self.tagged_name()),
        }
    }
}

/// A registry host and its port, if any (`[::1]:5000` is `[::1]` and
/// `5000`).
fn split_port(host: &str) -> (&str, Option<&str>) {
    let bracketed = host.starts_with('[');
    match host.rsplit_once(':') {
        Some((name, port)) if !bracketed || name.ends_with(']') => (name, Some(port)),
        _ => (host, None),
    }
}

/// The host serving `registry`'s distribution API: Docker Hub's is
/// `registry-1.docker.io`, not the `docker.io` or `index.docker.io` its
/// images are named with; any other registry serves its own.
/// ([`crate::registry_auth::config_host`] goes the other way, to the name
/// `docker login` keeps Docker Hub's credential under.)
pub fn api_host(registry: &str) -> &str {
    match registry {
        "docker.io" | "index.docker.io" => "registry-1.docker.io",
        other => other,
    }
}

/// The tag form of a digest: `sha256:<hex>` becomes `sha256-<hex>`, since
/// a tag cannot hold a colon. Cosign keeps an image's signatures and
/// attestations under it (with `.sig` and `.att` appended), and OCI 1.1's
/// referrers tag schema keeps the referrers index under it as it is.
pub fn digest_tag(digest: &str) -> String {
    digest.replacen(':', "-", 1)
}

/// Parse `s` like go-containerregistry `name.ParseReference(s)`.
pub fn parse(s: &str) -> Result<ImageRef, ImageRefError> {
    // Only a digest reference holds an '@': neither a repository, a tag nor
    // a valid registry may. So each input has one branch to try, and its
    // error is the one reported, as ggcr's for the branch it aimed at.
    if s.contains('@') {
        return parse_digest(s).map_err(|reason| ImageRefError {
            input: s.to_string(),
            reason,
        });
    }
    match parse_tag(s) {
        Ok(t) => Ok(ImageRef {
            original: s.to_string(),
            registry: t.repo.registry,
            repository: t.repo.repository,
            tag: Some(t.tag.unwrap_or(DEFAULT_TAG).to_string()),
            digest: None,
            written_registry: t.repo.written_registry.map(str::to_string),
            written_path: t.repo.written_path.to_string(),
            written_tag: t.tag.map(str::to_string),
        }),
        Err(reason) => Err(ImageRefError {
            input: s.to_string(),
            reason,
        }),
    }
}

/// Registry and repository of a reference, both normalised and as written.
struct RepoParts<'a> {
    registry: String,
    repository: String,
    written_registry: Option<&'a str>,
    written_path: &'a str,
}

struct TagParts<'a> {
    repo: RepoParts<'a>,
    tag: Option<&'a str>,
}

/// ggcr `NewTag`.
fn parse_tag(name: &str) -> Result<TagParts<'_>, String> {
    let (base, tag) = match name.rsplit_once(':') {
        // A last segment with '/' means the colon belonged to a host:port.
        Some((base, tag)) if !tag.contains('/') => {
            if tag.is_empty() {
                return Err(format!("{name} must specify a tag name after the colon"));
            }
            check_element("tag", tag, TAG_CHARS, 1, 128)?;
            (base, Some(tag))
        }
        _ => (name, None),
    };
    let repo = parse_repository(base)?;
    Ok(TagParts { repo, tag })
}

/// ggcr `NewDigest`.
fn parse_digest(name: &str) -> Result<ImageRef, String> {
    let mut parts = name.split('@');
    let (base, dig) = match (parts.next(), parts.next(), parts.next()) {
        (Some(base), Some(dig), None) => (base, dig),
        _ => {
            return Err(format!(
                "a digest must contain exactly one '@' separator (e.g. registry/repository@digest) saw: {name}"
            ))
        }
    };
    let Some(hex) = dig.strip_prefix(DIGEST_PREFIX) else {
        return Err(format!("unsupported digest algorithm: {dig}"));
    };
    // go-digest `Algorithm.Validate`: length first, then lowercase hex.
    if hex.len() != SHA256_HEX_LEN {
        return Err("invalid checksum digest length".to_string());
    }
    if !hex
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err("invalid checksum digest format".to_string());
    }

    let (written, written_tag) = match parse_tag(base) {
        Ok(t) => (t.repo, t.tag),
        Err(_) => (parse_repository(base)?, None),
    };
    // ggcr re-parses `Repository.Name()`, i.e. the *normalised* name: this is
    // where `library/` counts against the 255-rune repository limit.
    let full = format!("{}/{}", written.registry, written.repository);
    let canonical = parse_repository(&full)?;
    Ok(ImageRef {
        original: name.to_string(),
        registry: canonical.registry,
        repository: canonical.repository,
        tag: None,
        digest: Some(dig.to_string()),
        written_registry: written.written_registry.map(str::to_string),
        written_path: written.written_path.to_string(),
        written_tag: written_tag.map(str::to_string),
    })
}

/// ggcr `NewRepository` (+ `NewRegistry`, `RegistryStr`, `RepositoryStr`).
fn parse_repository(name: &str) -> Result<RepoParts<'_>, String> {
    if name.is_empty() {
        return Err("a repository name must be specified".to_string());
    }
    let (written_registry, repo) = match name.split_once('/') {
        // The first segment is a host only if it looks like one.
        Some((host, rest)) if host == "localhost" || host.contains(['.', ':']) => {
            (Some(host), rest)
        }
        _ => (None, name),
    };
    check_element("repository", repo, REPOSITORY_CHARS, 1, 255)?;
    let registry = match written_registry {
        None | Some(DEFAULT_REGISTRY_ALIAS) => DEFAULT_REGISTRY.to_string(),
        Some(host) => {
            if !is_uri_authority(host) {
                return Err(format!(
                    "registries must be valid RFC 3986 URI authorities: {host}"
                ));
            }
            host.to_string()
        }
    };
    let repository = if !repo.contains('/') && registry == DEFAULT_REGISTRY {
        format!("{DEFAULT_NAMESPACE}/{repo}")
    } else {
        repo.to_string()
    };
    Ok(RepoParts {
        registry,
        repository,
        written_registry,
        written_path: repo,
    })
}

/// ggcr `checkElement`: a rune-count range and an allowed character set.
fn check_element(
    what: &str,
    element: &str,
    allowed: &str,
    min: usize,
    max: usize,
) -> Result<(), String> {
    let runes = element.chars().count();
    if runes < min || runes > max {
        return Err(format!(
            "{what} must be between {min} and {max} characters in length: {element}"
        ));
    }
    // The allowed sets are ASCII: a byte outside them (any byte of a
    // multi-byte character included) is refused without searching them.
    if element.bytes().any(|b| !allowed.as_bytes().contains(&b)) {
        return Err(format!(
            "{what} can only contain the characters `{allowed}`: {element}"
        ));
    }
    Ok(())
}

/// Whether Go's `url.Parse("//" + host).Host == host`.
fn is_uri_authority(host: &str) -> bool {
    // Control bytes are rejected outright; `?`/`#` end the authority and `@`
    // starts the host part, so Host would differ; any `%` escape either fails
    // or is decoded (so Host would differ as well).
    if host
        .bytes()
        .any(|b| b < 0x20 || b == 0x7f || matches!(b, b'?' | b'#' | b'@' | b'%' | b'/'))
    {
        return false;
    }
    match host.rfind('[') {
        Some(0) => {
            let Some(close) = host.rfind(']') else {
                return false;
            };
            let (Some(inner), Some(port)) = (host.get(1..close), host.get(close + 1..)) else {
                return false;
            };
            // Go validates the bracketed text with netip.ParseAddr and refuses
            // plain IPv4 there; Ipv6Addr parsing rejects IPv4 text too.
            is_optional_port(port) && inner.parse::<Ipv6Addr>().is_ok()
        }
        Some(_) => false,
        None => {
            let port_ok = match host.rfind(':') {
                Some(i) => host.get(i..).is_some_and(is_optional_port),
                None => true,
            };
            port_ok && host.bytes().all(is_host_byte)
        }
    }
}

/// Go `validOptionalPort`: empty, or `:` followed by digits (possibly none).
fn is_optional_port(port: &str) -> bool {
    match port.strip_prefix(':') {
        Some(digits) => digits.bytes().all(|b| b.is_ascii_digit()),
        None => port.is_empty(),
    }
}

/// Bytes Go's `unescape(_, encodeHost)` lets through unescaped.
fn is_host_byte(b: u8) -> bool {
    b >= 0x80 || b.is_ascii_alphanumeric() || b"-_.~!$&'()*+,;=:[]<>\"".contains(&b)
}
