//! A heartbeat's phase timings packed into the `timings` blob: five varints in 0.1 ms units.

use tocsin_checks::Timings;

use super::varint::{push_varint, read_varint};
use crate::monitoring::histogram::to_units;

/// Phase timings as five varints in 0.1 ms units: dns, tcp, tls + 1 (0 = no TLS), first
/// byte, transfer. Typically 6 to 10 bytes.
pub fn pack_timings(t: &Timings) -> Vec<u8> {
    let mut out = Vec::with_capacity(10);
    push_varint(&mut out, to_units(t.dns) as u64);
    push_varint(&mut out, to_units(t.tcp) as u64);
    push_varint(&mut out, t.tls.map_or(0, |v| to_units(v) as u64 + 1));
    push_varint(&mut out, to_units(t.first_byte) as u64);
    push_varint(&mut out, to_units(t.transfer) as u64);
    out
}

/// The inverse of [`pack_timings`] (milliseconds, 0.1 ms resolution); `None` if malformed.
pub fn unpack_timings(bytes: &[u8]) -> Option<Timings> {
    let mut pos = 0;
    let mut next = || read_varint(bytes, &mut pos).map(|v| v as f64 / 10.0);
    let dns = next()?;
    let tcp = next()?;
    let tls = next()?;
    let first_byte = next()?;
    let transfer = next()?;
    Some(Timings {
        dns,
        tcp,
        tls: (tls > 0.0).then(|| ((tls * 10.0 - 1.0).round()) / 10.0),
        first_byte,
        transfer,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timings_round_trip() {
        let t = Timings {
            dns: 1.5,
            tcp: 12.3,
            tls: Some(0.0),
            first_byte: 250.1,
            transfer: 0.4,
        };
        let packed = pack_timings(&t);
        assert!(packed.len() <= 10, "{}", packed.len());
        assert_eq!(unpack_timings(&packed), Some(t));
        let plain = Timings { tls: None, ..t };
        assert_eq!(unpack_timings(&pack_timings(&plain)), Some(plain));
        assert_eq!(unpack_timings(&[0x80]), None);
    }
}
