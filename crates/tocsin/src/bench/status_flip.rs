//! The `status-flip` scenario of `tocsin bench`: a public status page read 100,000 times while
//! one of its components' monitors goes DOWN half-way. Every answer must be one whole state,
//! old or new, never a mix (the component DOWN but the page still operational, or the
//! reverse), and once the change is committed the old state may be served for at most a
//! second. The change is real: a PUSH monitor on the page is told `down` over HTTP, through
//! the same push path and transition as any job's check-in.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use tocsin::ids::new_id;
use tocsin::server::AppState;
use tocsin::store::status_pages::ComponentRow;

pub const SLUG: &str = "bench-flip";
/// Requests in all, and after how many the monitor goes down.
pub const REQUESTS: usize = 100_000;
const FLIP_AT: usize = REQUESTS / 2;
const CLIENTS: usize = 32;
const FLIP_COMPONENT: &str = "Flip";
/// The issue's target: the new state is served within a second of the change.
pub const TARGET_STALE_MS: f64 = 1_000.0;

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FlipFigures {
    pub requests: u64,
    pub errors: u64,
    pub requests_per_sec: f64,
    /// Distinct bodies served, and how many of them were old, new or a mix.
    pub distinct_bodies: u64,
    pub old_bodies: u64,
    pub new_bodies: u64,
    pub mixed_bodies: u64,
    /// Responses to requests sent after the change committed that still showed the old state,
    /// and the latest such request's start after the change (0 when none).
    pub old_after_change: u64,
    pub last_old_after_change_ms: f64,
    /// From the change's commit to the first response showing it.
    pub first_new_after_ms: f64,
}

struct Sample {
    sent: Instant,
    body: u64,
}

/// The state one served body shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shown {
    Old,
    New,
    Mixed,
}

fn classify(body: &[u8]) -> Shown {
    let Ok(doc) = serde_json::from_slice::<serde_json::Value>(body) else {
        return Shown::Mixed;
    };
    let page_ok = doc["status"] == "OPERATIONAL";
    let comp_ok = doc["components"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == FLIP_COMPONENT))
        .map(|c| c["status"] == "OPERATIONAL");
    match (page_ok, comp_ok) {
        (true, Some(true)) => Shown::Old,
        (false, Some(false)) => Shown::New,
        _ => Shown::Mixed,
    }
}

fn hash(bytes: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

/// Seeds the page (the scenario's monitors plus one PUSH monitor created through the API, its
/// component first on the page), checks the push monitor in as up, then runs the reads.
pub fn run(
    rt: &tokio::runtime::Runtime,
    state: &AppState,
    addr: SocketAddr,
    workspace_id: &str,
    token: &str,
    monitors: &[(String, i64)],
) -> anyhow::Result<FlipFigures> {
    let base = format!("http://{addr}");
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(CLIENTS)
        .build()?;
    let client_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // The push monitor, through the API (its token is only ever shown there).
    let created: serde_json::Value = client_rt.block_on(async {
        let r = client
            .post(format!("{base}/monitors"))
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(r#"{"name":"flip","type":"PUSH","interval":3600}"#)
            .send()
            .await?;
        let status = r.status();
        let text = r.text().await?;
        if !status.is_success() {
            anyhow::bail!("creating the push monitor: {status} {text}");
        }
        Ok::<_, anyhow::Error>(serde_json::from_str(&text)?)
    })?;
    let push_monitor = created["id"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("the created monitor has no id"))?
        .to_string();
    let push_token = created["pushToken"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("the created push monitor has no pushToken"))?
        .to_string();
    let page_id = rt.block_on(super::status_page::seed_page(
        state.cx(),
        workspace_id,
        SLUG,
        monitors,
    ))?;
    rt.block_on(tocsin::store::status_pages::insert_component(
        state.db().writer(),
        &ComponentRow {
            id: new_id(),
            status_page_id: page_id,
            workspace_id: workspace_id.to_string(),
            monitor_id: Some(push_monitor),
            name: FLIP_COMPONENT.into(),
            description: None,
            group_name: None,
            position: 0,
        },
    ))?;
    let push = |status: &'static str| {
        let client = client.clone();
        let url = format!("{base}/push/{push_token}?status={status}");
        async move {
            let r = client.post(url).send().await?;
            if r.status().as_u16() != 202 {
                anyhow::bail!("push {status}: {}", r.status());
            }
            Ok::<_, anyhow::Error>(())
        }
    };
    client_rt.block_on(push("up"))?;

    let url = Arc::new(format!("{base}/api/v1/status-pages/{SLUG}/summary"));
    let counter = Arc::new(AtomicUsize::new(0));
    let errors = Arc::new(AtomicUsize::new(0));
    let bodies: Arc<Mutex<HashMap<u64, Vec<u8>>>> = Arc::default();
    let started = Instant::now();
    let (samples, changed_at) = client_rt.block_on(async {
        // Warm the page's cache so the first reads measure serving, not the first render.
        let _ = client.get(url.as_str()).send().await;
        let mut tasks = Vec::new();
        for _ in 0..CLIENTS {
            let client = client.clone();
            let url = url.clone();
            let counter = counter.clone();
            let errors = errors.clone();
            let bodies = bodies.clone();
            tasks.push(tokio::spawn(async move {
                let mut out = Vec::new();
                while counter.fetch_add(1, Ordering::Relaxed) < REQUESTS {
                    let sent = Instant::now();
                    let got = match client.get(url.as_str()).send().await {
                        Ok(r) if r.status().is_success() => r.bytes().await.ok(),
                        _ => None,
                    };
                    let Some(b) = got else {
                        errors.fetch_add(1, Ordering::Relaxed);
                        continue;
                    };
                    let h = hash(&b);
                    if let Ok(mut m) = bodies.lock() {
                        m.entry(h).or_insert_with(|| b.to_vec());
                    }
                    out.push(Sample { sent, body: h });
                }
                out
            }));
        }
        while counter.load(Ordering::Relaxed) < FLIP_AT {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        push("down").await?;
        // The 202 comes after the commit: from here the new state exists.
        let changed_at = Instant::now();
        let mut samples = Vec::new();
        for t in tasks {
            samples.extend(t.await?);
        }
        Ok::<_, anyhow::Error>((samples, changed_at))
    })?;
    let elapsed = started.elapsed().as_secs_f64();
    let bodies = bodies.lock().map(|m| m.clone()).unwrap_or_default();
    let shown: HashMap<u64, Shown> = bodies.iter().map(|(h, b)| (*h, classify(b))).collect();
    let count = |s: Shown| shown.values().filter(|v| **v == s).count() as u64;
    let mut old_after = 0u64;
    let mut last_old_after = Duration::ZERO;
    for s in &samples {
        if s.sent > changed_at && shown.get(&s.body) == Some(&Shown::Old) {
            old_after += 1;
            last_old_after = last_old_after.max(s.sent - changed_at);
        }
    }
    // The first new response: the earliest request start that got the new state, after the
    // change (a request started just before may also show it).
    let first_new = samples
        .iter()
        .filter(|s| shown.get(&s.body) == Some(&Shown::New))
        .map(|s| s.sent.saturating_duration_since(changed_at))
        .min()
        .unwrap_or(Duration::MAX);
    Ok(FlipFigures {
        requests: samples.len() as u64,
        errors: errors.load(Ordering::Relaxed) as u64,
        requests_per_sec: samples.len() as f64 / elapsed.max(1e-9),
        distinct_bodies: bodies.len() as u64,
        old_bodies: count(Shown::Old),
        new_bodies: count(Shown::New),
        mixed_bodies: count(Shown::Mixed),
        old_after_change: old_after,
        last_old_after_change_ms: last_old_after.as_secs_f64() * 1000.0,
        first_new_after_ms: if first_new == Duration::MAX {
            f64::NAN
        } else {
            first_new.as_secs_f64() * 1000.0
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_is_old_new_or_a_mix() {
        let body = |page: &str, comp: &str| {
            format!(
                r#"{{"status":"{page}","components":[{{"name":"Other","status":"OPERATIONAL"}},{{"name":"Flip","status":"{comp}"}}]}}"#
            )
        };
        assert_eq!(
            classify(body("OPERATIONAL", "OPERATIONAL").as_bytes()),
            Shown::Old
        );
        assert_eq!(
            classify(body("PARTIAL_OUTAGE", "MAJOR_OUTAGE").as_bytes()),
            Shown::New
        );
        assert_eq!(
            classify(body("OPERATIONAL", "MAJOR_OUTAGE").as_bytes()),
            Shown::Mixed
        );
        assert_eq!(
            classify(body("MAJOR_OUTAGE", "OPERATIONAL").as_bytes()),
            Shown::Mixed
        );
        assert_eq!(classify(b"not json"), Shown::Mixed);
    }
}
