//! The regions monitors may name, and whether each can check right now (`monitors:read`).
//! `local` is the built-in probe (always live); every other region exists because it has an
//! unrevoked probe key and is live while at least one of its probes is connected
//! ([`crate::probes`]). This is how a region's absence shows: a region that is not live
//! reports nothing, which never fails a check.

use schemars::JsonSchema;
use serde::Serialize;

use crate::auth::{caps, Caller};
use crate::clock::rfc3339;
use crate::cx::Cx;
use crate::domain::DomainError;
use crate::monitoring::LOCAL_REGION;
use crate::probes::relay::Relay;
use crate::probes::Registry;
use crate::schema::exact_object;
use crate::store::probes;

/// One region.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = exact_object)]
pub struct Region {
    pub name: String,
    /// At least one probe of the region is connected.
    pub live: bool,
    /// Connected probes.
    pub probes: u64,
    /// The names of the connected probes, one per connection.
    pub probe_names: Vec<String>,
    #[schemars(with = "Option<crate::schema::Timestamp>")]
    pub last_seen_at: Option<String>,
}

/// Every known region, `local` first, with its live probes.
pub async fn list(
    core: &Cx,
    probes: &Registry,
    relay: Option<&Relay>,
    caller: &Caller,
) -> Result<Vec<Region>, DomainError> {
    caller.require::<caps::MonitorsRead>()?;
    let now = core.clock().now_ms();
    let stored = probes::active_regions(core.db().reader()).await?;
    let live = crate::probes::regions(probes, relay);
    let mut out = vec![Region {
        name: LOCAL_REGION.to_string(),
        live: true,
        probes: 1,
        probe_names: vec![core.config().probe_name.clone()],
        last_seen_at: Some(rfc3339(now)),
    }];
    for (name, seen_stored) in stored {
        let view = live.get(&name).cloned().unwrap_or_default();
        // The store lags the connection by up to a ping interval; the registry by nothing.
        let seen = seen_stored.max(view.last_seen_ms);
        out.push(Region {
            live: !view.probes.is_empty(),
            probes: view.probes.len() as u64,
            probe_names: view.probes,
            last_seen_at: seen.map(rfc3339),
            name,
        });
    }
    Ok(out)
}
