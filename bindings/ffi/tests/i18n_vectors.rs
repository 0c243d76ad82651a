//! Replays the localized-copy vectors (core/tests/vectors/i18n) through the
//! export the Swift and Kotlin suites call. `QP_WRITE_I18N_VECTORS=1` fills
//! in `expect` from the current message files (then review the diff).
#![cfg(feature = "testing")]

use qp_ffi::testing::localized_copy;
use serde_json::Value;

const FILE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../core/tests/vectors/i18n/copy.json"
);

#[test]
fn every_i18n_vector_passes() {
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(FILE).unwrap()).unwrap();
    let write = std::env::var_os("QP_WRITE_I18N_VECTORS").is_some();
    let mut failures = Vec::new();
    let vectors = doc["vectors"].as_array_mut().unwrap();
    assert!(vectors.len() >= 400, "{} vectors", vectors.len());
    for v in vectors.iter_mut() {
        let languages: Vec<String> = serde_json::from_value(v["languages"].clone()).unwrap();
        let got = localized_copy(
            languages,
            v["kind"].as_str().unwrap().to_string(),
            v["args"].to_string(),
        )
        .unwrap_or_else(|e| format!("ERROR {e}"));
        if write {
            v["expect"] = Value::String(got);
        } else if v["expect"].as_str() != Some(got.as_str()) {
            failures.push(format!("{}: got {got:?}, want {}", v["name"], v["expect"]));
        }
    }
    if write {
        std::fs::write(FILE, serde_json::to_string_pretty(&doc).unwrap() + "\n").unwrap();
    }
    assert!(
        failures.is_empty(),
        "{} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
