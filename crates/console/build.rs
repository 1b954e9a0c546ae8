//! Embeds the built console (`console/dist` at the workspace root, written
//! by `make console`) into the function: a table of path, media type and
//! bytes in `$OUT_DIR/assets.rs`. A release build without it, or with one
//! older than the console's sources, fails and says how to make it, so no
//! deployment ships an empty or stale console. Any other build (`cargo
//! check`, `cargo test` in a fresh clone, before `make console`) warns and
//! embeds a placeholder page that says how to build the real one.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let console = manifest.join("../../console");
    let dist = console.join("dist");
    let index = dist.join("index.html");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    if !index.exists() {
        // Watched: the console's folder, which exists (a path that does
        // not exist would make cargo run this again at every build), and
        // changes when `make console` writes dist/.
        println!("cargo:rerun-if-changed={}", console.display());
        let missing = format!(
            "{} is missing: build the console with `make console` (npm ci and vite build in console/)",
            index.display()
        );
        if release {
            panic!("{missing}");
        }
        println!("cargo:warning={missing}; embedding a placeholder page");
        let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets it")).join("assets.rs");
        std::fs::write(
            out,
            format!(
                "#[allow(dead_code)] // read by the tests\npub static BUILT: bool = false;\npub static ASSETS: &[(&str, &str, &str)] = &[(\"index.html\", \"text/html; charset=utf-8\", {:?})];\n",
                PLACEHOLDER
            ),
        )
        .expect("write assets.rs");
        return;
    }
    println!("cargo:rerun-if-changed={}", dist.display());
    println!("cargo:rerun-if-changed={}", index.display());
    let mut sources = Vec::new();
    walk(&console.join("src"), &console.join("src"), &mut sources);
    for extra in ["index.html", "vite.config.ts", "package-lock.json"] {
        sources.push((extra.to_string(), console.join(extra)));
    }
    let built = modified(&index);
    for (_, source) in &sources {
        println!("cargo:rerun-if-changed={}", source.display());
        if modified(source) > built {
            let stale = format!(
                "{} is newer than {}: rebuild the console with `make console`",
                source.display(),
                index.display()
            );
            if release {
                panic!("{stale}");
            }
            println!("cargo:warning={stale}");
            break;
        }
    }
    let mut files = Vec::new();
    walk(&dist, &dist, &mut files);
    files.sort();
    let mut table = String::from(
        "#[allow(dead_code)] // read by the tests\npub static BUILT: bool = true;\npub static ASSETS: &[(&str, &str, &str)] = &[\n",
    );
    for (relative, path) in &files {
        println!("cargo:rerun-if-changed={}", path.display());
        let text = std::fs::read(path).expect("read an asset");
        assert!(
            String::from_utf8(text).is_ok(),
            "{} is not UTF-8 text: the console ships text assets only (API Gateway passes them without binary media types)",
            path.display()
        );
        writeln!(
            table,
            "    ({relative:?}, {:?}, include_str!({:?})),",
            media_type(relative),
            path.display().to_string()
        )
        .expect("write to a string");
    }
    table.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets it")).join("assets.rs");
    std::fs::write(out, table).expect("write assets.rs");
}

/// What a build without `console/dist` serves at `/console/`.
const PLACEHOLDER: &str = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Console not built</title></head><body><main><h1>The console is not built</h1><p>This function was compiled before <code>make console</code> built <code>console/dist</code>. Run <code>make console</code> (or <code>make dev</code>, which builds it) and rebuild.</p></main></body></html>";

fn walk(root: &Path, dir: &Path, files: &mut Vec<(String, PathBuf)>) {
    for entry in std::fs::read_dir(dir).expect("read console/dist") {
        let path = entry.expect("a directory entry").path();
        println!("cargo:rerun-if-changed={}", path.display());
        if path.is_dir() {
            walk(root, &path, files);
        } else {
            let relative = path
                .strip_prefix(root)
                .expect("under dist")
                .to_string_lossy()
                .replace('\\', "/");
            files.push((relative, path));
        }
    }
}

fn modified(path: &Path) -> std::time::SystemTime {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn media_type(path: &str) -> &'static str {
    match path.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("json") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}
