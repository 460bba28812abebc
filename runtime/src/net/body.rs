//! A response body that errors once the request's deadline passes, so a
//! slow registry cannot hold an instance past the webhook timeout (the
//! epoch deadline only interrupts wasm code, not host waits).

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;
use wasmtime_wasi_http::Error as HttpError;

pub(super) struct DeadlineBody {
    inner: hyper::body::Incoming,
    sleep: Pin<Box<tokio::time::Sleep>>,
    /// The request's turn at its registry (`Inflight`), held until the
    /// body is read or dropped: a registry that trickles its body still
    /// counts against its in-flight bound.
    _turn: tokio::sync::OwnedSemaphorePermit,
}

impl DeadlineBody {
    pub(super) fn new(
        inner: hyper::body::Incoming,
        deadline: Instant,
        turn: tokio::sync::OwnedSemaphorePermit,
    ) -> DeadlineBody {
        DeadlineBody {
            inner,
            sleep: Box::pin(tokio::time::sleep_until(deadline.into())),
            _turn: turn,
        }
    }
}

impl Body for DeadlineBody {
    type Data = Bytes;
    type Error = HttpError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, HttpError>>> {
        if self.sleep.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(HttpError::ConnectionReadTimeout)));
        }
        Pin::new(&mut self.inner)
            .poll_frame(cx)
            .map_err(HttpError::from)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
