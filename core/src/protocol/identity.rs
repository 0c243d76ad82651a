//! Who and where: the rules for identifiers (question, user, agent and room
//! ids), display names (users, agents, rooms) and room codes.
//!
//! These values are created by the server's admin commands and travel in every
//! push, where the phone's decoder checks them again: both sides call these
//! functions, so a name the server accepts is a name the phone can show.
//! Identifiers end up in notification identifiers and category ids, hence the
//! small ASCII alphabet; names are shown on one line of a lock screen.

use super::limits::{ID_MAX_CHARS, NAME_MAX_CHARS, ROOM_CODE_MAX_CHARS, ROOM_CODE_MIN_CHARS};

/// A broken identity rule, phrased to follow the field's name:
/// "`room.code` must be 3 to 16 letters or digits".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("must be {rule}")]
pub struct IdentityError {
    /// What the value must be, e.g. "1 to 64 letters, digits, '_' or '-'".
    pub rule: &'static str,
}

fn broken(rule: &'static str) -> IdentityError {
    IdentityError { rule }
}

/// An id (question, user, agent, room, device): 1 to 64 of `A-Z a-z 0-9 _ -`.
pub fn check_id(id: &str) -> Result<(), IdentityError> {
    let ok = (1..=ID_MAX_CHARS).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    ok.then_some(())
        .ok_or(broken("1 to 64 letters, digits, '_' or '-'"))
}

/// A user id: an id that starts with `u_`.
pub fn check_user_id(id: &str) -> Result<(), IdentityError> {
    if !id.starts_with("u_") || id.len() < 3 {
        return Err(broken("\"u_\" followed by letters, digits, '_' or '-'"));
    }
    check_id(id)
        .map_err(|_| broken("\"u_\" followed by letters, digits, '_' or '-' (at most 64 in all)"))
}

/// A display name (user, agent, room): 1 to 80 characters on one line, not
/// only white space. Callers trim before storing.
pub fn check_display_name(name: &str) -> Result<(), IdentityError> {
    let chars = name.chars().count();
    if chars == 0 || chars > NAME_MAX_CHARS || name.trim().is_empty() {
        return Err(broken("1 to 80 characters"));
    }
    if name.chars().any(char::is_control) {
        return Err(broken("on one line, without control characters"));
    }
    Ok(())
}

/// A room code: 3 to 16 ASCII letters or digits (people type it).
pub fn check_room_code(code: &str) -> Result<(), IdentityError> {
    let ok = (ROOM_CODE_MIN_CHARS..=ROOM_CODE_MAX_CHARS).contains(&code.len())
        && code.bytes().all(|b| b.is_ascii_alphanumeric());
    ok.then_some(()).ok_or(broken("3 to 16 letters or digits"))
}

/// The handle of an agent: its name in lower-case ASCII letters and digits,
/// other runs of characters as one `-`, at most 40 characters ("Release
/// Bot 🚀" -> `release-bot`). Derived once, when the agent is created, and
/// kept: renaming the agent later does not change it. A name with no ASCII
/// letter or digit gets `fallback` (the agent's id).
pub fn handle_of(name: &str, fallback: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.truncate(40);
    let out = out.trim_end_matches('-').to_string();
    if out.is_empty() {
        fallback.to_ascii_lowercase()
    } else {
        out
    }
}

/// `handle` made distinct from those `taken` (an agent's handle is unique
/// among the agents of its rooms): itself when free, else `handle-2`,
/// `handle-3`, …, still at most 40 characters.
pub fn distinct_handle(handle: &str, taken: impl Fn(&str) -> bool) -> String {
    if !taken(handle) {
        return handle.to_string();
    }
    (2u32..)
        .map(|n| {
            let suffix = format!("-{n}");
            let mut base = handle.to_string();
            base.truncate(40 - suffix.len());
            format!("{}{suffix}", base.trim_end_matches('-'))
        })
        .find(|h| !taken(h))
        .unwrap_or_else(|| handle.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids() {
        assert!(check_id("q_01HZX-abc").is_ok());
        for bad in ["", "u_bob.smith", "u_josé", "a b", &"x".repeat(65)] {
            assert!(check_id(bad).is_err(), "{bad:?}");
        }
        assert!(check_user_id("u_bob").is_ok());
        assert!(check_user_id("bob").is_err());
        assert!(check_user_id("u_").is_err());
        assert!(check_user_id("u_bob.smith").is_err());
    }

    #[test]
    fn names_and_codes() {
        assert!(check_display_name("Release Bot 🚀").is_ok());
        assert!(check_display_name("").is_err());
        assert!(check_display_name("   ").is_err());
        assert!(check_display_name("Ops\nTeam").is_err());
        assert!(check_display_name("a\tb").is_err());
        assert!(check_display_name(&"é".repeat(80)).is_ok());
        assert!(check_display_name(&"é".repeat(81)).is_err());
        assert!(check_room_code("OPS123").is_ok());
        assert!(check_room_code("AB").is_err());
        assert!(check_room_code("OPS-1").is_err());
    }

    #[test]
    fn handles() {
        assert_eq!(handle_of("Release Bot", "a_1"), "release-bot");
        assert_eq!(handle_of("  CI / Deploy 🚀 v2 ", "a_1"), "ci-deploy-v2");
        assert_eq!(handle_of("Relé", "a_1"), "rel");
        assert_eq!(handle_of("🚀", "a_XYZ"), "a_xyz");
        // At most 40 characters, never ending in a dash.
        assert_eq!(handle_of(&"abc ".repeat(30), "a_1").len(), 39);
        assert_eq!(handle_of(&"ab ".repeat(30), "a_1").len(), 40);
    }

    #[test]
    fn distinct_handles() {
        let taken = ["release-bot", "release-bot-2"];
        assert_eq!(distinct_handle("deploy", |h| taken.contains(&h)), "deploy");
        assert_eq!(
            distinct_handle("release-bot", |h| taken.contains(&h)),
            "release-bot-3"
        );
        let long = "a".repeat(40);
        let made = distinct_handle(&long, |h| h == long);
        assert_eq!(made, format!("{}-2", "a".repeat(38)));
    }
}
