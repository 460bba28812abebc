//! Client logic against a scripted transport. The real registry is exercised
//! end to end in `tests/`; these pin the checks that must never regress.

use super::*;
use crate::transport::host_of;
use ivpol_refs::reference;
use std::cell::RefCell;
use std::collections::BTreeMap;

/// Answers by URL; records what was asked.
#[derive(Default)]
struct Scripted {
    answers: BTreeMap<String, HttpResponse>,
    asked: RefCell<Vec<String>>,
}

impl Scripted {
    fn with(mut self, url: &str, status: u16, headers: &[(&str, &str)], body: &[u8]) -> Self {
        let headers = headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self.answers.insert(
            url.into(),
            HttpResponse {
                status,
                headers,
                body: body.to_vec(),
            },
        );
        self
    }
}

impl Transport for Scripted {
    fn send(&self, request: &HttpRequest, max_body: usize) -> Result<HttpResponse, TransportError> {
        self.asked.borrow_mut().push(request.url.clone());
        let host = host_of(&request.url);
        let resp = self
            .answers
            .get(&request.url)
            .cloned()
            .ok_or(TransportError::Denied { host: host.clone() })?;
        if resp.body.len() > max_body {
            return Err(TransportError::TooLarge {
                host,
                limit: max_body,
            });
        }
        Ok(resp)
    }
}

const MANIFEST: &[u8] = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:aa","size":2},"layers":[]}"#;

fn img(s: &str) -> ImageRef {
    reference::parse(s).expect("valid reference")
}

#[test]
fn resolves_a_tag_to_the_digest_of_the_bytes() {
    let digest = digest::sha256(MANIFEST);
    // A lying Docker-Content-Digest header is ignored.
    let t = Scripted::default().with(
        "https://r.example/v2/app/manifests/v1",
        200,
        &[(
            "Docker-Content-Digest",
            "sha256:0000000000000000000000000000000000000000000000000000000000000000",
        )],
        MANIFEST,
    );
    assert_eq!(
        Client::new(&t).resolve(&img("r.example/app:v1")),
        Ok(digest)
    );
    let pinned = format!("r.example/app@sha256:{}", "1".repeat(64));
    assert_eq!(
        Client::new(&t).resolve(&img(&pinned)),
        Ok(format!("sha256:{}", "1".repeat(64)))
    );
}

#[test]
fn a_manifest_fetched_by_digest_must_match_it() {
    let wrong = format!("sha256:{}", "2".repeat(64));
    let t = Scripted::default().with(
        &format!("https://r.example/v2/app/manifests/{wrong}"),
        200,
        &[],
        MANIFEST,
    );
    let err = Client::new(&t)
        .manifest(&img("r.example/app:v1"), &wrong)
        .unwrap_err();
    assert!(
        matches!(err.kind(), OciErrorKind::DigestMismatch { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("does not match"), "{err}");
}

#[test]
fn errors_name_registry_repository_reference_and_status() {
    let t = Scripted::default().with(
        "https://r.example/v2/team/app/manifests/v9",
        404,
        &[],
        br#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}"#,
    );
    let err = Client::new(&t)
        .resolve(&img("r.example/team/app:v9"))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "r.example/team/app:v9: registry answered HTTP 404: MANIFEST_UNKNOWN manifest unknown"
    );
    let err = Client::new(&Scripted::default())
        .resolve(&img("r.example/team/app:v9"))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "r.example/team/app:v9: request to r.example denied by the host's network policy"
    );
}

#[test]
fn redirects_are_followed_a_bounded_number_of_times() {
    let blob = b"{}";
    let d = digest::sha256(blob);
    let t = Scripted::default()
        .with(
            &format!("https://r.example/v2/app/blobs/{d}"),
            307,
            &[("Location", "https://cdn.example/x")],
            b"",
        )
        .with("https://cdn.example/x", 200, &[], blob);
    assert_eq!(
        Client::new(&t).blob(&img("r.example/app:v1"), &d, 100),
        Ok(blob.to_vec())
    );
    let looping = Scripted::default()
        .with(
            &format!("https://r.example/v2/app/blobs/{d}"),
            302,
            &[("Location", "/v2/app/blobs/loop")],
            b"",
        )
        .with(
            "https://r.example/v2/app/blobs/loop",
            302,
            &[("Location", "loop")],
            b"",
        );
    let err = Client::new(&looping)
        .blob(&img("r.example/app:v1"), &d, 100)
        .unwrap_err();
    assert!(err.to_string().contains("redirects"), "{err}");
}

#[test]
fn blobs_are_checked_and_bounded() {
    let d = digest::sha256(b"good");
    let t = Scripted::default().with(
        &format!("https://r.example/v2/app/blobs/{d}"),
        200,
        &[],
        b"evil",
    );
    let err = Client::new(&t)
        .blob(&img("r.example/app:v1"), &d, 100)
        .unwrap_err();
    assert!(matches!(err.kind(), OciErrorKind::DigestMismatch { .. }));
    let t = Scripted::default().with(
        &format!("https://r.example/v2/app/blobs/{d}"),
        200,
        &[],
        b"good",
    );
    let err = Client::new(&t)
        .blob(&img("r.example/app:v1"), &d, 2)
        .unwrap_err();
    assert!(err.to_string().contains("larger than 2 bytes"), "{err}");
}

#[test]
fn docker_hub_is_reached_on_its_api_host() {
    let t = Scripted::default().with(
        "https://registry-1.docker.io/v2/library/nginx/manifests/latest",
        200,
        &[],
        MANIFEST,
    );
    assert!(Client::new(&t).resolve(&img("nginx")).is_ok());
}

#[test]
fn index_platform_selection() {
    let amd = MANIFEST;
    let amd_digest = digest::sha256(amd);
    let index = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[
        {{"digest":"sha256:{}","platform":{{"os":"linux","architecture":"arm64"}}}},
        {{"digest":"{amd_digest}","platform":{{"os":"linux","architecture":"amd64"}}}}]}}"#,
        "3".repeat(64)
    );
    let t = Scripted::default()
        .with(
            "https://r.example/v2/app/manifests/multi",
            200,
            &[],
            index.as_bytes(),
        )
        .with(
            &format!("https://r.example/v2/app/manifests/{amd_digest}"),
            200,
            &[],
            amd,
        );
    let c = Client::new(&t);
    let image = img("r.example/app:multi");
    let top = c.manifest(&image, "multi").expect("index");
    assert!(top.is_index());
    assert_eq!(
        c.resolve(&image),
        Ok(top.digest.clone()),
        "a tag pins to the index digest"
    );
    let chosen = c
        .platform_manifest(&image, &top, &Platform::default())
        .expect("amd64");
    assert_eq!(chosen.digest, amd_digest);
    let none = c.platform_manifest(
        &image,
        &top,
        &Platform {
            os: "windows".into(),
            architecture: "amd64".into(),
        },
    );
    assert!(none
        .unwrap_err()
        .to_string()
        .contains("no manifest for platform windows/amd64"));
}

#[test]
fn referrers_api_then_tag_schema_fallback_and_subject_check() {
    let subject = format!("sha256:{}", "4".repeat(64));
    let referrer = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"sbom/cyclone-dx","subject":{{"digest":"{subject}"}},"layers":[]}}"#
    );
    let rd = digest::sha256(referrer.as_bytes());
    let index = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[
        {{"digest":"{rd}","artifactType":"sbom/cyclone-dx"}},{{"digest":"sha256:{}","artifactType":"other"}}]}}"#,
        "5".repeat(64)
    );
    let tag = subject.replacen(':', "-", 1);
    let t = Scripted::default()
        .with(
            &format!("https://r.example/v2/app/referrers/{subject}?artifactType=sbom%2Fcyclone-dx"),
            404,
            &[],
            b"",
        )
        .with(
            &format!("https://r.example/v2/app/manifests/{tag}"),
            200,
            &[],
            index.as_bytes(),
        )
        .with(
            &format!("https://r.example/v2/app/manifests/{rd}"),
            200,
            &[],
            referrer.as_bytes(),
        );
    let c = Client::new(&t);
    let image = img("r.example/app:v1");
    let found = c
        .referrers(&image, &subject, Some("sbom/cyclone-dx"))
        .expect("fallback works");
    assert_eq!(found.len(), 1);
    assert!(c.referrer_manifest(&image, &subject, &found[0]).is_ok());
    let other = format!("sha256:{}", "6".repeat(64));
    let err = c.referrer_manifest(&image, &other, &found[0]).unwrap_err();
    assert!(err.to_string().contains("subject"), "{err}");
    // Neither API nor tag: no referrers, not an error.
    let empty = Scripted::default()
        .with(
            &format!("https://r.example/v2/app/referrers/{other}"),
            404,
            &[],
            b"",
        )
        .with(
            &format!(
                "https://r.example/v2/app/manifests/{}",
                other.replacen(':', "-", 1)
            ),
            404,
            &[],
            b"",
        );
    assert_eq!(
        Client::new(&empty).referrers(&image, &other, None),
        Ok(vec![])
    );
}

#[test]
fn location_resolution() {
    assert_eq!(
        resolve_location("https://a/v2/x/blobs/1", "https://b/c"),
        "https://b/c"
    );
    assert_eq!(
        resolve_location("https://a/v2/x/blobs/1", "/y"),
        "https://a/y"
    );
    assert_eq!(
        resolve_location("https://a/v2/x/blobs/1", "z"),
        "https://a/v2/x/blobs/z"
    );
}

#[test]
fn registry_json_and_text_are_bounded() {
    // A 1 MiB manifest of half a million values is refused before parsing.
    let flat = format!("[{}0]", "0,".repeat(500_000));
    let t = Scripted::default().with(
        "https://r.example/v2/app/manifests/flat",
        200,
        &[],
        flat.as_bytes(),
    );
    let err = Client::new(&t)
        .manifest(&img("r.example/app:flat"), "flat")
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("manifest refused: JSON holds more than"),
        "{err}"
    );
    // A registry's error text is quoted only so far.
    let long = format!(
        r#"{{"errors":[{{"code":"DENIED","message":"{}"}}]}}"#,
        "y".repeat(100_000)
    );
    let t = Scripted::default().with(
        "https://r.example/v2/app/manifests/v1",
        403,
        &[],
        long.as_bytes(),
    );
    let err = Client::new(&t)
        .resolve(&img("r.example/app:v1"))
        .unwrap_err();
    assert!(err.to_string().len() < 400, "{}", err.to_string().len());
    assert!(err.to_string().ends_with('…'), "{err}");
}

/// The discovery reads go out together, and the calls that need them take
/// the answers instead of asking again; each answer is used once.
#[test]
fn prefetched_discovery_answers_are_used_once() {
    let subject = format!("sha256:{}", "2".repeat(64));
    let hex = "2".repeat(64);
    let sig_tag = format!("sha256-{hex}.sig");
    let t = Scripted::default()
        .with(
            &format!("https://r.example/v2/app/referrers/{subject}?artifactType=a%2Fb"),
            404,
            &[],
            b"",
        )
        .with(
            &format!("https://r.example/v2/app/manifests/sha256-{hex}"),
            404,
            &[],
            b"",
        )
        .with(
            &format!("https://r.example/v2/app/manifests/{sig_tag}"),
            200,
            &[],
            MANIFEST,
        );
    let client = Client::new(&t);
    let image = img("r.example/app:v1");
    client.prefetch_discovery(&image, &subject, "a/b", std::slice::from_ref(&sig_tag));
    assert_eq!(t.asked.borrow().len(), 3, "{:?}", t.asked.borrow());
    // The referrers API and its fallback, then the legacy manifest: no
    // further request.
    assert_eq!(
        client.referrers(&image, &subject, Some("a/b")),
        Ok(Vec::new())
    );
    let m = client
        .manifest(&image, &sig_tag)
        .expect("the legacy manifest");
    assert_eq!(m.bytes, MANIFEST);
    assert_eq!(t.asked.borrow().len(), 3, "{:?}", t.asked.borrow());
    // Used once: asking again goes to the registry.
    client.manifest(&image, &sig_tag).expect("asked again");
    assert_eq!(t.asked.borrow().len(), 4);
}
