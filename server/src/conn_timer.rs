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

    /// Polls `sleep` once: whether it is ready, checking that it never is
    /// before its deadline (which is all these tests assert of the clock:
    /// nothing about how late a deadline may end).
    fn ready(sleep: &mut Pin<Box<dyn Sleep>>, deadline: Instant) -> bool {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let ready = sleep.as_mut().poll(&mut cx).is_ready();
        assert!(
            !ready || Instant::now() >= deadline,
            "ready before its deadline"
        );
        ready
    }

    fn deadline(timer: &ConnTimer, after: Duration) -> (Pin<Box<dyn Sleep>>, Instant) {
        let at = timer.now() + after;
        (timer.sleep_until(at), at)
    }

    /// Deadlines made one after another, each dropped before the next as
    /// hyper drops a head's once it is in, share one sleep: the sleep
    /// firing for an earlier request's deadline does not end a later one,
    /// which still ends; a deadline sooner than the one the sleep is set
    /// for moves it back.
    #[tokio::test]
    async fn each_deadline_ends_at_its_own_time() {
        let timer = ConnTimer::default();
        let (mut first, at) = deadline(&timer, Duration::from_millis(20));
        assert!(!ready(&mut first, at));
        drop(first);
        let (mut second, second_at) = deadline(&timer, Duration::from_millis(400));
        assert!(!ready(&mut second, second_at));
        // Past the first deadline: the shared sleep has fired for it.
        tokio::time::sleep(Duration::from_millis(60)).await;
        ready(&mut second, second_at);
        tokio::time::timeout(Duration::from_secs(60), second)
            .await
            .expect("the second deadline ends");
        assert!(Instant::now() >= second_at);
        let (mut later, later_at) = deadline(&timer, Duration::from_secs(600));
        assert!(!ready(&mut later, later_at));
        let (sooner, sooner_at) = deadline(&timer, Duration::from_millis(30));
        tokio::time::timeout(Duration::from_secs(60), sooner)
            .await
            .expect("a sooner deadline ends");
        assert!(Instant::now() >= sooner_at);
        ready(&mut later, later_at);
    }
}
