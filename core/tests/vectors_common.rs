//! Shared by the vector suites: loading vector files and reporting failures.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::Value;

pub fn load(folder: &str) -> Vec<(String, Value)> {
    let dir: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/vectors")
        .join(folder);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let fname = file.file_name().unwrap().to_string_lossy().to_string();
        for v in doc["vectors"].as_array().expect("vectors array") {
            out.push((
                format!("{fname}: {}", v["name"].as_str().expect("name")),
                v.clone(),
            ));
        }
    }
    out
}

/// Runs every vector, collecting failures into one report.
pub fn run_all(
    vectors: &[(String, Value)],
    min: usize,
    run: impl Fn(&Value) -> Result<(), String>,
) {
    let mut failures = Vec::new();
    for (name, v) in vectors {
        if let Err(msg) = run(v) {
            failures.push(format!("{name}: {msg}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} vectors failed:\n{}",
        failures.len(),
        vectors.len(),
        failures.join("\n")
    );
    assert!(vectors.len() >= min, "only {} vectors", vectors.len());
}

pub fn eq(what: &str, got: &Value, want: &Value) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}:\n  expected {want}\n  got      {got}"))
    }
}
