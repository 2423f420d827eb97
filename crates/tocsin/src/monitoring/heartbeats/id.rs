//! A heartbeat's API id: a UUIDv7 carrying its key `(monitor_seq, ts, region_id)` and nothing
//! else (the time in the 48-bit timestamp, the region in the 12 `rand_a` bits, the monitor seq
//! in the 62 `rand_b` bits), and the bounds a key must keep to fit it.

/// Timestamps must fit the 48 bits of the id.
pub(super) const MAX_TS: i64 = 1 << 48;
pub(super) const MAX_REGION: i64 = (1 << 12) - 1;
pub(super) const MAX_SEQ: i64 = (1 << 62) - 1;

/// The API id of the heartbeat `(monitor_seq, ts, region_id)`: a UUIDv7 carrying the key.
pub fn encode_id(monitor_seq: i64, ts: i64, region_id: i64) -> String {
    let ts = (ts as u128) & ((1 << 48) - 1);
    let region = (region_id as u128) & 0xfff;
    let seq = (monitor_seq as u128) & ((1 << 62) - 1);
    let v = (ts << 80) | (0x7 << 76) | (region << 64) | (0b10 << 62) | seq;
    uuid::Uuid::from_u128(v).to_string()
}

/// The key `(monitor_seq, ts, region_id)` of a heartbeat id, or `None` if it is not one.
pub fn decode_id(id: &str) -> Option<(i64, i64, i64)> {
    let u = uuid::Uuid::parse_str(id).ok()?;
    let v = u.as_u128();
    if (v >> 76) & 0xf != 0x7 || (v >> 62) & 0b11 != 0b10 {
        return None;
    }
    let ts = (v >> 80) as i64;
    let region = ((v >> 64) & 0xfff) as i64;
    let seq = (v & ((1 << 62) - 1)) as i64;
    Some((seq, ts, region))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_sort_by_time() {
        let a = encode_id(42, 1_700_000_000_123, 3);
        let b = encode_id(7, 1_700_000_000_124, 1);
        assert_eq!(decode_id(&a), Some((42, 1_700_000_000_123, 3)));
        assert!(a < b);
        assert_eq!(
            uuid::Uuid::parse_str(&a).map(|u| u.get_version_num()).ok(),
            Some(7)
        );
        assert_eq!(decode_id("not-an-id"), None);
        assert_eq!(decode_id(&crate::ids::new_id()).map(|_| ()), Some(()));
    }
}
