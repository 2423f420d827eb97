//! The `outbox` scenario of `tocsin bench`: outbox throughput. A WEBHOOK channel points at the
//! built-in loopback target; `count` notifications are enqueued in one transaction (as a storm
//! of alerts would be), the node's delivery worker is woken, and the clock runs until every
//! attempt is recorded DELIVERED: signed, sent over HTTP, answered, and its outcome committed.

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::json;

use tocsin::alerting::event::AlertEvent;
use tocsin::alerting::outbox::{self, Notification};
use tocsin::cx::Cx;
use tocsin::ids::new_id;
use tocsin::server::AppState;
use tocsin::store::channels::ChannelRow;

/// The target on the 2-core reference machine.
pub const TARGET_DELIVERIES_PER_SEC: f64 = 2_000.0;
/// Notifications the scenario queues.
pub const DELIVERIES: usize = 20_000;
/// Longest wait for the queue to drain.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(300);

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct OutboxFigures {
    pub queued: u64,
    pub delivered: u64,
    /// Attempts recorded as anything but DELIVERED.
    pub failed_attempts: u64,
    pub enqueue_secs: f64,
    pub drain_secs: f64,
    pub deliveries_per_sec: f64,
}

async fn count(cx: &Cx, status: &str, channel: &str) -> anyhow::Result<i64> {
    Ok(
        sqlx::query_scalar("SELECT COUNT(*) FROM deliveries WHERE channel_id = $1 AND status = $2")
            .bind(channel)
            .bind(status)
            .fetch_one(cx.db().reader())
            .await?,
    )
}

/// Queues `n` webhook notifications to `url` and measures until all are delivered.
pub async fn measure(
    state: &AppState,
    workspace_id: &str,
    url: &str,
    n: usize,
) -> anyhow::Result<OutboxFigures> {
    let now = state.clock().now_ms();
    let channel = ChannelRow {
        id: new_id(),
        workspace_id: workspace_id.to_string(),
        name: "bench".into(),
        kind: "WEBHOOK".into(),
        config:
            json!({"url": url, "secret": tocsin::alerting::channels::webhook::generate_secret()})
                .to_string(),
        events: json!(["monitor.degraded"]).to_string(),
        is_default: 0,
        enabled: 1,
        version: 1,
        created_at: now,
        updated_at: now,
    };
    tocsin::store::channels::insert(state.db().writer(), &channel).await?;
    let started = Instant::now();
    let mut tx = state.db().begin().await?;
    for i in 0..n {
        outbox::enqueue(
            &mut tx,
            &Notification {
                workspace_id,
                channel_id: &channel.id,
                alert_id: None,
                event: AlertEvent::MonitorDegraded,
                data: &json!({"monitor": {"id": format!("m{i}"), "name": format!("bench {i}"),
                    "type": "HTTP", "url": url, "status": "DEGRADED"}}),
                at_ms: now,
            },
        )
        .await?;
    }
    tx.commit().await?;
    let enqueue_secs = started.elapsed().as_secs_f64();
    let drain_started = Instant::now();
    state.wake_deliveries();
    let target = i64::try_from(n)?;
    loop {
        let delivered = count(
            state.cx(),
            tocsin::store::deliveries::DELIVERED,
            &channel.id,
        )
        .await?;
        if delivered >= target || drain_started.elapsed() > DRAIN_TIMEOUT {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let drain_secs = drain_started.elapsed().as_secs_f64();
    let delivered = count(
        state.cx(),
        tocsin::store::deliveries::DELIVERED,
        &channel.id,
    )
    .await?;
    let retrying = count(state.cx(), tocsin::store::deliveries::RETRYING, &channel.id).await?;
    let failed = count(state.cx(), tocsin::store::deliveries::FAILED, &channel.id).await?;
    Ok(OutboxFigures {
        queued: n as u64,
        delivered: u64::try_from(delivered).unwrap_or(0),
        failed_attempts: u64::try_from(retrying + failed).unwrap_or(0),
        enqueue_secs,
        drain_secs,
        deliveries_per_sec: delivered as f64 / drain_secs.max(1e-9),
    })
}
