//! The integration suite, one test binary (one link instead of one per file): each module is
//! one area of the service, tested through a real server on the backend the run selects.

#![allow(clippy::unwrap_used)]

mod alerting_e2e;
mod alerts;
mod api_keys;
mod auth;
mod channels;
mod check_policy;
mod cli;
mod cluster;
mod common;
mod config_as_code;
mod config_schemas;
mod contract;
mod corrupt_rows;
mod custom_domains;
mod cycle_events;
mod dashboard;
mod delivery;
mod delivery_binary;
mod detection;
mod errors;
mod escalation;
mod flapping;
mod hardening;
mod heartbeats;
mod hostile_input;
mod incidents;
mod layers;
mod maintenance;
mod mcp;
mod monitor_list;
mod monitor_summary;
mod monitors;
mod oauth;
mod openapi;
mod ops_binary;
mod page_news;
mod page_time;
mod postmortems;
mod private_pages;
mod probes;
mod projects;
mod public_pages;
mod push;
mod push_binary;
mod regions;
mod scheduler;
mod shutdown_binary;
mod sign_in_binary;
mod smoke;
mod status_pages;
mod stream;
mod subscribers;
mod workspace;
