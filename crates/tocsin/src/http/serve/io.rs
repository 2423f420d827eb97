//! The connection's IO: a TCP stream that reports reads to the connection's [`Activity`],
//! holds its [`Permit`], and gives hyper's own refusals the JSON error envelope.
//!
//! hyper answers a request it cannot parse itself — 400 (garbage request line, NUL in a
//! header, a duplicate or negative `Content-Length`), 414 (request target too long), 431 (too
//! many or too large headers) — with an empty body, before any of our code sees a request, and
//! offers no hook. Enforcing those limits ourselves below hyper's would still leave the 400s,
//! which only hyper's parser sees, so the one place they can all be fixed is the wire: a
//! write that is exactly such a response (one of those statuses, `content-length: 0`, no body)
//! is replaced by the same status with the envelope. Our router never writes one — every
//! response of 400 or more gets an envelope body from `http::guard` — so nothing else matches.
//! This is the only protocol text written by hand here: one response head, built from hyper's.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::activity::Activity;
use super::limits::Permit;

pub struct ConnIo {
    inner: TcpStream,
    activity: Arc<Activity>,
    /// A replacement response still to be written, and how much of it is.
    pending: Option<(Vec<u8>, usize)>,
    _permit: Permit,
}

impl ConnIo {
    pub fn new(inner: TcpStream, activity: Arc<Activity>, permit: Permit) -> Self {
        ConnIo {
            inner,
            activity,
            pending: None,
            _permit: permit,
        }
    }

    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some((bytes, written)) = &mut self.pending {
            if *written >= bytes.len() {
                self.pending = None;
                break;
            }
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &bytes[*written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *written += n;
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncRead for ConnIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        ready!(Pin::new(&mut self.inner).poll_read(cx, buf))?;
        if buf.filled().len() > before {
            self.activity.on_read();
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for ConnIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        ready!(self.poll_drain(cx))?;
        if let Some(replacement) = with_envelope(buf) {
            self.pending = Some((replacement, 0));
            // Whatever is not written now goes out on the flush hyper always does next.
            if let Poll::Ready(Err(e)) = self.poll_drain(cx) {
                return Poll::Ready(Err(e));
            }
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        ready!(self.poll_drain(cx))?;
        // hyper's refusals are one head with no body: a single slice.
        if let Some(first) = bufs.iter().find(|b| !b.is_empty()) {
            if first.starts_with(b"HTTP/1.1 4") {
                return self.poll_write(cx, first);
            }
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_drain(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_drain(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// If `buf` is one of hyper's bodiless refusals, the same response with the envelope body.
fn with_envelope(buf: &[u8]) -> Option<Vec<u8>> {
    if !buf.starts_with(b"HTTP/1.1 4") || !buf.ends_with(b"\r\n\r\n") {
        return None;
    }
    let head = std::str::from_utf8(buf).ok()?;
    let mut lines = head.split("\r\n").filter(|l| !l.is_empty());
    let status_line = lines.next()?;
    let status: u16 = status_line.get(9..12)?.parse().ok()?;
    let body = crate::http::error::protocol_error_body(status)?;
    let mut kept = Vec::new();
    let mut empty = false;
    for line in lines {
        let name = line.split(':').next().unwrap_or("").trim();
        if name.eq_ignore_ascii_case("content-length") {
            empty |= line[name.len() + 1..].trim() == "0";
        } else if !name.eq_ignore_ascii_case("connection")
            && !name.eq_ignore_ascii_case("content-type")
        {
            kept.push(line);
        }
    }
    if !empty {
        return None;
    }
    let mut out = format!("{status_line}\r\n");
    for line in kept {
        out.push_str(line);
        out.push_str("\r\n");
    }
    // hyper closes the connection after a refusal; say so.
    out.push_str(&format!(
        "content-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
        body.len()
    ));
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&body);
    Some(bytes)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn only_hypers_bodiless_refusals_get_the_envelope() {
        let hyper_431 =
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        let out = String::from_utf8(with_envelope(hyper_431).unwrap()).unwrap();
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 431 "), "{head}");
        assert!(head.contains("date: x"));
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["code"], "HEADERS_TOO_LARGE");
        assert_eq!(v["statusCode"], 431);
        for (status, code) in [
            ("400 Bad Request", "BAD_REQUEST"),
            ("414 URI Too Long", "URI_TOO_LONG"),
        ] {
            let raw = format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\n\r\n");
            let out = String::from_utf8(with_envelope(raw.as_bytes()).unwrap()).unwrap();
            assert!(out.contains(code), "{out}");
        }
        // Our own responses have a body, and other statuses are not hyper's refusals.
        assert!(with_envelope(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 12\r\n\r\n").is_none());
        assert!(with_envelope(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n").is_none());
        assert!(with_envelope(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").is_none());
        assert!(
            with_envelope(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n{}").is_none()
        );
    }
}
