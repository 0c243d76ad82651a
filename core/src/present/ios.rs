//! iOS: the notification content and its per-question category.
//!
//! Each question gets its own category (`qp.q.<question id>`), so the buttons
//! of one notification are never overwritten by the next. Option actions are
//! `qp.v.<value>` in array order; the text-input action is `qp.text`. No
//! answer action opens the app (`foreground` is never set): answering
//! happens in the background.

use super::{InterruptionLevel, NotificationSound, PresentOptions};
use crate::copy::Copy;
use crate::payload::CompactQuestion;
use crate::protocol::OptionStyle;

// The identifiers live in `crate::actions` (one set for iOS and Android);
// re-exported here, where the bindings and `qp device` have always found them.
pub use crate::actions::{
    category_id, option_action_id, question_of_category, CATEGORY_PREFIX, OPTION_ACTION_PREFIX,
    TEXT_ACTION_ID,
};

/// A `UNNotificationAction`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct IosAction {
    pub identifier: String,
    pub title: String,
    /// `.destructive` (red): the option's style is `danger`.
    pub destructive: bool,
    /// `.authenticationRequired`.
    pub authentication_required: bool,
    /// `.foreground`: always false for answers.
    pub foreground: bool,
}

/// A `UNTextInputNotificationAction`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct IosTextAction {
    pub identifier: String,
    pub title: String,
    pub button_title: String,
    pub placeholder: String,
    pub authentication_required: bool,
}

/// A `UNNotificationCategory`: actions in this order, then the text action.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct IosCategory {
    pub identifier: String,
    pub actions: Vec<IosAction>,
    pub text_action: Option<IosTextAction>,
}

/// What the Notification Service Extension sets on the content.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct IosNotification {
    pub title: String,
    pub subtitle: Option<String>,
    pub body: String,
    pub thread_id: String,
    pub category: IosCategory,
}

pub fn ios_notification(
    q: &CompactQuestion,
    opts: &PresentOptions,
    copy: &Copy,
) -> IosNotification {
    // A sign-in consent reads in the person's language.
    let q = &q.localized(copy);
    let actions = q
        .options
        .iter()
        .map(|o| IosAction {
            identifier: option_action_id(&o.value),
            title: o.label.clone(),
            destructive: o.style == OptionStyle::Danger,
            authentication_required: opts.require_unlock_for_danger
                && o.style == OptionStyle::Danger,
            foreground: false,
        })
        .collect();
    let text_action = q.text_input.as_ref().map(|t| IosTextAction {
        identifier: TEXT_ACTION_ID.to_string(),
        title: copy.reply_action(),
        button_title: copy.reply_send(),
        placeholder: t
            .placeholder
            .clone()
            .unwrap_or_else(|| copy.reply_placeholder()),
        authentication_required: false,
    });
    IosNotification {
        title: copy.title(q.responder_scope, &q.asker),
        subtitle: q.context.clone(),
        body: q.prompt.clone(),
        thread_id: format!("qp.room.{}", q.room.code),
        category: IosCategory {
            identifier: category_id(&q.id),
            actions,
            text_action,
        },
    }
}

/// A resolved question's notification: it replaces the question's own on
/// the lock screen (same request identifier, the question id, which is the
/// push's `apns-collapse-id`), quietly and with no actions (no category).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct IosResolvedNotification {
    /// The notification's identifier: the question id.
    pub identifier: String,
    /// The question's title, as it was shown ("Release Bot asks").
    pub title: String,
    /// What became of it: "Federica answered: Approve", "Expired with no answer".
    pub subtitle: String,
    /// The prompt.
    pub body: String,
    pub thread_id: String,
}

/// The replacement of a resolved question's notification (the alert its
/// APNs push carries, [`crate::payload`]); `None` while the question is
/// pending. `me` is the user whose phone shows it ("by you").
pub fn ios_resolved_notification(
    q: &crate::protocol::Question,
    me: Option<&str>,
    copy: &Copy,
) -> Option<IosResolvedNotification> {
    let alert = crate::payload::resolved_alert(q, me, copy)?;
    Some(IosResolvedNotification {
        identifier: q.id.clone(),
        title: alert.title,
        subtitle: alert.subtitle,
        body: alert.body,
        thread_id: alert.thread_id,
    })
}

/// How loud a notification is on iOS: what the glue sets on the content
/// (`interruptionLevel`, `sound`, `badge`) besides its words.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct IosPresentation {
    pub interruption_level: InterruptionLevel,
    pub sound: NotificationSound,
    /// The app icon's badge: the pending count (`feed::pending_count`); none
    /// leaves the badge as it is (no store to count from).
    pub badge: Option<u32>,
}

/// A question's presentation: the app's options. A resolution replacing
/// its question (`resolved`) is always quiet: passive and silent, whatever
/// the options, so an answer given elsewhere never rings this phone.
pub fn ios_presentation(
    opts: &PresentOptions,
    resolved: bool,
    badge: Option<u32>,
) -> IosPresentation {
    if resolved {
        return IosPresentation {
            interruption_level: InterruptionLevel::Passive,
            sound: NotificationSound::Silent,
            badge,
        };
    }
    IosPresentation {
        interruption_level: opts.interruption_level(),
        sound: opts.sound(),
        badge,
    }
}

#[cfg(test)]
mod presentation_tests {
    use super::*;

    #[test]
    fn a_question_follows_the_options_and_a_resolution_is_always_quiet() {
        let opts = PresentOptions {
            interruption_level: Some(InterruptionLevel::Critical),
            sound: Some(NotificationSound::Named {
                name: "alarm.caf".into(),
            }),
            ..Default::default()
        };
        let q = ios_presentation(&opts, false, Some(3));
        assert_eq!(q.interruption_level, InterruptionLevel::Critical);
        assert_eq!(
            q.sound,
            NotificationSound::Named {
                name: "alarm.caf".into()
            }
        );
        assert_eq!(q.badge, Some(3));
        let r = ios_presentation(&opts, true, Some(2));
        assert_eq!(r.interruption_level, InterruptionLevel::Passive);
        assert_eq!(r.sound, NotificationSound::Silent);
        assert_eq!(r.badge, Some(2));
        let d = ios_presentation(&PresentOptions::default(), false, None);
        assert_eq!(d.interruption_level, InterruptionLevel::TimeSensitive);
        assert_eq!(d.sound, NotificationSound::Default);
        assert_eq!(d.badge, None);
    }
}
