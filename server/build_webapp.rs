//! The web responder's files embedded in the binary, so `qp serve` needs no
//! Node, CDN or second server at run time, and every build a person runs
//! (the README's `cargo build`, `cargo install --path server`, the release
//! archive, the image) serves `/app/`. Where the files come from, first
//! found:
//!
//! 1. `QP_WEB_APP_DIR`: a directory `scripts/build-web` made (whole app);
//! 2. `target/web/app`, when `scripts/build-web` has run here (whole app);
//! 3. this checkout's static files (`web/app`) with the committed
//!    WebAssembly build (`web/prebuilt/pkg`).
//!
//! Why a committed build rather than compiling it here: the WebAssembly
//! needs the wasm32 target and the wasm-bindgen CLI (minutes to compile on
//! a fresh machine, and a download), which a plain `cargo build` of the
//! server must not require. `scripts/release` refreshes `web/prebuilt`;
//! `web/prebuilt/SOURCES` records a digest of the Rust sources it was built
//! from, and when this checkout's differ the build says so (a cargo
//! warning, and `qp serve`'s start log): the app still works (the server
//! checks every answer), run `scripts/build-web` for one built from these
//! sources.
//!
//! Without any of them the build fails, naming what to run; a server
//! without the web app is built only on request (`QP_WEB_APP=none`), and
//! then says so in the build output and its start log.
//!
//! Writes `$OUT_DIR/webapp_files.rs`: `FILES: &[(&str, &[u8])]`, path
//! relative to the app's root ("index.html", "pkg/qp_web_bg.wasm"), and
//! `STALE: Option<&str>` (why the WebAssembly may predate these sources) and
//! `SOURCES_DIGEST` (these sources' digest, which a test compares with
//! `scripts/build-web --sources-digest`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The WebAssembly's entry point: a directory without it is no web app.
const WASM: &str = "pkg/qp_web_bg.wasm";

/// What the WebAssembly is compiled from (paths from the repository's
/// root): `scripts/release` writes their digest into web/prebuilt/SOURCES
/// with `scripts/build-web --prebuilt`, which lists the same.
const WASM_SOURCES: &[&str] = &[
    "core/Cargo.toml",
    "core/build.rs",
    "core/locales",
    "core/src",
    "web/wasm/Cargo.toml",
    "web/wasm/locales",
    "web/wasm/src",
];

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

/// The digest `sha256sum` gives of the lines `sha256sum FILE…` prints for
/// the sources' files in byte order: `scripts/build-web --prebuilt`
/// computes the same with coreutils.
fn sources_digest(root: &Path) -> String {
    let mut files = Vec::new();
    for s in WASM_SOURCES {
        let p = root.join(s);
        if p.is_dir() {
            files_under(&p, root, &mut files);
        } else {
            files.push((s.to_string(), p));
        }
    }
    files.sort();
    let mut listing = String::new();
    for (rel, path) in &files {
        let bytes = std::fs::read(path).unwrap_or_default();
        writeln!(listing, "{}  {rel}", hex(&Sha256::digest(&bytes))).unwrap();
    }
    hex(&Sha256::digest(listing.as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        write!(s, "{b:02x}").unwrap();
        s
    })
}

fn watch(path: &Path) {
    println!("cargo:rerun-if-changed={}", path.display());
}

pub fn embed() {
    println!("cargo:rerun-if-env-changed=QP_WEB_APP_DIR");
    println!("cargo:rerun-if-env-changed=QP_WEB_APP");
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest.join("..");
    let built = root.join("target/web/app");
    // Made when absent, so cargo can watch it (a missing path would rerun
    // this script, and rebuild the server, on every build).
    let _ = std::fs::create_dir_all(&built);
    watch(&built);

    for s in WASM_SOURCES {
        watch(&root.join(s));
    }
    let digest = sources_digest(&root);
    let mut stale = None;
    let mut files = Vec::new();
    if let Some(dir) = std::env::var_os("QP_WEB_APP_DIR").map(PathBuf::from) {
        if !dir.join(WASM).is_file() {
            fail(&format!(
                "QP_WEB_APP_DIR={} has no {WASM}: point it at the directory scripts/build-web \
                 wrote (QP_WEB_OUT=DIR scripts/build-web)",
                dir.display()
            ));
        }
        watch(&dir);
        files_under(&dir, &dir, &mut files);
    } else if built.join(WASM).is_file() {
        files_under(&built, &built, &mut files);
    } else if std::env::var("QP_WEB_APP").as_deref() == Ok("none") {
        println!(
            "cargo:warning=qp is built WITHOUT the web responder (QP_WEB_APP=none): /app/ will \
             say it is not in this build"
        );
    } else {
        let statics = root.join("web/app");
        let prebuilt = root.join("web/prebuilt");
        watch(&statics);
        watch(&prebuilt);
        if !statics.join("index.html").is_file() || !prebuilt.join(WASM).is_file() {
            fail(&format!(
                "the web responder is not here: neither {} (made by scripts/build-web) nor \
                 web/app with web/prebuilt/{WASM} (committed) exists. Run scripts/build-web, or \
                 build without it on purpose with QP_WEB_APP=none",
                built.display()
            ));
        }
        files_under(&statics, &statics, &mut files);
        let mut pkg = Vec::new();
        files_under(&prebuilt.join("pkg"), &prebuilt, &mut pkg);
        files.extend(pkg);
        let recorded = std::fs::read_to_string(prebuilt.join("SOURCES")).unwrap_or_default();
        if recorded.split_whitespace().next() != Some(digest.as_str()) {
            let why = "the web responder's WebAssembly (web/prebuilt) was built from other \
                       sources of core/ and web/wasm/ than this build's: run scripts/build-web \
                       for a current one (scripts/release refreshes web/prebuilt)";
            println!("cargo:warning={why}");
            stale = Some(why);
        }
    }
    files.sort();

    let mut src = String::from("pub static FILES: &[(&str, &[u8])] = &[\n");
    for (rel, path) in &files {
        watch(path);
        writeln!(
            src,
            "    ({rel:?}, include_bytes!({:?})),",
            path.display().to_string()
        )
        .unwrap();
    }
    src.push_str("];\n");
    writeln!(src, "pub static STALE: Option<&str> = {stale:?};").unwrap();
    writeln!(
        src,
        "#[allow(dead_code)]\npub static SOURCES_DIGEST: &str = {digest:?};"
    )
    .unwrap();
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("webapp_files.rs");
    std::fs::write(out, src).unwrap();
}

/// Stops the build with `why` (cargo shows a build script's panic message).
fn fail(why: &str) -> ! {
    eprintln!("error: {why}");
    panic!("{why}");
}
