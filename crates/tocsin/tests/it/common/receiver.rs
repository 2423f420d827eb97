//! A loopback HTTP receiver for notification tests: it records every request (method, path
//! with query, headers, body) and answers from a programmable queue of responses (status,
//! optional `Location`), then a default status; it can hold each answer for a while, and
//! counts distinct `webhook-id`s so tests can tell effects from duplicates.

#![allow(dead_code, clippy::unwrap_used)]

use std::collections::{HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    /// Path and query.
    pub path: String,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Received {
    /// The body as JSON (`null` when it is not).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
    /// Header `name` (empty when absent).
    pub fn header(&self, name: &str) -> String {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    }
    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

#[derive(Default)]
struct Inner {
    received: Vec<Received>,
    queue: VecDeque<(u16, Option<String>)>,
    default_status: u16,
    delay: Duration,
    effects: HashSet<String>,
}

/// The receiver's address and what it recorded (clones share it).
#[derive(Clone)]
pub struct Receiver {
    pub addr: SocketAddr,
    /// `http://127.0.0.1:port`
    pub base: String,
    inner: Arc<Mutex<Inner>>,
    handle: Arc<tokio::task::JoinHandle<()>>,
}

impl Receiver {
    /// A receiver on a free loopback port, answering 200 until told otherwise.
    pub async fn start() -> Receiver {
        let inner = Arc::new(Mutex::new(Inner {
            default_status: 200,
            ..Inner::default()
        }));
        let state = inner.clone();
        let app = axum::Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let state = state.clone();
                async move {
                    let (answer, delay) = {
                        let mut s = state.lock().unwrap();
                        let id = headers
                            .get("webhook-id")
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_string);
                        s.received.push(Received {
                            method: method.to_string(),
                            path: uri
                                .path_and_query()
                                .map(|p| p.to_string())
                                .unwrap_or_default(),
                            headers,
                            body: body.to_vec(),
                        });
                        let answer = s.queue.pop_front().unwrap_or((s.default_status, None));
                        if (200..300).contains(&answer.0) {
                            if let Some(id) = id {
                                s.effects.insert(id);
                            }
                        }
                        (answer, s.delay)
                    };
                    if !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                    }
                    let status = StatusCode::from_u16(answer.0).unwrap();
                    let mut res: Response = (status, "{\"ok\":true}").into_response();
                    if let Some(loc) = answer.1 {
                        res.headers_mut().insert("location", loc.parse().unwrap());
                    }
                    res
                }
            },
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let handle = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Receiver {
            addr,
            base: format!("http://{addr}"),
            inner,
            handle: Arc::new(handle),
        }
    }

    /// `path` on the receiver.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Answers these statuses, in order, before the default.
    pub fn then(&self, statuses: &[u16]) {
        let mut s = self.inner.lock().unwrap();
        for st in statuses {
            s.queue.push_back((*st, None));
        }
    }

    /// Answers one redirect to `location` next.
    pub fn then_redirect(&self, status: u16, location: &str) {
        self.inner
            .lock()
            .unwrap()
            .queue
            .push_back((status, Some(location.to_string())));
    }

    /// Answers `status` once the queue is empty.
    pub fn set_default(&self, status: u16) {
        self.inner.lock().unwrap().default_status = status;
    }

    /// Holds every answer for `delay`.
    pub fn set_delay(&self, delay: Duration) {
        self.inner.lock().unwrap().delay = delay;
    }

    /// Every request so far, oldest first.
    pub fn received(&self) -> Vec<Received> {
        self.inner.lock().unwrap().received.clone()
    }

    /// How many requests arrived.
    pub fn count(&self) -> usize {
        self.inner.lock().unwrap().received.len()
    }

    /// Distinct `webhook-id`s answered 2xx: the effects a deduplicating receiver had.
    pub fn effects(&self) -> usize {
        self.inner.lock().unwrap().effects.len()
    }

    /// Waits until at least `n` requests arrived (panics after `within`).
    pub async fn wait_for(&self, n: usize, within: Duration) -> Vec<Received> {
        let started = Instant::now();
        loop {
            let got = self.received();
            if got.len() >= n {
                return got;
            }
            assert!(
                started.elapsed() < within,
                "expected {n} requests at the receiver, got {}",
                got.len()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
