//! hyper's timer for one connection (`Connection::serve`).
//!
//! hyper bounds the time a request head may take to arrive with a sleep
//! it makes when it starts to read a head and drops once the head is in:
//! on a kept-alive connection, one for every request. With tokio's timer
//! each of them entered the timer wheel and left it again, under the
//! wheel's lock (1.2% of a cache hit's CPU). Here they share the
//! connection's one tokio sleep, which is moved only when it fires before
//! the deadline it then stands for: a request's head costs a clock-free
//! poll, and the sleep fires at most once per timeout on a busy
//! connection, waking it for nothing. One sleep holds one waker: this
//! serves hyper's HTTP/1 connection, whose one task polls its deadlines,
//! one at a time.

use hyper::rt::{Sleep, Timer};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

/// The timer of one connection's hyper (a new one for each connection).
#[derive(Clone, Default)]
pub(crate) struct ConnTimer(Arc<Mutex<Option<Pin<Box<tokio::time::Sleep>>>>>);

impl Timer for ConnTimer {
    fn sleep(&self, duration: std::time::Duration) -> Pin<Box<dyn Sleep>> {
        self.sleep_until(self.now() + duration)
    }

    /// tokio's clock, which hyper's deadlines are then on (it is the
    /// system's, unless a test pauses it).
    fn now(&self) -> Instant {
        tokio::time::Instant::now().into_std()
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn Sleep>> {
        Box::pin(Deadline {
            at: tokio::time::Instant::from_std(deadline),
            shared: self.clone(),
        })
    }
}

/// One of hyper's sleeps: ready once the shared sleep has fired at or
/// after `at`.
struct Deadline {
    at: tokio::time::Instant,
    shared: ConnTimer,
}

impl Sleep for Deadline {}

impl Future for Deadline {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let at = self.at;
        let mut shared = self.shared.0.lock().unwrap_or_else(|p| p.into_inner());
        let sleep = shared.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
        if sleep.deadline() > at {
            sleep.as_mut().reset(at);
        }
        loop {
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            if sleep.deadline() >= at {
                return Poll::Ready(());
            }
            // It fired for an earlier request's deadline: it stands for
            // this one now.
            sleep.as_mut().reset(at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ready(sleep: &mut Pin<Box<dyn Sleep>>) -> bool {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        sleep.as_mut().poll(&mut cx).is_ready()
    }

    /// Deadlines made one after another, each dropped before the next as
    /// hyper drops a head's once it is in, share one sleep: an earlier
    /// request's deadline neither ends a later one early nor keeps it
    /// from ending.
    #[tokio::test(start_paused = true)]
    async fn each_deadline_ends_at_its_own_time() {
        let timer = ConnTimer::default();
        let mut first = timer.sleep(Duration::from_secs(10));
        assert!(!ready(&mut first));
        drop(first);
        tokio::time::advance(Duration::from_secs(4)).await;
        let mut second = timer.sleep(Duration::from_secs(10));
        assert!(!ready(&mut second));
        // The shared sleep fires for the first deadline: not the second's.
        tokio::time::advance(Duration::from_secs(7)).await;
        assert!(!ready(&mut second));
        tokio::time::advance(Duration::from_secs(3)).await;
        assert!(ready(&mut second));
        // An earlier deadline than the one it is set for moves it back.
        let mut later = timer.sleep(Duration::from_secs(20));
        assert!(!ready(&mut later));
        let mut sooner = timer.sleep(Duration::from_secs(5));
        assert!(!ready(&mut sooner));
        tokio::time::advance(Duration::from_secs(5)).await;
        assert!(ready(&mut sooner));
        assert!(!ready(&mut later));
        tokio::time::advance(Duration::from_secs(15)).await;
        assert!(ready(&mut later));
    }

    /// A deadline that is waited on wakes its task when it passes, through
    /// the shared sleep's firing for an earlier one.
    #[tokio::test(start_paused = true)]
    async fn a_deadline_wakes_its_waiter() {
        let timer = ConnTimer::default();
        let mut first = timer.sleep(Duration::from_secs(1));
        assert!(!ready(&mut first));
        drop(first);
        let started = tokio::time::Instant::now();
        timer.sleep(Duration::from_secs(3)).await;
        let waited = started.elapsed();
        assert!(waited >= Duration::from_secs(3), "{waited:?}");
        assert!(waited < Duration::from_millis(3010), "{waited:?}");
    }
}
