//! Group reads: point reads by key that arrive while one is in flight wait, and go together
//! in the next one, as group commit does for writes. The scheduler's runs use it for their
//! monitors' state (`monitors::get_for_run`): the runs one wake-up starts read their rows with
//! one statement on one connection, instead of one statement each on as many connections (each
//! a thread to wake on SQLite, a round trip on PostgreSQL).
//!
//! No task and no timer: the first caller reads at once and so leads; callers arriving during
//! its read queue up; when it ends it answers them and hands the lead to the first still
//! waiting, who reads for everyone waiting then. A leader that is cancelled hands the lead on
//! the same way, and a caller whose group read failed reads alone.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Mutex, MutexGuard};

use tokio::sync::oneshot;

/// Most keys in one read (far below SQLite's and PostgreSQL's limits on bound values).
pub const MAX_KEYS: usize = 256;

/// The coordination of one kind of group read (see the module doc).
#[derive(Debug)]
pub struct GroupRead<R> {
    state: Mutex<State<R>>,
}

#[derive(Debug)]
struct State<R> {
    reading: bool,
    waiting: Vec<(String, oneshot::Sender<Turn<R>>)>,
}

/// What a waiting caller is told.
#[derive(Debug)]
enum Turn<R> {
    /// Its row (or that there is none).
    Done(Option<R>),
    /// The read it waited for failed: read alone.
    Failed,
    /// Read for everyone waiting now.
    Lead,
}

impl<R> Default for GroupRead<R> {
    fn default() -> Self {
        GroupRead {
            state: Mutex::new(State {
                reading: false,
                waiting: Vec::new(),
            }),
        }
    }
}

impl<R: Clone> GroupRead<R> {
    /// The row of `key`, read by `read` (given the keys of one group, at most [`MAX_KEYS`],
    /// answering the rows found with their keys) together with whoever else asks meanwhile.
    pub async fn get<F, Fut>(&self, key: &str, read: F) -> Result<Option<R>, sqlx::Error>
    where
        F: Fn(Vec<String>) -> Fut,
        Fut: Future<Output = Result<Vec<(String, R)>, sqlx::Error>>,
    {
        let waiting = {
            let mut st = self.lock();
            if st.reading {
                let (tx, rx) = oneshot::channel();
                st.waiting.push((key.to_string(), tx));
                Some(rx)
            } else {
                st.reading = true;
                None
            }
        };
        if let Some(rx) = waiting {
            match rx.await {
                Ok(Turn::Done(row)) => return Ok(row),
                Ok(Turn::Lead) => {}
                // The group's read failed, or its leader went without answering: alone.
                Ok(Turn::Failed) | Err(_) => return alone(key, &read).await,
            }
        }
        self.lead(key, &read).await
    }

    /// Reads `key` and what waits, answers the waiters, and passes the lead on.
    async fn lead<F, Fut>(&self, key: &str, read: &F) -> Result<Option<R>, sqlx::Error>
    where
        F: Fn(Vec<String>) -> Fut,
        Fut: Future<Output = Result<Vec<(String, R)>, sqlx::Error>>,
    {
        // Dropped when this ends, also by cancellation: the lead moves on either way.
        let _pass = PassOn(self);
        let group: Vec<(String, oneshot::Sender<Turn<R>>)> = {
            let mut st = self.lock();
            let n = st.waiting.len().min(MAX_KEYS - 1);
            st.waiting.drain(..n).collect()
        };
        let mut keys: Vec<String> = group.iter().map(|(k, _)| k.clone()).collect();
        keys.push(key.to_string());
        match read(keys).await {
            Ok(rows) => {
                let mut rows: HashMap<String, R> = rows.into_iter().collect();
                for (k, tx) in group {
                    let _ = tx.send(Turn::Done(rows.get(&k).cloned()));
                }
                Ok(rows.remove(key))
            }
            Err(e) => {
                for (_, tx) in group {
                    let _ = tx.send(Turn::Failed);
                }
                Err(e)
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<R>> {
        // The state is a flag and a list, consistent after every statement: a panic elsewhere
        // while it was held leaves nothing half-done.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

async fn alone<R, F, Fut>(key: &str, read: &F) -> Result<Option<R>, sqlx::Error>
where
    F: Fn(Vec<String>) -> Fut,
    Fut: Future<Output = Result<Vec<(String, R)>, sqlx::Error>>,
{
    let rows = read(vec![key.to_string()]).await?;
    Ok(rows.into_iter().find(|(k, _)| k == key).map(|(_, r)| r))
}

/// Passes the lead to the first caller still waiting, or ends the reading.
struct PassOn<'a, R: Clone>(&'a GroupRead<R>);

impl<R: Clone> Drop for PassOn<'_, R> {
    fn drop(&mut self) {
        let mut st = self.0.lock();
        while !st.waiting.is_empty() {
            let (_, tx) = st.waiting.remove(0);
            // A caller that went away cannot lead: try the next.
            if tx.send(Turn::Lead).is_ok() {
                return;
            }
        }
        st.reading = false;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    type Rows = Result<Vec<(String, String)>, sqlx::Error>;
    type Reading = std::pin::Pin<Box<dyn Future<Output = Rows> + Send>>;

    /// A read that takes a while and records the groups it was given.
    fn recording(
        groups: Arc<Mutex<Vec<Vec<String>>>>,
        fail: Arc<AtomicUsize>,
    ) -> impl Fn(Vec<String>) -> Reading {
        move |keys: Vec<String>| {
            let groups = groups.clone();
            let fail = fail.clone();
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                groups.lock().unwrap().push(keys.clone());
                if fail.load(Ordering::SeqCst) > 0 {
                    fail.fetch_sub(1, Ordering::SeqCst);
                    return Err(sqlx::Error::PoolTimedOut);
                }
                // "missing" has no row.
                Ok(keys
                    .into_iter()
                    .filter(|k| k != "missing")
                    .map(|k| (k.clone(), format!("row of {k}")))
                    .collect())
            })
        }
    }

    #[tokio::test]
    async fn reads_that_arrive_during_one_go_together_in_the_next() {
        let gr = GroupRead::<String>::default();
        let groups = Arc::new(Mutex::new(Vec::new()));
        let read = recording(groups.clone(), Arc::new(AtomicUsize::new(0)));
        let keys = ["a", "b", "c", "missing", "d"];
        let got = futures::future::join_all(keys.iter().map(|k| gr.get(k, &read))).await;
        for (k, r) in keys.iter().zip(got) {
            let r = r.unwrap();
            if *k == "missing" {
                assert_eq!(r, None);
            } else {
                assert_eq!(r, Some(format!("row of {k}")));
            }
        }
        let groups = groups.lock().unwrap().clone();
        assert_eq!(
            groups.len(),
            2,
            "the first alone, the rest together: {groups:?}"
        );
        assert_eq!(groups[0], vec!["a"]);
        assert_eq!(groups[1].len(), 4);
        assert!(!gr.lock().reading, "nobody reads once all are answered");
    }

    #[tokio::test]
    async fn a_failed_group_read_sends_each_waiter_to_read_alone() {
        let gr = GroupRead::<String>::default();
        let groups = Arc::new(Mutex::new(Vec::new()));
        // The first read (a's) and the second (the group of b and c) fail; the rest succeed.
        let read = recording(groups.clone(), Arc::new(AtomicUsize::new(2)));
        let (a, b, c) = tokio::join!(gr.get("a", &read), gr.get("b", &read), gr.get("c", &read));
        assert!(a.is_err());
        assert!(b.is_err(), "b led the failed group read");
        assert_eq!(c.unwrap(), Some("row of c".to_string()), "c read alone");
        assert!(!gr.lock().reading);
    }

    #[tokio::test]
    async fn a_cancelled_leader_passes_the_lead_on() {
        let gr = Arc::new(GroupRead::<String>::default());
        let groups = Arc::new(Mutex::new(Vec::new()));
        let read = recording(groups.clone(), Arc::new(AtomicUsize::new(0)));
        let mut leader = Box::pin(gr.get("a", &read));
        let mut waiter = Box::pin(gr.get("b", &read));
        // Start the leader's read, queue the waiter, then drop the leader mid-read.
        assert!(futures::poll!(leader.as_mut()).is_pending());
        assert!(futures::poll!(waiter.as_mut()).is_pending());
        drop(leader);
        let b = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("the waiter is not left hanging");
        assert_eq!(b.unwrap(), Some("row of b".to_string()));
        assert!(!gr.lock().reading);
    }
}
