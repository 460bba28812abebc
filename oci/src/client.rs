//! The distribution client: manifests, blobs, platform selection and referrers.

use super::digest;
use super::error::{OciError, OciErrorKind};
use super::json_shape;
use super::transport::{HttpRequest, HttpResponse, Transport, TransportError};
use super::{clip, MANIFEST_MEDIA_TYPES, MAX_MANIFEST_BYTES, MAX_REDIRECTS, MAX_REFERRERS};
use ivpol_refs::reference::ImageRef;
use serde_json::Value;

/// A manifest as fetched, with the digest computed from its bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// The manifest as received.
    pub bytes: Vec<u8>,
    /// Its media type: the `mediaType` field, else the `Content-Type` header.
    pub media_type: String,
    /// The sha256 digest of `bytes`.
    pub digest: String,
    /// `bytes` parsed.
    pub json: Value,
}

impl Manifest {
    /// Whether this is an OCI index or a Docker manifest list.
    pub fn is_index(&self) -> bool {
        self.media_type == MANIFEST_MEDIA_TYPES[0] || self.media_type == MANIFEST_MEDIA_TYPES[1]
    }
}

/// The platform an index is resolved for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Platform {
    /// The operating system, e.g. `linux`.
    pub os: String,
    /// The CPU architecture, e.g. `amd64`.
    pub architecture: String,
}

impl Default for Platform {
    /// go-containerregistry's default, which Kyverno uses.
    fn default() -> Self {
        Platform {
            os: "linux".into(),
            architecture: "amd64".into(),
        }
    }
}

/// Names a request in errors.
struct Target<'a> {
    registry: &'a str,
    repository: &'a str,
    reference: &'a str,
}

impl Target<'_> {
    fn error(&self, kind: OciErrorKind) -> OciError {
        OciError::new(self.registry, self.repository, self.reference, kind)
    }

    fn transport(&self, source: TransportError) -> OciError {
        self.error(OciErrorKind::Transport(source))
    }

    fn status(&self, resp: &HttpResponse) -> OciError {
        self.error(OciErrorKind::Status {
            status: resp.status,
            detail: error_detail(&resp.body),
        })
    }

    fn invalid(&self, message: impl Into<String>) -> OciError {
        self.error(OciErrorKind::Invalid(message.into()))
    }

    fn mismatch(&self, expected: &str, actual: &str) -> OciError {
        self.error(OciErrorKind::DigestMismatch {
            expected: expected.into(),
            actual: actual.into(),
        })
    }
}

/// `: CODE message` from a distribution error body, when there is one,
/// cut short: it is the registry's text and ends up in the verdict.
fn error_detail(body: &[u8]) -> String {
    let parsed: Option<Value> = json_shape::check(body, &json_shape::SIGNATURE)
        .ok()
        .and_then(|_| ivpol_refs::json::from_slice(body).ok());
    let first = parsed.as_ref().and_then(|v| v.pointer("/errors/0"));
    match first {
        Some(e) => {
            let code = e.get("code").and_then(Value::as_str).unwrap_or_default();
            let msg = e.get("message").and_then(Value::as_str).unwrap_or_default();
            clip(format!(": {code} {msg}").trim_end())
        }
        None => String::new(),
    }
}

/// A registry client over a [`Transport`]: manifests, blobs and referrers, each
/// checked against its digest.
pub struct Client<'t> {
    transport: &'t dyn Transport,
    /// Answers fetched ahead by [`Client::prefetch_discovery`], by URL and
    /// `Accept`, each used once by the request it was fetched for.
    prefetched: std::sync::Mutex<Vec<(String, String, HttpResponse)>>,
}

impl<'t> Client<'t> {
    /// A client that sends its requests through `transport`.
    pub fn new(transport: &'t dyn Transport) -> Client<'t> {
        Client {
            transport,
            prefetched: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Fetches, all at once, what finding `subject`'s signatures reads
    /// first: its referrers of `artifact_type` (and the tag-schema index
    /// the referrers API falls back to) and the manifests of `tags` (the
    /// legacy `.sig`/`.att` images). These are independent round trips;
    /// the calls that need them later ([`Client::referrers`],
    /// [`Client::manifest`]) then take the answers instead of asking again.
    /// Nothing is trusted any earlier: each answer is checked by the call
    /// that uses it. A transport error is not kept (that call retries).
    pub fn prefetch_discovery(
        &self,
        image: &ImageRef,
        subject: &str,
        artifact_type: &str,
        tags: &[String],
    ) {
        let schema_tag = ivpol_refs::digest_tag(subject);
        let mut wanted = vec![(
            Self::referrers_url(image, subject, Some(artifact_type)),
            MANIFEST_MEDIA_TYPES[0].to_string(),
        )];
        for tag in std::iter::once(&schema_tag).chain(tags) {
            wanted.push(Self::manifest_request(image, tag));
        }
        let requests: Vec<(HttpRequest, usize)> = wanted
            .iter()
            .map(|(url, accept)| (get_request(url, accept), MAX_MANIFEST_BYTES))
            .collect();
        let answers = self.transport.send_each(&requests);
        let mut kept = self.prefetched.lock().unwrap_or_else(|p| p.into_inner());
        for ((url, accept), answer) in wanted.into_iter().zip(answers) {
            if let Ok(response) = answer {
                kept.push((url, accept, response));
            }
        }
    }

    /// The prefetched answer to GET `url` with `accept`, taken.
    fn take_prefetched(&self, url: &str, accept: &str) -> Option<HttpResponse> {
        let mut kept = self.prefetched.lock().unwrap_or_else(|p| p.into_inner());
        let i = kept.iter().position(|(u, a, _)| u == url && a == accept)?;
        Some(kept.swap_remove(i).2)
    }

    fn manifest_request(image: &ImageRef, reference: &str) -> (String, String) {
        let url = Self::url(
            image.registry(),
            &format!("{}/manifests/{reference}", image.repository()),
        );
        (url, MANIFEST_MEDIA_TYPES.join(", "))
    }

    fn referrers_url(image: &ImageRef, subject: &str, artifact_type: Option<&str>) -> String {
        let mut path = format!("{}/referrers/{subject}", image.repository());
        if let Some(at) = artifact_type {
            path.push_str("?artifactType=");
            path.push_str(&ivpol_refs::encoding::query_value(at));
        }
        Self::url(image.registry(), &path)
    }

    /// Charges `values` JSON values about to be parsed from registry data
    /// to the evaluation's budget (see `oci::budget`).
    pub fn charge_parsed(&self, values: usize) -> Result<(), TransportError> {
        self.transport.charge_parsed(values)
    }

    /// The host serving a registry's API ([`ivpol_refs::api_host`]).
    pub fn api_host(registry: &str) -> &str {
        ivpol_refs::api_host(registry)
    }

    fn url(registry: &str, path: &str) -> String {
        format!("https://{}/v2/{path}", Self::api_host(registry))
    }

    /// GET with redirects followed (each hop goes through the host's policy again).
    fn get(
        &self,
        t: &Target,
        url: String,
        accept: &str,
        limit: usize,
    ) -> Result<HttpResponse, OciError> {
        let mut url = url;
        for _ in 0..=MAX_REDIRECTS {
            let resp = match self.take_prefetched(&url, accept) {
                Some(resp) if resp.body.len() <= limit => resp,
                _ => self
                    .transport
                    .send(&get_request(&url, accept), limit)
                    .map_err(|e| t.transport(e))?,
            };
            if !matches!(resp.status, 301 | 302 | 303 | 307 | 308) {
                return Ok(resp);
            }
            let location = resp
                .header("location")
                .ok_or_else(|| t.invalid("redirect without a Location"))?;
            url = resolve_location(&url, location);
        }
        Err(t.invalid(format!("more than {MAX_REDIRECTS} redirects")))
    }

    /// The manifest `reference` (a tag or a digest) of `image`'s repository.
    pub fn manifest(&self, image: &ImageRef, reference: &str) -> Result<Manifest, OciError> {
        let t = Target {
            registry: image.registry(),
            repository: image.repository(),
            reference,
        };
        let (url, accept) = Self::manifest_request(image, reference);
        let resp = self.get(&t, url, &accept, MAX_MANIFEST_BYTES)?;
        if resp.status != 200 {
            return Err(t.status(&resp));
        }
        let actual = digest::sha256(&resp.body);
        if digest::is_sha256(reference) && actual != reference {
            return Err(t.mismatch(reference, &actual));
        }
        let values = json_shape::check(&resp.body, &json_shape::MANIFEST)
            .map_err(|e| t.invalid(format!("manifest refused: {e}")))?;
        self.charge_parsed(values).map_err(|e| t.transport(e))?;
        let json: Value = ivpol_refs::json::from_slice(&resp.body)
            .map_err(|e| t.invalid(format!("manifest is not JSON: {e}")))?;
        let media_type = json
            .get("mediaType")
            .and_then(Value::as_str)
            .or_else(|| resp.header("content-type"))
            .unwrap_or_default()
            .to_string();
        Ok(Manifest {
            bytes: resp.body,
            media_type,
            digest: actual,
            json,
        })
    }

    /// The digest `image` names: its own digest, or that of the manifest its tag points to.
    pub fn resolve(&self, image: &ImageRef) -> Result<String, OciError> {
        match image.digest() {
            Some(d) => Ok(d.to_string()),
            None => Ok(self.manifest(image, image.identifier())?.digest),
        }
    }

    /// A blob, checked against its digest.
    pub fn blob(&self, image: &ImageRef, digest: &str, limit: usize) -> Result<Vec<u8>, OciError> {
        let t = Target {
            registry: image.registry(),
            repository: image.repository(),
            reference: digest,
        };
        if !digest::is_sha256(digest) {
            return Err(t.invalid("not a sha256 digest"));
        }
        let url = Self::url(
            image.registry(),
            &format!("{}/blobs/{digest}", image.repository()),
        );
        let resp = self.get(&t, url, "*/*", limit)?;
        if resp.status != 200 {
            return Err(t.status(&resp));
        }
        let actual = digest::sha256(&resp.body);
        if actual != digest {
            return Err(t.mismatch(digest, &actual));
        }
        Ok(resp.body)
    }

    /// For an index, the manifest for `platform`; otherwise `manifest` itself.
    pub fn platform_manifest(
        &self,
        image: &ImageRef,
        manifest: &Manifest,
        platform: &Platform,
    ) -> Result<Manifest, OciError> {
        if !manifest.is_index() {
            return Ok(manifest.clone());
        }
        let t = Target {
            registry: image.registry(),
            repository: image.repository(),
            reference: &manifest.digest,
        };
        let entries = manifest
            .json
            .get("manifests")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let chosen = entries.iter().find(|m| {
            let p = m.get("platform");
            let field = |k: &str| {
                p.and_then(|p| p.get(k))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
            };
            field("os") == platform.os && field("architecture") == platform.architecture
        });
        let digest = chosen
            .and_then(|m| m.get("digest"))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                t.invalid(format!(
                    "no manifest for platform {}/{}",
                    platform.os, platform.architecture
                ))
            })?;
        self.manifest(image, digest)
    }

    /// Descriptors of the referrers of `subject` (OCI 1.1 referrers API, with
    /// the `sha256-<hex>` tag-schema fallback), optionally of one artifact type.
    pub fn referrers(
        &self,
        image: &ImageRef,
        subject: &str,
        artifact_type: Option<&str>,
    ) -> Result<Vec<Value>, OciError> {
        let t = Target {
            registry: image.registry(),
            repository: image.repository(),
            reference: subject,
        };
        let resp = self.get(
            &t,
            Self::referrers_url(image, subject, artifact_type),
            MANIFEST_MEDIA_TYPES[0],
            MAX_MANIFEST_BYTES,
        )?;
        let index: Value = match resp.status {
            200 => {
                let values = json_shape::check(&resp.body, &json_shape::MANIFEST)
                    .map_err(|e| t.invalid(format!("referrers index refused: {e}")))?;
                self.charge_parsed(values).map_err(|e| t.transport(e))?;
                ivpol_refs::json::from_slice(&resp.body)
                    .map_err(|e| t.invalid(format!("referrers index is not JSON: {e}")))?
            }
            404 => match self.tag_schema_index(image, subject)? {
                Some(v) => v,
                None => return Ok(Vec::new()),
            },
            _ => return Err(t.status(&resp)),
        };
        // Only the referrers of the type asked for are copied out, and at
        // most MAX_REFERRERS of them.
        let matching = index
            .get("manifests")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .filter(|d| {
                artifact_type
                    .is_none_or(|at| d.get("artifactType").and_then(Value::as_str) == Some(at))
            });
        let count = matching.clone().count();
        if count > MAX_REFERRERS {
            return Err(t.invalid(format!(
                "too many referrers found ({count} > {MAX_REFERRERS})"
            )));
        }
        let mut out: Vec<Value> = matching.cloned().collect();
        ivpol_refs::sort::sort_by_key(&mut out, |d| {
            d.get("digest")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        });
        Ok(out)
    }

    /// The referrers index stored under the tag `sha256-<hex>`, if any.
    fn tag_schema_index(&self, image: &ImageRef, subject: &str) -> Result<Option<Value>, OciError> {
        let tag = ivpol_refs::digest_tag(subject);
        match self.manifest(image, &tag) {
            Ok(m) => Ok(Some(m.json)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// A referrer's manifest, checked to really refer to `subject`: a
    /// referrers listing is only a hint, the manifest's `subject` is the claim.
    pub fn referrer_manifest(
        &self,
        image: &ImageRef,
        subject: &str,
        descriptor: &Value,
    ) -> Result<Manifest, OciError> {
        let digest = descriptor
            .get("digest")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let t = Target {
            registry: image.registry(),
            repository: image.repository(),
            reference: digest,
        };
        if !digest::is_sha256(digest) {
            return Err(t.invalid("referrer descriptor has no sha256 digest"));
        }
        let m = self.manifest(image, digest)?;
        let claimed = m.json.pointer("/subject/digest").and_then(Value::as_str);
        if claimed != Some(subject) {
            return Err(t.invalid(format!(
                "referrer's subject is {:?}, not {subject}",
                clip(claimed.unwrap_or("none"))
            )));
        }
        Ok(m)
    }
}

/// A GET of `url` asking for `accept`.
fn get_request(url: &str, accept: &str) -> HttpRequest {
    HttpRequest::get(url.to_string(), vec![("Accept".into(), accept.into())])
}

/// Resolves a `Location` header against the URL that answered.
fn resolve_location(base: &str, location: &str) -> String {
    if location.starts_with("http://") || location.starts_with("https://") {
        return location.to_string();
    }
    let origin_end = base
        .find("://")
        .map(|i| i + 3)
        .and_then(|s| base[s..].find('/').map(|p| s + p))
        .unwrap_or(base.len());
    if location.starts_with('/') {
        format!("{}{location}", &base[..origin_end])
    } else {
        let dir_end = base
            .rfind('/')
            .filter(|&i| i >= origin_end)
            .unwrap_or(origin_end);
        format!("{}/{location}", &base[..dir_end])
    }
}

#[cfg(test)]
mod tests;
