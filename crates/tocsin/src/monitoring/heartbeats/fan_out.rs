//! The live streams' share of the writer: what a stream shows of a result, taken only while a
//! stream is open here or on another node, and handed to the live hub once committed (it
//! relays it to other nodes' streams, see `crate::live::relay`).

use super::submission::NewHeartbeat;
use crate::live::{Beat, Hub};

/// What the live streams show of `hb` once committed, or `None` when no stream wants beats.
pub(super) fn beat_of(live: Option<&Hub>, hb: &NewHeartbeat) -> Option<Beat> {
    live.filter(|hub| hub.wants_beats()).map(|_| Beat {
        monitor_id: hb.monitor_id.clone(),
        status: hb.status,
        latency_ms: hb.latency_ms,
        region: hb.region.clone(),
        at_ms: hb.ts_ms,
    })
}

/// Tells the live streams of a committed result.
pub(super) fn publish(live: Option<&Hub>, beat: Option<Beat>) {
    if let (Some(hub), Some(beat)) = (live, beat) {
        hub.heartbeat(beat);
    }
}
