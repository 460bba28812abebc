//! Registry reads the signers need (existing `.sig` images, referrer
//! indexes, subjects) and the tag names cosign derives from digests.

use crate::fixtures::Pusher;

/// Every manifest type a verifier asks for.
pub const ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.v2+json, application/vnd.docker.distribution.manifest.list.v2+json";

pub const OCI_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
pub const OCI_EMPTY: &str = "application/vnd.oci.empty.v1+json";
pub const SIMPLESIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
pub const DSSE_ENVELOPE: &str = "application/vnd.dsse.envelope.v1+json";
pub const IN_TOTO: &str = "application/vnd.in-toto+json";
pub const BUNDLE_V03: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";

pub const ANN_SIGNATURE: &str = "dev.cosignproject.cosign/signature";
pub const ANN_CERTIFICATE: &str = "dev.sigstore.cosign/certificate";
pub const ANN_CHAIN: &str = "dev.sigstore.cosign/chain";
pub const ANN_BUNDLE: &str = "dev.sigstore.cosign/bundle";
pub const ANN_RFC3161: &str = "dev.sigstore.cosign/rfc3161timestamp";
pub const ANN_PREDICATE_TYPE: &str = "predicateType";

/// The cosign tag of a digest: `[prefix]sha256-<hex>[.suffix]`
/// (cosign's `normalizeWithSeparator`: the prefix is prepended as is).
pub fn digest_tag(digest: &str, prefix: &str, suffix: &str) -> String {
    let (alg, hex) = digest
        .split_once(':')
        .unwrap_or_else(|| panic!("{digest:?} is not alg:hex"));
    if suffix.is_empty() {
        format!("{prefix}{alg}-{hex}")
    } else {
        format!("{prefix}{alg}-{hex}.{suffix}")
    }
}

fn request(p: &Pusher, method: &str, url: &str) -> ureq::Request {
    let req = ureq::request(method, url);
    match &p.auth {
        Some(a) => req.set("Authorization", a),
        None => req,
    }
}

/// GETs a manifest; `None` on 404. Returns (Content-Type, body).
pub fn get_manifest(p: &Pusher, repo: &str, reference: &str) -> Option<(String, Vec<u8>)> {
    let url = format!("http://{}/v2/{repo}/manifests/{reference}", p.addr);
    match request(p, "GET", &url).set("Accept", ACCEPT).call() {
        Ok(r) => {
            let ct = r.content_type().to_string();
            let mut body = Vec::new();
            std::io::Read::read_to_end(&mut r.into_reader(), &mut body).expect("manifest body");
            Some((ct, body))
        }
        Err(ureq::Error::Status(404, _)) => None,
        Err(e) => panic!("GET {url}: {e}"),
    }
}

/// GETs a blob and checks its digest.
pub fn get_blob(p: &Pusher, repo: &str, digest: &str) -> Vec<u8> {
    let url = format!("http://{}/v2/{repo}/blobs/{digest}", p.addr);
    let r = request(p, "GET", &url)
        .call()
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let mut body = Vec::new();
    std::io::Read::read_to_end(&mut r.into_reader(), &mut body).expect("blob body");
    assert_eq!(crate::fixtures::sha256(&body), digest, "blob {digest}");
    body
}

/// A descriptor in go-containerregistry's field order.
pub fn descriptor(
    media_type: &str,
    size: usize,
    digest: &str,
    annotations: &serde_json::Map<String, serde_json::Value>,
) -> String {
    let mut s = format!(
        "{{\"mediaType\":{},\"size\":{size},\"digest\":{}",
        serde_json::to_string(media_type).expect("json"),
        serde_json::to_string(digest).expect("json")
    );
    if !annotations.is_empty() {
        s.push_str(",\"annotations\":");
        s.push_str(
            &String::from_utf8(super::canonical_json(&serde_json::Value::Object(
                annotations.clone(),
            )))
            .expect("utf8"),
        );
    }
    s.push('}');
    s
}

/// The referrer manifests of `artifact_type` recorded for `digest` in the
/// referrers tag-schema index, each checked for the OCI 1.1 referrer shape
/// (its subject, artifactType and empty config).
pub fn referrer_manifests(
    p: &Pusher,
    repo: &str,
    digest: &str,
    artifact_type: &str,
) -> Vec<serde_json::Value> {
    let tag = digest_tag(digest, "", "");
    let (ct, body) = get_manifest(p, repo, &tag).expect("referrers index");
    assert_eq!(ct, crate::fixtures::OCI_INDEX);
    let index: serde_json::Value = serde_json::from_slice(&body).expect("index JSON");
    index["manifests"]
        .as_array()
        .expect("manifests")
        .iter()
        .filter(|d| d["artifactType"] == artifact_type)
        .map(|d| {
            let (_, body) =
                get_manifest(p, repo, d["digest"].as_str().expect("digest")).expect("referrer");
            let m: serde_json::Value = serde_json::from_slice(&body).expect("referrer JSON");
            assert_eq!(m["subject"]["digest"], digest, "referrer subject");
            assert_eq!(m["artifactType"], artifact_type);
            assert_eq!(m["config"]["mediaType"], OCI_EMPTY);
            m
        })
        .collect()
}

/// The bundles recorded for `digest` in the referrers tag-schema index.
pub fn read_bundles(p: &Pusher, repo: &str, digest: &str) -> Vec<Vec<u8>> {
    referrer_manifests(p, repo, digest, BUNDLE_V03)
        .iter()
        .map(|m| get_blob(p, repo, m["layers"][0]["digest"].as_str().expect("layer")))
        .collect()
}
