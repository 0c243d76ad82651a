//! The web responder's files (built by `scripts/build-web` into
//! `target/web/app`, or `QP_WEB_APP_DIR`) embedded in the binary, so `qp
//! serve` needs no Node, CDN or second server at run time. The WebAssembly
//! build is not run here: it needs a wasm32 target and the wasm-bindgen CLI
//! that a plain `cargo build` should not require. Without the files the
//! binary embeds none and `/app/` says how to build them.
//!
//! Writes `$OUT_DIR/webapp_files.rs`: `FILES: &[(&str, &[u8])]`, path
//! relative to the directory ("index.html", "pkg/qp_web_bg.wasm").

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn files_under(dir: &Path, base: &Path, out: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.filter_map(Result::ok) {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, base, out);
        } else if let Ok(rel) = p.strip_prefix(base) {
            out.push((rel.to_string_lossy().replace('\\', "/"), p.clone()));
        }
    }
}

pub fn embed() {
    println!("cargo:rerun-if-env-changed=QP_WEB_APP_DIR");
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let dir = std::env::var("QP_WEB_APP_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| manifest.join("../target/web/app"));
    // Made when absent, so cargo can watch it (a missing path would rerun
    // this script, and rebuild the server, on every build).
    let _ = std::fs::create_dir_all(&dir);
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files = Vec::new();
    files_under(&dir, &dir, &mut files);
    files.sort();
    let mut src = String::from("pub static FILES: &[(&str, &[u8])] = &[\n");
    for (rel, path) in &files {
        println!("cargo:rerun-if-changed={}", path.display());
        writeln!(
            src,
            "    ({rel:?}, include_bytes!({:?})),",
            path.display().to_string()
        )
        .unwrap();
    }
    src.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("webapp_files.rs");
    std::fs::write(out, src).unwrap();
}
