//! Reading an Uptime Kuma `kuma.db` (SQLite), opened read-only: the tables the importer maps,
//! each row as a JSON object of its columns. Columns are taken as they are in the file, so the
//! 1.23 and 2.x schemas (which add and rename columns) read alike; a table the file lacks reads
//! as empty.

use std::collections::HashMap;

use serde_json::{Map, Number, Value};
use sqlx::sqlite::{SqliteConnectOptions, SqliteRow};
use sqlx::{Column, ConnectOptions, Connection, Row, TypeInfo, ValueRef};

use super::ImportError;

/// One row: column name to value (integers, reals, text; BLOBs and NULLs as `null`).
pub type Record = Map<String, Value>;

/// The tables the importer reads, by name.
#[derive(Debug, Default)]
pub struct KumaDb {
    pub tables: HashMap<&'static str, Vec<Record>>,
}

impl KumaDb {
    /// The rows of `table` (none when the file has no such table).
    pub fn rows(&self, table: &str) -> &[Record] {
        self.tables.get(table).map(Vec::as_slice).unwrap_or(&[])
    }
}

/// The tables read. `group` and `setting` are quoted: they are SQL keywords.
const TABLES: [&str; 11] = [
    "monitor",
    "notification",
    "monitor_notification",
    "tag",
    "monitor_tag",
    "maintenance",
    "monitor_maintenance",
    "status_page",
    "group",
    "monitor_group",
    "setting",
];

fn failed(path: &str) -> impl Fn(sqlx::Error) -> ImportError + '_ {
    move |e| ImportError(format!("{path}: {e}"))
}

/// Reads the tables of the database at `path` without writing to it.
pub async fn read(path: &str) -> Result<KumaDb, ImportError> {
    if !std::path::Path::new(path).is_file() {
        return Err(ImportError(format!("{path}: no such file")));
    }
    let mut conn = SqliteConnectOptions::new()
        .filename(path)
        .read_only(true)
        .create_if_missing(false)
        .connect()
        .await
        .map_err(failed(path))?;
    let present: Vec<String> =
        sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table'")
            .fetch_all(&mut conn)
            .await
            .map_err(|e| ImportError(format!("{path}: not an SQLite database ({e})")))?;
    if !present.iter().any(|t| t == "monitor") {
        return Err(ImportError(format!(
            "{path}: not an Uptime Kuma database (it has no monitor table)"
        )));
    }
    let mut db = KumaDb::default();
    for table in TABLES {
        if !present.iter().any(|t| t == table) {
            continue;
        }
        let rows = sqlx::query(&format!("SELECT * FROM \"{table}\" ORDER BY rowid"))
            .fetch_all(&mut conn)
            .await
            .map_err(failed(path))?;
        db.tables
            .insert(table, rows.iter().map(record).collect::<Vec<_>>());
    }
    conn.close().await.map_err(failed(path))?;
    Ok(db)
}

/// A row as JSON, by each value's own storage class (SQLite columns are loosely typed: Kuma's
/// booleans are integers, its dates text).
fn record(row: &SqliteRow) -> Record {
    let mut out = Map::new();
    for (i, col) in row.columns().iter().enumerate() {
        let value = match row.try_get_raw(i) {
            Ok(raw) if !raw.is_null() => match raw.type_info().name() {
                "INTEGER" => row
                    .try_get_unchecked::<i64, _>(i)
                    .map(Value::from)
                    .unwrap_or(Value::Null),
                "REAL" => row
                    .try_get_unchecked::<f64, _>(i)
                    .ok()
                    .and_then(Number::from_f64)
                    .map(Value::Number)
                    .unwrap_or(Value::Null),
                "TEXT" => row
                    .try_get_unchecked::<String, _>(i)
                    .map(Value::String)
                    .unwrap_or(Value::Null),
                _ => Value::Null,
            },
            _ => Value::Null,
        };
        out.insert(col.name().to_string(), value);
    }
    out
}
