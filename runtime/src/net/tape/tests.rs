use super::*;

const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

fn parts(url: &str, accept: Option<&str>) -> http::request::Parts {
    let mut builder = http::Request::builder().method("GET").uri(url);
    if let Some(a) = accept {
        builder = builder.header(http::header::ACCEPT, a);
    }
    builder.body(()).expect("request").into_parts().0
}

fn answer(status: u16, body: &'static [u8]) -> http::Response<WasiBody> {
    http::Response::builder()
        .status(status)
        .header("content-type", MANIFEST)
        .header("docker-content-digest", digest(body))
        .header("x-not-kept", "1")
        .body(full(Bytes::from_static(body)))
        .expect("response")
}

async fn body_of(resp: http::Response<WasiBody>) -> Vec<u8> {
    resp.into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes()
        .to_vec()
}

fn deadline() -> Instant {
    Instant::now() + Duration::from_secs(5)
}

/// Records one exchange per (url, accept, status, body), saved to a file.
async fn recording(dir: &Path, exchanges: &[(&str, Option<&str>, u16, &'static [u8])]) -> PathBuf {
    let path = dir.join("recording.json");
    let tape = Tape::record(&path);
    for (url, accept, status, body) in exchanges {
        let resp = tape
            .recorded(&parts(url, *accept), answer(*status, body), deadline())
            .await
            .expect("recorded");
        assert_eq!(body_of(resp).await, *body, "recording passes the body on");
    }
    tape.save().expect("save");
    path
}

#[tokio::test]
async fn a_recording_answers_the_same_requests_with_the_same_responses() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = "https://registry.test/v2/app/manifests/v1";
    let path = recording(
        dir.path(),
        &[
            (url, Some(MANIFEST), 200, b"{\"m\":1}"),
            (url, None, 404, b"not found"),
        ],
    )
    .await;
    let tape = Tape::replay(&path).expect("replay");
    assert_eq!(tape.len(), 2);
    assert!(tape.recorded_at().is_some());
    let resp = tape
        .replayed(&parts(url, Some(MANIFEST)))
        .expect("replaying")
        .expect("found");
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], MANIFEST);
    assert_eq!(
        resp.headers()["docker-content-digest"],
        digest(b"{\"m\":1}").as_str()
    );
    assert!(!resp.headers().contains_key("x-not-kept"));
    assert_eq!(body_of(resp).await, b"{\"m\":1}");
    // The Accept is part of what was asked.
    let other = tape.replayed(&parts(url, None)).expect("replaying");
    assert_eq!(other.expect("found").status(), 404);
}

#[tokio::test]
async fn a_request_not_in_the_recording_fails_and_says_which() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = "https://registry.test/v2/app/manifests/v1";
    let path = recording(dir.path(), &[(url, None, 200, b"{}")]).await;
    let tape = Tape::replay(&path).expect("replay");
    let missing = "https://registry.test/v2/app/manifests/v2";
    match tape.replayed(&parts(missing, None)) {
        Some(Err(HttpError::InternalError(Some(why)))) => {
            assert!(why.contains(missing), "{why}");
            assert!(why.contains("is not in the recording"), "{why}");
        }
        _ => panic!("a miss must fail"),
    }
}

#[tokio::test]
async fn a_recording_sends_nothing_to_replay_while_it_records() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tape = Tape::record(&dir.path().join("r.json"));
    assert!(tape.replayed(&parts("https://r.test/v2/", None)).is_none());
    assert!(tape.recorded_at().is_none());
}

/// Rewrites the saved archive with `edit`.
fn edited(path: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).expect("read")).expect("json");
    edit(&mut v);
    std::fs::write(path, v.to_string()).expect("write");
}

#[tokio::test]
async fn a_body_that_no_longer_matches_its_digest_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = "https://registry.test/v2/app/manifests/v1";
    let path = recording(dir.path(), &[(url, None, 200, b"{\"m\":1}")]).await;
    edited(&path, |v| {
        let key = digest(b"{\"m\":1}");
        v["bodies"][key] = base64::engine::general_purpose::STANDARD
            .encode(b"{\"m\":2}")
            .into();
    });
    let err = Tape::replay(&path).err().expect("refused").to_string();
    assert!(err.contains("does not match that digest"), "{err}");
}

#[tokio::test]
async fn a_blob_asked_by_digest_must_be_that_digests() {
    let dir = tempfile::tempdir().expect("tempdir");
    let layer: &'static [u8] = b"layer";
    let blob = |of: &[u8]| format!("https://registry.test/v2/app/blobs/{}", digest(of));
    let path = recording(dir.path(), &[(&blob(b"another"), None, 200, layer)]).await;
    let err = Tape::replay(&path).err().expect("refused").to_string();
    assert!(err.contains("not the digest it asks for"), "{err}");
    // The same blob under its own digest is taken.
    let path = recording(dir.path(), &[(&blob(layer), None, 200, layer)]).await;
    assert!(Tape::replay(&path).is_ok());
}

#[tokio::test]
async fn archives_beyond_the_bounds_or_of_another_format_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = "https://registry.test/v2/";
    let path = recording(dir.path(), &[(url, None, 200, b"{}")]).await;
    edited(&path, |v| {
        let one = v["exchanges"][0].clone();
        v["exchanges"] = vec![one; MAX_EXCHANGES + 1].into();
    });
    let err = Tape::replay(&path).err().expect("refused").to_string();
    assert!(err.contains("more than 10000 exchanges"), "{err}");
    edited(&path, |v| v["version"] = 2.into());
    let err = Tape::replay(&path).err().expect("refused").to_string();
    assert!(err.contains("format version 2"), "{err}");
    std::fs::write(&path, "not json").expect("write");
    let err = Tape::replay(&path).err().expect("refused").to_string();
    assert!(err.contains("not a recording"), "{err}");
}

#[test]
fn only_manifest_and_blob_urls_name_a_digest() {
    let d = "sha256:abc";
    assert_eq!(
        digest_in_url(&format!("https://r/v2/a/b/blobs/{d}")),
        Some(d)
    );
    assert_eq!(
        digest_in_url(&format!("https://r/v2/a/manifests/{d}?x=1")),
        Some(d)
    );
    assert_eq!(digest_in_url("https://r/v2/a/manifests/v1"), None);
    assert_eq!(
        digest_in_url(&format!("https://r/v2/a/referrers/{d}")),
        None
    );
}

#[test]
fn the_clock_reads_the_fixed_instant() {
    use wasmtime_wasi::HostWallClock;
    let at = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    assert_eq!(FixedClock(at).now(), Duration::from_secs(1_700_000_000));
}
