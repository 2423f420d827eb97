//! Projects: named, ordered groups of monitors within a workspace, and their memberships
//! (`project_monitors`, which also orders monitors within a project). Membership is part of a
//! project's record, so changing it bumps the project's `version`.

use std::collections::HashMap;

use sqlx::FromRow;

use super::{Exec, Versioned};

#[derive(Debug, Clone, FromRow)]
pub struct ProjectRow {
    pub id: String,
    pub workspace_id: String,
    pub name: String,
    pub description: Option<String>,
    /// Order among the workspace's projects (ascending; ties by id).
    pub position: i64,
    pub version: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str =
    "id, workspace_id, name, description, position, version, created_at, updated_at";

pub async fn insert<'e>(e: impl Exec<'e>, p: &ProjectRow) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO projects (id, workspace_id, name, description, position, version, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(&p.id)
    .bind(&p.workspace_id)
    .bind(&p.name)
    .bind(&p.description)
    .bind(p.position)
    .bind(p.version)
    .bind(p.created_at)
    .bind(p.updated_at)
    .execute(e)
    .await
    .map(|_| ())
}

/// The position after the workspace's last project.
pub async fn next_position<'e>(e: impl Exec<'e>, ws: &str) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT COALESCE(MAX(position), -1) + 1 FROM projects WHERE workspace_id = $1",
    )
    .bind(ws)
    .fetch_one(e)
    .await
}

/// Every project of a workspace, in display order.
pub async fn list<'e>(e: impl Exec<'e>, ws: &str) -> Result<Vec<ProjectRow>, sqlx::Error> {
    let sql =
        format!("SELECT {COLUMNS} FROM projects WHERE workspace_id = $1 ORDER BY position, id");
    sqlx::query_as(&sql).bind(ws).fetch_all(e).await
}

pub async fn get<'e>(
    e: impl Exec<'e>,
    ws: &str,
    id: &str,
) -> Result<Option<ProjectRow>, sqlx::Error> {
    let sql = format!("SELECT {COLUMNS} FROM projects WHERE workspace_id = $1 AND id = $2");
    sqlx::query_as(&sql)
        .bind(ws)
        .bind(id)
        .fetch_optional(e)
        .await
}

/// Writes name and description, bumping `version` (checked when `expected` is given).
pub async fn update<'e>(
    e: impl Exec<'e>,
    p: &ProjectRow,
    expected: Option<i64>,
) -> Result<u64, sqlx::Error> {
    Versioned::update(
        "projects",
        "name = $1, description = $2, updated_at = $3",
        "workspace_id = $4 AND id = $5",
        expected,
    )
    .run(e, |q| {
        q.bind(&p.name)
            .bind(&p.description)
            .bind(p.updated_at)
            .bind(&p.workspace_id)
            .bind(&p.id)
    })
    .await
}

/// Bumps one project's `version` (checked when `expected` is given) because its membership is
/// about to change. Returns rows affected.
pub async fn bump<'e>(
    e: impl Exec<'e>,
    ws: &str,
    id: &str,
    now: i64,
    expected: Option<i64>,
) -> Result<u64, sqlx::Error> {
    Versioned::update(
        "projects",
        "updated_at = $1",
        "workspace_id = $2 AND id = $3",
        expected,
    )
    .run(e, |q| q.bind(now).bind(ws).bind(id))
    .await
}

/// Marks projects as changed (their membership moved): bumps `version` and `updated_at`.
pub async fn touch<'e>(
    e: impl Exec<'e>,
    ws: &str,
    ids: &[String],
    now: i64,
) -> Result<(), sqlx::Error> {
    if ids.is_empty() {
        return Ok(());
    }
    let sql = format!(
        "UPDATE projects SET version = version + 1, updated_at = $1 WHERE workspace_id = $2 AND id IN ({})",
        super::in_list(3, ids.len())
    );
    let mut q = sqlx::query(&sql).bind(now).bind(ws);
    for id in ids {
        q = q.bind(id);
    }
    q.execute(e).await.map(|_| ())
}

/// Sets one project's position (not a version bump: order is a property of the list).
pub async fn set_position<'e>(
    e: impl Exec<'e>,
    ws: &str,
    id: &str,
    position: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE projects SET position = $1 WHERE workspace_id = $2 AND id = $3")
        .bind(position)
        .bind(ws)
        .bind(id)
        .execute(e)
        .await
        .map(|_| ())
}

pub async fn delete<'e>(e: impl Exec<'e>, ws: &str, id: &str) -> Result<u64, sqlx::Error> {
    Ok(
        sqlx::query("DELETE FROM projects WHERE workspace_id = $1 AND id = $2")
            .bind(ws)
            .bind(id)
            .execute(e)
            .await?
            .rows_affected(),
    )
}

/// Which of `ids` are projects of this workspace.
pub async fn existing<'e>(
    e: impl Exec<'e>,
    ws: &str,
    ids: &[String],
) -> Result<Vec<String>, sqlx::Error> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT id FROM projects WHERE workspace_id = $1 AND id IN ({})",
        super::in_list(2, ids.len())
    );
    let mut q = sqlx::query_scalar(&sql).bind(ws);
    for id in ids {
        q = q.bind(id);
    }
    q.fetch_all(e).await
}

/// Which of `ids` are monitors of this workspace.
pub async fn existing_monitors<'e>(
    e: impl Exec<'e>,
    ws: &str,
    ids: &[String],
) -> Result<Vec<String>, sqlx::Error> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT id FROM monitors WHERE workspace_id = $1 AND id IN ({})",
        super::in_list(2, ids.len())
    );
    let mut q = sqlx::query_scalar(&sql).bind(ws);
    for id in ids {
        q = q.bind(id);
    }
    q.fetch_all(e).await
}

/// Every membership of a workspace's projects: project id → monitor ids in project order.
pub async fn members_by_project<'e>(
    e: impl Exec<'e>,
    ws: &str,
) -> Result<HashMap<String, Vec<String>>, sqlx::Error> {
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT pm.project_id, pm.monitor_id FROM project_monitors pm \
         JOIN projects p ON p.id = pm.project_id WHERE p.workspace_id = $1 \
         ORDER BY pm.project_id, pm.position, pm.monitor_id",
    )
    .bind(ws)
    .fetch_all(e)
    .await?;
    let mut out: HashMap<String, Vec<String>> = HashMap::new();
    for (p, m) in rows {
        out.entry(p).or_default().push(m);
    }
    Ok(out)
}

/// One project's monitor ids, in project order.
pub async fn members<'e>(e: impl Exec<'e>, project_id: &str) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT monitor_id FROM project_monitors WHERE project_id = $1 ORDER BY position, monitor_id",
    )
    .bind(project_id)
    .fetch_all(e)
    .await
}

/// Replaces a project's members with `monitor_ids`, in that order.
pub async fn set_members(
    tx: &mut sqlx::AnyConnection,
    project_id: &str,
    monitor_ids: &[String],
) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM project_monitors WHERE project_id = $1")
        .bind(project_id)
        .execute(&mut *tx)
        .await?;
    for (i, m) in monitor_ids.iter().enumerate() {
        sqlx::query(
            "INSERT INTO project_monitors (project_id, monitor_id, position) VALUES ($1, $2, $3)",
        )
        .bind(project_id)
        .bind(m)
        .bind(i64::try_from(i).unwrap_or(i64::MAX))
        .execute(&mut *tx)
        .await?;
    }
    Ok(())
}

/// The projects each of `monitor_ids` belongs to, in project display order.
pub async fn projects_of_monitors<'e>(
    e: impl Exec<'e>,
    monitor_ids: &[String],
) -> Result<HashMap<String, Vec<String>>, sqlx::Error> {
    let mut out: HashMap<String, Vec<String>> = HashMap::new();
    if monitor_ids.is_empty() {
        return Ok(out);
    }
    let sql = format!(
        "SELECT pm.monitor_id, pm.project_id FROM project_monitors pm \
         JOIN projects p ON p.id = pm.project_id WHERE pm.monitor_id IN ({}) \
         ORDER BY p.position, p.id",
        super::in_list(1, monitor_ids.len())
    );
    let mut q = sqlx::query_as::<_, (String, String)>(&sql);
    for id in monitor_ids {
        q = q.bind(id);
    }
    for (m, p) in q.fetch_all(e).await? {
        out.entry(m).or_default().push(p);
    }
    Ok(out)
}

/// Sets which projects one monitor belongs to. It leaves projects not in `project_ids`, and
/// joins new ones at the end of their order; memberships it keeps keep their position.
/// Returns the projects whose membership changed (so the caller can bump their versions).
pub async fn set_monitor_projects(
    tx: &mut sqlx::AnyConnection,
    monitor_id: &str,
    project_ids: &[String],
) -> Result<Vec<String>, sqlx::Error> {
    let current: Vec<String> =
        sqlx::query_scalar("SELECT project_id FROM project_monitors WHERE monitor_id = $1")
            .bind(monitor_id)
            .fetch_all(&mut *tx)
            .await?;
    let mut changed = Vec::new();
    for p in current.iter().filter(|p| !project_ids.contains(p)) {
        sqlx::query("DELETE FROM project_monitors WHERE project_id = $1 AND monitor_id = $2")
            .bind(p)
            .bind(monitor_id)
            .execute(&mut *tx)
            .await?;
        changed.push(p.clone());
    }
    for p in project_ids.iter().filter(|p| !current.contains(p)) {
        sqlx::query(
            "INSERT INTO project_monitors (project_id, monitor_id, position) \
             SELECT $1, $2, COALESCE(MAX(position), -1) + 1 FROM project_monitors WHERE project_id = $1",
        )
        .bind(p)
        .bind(monitor_id)
        .execute(&mut *tx)
        .await?;
        changed.push(p.clone());
    }
    Ok(changed)
}
