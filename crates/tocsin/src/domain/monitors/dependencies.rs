//! `dependsOn`: which monitors a monitor depends on, checked before it is stored. Every id
//! must be another monitor of the caller's workspace, at most [`MAX_DEPENDENCIES`], none twice,
//! and the graph must stay acyclic; each refusal is a `VALIDATION_ERROR` on the field
//! `dependsOn`, and a cycle is named monitor by monitor (`api -> db -> api`).
//!
//! Deleting a monitor removes the edges to it (the table cascades): its dependents simply stop
//! depending on it, and their alerts already under its outage's alert become roots of their own
//! once that alert is gone with it.

use std::collections::{HashMap, HashSet};

use crate::cx::Cx;
use crate::domain::FieldError;
use crate::store::dependencies as store;

/// At most this many dependencies per monitor.
pub const MAX_DEPENDENCIES: usize = 50;

const FIELD: &str = "dependsOn";

/// Refuses `ids` as the dependencies of `monitor` (`None` for a monitor being created, which
/// nothing can depend on yet).
pub async fn check(
    cx: &Cx,
    ws: &str,
    monitor: Option<(&str, &str)>,
    ids: &[String],
    errors: &mut Vec<FieldError>,
) -> Result<(), sqlx::Error> {
    if ids.is_empty() {
        return Ok(());
    }
    if ids.len() > MAX_DEPENDENCIES {
        errors.push(FieldError::new(
            FIELD,
            format!("at most {MAX_DEPENDENCIES} monitors"),
        ));
        return Ok(());
    }
    let names = store::names(cx.db().reader(), ws, ids).await?;
    for (i, id) in ids.iter().enumerate() {
        if monitor.is_some_and(|(own, _)| own == id) {
            errors.push(FieldError::new(FIELD, "a monitor cannot depend on itself"));
            return Ok(());
        }
        if !names.contains_key(id) {
            errors.push(FieldError::new(
                FIELD,
                format!("no such monitor: {id} (item {i})"),
            ));
            return Ok(());
        }
        if ids[..i].contains(id) {
            errors.push(FieldError::new(FIELD, format!("{id} is listed twice")));
            return Ok(());
        }
    }
    let Some((own, own_name)) = monitor else {
        return Ok(());
    };
    let mut graph = store::of_workspace(cx.db().reader(), ws).await?;
    graph.insert(own.to_string(), ids.to_vec());
    if let Some(path) = cycle_through(&graph, own) {
        let mut all: Vec<String> = path.clone();
        all.retain(|p| p != own && !names.contains_key(p));
        let more = store::names(cx.db().reader(), ws, &all).await?;
        let name = |id: &String| -> String {
            if id == own {
                own_name.to_string()
            } else {
                names
                    .get(id)
                    .or_else(|| more.get(id))
                    .cloned()
                    .unwrap_or_else(|| id.clone())
            }
        };
        let named: Vec<String> = path.iter().map(name).collect();
        errors.push(FieldError::new(
            FIELD,
            format!("would make a cycle: {}", named.join(" -> ")),
        ));
    }
    Ok(())
}

/// A path `start -> ... -> start` along the edges of `graph`, if there is one.
pub fn cycle_through(graph: &HashMap<String, Vec<String>>, start: &str) -> Option<Vec<String>> {
    // Iterative depth-first search keeping the current path, so a long chain cannot overflow
    // the stack.
    let mut seen: HashSet<&str> = HashSet::new();
    let mut path: Vec<&str> = vec![start];
    let mut stack: Vec<std::slice::Iter<'_, String>> =
        vec![graph.get(start).map(|v| v.iter()).unwrap_or_default()];
    while let Some(top) = stack.last_mut() {
        match top.next() {
            Some(next) if next == start => {
                let mut out: Vec<String> = path.iter().map(|s| s.to_string()).collect();
                out.push(start.to_string());
                return Some(out);
            }
            Some(next) => {
                if seen.insert(next.as_str()) {
                    path.push(next.as_str());
                    stack.push(graph.get(next).map(|v| v.iter()).unwrap_or_default());
                }
            }
            None => {
                stack.pop();
                path.pop();
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(edges: &[(&str, &[&str])]) -> HashMap<String, Vec<String>> {
        edges
            .iter()
            .map(|(a, b)| (a.to_string(), b.iter().map(|s| s.to_string()).collect()))
            .collect()
    }

    #[test]
    fn finds_the_cycle_and_names_its_path() {
        let g = graph(&[("a", &["b"]), ("b", &["c", "d"]), ("d", &["a"])]);
        assert_eq!(
            cycle_through(&g, "a"),
            Some(vec!["a".into(), "b".into(), "d".into(), "a".into()])
        );
    }

    #[test]
    fn a_diamond_is_no_cycle() {
        let g = graph(&[("a", &["b", "c"]), ("b", &["d"]), ("c", &["d"])]);
        assert_eq!(cycle_through(&g, "a"), None);
    }
}
