//! This node's one PostgreSQL `LISTEN` connection, shared by everything that hears other
//! nodes: the change feed ([`super::feed::CHANNEL`]), the probe relay and the live relay.
//!
//! A subscriber asks for one channel ([`Listener::subscribe`]) and gets a [`Subscription`]: the
//! payloads sent on that channel, in order, and word of the connection itself
//! ([`Heard::Listening`] once its `LISTEN` is in place, at the first connection and again after
//! every reconnection, since whatever was sent while nobody listened is lost;
//! [`Heard::Lost`] when the connection drops or cannot be made). What a subscriber does on a
//! reconnection is its own business (the feed emits a `Resync`).
//!
//! One task ([`Listener::run`]) owns the connection: it `LISTEN`s on every channel some
//! subscription names, `UNLISTEN`s a channel when its last subscription is dropped (the live
//! relay listens only while this node has streams), and reconnects with a capped backoff. It
//! never waits for a subscriber: each one's queue is unbounded, and each only forwards what it
//! hears to in-memory state or a spawned task.
//!
//! Why one connection and not one per subscriber: a node would otherwise hold a database
//! connection, outside every pool's limit, per feature that hears other nodes.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The `application_name` the connection reports when the database URL names none, so an
/// operator can tell it apart in `pg_stat_activity`.
pub const APPLICATION_NAME: &str = "tocsin listener";

/// What a subscription hears.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// The channel is listened to from now on: at the first connection, after every
    /// reconnection (notifications sent meanwhile are lost), and for a subscription made while
    /// connected, as soon as its channel is.
    Listening,
    /// The connection dropped, or could not be made: nothing is heard until the next
    /// `Listening`.
    Lost,
    /// A notification's payload.
    Payload(String),
}

enum Command {
    Subscribe {
        id: u64,
        channel: String,
        tx: mpsc::UnboundedSender<Heard>,
    },
    Unsubscribe {
        id: u64,
    },
}

/// The node's listening connection. Cheap to clone; [`Listener::run`] drives it.
#[derive(Clone)]
pub struct Listener(Arc<Shared>);

struct Shared {
    database_url: String,
    commands: mpsc::UnboundedSender<Command>,
    inbox: Mutex<Option<mpsc::UnboundedReceiver<Command>>>,
    next_id: AtomicU64,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener").finish_non_exhaustive()
    }
}

/// One subscriber's share of the connection: what was heard on its channel. Dropping it stops
/// listening to the channel when no other subscription names it.
#[derive(Debug)]
pub struct Subscription {
    id: u64,
    rx: mpsc::UnboundedReceiver<Heard>,
    commands: mpsc::UnboundedSender<Command>,
}

impl Subscription {
    /// The next thing heard; `None` once the listener has stopped.
    pub async fn recv(&mut self) -> Option<Heard> {
        self.rx.recv().await
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let _ = self.commands.send(Command::Unsubscribe { id: self.id });
    }
}

impl Listener {
    /// A listener on the database at `database_url` (PostgreSQL); nothing connects before
    /// [`Listener::run`].
    pub fn new(database_url: &str) -> Listener {
        let (commands, inbox) = mpsc::unbounded_channel();
        Listener(Arc::new(Shared {
            database_url: database_url.to_string(),
            commands,
            inbox: Mutex::new(Some(inbox)),
            next_id: AtomicU64::new(0),
        }))
    }

    /// Listens to `channel` for the returned subscription (at once when connected, else from
    /// the next connection). Its first word is `Listening` or `Lost`.
    pub fn subscribe(&self, channel: &str) -> Subscription {
        let id = self.0.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::unbounded_channel();
        let _ = self.0.commands.send(Command::Subscribe {
            id,
            channel: channel.to_string(),
            tx,
        });
        Subscription {
            id,
            rx,
            commands: self.0.commands.clone(),
        }
    }

    /// Holds the connection and hands each notification to the subscriptions of its channel,
    /// until `cancel`. Returns at once when already running.
    pub async fn run(self, cancel: CancellationToken) {
        let Some(inbox) = self
            .0
            .inbox
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        else {
            return;
        };
        Task {
            database_url: self.0.database_url.clone(),
            inbox,
            subs: HashMap::new(),
        }
        .run(cancel)
        .await;
    }
}

struct Sub {
    channel: String,
    tx: mpsc::UnboundedSender<Heard>,
    /// Told nothing yet: owed a first `Listening` or `Lost`.
    fresh: bool,
}

struct Task {
    database_url: String,
    inbox: mpsc::UnboundedReceiver<Command>,
    subs: HashMap<u64, Sub>,
}

/// Why the connected loop ended.
enum End {
    Cancelled,
    Lost,
}

impl Task {
    async fn run(mut self, cancel: CancellationToken) {
        let mut backoff = Duration::from_millis(200);
        let mut connected_once = false;
        loop {
            let mut listener = tokio::select! {
                _ = cancel.cancelled() => return,
                l = self.connect() => match l {
                    Ok(l) => l,
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot listen for other nodes' notifications; retrying");
                        self.tell_fresh(&Heard::Lost);
                        if !self.wait(backoff, &cancel).await {
                            return;
                        }
                        backoff = (backoff * 2).min(Duration::from_secs(5));
                        continue;
                    }
                },
            };
            backoff = Duration::from_millis(200);
            if connected_once {
                tracing::info!("listening for other nodes' notifications again");
            } else {
                tracing::debug!("listening for other nodes' notifications");
            }
            connected_once = true;
            self.tell_all(&Heard::Listening);
            match self.serve(&mut listener, &cancel).await {
                End::Cancelled => return,
                End::Lost => {
                    tracing::warn!("lost the connection listening for other nodes' notifications");
                    self.tell_all(&Heard::Lost);
                }
            }
        }
    }

    /// A connection listening to every channel subscribed so far (subscriptions queued before
    /// it are taken in first).
    async fn connect(&mut self) -> Result<PgListener, sqlx::Error> {
        while let Ok(cmd) = self.inbox.try_recv() {
            self.apply(cmd);
        }
        let mut options = PgConnectOptions::from_str(&self.database_url)?;
        if options.get_application_name().is_none() {
            options = options.application_name(APPLICATION_NAME);
        }
        // A pool of one, without lifetimes, as `PgListener::connect` builds.
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .max_lifetime(None)
            .idle_timeout(None)
            .connect_with(options)
            .await?;
        let mut listener = PgListener::connect_with(&pool).await?;
        listener.ignore_pool_close_event(true);
        // This task reconnects by itself (and tells the subscribers): no second connection.
        listener.eager_reconnect(false);
        let channels = self.channels();
        if !channels.is_empty() {
            listener
                .listen_all(channels.iter().map(String::as_str))
                .await?;
        }
        Ok(listener)
    }

    /// Serves notifications and subscription changes on `listener` until it fails or `cancel`.
    async fn serve(&mut self, listener: &mut PgListener, cancel: &CancellationToken) -> End {
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return End::Cancelled,
                cmd = self.inbox.recv() => {
                    // The sender lives in `Shared`, which every handle holds: never `None`
                    // while a subscription could still be made.
                    let Some(cmd) = cmd else { return End::Cancelled };
                    if let Err(e) = self.change(listener, cmd).await {
                        tracing::warn!(error = %e, "could not change what this node listens to");
                        return End::Lost;
                    }
                }
                // Cancel-safe: a notification is taken off the socket only once whole.
                n = listener.try_recv() => match n {
                    Ok(Some(n)) => self.dispatch(n.channel(), n.payload()),
                    Ok(None) => return End::Lost,
                    Err(e) => {
                        tracing::debug!(error = %e, "the listening connection failed");
                        return End::Lost;
                    }
                },
            }
        }
    }

    /// Applies a subscription change on a live connection: `LISTEN` a channel newly named,
    /// `UNLISTEN` one no subscription names any more.
    async fn change(&mut self, listener: &mut PgListener, cmd: Command) -> Result<(), sqlx::Error> {
        match cmd {
            Command::Subscribe { id, channel, tx } => {
                let new = !self.subs.values().any(|s| s.channel == channel);
                if new {
                    listener.listen(&channel).await?;
                }
                let _ = tx.send(Heard::Listening);
                self.subs.insert(
                    id,
                    Sub {
                        channel,
                        tx,
                        fresh: false,
                    },
                );
            }
            Command::Unsubscribe { id } => {
                if let Some(gone) = self.subs.remove(&id) {
                    if !self.subs.values().any(|s| s.channel == gone.channel) {
                        listener.unlisten(&gone.channel).await?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Applies a subscription change while disconnected (the next connection listens).
    fn apply(&mut self, cmd: Command) {
        match cmd {
            Command::Subscribe { id, channel, tx } => {
                self.subs.insert(
                    id,
                    Sub {
                        channel,
                        tx,
                        fresh: true,
                    },
                );
            }
            Command::Unsubscribe { id } => {
                self.subs.remove(&id);
            }
        }
    }

    /// Waits `backoff` before the next attempt, taking subscription changes meanwhile (a new
    /// one hears `Lost` at once: the connection is down). False on `cancel`.
    async fn wait(&mut self, backoff: Duration, cancel: &CancellationToken) -> bool {
        let sleep = tokio::time::sleep(backoff);
        tokio::pin!(sleep);
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return false,
                _ = &mut sleep => return true,
                cmd = self.inbox.recv() => {
                    let Some(cmd) = cmd else { return false };
                    self.apply(cmd);
                    self.tell_fresh(&Heard::Lost);
                }
            }
        }
    }

    fn channels(&self) -> Vec<String> {
        let mut channels: Vec<String> = self.subs.values().map(|s| s.channel.clone()).collect();
        channels.sort();
        channels.dedup();
        channels
    }

    /// Hands a payload to the subscriptions of its channel (one dropped meanwhile is removed
    /// by its `Unsubscribe`, which also `UNLISTEN`s).
    fn dispatch(&self, channel: &str, payload: &str) {
        for sub in self.subs.values().filter(|s| s.channel == channel) {
            let _ = sub.tx.send(Heard::Payload(payload.to_string()));
        }
    }

    fn tell_all(&mut self, heard: &Heard) {
        for sub in self.subs.values_mut() {
            sub.fresh = false;
            let _ = sub.tx.send(heard.clone());
        }
    }

    fn tell_fresh(&mut self, heard: &Heard) {
        for sub in self.subs.values_mut().filter(|s| s.fresh) {
            sub.fresh = false;
            let _ = sub.tx.send(heard.clone());
        }
    }
}
