//! Request and response body wrappers. [`DeadlineBody`] bounds the time a client has to send a
//! whole request body: tower-http's `TimeoutBody` restarts its timer on every frame, so a
//! client sending a byte every few seconds would hold its connection (and the handler waiting
//! on the body) for as long as it likes; here the deadline counts from the request's head.
//! A handler reading past it gets [`BodyTimedOut`], which `http::extract` answers with 408
//! `REQUEST_TIMEOUT`. [`TrackedBody`] keeps the connection busy (`activity.rs`) until the
//! response is written.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use http_body::{Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use super::activity::InFlight;

/// The request body did not arrive within the body timeout.
#[derive(Debug, Clone, Copy)]
pub struct BodyTimedOut;

impl std::fmt::Display for BodyTimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the request body did not arrive in time")
    }
}

impl std::error::Error for BodyTimedOut {}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A request body that must be complete by a deadline.
pub struct DeadlineBody<B> {
    inner: B,
    deadline: Instant,
    // Armed only when the body actually has to be waited for: most requests have no body, or
    // one that has already arrived, and need no timer.
    sleep: Option<Pin<Box<Sleep>>>,
}

impl<B> DeadlineBody<B> {
    pub fn new(inner: B, timeout: Duration) -> Self {
        DeadlineBody {
            inner,
            deadline: Instant::now() + timeout,
            sleep: None,
        }
    }
}

impl<B> http_body::Body for DeadlineBody<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|r| r.map_err(Into::into)));
        }
        let deadline = this.deadline;
        let sleep = this
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyTimedOut)))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A response body that marks its request finished when dropped.
pub struct TrackedBody {
    inner: Body,
    _in_flight: InFlight,
}

impl TrackedBody {
    pub fn new(inner: Body, in_flight: InFlight) -> Self {
        TrackedBody {
            inner,
            _in_flight: in_flight,
        }
    }
}

impl http_body::Body for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_body_that_stalls_fails_at_the_deadline_and_a_complete_one_passes() {
        let stalled = http_body_util::StreamBody::new(futures::stream::pending::<
            Result<Frame<Bytes>, std::io::Error>,
        >());
        let body = DeadlineBody::new(stalled, Duration::from_secs(2));
        let started = Instant::now();
        let err = body.collect().await.err().unwrap();
        assert!(err.is::<BodyTimedOut>());
        assert_eq!(started.elapsed(), Duration::from_secs(2));

        let whole = DeadlineBody::new(Body::from("{}"), Duration::from_secs(2));
        assert_eq!(whole.collect().await.unwrap().to_bytes(), "{}");
    }
}
