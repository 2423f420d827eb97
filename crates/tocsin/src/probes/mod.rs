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

pub mod client;
pub mod keys;
pub mod protocol;
pub mod registry;

pub use registry::Registry;
