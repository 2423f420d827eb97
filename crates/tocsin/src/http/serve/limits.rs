//! The cap on open client connections: a global maximum, a per-address share of it, and the
//! descriptor budget both must fit in. At start the process's soft descriptor limit is raised
//! to its hard limit, and the global maximum is lowered if it would not leave room for what
//! else the process opens (database connections, check sockets, probe sockets, files): a
//! server that runs out of descriptors cannot check its monitors and reports its own
//! exhaustion as their outage.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// Open connections within the caps; a [`Permit`] per connection gives its place back on drop.
#[derive(Debug)]
pub struct ConnectionLimits {
    max: usize,
    per_ip: usize,
    open: Mutex<Open>,
}

#[derive(Debug, Default)]
struct Open {
    total: usize,
    by_ip: HashMap<IpAddr, usize>,
}

/// Why a connection was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The server holds its maximum of open connections.
    Total,
    /// This client address holds its share.
    PerIp,
}

impl ConnectionLimits {
    /// `per_ip` 0 means no per-address share (behind a reverse proxy every client has the
    /// proxy's address).
    pub fn new(max: usize, per_ip: usize) -> Arc<Self> {
        Arc::new(ConnectionLimits {
            max: max.max(1),
            per_ip,
            open: Mutex::new(Open::default()),
        })
    }

    pub fn max(&self) -> usize {
        self.max
    }

    /// Open connections now.
    pub fn open(&self) -> usize {
        self.lock().total
    }

    /// A place for a new connection from `ip`, if there is one.
    pub fn try_acquire(self: &Arc<Self>, ip: IpAddr) -> Result<Permit, Refusal> {
        // An IPv4 client of a dual-stack listener arrives as ::ffff:a.b.c.d; it is one address.
        let ip = ip.to_canonical();
        let mut open = self.lock();
        if open.total >= self.max {
            return Err(Refusal::Total);
        }
        let mine = open.by_ip.entry(ip).or_insert(0);
        if self.per_ip > 0 && *mine >= self.per_ip {
            return Err(Refusal::PerIp);
        }
        *mine += 1;
        open.total += 1;
        Ok(Permit {
            limits: Arc::clone(self),
            ip,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        // The counters stay consistent even if a holder panicked: each update is one step.
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One connection's place; held by the connection's IO, so an upgraded (WebSocket)
/// connection keeps it for as long as it is open.
#[derive(Debug)]
pub struct Permit {
    limits: Arc<ConnectionLimits>,
    ip: IpAddr,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut open = self.limits.lock();
        open.total = open.total.saturating_sub(1);
        if let Some(n) = open.by_ip.get_mut(&self.ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.by_ip.remove(&self.ip);
            }
        }
    }
}

/// Raises the soft descriptor limit to the hard one; returns the limit now in force, if known.
pub fn raise_descriptor_limit() -> Option<u64> {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(n) => {
            tracing::debug!(limit = n, "descriptor limit");
            Some(n)
        }
        Err(e) => {
            tracing::warn!(error = %e, "could not raise the descriptor limit");
            None
        }
    }
}

/// The connection maximum that fits in `descriptor_limit`: a quarter of the descriptors (at
/// least 64) stays for everything that is not a client connection.
pub fn fit_to_descriptors(max: usize, descriptor_limit: Option<u64>) -> usize {
    let Some(limit) = descriptor_limit else {
        return max;
    };
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let usable = limit.saturating_sub((limit / 4).max(64)).max(1);
    max.min(usable)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn caps_total_and_per_address_and_gives_places_back() {
        let limits = ConnectionLimits::new(3, 2);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let a1 = limits.try_acquire(a).unwrap();
        let _a2 = limits.try_acquire(a).unwrap();
        assert_eq!(limits.try_acquire(a).unwrap_err(), Refusal::PerIp);
        // The same address seen through a dual-stack listener shares the share.
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(limits.try_acquire(mapped).unwrap_err(), Refusal::PerIp);
        let _b1 = limits.try_acquire(b).unwrap();
        assert_eq!(limits.try_acquire(b).unwrap_err(), Refusal::Total);
        drop(a1);
        assert_eq!(limits.open(), 2);
        let _b2 = limits.try_acquire(b).unwrap();
        let unshared = ConnectionLimits::new(10, 0);
        let held: Vec<_> = (0..10).map(|_| unshared.try_acquire(a).unwrap()).collect();
        assert_eq!(unshared.try_acquire(a).unwrap_err(), Refusal::Total);
        drop(held);
        assert_eq!(unshared.open(), 0);
    }

    #[test]
    fn the_maximum_leaves_descriptors_for_the_rest() {
        assert_eq!(fit_to_descriptors(10_000, None), 10_000);
        assert_eq!(fit_to_descriptors(10_000, Some(1_048_576)), 10_000);
        assert_eq!(fit_to_descriptors(10_000, Some(8_192)), 6_144);
        assert_eq!(fit_to_descriptors(10_000, Some(256)), 192);
        assert_eq!(fit_to_descriptors(10_000, Some(10)), 1);
    }
}
