//! The layer rule of `ARCHITECTURE.md`, checked on the source: arrows point one way.
//!
//! - Nothing outside `src/http/` imports `crate::http`, except `server.rs`, the composition
//!   root that mounts the router.
//! - `src/domain/` and everything below it (workers, credentials, storage) knows nothing of
//!   axum or aide: the HTTP edge adapts them, never the other way round.
//! - `src/store/` imports no module above it: no domain, worker, credential or HTTP module.
//!
//! The check reads `crate::<module>` paths in code (comments are skipped, so intra-doc links
//! may still point anywhere), which is how every module in this crate names another.

use std::path::{Path, PathBuf};

/// Modules (directories or files under `src/`) and the modules they must not name.
const RULES: &[(&str, &[&str])] = &[
    (
        "store",
        &[
            "http",
            "alerting",
            "domain",
            "monitoring",
            "push",
            "probes",
            "auth",
            "app",
            "audit",
            "plans",
            "bench",
            "cli",
            "server",
            "telemetry",
        ],
    ),
    ("domain", &["http", "server", "cli", "bench"]),
    ("monitoring", &["http", "domain", "server", "cli", "bench"]),
    ("push", &["http", "domain", "server", "cli", "bench"]),
    // Alerting sits beside the engines: the status-transition path calls into it, so it
    // must not call back into them.
    (
        "alerting",
        &[
            "http",
            "domain",
            "server",
            "cli",
            "bench",
            "monitoring",
            "push",
            "probes",
        ],
    ),
    ("probes", &["http", "domain", "server", "cli", "bench"]),
    (
        "auth",
        &["http", "domain::monitors", "push", "server", "cli", "bench"],
    ),
    ("app.rs", &["http", "server", "cli", "bench"]),
    ("audit.rs", &["http", "server", "cli", "bench"]),
    ("cluster", &["http", "domain", "server", "cli", "bench"]),
    // The live fan-out is fed from above (domain::stream, the heartbeat writer).
    (
        "live.rs",
        &["http", "domain", "monitoring", "server", "cli", "bench"],
    ),
    ("telemetry.rs", &["http", "server", "cli", "bench"]),
    ("config", &["http", "server", "cli", "bench"]),
    ("cli.rs", &["http"]),
    ("bench", &["http", "cli"]),
];

/// Modules that must not use the HTTP framework's server side.
const NO_FRAMEWORK: &[&str] = &[
    "domain",
    "alerting",
    "store",
    "monitoring",
    "push",
    "probes",
    "auth",
    "app.rs",
    "audit.rs",
    "cluster",
    "live.rs",
    "telemetry.rs",
];

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(under: &Path, out: &mut Vec<PathBuf>) {
    if under.is_file() {
        out.push(under.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(under) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The file's code with line comments (including doc comments) removed.
fn code_of(path: &Path) -> String {
    code_of_text(&std::fs::read_to_string(path).unwrap())
}

fn code_of_text(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `code` names `crate::<module>` (as a path prefix, not a longer name).
fn names(code: &str, module: &str) -> bool {
    let needle = format!("crate::{module}");
    code.match_indices(&needle).any(|(i, _)| {
        let after = code[i + needle.len()..].chars().next();
        !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

#[test]
fn arrows_point_one_way() {
    let src = src_dir();
    let mut wrong = Vec::new();
    for (module, banned) in RULES {
        let mut files = Vec::new();
        rust_files(&src.join(module), &mut files);
        assert!(!files.is_empty(), "no source found for {module}");
        for f in files {
            let code = code_of(&f);
            for b in *banned {
                if names(&code, b) {
                    wrong.push(format!(
                        "{} names crate::{b}",
                        f.strip_prefix(&src).unwrap().display()
                    ));
                }
            }
        }
    }
    // Outside `http/`, only the composition root mounts the HTTP edge.
    let mut all = Vec::new();
    rust_files(&src, &mut all);
    for f in all {
        let rel = f.strip_prefix(&src).unwrap();
        if rel.starts_with("http") || rel == Path::new("server.rs") {
            continue;
        }
        if names(&code_of(&f), "http") {
            let line = format!("{} names crate::http", rel.display());
            if !wrong.contains(&line) {
                wrong.push(line);
            }
        }
    }
    for module in NO_FRAMEWORK {
        let mut files = Vec::new();
        rust_files(&src.join(module), &mut files);
        for f in files {
            let code = code_of(&f);
            if code.contains("axum::") || code.contains("aide::") || code.contains("use axum") {
                wrong.push(format!(
                    "{} uses the HTTP framework",
                    f.strip_prefix(&src).unwrap().display()
                ));
            }
        }
    }
    wrong.sort();
    assert!(
        wrong.is_empty(),
        "imports against the layer rule (ARCHITECTURE.md):\n  {}",
        wrong.join("\n  ")
    );
}

#[test]
fn the_checker_sees_a_wrong_way_import() {
    assert!(names("use crate::http::AppState;", "http"));
    assert!(names("crate::http::error::ApiError", "http"));
    assert!(!names("use crate::https_only;", "http"));
    assert!(
        !names("// see crate::http", "store") && code_of_text("x // crate::http").trim() == "x"
    );
}
