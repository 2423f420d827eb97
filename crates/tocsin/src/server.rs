//! Starting and stopping the service. [`start`] opens and migrates the database and builds the
//! state; [`run`] serves a bound listener until the shutdown future resolves, then stops
//! judging (the scheduler starts no run, the push watcher marks nothing down: a server going
//! away must not page anyone), stops accepting, and gives in-flight requests and accepted
//! on-demand checks **one** deadline, `config.shutdown_grace` from the moment shutdown began:
//! both drain at the same time, what remains at the deadline is closed (requests) or stored
//! as cancelled (checks); a scheduled check that finishes after the signal is stored unjudged
//! (`monitoring::unjudged`). Then it stops the background workers, flushes the heartbeat
//! writer, lets the delivery worker send what is due (until the same deadline: an alert opened
//! just before the signal goes out now, not at the next start) and closes the database, so
//! the process exits within the grace plus that closing work.
//! Tests call the same two functions with a port-0 listener.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::alerting::ack_link::Links;
use crate::alerting::deliver::DeliveryQueue;
use crate::auth::TokenCaches;
use crate::billing::Billing;
use crate::clock::{SharedClock, SystemClock};
use crate::cluster::feed::{Feed, Notice};
use crate::cluster::lease::Role;
use crate::cluster::listen::Listener;
use crate::config::Config;
use crate::cx::Cx;
use crate::http::state::Handles;
pub use crate::http::AppState;
use crate::live::Hub;
use crate::mail::Mailer;
use crate::monitoring::heartbeats::{HeartbeatWriter, WriterOptions};
use crate::monitoring::on_demand::OnDemandChecks;
use crate::monitoring::partitions::Partitions;
use crate::monitoring::runner::Runner;
use crate::probes::relay::Relay as ProbeRelay;
use crate::probes::Registry;
use crate::public::cache::PageCache;
use crate::push::tokens::PushTokens;
use crate::store::Db;
use crate::telemetry::Metrics;

/// How long a scheduled check's result that changes no status may wait to share its commit
/// (see `WriterOptions::patience`): short next to any interval, and nothing a person waits on
/// (a status change, a push, an on-demand check) ever waits. At 100 checks/s it turns a commit
/// per check into one per twenty.
const CHECK_RESULT_PATIENCE: std::time::Duration = std::time::Duration::from_millis(200);
/// The OpenAPI document as printed by `tocsin openapi`.
pub fn openapi_text() -> String {
    crate::http::openapi::document_text()
}

/// Opens the database, applies migrations, builds the state.
pub async fn start(config: Config, clock: Option<SharedClock>) -> anyhow::Result<AppState> {
    let db = Db::connect(config.database_url.as_deref(), &config.data_dir).await?;
    db.migrate().await?;
    assemble(config, db, clock).await
}

/// [`start`] for the commands that act on an existing installation: refuses (instead of
/// creating an empty database) when there is none at the configured place.
pub async fn start_existing(config: Config) -> anyhow::Result<AppState> {
    let db = Db::connect_existing(config.database_url.as_deref(), &config.data_dir).await?;
    db.migrate().await?;
    assemble(config, db, None).await
}

/// Builds the node over an open, migrated database: the context, then each engine, handed to
/// whatever needs it; what follows committed changes is registered on the change feed.
async fn assemble(config: Config, db: Db, clock: Option<SharedClock>) -> anyhow::Result<AppState> {
    let fresh = crate::auth::secrets::generate("");
    let link_secret = crate::store::workspaces::server_secret(&db, "link_signing", &fresh).await?;
    let feed = Feed::new(
        &crate::cluster::new_node_id(),
        db.backend() == crate::store::Backend::Postgres,
    );
    // A driven clock steps the scheduler's runs itself: a wait in real time between its steps
    // would only hold the next step back, so results commit at once there.
    let patience = if clock.is_some() {
        std::time::Duration::ZERO
    } else {
        CHECK_RESULT_PATIENCE
    };
    let clock = clock.unwrap_or_else(|| Arc::new(SystemClock));
    let cx = Cx::new(config, db, clock, feed, link_secret);
    // Whatever holds the context wakes the worker after enqueueing (`Cx::wake_deliveries`).
    let deliveries = DeliveryQueue::new(
        cx.config().notify_deny_private_addresses,
        cx.deliveries_bell(),
    );
    let mailer = match &cx.config().smtp {
        Some(smtp) => Some(Mailer::new(smtp)?),
        None => None,
    };
    let live = Hub::new(cx.config().stream_limits());
    let status_pages = PageCache::default();
    let pages = status_pages.clone();
    cx.feed()
        .register(Arc::new(move |n: &Notice| pages.apply(n)));
    // Every check result and push goes through the one group-commit writer; a push's status
    // change wakes the delivery worker, and committed results reach the live streams.
    let heartbeats = HeartbeatWriter::start(
        cx.db().clone(),
        WriterOptions {
            alert_links: Links::of(&cx),
            wake_deliveries: Some(deliveries.waker()),
            live: Some(live.clone()),
            patience,
            ..WriterOptions::default()
        },
    );
    let deny_private = cx.config().checks_deny_private_addresses;
    let probes = Arc::new(Registry::default().with_deny_private_addresses(deny_private));
    let relay = (cx.db().backend() == crate::store::Backend::Postgres)
        .then(|| Arc::new(ProbeRelay::new(cx.node_id(), cx.db().clone())));
    let runner = Runner::new(cx.clone(), heartbeats, probes, relay);
    let tokens = TokenCaches::default();
    let push_tokens = Arc::new(PushTokens::default());
    register_appliers(cx.feed(), cx.db(), &tokens, &push_tokens);
    let billing = Billing::new(cx.config(), mailer.clone())?;
    let sso = Arc::new(crate::auth::sso::Sso::new(&cx.config().sso)?);
    Ok(AppState::new(Handles {
        billing,
        sso,
        alert_links: Links::of(&cx),
        cx,
        runner,
        tokens,
        push_tokens,
        deliveries,
        mailer,
        live,
        status_pages,
        on_demand: OnDemandChecks::default(),
        metrics: Metrics::global(),
    }))
}

/// Registers on `feed` the caches that follow committed changes: the API keys, the OAuth
/// access tokens and the push tokens (reloaded in the background after a `Resync`, so pushes
/// do not all fall back to the database at once).
fn register_appliers(feed: &Feed, db: &Db, tokens: &TokenCaches, push_tokens: &Arc<PushTokens>) {
    let k = tokens.keys.clone();
    feed.register(Arc::new(move |n: &Notice| k.apply(n)));
    let o = tokens.oauth_tokens.clone();
    feed.register(Arc::new(move |n: &Notice| o.apply(n)));
    let (p, db) = (push_tokens.clone(), db.clone());
    feed.register(Arc::new(move |n: &Notice| {
        p.apply(n);
        if *n == Notice::Resync {
            let (p, db) = (p.clone(), db.clone());
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move {
                    if let Err(e) = p.preload(&db).await {
                        tracing::warn!(error = %e, "could not reload push tokens");
                    }
                });
            }
        }
    }));
}

/// Serves until `shutdown` resolves.
pub async fn run(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    // Raised before anything opens sockets, so every later descriptor fits under it.
    let descriptor_limit = crate::http::serve::raise_descriptor_limit();
    let cancel = CancellationToken::new();
    // Judging stops first, as soon as shutdown begins; everything else after the requests.
    let judging = state.runner().judging().clone();
    // The lease and the outbox stop last: the role is given up only once the scheduler and
    // the watcher have stopped judging, and notices queued until then still go out.
    let cancel_last = CancellationToken::new();
    let last = spawn_cluster(
        state.cx(),
        state.scheduler_role(),
        state.runner().partitions(),
        cancel_last.clone(),
    );
    let workers = spawn_workers(&state, cancel.clone(), judging.clone());
    // Notifications go out from every node (the queue is shared through the database). The
    // delivery worker stops after everything that enqueues, and drains what they left.
    let delivery_stop = crate::alerting::deliver::Stop::default();
    let delivery = crate::alerting::deliver::Worker::new(
        state.cx().clone(),
        state.delivery_queue().clone(),
        state.mailer().cloned(),
    );
    let delivery = tokio::spawn(delivery.run(delivery_stop.clone()));
    let app = crate::http::router(state.clone());
    let addr = listener.local_addr()?;
    let options = crate::http::serve::Options::from_config(state.config(), descriptor_limit);
    tracing::info!(%addr, backend = ?state.db().backend(), max_connections = options.max_connections, "tocsin listening");
    let stop_judging = judging.clone();
    let grace = state.config().shutdown_grace;
    // The one shutdown deadline, fixed when shutdown begins; requests and checks share it.
    let (deadline_tx, deadline_rx) = tokio::sync::oneshot::channel();
    let live = state.live().clone();
    let shutdown = async move {
        shutdown.await;
        let deadline = tokio::time::Instant::now() + grace;
        stop_judging.cancel();
        // Live streams never end by themselves: close them so the requests can finish.
        live.close();
        let _ = deadline_tx.send(deadline);
        deadline
    };
    // Accepted on-demand checks finish, or are stored as cancelled, while requests drain
    // (and while the writer still runs).
    let on_demand = state.on_demand().clone();
    let checks = async move {
        let deadline = deadline_rx.await.ok()?;
        on_demand.finish_by(deadline).await;
        Some(deadline)
    };
    let ((), deadline) = tokio::join!(
        crate::http::serve::serve(listener, app, options, shutdown),
        checks
    );
    judging.cancel();
    tracing::info!("requests finished; finishing background work");
    // A request that was still draining may have accepted a check after the wait above saw
    // none running: it gets what is left of the same deadline.
    let deadline = deadline.unwrap_or_else(tokio::time::Instant::now);
    // Notifications are sent until the deadline, wherever the shutdown is by then.
    let halt = delivery_stop.halt.clone();
    tokio::spawn(async move {
        tokio::time::sleep_until(deadline).await;
        halt.cancel();
    });
    state.on_demand().finish_by(deadline).await;
    // Probe connections outlive the HTTP server once upgraded: close them explicitly.
    state.probes().close_all();
    cancel.cancel();
    for w in workers {
        let _ = w.await;
    }
    cancel_last.cancel();
    for w in last {
        let _ = w.await;
    }
    // Producers have stopped: commit what they queued before the database closes.
    state.heartbeats().shutdown().await;
    // Nothing enqueues any more: what is due goes out (within the deadline) before the
    // database closes, so an alert opened just before the signal is not left for the next
    // start.
    delivery_stop.drain.cancel();
    let _ = delivery.await;
    state.db().close().await;
    tracing::info!("shut down cleanly");
    Ok(())
}

/// What ties this node to the others on a shared (PostgreSQL) database: the outbox sending
/// this node's notices and, when the scheduler is enabled, the lease task contending for the
/// scheduler role (which from then on is held only while the lease is) and the partition
/// task taking this node's share of the monitors. Must start before the scheduler and the
/// watcher.
fn spawn_cluster(
    state: &Cx,
    role: &Role,
    parts: &Partitions,
    cancel: CancellationToken,
) -> Vec<tokio::task::JoinHandle<()>> {
    use crate::cluster::{feed, lease};
    use crate::monitoring::partitions;
    let mut tasks = Vec::new();
    if state.db().backend() != crate::store::Backend::Postgres {
        return tasks;
    }
    tasks.push(tokio::spawn(feed::run_outbox(
        state.feed().clone(),
        state.db().clone(),
        cancel.clone(),
    )));
    if state.config().scheduler_enabled {
        let role = role.clone();
        role.contend();
        let lease = lease::Lease::new(
            state.db().clone(),
            lease::SCHEDULER,
            state.node_id(),
            lease::Timing::default(),
        );
        tasks.push(tokio::spawn(lease::run(lease, role, cancel.clone())));
        let parts = parts.clone();
        parts.contend();
        tasks.push(tokio::spawn(partitions::run(
            state.db().clone(),
            state.node_id().to_string(),
            lease::Timing::default(),
            parts,
            state.feed().subscribe(),
            state.config().shutdown_grace,
            cancel,
        )));
    }
    tasks
}

/// Housekeeping that runs beside the API: evicting idle rate-limit entries, deleting expired
/// sessions and push idempotency keys, pruning heartbeats past their retention, following the
/// change feed (other nodes' notices, caches, list builds) and (unless disabled) the check
/// scheduler with the built-in probe and the push deadline watcher, which judge only while
/// this node holds the scheduler role.
fn spawn_workers(
    http: &AppState,
    cancel: CancellationToken,
    judging: CancellationToken,
) -> Vec<tokio::task::JoinHandle<()>> {
    let state = http.cx();
    let runner = http.runner();
    let s = state.clone();
    let limits = http.clone();
    let cancel_housekeeping = cancel.clone();
    let housekeeping = tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(60));
        loop {
            tokio::select! {
                _ = cancel_housekeeping.cancelled() => break,
                _ = tick.tick() => {
                    let now = s.clock().now_ms();
                    limits.limits().evict_idle(now);
                    if let Err(e) = crate::store::sessions::delete_expired(s.db().writer(), now).await {
                        tracing::warn!(error = %e, "could not delete expired sessions");
                    }
                    // Expired links are kept a week, so following one says it expired.
                    let week_ago = now - 7 * 24 * 3_600_000;
                    if let Err(e) = crate::store::email_verifications::purge_expired(s.db().writer(), week_ago).await {
                        tracing::warn!(error = %e, "could not delete expired email verification links");
                    }
                    if let Err(e) = crate::push::prune_idempotency_keys(&s).await {
                        tracing::warn!(error = %e, "could not prune push idempotency keys");
                    }
                }
            }
        }
    });
    let retention = tokio::spawn(crate::monitoring::retention::run(
        state.clone(),
        runner.scheduler_role().clone(),
        Duration::from_secs(600),
        cancel.clone(),
    ));
    // Push tokens load in the background; until then a push looks its token up once.
    let s = http.clone();
    let preload = tokio::spawn(async move {
        match s.push_tokens().preload(s.db()).await {
            Ok(n) => tracing::debug!(tokens = n, "push tokens loaded"),
            Err(e) => tracing::warn!(error = %e, "could not preload push tokens"),
        }
    });
    let mut workers = vec![housekeeping, retention, preload];
    // Other nodes' notices, and the caches and list builds that follow the feed. One
    // listening connection per node serves the feed, the probe relay and the live relay.
    let listener = state
        .config()
        .database_url
        .as_deref()
        .filter(|_| state.db().backend() == crate::store::Backend::Postgres)
        .map(Listener::new);
    if let Some(listener) = &listener {
        workers.push(tokio::spawn(crate::cluster::feed::run_listener(
            state.feed().clone(),
            listener.subscribe(crate::cluster::feed::CHANNEL),
            cancel.clone(),
        )));
        // Results stored here reach other nodes' live streams.
        workers.push(tokio::spawn(crate::live::relay::run_sender(
            http.live().clone(),
            state.feed().clone(),
            state.db().clone(),
            cancel.clone(),
        )));
        // Remote probes connected here serve the scheduler wherever it runs.
        if let Some((relay, probes)) = runner.relay_handles() {
            workers.push(tokio::spawn(crate::probes::relay::run(
                relay,
                probes,
                listener.subscribe(crate::probes::relay::CHANNEL),
                cancel.clone(),
            )));
        }
        workers.push(tokio::spawn(listener.clone().run(cancel.clone())));
    }
    workers.push(tokio::spawn(crate::domain::stream::run(
        state.clone(),
        http.live().clone(),
        listener,
        cancel.clone(),
    )));
    // The caches registered on the feed follow other nodes' notices.
    workers.push(tokio::spawn(crate::cluster::feed::run_appliers(
        state.feed().clone(),
        cancel.clone(),
    )));
    workers.push(tokio::spawn(http.clone().follow_feed(cancel.clone())));
    if state.config().scheduler_enabled {
        let role = runner.scheduler_role();
        workers.push(tokio::spawn(crate::monitoring::scheduler::run(
            runner.clone(),
            judging.clone(),
        )));
        // Escalation judges by the clock too: the scheduling node's job.
        workers.push(tokio::spawn(crate::alerting::escalation::run(
            state.clone(),
            role.clone(),
            judging.clone(),
        )));
        // Incidents of held alerts whose hold is over: also the scheduling node's.
        workers.push(tokio::spawn(crate::alerting::auto_incidents::run(
            state.clone(),
            role.clone(),
            judging.clone(),
        )));
        // Announcing maintenance as it comes within the horizon: also the scheduling node's.
        workers.push(tokio::spawn(crate::alerting::maintenance_notice::run(
            state.clone(),
            role.clone(),
            judging.clone(),
        )));
        workers.push(tokio::spawn(crate::monitoring::maintenance::run(
            runner.clone(),
            judging.clone(),
        )));
        // Ending flapping when a monitor's window goes quiet: the scheduling node's too.
        workers.push(tokio::spawn(crate::monitoring::flapping::run(
            state.clone(),
            role.clone(),
            judging.clone(),
        )));
        workers.push(tokio::spawn(crate::push::watcher::run(
            runner.clone(),
            judging,
        )));
    }
    workers
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutdown signal received");
}

/// Exit code of a server interrupted twice: 128 + SIGINT, as shells report an interrupt.
pub const HURRIED_EXIT_CODE: i32 = 130;

/// [`shutdown_signal`] for `tocsin serve`: resolves on the first SIGINT or SIGTERM, and from
/// then on a SIGINT (a person pressing Ctrl-C again during the shutdown grace) ends the
/// process at once with [`HURRIED_EXIT_CODE`], logging that it did. What was still in flight
/// is then what a crash leaves: committed data is safe, deliveries cut short are sent again
/// after their claims lapse on the next start.
///
/// The handlers are installed by the call itself, not by the first poll of the future it
/// returns: a signal sent as soon as the server answers (a supervisor stopping what it just
/// saw become ready) must find them in place rather than the default, which kills the
/// process. Call it inside the runtime.
pub fn shutdown_signal_or_hurry() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let signals = {
        use tokio::signal::unix::{signal, SignalKind};
        // Both registered before the first signal, so a second Ctrl-C right behind the first
        // is kept for the task below rather than lost.
        match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(interrupt), Ok(terminate)) => Some((interrupt, terminate)),
            _ => None,
        }
    };
    async move {
        #[cfg(unix)]
        {
            let Some((mut interrupt, mut terminate)) = signals else {
                return shutdown_signal().await;
            };
            tokio::select! {
                _ = interrupt.recv() => {},
                _ = terminate.recv() => {},
            }
            tracing::info!("shutdown signal received (press Ctrl-C again to exit at once)");
            tokio::spawn(async move {
                if interrupt.recv().await.is_some() {
                    tracing::warn!(
                        code = HURRIED_EXIT_CODE,
                        "interrupted again: exiting at once, without finishing what is in flight"
                    );
                    std::process::exit(HURRIED_EXIT_CODE);
                }
            });
        }
        #[cfg(not(unix))]
        shutdown_signal().await;
    }
}
