//! Running a credential program (a docker credential helper, a kubelet
//! credential plugin): no shell, the request on stdin, stdout and stderr
//! read with a cap, the whole run within a time limit, killed if it
//! outlives it.

use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What a run printed.
pub(super) struct Output {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Output {
    /// The first non-empty line of stderr (else stdout), clipped.
    pub(super) fn said(&self) -> String {
        [&self.stderr, &self.stdout]
            .iter()
            .find_map(|bytes| {
                let text = String::from_utf8_lossy(bytes);
                let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
                Some(line.chars().take(200).collect())
            })
            .unwrap_or_default()
    }
}

/// Runs `command` with `input` on stdin until `until`; `what` names it in
/// errors. More than `max_output` bytes on stdout is an error.
pub(super) async fn run(
    mut command: tokio::process::Command,
    input: &[u8],
    until: Instant,
    max_output: u64,
    what: &str,
) -> Result<Output, String> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("{what}: cannot run it: {e}"))?;
    let talk = async {
        if let Some(mut stdin) = child.stdin.take() {
            // A program that exits without reading is answered by its exit.
            let _ = stdin.write_all(input).await;
        }
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        if let (Some(o), Some(e)) = (child.stdout.take(), child.stderr.take()) {
            let (mut o, mut e) = (o.take(max_output + 1), e.take(max_output));
            let (a, b) = tokio::join!(o.read_to_end(&mut stdout), e.read_to_end(&mut stderr));
            a.and(b)
                .map_err(|e| format!("{what}: reading its answer: {e}"))?;
        }
        let status = child.wait().await.map_err(|e| format!("{what}: {e}"))?;
        Ok::<_, String>(Output {
            status,
            stdout,
            stderr,
        })
    };
    let out = tokio::time::timeout_at(until.into(), talk)
        .await
        .map_err(|_| format!("{what}: no answer in time (10 s, or the request's deadline)"))??;
    if out.stdout.len() as u64 > max_output {
        return Err(format!("{what}: its answer is over {max_output} bytes"));
    }
    Ok(out)
}

/// Answers of credential programs, by key, each kept for its own time (as
/// the token cache keeps tokens): moka never returns one past it and evicts
/// it then, and at most `max` are kept. A zero time keeps nothing.
#[derive(Clone)]
pub(super) struct Kept<V: Clone + Send + Sync + 'static> {
    answers: moka::sync::Cache<String, (V, Duration)>,
}

/// Each answer expires after the time it was put with.
struct KeepFor;

impl<V> moka::Expiry<String, (V, Duration)> for KeepFor {
    fn expire_after_create(
        &self,
        _key: &String,
        value: &(V, Duration),
        _at: Instant,
    ) -> Option<Duration> {
        Some(value.1)
    }

    fn expire_after_update(
        &self,
        _key: &String,
        value: &(V, Duration),
        _at: Instant,
        _left: Option<Duration>,
    ) -> Option<Duration> {
        Some(value.1)
    }
}

impl<V: Clone + Send + Sync + 'static> Kept<V> {
    pub(super) fn new(max: u64) -> Kept<V> {
        Kept {
            answers: moka::sync::Cache::builder()
                .max_capacity(max)
                .expire_after(KeepFor)
                .build(),
        }
    }

    pub(super) fn get(&self, key: &str) -> Option<V> {
        self.answers.get(key).map(|(v, _)| v)
    }

    pub(super) fn put(&self, key: String, value: V, keep: Duration) {
        if !keep.is_zero() {
            self.answers.insert(key, (value, keep));
        }
    }
}
