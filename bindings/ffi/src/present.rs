//! Presentation options and counts: what the glue sets besides a
//! notification's words (interruption level, sound, channel importance,
//! badge, a room's group summary). Forwards to `qp_core::present` (the badge
//! to `qp_core::feed`).

use qp_core::present::copy::Copy;
use qp_core::present::{android, ios};

use crate::error::QpError;
use crate::phone::PhoneCore;
use crate::types::{
    AndroidChannel, AndroidGroupSummary, AndroidNotification, IosNotification, IosPresentation,
    PresentOptions, PushQuestion, Timestamp,
};

#[uniffi::export]
impl PhoneCore {
    /// The iOS notification content and its category, with the app's options.
    pub fn ios_notification_with(
        &self,
        question: PushQuestion,
        options: PresentOptions,
    ) -> IosNotification {
        self.phone().ios_notification(&question, &options)
    }

    /// The Android notification and its actions, with the app's options.
    pub fn android_notification_with(
        &self,
        question: PushQuestion,
        now: Timestamp,
        options: PresentOptions,
    ) -> AndroidNotification {
        self.phone().android_notification(&question, now, &options)
    }

    /// Android: the questions channel with the app's importance and sound.
    pub fn android_channel_with(&self, options: PresentOptions) -> AndroidChannel {
        android::with_options(self.phone().android_channel(), &options)
    }

    /// The app icon's badge: the questions the person can still answer here.
    pub fn badge_count(&self) -> Result<u32, QpError> {
        Ok(self.phone().badge_count(chrono::Utc::now())?)
    }

    /// iOS: how loud a question (or, `resolved`, its quiet replacement) is,
    /// with the badge set to the pending count (none if the store cannot
    /// be read: the badge is left as it is).
    pub fn ios_presentation(&self, options: PresentOptions, resolved: bool) -> IosPresentation {
        ios::ios_presentation(&options, resolved, self.badge_count().ok())
    }
}

/// iOS presentation without a store (no badge).
#[uniffi::export]
pub fn ios_presentation(options: PresentOptions, resolved: bool) -> IosPresentation {
    ios::ios_presentation(&options, resolved, None)
}

/// Android: the questions channel with the app's options, in `languages`.
#[uniffi::export]
pub fn android_channel_with(options: PresentOptions, languages: Vec<String>) -> AndroidChannel {
    android::channel_with(&Copy::for_languages(&languages), &options)
}

/// Android: the summary of a room's group (`AndroidNotification.group`)
/// over the prompts of its questions on screen, newest first; none when
/// none are left (cancel the summary).
#[uniffi::export]
pub fn android_group_summary(
    group: String,
    room_name: String,
    lines: Vec<String>,
) -> Option<AndroidGroupSummary> {
    android::group_summary(&group, &room_name, &lines)
}
