//! Mail in tests: a real SMTP server (the mailin crate) on loopback that keeps every message
//! it receives, a test server whose relay is that sink, and reading the mails back (decoded,
//! by recipient, by header, the links in them).

#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tocsin::clock::SharedClock;
use tocsin::config::Config;

use super::{Options, TestServer};

/// One received message: its recipients and its raw text.
pub type Mail = (Vec<String>, String);

/// The messages received so far (clones share them).
#[derive(Clone, Default)]
pub struct Sink {
    pub messages: Arc<Mutex<Vec<Mail>>>,
    current: Arc<Mutex<(Vec<String>, Vec<u8>)>>,
}

impl Sink {
    /// Starts a sink on a free loopback port (its own thread); returns it and the port.
    pub fn start() -> (Sink, u16) {
        let sink = Sink::default();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut server = mailin_embedded::Server::new(sink.clone());
        server.with_tcp_listener(listener).with_num_threads(1);
        std::thread::spawn(move || {
            let _ = server.serve();
        });
        (sink, port)
    }
}

/// Options for a server (on `clock`, when given) whose mail goes to the sink on `port`,
/// through a relay sending as `Tocsin <tocsin@example.com>`.
pub fn options(port: u16, clock: Option<SharedClock>) -> Options {
    options_with(port, clock, |_| {})
}

/// [`options`], with `tweak` applied to the configuration after the relay is set.
pub fn options_with(
    port: u16,
    clock: Option<SharedClock>,
    tweak: impl FnOnce(&mut Config) + Send + 'static,
) -> Options {
    Options {
        clock,
        tweak: Some(Box::new(move |c| {
            c.smtp = Some(tocsin::config::Smtp {
                url: format!("smtp://127.0.0.1:{port}"),
                from: "Tocsin <tocsin@example.com>".into(),
            });
            tweak(c);
        })),
    }
}

/// A server (on `clock`, when given) mailing to a new sink, with `tweak` applied to its
/// configuration; the server and the sink.
pub async fn server_with(
    clock: Option<SharedClock>,
    tweak: impl FnOnce(&mut Config) + Send + 'static,
) -> (TestServer, Sink) {
    let (sink, port) = Sink::start();
    let srv = TestServer::start_with(options_with(port, clock, tweak)).await;
    (srv, sink)
}

/// A server on the real clock mailing to a new sink.
pub async fn server() -> (TestServer, Sink) {
    server_with(None, |_| {}).await
}

/// The mails to `to` so far, oldest first: headers as sent, bodies quoted-printable decoded.
pub fn mails_to(sink: &Sink, to: &str) -> Vec<String> {
    sink.messages
        .lock()
        .unwrap()
        .iter()
        .filter(|(rcpt, _)| rcpt.iter().any(|r| r == to))
        .map(|(_, raw): &Mail| match raw.split_once("\r\n\r\n") {
            // The headers as they are; the parts' bodies decoded.
            Some((head, body)) => format!("{head}\r\n\r\n{}", decode_qp(body)),
            None => raw.clone(),
        })
        .collect()
}

/// Quoted-printable soft breaks and escapes undone (lettre encodes long lines so).
pub fn decode_qp(raw: &str) -> String {
    let joined = raw.replace("=\r\n", "").replace("=\n", "");
    let bytes = joined.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'=' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
            if let Ok(b) = u8::from_str_radix(hex, 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Waits until `to` has received `n` mails (10 s at most); returns them.
pub async fn wait_mails(sink: &Sink, to: &str, n: usize) -> Vec<String> {
    for _ in 0..200 {
        let got = mails_to(sink, to);
        if got.len() >= n {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "{to} received {} mails, expected {n}",
        mails_to(sink, to).len()
    );
}

/// The first `<path>?token=...` link in `mail`.
pub fn link(mail: &str, path: &str) -> String {
    let start = mail
        .find(&format!("{path}?token="))
        .unwrap_or_else(|| panic!("no {path} link in {mail}"));
    let rest = &mail[start..];
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || "/?=_-.".contains(c)))
        .unwrap_or(rest.len());
    rest[..end].to_string()
}

/// The value of header `name` in `mail` (folded lines unfolded).
pub fn header(mail: &str, name: &str) -> Option<String> {
    let head = mail.split("\r\n\r\n").next().unwrap_or(mail);
    let mut unfolded: Vec<String> = Vec::new();
    for line in head.lines() {
        match unfolded.last_mut() {
            Some(last) if line.starts_with([' ', '\t']) => last.push_str(line.trim_start()),
            _ => unfolded.push(line.to_string()),
        }
    }
    let prefix = format!("{}:", name.to_ascii_lowercase());
    unfolded
        .into_iter()
        .find(|l| l.to_ascii_lowercase().starts_with(&prefix))
        .map(|l| l[prefix.len()..].trim().to_string())
}

impl mailin_embedded::Handler for Sink {
    fn data_start(
        &mut self,
        _domain: &str,
        _from: &str,
        _is8bit: bool,
        to: &[String],
    ) -> mailin_embedded::Response {
        *self.current.lock().unwrap() = (to.to_vec(), Vec::new());
        mailin_embedded::response::OK
    }
    fn data(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.current.lock().unwrap().1.extend_from_slice(buf);
        Ok(())
    }
    fn data_end(&mut self) -> mailin_embedded::Response {
        let (to, body) = std::mem::take(&mut *self.current.lock().unwrap());
        self.messages
            .lock()
            .unwrap()
            .push((to, String::from_utf8_lossy(&body).into_owned()));
        mailin_embedded::response::OK
    }
}
