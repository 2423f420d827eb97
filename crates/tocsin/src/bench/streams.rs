//! The clients of the `streams` scenario: `n` dashboards holding `GET /stream` open with a
//! bearer key, each reading and discarding what arrives, from several loopback addresses (so
//! no single address passes the per-address caps). They run on their own thread and runtime,
//! so their work is not scheduled on (or measured as) the server's; their thread's CPU time is
//! reported apart ([`CLIENT_THREAD`]), since on the bench's two cores what they take is taken
//! from the server and the read load as well.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;
use tokio_util::sync::CancellationToken;

/// The name of the streams' thread.
pub const CLIENT_THREAD: &str = "bench-streams";
/// Loopback addresses the streams come from.
const ADDRESSES: u8 = 8;

/// What the streams saw.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StreamFigures {
    pub streams: usize,
    /// Streams answered 200 and open when the measurement ended.
    pub open_at_end: usize,
    /// Streams the server ended or refused before the end.
    pub ended: u64,
    pub bytes_read: u64,
    /// Resident memory of the process before the streams opened and with them open.
    pub rss_before_bytes: u64,
    pub rss_open_bytes: u64,
    pub rss_per_stream_bytes: f64,
    /// CPU cores the streams' clients (this process's [`CLIENT_THREAD`]) used while the reads
    /// ran with the streams open.
    pub clients_cpu_cores: Option<f64>,
}

/// The open streams, held until [`Streams::stop`].
pub struct Streams {
    stop: CancellationToken,
    open: Arc<AtomicUsize>,
    ended: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Streams {
    /// Opens `n` streams to `server` with `token`, and waits (up to a minute) until every one
    /// has its response head.
    pub fn open(server: SocketAddr, token: &str, n: usize) -> anyhow::Result<Streams> {
        let stop = CancellationToken::new();
        let open = Arc::new(AtomicUsize::new(0));
        let ended = Arc::new(AtomicU64::new(0));
        let bytes = Arc::new(AtomicU64::new(0));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (s, o, e, b) = (stop.clone(), open.clone(), ended.clone(), bytes.clone());
        let token = token.to_string();
        let thread = std::thread::Builder::new()
            .name(CLIENT_THREAD.into())
            .spawn(move || {
                rt.block_on(async move {
                    let mut tasks = tokio::task::JoinSet::new();
                    for i in 0..n {
                        let from = IpAddr::from([127, 0, 0, 2 + (i % ADDRESSES as usize) as u8]);
                        tasks.spawn(hold(
                            server,
                            from,
                            token.clone(),
                            s.clone(),
                            o.clone(),
                            e.clone(),
                            b.clone(),
                        ));
                    }
                    while tasks.join_next().await.is_some() {}
                });
            })?;
        let streams = Streams {
            stop,
            open,
            ended,
            bytes,
            thread: Some(thread),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while streams.open_now() + (streams.ended() as usize) < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(streams)
    }

    /// Streams answered 200 and still open.
    pub fn open_now(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    pub fn ended(&self) -> u64 {
        self.ended.load(Ordering::Acquire)
    }

    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Acquire)
    }

    /// Closes every stream.
    pub fn stop(mut self) {
        self.stop.cancel();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn hold(
    server: SocketAddr,
    from: IpAddr,
    token: String,
    stop: CancellationToken,
    open: Arc<AtomicUsize>,
    ended: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
) {
    let connect = async {
        let socket = TcpSocket::new_v4()?;
        socket.bind(SocketAddr::new(from, 0))?;
        let mut conn = socket.connect(server).await?;
        conn.write_all(
            format!(
                "GET /stream HTTP/1.1\r\nHost: {server}\r\nAuthorization: Bearer {token}\r\n\
                 Accept: text/event-stream\r\n\r\n"
            )
            .as_bytes(),
        )
        .await?;
        Ok::<_, std::io::Error>(conn)
    };
    let Ok(mut conn) = connect.await else {
        ended.fetch_add(1, Ordering::AcqRel);
        return;
    };
    let mut buf = vec![0u8; 4096];
    let mut counted = false;
    loop {
        let n = tokio::select! {
            _ = stop.cancelled() => break,
            r = conn.read(&mut buf) => match r {
                Ok(0) | Err(_) => {
                    ended.fetch_add(1, Ordering::AcqRel);
                    break;
                }
                Ok(n) => n,
            },
        };
        if !counted {
            if !buf[..n].starts_with(b"HTTP/1.1 200") {
                ended.fetch_add(1, Ordering::AcqRel);
                return;
            }
            counted = true;
            open.fetch_add(1, Ordering::AcqRel);
        }
        bytes.fetch_add(n as u64, Ordering::Relaxed);
    }
    if counted {
        open.fetch_sub(1, Ordering::AcqRel);
    }
}
