//! The embedded SQLite database's directory, before any pool opens on it.
//!
//! - [`prepare`] creates the directory and checks that this process may write in it and write
//!   the database files already there, so a permission problem is reported at once, naming
//!   the path. Left to SQLite, a directory that cannot be created says only "unable to open
//!   database file", and a read-only database opens anyway and fails every write ("attempt to
//!   write a readonly database") until the pool times out 30 s later.
//! - [`ServerLock`] is the exclusive lock a `tocsin serve` holds on the directory for its whole
//!   life (`tocsin.lock`, holding its PID): a second server on the same directory refuses to
//!   start, naming the directory and the first server's PID, instead of running every check a
//!   second time. The operating system releases the lock when the process ends, however it
//!   ends, so a crash leaves nothing to clean up. The short commands that open the database
//!   (`migrate`, `user create`, `token create`, `probe-key`) take no lock: they may run beside
//!   a server, and SQLite serialises their writes with its own.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The database file inside the data directory.
pub const DB_FILE: &str = "tocsin.db";
/// The lock file a server holds inside the data directory.
pub const LOCK_FILE: &str = "tocsin.lock";

/// Why the data directory cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DataDirError {
    /// The operating system refused: the person running the server can act on it.
    #[error("{action} {}: permission denied; the user running tocsin needs write access there (fix its owner or mode, or pass another --data-dir)", path.display())]
    Permission { action: &'static str, path: PathBuf },
    #[error("{action} {}: the file system is read-only; pass a --data-dir on a writable one", path.display())]
    ReadOnly { action: &'static str, path: PathBuf },
    #[error("{action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    /// Another server holds the lock.
    #[error("the data directory {} is in use by another tocsin server (PID {pid}); stop that one first, or give this one another --data-dir", dir.display())]
    InUse { dir: PathBuf, pid: String },
}

impl DataDirError {
    fn of(action: &'static str, path: &Path, source: std::io::Error) -> DataDirError {
        let path = absolute(path);
        match source.kind() {
            ErrorKind::PermissionDenied => DataDirError::Permission { action, path },
            ErrorKind::ReadOnlyFilesystem => DataDirError::ReadOnly { action, path },
            _ => DataDirError::Io {
                action,
                path,
                source,
            },
        }
    }
}

/// The path as a person would look it up: absolute (a relative `--data-dir` is relative to
/// wherever the server happened to start).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Creates `dir` if needed and checks that this process can create files in it and write
/// the database files already in it (see the module documentation).
pub fn prepare(dir: &Path) -> Result<(), DataDirError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| DataDirError::of("cannot create the data directory", dir, e))?;
    // Creating a file is the only reliable test: permission bits say nothing of ACLs,
    // read-only mounts or another user's ownership as seen by this one.
    let probe = dir.join(format!(".tocsin-write-check-{}", std::process::id()));
    let created = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&probe);
    match created {
        Ok(f) => {
            drop(f);
            let _ = std::fs::remove_file(&probe);
        }
        Err(e) => {
            return Err(DataDirError::of(
                "cannot write in the data directory",
                dir,
                e,
            ))
        }
    }
    for name in [DB_FILE, "tocsin.db-wal", "tocsin.db-shm"] {
        let file = dir.join(name);
        if !file.exists() {
            continue;
        }
        OpenOptions::new()
            .read(true)
            .write(true)
            .open(&file)
            .map_err(|e| DataDirError::of("cannot write the database file", &file, e))?;
    }
    Ok(())
}

/// A server's exclusive hold on its data directory, released when dropped (or when the
/// process ends).
#[derive(Debug)]
pub struct ServerLock {
    _file: File,
}

impl ServerLock {
    /// Takes the lock on `dir` (which [`prepare`] has made), or says which process holds it.
    pub fn acquire(dir: &Path) -> Result<ServerLock, DataDirError> {
        let path = dir.join(LOCK_FILE);
        // Not truncated on open: until the lock is ours, the PID in it is the holder's.
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| DataDirError::of("cannot open the lock file", &path, e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                let pid = text.trim();
                return Err(DataDirError::InUse {
                    dir: absolute(dir),
                    pid: if pid.is_empty() {
                        "unknown".into()
                    } else {
                        pid.to_string()
                    },
                });
            }
            Err(TryLockError::Error(e)) => {
                return Err(DataDirError::of("cannot lock", &path, e));
            }
        }
        let written = file
            .set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| writeln!(file, "{}", std::process::id()));
        written.map_err(|e| DataDirError::of("cannot write the lock file", &path, e))?;
        Ok(ServerLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_one_directory_is_refused_with_the_holders_pid() {
        let dir = tempfile::tempdir().unwrap();
        prepare(dir.path()).unwrap();
        let first = ServerLock::acquire(dir.path()).unwrap();
        let err = ServerLock::acquire(dir.path()).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains(&std::process::id().to_string()),
            "names the holder: {text}"
        );
        assert!(
            text.contains(&dir.path().display().to_string()),
            "names the directory: {text}"
        );
        drop(first);
        let _again = ServerLock::acquire(dir.path()).unwrap();
    }

    #[test]
    fn prepare_creates_nested_directories_and_leaves_no_probe_behind() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("a/b");
        prepare(&data).unwrap();
        assert!(data.is_dir());
        assert_eq!(std::fs::read_dir(&data).unwrap().count(), 0);
    }
}
