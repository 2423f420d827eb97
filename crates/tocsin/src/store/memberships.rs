//! What a monitor belongs to, outside its own row: its projects (in project order), its own
//! notification channels (in the order given), its escalation policy and its dependencies, read for many
//! monitors in one statement. Every monitor view needs all three, and on the embedded database
//! each statement is a round trip to the connection's worker thread, so they come together.

use std::collections::HashMap;

use sqlx::AnyConnection;

use super::{in_list, Exec};

/// One monitor's memberships.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Memberships {
    pub project_ids: Vec<String>,
    pub channel_ids: Vec<String>,
    pub policy_id: Option<String>,
    /// `dependsOn`, in the order given.
    pub depends_on: Vec<String>,
}

const PROJECT: i64 = 0;
const CHANNEL: i64 = 1;
const POLICY: i64 = 2;
const DEPENDENCY: i64 = 3;

/// The memberships of `ids`, by monitor id; a monitor with none is absent.
pub async fn of_monitors(
    conn: &mut AnyConnection,
    ids: &[String],
) -> Result<HashMap<String, Memberships>, sqlx::Error> {
    let mut out: HashMap<String, Memberships> = HashMap::new();
    // Each id is bound four times; chunks keep a statement far below the databases' limits
    // on bound values (32,766 on SQLite), and a monitor's rows all come in its chunk.
    for chunk in ids.chunks(CHUNK) {
        read(&mut *conn, chunk, &mut out).await?;
    }
    Ok(out)
}

/// Monitors per statement.
const CHUNK: usize = 2000;

async fn read<'e>(
    e: impl Exec<'e>,
    ids: &[String],
    out: &mut HashMap<String, Memberships>,
) -> Result<(), sqlx::Error> {
    let n = ids.len();
    // One row per membership: (kind, monitor, member, position, tie-break), ordered so each
    // monitor's projects and channels arrive in their display order.
    let sql = format!(
        "SELECT CAST({PROJECT} AS BIGINT) AS kind, pm.monitor_id, pm.project_id AS member, \
                p.position AS pos, p.id AS tie \
           FROM project_monitors pm JOIN projects p ON p.id = pm.project_id \
          WHERE pm.monitor_id IN ({}) \
         UNION ALL \
         SELECT CAST({CHANNEL} AS BIGINT), mc.monitor_id, mc.channel_id, mc.position, '' \
           FROM monitor_channels mc WHERE mc.monitor_id IN ({}) \
         UNION ALL \
         SELECT CAST({POLICY} AS BIGINT), m.id, m.escalation_policy_id, CAST(0 AS BIGINT), '' \
           FROM monitors m WHERE m.id IN ({}) AND m.escalation_policy_id IS NOT NULL \
         UNION ALL \
         SELECT CAST({DEPENDENCY} AS BIGINT), md.monitor_id, md.depends_on_id, md.position, '' \
           FROM monitor_dependencies md WHERE md.monitor_id IN ({}) \
         ORDER BY 1, 2, 4, 5",
        in_list(1, n),
        in_list(n + 1, n),
        in_list(2 * n + 1, n),
        in_list(3 * n + 1, n),
    );
    let mut q = sqlx::query_as::<_, (i64, String, String, i64, String)>(&sql);
    for _ in 0..4 {
        for id in ids {
            q = q.bind(id);
        }
    }
    for (kind, monitor, member, _, _) in q.fetch_all(e).await? {
        let m = out.entry(monitor).or_default();
        match kind {
            PROJECT => m.project_ids.push(member),
            CHANNEL => m.channel_ids.push(member),
            POLICY => m.policy_id = Some(member),
            _ => m.depends_on.push(member),
        }
    }
    Ok(())
}
