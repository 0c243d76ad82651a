//! The Android glue's words for when the native library cannot be loaded
//! (`android/src/main/generated/.../GenericNotificationCopy.kt`): the
//! generic notification and the questions channel, in every bundled
//! language, emitted from this crate's copy so the Kotlin never carries a
//! translation of its own. This test fails when the committed file is not
//! what the core makes of this commit; with `QP_REGENERATE=1` it writes it.
//!
//!     QP_REGENERATE=1 cargo test -p qp-core --test android_generic_copy

use std::fmt::Write as _;
use std::path::PathBuf;

use qp_core::copy::{available_languages, Copy, TRADITIONAL_CHINESE_REGIONS};
use qp_core::present::android::CHANNEL_ID;
use qp_core::present::options::DEFAULT_CHANNEL_IMPORTANCE;
use qp_core::present::ChannelImportance;

const GENERATED: &str =
    "android/src/main/generated/io/questionprotocol/android/GenericNotificationCopy.kt";

/// A Kotlin string literal: invisible characters (direction marks,
/// isolates) as `\u` escapes, so the file shows what it holds.
fn kotlin_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '$' => out.push_str("\\$"),
            '\n' => out.push_str("\\n"),
            c if c.is_control()
                || matches!(c, '\u{061C}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
                    | '\u{2060}'..='\u{2069}' | '\u{FEFF}') =>
            {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn render() -> String {
    let importance = match DEFAULT_CHANNEL_IMPORTANCE {
        ChannelImportance::Min => "IMPORTANCE_MIN",
        ChannelImportance::Low => "IMPORTANCE_LOW",
        ChannelImportance::Default => "IMPORTANCE_DEFAULT",
        ChannelImportance::High => "IMPORTANCE_HIGH",
    };
    let mut out = String::new();
    out.push_str(
        "// GENERATED from the Rust core's copy (core/locales) by\n\
         // core/tests/android_generic_copy.rs: do not edit. Regenerate with\n\
         //   QP_REGENERATE=1 cargo test -p qp-core --test android_generic_copy\n\
         // (the test, run by scripts/test rust and android/run-tests, fails when\n\
         // this file is not what the core makes of the commit).\n\
         //\n\
         // Only for when the native library cannot be loaded: every other path\n\
         // asks the core.\n\
         package io.questionprotocol.android\n\n",
    );
    out.push_str("internal object GenericNotificationCopy {\n");
    let _ = writeln!(out, "    /** The core's questions channel id. */");
    let _ = writeln!(
        out,
        "    const val CHANNEL_ID = {}",
        kotlin_string(CHANNEL_ID)
    );
    let _ = writeln!(
        out,
        "    /** The core's default importance of the channel. */"
    );
    let _ = writeln!(
        out,
        "    const val CHANNEL_IMPORTANCE = android.app.NotificationManager.{importance}"
    );
    let _ = writeln!(out, "    /** The language every chain ends with. */");
    let _ = writeln!(
        out,
        "    const val FALLBACK_LANGUAGE = {}",
        kotlin_string(qp_core::copy::FALLBACK_LANGUAGE)
    );
    let _ = writeln!(
        out,
        "    /** Where Chinese without a script is written in Traditional (the\n     *  core's negotiation: none is bundled). */"
    );
    let regions: Vec<String> = TRADITIONAL_CHINESE_REGIONS
        .iter()
        .map(|r| kotlin_string(r))
        .collect();
    let _ = writeln!(
        out,
        "    val TRADITIONAL_CHINESE_REGIONS: Set<String> = setOf({})",
        regions.join(", ")
    );
    let _ = writeln!(
        out,
        "    /** By bundled language tag: the generic notification's title and\n     *  body, the channel's name and description. */"
    );
    out.push_str("    val LINES: Map<String, GenericLines> = mapOf(\n");
    for tag in available_languages() {
        let copy = Copy::for_languages(&[tag]);
        assert_eq!(copy.language(), tag, "{tag} negotiates to itself");
        let _ = writeln!(
            out,
            "        {} to GenericLines(\n            {},\n            {},\n            {},\n            {},\n        ),",
            kotlin_string(tag),
            kotlin_string(&copy.fallback_title()),
            kotlin_string(&copy.fallback_body()),
            kotlin_string(&copy.channel_name()),
            kotlin_string(&copy.channel_description()),
        );
    }
    out.push_str("    )\n}\n\n");
    out.push_str(
        "internal class GenericLines(\n    val title: String,\n    val body: String,\n    \
         val channelName: String,\n    val channelDescription: String,\n)\n",
    );
    out
}

#[test]
fn the_android_glue_has_the_cores_generic_notification_in_every_language() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(GENERATED);
    let expected = render();
    if std::env::var_os("QP_REGENERATE").is_some() {
        std::fs::write(&path, &expected).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == expected,
        "{GENERATED} is not what the core's copy makes (a locale changed?); regenerate it:\n  \
         QP_REGENERATE=1 cargo test -p qp-core --test android_generic_copy"
    );
}
