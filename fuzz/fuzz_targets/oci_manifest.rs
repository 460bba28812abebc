//! OCI manifests and indexes as the distribution client reads them
//! (`oci::Client`): a tag's manifest, platform selection in an index, the
//! referrers listing (and its tag-schema fallback), referrer manifests and
//! blobs, over a fake registry whose answers are the fuzz input.
//!
//! Input: NUL-separated documents. Document 0 answers the tag, document 1
//! the referrers API; any document answers a GET by digest when its SHA-256
//! is that digest (so a seed index can point at seed manifests). A document
//! starting with `@` is a redirect to the rest of it.
#![no_main]

use std::cell::Cell;

use ivpol_guest::images::reference::parse;
use ivpol_guest::oci::{
    digest, Client, HttpRequest, HttpResponse, Platform, Transport, TransportError,
};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

struct Registry<'a> {
    docs: Vec<&'a [u8]>,
    digests: Vec<String>,
    requests: Cell<usize>,
}

impl Transport for Registry<'_> {
    fn send(&self, request: &HttpRequest, max_body: usize) -> Result<HttpResponse, TransportError> {
        // Bound the work of one input whatever the client does.
        self.requests.set(self.requests.get() + 1);
        if self.requests.get() > 200 {
            return Err(TransportError::Failed {
                host: "registry.test".into(),
                message: "too many requests".into(),
            });
        }
        let path = request.url.split('?').next().unwrap_or_default();
        let last = path.rsplit('/').next().unwrap_or_default();
        let doc = if digest::is_sha256(last) {
            self.digests
                .iter()
                .position(|d| d == last)
                .map(|i| self.docs[i])
        } else if path.contains("/referrers/") {
            self.docs.get(1).copied()
        } else {
            self.docs.first().copied()
        };
        let Some(body) = doc else {
            return Ok(HttpResponse {
                status: 404,
                headers: Vec::new(),
                body: br#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"not found"}]}"#.to_vec(),
            });
        };
        if let Some(location) = body.strip_prefix(b"@") {
            return Ok(HttpResponse {
                status: 302,
                headers: vec![(
                    "Location".into(),
                    String::from_utf8_lossy(location).into_owned(),
                )],
                body: Vec::new(),
            });
        }
        if body.len() > max_body {
            return Err(TransportError::TooLarge {
                host: "registry.test".into(),
                limit: max_body,
            });
        }
        Ok(HttpResponse {
            status: 200,
            headers: vec![(
                "Content-Type".into(),
                "application/vnd.oci.image.manifest.v1+json".into(),
            )],
            body: body.to_vec(),
        })
    }
}

fuzz_target!(|data: &[u8]| {
    let docs = ivpol_fuzz::split(data, 16);
    let registry = Registry {
        digests: docs.iter().map(|d| digest::sha256(d)).collect(),
        docs,
        requests: Cell::new(0),
    };
    let client = Client::new(&registry);
    let image = parse("registry.test/team/app:v1").expect("a valid reference");
    let Ok(manifest) = client.manifest(&image, "v1") else {
        return;
    };
    let _ = manifest.is_index();
    if let Ok(chosen) = client.platform_manifest(&image, &manifest, &Platform::default()) {
        for layer in chosen
            .json
            .get("layers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .chain(chosen.json.get("config"))
            .take(8)
        {
            if let Some(d) = layer.get("digest").and_then(Value::as_str) {
                let _ = client.blob(&image, d, 1 << 20);
            }
        }
    }
    let _ = client.resolve(&image);
    for artifact_type in [None, Some("application/vnd.dev.sigstore.bundle.v0.3+json")] {
        let Ok(referrers) = client.referrers(&image, &manifest.digest, artifact_type) else {
            continue;
        };
        for descriptor in &referrers {
            let _ = client.referrer_manifest(&image, &manifest.digest, descriptor);
        }
    }
});
