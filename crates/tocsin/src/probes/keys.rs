//! Probe keys as the admin commands see them (`tocsin probe-key create|list|revoke`): region and
//! name rules, minting a `prb_...` key (shown once, stored as its SHA-256) and revoking one.

use super::LOCAL_REGION;
use crate::auth::secrets;
use crate::ids::new_id;
use crate::store::probes::{self, ProbeKeyRow};
use crate::store::Db;

/// The prefix of probe keys, so a leaked one is recognisable.
pub const KEY_PREFIX: &str = "prb_";

const MAX_REGION_CHARS: usize = 63;
const MAX_NAME_CHARS: usize = 100;

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("region: must be 1 to 63 lowercase letters, digits or '-'")]
    BadRegion,
    #[error("region: `local` is the built-in probe's region and takes no keys")]
    LocalRegion,
    #[error("name: must be 1 to 100 printable characters")]
    BadName,
    #[error("no unrevoked probe key with id {0}")]
    NotFound(String),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// Region names: lowercase letters, digits and `-`, 1 to 63 characters (a DNS label's alphabet,
/// so they read well in URLs, metrics labels and logs).
pub fn valid_region(name: &str) -> bool {
    (1..=MAX_REGION_CHARS).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// A freshly minted key: the secret (shown once) and its stored row.
#[derive(Debug, Clone)]
pub struct Minted {
    pub key: String,
    pub row: ProbeKeyRow,
}

/// Mints a key for `region`; the name defaults to the region's.
pub async fn create(
    db: &Db,
    region: &str,
    name: Option<&str>,
    now: i64,
) -> Result<Minted, KeyError> {
    if !valid_region(region) {
        return Err(KeyError::BadRegion);
    }
    if region == LOCAL_REGION {
        return Err(KeyError::LocalRegion);
    }
    let name = name.map(str::trim).unwrap_or(region);
    if name.is_empty()
        || name.chars().count() > MAX_NAME_CHARS
        || name.chars().any(|c| !crate::text::printable(c))
    {
        return Err(KeyError::BadName);
    }
    let key = secrets::generate(KEY_PREFIX);
    let row = ProbeKeyRow {
        id: new_id(),
        region: region.to_string(),
        name: name.to_string(),
        created_at: now,
        revoked_at: None,
        last_seen_at: None,
    };
    probes::insert(db.writer(), &row, &secrets::hash(&key)).await?;
    Ok(Minted { key, row })
}

pub async fn revoke(db: &Db, id: &str, now: i64) -> Result<(), KeyError> {
    if probes::revoke(db.writer(), id, now).await? == 0 {
        return Err(KeyError::NotFound(id.to_string()));
    }
    Ok(())
}

/// The unrevoked key `presented` stands for, if any: found by its hash, then compared again in
/// constant time.
pub async fn authenticate(db: &Db, presented: &str) -> Result<Option<ProbeKeyRow>, sqlx::Error> {
    if !presented.starts_with(KEY_PREFIX) {
        return Ok(None);
    }
    let hash = secrets::hash(presented);
    let Some((row, stored)) = probes::find_active_by_hash(db.reader(), &hash).await? else {
        return Ok(None);
    };
    Ok(secrets::hashes_equal(&stored, &hash).then_some(row))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn region_names() {
        for ok in ["eu-west", "a", "us-east-1", &"x".repeat(63)] {
            assert!(valid_region(ok), "{ok}");
        }
        for bad in ["", "EU", "eu_west", "eu west", "é", &"x".repeat(64)] {
            assert!(!valid_region(bad), "{bad}");
        }
    }
}
