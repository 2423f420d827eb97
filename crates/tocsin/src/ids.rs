//! Identifiers: UUIDv7 strings, so they sort by creation time and keyset pages are stable.

pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}
