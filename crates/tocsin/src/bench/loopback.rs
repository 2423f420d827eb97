//! The built-in loopback target the monitor scenarios check: a minimal HTTP/1.1 server on
//! `127.0.0.1:0` answering every request `200 OK` with a two-byte body (or `500` while it is
//! told to fail, so the alerting scenarios can cause an outage), on its own thread and
//! single-threaded runtime (thread name `bench-target`), so it is not counted as server CPU.
//!
//! It does the least a real target does (accept, parse one request, answer, close), so the
//! figures describe Tocsin's side of a check. A check opens a fresh connection each time, as
//! against a real site; by default the target closes it after answering, and
//! [`LoopbackTarget::start_with`] can keep it open instead, as most real servers do (then the
//! checker closes it once the answer is read).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::sync::oneshot;

/// A running loopback target; [`LoopbackTarget::stop`] ends it (dropping it does too, without
/// waiting).
pub struct LoopbackTarget {
    pub addr: SocketAddr,
    failing: Arc<AtomicBool>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl LoopbackTarget {
    /// Binds `127.0.0.1:0` and starts answering, closing each connection after its answer.
    #[cfg(test)]
    pub fn start() -> anyhow::Result<LoopbackTarget> {
        Self::start_with(false)
    }

    /// Binds `127.0.0.1:0` and starts answering; with `keep_alive` the target leaves
    /// connections open, otherwise it closes each after its answer.
    pub fn start_with(keep_alive: bool) -> anyhow::Result<LoopbackTarget> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let failing = Arc::new(AtomicBool::new(false));
        let flag = failing.clone();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let thread = std::thread::Builder::new()
            .name("bench-target".into())
            .spawn(move || {
                rt.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    tokio::select! {
                        _ = stop_rx => {}
                        _ = serve(listener, flag, keep_alive) => {}
                    }
                });
            })?;
        Ok(LoopbackTarget {
            addr,
            failing,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    /// The URL monitors check.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// The switch between answering `200` (false, the start) and `500` (true).
    pub fn failing(&self) -> Arc<AtomicBool> {
        self.failing.clone()
    }

    /// Stops answering and waits for the thread to end.
    pub fn stop(mut self) {
        self.shut();
    }

    fn shut(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for LoopbackTarget {
    fn drop(&mut self) {
        self.shut();
    }
}

async fn serve(listener: tokio::net::TcpListener, failing: Arc<AtomicBool>, keep_alive: bool) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors or similar: back off briefly rather than spin.
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        let failing = failing.clone();
        tokio::spawn(async move {
            let service = service_fn(move |_req: Request<hyper::body::Incoming>| {
                let fail = failing.load(Ordering::Relaxed);
                async move {
                    let mut r = Response::new(Full::new(Bytes::from_static(b"ok")));
                    if fail {
                        *r.status_mut() = hyper::StatusCode::INTERNAL_SERVER_ERROR;
                    }
                    Ok::<_, Infallible>(r)
                }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .keep_alive(keep_alive)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn answers_200_and_closes() {
        let target = LoopbackTarget::start().unwrap();
        let mut s = tokio::net::TcpStream::connect(target.addr).await.unwrap();
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut answer = Vec::new();
        s.read_to_end(&mut answer).await.unwrap();
        let text = String::from_utf8_lossy(&answer);
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        assert!(text.ends_with("ok"), "{text}");
        target.stop();
    }
}
