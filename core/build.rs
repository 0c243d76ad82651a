//! Compiles every translation in `locales/` into the library: one Fluent
//! file per language, named by its tag (`de.ftl`, `pt-BR.ftl`). Adding a
//! language is adding a file; no code changes. The files' comments (where
//! each message appears, its subject, its length: for translators and the
//! i18n tests, which read the files themselves) are left out of the copy
//! compiled in: they were 64 KB of the phone library. A Fluent comment is a
//! line starting with `#`; a message's continuation lines are indented, so
//! no line of a message can start with one.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let dir = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("locales");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("core/locales exists")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "ftl"))
        .collect();
    files.sort();
    let mut out = String::from("/// Every bundled translation: (language tag, Fluent source).\npub static LOCALES: &[(&str, &str)] = &[\n");
    let out_dir = Path::new(&std::env::var("OUT_DIR").unwrap()).join("locales");
    std::fs::create_dir_all(&out_dir).unwrap();
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
        let tag = f.file_stem().unwrap().to_string_lossy();
        let source = std::fs::read_to_string(f).expect("a locale file is UTF-8");
        let without_comments: String = source
            .lines()
            .filter(|line| !line.starts_with('#'))
            .map(|line| format!("{line}\n"))
            .collect();
        let compiled = out_dir.join(f.file_name().unwrap());
        std::fs::write(&compiled, without_comments).unwrap();
        writeln!(
            out,
            "    ({tag:?}, include_str!({:?})),",
            compiled.display().to_string()
        )
        .unwrap();
    }
    out.push_str("];\n");
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("locales.rs");
    std::fs::write(dest, out).unwrap();
}
