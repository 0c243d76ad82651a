//! Android: the notification built from an FCM data message.
//!
//! Android shows at most three actions (`Notification.Builder`'s
//! MAX_ACTION_BUTTONS). How the cap is shared:
//!
//! | question | actions |
//! |---|---|
//! | 2 or 3 options | one button per option, in array order |
//! | 2 options + text | two option buttons, then Reply (RemoteInput) |
//! | 3 or 4 options + text | Choose… (RemoteInput offering the labels as choices), then Reply |
//! | 4 options | Choose… (RemoteInput with the four labels as choices); tapping the notification opens the app (the spec's fallback) |
//! | text only | Reply |
//!
//! Every action uses the identifiers iOS uses, from [`crate::actions`]
//! (`qp.v.<value>`, `qp.text`, `qp.choose`) and carries the question id, so
//! the receiver maps it back.
//! Request codes are unique per question and action. RemoteInput needs a
//! `FLAG_MUTABLE` PendingIntent (Android 12+), buttons an immutable one.

use chrono::{DateTime, Utc};

use super::{ChannelImportance, NotificationSound, PresentOptions};
use crate::actions::{option_action_id, TEXT_ACTION_ID};
use crate::copy::Copy;
use crate::payload::{CompactOption, CompactQuestion};
use crate::protocol::OptionStyle;

/// The notification channel every question is posted on.
pub const CHANNEL_ID: &str = "qp.questions";
/// The "Choose…" action's identifier (from [`crate::actions`], with the
/// other action identifiers).
pub use crate::actions::CHOOSE_ACTION_ID;
/// RemoteInput result keys.
pub const TEXT_RESULT_KEY: &str = "qp.text";
pub const CHOICE_RESULT_KEY: &str = "qp.choice";
/// The notification channel to create (`NotificationChannel`). Android
/// keeps a channel's importance and sound once created (the person owns
/// them from then on).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AndroidChannel {
    pub id: String,
    pub name: String,
    pub description: String,
    pub importance: ChannelImportance,
    /// `setSound`: the default, none (silent) or a raw resource.
    pub sound: NotificationSound,
}

/// The questions channel, in the copy's language, with the default options.
pub fn channel(copy: &Copy) -> AndroidChannel {
    channel_with(copy, &PresentOptions::default())
}

/// The questions channel with the app's importance and sound.
pub fn channel_with(copy: &Copy, opts: &PresentOptions) -> AndroidChannel {
    AndroidChannel {
        id: CHANNEL_ID.into(),
        name: copy.channel_name(),
        description: copy.channel_description(),
        importance: opts.channel_importance(),
        sound: opts.sound(),
    }
}

/// `channel` (named in some language) with the app's importance and sound.
pub fn with_options(channel: AndroidChannel, opts: &PresentOptions) -> AndroidChannel {
    AndroidChannel {
        importance: opts.channel_importance(),
        sound: opts.sound(),
        ..channel
    }
}

/// A room's group summary (`setGroupSummary(true)`): Android bundles a
/// room's questions under it, and shows it alone where bundles are not
/// drawn (older launchers, watches). Its lines are the questions' prompts
/// (`InboxStyle`), newest first; its number the count.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AndroidGroupSummary {
    pub channel_id: String,
    pub group: String,
    /// `notify(tag, id, …)`: the tag is never a question id, so the
    /// summary is never mistaken for a question's notification.
    pub tag: String,
    pub notification_id: i32,
    /// The room's name (the asker's words, as given).
    pub title: String,
    pub lines: Vec<String>,
    pub number: u32,
}

/// The tag prefix of group summaries.
pub const SUMMARY_TAG_PREFIX: &str = "qp.summary.";

/// The summary of `group` (an [`AndroidNotification::group`]) over the
/// prompts of its questions on screen; none when there are none left
/// (cancel the summary: Android would otherwise show an empty bundle).
pub fn group_summary(
    group: &str,
    room_name: &str,
    lines: &[String],
) -> Option<AndroidGroupSummary> {
    if lines.is_empty() {
        return None;
    }
    Some(AndroidGroupSummary {
        channel_id: CHANNEL_ID.to_string(),
        group: group.to_string(),
        // Not notification_id(tag): the glue takes a notification whose id
        // is that of its tag for a question's.
        notification_id: notification_id(group),
        tag: format!("{SUMMARY_TAG_PREFIX}{group}"),
        title: room_name.to_string(),
        lines: lines.to_vec(),
        number: lines.len() as u32,
    })
}

/// The cap of the platform.
pub const MAX_ACTIONS: usize = 3;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AndroidRemoteInput {
    pub result_key: String,
    pub label: String,
    /// Offered as quick choices (the option labels, for Choose…).
    pub choices: Vec<String>,
    pub allow_free_form_input: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AndroidAction {
    /// `qp.v.<value>`, `qp.text` or `qp.choose`.
    pub action_id: String,
    pub title: String,
    pub style: OptionStyle,
    pub remote_input: Option<AndroidRemoteInput>,
    /// Unique per question and action.
    pub request_code: i32,
    /// `FLAG_MUTABLE` (RemoteInput must write into the intent), else `FLAG_IMMUTABLE`.
    pub mutable_intent: bool,
    pub authentication_required: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AndroidNotification {
    pub channel_id: String,
    /// `NotificationManager.notify(tag, id, …)`: tag is the question id.
    pub tag: String,
    pub notification_id: i32,
    pub title: String,
    pub text: String,
    pub sub_text: Option<String>,
    /// Grouped per room.
    pub group: String,
    pub when_ms: i64,
    /// Withdraw by itself at the deadline (`setTimeoutAfter`).
    pub timeout_after_ms: i64,
    /// The request code of the content intent (open the question in the app).
    pub content_request_code: i32,
    pub actions: Vec<AndroidAction>,
}

/// FNV-1a, 32 bits: a stable hash (Java's `String.hashCode` differs across
/// languages' string encodings; this one is defined on UTF-8 bytes).
fn fnv1a32(s: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in s.bytes() {
        h ^= b as u32;
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// The notification id of a question.
pub fn notification_id(question_id: &str) -> i32 {
    (fnv1a32(question_id) & 0x7fff_ffff) as i32
}

/// Slot 0 is the content intent, 1..=3 the actions; 3 bits per question.
pub fn request_code(question_id: &str, slot: u32) -> i32 {
    (((fnv1a32(question_id) & 0x0fff_ffff) << 3) | (slot & 0x7)) as i32
}

/// The labels offered as RemoteInput choices, made unique (a repeated label
/// gets its position: "Yes (2)") so a chosen label maps back to one option.
pub fn choice_labels(options: &[CompactOption]) -> Vec<String> {
    options
        .iter()
        .enumerate()
        .map(|(i, o)| {
            if options.iter().filter(|x| x.label == o.label).count() > 1 {
                format!("{} ({})", o.label, i + 1)
            } else {
                o.label.clone()
            }
        })
        .collect()
}

pub fn android_notification(
    q: &CompactQuestion,
    now: DateTime<Utc>,
    opts: &PresentOptions,
    copy: &Copy,
) -> AndroidNotification {
    // A sign-in consent reads in the person's language.
    let q = &q.localized(copy);
    let mut actions: Vec<AndroidAction> = Vec::new();
    let n = q.options.len();
    let has_text = q.text_input.is_some();
    let buttons = (n > 0) && (n + usize::from(has_text) <= MAX_ACTIONS);
    if buttons {
        for o in &q.options {
            actions.push(AndroidAction {
                action_id: option_action_id(&o.value),
                title: o.label.clone(),
                style: o.style,
                remote_input: None,
                request_code: 0,
                mutable_intent: false,
                authentication_required: opts.require_unlock_for_danger
                    && o.style == OptionStyle::Danger,
            });
        }
    } else if n > 0 {
        actions.push(AndroidAction {
            action_id: CHOOSE_ACTION_ID.to_string(),
            title: copy.choose_action(),
            style: OptionStyle::Default,
            remote_input: Some(AndroidRemoteInput {
                result_key: CHOICE_RESULT_KEY.to_string(),
                label: copy.choose_answer(n),
                choices: choice_labels(&q.options),
                allow_free_form_input: false,
            }),
            request_code: 0,
            mutable_intent: true,
            authentication_required: opts.require_unlock_for_danger
                && q.options.iter().any(|o| o.style == OptionStyle::Danger),
        });
    }
    if let Some(t) = &q.text_input {
        actions.push(AndroidAction {
            action_id: TEXT_ACTION_ID.to_string(),
            title: copy.reply_action(),
            style: OptionStyle::Default,
            remote_input: Some(AndroidRemoteInput {
                result_key: TEXT_RESULT_KEY.to_string(),
                label: t
                    .placeholder
                    .clone()
                    .unwrap_or_else(|| copy.reply_placeholder()),
                choices: Vec::new(),
                allow_free_form_input: true,
            }),
            request_code: 0,
            mutable_intent: true,
            authentication_required: false,
        });
    }
    for (i, a) in actions.iter_mut().enumerate() {
        a.request_code = request_code(&q.id, i as u32 + 1);
    }
    AndroidNotification {
        channel_id: CHANNEL_ID.to_string(),
        tag: q.id.clone(),
        notification_id: notification_id(&q.id),
        title: copy.title(q.responder_scope, &q.asker),
        text: q.prompt.clone(),
        sub_text: q.context.clone(),
        group: format!("qp.room.{}", q.room.code),
        when_ms: q.created_at.timestamp_millis(),
        timeout_after_ms: (q.expires_at - now).num_milliseconds().max(0),
        content_request_code: request_code(&q.id, 0),
        actions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_channel_takes_the_apps_importance_and_sound() {
        let copy = Copy::english();
        let plain = channel(copy);
        assert_eq!(plain.importance, ChannelImportance::High);
        assert_eq!(plain.sound, NotificationSound::Default);
        let quiet = channel_with(
            copy,
            &PresentOptions {
                channel_importance: Some(ChannelImportance::Low),
                sound: Some(NotificationSound::Silent),
                ..Default::default()
            },
        );
        assert_eq!(quiet.importance, ChannelImportance::Low);
        assert_eq!(quiet.sound, NotificationSound::Silent);
        assert_eq!((quiet.id, quiet.name), (plain.id, plain.name));
    }

    #[test]
    fn a_rooms_summary_counts_its_questions_and_is_never_a_questions_notification() {
        let lines = vec!["Deploy to prod?".to_string(), "Merge #12?".to_string()];
        let s = group_summary("qp.room.ops", "Ops", &lines).expect("a summary");
        assert_eq!(s.group, "qp.room.ops");
        assert_eq!(s.title, "Ops");
        assert_eq!(s.number, 2);
        assert_eq!(s.lines, lines);
        assert!(s.tag.starts_with(SUMMARY_TAG_PREFIX));
        // The glue recognises a question's notification by id == notification_id(tag).
        assert_ne!(s.notification_id, notification_id(&s.tag));
        assert_eq!(group_summary("qp.room.ops", "Ops", &[]), None);
    }
}
