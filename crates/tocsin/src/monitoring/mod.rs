//! Monitoring data: what happens to check results once a check has run. It owns heartbeat
//! storage and the group-commit writer ([`heartbeats`]), hourly rollups ([`rollup`]) and their
//! latency histograms ([`histogram`]), uptime and availability reports ([`report`]), and
//! retention ([`retention`]). The scheduler that runs checks lives beside it and hands every
//! result to [`heartbeats::HeartbeatWriter`].

pub mod heartbeats;
pub mod histogram;
pub mod report;
pub mod retention;
pub mod rollup;
