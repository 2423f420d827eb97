//! The audit log: an append-only record of every write made through the API.

use sqlx::FromRow;

use super::Exec;

#[derive(Debug, Clone, FromRow)]
pub struct AuditRow {
    pub id: String,
    pub workspace_id: String,
    pub user_id: String,
    pub action: String,
    pub resource_type: String,
    pub resource_id: String,
    pub metadata: String,
    pub ip_address: Option<String>,
    pub actor_email: Option<String>,
    pub user_agent: Option<String>,
    pub created_at: i64,
}

pub async fn append<'e>(e: impl Exec<'e>, r: &AuditRow) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO audit_log (id, workspace_id, user_id, action, resource_type, resource_id, metadata, \
         ip_address, actor_email, user_agent, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(&r.id)
    .bind(&r.workspace_id)
    .bind(&r.user_id)
    .bind(&r.action)
    .bind(&r.resource_type)
    .bind(&r.resource_id)
    .bind(&r.metadata)
    .bind(&r.ip_address)
    .bind(&r.actor_email)
    .bind(&r.user_agent)
    .bind(r.created_at)
    .execute(e)
    .await
    .map(|_| ())
}

#[derive(Debug, Default, Clone)]
pub struct AuditFilter {
    pub action: Option<String>,
    pub resource_type: Option<String>,
    pub actor: Option<String>,
    pub from_ms: Option<i64>,
    pub to_ms: Option<i64>,
}

/// Builds the WHERE clause shared by the page query and the count, binding in order.
fn where_clause(f: &AuditFilter, first: usize) -> (String, Vec<String>, Vec<i64>) {
    let mut sql = format!("workspace_id = ${first}");
    let mut n = first;
    let mut texts = Vec::new();
    let mut ints = Vec::new();
    for (col, val) in [
        ("action", &f.action),
        ("resource_type", &f.resource_type),
        ("user_id", &f.actor),
    ] {
        if let Some(v) = val {
            n += 1;
            sql.push_str(&format!(" AND {col} = ${n}"));
            texts.push(v.clone());
        }
    }
    // Integer binds come after the text binds so placeholders stay in order.
    for (op, val) in [(">=", f.from_ms), ("<", f.to_ms)] {
        if let Some(v) = val {
            n += 1;
            sql.push_str(&format!(" AND created_at {op} ${n}"));
            ints.push(v);
        }
    }
    (sql, texts, ints)
}

/// Newest first; `before` is the id of the last entry of the previous page.
pub async fn list<'e, E: Exec<'e> + Copy>(
    e: E,
    ws: &str,
    f: &AuditFilter,
    before: Option<&str>,
    limit: i64,
) -> Result<(Vec<AuditRow>, i64), sqlx::Error> {
    let (clause, texts, ints) = where_clause(f, 1);
    let count_sql = format!("SELECT COUNT(*) FROM audit_log WHERE {clause}");
    let mut cq = sqlx::query_scalar::<_, i64>(&count_sql).bind(ws);
    for t in &texts {
        cq = cq.bind(t);
    }
    for i in &ints {
        cq = cq.bind(*i);
    }
    let total = cq.fetch_one(e).await?;

    let n = 1 + texts.len() + ints.len();
    let page_sql = format!(
        "SELECT * FROM audit_log WHERE {clause}{} ORDER BY id DESC LIMIT ${}",
        if before.is_some() {
            format!(" AND id < ${}", n + 1)
        } else {
            String::new()
        },
        if before.is_some() { n + 2 } else { n + 1 }
    );
    let mut q = sqlx::query_as::<_, AuditRow>(&page_sql).bind(ws);
    for t in &texts {
        q = q.bind(t);
    }
    for i in &ints {
        q = q.bind(*i);
    }
    if let Some(b) = before {
        q = q.bind(b);
    }
    let rows = q.bind(limit).fetch_all(e).await?;
    Ok((rows, total))
}
