//! Every user-facing string, in one table. Placeholders are `{name}`.

use chrono::{DateTime, Utc};

use crate::protocol::{Question, QuestionState, ResponderScope};

/// One language's strings. [`Copy::EN`] is English; a translation is another
/// value of this struct.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copy {
    pub asks_you: &'static str,
    pub asks_room: &'static str,
    pub answered_by_you: &'static str,
    pub answered_by: &'static str,
    pub typed_answer: &'static str,
    pub expired: &'static str,
    pub cancelled: &'static str,
    pub anyone_can_answer: &'static str,
    pub choose_answer: &'static str,
    pub choose_action: &'static str,
    pub reply_action: &'static str,
    pub reply_send: &'static str,
    pub reply_placeholder: &'static str,
    pub or_type_reply: &'static str,
    pub fallback_title: &'static str,
    pub fallback_body: &'static str,
    pub left_under_a_minute: &'static str,
    pub left_minutes: &'static str,
    pub left_hours: &'static str,
    pub left_one_day: &'static str,
    pub left_days: &'static str,
    pub no_time_left: &'static str,
    pub answer_queued: &'static str,
    pub answer_sending: &'static str,
    pub answer_retrying: &'static str,
    pub answer_rejected: &'static str,
    pub answer_too_late: &'static str,
    pub open_app_to_finish: &'static str,
    pub channel_name: &'static str,
    pub channel_description: &'static str,
}

impl Copy {
    pub const EN: Copy = Copy {
        asks_you: "{asker} asks you",
        asks_room: "{asker} asks the room",
        answered_by_you: "{answer}, by you",
        answered_by: "{answer}, by {name}",
        typed_answer: "“{text}”",
        expired: "no answer, expired",
        cancelled: "cancelled",
        anyone_can_answer: "anyone in the room can answer",
        choose_answer: "Choose an answer ({count})",
        choose_action: "Choose…",
        reply_action: "Reply",
        reply_send: "Send",
        reply_placeholder: "Type a reply",
        or_type_reply: "or type a reply",
        fallback_title: "New question",
        fallback_body: "Open the app to answer.",
        left_under_a_minute: "less than a minute left",
        left_minutes: "{n} min left",
        left_hours: "{n} h left",
        left_one_day: "1 day left",
        left_days: "{n} days left",
        no_time_left: "expired",
        answer_queued: "{answer}: queued, sends when online",
        answer_sending: "{answer}: sending…",
        answer_retrying: "{answer}: not sent yet ({error}); will retry",
        answer_rejected: "{answer}: not accepted ({error})",
        answer_too_late: "{answer}: too late, already resolved",
        open_app_to_finish: "Open the app to finish your answer",
        channel_name: "Questions",
        channel_description: "Questions you can answer from the notification",
    };

    /// Replaces `{key}` placeholders.
    pub fn fill(template: &str, pairs: &[(&str, &str)]) -> String {
        let mut out = template.to_string();
        for (k, v) in pairs {
            out = out.replace(&format!("{{{k}}}"), v);
        }
        out
    }

    /// "Release Bot asks you" / "Release Bot asks the room".
    pub fn title(&self, scope: ResponderScope, asker: &str) -> String {
        let t = match scope {
            ResponderScope::Direct => self.asks_you,
            ResponderScope::Room => self.asks_room,
        };
        Self::fill(t, &[("asker", asker)])
    }

    /// The line of a resolved question: "Approve, by you", "Prod, by
    /// Federica", "“CI is red”, by you", "no answer, expired", "cancelled";
    /// `None` while pending. `me` is this device's user id.
    pub fn resolution(&self, q: &Question, me: Option<&str>) -> Option<String> {
        match q.state {
            QuestionState::Pending => None,
            QuestionState::Expired => Some(self.expired.to_string()),
            QuestionState::Cancelled => Some(self.cancelled.to_string()),
            QuestionState::Answered => {
                let a = q.answer.as_ref()?;
                let what = match (&a.label, &a.text) {
                    (Some(label), _) => label.clone(),
                    (None, Some(text)) => Self::fill(self.typed_answer, &[("text", text)]),
                    (None, None) => String::new(),
                };
                Some(if me == Some(a.responder.id.as_str()) {
                    Self::fill(self.answered_by_you, &[("answer", &what)])
                } else {
                    Self::fill(
                        self.answered_by,
                        &[("answer", &what), ("name", &a.responder.display_name)],
                    )
                })
            }
        }
    }

    /// "12 min left", "3 h left", "2 days left"; rounded down, never "0 min".
    pub fn time_remaining(&self, expires_at: DateTime<Utc>, now: DateTime<Utc>) -> String {
        let secs = (expires_at - now).num_seconds();
        if secs <= 0 {
            return self.no_time_left.to_string();
        }
        if secs < 60 {
            return self.left_under_a_minute.to_string();
        }
        let (m, h, d) = (secs / 60, secs / 3600, secs / 86_400);
        let n = |t: &str, v: i64| Self::fill(t, &[("n", &v.to_string())]);
        if h < 1 {
            n(self.left_minutes, m)
        } else if d < 1 {
            n(self.left_hours, h)
        } else if d == 1 {
            self.left_one_day.to_string()
        } else {
            n(self.left_days, d)
        }
    }

    /// "Choose an answer (4)".
    pub fn choose_answer(&self, count: usize) -> String {
        Self::fill(self.choose_answer, &[("count", &count.to_string())])
    }
}
