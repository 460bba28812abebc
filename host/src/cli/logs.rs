//! Where `ivpol serve` writes its logs: lines are gathered in memory and
//! written to stderr by one thread, every [`EVERY`] or once [`BATCH`] bytes
//! wait, so a request's decision line costs a copy instead of a pipe write
//! and a wake-up of whatever reads the pipe (8% of ivpol's CPU at one
//! connection, docs/performance.md). Memory stays bounded: a line that
//! would take the buffer past [`MAX_BUFFERED`] is written at once, after
//! the lines before it, as an unbuffered writer would. Lines keep their
//! order; they are written out at the latest when the process exits
//! ([`flush`]).

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Duration;
use tracing_subscriber::fmt::MakeWriter;

/// How long a line may wait.
const EVERY: Duration = Duration::from_millis(20);
/// Bytes that wake the writer early.
const BATCH: usize = 64 << 10;
/// The most bytes kept waiting.
const MAX_BUFFERED: usize = 4 << 20;
/// The room each of the two buffers keeps between batches: a batch and
/// the lines that arrive while the writer wakes.
const ROOM: usize = 2 * BATCH;

#[derive(Default)]
struct Shared {
    buf: Mutex<Vec<u8>>,
    wake: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Vec<u8>> {
        self.buf.lock().unwrap_or_else(|p| p.into_inner())
    }
}

static SHARED: OnceLock<Arc<Shared>> = OnceLock::new();

/// The buffered stderr writer for `tracing_subscriber::fmt`.
#[derive(Clone)]
pub(super) struct Buffered(Arc<Shared>);

impl Buffered {
    /// The process's writer, starting its thread on first use.
    pub(super) fn stderr() -> Buffered {
        let shared = SHARED.get_or_init(|| {
            let shared = Arc::new(Shared::default());
            let writer = shared.clone();
            let started = std::thread::Builder::new()
                .name("ivpol-logs".into())
                .spawn(move || write_out(&writer));
            if let Err(e) = started {
                eprintln!("ivpol: cannot start the log writer, logging unbuffered: {e}");
            }
            shared
        });
        Buffered(shared.clone())
    }
}

/// The writer thread: waits for lines, writes them out.
///
/// Two buffers take turns: the lines are swapped out for the one just
/// written, emptied but with its room kept, so that the request threads
/// append without growing a new buffer from nothing after every batch
/// (which they did under the lock, 0.4% of a cache hit's CPU).
fn write_out(shared: &Shared) {
    let mut spare = Vec::with_capacity(ROOM);
    loop {
        {
            let guard = shared.lock();
            let (mut guard, _) = shared
                .wake
                .wait_timeout_while(guard, EVERY, |b| b.len() < BATCH)
                .unwrap_or_else(|p| p.into_inner());
            std::mem::swap(&mut *guard, &mut spare);
        }
        if !spare.is_empty() {
            let _ = std::io::stderr().write_all(&spare);
        }
        spare.clear();
        // A burst may have grown it towards MAX_BUFFERED: not kept.
        spare.shrink_to(ROOM);
    }
}

/// Writes every waiting line now (at exit, before an error is printed).
pub(super) fn flush() {
    if let Some(shared) = SHARED.get() {
        let mut guard = shared.lock();
        let _ = std::io::stderr().write_all(&guard);
        guard.clear();
    }
}

/// One event's line (tracing writes each event with one `write_all`).
pub(super) struct Line<'a>(&'a Shared);

impl Write for Line<'_> {
    fn write(&mut self, line: &[u8]) -> std::io::Result<usize> {
        let mut guard = self.0.lock();
        if guard.len() + line.len() > MAX_BUFFERED {
            // The reader is behind: write through, in order, as stderr would.
            let mut stderr = std::io::stderr().lock();
            stderr.write_all(&guard)?;
            guard.clear();
            stderr.write_all(line)?;
            return Ok(line.len());
        }
        guard.extend_from_slice(line);
        if guard.len() >= BATCH {
            self.0.wake.notify_one();
        }
        Ok(line.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Buffered {
    type Writer = Line<'a>;

    fn make_writer(&'a self) -> Line<'a> {
        Line(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_kept_in_order_and_bounded() {
        let shared = Shared::default();
        let mut line = Line(&shared);
        line.write_all(b"one\n").expect("buffered");
        line.write_all(b"two\n").expect("buffered");
        assert_eq!(&*shared.lock(), b"one\ntwo\n");
        // Past the bound the waiting lines go out first, then this one:
        // nothing is kept beyond MAX_BUFFERED.
        let big = vec![b'x'; MAX_BUFFERED];
        line.write_all(&big).expect("written through");
        assert!(shared.lock().is_empty());
    }
}
