//! A real SMTP server (the mailin crate) on loopback that keeps every message it receives.

#![allow(dead_code, clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

/// One received message: its recipients and its raw text.
pub type Mail = (Vec<String>, String);

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
