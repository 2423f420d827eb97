//! Many rows as one statement parameter: the heartbeat writer's multi-row statements.
//!
//! The writer's transaction touches several tables for every batch (heartbeats, rollups,
//! idempotency claims, monitor state). Written as `VALUES ($1, $2, ...), (...)`, each statement
//! needs one shape per row count — a prepared statement per shape, or a batch cut into many
//! statements — and every value crosses sqlx's `Any` layer on its own. On SQLite each statement
//! is also a round trip to the connection's worker thread, and the single writer connection is
//! what bounds ingestion. Here the rows travel as one JSON array of arrays in a single text
//! parameter and the database unpacks them (`json_each` on SQLite, `json_array_elements` on
//! PostgreSQL): one statement per table per batch, one prepared form whatever the batch size.
//!
//! Values are integers, text, null, or bytes sent as lowercase hex ([`Kind::Hex`]).

use serde::Serialize;

use super::Backend;

/// How a column's JSON value becomes an SQL value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A JSON integer (or null).
    Int,
    /// A JSON string (or null).
    Text,
    /// A JSON string of hex digits (or null), stored as bytes.
    Hex,
}

/// One column of a JSON row set, in the order the rows carry it.
#[derive(Debug, Clone, Copy)]
pub struct Col {
    pub name: &'static str,
    pub kind: Kind,
}

pub const fn int(name: &'static str) -> Col {
    Col {
        name,
        kind: Kind::Int,
    }
}

pub const fn text(name: &'static str) -> Col {
    Col {
        name,
        kind: Kind::Text,
    }
}

pub const fn hex(name: &'static str) -> Col {
    Col {
        name,
        kind: Kind::Hex,
    }
}

/// A `SELECT` yielding one row per element of the JSON array bound at `$param`, with `cols`
/// as its named columns (usable as a subquery, a CTE body or an `INSERT ... SELECT` source).
/// On SQLite it ends in `WHERE true`, which an `INSERT ... SELECT ... ON CONFLICT` needs to
/// parse unambiguously.
pub fn select_rows(backend: Backend, cols: &[Col], param: usize) -> String {
    let mut sql = String::from("SELECT ");
    for (i, c) in cols.iter().enumerate() {
        if i > 0 {
            sql.push_str(", ");
        }
        let expr = match (backend, c.kind) {
            (Backend::Sqlite, Kind::Int | Kind::Text) => format!("value ->> {i}"),
            (Backend::Sqlite, Kind::Hex) => format!("unhex(value ->> {i})"),
            (Backend::Postgres, Kind::Int) => format!("(v ->> {i})::BIGINT"),
            (Backend::Postgres, Kind::Text) => format!("(v ->> {i})"),
            (Backend::Postgres, Kind::Hex) => format!("decode(v ->> {i}, 'hex')"),
        };
        sql.push_str(&expr);
        sql.push_str(" AS ");
        sql.push_str(c.name);
    }
    match backend {
        Backend::Sqlite => sql.push_str(&format!(" FROM json_each(${param}) WHERE true")),
        Backend::Postgres => {
            sql.push_str(&format!(
                " FROM json_array_elements(${param}::json) AS j(v)"
            ));
        }
    }
    sql
}

/// The JSON parameter for `rows`, each serialized as a JSON array in column order (a tuple
/// serializes as one).
pub fn encode<T: Serialize>(rows: &[T]) -> Result<String, sqlx::Error> {
    serde_json::to_string(rows).map_err(|e| sqlx::Error::Encode(Box::new(e)))
}

/// Bytes as the hex text a [`Kind::Hex`] column expects.
pub fn to_hex(bytes: &[u8]) -> String {
    hex::encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_and_postgres_spellings() {
        let cols = [int("seq"), text("name"), hex("blob")];
        assert_eq!(
            select_rows(Backend::Sqlite, &cols, 1),
            "SELECT value ->> 0 AS seq, value ->> 1 AS name, unhex(value ->> 2) AS blob \
             FROM json_each($1) WHERE true"
        );
        assert_eq!(
            select_rows(Backend::Postgres, &cols, 2),
            "SELECT (v ->> 0)::BIGINT AS seq, (v ->> 1) AS name, decode(v ->> 2, 'hex') AS blob \
             FROM json_array_elements($2::json) AS j(v)"
        );
        assert_eq!(
            encode(&[(1i64, Some("a"), None::<String>)]).ok().as_deref(),
            Some(r#"[[1,"a",null]]"#)
        );
    }
}
