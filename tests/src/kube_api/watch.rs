//! Watch streams: newline-delimited JSON events in a chunked response,
//! from the store's history, with bookmarks, timeouts and 410 on expiry.

use super::error::ApiError;
use super::handler::{Start, WatchSpec};
use super::http::{end_chunked, start_chunked, write_chunk};
use super::ops::Api;
use super::server::Shared;
use super::store::{Event, EventType};
use serde_json::{json, Value};
use std::io::{self, Write};
use std::time::{Duration, Instant};

/// Streams a watch until its timeout, an expiry, or until the connection
/// is dropped (an `Err`: the caller closes it).
pub(crate) fn stream(
    shared: &Shared,
    conn: u64,
    out: &mut impl Write,
    spec: &WatchSpec,
) -> io::Result<()> {
    start_chunked(out)?;
    let (mut cursor, initial, mut timer) = {
        let st = shared.lock();
        let timer = BookmarkTimer::new(st.bookmark_interval, st.bookmark_epoch);
        match spec.start {
            Start::Expired { asked, oldest } => {
                drop(st);
                write_chunk(out, expired_line(asked, oldest).as_bytes())?;
                return end_chunked(out);
            }
            Start::After(rv) => (rv, String::new(), timer),
            Start::Now => (st.api.store.rv(), initial_events(&st.api, spec), timer),
        }
    };
    write_chunk(out, initial.as_bytes())?;
    let deadline = Instant::now() + spec.timeout;
    loop {
        match next_step(shared, conn, spec, &mut cursor, &mut timer, deadline) {
            Step::Dropped => return Err(io::Error::other("watch dropped")),
            Step::Expired { asked, oldest } => {
                write_chunk(out, expired_line(asked, oldest).as_bytes())?;
                return end_chunked(out);
            }
            Step::Send { lines, end } => {
                write_chunk(out, lines.as_bytes())?;
                if end {
                    return end_chunked(out);
                }
            }
        }
    }
}

enum Step {
    Dropped,
    Expired {
        asked: u64,
        oldest: u64,
    },
    /// Event lines (maybe a bookmark last); `end`: the timeout is reached.
    Send {
        lines: String,
        end: bool,
    },
}

/// When the next bookmark is due: every interval, and when asked.
struct BookmarkTimer {
    interval: Duration,
    next: Instant,
    epoch: u64,
}

impl BookmarkTimer {
    fn new(interval: Duration, epoch: u64) -> BookmarkTimer {
        BookmarkTimer {
            interval,
            next: Instant::now() + interval,
            epoch,
        }
    }

    fn due(&self, now: Instant, epoch: u64) -> bool {
        now >= self.next || epoch != self.epoch
    }

    fn reset(&mut self, now: Instant, interval: Duration, epoch: u64) {
        self.interval = interval;
        self.next = now + interval;
        self.epoch = epoch;
    }
}

/// Waits for something to send: matching events, a due bookmark, or the end.
fn next_step(
    shared: &Shared,
    conn: u64,
    spec: &WatchSpec,
    cursor: &mut u64,
    timer: &mut BookmarkTimer,
    deadline: Instant,
) -> Step {
    let mut st = shared.lock();
    loop {
        if st.shutdown || st.is_dropped(conn) {
            return Step::Dropped;
        }
        let mut lines = match st.api.store.events_after(spec.target.res, *cursor) {
            Err(oldest) => {
                return Step::Expired {
                    asked: *cursor,
                    oldest,
                }
            }
            Ok(events) => events
                .into_iter()
                .filter_map(|e| event_line(&st.api, spec, e))
                .collect::<String>(),
        };
        // Everything up to now has been looked at.
        *cursor = st.api.store.rv();
        let now = Instant::now();
        if spec.bookmarks && timer.due(now, st.bookmark_epoch) {
            lines.push_str(&bookmark_line(&st.api, spec, *cursor));
            timer.reset(now, st.bookmark_interval, st.bookmark_epoch);
        }
        let end = now >= deadline;
        if !lines.is_empty() || end {
            return Step::Send { lines, end };
        }
        let wake = if spec.bookmarks {
            timer.next.min(deadline)
        } else {
            deadline
        };
        st = shared.wait(st, wake.saturating_duration_since(now));
    }
}

fn line(kind: &str, object: Value) -> String {
    let mut s = json!({"type": kind, "object": object}).to_string();
    s.push('\n');
    s
}

fn in_scope(spec: &WatchSpec, ns: &str, obj: &Value) -> bool {
    spec.target.ns.as_deref().is_none_or(|want| want == ns) && spec.selectors.matches(obj)
}

/// ADDED for every object selected now.
fn initial_events(api: &Api, spec: &WatchSpec) -> String {
    api.store
        .objects_of(spec.target.res)
        .filter(|(k, v)| in_scope(spec, &k.1, v))
        .map(|(_, v)| line("ADDED", api.present(&spec.target, v.clone())))
        .collect()
}

/// The line for one change, as a selecting watch sees it: an object that
/// starts to match is ADDED, one that stops matching DELETED.
fn event_line(api: &Api, spec: &WatchSpec, e: &Event) -> Option<String> {
    let now = in_scope(spec, &e.key.1, &e.object);
    let before = e.prev.as_ref().is_some_and(|p| in_scope(spec, &e.key.1, p));
    let kind = match (e.kind, before, now) {
        (EventType::Added, _, true) => EventType::Added,
        (EventType::Deleted, _, true) => EventType::Deleted,
        (EventType::Modified, true, true) => EventType::Modified,
        (EventType::Modified, false, true) => EventType::Added,
        (EventType::Modified, true, false) => EventType::Deleted,
        _ => return None,
    };
    Some(line(
        kind.as_str(),
        api.present(&spec.target, e.object.clone()),
    ))
}

/// A BOOKMARK: only apiVersion, kind and the version everything before
/// has been sent for.
fn bookmark_line(api: &Api, spec: &WatchSpec, rv: u64) -> String {
    let rt = api.rt(&spec.target);
    line(
        "BOOKMARK",
        json!({
            "kind": rt.kind,
            "apiVersion": rt.api_version(&spec.target.version),
            "metadata": {"resourceVersion": rv.to_string()},
        }),
    )
}

/// The ERROR event the API server sends for a version it no longer has.
fn expired_line(asked: u64, oldest: u64) -> String {
    line(
        "ERROR",
        ApiError::expired(format!("too old resource version: {asked} ({oldest})")).status(),
    )
}
