//! How loud a question is, set once by the app: the iOS interruption level,
//! the sound, the Android channel's importance, and whether a `danger`
//! answer needs the device unlocked. Unset fields take the library's
//! choice (the `DEFAULT_*` constants), so an app names only what it changes.

use serde::Serialize;

/// iOS `UNNotificationInterruptionLevel`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InterruptionLevel {
    /// Quiet, no wake (a resolution replacing its question).
    Passive,
    Active,
    /// Breaks through Focus (needs the Time Sensitive Notifications capability).
    TimeSensitive,
    /// Bypasses silent mode (needs Apple's critical alerts entitlement).
    Critical,
}

/// The sound of a question's notification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NotificationSound {
    /// The system's (iOS `UNNotificationSound.default`; Android the
    /// channel's default).
    Default,
    Silent,
    /// A sound the app ships: iOS a file in the bundle ("ping.caf"), Android
    /// a raw resource name ("ping": `res/raw/ping.ogg`).
    Named {
        name: String,
    },
}

/// Android `NotificationChannel` importance (`IMPORTANCE_MIN` … `HIGH`).
/// Android lets the person change it once the channel exists: the app's
/// choice applies when the channel is first created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChannelImportance {
    Min,
    Low,
    Default,
    /// Heads-up (peeks onto the screen) and sound.
    High,
}

impl ChannelImportance {
    /// `NotificationManager.IMPORTANCE_*` (MIN 1, LOW 2, DEFAULT 3, HIGH 4).
    pub fn android_value(self) -> i32 {
        match self {
            ChannelImportance::Min => 1,
            ChannelImportance::Low => 2,
            ChannelImportance::Default => 3,
            ChannelImportance::High => 4,
        }
    }
}

/// A question is asked of one person, who should see it promptly.
pub const DEFAULT_INTERRUPTION_LEVEL: InterruptionLevel = InterruptionLevel::TimeSensitive;
pub const DEFAULT_CHANNEL_IMPORTANCE: ChannelImportance = ChannelImportance::High;

/// Options an app sets once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PresentOptions {
    /// `danger` answers need the device unlocked (iOS `.authenticationRequired`;
    /// Android `setAuthenticationRequired`).
    pub require_unlock_for_danger: bool,
    /// iOS; none: [`DEFAULT_INTERRUPTION_LEVEL`].
    pub interruption_level: Option<InterruptionLevel>,
    /// None: the system's default sound.
    pub sound: Option<NotificationSound>,
    /// Android; none: [`DEFAULT_CHANNEL_IMPORTANCE`].
    pub channel_importance: Option<ChannelImportance>,
}

impl PresentOptions {
    pub fn interruption_level(&self) -> InterruptionLevel {
        self.interruption_level
            .unwrap_or(DEFAULT_INTERRUPTION_LEVEL)
    }

    pub fn sound(&self) -> NotificationSound {
        self.sound.clone().unwrap_or(NotificationSound::Default)
    }

    pub fn channel_importance(&self) -> ChannelImportance {
        self.channel_importance
            .unwrap_or(DEFAULT_CHANNEL_IMPORTANCE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_options_take_the_library_defaults() {
        let o = PresentOptions::default();
        assert_eq!(o.interruption_level(), InterruptionLevel::TimeSensitive);
        assert_eq!(o.sound(), NotificationSound::Default);
        assert_eq!(o.channel_importance(), ChannelImportance::High);
        assert!(!o.require_unlock_for_danger);
    }

    #[test]
    fn set_options_are_kept() {
        let o = PresentOptions {
            interruption_level: Some(InterruptionLevel::Active),
            sound: Some(NotificationSound::Named {
                name: "ping.caf".into(),
            }),
            channel_importance: Some(ChannelImportance::Low),
            ..Default::default()
        };
        assert_eq!(o.interruption_level(), InterruptionLevel::Active);
        assert_eq!(
            o.sound(),
            NotificationSound::Named {
                name: "ping.caf".into()
            }
        );
        assert_eq!(o.channel_importance().android_value(), 2);
    }
}
