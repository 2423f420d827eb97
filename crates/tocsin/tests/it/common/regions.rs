//! Regions as the API reports them (`GET /regions`), and waits on them: the probe and region
//! tests start real probes and must wait until the server hears (or stops hearing) one.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};

use super::{json_of, User};

/// How long a wait on a region polls before failing the test.
const WAIT: Duration = Duration::from_secs(20);

/// Every region the caller can see.
pub async fn regions(u: &User) -> Vec<Value> {
    let v = json_of(u.call(Method::GET, "/regions", None).await, 200).await;
    v.as_array().unwrap().clone()
}

/// Region `name`, or `null` when it is not listed.
pub async fn region(u: &User, name: &str) -> Value {
    regions(u)
        .await
        .into_iter()
        .find(|r| r["name"] == json!(name))
        .unwrap_or(Value::Null)
}

/// Polls `GET /regions` until region `name` satisfies `ok`; returns it.
pub async fn wait_region(u: &User, name: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    loop {
        let r = region(u, name).await;
        if ok(&r) {
            return r;
        }
        assert!(
            started.elapsed() < WAIT,
            "region {name} never got there: {r}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Polls `GET /regions` until `name`'s `live` is `want` (a region with a probe key stays
/// listed after its probe goes); returns it.
pub async fn wait_live(u: &User, name: &str, want: bool) -> Value {
    wait_region(u, name, |r| r["live"] == json!(want)).await
}
