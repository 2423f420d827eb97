//! Remote probes: checks run from other places than the server, in named regions.
//!
//! A probe (`tocsin probe`) connects **out** to the server over a WebSocket
//! (`GET /probe/v1/connect`, `http::probe_socket`), so it works behind NAT, authenticating with a probe
//! key ([`keys`]; the key decides the region). The server drives it: when a scheduler cycle
//! picks a remote region, [`Registry::dispatch`] sends a job to one live probe of that region
//! and waits for its result until a deadline. The probe ([`client`]) runs jobs concurrently
//! with the same check engine as the built-in probe and sends results back in batches. The
//! messages are in [`protocol`].
//!
//! No live probe, a dropped connection or a missed deadline all end the same way: the region
//! reports nothing for that cycle, which the quorum ignores, so a missing probe never makes a
//! false `DOWN`. Which regions are live is visible in `GET /regions` and in the
//! `probes_connected{region}` gauge of `/metrics`.

//!
//! With several nodes on one PostgreSQL database a probe may connect to any of them: the
//! [`relay`] advertises each node's live regions and hands checks to the node holding the
//! region's probe. [`dispatch`], [`is_live`] and [`regions`] see the whole cluster.

pub mod client;
pub mod keys;
pub mod protocol;
pub mod registry;
pub mod relay;

pub use registry::Registry;

use std::collections::BTreeMap;
use std::time::Duration;

use tocsin_checks::Outcome;

use protocol::Job;
use registry::RegionView;
use relay::Relay;

/// The region of the probe built into the server.
pub const LOCAL_REGION: &str = "local";

/// Runs `job` once on a live probe of `region`: one connected to this node (`probes`) if there
/// is one, otherwise one on another node through the `relay`. `None` when no answer came
/// within `wait` (see [`Registry::dispatch`]).
pub async fn dispatch(
    probes: &Registry,
    relay: Option<&Relay>,
    region: &str,
    job: Job,
    wait: Duration,
) -> Option<Outcome> {
    if probes.is_live(region) {
        return probes.dispatch(region, job, wait).await;
    }
    relay?.dispatch(region, &job, wait).await
}

/// Whether a probe of `region` is connected to any node.
pub fn is_live(probes: &Registry, relay: Option<&Relay>, region: &str) -> bool {
    probes.is_live(region) || relay.is_some_and(|r| r.is_live_elsewhere(region))
}

/// Every region with a probe connected here or on another node (or seen here since start),
/// with all its live probes.
pub fn regions(probes: &Registry, relay: Option<&Relay>) -> BTreeMap<String, RegionView> {
    let mut all = probes.snapshot();
    if let Some(relay) = relay {
        for (region, view) in relay.elsewhere() {
            let entry = all.entry(region).or_default();
            entry.probes.extend(view.probes);
            entry.last_seen_ms = entry.last_seen_ms.max(view.last_seen_ms);
        }
    }
    all
}
