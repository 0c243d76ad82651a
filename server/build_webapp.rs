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
//! Writes `$OUT_DIR/webapp_files.rs`: `FILES: &[File]`, each with its path
//! relative to the app's root ("index.html", "pkg/qp_web_bg.wasm"), its
//! bytes, the same compressed with gzip and Brotli (when that saves), and
//! its tag (a digest of the
//! bytes, the HTTP validator); the service worker with its shell version
//! stamped in (a digest of every other file); and
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

    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let mut src = String::from("pub static FILES: &[File] = &[\n");
    let shell = shell_version(&files);
    for (rel, path) in &files {
        watch(path);
        let mut bytes = std::fs::read(path).unwrap();
        let mut raw_path = path.clone();
        if rel == SERVICE_WORKER {
            bytes = stamp_service_worker(&bytes, &shell);
            raw_path = out_dir.join("webapp-sw.js");
            std::fs::write(&raw_path, &bytes).unwrap();
        }
        let tag = hex(&Sha256::digest(&bytes))[..20].to_string();
        let compressed = |kind: &str, bytes: Option<Vec<u8>>| match bytes {
            Some(b) => {
                let p = out_dir.join(format!("webapp-{tag}.{kind}"));
                std::fs::write(&p, b).unwrap();
                format!("Some(include_bytes!({:?}))", p.display().to_string())
            }
            None => "None".into(),
        };
        let gzip = compressed("gz", worth_it(&bytes, gzipped(&bytes)));
        let br = compressed("br", worth_it(&bytes, brotli(&bytes)));
        writeln!(
            src,
            "    File {{ path: {rel:?}, raw: include_bytes!({:?}), gzip: {gzip}, br: {br}, \
             tag: {tag:?} }},",
            raw_path.display().to_string(),
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
    std::fs::write(out_dir.join("webapp_files.rs"), src).unwrap();
}

/// The service worker, whose cache of the app's shell is named after the
/// shell's version: a new build changes its bytes, so browsers install it,
/// and it replaces the cached shell.
const SERVICE_WORKER: &str = "sw.js";

/// What `sw.js` says where its shell version goes.
const SHELL_VERSION_MARK: &str = "@QP_SHELL_VERSION@";

/// A digest of every file of the app but the service worker.
fn shell_version(files: &[(String, PathBuf)]) -> String {
    let mut h = Sha256::new();
    for (rel, path) in files.iter().filter(|(rel, _)| rel != SERVICE_WORKER) {
        h.update(rel.as_bytes());
        h.update([0]);
        h.update(Sha256::digest(std::fs::read(path).unwrap_or_default()));
    }
    hex(&h.finalize())[..16].to_string()
}

fn stamp_service_worker(bytes: &[u8], version: &str) -> Vec<u8> {
    let text = String::from_utf8_lossy(bytes);
    if !text.contains(SHELL_VERSION_MARK) {
        fail(&format!(
            "web/app/{SERVICE_WORKER} has no {SHELL_VERSION_MARK}"
        ));
    }
    text.replace(SHELL_VERSION_MARK, version).into_bytes()
}

/// The compressed bytes, when they save at least a tenth (images are
/// compressed already).
fn worth_it(raw: &[u8], compressed: Vec<u8>) -> Option<Vec<u8>> {
    (compressed.len() * 10 < raw.len() * 9).then_some(compressed)
}

fn gzipped(bytes: &[u8]) -> Vec<u8> {
    use flate2::{write::GzEncoder, Compression};
    use std::io::Write as _;
    let mut enc = GzEncoder::new(Vec::new(), Compression::best());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

fn brotli(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let params = brotli::enc::BrotliEncoderParams {
        quality: 11,
        lgwin: 22,
        ..Default::default()
    };
    brotli::BrotliCompress(&mut &bytes[..], &mut out, &params).unwrap();
    out
}

/// Stops the build with `why` (cargo shows a build script's panic message).
fn fail(why: &str) -> ! {
    eprintln!("error: {why}");
    panic!("{why}");
}
