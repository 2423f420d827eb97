//! The optimistic version lock every user-editable row shares (monitors, projects, workspaces,
//! memberships, API keys). A user edit is one statement built here: `UPDATE <table> SET <set>,
//! version = version + 1 WHERE <filter>` (or a `DELETE ... WHERE <filter>`), and when the caller
//! sent the version it read (`If-Match`), `AND version = $n`, numbered after the statement's
//! own placeholders and bound after its own values. It answers the rows affected: 0 means
//! "missing or stale", which the domain's write check tells apart with a read.

use super::{AnyQuery, Exec};

/// One version-locked write, built once; [`Versioned::run`] binds its values and runs it.
#[derive(Debug, Clone)]
pub struct Versioned {
    sql: String,
    expected: Option<i64>,
}

/// The highest `$n` placeholder in `sql` (0 without any).
fn last_placeholder(sql: &str) -> usize {
    sql.split('$')
        .skip(1)
        .filter_map(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .max()
        .unwrap_or(0)
}

impl Versioned {
    /// `UPDATE table SET set, version = version + 1 WHERE filter`, version-checked when
    /// `expected` is given. `set` and `filter` number their placeholders from `$1`.
    pub fn update(table: &str, set: &str, filter: &str, expected: Option<i64>) -> Versioned {
        Versioned::of(
            format!("UPDATE {table} SET {set}, version = version + 1 WHERE {filter}"),
            expected,
        )
    }

    /// `DELETE FROM table WHERE filter`, version-checked when `expected` is given.
    pub fn delete(table: &str, filter: &str, expected: Option<i64>) -> Versioned {
        Versioned::of(format!("DELETE FROM {table} WHERE {filter}"), expected)
    }

    fn of(mut sql: String, expected: Option<i64>) -> Versioned {
        if expected.is_some() {
            let n = last_placeholder(&sql) + 1;
            sql.push_str(&format!(" AND version = ${n}"));
        }
        Versioned { sql, expected }
    }

    /// The statement as it runs.
    pub fn sql(&self) -> &str {
        &self.sql
    }

    /// Runs the statement: `bind` binds the values of `set` and `filter` in placeholder
    /// order, the version (if any) is bound last. Returns rows affected.
    pub async fn run<'s, 'e>(
        &'s self,
        e: impl Exec<'e>,
        bind: impl FnOnce(AnyQuery<'s>) -> AnyQuery<'s>,
    ) -> Result<u64, sqlx::Error> {
        let mut q = bind(sqlx::query(&self.sql));
        if let Some(v) = self.expected {
            q = q.bind(v);
        }
        Ok(q.execute(e).await?.rows_affected())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_placeholder_follows_the_statements_own() {
        let u = Versioned::update(
            "projects",
            "name = $1, updated_at = $2",
            "workspace_id = $3 AND id = $4",
            Some(7),
        );
        assert_eq!(
            u.sql(),
            "UPDATE projects SET name = $1, updated_at = $2, version = version + 1 \
             WHERE workspace_id = $3 AND id = $4 AND version = $5"
        );
        let u = Versioned::update("projects", "updated_at = $1", "id = $2", None);
        assert_eq!(
            u.sql(),
            "UPDATE projects SET updated_at = $1, version = version + 1 WHERE id = $2"
        );
        let d = Versioned::delete("monitors", "workspace_id = $1 AND id = $2", Some(3));
        assert_eq!(
            d.sql(),
            "DELETE FROM monitors WHERE workspace_id = $1 AND id = $2 AND version = $3"
        );
        // Two-digit placeholders and literals with no placeholder.
        assert_eq!(last_placeholder("a = $9, b = $10 WHERE c = 'x$'"), 10);
        assert_eq!(last_placeholder("active = 0"), 0);
    }
}
