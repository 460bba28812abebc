//! Record and replay of the component's registry exchanges (`ivpol apply`
//! and `ivpol test` with `--record FILE` and `--replay FILE`), so that a
//! policy test that verifies signatures runs offline in CI.
//!
//! Recording keeps every exchange the component made (method, URL, the
//! `Accept` it asked with, the status, the headers a registry client reads,
//! and the body) in one archive: a JSON file whose bodies are stored once
//! each under their SHA-256 digest. Replaying serves them back and sends
//! nothing: a request the archive does not hold fails, naming it. A body
//! must still match its digest when the archive is read, and a body fetched
//! by digest (`/manifests/sha256:…`, `/blobs/sha256:…`) must be that
//! digest's; the component verifies signatures on replay as it always does.
//! Only time is fixed: the component's wall clock reads the moment the
//! recording started (or `--replay-time`), so certificates and exceptions
//! are judged as they were when it was made.
//!
//! Both directions are bounded: at most [`MAX_EXCHANGES`] exchanges and
//! [`MAX_BODY_BYTES`] bytes of bodies in one archive, whether written or read.

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use wasmtime_wasi_http::{Error as HttpError, WasiBody};

/// The most exchanges one archive holds.
pub const MAX_EXCHANGES: usize = 10_000;
/// The most bytes of bodies one archive holds (each stored once).
pub const MAX_BODY_BYTES: usize = 256 << 20;
/// The archive's format, written into it and checked when it is read.
const VERSION: u32 = 1;
/// The response headers kept: what a registry client reads.
const KEPT_HEADERS: [&str; 6] = [
    "content-type",
    "docker-content-digest",
    "location",
    "link",
    "www-authenticate",
    "oci-filters-applied",
];

/// One archive, as written to the file.
#[derive(Serialize, Deserialize, Default)]
struct Archive {
    version: u32,
    /// When the recording started, in seconds since the Unix epoch: the
    /// component's clock on replay.
    recorded_at: u64,
    exchanges: Vec<Exchange>,
    /// Bodies by `sha256:<hex>`, base64.
    bodies: BTreeMap<String, String>,
}

#[derive(Serialize, Deserialize, Clone)]
struct Exchange {
    method: String,
    url: String,
    /// The request's `Accept`, which picks a manifest's media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    accept: Option<String>,
    status: u16,
    headers: Vec<(String, String)>,
    /// The body's digest, a key of [`Archive::bodies`].
    body: String,
}

impl Exchange {
    fn matches(&self, key: &Key<'_>) -> bool {
        self.method == key.method && self.url == key.url && self.accept.as_deref() == key.accept
    }
}

/// What an exchange is looked up by.
struct Key<'a> {
    method: &'a str,
    url: String,
    accept: Option<&'a str>,
}

impl<'a> Key<'a> {
    fn of(parts: &'a http::request::Parts) -> Key<'a> {
        Key {
            method: parts.method.as_str(),
            url: parts.uri.to_string(),
            accept: parts
                .headers
                .get(http::header::ACCEPT)
                .and_then(|v| v.to_str().ok()),
        }
    }
}

/// A recording being made, or one being replayed.
pub struct Tape {
    mode: Mode,
}

enum Mode {
    Record {
        path: PathBuf,
        archive: Mutex<Recorded>,
    },
    Replay {
        path: PathBuf,
        archive: Archive,
        /// Bodies decoded once, by digest.
        bodies: BTreeMap<String, Bytes>,
    },
}

/// The archive being written and the bytes of bodies it holds.
struct Recorded {
    archive: Archive,
    bytes: usize,
}

impl Tape {
    /// A new recording, to be written to `path` by [`Tape::save`].
    pub fn record(path: &Path) -> Tape {
        let archive = Archive {
            version: VERSION,
            recorded_at: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            ..Archive::default()
        };
        Tape {
            mode: Mode::Record {
                path: path.to_path_buf(),
                archive: Mutex::new(Recorded { archive, bytes: 0 }),
            },
        }
    }

    /// The recording at `path`, checked: its format, its bounds, every body
    /// against its digest, and every body fetched by digest against that.
    pub fn replay(path: &Path) -> anyhow::Result<Tape> {
        let context = || format!("reading the recording {}", path.display());
        let text = read_bounded(path).map_err(|e| anyhow::anyhow!("{}: {e}", context()))?;
        let archive: Archive = serde_json::from_slice(&text)
            .map_err(|e| anyhow::anyhow!("{}: not a recording: {e}", context()))?;
        let bodies = checked(&archive).map_err(|e| anyhow::anyhow!("{}: {e}", context()))?;
        Ok(Tape {
            mode: Mode::Replay {
                path: path.to_path_buf(),
                archive,
                bodies,
            },
        })
    }

    /// The time the component's wall clock reads on replay: the recording's
    /// start. None while recording.
    pub fn recorded_at(&self) -> Option<SystemTime> {
        match &self.mode {
            Mode::Record { .. } => None,
            Mode::Replay { archive, .. } => {
                Some(UNIX_EPOCH + Duration::from_secs(archive.recorded_at))
            }
        }
    }

    /// The recorded answer to a request, on replay; `None` while recording
    /// (the request goes out).
    pub(super) fn replayed(
        &self,
        parts: &http::request::Parts,
    ) -> Option<Result<http::Response<WasiBody>, HttpError>> {
        let Mode::Replay {
            path,
            archive,
            bodies,
        } = &self.mode
        else {
            return None;
        };
        let key = Key::of(parts);
        let found = archive.exchanges.iter().find(|e| e.matches(&key));
        let Some(exchange) = found else {
            let why = format!(
                "{} {} is not in the recording {}",
                key.method,
                key.url,
                path.display()
            );
            tracing::warn!("replay: {why}");
            return Some(Err(HttpError::InternalError(Some(why))));
        };
        let body = bodies.get(&exchange.body).cloned().unwrap_or_default();
        Some(response(exchange, body))
    }

    /// Keeps the exchange of `parts` and `resp` (its body read whole, within
    /// `deadline` and the archive's bounds) and returns the response with
    /// that body, while recording; returns `resp` as it is otherwise.
    pub(super) async fn recorded(
        &self,
        parts: &http::request::Parts,
        resp: http::Response<WasiBody>,
        deadline: Instant,
    ) -> Result<http::Response<WasiBody>, HttpError> {
        let Mode::Record { archive, .. } = &self.mode else {
            return Ok(resp);
        };
        let (head, body) = resp.into_parts();
        let left = remaining(archive);
        let read = tokio::time::timeout_at(deadline.into(), Limited::new(body, left).collect());
        let body = match read.await {
            Err(_) => return Err(HttpError::ConnectionReadTimeout),
            Ok(Err(e)) => {
                let why = format!("recording {}: {e}", parts.uri);
                tracing::warn!(
                    "record: {why} (the recording holds at most {MAX_BODY_BYTES} bytes of bodies)"
                );
                return Err(HttpError::InternalError(Some(why)));
            }
            Ok(Ok(collected)) => collected.to_bytes(),
        };
        let key = Key::of(parts);
        let exchange = Exchange {
            method: key.method.to_string(),
            url: key.url.clone(),
            accept: key.accept.map(str::to_string),
            status: head.status.as_u16(),
            headers: kept_headers(&head.headers),
            body: digest(&body),
        };
        keep(archive, exchange, &body)?;
        Ok(response_from(head, body))
    }

    /// Writes the recording to its file; nothing on replay.
    pub fn save(&self) -> anyhow::Result<()> {
        let Mode::Record { path, archive } = &self.mode else {
            return Ok(());
        };
        let recorded = archive.lock().unwrap_or_else(|p| p.into_inner());
        let text = serde_json::to_vec(&recorded.archive)?;
        std::fs::write(path, text)
            .map_err(|e| anyhow::anyhow!("writing the recording {}: {e}", path.display()))
    }

    /// How many exchanges the tape holds.
    #[cfg(test)]
    fn len(&self) -> usize {
        match &self.mode {
            Mode::Record { archive, .. } => archive
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .archive
                .exchanges
                .len(),
            Mode::Replay { archive, .. } => archive.exchanges.len(),
        }
    }
}

/// A wall clock stopped at one instant: the component's on replay.
pub(crate) struct FixedClock(pub SystemTime);

impl wasmtime_wasi::HostWallClock for FixedClock {
    fn resolution(&self) -> Duration {
        Duration::from_secs(1)
    }

    fn now(&self) -> Duration {
        self.0.duration_since(UNIX_EPOCH).unwrap_or_default()
    }
}

/// The bytes of bodies a recording may still take.
fn remaining(archive: &Mutex<Recorded>) -> usize {
    let recorded = archive.lock().unwrap_or_else(|p| p.into_inner());
    MAX_BODY_BYTES.saturating_sub(recorded.bytes)
}

/// Adds `exchange` (the first answer to a request is the one kept) and its
/// body, within the archive's bounds.
fn keep(archive: &Mutex<Recorded>, exchange: Exchange, body: &Bytes) -> Result<(), HttpError> {
    let mut recorded = archive.lock().unwrap_or_else(|p| p.into_inner());
    let key = Key {
        method: &exchange.method,
        url: exchange.url.clone(),
        accept: exchange.accept.as_deref(),
    };
    if recorded.archive.exchanges.iter().any(|e| e.matches(&key)) {
        return Ok(());
    }
    if recorded.archive.exchanges.len() >= MAX_EXCHANGES {
        let why = format!("the recording holds at most {MAX_EXCHANGES} exchanges");
        tracing::warn!("record: {why}");
        return Err(HttpError::InternalError(Some(why)));
    }
    if !recorded.archive.bodies.contains_key(&exchange.body) {
        recorded.bytes += body.len();
        let encoded = base64::engine::general_purpose::STANDARD.encode(body);
        recorded
            .archive
            .bodies
            .insert(exchange.body.clone(), encoded);
    }
    recorded.archive.exchanges.push(exchange);
    Ok(())
}

fn kept_headers(headers: &http::HeaderMap) -> Vec<(String, String)> {
    KEPT_HEADERS
        .iter()
        .flat_map(|name| headers.get_all(*name).iter().map(move |v| (name, v)))
        .filter_map(|(name, v)| Some((name.to_string(), v.to_str().ok()?.to_string())))
        .collect()
}

fn digest(body: &[u8]) -> String {
    format!(
        "sha256:{}",
        ivpol_refs::encoding::hex(&Sha256::digest(body))
    )
}

/// A recorded response, as the component receives it.
fn response(exchange: &Exchange, body: Bytes) -> Result<http::Response<WasiBody>, HttpError> {
    let mut builder = http::Response::builder().status(exchange.status);
    for (name, value) in &exchange.headers {
        builder = builder.header(name, value);
    }
    builder
        .header(http::header::CONTENT_LENGTH, body.len())
        .body(full(body))
        .map_err(|e| HttpError::InternalError(Some(format!("a recorded response: {e}"))))
}

fn response_from(head: http::response::Parts, body: Bytes) -> http::Response<WasiBody> {
    http::Response::from_parts(head, full(body))
}

fn full(body: Bytes) -> WasiBody {
    Full::new(body)
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// The file's bytes, refused when larger than a recording can be (base64
/// makes bodies a third larger).
fn read_bounded(path: &Path) -> std::io::Result<Vec<u8>> {
    let limit = (MAX_BODY_BYTES / 3 * 4 + (64 << 20)) as u64;
    let size = std::fs::metadata(path)?.len();
    if size > limit {
        return Err(std::io::Error::other(format!(
            "{size} bytes, more than a recording holds ({limit})"
        )));
    }
    std::fs::read(path)
}

/// The archive's bodies decoded, once every check holds.
fn checked(archive: &Archive) -> Result<BTreeMap<String, Bytes>, String> {
    if archive.version != VERSION {
        return Err(format!(
            "format version {}, this ivpol reads {VERSION}",
            archive.version
        ));
    }
    if archive.exchanges.len() > MAX_EXCHANGES {
        return Err(format!("more than {MAX_EXCHANGES} exchanges"));
    }
    let mut bodies = BTreeMap::new();
    let mut total = 0usize;
    for (key, encoded) in &archive.bodies {
        let body = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|e| format!("the body {key} is not base64: {e}"))?;
        total += body.len();
        if total > MAX_BODY_BYTES {
            return Err(format!("more than {MAX_BODY_BYTES} bytes of bodies"));
        }
        if digest(&body) != *key {
            return Err(format!(
                "the body stored as {key} does not match that digest"
            ));
        }
        bodies.insert(key.clone(), Bytes::from(body));
    }
    for e in &archive.exchanges {
        if !bodies.contains_key(&e.body) {
            return Err(format!(
                "{} {}: its body {} is missing",
                e.method, e.url, e.body
            ));
        }
        if let Some(asked) = digest_in_url(&e.url) {
            if e.status == 200 && e.method == "GET" && asked != e.body {
                return Err(format!(
                    "{} {} answers with the body {}, not the digest it asks for",
                    e.method, e.url, e.body
                ));
            }
        }
    }
    Ok(bodies)
}

/// The digest a manifest or blob URL names (`…/manifests/sha256:…`,
/// `…/blobs/sha256:…`).
fn digest_in_url(url: &str) -> Option<&str> {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    let (_, last) = path.rsplit_once('/')?;
    let before = path[..path.len() - last.len() - 1].rsplit('/').next()?;
    (matches!(before, "manifests" | "blobs") && last.starts_with("sha256:")).then_some(last)
}

#[cfg(test)]
mod tests;
