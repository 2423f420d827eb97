//! Tocsin: uptime monitoring, alerting and public status pages in one binary.
//!
//! The crate is laid out by concern; `ARCHITECTURE.md` at the repository root maps it.

pub mod alerting;
pub mod audit;
pub mod auth;
pub mod billing;
pub mod cache;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod cx;
pub mod domain;
pub mod http;
pub mod ids;
pub mod live;
pub mod mail;
pub mod monitoring;
pub mod probes;
pub mod public;
pub mod push;
pub mod schema;
pub mod server;
pub mod store;
pub mod telemetry;
pub mod text;
