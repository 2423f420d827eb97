//! Rebuild when a migration is added or changed: `sqlx::migrate!` embeds them at compile time.
//! Also writes the dashboard's asset table: every file of the committed `web/dist/` (with its
//! precompressed `.gz` and `.br` siblings) embedded by `include_bytes!`, so the binary serves
//! the browser app with no Node and no files beside it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=migrations");
    dashboard_assets();
}

fn dashboard_assets() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let dist = manifest.join("../../web/dist");
    println!("cargo:rerun-if-changed={}", dist.display());
    let mut files = Vec::new();
    collect(&dist, &dist, &mut files);
    files.sort();
    let mut out = String::from("&[\n");
    for rel in &files {
        if rel.ends_with(".gz") || rel.ends_with(".br") {
            continue;
        }
        let full = dist.join(rel);
        println!("cargo:rerun-if-changed={}", full.display());
        let variant = |ext: &str| {
            let p = dist.join(format!("{rel}.{ext}"));
            if p.is_file() {
                println!("cargo:rerun-if-changed={}", p.display());
                format!("Some(include_bytes!({:?}))", p.display().to_string())
            } else {
                "None".to_owned()
            }
        };
        let _ = writeln!(
            out,
            "    DashboardAsset {{ path: {rel:?}, raw: include_bytes!({:?}), gzip: {}, brotli: {} }},",
            full.display().to_string(),
            variant("gz"),
            variant("br"),
        );
    }
    out.push(']');
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_default());
    let _ = std::fs::write(out_dir.join("dashboard_assets.rs"), out);
}

/// Every file under `dir`, as a `/`-separated path relative to `root`.
fn collect(root: &Path, dir: &Path, files: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(root, &path, files);
        } else if let Ok(rel) = path.strip_prefix(root) {
            let rel: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            files.push(rel.join("/"));
        }
    }
}
