//! The hostile clients of the `connections` scenario: idle connections that never send a
//! byte and slowloris ones that send a header line a second and never finish their head, each
//! reconnecting as soon as the server closes it (a client set on holding connections would), from several loopback
//! addresses so no single one passes the per-address share; and a prober timing `GET /healthz`
//! from another address meanwhile. Both run on their own thread and runtime, so their work is
//! not scheduled on (or measured as) the server's.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio_util::sync::CancellationToken;

/// Loopback addresses the hostile connections come from (Linux routes all of 127/8 to `lo`).
const HOSTILE_ADDRESSES: u8 = 8;

/// What the hostile connections saw.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HoldFigures {
    pub idle: usize,
    pub slowloris: usize,
    /// Connections the server closed while held, and the longest any was held.
    pub idle_closed: u64,
    pub idle_longest_secs: f64,
    pub slowloris_closed: u64,
    pub slowloris_longest_secs: f64,
    /// Connects that failed (refused, reset) or were answered 503.
    pub refused: u64,
}

#[derive(Default)]
struct Tally {
    figures: HoldFigures,
}

/// The hostile connections, held until [`Hold::stop`].
pub struct Hold {
    stop: CancellationToken,
    tally: Arc<Mutex<Tally>>,
    open: Arc<std::sync::atomic::AtomicUsize>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Hold {
    pub fn start(server: SocketAddr, idle: usize, slowloris: usize) -> anyhow::Result<Hold> {
        let stop = CancellationToken::new();
        let tally = Arc::new(Mutex::new(Tally::default()));
        tally_lock(&tally).figures.idle = idle;
        tally_lock(&tally).figures.slowloris = slowloris;
        let open = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (s, t, o) = (stop.clone(), tally.clone(), open.clone());
        let thread = std::thread::Builder::new()
            .name("bench-hostile".into())
            .spawn(move || {
                rt.block_on(async move {
                    let mut tasks = tokio::task::JoinSet::new();
                    for i in 0..idle + slowloris {
                        let from =
                            IpAddr::from([127, 0, 0, 10 + (i % HOSTILE_ADDRESSES as usize) as u8]);
                        let slow = i >= idle;
                        tasks.spawn(hold_one(
                            server,
                            from,
                            slow,
                            s.clone(),
                            t.clone(),
                            o.clone(),
                        ));
                        // Spread the connects so the accept queue does not overflow.
                        if i % 200 == 199 {
                            tokio::time::sleep(Duration::from_millis(5)).await;
                        }
                    }
                    while tasks.join_next().await.is_some() {}
                });
            })?;
        Ok(Hold {
            stop,
            tally,
            open,
            thread: Some(thread),
        })
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn stop(mut self) -> HoldFigures {
        self.stop.cancel();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        tally_lock(&self.tally).figures.clone()
    }
}

fn tally_lock(t: &Mutex<Tally>) -> std::sync::MutexGuard<'_, Tally> {
    t.lock().unwrap_or_else(|p| p.into_inner())
}

async fn connect_from(from: IpAddr, to: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(from, 0))?;
    socket.connect(to).await
}

/// One hostile connection, reconnecting whenever the server closes it.
async fn hold_one(
    server: SocketAddr,
    from: IpAddr,
    slow: bool,
    stop: CancellationToken,
    tally: Arc<Mutex<Tally>>,
    open: Arc<std::sync::atomic::AtomicUsize>,
) {
    use std::sync::atomic::Ordering;
    while !stop.is_cancelled() {
        let Ok(mut s) = connect_from(from, server).await else {
            tally_lock(&tally).figures.refused += 1;
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        open.fetch_add(1, Ordering::Relaxed);
        let opened = Instant::now();
        let mut got = [0u8; 64];
        let closed = async {
            if slow {
                if s.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n")
                    .await
                    .is_err()
                {
                    return 0;
                }
                let mut line = 0u64;
                loop {
                    tokio::select! {
                        r = s.read(&mut got) => return r.unwrap_or(0),
                        _ = tokio::time::sleep(Duration::from_secs(1)) => {
                            line += 1;
                            if s.write_all(format!("x-{line}: y\r\n").as_bytes()).await.is_err() {
                                return 0;
                            }
                        }
                    }
                }
            } else {
                s.read(&mut got).await.unwrap_or(0)
            }
        };
        let n = tokio::select! {
            n = closed => Some(n),
            _ = stop.cancelled() => None,
        };
        open.fetch_sub(1, Ordering::Relaxed);
        let Some(n) = n else { break };
        let held = opened.elapsed().as_secs_f64();
        let mut t = tally_lock(&tally);
        if got[..n].starts_with(b"HTTP/1.1 503") {
            t.figures.refused += 1;
        } else if slow {
            t.figures.slowloris_closed += 1;
            t.figures.slowloris_longest_secs = t.figures.slowloris_longest_secs.max(held);
        } else {
            t.figures.idle_closed += 1;
            t.figures.idle_longest_secs = t.figures.idle_longest_secs.max(held);
        }
    }
}

/// `GET /healthz` latency, measured one request at a time.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HealthFigures {
    pub requests: usize,
    pub errors: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// Times `GET /healthz` every 10 ms from 127.0.0.1 until stopped, on a keep-alive connection
/// (reopened if the server closes it).
pub struct Prober {
    stop: CancellationToken,
    thread: Option<std::thread::JoinHandle<(Vec<Duration>, usize)>>,
}

impl Prober {
    pub fn start(server: SocketAddr) -> anyhow::Result<Prober> {
        let stop = CancellationToken::new();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("bench-prober".into())
            .spawn(move || rt.block_on(probe(server, s)))?;
        Ok(Prober {
            stop,
            thread: Some(thread),
        })
    }

    pub fn stop(mut self) -> HealthFigures {
        self.stop.cancel();
        let (mut times, errors) = self
            .thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        times.sort();
        let at = |q: f64| {
            times
                .get(((times.len() as f64 * q).ceil() as usize).saturating_sub(1))
                .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
        };
        HealthFigures {
            requests: times.len(),
            errors,
            p50_ms: at(0.50),
            p99_ms: at(0.99),
            max_ms: times.last().map_or(0.0, |d| d.as_secs_f64() * 1000.0),
        }
    }
}

async fn probe(server: SocketAddr, stop: CancellationToken) -> (Vec<Duration>, usize) {
    let mut times = Vec::new();
    let mut errors = 0;
    let mut conn: Option<TcpStream> = None;
    let mut tick = tokio::time::interval(Duration::from_millis(10));
    while !stop.is_cancelled() {
        tick.tick().await;
        let started = Instant::now();
        let s = match conn.take() {
            Some(s) => s,
            None => match TcpStream::connect(server).await {
                Ok(s) => s,
                Err(_) => {
                    errors += 1;
                    continue;
                }
            },
        };
        match tokio::time::timeout(Duration::from_secs(5), one_healthz(s)).await {
            Ok(Ok(s)) => {
                times.push(started.elapsed());
                conn = Some(s);
            }
            _ => errors += 1,
        }
    }
    (times, errors)
}

/// One `GET /healthz` on `s`; the connection back if the answer was a whole 200.
async fn one_healthz(mut s: TcpStream) -> anyhow::Result<TcpStream> {
    s.write_all(b"GET /healthz HTTP/1.1\r\nhost: bench\r\n\r\n")
        .await?;
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 512];
    loop {
        let n = s.read(&mut chunk).await?;
        anyhow::ensure!(n > 0, "closed");
        buf.extend_from_slice(&chunk[..n]);
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        anyhow::ensure!(head.starts_with("http/1.1 200"), "status");
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        if buf.len() >= end + 4 + len {
            return Ok(s);
        }
    }
}
