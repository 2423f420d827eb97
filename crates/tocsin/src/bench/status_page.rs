//! The public status page scenarios: a published page of 50 components, each over a monitor
//! with 90 days of hourly history, read by its public summary or its HTML page. Seeded through
//! the store (like `seed.rs`): what is measured is the public read path, the rendered cache.

use crate::bench::scenario::{Fixture, RequestSpec};
use crate::bench::seed::{insert_monitors, MonitorSeed};
use tocsin::auth::secrets;
use tocsin::cx::Cx;
use tocsin::domain::status_pages::branding::Branding;
use tocsin::ids::new_id;
use tocsin::store::publishable_keys::KeyRow;
use tocsin::store::status_pages::{ComponentRow, PageRow};

/// The slug of the bench page.
pub const SLUG: &str = "bench";
const COMPONENTS: usize = 50;
const HISTORY_DAYS: i64 = 90;

/// Seeds the page once per run (every page scenario shares it) and returns its slug.
async fn seed(fx: &Fixture) -> anyhow::Result<&'static str> {
    let state = fx.state("status pages")?;
    if tocsin::store::status_pages::by_slug(state.db().reader(), SLUG)
        .await?
        .is_some()
    {
        return Ok(SLUG);
    }
    let ws = fx.workspace_id().await?;
    let monitors = insert_monitors(
        state.cx(),
        &MonitorSeed {
            workspace_id: ws.clone(),
            count: COMPONENTS,
            interval_s: 86_400,
            url: "http://127.0.0.1:9/".into(),
            timeout_s: 5,
        },
    )
    .await?;
    seed_page(state.cx(), &ws, SLUG, &monitors).await?;
    Ok(SLUG)
}

/// A published page at `slug` with one component per monitor (in order, ten to a group) and
/// 90 days of hourly rollups behind each: 60 checks an hour, one DOWN now and then. Returns
/// the page's id.
pub async fn seed_page(
    cx: &Cx,
    ws: &str,
    slug: &str,
    monitors: &[(String, i64)],
) -> anyhow::Result<String> {
    let now = cx.clock().now_ms();
    let hour = now - now.rem_euclid(3_600_000);
    let mut tx = cx.db().begin().await?;
    for (i, (_, seq)) in monitors.iter().enumerate() {
        for h in 0..HISTORY_DAYS * 24 {
            let down = i64::from((h as usize + i).is_multiple_of(97));
            sqlx::query(
                "INSERT INTO heartbeat_hourly (monitor_seq, bucket_start, total, up, down, \
                 degraded, latency_sum, latency_min, latency_max) \
                 VALUES ($1, $2, 60, $3, $4, 0, 600000, 8000, 12000)",
            )
            .bind(*seq)
            .bind(hour - h * 3_600_000)
            .bind(60 - down)
            .bind(down)
            .execute(&mut *tx)
            .await?;
        }
    }
    let page = PageRow {
        id: new_id(),
        workspace_id: ws.to_string(),
        name: "Bench Inc".into(),
        slug: slug.into(),
        published: 1,
        branding: serde_json::to_string(&Branding::defaults())?,
        history_days: HISTORY_DAYS,
        auto_incidents: "OFF".into(),
        visibility: "PUBLIC".into(),
        password_hash: None,
        allowed_email_domains: "[]".into(),
        version: 1,
        created_at: now,
        updated_at: now,
    };
    tocsin::store::status_pages::insert(&mut *tx, &page).await?;
    for (i, (id, _)) in monitors.iter().enumerate() {
        tocsin::store::status_pages::insert_component(
            &mut *tx,
            &ComponentRow {
                id: new_id(),
                status_page_id: page.id.clone(),
                workspace_id: ws.to_string(),
                monitor_id: Some(id.clone()),
                name: format!("Service {i}"),
                description: None,
                group_name: Some(format!("Region {}", i / 10)),
                position: i as i64 + 1,
            },
        )
        .await?;
    }
    tx.commit().await?;
    Ok(page.id)
}

/// `GET /api/v1/status-pages/bench/summary`.
pub async fn summary(fx: &Fixture) -> anyhow::Result<RequestSpec> {
    let slug = seed(fx).await?;
    Ok(RequestSpec::get(&format!(
        "/api/v1/status-pages/{slug}/summary"
    )))
}

/// `GET /s/bench`.
pub async fn page(fx: &Fixture) -> anyhow::Result<RequestSpec> {
    let slug = seed(fx).await?;
    Ok(RequestSpec::get(&format!("/s/{slug}")))
}

/// `GET /api/v1/embed/badge.svg` of the bench page, with a publishable key in `?token=` (as a
/// README badge would carry it).
pub async fn badge(fx: &Fixture) -> anyhow::Result<RequestSpec> {
    let slug = seed(fx).await?;
    let state = fx.state("status-badge")?;
    let page = tocsin::store::status_pages::by_slug(state.db().reader(), slug)
        .await?
        .ok_or_else(|| anyhow::anyhow!("the bench page vanished"))?;
    let key = secrets::generate("pk_");
    let row = KeyRow {
        id: new_id(),
        workspace_id: page.workspace_id.clone(),
        status_page_id: page.id.clone(),
        name: "bench".into(),
        prefix: secrets::hint_with("pk_", &key),
        key_hash: secrets::hash(&key),
        created_at: state.clock().now_ms(),
        last_used_at: None,
    };
    tocsin::store::publishable_keys::insert(state.db().writer(), &row).await?;
    Ok(RequestSpec::get(&format!(
        "/api/v1/embed/badge.svg?token={key}"
    )))
}
