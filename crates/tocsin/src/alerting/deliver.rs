//! The delivery worker: sends what the outbox holds and records every attempt. It runs on
//! every node. [`Worker`] owns what it sends with: the context, the queue handle (wake-up and
//! outbound client) and the mailer; the composition root builds it and runs it.
//!
//! - **Claim.** Due `PENDING` attempts are claimed in batches by setting `claimed_until`
//!   ([`CLAIM_MS`] ahead, well past an attempt's 10 s budget); on PostgreSQL with `FOR UPDATE
//!   SKIP LOCKED`, so several nodes share the queue and never claim the same row; on SQLite the
//!   single writer serialises claims.
//! - **Send.** At most [`CONCURRENCY`] attempts at once; each renders its channel's message
//!   (`channels::Provider::render`) and sends it through the one outbound client, or the
//!   mailer for email. An attempt of several requests (an SMS to each of a list of numbers)
//!   sends them together and is delivered only when all of them are; its retry sends them
//!   all again.
//! - **Record.** Outcomes are recorded in batches, one transaction each: the attempt becomes
//!   DELIVERED (a 2xx answer), RETRYING (it failed and the next attempt is inserted PENDING,
//!   due after [`RETRY_SCHEDULE_SECS`] with ±10 % jitter, same message id) or FAILED (the
//!   schedule is spent, or the failure cannot heal by waiting: a refused private address, a
//!   config that no longer renders, a disabled or deleted channel). The record is guarded on
//!   the attempt still being PENDING, so an attempt whose claim lapsed and was redone by
//!   another worker is recorded once.
//! - **Crash.** A process killed between send and record leaves the attempt PENDING with a
//!   claim that lapses; it is then sent again with the same message id (`webhook-id`, the
//!   PagerDuty `dedup_key` and Opsgenie alias are the alert id, Matrix's transaction id is the
//!   message id), so delivery is at least once and providers that deduplicate see it once.
//! - **Subscribers.** An attempt addressed to a status page subscriber rather than a channel
//!   is an email rendered by `super::subscriber_mail`, refused for good once the subscriber
//!   unsubscribed or was deleted; the rest (claim, retries, history) is the same.
//! - **Disabled channels.** Their queued attempts fail at once ("the channel is disabled"):
//!   re-enabling a channel must not release a backlog of stale alerts. A `test` is sent anyway
//!   (someone asked for it).
//! - **Wake-up.** [`DeliveryQueue::wake`] (called after a commit
//!   that enqueued) starts a claim at once; otherwise the worker polls every second for work
//!   enqueued by other nodes and retries falling due.
//! - **Shutdown.** It keeps sending while the server stops ([`Stop`]): once everything that
//!   could enqueue has stopped (requests, checks, the heartbeat writer), it *drains*, claiming
//!   what was due when the drain began until none of it is left and nothing is in flight
//!   (not what other nodes keep enqueueing, nor retries falling due later), so an alert opened just
//!   before the signal goes out before the process exits; at the shutdown deadline it stops
//!   claiming whatever is left. Either way attempts in flight get their time budget to finish
//!   and be recorded; anything cut short is redone after its claim lapses, and what was never
//!   claimed goes out at the next start.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::Rng;
use sha2::{Digest, Sha256};
use tokio::sync::{mpsc, Notify, Semaphore};
use tokio_util::sync::CancellationToken;

use super::channels::outbound::{Outbound, SendError};
use super::channels::{self, ChannelType, HttpRequest, Message, Outgoing};
use super::event::AlertEvent;
use super::subscriber_mail;
use crate::cx::Cx;
use crate::mail::Mailer;
use crate::store::corrupt;
use crate::store::deliveries::{self, Attempted, DeliveryRow, DeliveryStatus};

/// Waits before the 2nd, 3rd ... attempt: after the last one fails, the notification is FAILED.
pub const RETRY_SCHEDULE_SECS: [u64; 7] = [5, 30, 120, 600, 1_800, 3_600, 10_800];
/// How long a claim holds an attempt: beyond the 10 s send budget plus recording.
pub const CLAIM_MS: i64 = 30_000;
/// Attempts in flight at once, per node.
pub const CONCURRENCY: usize = 64;
/// Attempts claimed per query, at most.
const BATCH: usize = 128;
/// How often the queue is looked at without a wake-up.
const POLL: Duration = Duration::from_secs(1);
/// Outcomes recorded per transaction, at most.
const RECORD_BATCH: usize = 256;

/// The node's delivery queue handle: the wake-up and the outbound client.
#[derive(Clone)]
pub struct DeliveryQueue {
    wake: Arc<Notify>,
    outbound: Outbound,
}

impl DeliveryQueue {
    /// A queue whose worker wakes on `bell` (the context's, [`crate::cx::Cx::deliveries_bell`]).
    pub fn new(deny_private_addresses: bool, bell: Arc<Notify>) -> DeliveryQueue {
        DeliveryQueue {
            wake: bell,
            outbound: Outbound::new(deny_private_addresses),
        }
    }

    /// Starts a claim now (a wake-up while the worker is busy is kept for its next look).
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// A handle that wakes the worker, for a writer that holds no queue (the heartbeat
    /// writer's push transitions).
    pub fn waker(&self) -> Arc<Notify> {
        Arc::clone(&self.wake)
    }

    pub fn outbound(&self) -> &Outbound {
        &self.outbound
    }
}

/// The delay before attempt `attempt + 1`, jittered by ±10 %; `None` when `attempt` was the
/// last.
pub fn retry_delay_ms(attempt: i64, jitter: f64) -> Option<i64> {
    let index = usize::try_from(attempt - 1).ok()?;
    let base = *RETRY_SCHEDULE_SECS.get(index)? as f64 * 1000.0;
    Some((base * (1.0 + jitter.clamp(-0.1, 0.1))).round() as i64)
}

/// One attempt made, to record.
struct Done {
    row: DeliveryRow,
    kind: Option<ChannelType>,
    attempted: Attempted,
    next_due: Option<i64>,
}

/// How the worker stops (see "Shutdown" in the module documentation).
#[derive(Clone, Debug, Default)]
pub struct Stop {
    /// Nothing more will be enqueued here: send what is due, return once nothing more is.
    pub drain: CancellationToken,
    /// Claim nothing more (the shutdown deadline).
    pub halt: CancellationToken,
}

/// The delivery worker of one node.
pub struct Worker {
    cx: Cx,
    /// The wake-up it waits on and the outbound client it sends through.
    queue: DeliveryQueue,
    /// Sends email channels' and subscribers' messages; `None` without SMTP settings.
    mailer: Option<Mailer>,
}

impl Worker {
    pub fn new(cx: Cx, queue: DeliveryQueue, mailer: Option<Mailer>) -> Worker {
        Worker { cx, queue, mailer }
    }

    /// Runs until `stop` says (see [`Stop`]).
    pub async fn run(self, stop: Stop) {
        run(Arc::new(self), stop).await
    }
}

async fn run(core: Arc<Worker>, stop: Stop) {
    let cancel = &stop.halt;
    let permits = Arc::new(Semaphore::new(CONCURRENCY));
    let (tx, rx) = mpsc::channel::<Done>(CONCURRENCY * 4);
    let recorder = tokio::spawn(record_loop(core.cx.clone(), rx));
    let queue = core.queue.clone();
    let mut drain_from: Option<i64> = None;
    loop {
        if cancel.is_cancelled() {
            break;
        }
        let draining = stop.drain.is_cancelled();
        let free = permits.available_permits().min(BATCH);
        if free == 0 {
            tokio::select! {
                _ = cancel.cancelled() => break,
                p = permits.clone().acquire_owned() => drop(p),
            }
            continue;
        }
        let now = core.cx.clock().now_ms();
        // A drain sends what was due when it began, not what other nodes keep enqueueing.
        if draining && drain_from.is_none() {
            drain_from = Some(now);
        }
        let due_by = drain_from.unwrap_or(now);
        let rows = match claim(&core.cx, due_by, now, free).await {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!(error = %e, "could not claim deliveries");
                Vec::new()
            }
        };
        let claimed = rows.len();
        let full = claimed == free;
        for row in rows {
            let Ok(permit) = permits.clone().acquire_owned().await else {
                break;
            };
            let core = core.clone();
            let tx = tx.clone();
            tokio::spawn(async move {
                if let Some(done) = attempt_page(&core, row).await {
                    let _ = tx.send(done).await;
                }
                drop(permit);
            });
        }
        if draining && !full {
            if claimed == 0 && permits.available_permits() == CONCURRENCY {
                // Nothing due, nothing in flight: drained.
                break;
            }
            // Everything due is on its way: look again once it has gone (a failed attempt's
            // retry is due later, so it is not waited for).
            tokio::select! {
                _ = cancel.cancelled() => break,
                all = permits.acquire_many(CONCURRENCY as u32) => drop(all),
            }
            continue;
        }
        if !full {
            tokio::select! {
                _ = cancel.cancelled() => break,
                _ = stop.drain.cancelled(), if !draining => {}
                _ = queue.wake.notified() => {}
                _ = tokio::time::sleep(POLL) => {}
            }
        }
    }
    // Attempts in flight end within the client's budget; their outcomes are then recorded.
    let budget = channels::outbound::TIMEOUT + Duration::from_secs(2);
    let _ = tokio::time::timeout(budget, permits.acquire_many(CONCURRENCY as u32)).await;
    drop(tx);
    let _ = tokio::time::timeout(budget, recorder).await;
}

/// Claims up to `limit` attempts due by `due_by`, for [`CLAIM_MS`] from `now`.
async fn claim(
    cx: &Cx,
    due_by: i64,
    now: i64,
    limit: usize,
) -> Result<Vec<DeliveryRow>, sqlx::Error> {
    let mut tx = cx.db().begin().await?;
    let rows = deliveries::claim(
        &mut tx,
        due_by,
        now + CLAIM_MS,
        i64::try_from(limit).unwrap_or(1),
    )
    .await?;
    tx.commit().await?;
    Ok(rows)
}

/// [`attempt`], with what root-cause alerting asks of an alert's first `alert.opened`
/// attempt (`super::root_cause`): a held page is judged again before it goes, and folds
/// under an outage upstream that opened during its hold instead (`None`: nothing to record,
/// the fold dropped the attempt); a root's page listing more dependents than its transaction
/// folded folds them while it is sent, so that folding ten thousand alerts never delays the
/// page itself.
async fn attempt_page(core: &Worker, row: DeliveryRow) -> Option<Done> {
    let page = row.event == AlertEvent::AlertOpened.as_str() && row.attempt == 1;
    let Some(alert_id) = row.alert_id.clone().filter(|_| page) else {
        return Some(attempt(core, row).await);
    };
    let ws = row.workspace_id.clone();
    if row.due_at > row.created_at {
        match settle_held(&core.cx, &ws, &alert_id).await {
            Ok(true) => return None,
            Ok(false) => {}
            // Paging twice is better than not paging: it goes.
            Err(e) => {
                tracing::warn!(alert = %alert_id, error = %e, "could not judge a held page again")
            }
        }
    }
    if listed(&row.payload) <= super::root_cause::FOLD_IN_PLACE {
        // Folded in the root's own transaction, if any.
        return Some(attempt(core, row).await);
    }
    // The page is claimed: the fold goes beside it, and the attempt is recorded after both.
    let (done, folded) = tokio::join!(attempt(core, row), fold_held(&core.cx, &ws, &alert_id));
    if let Err(e) = folded {
        // The held pages are judged again when they fall due.
        tracing::warn!(alert = %alert_id, error = %e, "could not fold held alerts under their root");
    }
    Some(done)
}

/// How many dependents a stored `alert.opened` body lists (`data.dependents`).
fn listed(payload: &str) -> usize {
    serde_json::from_str::<serde_json::Value>(payload)
        .ok()
        .and_then(|v| v["data"]["dependents"].as_array().map(Vec::len))
        .unwrap_or(0)
}

/// [`super::root_cause::settle_held`] in a transaction of its own.
async fn settle_held(cx: &Cx, ws: &str, alert_id: &str) -> Result<bool, sqlx::Error> {
    let mut tx = cx.db().begin().await?;
    let folded = super::root_cause::settle_held(&mut tx, ws, alert_id, cx.clock().now_ms()).await?;
    tx.commit().await?;
    Ok(folded)
}

/// [`super::root_cause::fold_held`] in a transaction of its own.
async fn fold_held(cx: &Cx, ws: &str, root_id: &str) -> Result<usize, sqlx::Error> {
    let mut tx = cx.db().begin().await?;
    let folded = super::root_cause::fold_held(&mut tx, ws, root_id, cx.clock().now_ms()).await?;
    tx.commit().await?;
    Ok(folded)
}

/// Why an attempt failed, and whether waiting can help.
struct Failure {
    text: String,
    retry: bool,
    response_status: Option<i64>,
}

impl Failure {
    fn permanent(text: impl Into<String>) -> Failure {
        Failure {
            text: text.into(),
            retry: false,
            response_status: None,
        }
    }
}

/// Makes one attempt (never fails: every outcome is something to record).
async fn attempt(core: &Worker, row: DeliveryRow) -> Done {
    let started = Instant::now();
    let now = core.cx.clock().now_ms();
    let mut kind = None;
    let mut digest = None;
    let result = send(core, &row, &mut kind, &mut digest).await;
    let latency_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
    let done_at = core.cx.clock().now_ms();
    let (attempted, next_due) = match result {
        Ok(status) => (
            Attempted {
                status: DeliveryStatus::Delivered,
                response_status: status,
                error: None,
                latency_ms: Some(latency_ms),
                payload_digest: digest,
                attempted_at: now,
                delivered_at: Some(done_at),
            },
            None,
        ),
        Err(f) => {
            let jitter = rand::thread_rng().gen_range(-0.1..=0.1);
            let next = if f.retry {
                retry_delay_ms(row.attempt, jitter).map(|d| done_at + d)
            } else {
                None
            };
            (
                Attempted {
                    status: if next.is_some() {
                        DeliveryStatus::Retrying
                    } else {
                        DeliveryStatus::Failed
                    },
                    response_status: f.response_status,
                    error: Some(clip(&f.text, 1_000)),
                    latency_ms: Some(latency_ms),
                    payload_digest: digest,
                    attempted_at: now,
                    delivered_at: None,
                },
                next,
            )
        }
    };
    Done {
        row,
        kind,
        attempted,
        next_due,
    }
}

fn clip(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

fn sha256_hex(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
    }
    hex::encode(h.finalize())
}

/// Renders and sends; `Ok` carries the HTTP status (none for email).
async fn send(
    core: &Worker,
    row: &DeliveryRow,
    kind_out: &mut Option<ChannelType>,
    digest: &mut Option<String>,
) -> Result<Option<i64>, Failure> {
    if let Some(subscriber_id) = row.subscriber_id.as_deref() {
        return send_to_subscriber(core, row, subscriber_id, digest).await;
    }
    let channel_id = row
        .channel_id
        .as_deref()
        .ok_or_else(|| Failure::permanent("the delivery names no channel"))?;
    // A stored event or channel type this build cannot read is reported (logged, counted)
    // and fails the attempt for good: waiting will not make it readable.
    let event: AlertEvent = corrupt::parse("deliveries", &row.id, "event", &row.event)
        .map_err(|_| Failure::permanent(format!("unknown event {:?}", row.event)))?;
    let channel = crate::store::channels::get(core.cx.db().reader(), &row.workspace_id, channel_id)
        .await
        .map_err(|e| Failure {
            text: format!("could not read the channel: {e}"),
            retry: true,
            response_status: None,
        })?
        .ok_or_else(|| Failure::permanent("the channel was deleted"))?;
    let kind: ChannelType =
        corrupt::parse("notification_channels", &channel.id, "type", &channel.kind)
            .map_err(|_| Failure::permanent(format!("unknown channel type {:?}", channel.kind)))?;
    *kind_out = Some(kind);
    if channel.enabled == 0 && event != AlertEvent::Test {
        return Err(Failure::permanent("the channel is disabled"));
    }
    let config: serde_json::Value = serde_json::from_str(&channel.config)
        .map_err(|_| Failure::permanent("the channel's stored config is not JSON"))?;
    let msg = Message::from_body(
        event,
        &row.message_id,
        &row.payload,
        core.cx.clock().now_ms(),
    );
    let outgoing = channels::provider(kind)
        .render(&config, &msg)
        .map_err(|e| Failure::permanent(format!("the channel's config cannot be used: {e}")))?;
    match outgoing {
        Outgoing::Http(req) => {
            *digest = Some(sha256_hex(&[&req.body]));
            send_http(core, &req).await
        }
        Outgoing::HttpEach(requests) => {
            let bodies: Vec<&[u8]> = requests.iter().map(|(_, r)| r.body.as_slice()).collect();
            *digest = Some(sha256_hex(&bodies));
            // At once, not in turn: the attempt stays within one request's time budget, far
            // inside its claim, however many there are.
            let results =
                futures::future::join_all(requests.iter().map(|(_, r)| send_http(core, r))).await;
            all_sent(requests.iter().map(|(to, _)| to.as_str()).zip(results))
        }
        Outgoing::Email(mail) => {
            *digest = Some(sha256_hex(&[mail.text.as_bytes(), mail.html.as_bytes()]));
            let mailer = core.mailer.as_ref().ok_or_else(no_smtp)?;
            mailer
                .send_alternative(&mail.to, &mail.subject, mail.text, mail.html)
                .await
                .map(|()| None)
                .map_err(|e| Failure {
                    text: format!("SMTP: {e}"),
                    retry: true,
                    response_status: None,
                })
        }
    }
}

fn no_smtp() -> Failure {
    Failure {
        text: "this server has no SMTP settings (--smtp-url, --smtp-from)".into(),
        retry: true,
        response_status: None,
    }
}

/// Sends a status page subscriber's email (`super::subscriber_mail`): read the subscriber at
/// send time, so one who unsubscribed or was deleted after the email was queued gets nothing.
async fn send_to_subscriber(
    core: &Worker,
    row: &DeliveryRow,
    subscriber_id: &str,
    digest: &mut Option<String>,
) -> Result<Option<i64>, Failure> {
    let s = crate::store::subscribers::by_id(core.cx.db().reader(), subscriber_id)
        .await
        .map_err(|e| Failure {
            text: format!("could not read the subscriber: {e}"),
            retry: true,
            response_status: None,
        })?
        .ok_or_else(|| Failure::permanent("the subscriber was deleted"))?;
    if s.unsubscribed_at.is_some() {
        return Err(Failure::permanent("the subscriber unsubscribed"));
    }
    if s.suspended_at.is_some() {
        return Err(Failure::permanent(
            "the subscriber is suspended (its status page turned private)",
        ));
    }
    // As a channel's: an event this build cannot read is reported and fails for good.
    let event: subscriber_mail::SubscriberEvent =
        corrupt::parse("deliveries", &row.id, "event", &row.event)
            .map_err(|_| Failure::permanent(format!("no subscriber email for {:?}", row.event)))?;
    if event != subscriber_mail::SubscriberEvent::Confirm && s.verified_at.is_none() {
        return Err(Failure::permanent(
            "the subscriber has not confirmed the subscription",
        ));
    }
    let links = subscriber_mail::SubscriberLinks::new(
        core.cx.config().public_url.as_str(),
        core.cx.link_secret(),
    );
    let mail =
        subscriber_mail::render(event, &row.payload, &s.id, &links, core.cx.clock().now_ms())
            .map_err(|e| {
                corrupt::CorruptRow::new("deliveries", &row.id, "payload", clip(&row.payload, 200));
                Failure::permanent(format!("the stored payload is not JSON: {e}"))
            })?;
    *digest = Some(sha256_hex(&[mail.text.as_bytes(), mail.html.as_bytes()]));
    let mailer = core.mailer.as_ref().ok_or_else(no_smtp)?;
    mailer
        .send_with_unsubscribe(
            &s.email,
            &mail.subject,
            mail.text,
            mail.html,
            &mail.unsubscribe_url,
        )
        .await
        .map(|()| None)
        .map_err(|e| Failure {
            text: format!("SMTP: {e}"),
            retry: true,
            response_status: None,
        })
}

/// Sends one HTTP request; `Ok` carries the answer's status.
async fn send_http(core: &Worker, req: &HttpRequest) -> Result<Option<i64>, Failure> {
    match core.queue.outbound().send(req).await {
        Ok(answer) if (200..300).contains(&answer.status) => Ok(Some(i64::from(answer.status))),
        Ok(answer) => {
            let text = if (300..400).contains(&answer.status) {
                format!(
                    "HTTP {}: a redirect to another host, not followed (redirects are followed on the same host only)",
                    answer.status
                )
            } else {
                let body = String::from_utf8_lossy(&answer.body);
                let body = body.trim();
                if body.is_empty() {
                    format!("HTTP {}", answer.status)
                } else {
                    format!("HTTP {}: {}", answer.status, clip(body, 500))
                }
            };
            Err(Failure {
                text,
                retry: true,
                response_status: Some(i64::from(answer.status)),
            })
        }
        Err(SendError::Denied(text)) => Err(Failure::permanent(text)),
        Err(SendError::Transport(text)) => Err(Failure {
            text,
            retry: true,
            response_status: None,
        }),
    }
}

/// The outcome of a delivery made of several requests: delivered when every one was (with
/// the last status), otherwise failed with each failure named by what it was for, the first
/// failure's status, and a retry only when every failure may heal by waiting (a retry resends
/// them all).
fn all_sent<'a>(
    results: impl Iterator<Item = (&'a str, Result<Option<i64>, Failure>)>,
) -> Result<Option<i64>, Failure> {
    let mut last = None;
    let mut failed: Vec<(&str, Failure)> = Vec::new();
    let mut total = 0;
    for (what, result) in results {
        total += 1;
        match result {
            Ok(status) => last = status.or(last),
            Err(f) => failed.push((what, f)),
        }
    }
    let Some((_, first)) = failed.first() else {
        return Ok(last);
    };
    let response_status = first.response_status;
    let retry = failed.iter().all(|(_, f)| f.retry);
    let text = format!(
        "{} of {total} failed: {}",
        failed.len(),
        failed
            .iter()
            .map(|(what, f)| format!("{what}: {}", f.text))
            .collect::<Vec<_>>()
            .join("; ")
    );
    Err(Failure {
        text,
        retry,
        response_status,
    })
}

async fn record_loop(cx: Cx, mut rx: mpsc::Receiver<Done>) {
    let mut batch = Vec::with_capacity(RECORD_BATCH);
    while let Some(d) = rx.recv().await {
        batch.push(d);
        while batch.len() < RECORD_BATCH {
            match rx.try_recv() {
                Ok(d) => batch.push(d),
                Err(_) => break,
            }
        }
        if let Err(e) = record(&cx, &batch).await {
            // The claims lapse and the attempts are made again: at least once.
            tracing::warn!(error = %e, attempts = batch.len(), "could not record delivery attempts");
        }
        batch.clear();
    }
}

async fn record(cx: &Cx, batch: &[Done]) -> Result<(), sqlx::Error> {
    let now = cx.clock().now_ms();
    let mut tx = cx.db().begin().await?;
    for d in batch {
        if deliveries::record(&mut tx, &d.row.id, &d.attempted).await? {
            if let Some(due) = d.next_due {
                deliveries::next_attempt(&mut tx, &d.row, due, now).await?;
            }
        }
    }
    tx.commit().await?;
    for d in batch {
        let outcome = match d.attempted.status {
            DeliveryStatus::Delivered => "delivered",
            DeliveryStatus::Retrying => "retrying",
            DeliveryStatus::Failed | DeliveryStatus::Pending => "failed",
        };
        let kind = match (d.kind, &d.row.subscriber_id) {
            (Some(k), _) => k.as_str(),
            (None, Some(_)) => "subscriber_email",
            (None, None) => "unknown",
        };
        metrics::counter!("notification_deliveries_total", "channel_type" => kind, "outcome" => outcome)
            .increment(1);
        if d.attempted.status != DeliveryStatus::Delivered {
            tracing::info!(delivery = %d.row.id, channel = d.row.channel_id.as_deref().unwrap_or(""),
                subscriber = d.row.subscriber_id.as_deref().unwrap_or(""), attempt = d.row.attempt,
                status = d.attempted.status.as_str(), error = d.attempted.error.as_deref().unwrap_or(""),
                "notification attempt failed");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_requests_are_delivered_only_together() {
        let ok = |s: i64| Ok(Some(s));
        let failed = |text: &str, retry: bool, status: Option<i64>| {
            Err(Failure {
                text: text.into(),
                retry,
                response_status: status,
            })
        };
        assert_eq!(
            all_sent([("a", ok(201)), ("b", ok(200))].into_iter()).ok(),
            Some(Some(200))
        );
        let Err(f) = all_sent(
            [
                ("+1", ok(201)),
                ("+2", failed("HTTP 503", true, Some(503))),
                ("+3", failed("timed out", true, None)),
            ]
            .into_iter(),
        ) else {
            panic!("delivered");
        };
        assert_eq!(f.text, "2 of 3 failed: +2: HTTP 503; +3: timed out");
        assert_eq!((f.retry, f.response_status), (true, Some(503)));
        // One failure that waiting cannot heal makes the whole attempt final.
        let Err(f) = all_sent(
            [
                ("+1", failed("refused", false, None)),
                ("+2", failed("HTTP 500", true, Some(500))),
            ]
            .into_iter(),
        ) else {
            panic!("delivered");
        };
        assert!(!f.retry);
    }

    #[test]
    fn the_schedule_is_jittered_within_ten_percent_and_ends() {
        assert_eq!(retry_delay_ms(1, 0.0), Some(5_000));
        assert_eq!(retry_delay_ms(1, 0.1), Some(5_500));
        assert_eq!(retry_delay_ms(1, -0.5), Some(4_500));
        assert_eq!(retry_delay_ms(2, 0.0), Some(30_000));
        assert_eq!(retry_delay_ms(7, 0.0), Some(10_800_000));
        assert_eq!(retry_delay_ms(8, 0.0), None);
        assert_eq!(retry_delay_ms(0, 0.0), None);
    }
}
