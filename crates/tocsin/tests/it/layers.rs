//! The layer rule of `ARCHITECTURE.md`, checked on the source: one ordered list of layers, and
//! imports point down it.
//!
//! `LAYERS` names every top-level module of `src/` (a folder, a file, or both, as `live.rs` with
//! `live/`) exactly once, top to bottom. A file may name a module of its own layer or of a lower
//! one. Naming a module of a higher layer fails, with no exception: what a lower layer needs
//! moves down, or is passed in from above. A source file of a module the list does not name
//! fails, and so does a listed module without source.
//!
//! The crate builds two targets: the library, which is the service, and the binary. `BINARY`
//! names the binary's modules (`main.rs` declares them: the command line and the load
//! generator); they reach the service through the library's public paths (`tocsin::x`), which
//! count as imports of `x` like `crate::x` does elsewhere. `lib.rs` declaring one of them fails:
//! the service does not compile the load generator.
//!
//! Beside the order:
//! - nothing outside `src/http/` imports `crate::http`, except `server.rs`, the composition root
//!   that mounts the router;
//! - below the HTTP edge nothing uses axum or aide: the edge adapts the layers under it;
//! - the old service locator spreads no further and, once `app.rs` is gone, does not come back
//!   (`the_service_locator_does_not_come_back`).
//!
//! Imports are read from code only (comments, doc comments and string literals are blanked, so
//! an intra-doc link may point anywhere): `crate::x` paths, `use crate::{a, b::c}` groups, and
//! `super::` chains long enough to climb out of their top-level module.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

/// The layers, top to bottom: (what the layer is, its top-level modules). `lib` and `main` are
/// the crate roots (`lib.rs` only declares the modules).
type Layers = &'static [(&'static str, &'static [&'static str])];

const LAYERS: Layers = &[
    ("entry points", &["main", "lib"]),
    ("command line", &["cli"]),
    ("load generator", &["bench"]),
    ("composition root", &["server"]),
    ("HTTP edge", &["http"]),
    ("public read model", &["public"]),
    ("domain operations", &["domain"]),
    ("metrics", &["telemetry"]),
    ("push ingestion", &["push"]),
    ("monitoring", &["monitoring"]),
    (
        "alerting, probes, audit, billing",
        &["alerting", "probes", "audit", "billing"],
    ),
    ("credentials", &["auth"]),
    ("live fan-out", &["live"]),
    ("context", &["cx"]),
    ("cluster", &["cluster"]),
    ("storage", &["store"]),
    ("mail", &["mail"]),
    ("configuration", &["config"]),
    ("leaves", &["cache", "clock", "ids", "schema", "text"]),
];

/// The binary target's modules (`main.rs` and what it declares); every other module is the
/// library's.
const BINARY: &[&str] = &["main", "cli", "bench"];

/// Something against the rules, as the test reports it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Problem {
    /// A file names a module of a higher layer.
    Upward {
        file: String,
        line: usize,
        module: String,
        from: String,
        to: String,
    },
    /// A source file belongs to a top-level module `LAYERS` does not name.
    Unlisted { file: String, module: String },
    /// `LAYERS` names a module twice.
    ListedTwice { module: String },
    /// `LAYERS` names a module with no source.
    NoSource { module: String },
    /// A file outside `http/` (and not `server.rs`) names `crate::http`.
    HttpOutsideEdge { file: String, line: usize },
    /// A file below the HTTP edge uses axum or aide.
    Framework { file: String, line: usize },
    /// `lib.rs` declares a module of the binary.
    BinaryInLibrary { line: usize, module: String },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Upward {
                file,
                line,
                module,
                from,
                to,
            } => write!(
                f,
                "{file}:{line} imports crate::{module} ({to}) from {from}: a higher layer; \
                 move what it needs down, or pass it in from above"
            ),
            Problem::Unlisted { file, module } => write!(
                f,
                "{file} belongs to module `{module}`, which LAYERS does not name: add it to \
                 its layer"
            ),
            Problem::ListedTwice { module } => write!(f, "LAYERS names `{module}` twice"),
            Problem::NoSource { module } => write!(
                f,
                "LAYERS names `{module}`, which has no source under src/: remove it"
            ),
            Problem::HttpOutsideEdge { file, line } => write!(
                f,
                "{file}:{line} names crate::http: only http/ and server.rs may"
            ),
            Problem::Framework { file, line } => {
                write!(f, "{file}:{line} uses axum or aide below the HTTP edge")
            }
            Problem::BinaryInLibrary { line, module } => write!(
                f,
                "lib.rs:{line} declares `{module}`, a module of the binary: declare it in \
                 main.rs, so that the service does not compile it"
            ),
        }
    }
}

/// The top-level module a file under `src/` belongs to (`http/mcp/tools.rs` -> `http`,
/// `live.rs` -> `live`).
fn top_module(rel: &str) -> &str {
    let first = rel.split('/').next().unwrap_or(rel);
    first.strip_suffix(".rs").unwrap_or(first)
}

/// How deep the file's module sits under the crate root (`lib.rs` 0, `cx.rs` 1,
/// `domain/mod.rs` 1, `live/relay.rs` 2).
fn file_depth(rel: &str) -> usize {
    let parts: Vec<&str> = rel.split('/').collect();
    match parts.as_slice() {
        [root] if *root == "lib.rs" || *root == "main.rs" => 0,
        [.., last] if *last == "mod.rs" => parts.len() - 1,
        _ => parts.len(),
    }
}

/// Checks sources (`(path under src/, text)`) against an ordered list of layers and the binary's
/// modules; returns every problem, sorted.
fn check(files: &[(String, String)], layers: Layers, binary: &[&str]) -> Vec<Problem> {
    let mut problems = BTreeSet::new();
    // module -> (layer index, layer label)
    let mut layer_of: BTreeMap<&str, (usize, String)> = BTreeMap::new();
    for (i, (name, modules)) in layers.iter().enumerate() {
        for m in *modules {
            let label = format!("layer {} `{name}`", i + 1);
            // The first listing counts; a second is an error of its own.
            if layer_of.contains_key(m) {
                problems.insert(Problem::ListedTwice {
                    module: m.to_string(),
                });
            } else {
                layer_of.insert(m, (i, label));
            }
        }
    }
    let http_layer = layer_of.get("http").map(|l| l.0);
    let present: BTreeSet<&str> = files.iter().map(|(rel, _)| top_module(rel)).collect();
    for m in layer_of.keys() {
        if !present.contains(m) {
            problems.insert(Problem::NoSource {
                module: m.to_string(),
            });
        }
    }
    for (rel, text) in files {
        let own = top_module(rel);
        let Some((own_layer, own_label)) = layer_of.get(own) else {
            problems.insert(Problem::Unlisted {
                file: rel.clone(),
                module: own.to_string(),
            });
            continue;
        };
        let code = strip(text);
        let in_binary = binary.contains(&own);
        if rel == "lib.rs" {
            for (line, module) in declared_modules(&code) {
                if binary.contains(&module.as_str()) {
                    problems.insert(Problem::BinaryInLibrary { line, module });
                }
            }
        }
        for (line, target) in imports(rel, &code, in_binary) {
            if target == own {
                continue;
            }
            if target == "http" && rel != "server.rs" {
                problems.insert(Problem::HttpOutsideEdge {
                    file: rel.clone(),
                    line,
                });
            }
            // A name that is no module (a macro exported at the crate root) draws no edge;
            // an unlisted module is reported once, as unlisted.
            let Some((to_layer, to_label)) = layer_of.get(target.as_str()) else {
                continue;
            };
            if to_layer >= own_layer {
                continue;
            }
            problems.insert(Problem::Upward {
                file: rel.clone(),
                line,
                module: target.clone(),
                from: format!("{own} ({own_label})"),
                to: to_label.clone(),
            });
        }
        if http_layer.is_some_and(|h| *own_layer > h) {
            for line in framework_lines(&code) {
                problems.insert(Problem::Framework {
                    file: rel.clone(),
                    line,
                });
            }
        }
    }
    problems.into_iter().collect()
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The text with comments (line, block and doc) and the contents of string and character
/// literals replaced by spaces; lines stay where they were, so line numbers still hold.
fn strip(text: &str) -> String {
    let s: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char, out: &mut String| out.push(if c == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < s.len() && s[i] != '\n' {
                blank(s[i], &mut out);
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < s.len() {
                if s[i] == '/' && s.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if s[i] == '*' && s.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(s[i], &mut out);
                    i += 1;
                }
            }
        } else if c == '"' {
            out.push('"');
            i += 1;
            while i < s.len() && s[i] != '"' {
                if s[i] == '\\' && i + 1 < s.len() {
                    blank(s[i], &mut out);
                    i += 1;
                }
                blank(s[i], &mut out);
                i += 1;
            }
            if i < s.len() {
                out.push('"');
                i += 1;
            }
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{7f}') or a lifetime or label ('a).
            let end = if next == Some('\\') {
                (i + 3..s.len()).find(|&j| s[j] == '\'')
            } else if s.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(end) => {
                    out.push('\'');
                    for &ch in &s[i + 1..end] {
                        blank(ch, &mut out);
                    }
                    out.push('\'');
                    i = end + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < s.len() && (s[i].is_alphanumeric() || s[i] == '_') {
                i += 1;
            }
            let word: String = s[start..i].iter().collect();
            out.push_str(&word);
            // Raw strings: r"..", r#".."#, br"..": delimiters kept, body blanked.
            if word == "r" || word == "br" {
                let hashes = (i..s.len()).take_while(|&j| s[j] == '#').count();
                if s.get(i + hashes) == Some(&'"') {
                    let closes_at =
                        |j: usize| s[j] == '"' && (1..=hashes).all(|h| s.get(j + h) == Some(&'#'));
                    out.extend(std::iter::repeat_n('#', hashes));
                    out.push('"');
                    let mut j = i + hashes + 1;
                    while j < s.len() && !closes_at(j) {
                        blank(s[j], &mut out);
                        j += 1;
                    }
                    if j < s.len() {
                        out.push('"');
                        out.extend(std::iter::repeat_n('#', hashes));
                        j += 1 + hashes;
                    }
                    i = j;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The top-level names a file's (stripped) code reaches through the crate root, with their
/// lines: `crate::x`, `use crate::{x, y::z}`, and `super::` chains that climb to the root; in a
/// module of the binary also the library's `tocsin::x` and `use tocsin::{x, y::z}`.
fn imports(rel: &str, code: &str, in_binary: bool) -> Vec<(usize, String)> {
    let b = code.as_bytes();
    let line_at = |pos: usize| code[..pos].bytes().filter(|&c| c == b'\n').count() + 1;
    let skip_ws = |mut j: usize| {
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        j
    };
    let path_sep = |j: usize| b.get(j) == Some(&b':') && b.get(j + 1) == Some(&b':');
    let depth0 = file_depth(rel);
    let mut found = Vec::new();
    // Inline `mod x { .. }` blocks nest the module deeper than its file: the brace depths at
    // which such blocks opened.
    let mut inline_mods: Vec<usize> = Vec::new();
    let mut braces = 0usize;
    let mut pending_mod = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'{' {
            braces += 1;
            if pending_mod {
                inline_mods.push(braces);
                pending_mod = false;
            }
            i += 1;
            continue;
        }
        if c == b'}' {
            if inline_mods.last() == Some(&braces) {
                inline_mods.pop();
            }
            braces = braces.saturating_sub(1);
            i += 1;
            continue;
        }
        if c == b';' {
            pending_mod = false;
        }
        if !is_ident(c) || (i > 0 && is_ident(b[i - 1])) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        let word = &code[start..i];
        let after_root = match word {
            "mod" => {
                pending_mod = true;
                None
            }
            "crate" if path_sep(skip_ws(i)) => Some(skip_ws(skip_ws(i) + 2)),
            "tocsin" if in_binary && path_sep(skip_ws(i)) => Some(skip_ws(skip_ws(i) + 2)),
            // A chain starting here (not `a::super`): count its steps up.
            "super" if !(start >= 2 && &b[start - 2..start] == b"::") => {
                let mut steps = 1;
                let mut j = i;
                let target = loop {
                    let sep = skip_ws(j);
                    if !path_sep(sep) {
                        break None;
                    }
                    let k = skip_ws(sep + 2);
                    if code[k..].starts_with("super") && !b.get(k + 5).is_some_and(|&x| is_ident(x))
                    {
                        steps += 1;
                        j = k + 5;
                    } else {
                        break Some(k);
                    }
                };
                i = j;
                target.filter(|_| steps >= depth0 + inline_mods.len())
            }
            _ => None,
        };
        let Some(at) = after_root else {
            continue;
        };
        let line = line_at(start);
        if b.get(at) == Some(&b'{') {
            // A group: the first name of each item at its top level.
            let mut depth = 0;
            let mut item_start = true;
            let mut j = at;
            while j < b.len() {
                match b[j] {
                    b'{' => {
                        depth += 1;
                        if depth == 1 {
                            item_start = true;
                        }
                    }
                    b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    b',' if depth == 1 => item_start = true,
                    x if is_ident(x) && item_start && depth == 1 => {
                        let s = j;
                        while j < b.len() && is_ident(b[j]) {
                            j += 1;
                        }
                        found.push((line, code[s..j].to_string()));
                        item_start = false;
                        continue;
                    }
                    x if !x.is_ascii_whitespace() => item_start = false,
                    _ => {}
                }
                j += 1;
            }
        } else {
            let mut j = at;
            while j < b.len() && is_ident(b[j]) {
                j += 1;
            }
            if j > at {
                found.push((line, code[at..j].to_string()));
            }
        }
    }
    found
}

/// The modules a (stripped) crate root declares, `mod x;` or `pub mod x;`, with their lines.
fn declared_modules(code: &str) -> Vec<(usize, String)> {
    code.lines()
        .enumerate()
        .filter_map(|(n, l)| {
            let words: Vec<&str> = l
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .filter(|w| !w.is_empty())
                .collect();
            let at = words.iter().position(|w| *w == "mod")?;
            words.get(at + 1).map(|m| (n + 1, (*m).to_string()))
        })
        .collect()
}

/// Lines of (stripped) code that name axum or aide as a path or crate.
fn framework_lines(code: &str) -> Vec<usize> {
    let mut lines = Vec::new();
    for (n, l) in code.lines().enumerate() {
        let b = l.as_bytes();
        let hit = ["axum", "aide"].iter().any(|name| {
            l.match_indices(name).any(|(i, _)| {
                let before = i.checked_sub(1).map(|j| b[j]);
                let after = b.get(i + name.len()).copied();
                !before.is_some_and(|x| is_ident(x) || x == b':') && !after.is_some_and(is_ident)
            })
        });
        if hit {
            lines.push(n + 1);
        }
    }
    lines
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(under: &Path, out: &mut Vec<PathBuf>) {
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

/// Every `.rs` file under `dir` as (path relative to `dir` with `/` separators, text).
fn sources(dir: &Path) -> Vec<(String, String)> {
    let mut paths = Vec::new();
    rust_files(dir, &mut paths);
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(dir).expect("under the directory");
            let rel = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            let text = std::fs::read_to_string(&p).expect("a readable source file");
            (rel, text)
        })
        .collect()
}

#[test]
fn imports_point_down_the_layers() {
    let problems = check(&sources(&src_dir()), LAYERS, BINARY);
    assert!(
        problems.is_empty(),
        "against the layers (tests/it/layers.rs, ARCHITECTURE.md \"Layers\"):\n  {}",
        problems
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n  ")
    );
}

#[test]
fn the_service_locator_does_not_come_back() {
    // Spelled in two pieces so that this file does not name it.
    let path = concat!("app::", "Co", "re");
    let declaration = concat!("struct ", "Co", "re");
    let declares = |text: &str| {
        text.match_indices(declaration).any(|(i, _)| {
            !text[i + declaration.len()..]
                .bytes()
                .next()
                .is_some_and(is_ident)
        })
    };
    let crates = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crates directory");
    let all = sources(crates);
    let naming: Vec<&str> = all
        .iter()
        .filter(|(_, t)| t.contains(path))
        .map(|(f, _)| f.as_str())
        .collect();
    let declaring: Vec<&str> = all
        .iter()
        .filter(|(_, t)| declares(t))
        .map(|(f, _)| f.as_str())
        .collect();
    let src = src_dir();
    assert!(
        !src.join("app.rs").exists() && !src.join("app").exists(),
        "app.rs is back: build the engine in server.rs and hand it to whoever needs it"
    );
    assert!(
        naming.is_empty() && declaring.is_empty(),
        "{path} or `{declaration}` is back in: {:?}",
        naming.iter().chain(&declaring).collect::<Vec<_>>()
    );
}

#[test]
fn every_layer_is_named_once() {
    let mut seen = BTreeSet::new();
    for (_, modules) in LAYERS {
        for m in *modules {
            assert!(seen.insert(*m), "LAYERS names `{m}` twice");
        }
    }
}

/// The checker over a made-up source tree: each kind of problem is seen, and comments, strings
/// and downward imports are not mistaken for one.
#[test]
fn the_checker_reports_what_is_wrong() {
    const FAKE_LAYERS: Layers = &[
        ("roots", &["lib", "server"]),
        ("edge", &["http"]),
        ("middle", &["top"]),
        ("bottom", &["low", "missing", "top", "tool"]),
    ];
    // `tool` is a module of the binary: `tocsin::` is the library to it, and lib.rs may not
    // declare it.
    const FAKE_BINARY: &[&str] = &["tool"];
    let file = |rel: &str, text: &str| (rel.to_string(), text.to_string());
    let files = [
        file("lib.rs", "pub mod top;\npub mod low;\nmod tool;\n"),
        file("server.rs", "use crate::http::router;\n"),
        file(
            "http/mod.rs",
            "use axum::Router;\nuse crate::top::x;\nuse crate::low::y;\n",
        ),
        file(
            "top.rs",
            "//! Names crate::http in a doc comment only.\n\
             use crate::low::X;\n\
             const S: &str = \"crate::http\";\n\
             const R: &str = r#\"crate::server \"quoted\"\"#;\n\
             /* crate::http\n   /* nested */ crate::http */\n\
             fn f<'a>(x: &'a str) -> char { '{' }\n\
             pub(crate) fn g() {}\n",
        ),
        file(
            "low/mod.rs",
            "use crate::low::inner;\n\nuse crate::top::Y; // upward\n",
        ),
        file(
            "low/deep.rs",
            "use crate::{low::A, top::{B, C}};\n\
             #[cfg(test)]\n\
             mod tests {\n    \
                 use super::super::super::top::Z;\n    \
                 use super::super::inner;\n\
             }\n\
             use super::super::{server, low};\n",
        ),
        file(
            "low/web.rs",
            "use crate::http::x;\npub fn f() -> axum::Router { todo!() }\n",
        ),
        file(
            "low/up.rs",
            "use crate::top::W;\nuse crate::requirement;\nuse tocsin::top::V;\n",
        ),
        file(
            "tool.rs",
            "use tocsin::{low::A, top::B};\nuse crate::low::C;\n",
        ),
        file("extra.rs", "use crate::http::z;\n"),
        file("store/x.rs", "use crate::low::Row;\n"),
    ];
    let got = check(&files, FAKE_LAYERS, FAKE_BINARY);
    let upward = |file: &str, line: usize, module: &str, from: &str, to: &str| Problem::Upward {
        file: file.to_string(),
        line,
        module: module.to_string(),
        from: from.to_string(),
        to: to.to_string(),
    };
    let low = "low (layer 4 `bottom`)";
    let mut want = vec![
        upward("low/deep.rs", 1, "top", low, "layer 3 `middle`"),
        upward("low/deep.rs", 4, "top", low, "layer 3 `middle`"),
        upward("low/deep.rs", 7, "server", low, "layer 1 `roots`"),
        upward("low/up.rs", 1, "top", low, "layer 3 `middle`"),
        upward("low/mod.rs", 3, "top", low, "layer 3 `middle`"),
        upward("low/web.rs", 1, "http", low, "layer 2 `edge`"),
        upward(
            "tool.rs",
            1,
            "top",
            "tool (layer 4 `bottom`)",
            "layer 3 `middle`",
        ),
        Problem::BinaryInLibrary {
            line: 3,
            module: "tool".into(),
        },
        Problem::HttpOutsideEdge {
            file: "low/web.rs".into(),
            line: 1,
        },
        Problem::Framework {
            file: "low/web.rs".into(),
            line: 2,
        },
        Problem::Unlisted {
            file: "extra.rs".into(),
            module: "extra".into(),
        },
        Problem::Unlisted {
            file: "store/x.rs".into(),
            module: "store".into(),
        },
        Problem::ListedTwice {
            module: "top".into(),
        },
        Problem::NoSource {
            module: "missing".into(),
        },
    ];
    want.sort();
    assert_eq!(
        got,
        want,
        "got:\n  {}",
        got.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n  ")
    );
}
