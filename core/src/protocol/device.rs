//! The rules for a push registration's `push_token`, per platform.
//!
//! The server pastes an APNs token into the path of its request to Apple
//! (`/3/device/{token}`) and an FCM token into the JSON it posts to Google,
//! so a token is checked for its platform's alphabet before it is stored:
//! nothing else can reach those requests. The phone may check what its OS
//! gave it with the same function before registering.

/// An APNs device token is hex: 32 bytes today (64 digits); Apple has said
/// tokens may grow, so up to 100 bytes are accepted.
pub const APNS_TOKEN_MIN_HEX: usize = 64;
pub const APNS_TOKEN_MAX_HEX: usize = 200;
/// An FCM registration token: about 160 characters today; the registration
/// API's limit for any token is 4096.
pub const FCM_TOKEN_MAX_CHARS: usize = 4096;
/// The terminal device's made-up token (`dev-…`).
pub const DEV_TOKEN_MAX_CHARS: usize = 200;

/// A `push_token` that breaks its platform's rule, phrased to follow the
/// field's name: "push_token must be … for ios".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("must be {rule}")]
pub struct PushTokenError {
    pub rule: &'static str,
}

fn broken(rule: &'static str) -> PushTokenError {
    PushTokenError { rule }
}

/// Checks `token` for `platform` (`ios`, `android`, `dev`, `web`); an unknown
/// platform is the caller's to refuse first.
pub fn check_push_token(platform: &str, token: &str) -> Result<(), PushTokenError> {
    match platform {
        "ios" => check_apns(token),
        "android" => check_fcm(token),
        "dev" => check_dev(token),
        "web" => super::web_push::parse_subscription(token)
            .map(|_| ())
            .map_err(|_| {
                broken(
                    "a browser's push subscription for web: the JSON of PushSubscription.toJSON()",
                )
            }),
        _ => Err(broken(
            "a token of a known platform (ios, android, dev or web)",
        )),
    }
}

fn check_apns(token: &str) -> Result<(), PushTokenError> {
    let ok = (APNS_TOKEN_MIN_HEX..=APNS_TOKEN_MAX_HEX).contains(&token.len())
        && token.len().is_multiple_of(2)
        && token.bytes().all(|b| b.is_ascii_hexdigit());
    ok.then_some(()).ok_or(broken(
        "an APNs device token for ios: 64 to 200 hex digits (an even number)",
    ))
}

/// FCM tokens are URL-safe base64 with `:` (the sender part) and `-`/`_`.
fn check_fcm(token: &str) -> Result<(), PushTokenError> {
    let ok = (1..=FCM_TOKEN_MAX_CHARS).contains(&token.len())
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b':'));
    ok.then_some(()).ok_or(broken(
        "an FCM registration token for android: 1 to 4096 letters, digits, '-', '_' or ':'",
    ))
}

fn check_dev(token: &str) -> Result<(), PushTokenError> {
    let ok = (1..=DEV_TOKEN_MAX_CHARS).contains(&token.len())
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b':' | b'.'));
    ok.then_some(()).ok_or(broken(
        "a dev token: 1 to 200 letters, digits, '-', '_', ':' or '.'",
    ))
}

/// Where a device receives pushes: the `platform` of a registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Platform {
    /// APNs.
    Ios,
    /// FCM.
    Android,
    /// The terminal device (`qp device`): the server's development transport.
    Dev,
}

impl Platform {
    pub const ALL: [Platform; 3] = [Platform::Ios, Platform::Android, Platform::Dev];

    /// The wire name (`ios`, `android`, `dev`).
    pub fn as_str(self) -> &'static str {
        match self {
            Platform::Ios => "ios",
            Platform::Android => "android",
            Platform::Dev => "dev",
        }
    }

    /// The platform of a wire name; `None` for any other.
    pub fn parse(s: &str) -> Option<Platform> {
        Platform::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// Which APNs a device's token belongs to: a development build (Xcode,
/// debug) gets sandbox tokens, a TestFlight or App Store build production
/// ones, and each is refused by the other host. Carried per device so debug
/// and release builds can share one server; a device that says nothing is
/// sent to the server's default (`--apns-sandbox`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApnsEnvironment {
    Production,
    Sandbox,
}

impl ApnsEnvironment {
    /// The wire name (`production`, `sandbox`).
    pub fn as_str(self) -> &'static str {
        match self {
            ApnsEnvironment::Production => "production",
            ApnsEnvironment::Sandbox => "sandbox",
        }
    }

    /// The environment of a wire name; `None` for any other.
    pub fn parse(s: &str) -> Option<ApnsEnvironment> {
        match s {
            "production" => Some(ApnsEnvironment::Production),
            "sandbox" => Some(ApnsEnvironment::Sandbox),
            _ => None,
        }
    }
}

/// The rule of `apns_environment`, phrased to follow the field's name.
pub const APNS_ENVIRONMENT_RULE: &str = "must be \"production\" or \"sandbox\"";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_platform_accepts_its_own_alphabet_and_length_only() {
        let apns = "a1".repeat(32);
        let long_apns = "F0".repeat(100);
        let fcm = "dGVzdA:APA91bH-_x9".to_string() + &"z".repeat(140);
        let cases: &[(&str, &str, bool)] = &[
            ("ios", &apns, true),
            ("ios", &apns.to_uppercase(), true),
            ("ios", &long_apns, true),
            ("ios", &"ab".repeat(31), false), // 62 digits: too short
            ("ios", &"ab".repeat(101), false), // 202 digits: too long
            ("ios", &format!("{}a", "ab".repeat(32)), false), // odd
            ("ios", &format!("{}g", "a".repeat(63)), false), // not hex
            ("ios", &format!("{}/../x", "a".repeat(60)), false), // a path
            ("ios", "abc123", false),
            ("ios", "", false),
            ("android", &fcm, true),
            ("android", "fcm-1", true),
            ("android", &"a".repeat(4096), true),
            ("android", &"a".repeat(4097), false),
            ("android", "a b", false),
            ("android", "a/b", false),
            ("android", "a\"b", false),
            ("android", "é", false),
            ("android", "", false),
            ("dev", "dev-t_01HX.2:3", true),
            ("dev", &"d".repeat(200), true),
            ("dev", &"d".repeat(201), false),
            ("dev", "dev token", false),
            ("dev", "", false),
            ("pager", "x", false),
        ];
        for (platform, token, ok) in cases {
            assert_eq!(
                check_push_token(platform, token).is_ok(),
                *ok,
                "{platform} {token:?}"
            );
        }
    }

    #[test]
    fn the_rule_names_the_platform() {
        let e = check_push_token("ios", "nope").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("must be an APNs device token for ios"),
            "{e}"
        );
        let e = check_push_token("android", "a b").unwrap_err();
        assert!(e.to_string().contains("FCM"), "{e}");
    }
}
