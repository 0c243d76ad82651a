//! The browser's notification for a question (the web responder's service
//! worker shows it with `registration.showNotification(title, options)`).
//!
//! Browsers differ in how many buttons a notification may carry
//! (`Notification.maxActions`: 2 in Chrome, 0 on iOS) and none has a
//! standard inline reply. So the options are buttons only when all of them
//! fit; otherwise, and for a typed reply, a tap opens the app at the question.
//! The tag is the question id, so the resolution replaces it on every device.

use serde::Serialize;

use crate::actions::option_action_id;
use crate::copy::Copy;
use crate::payload::{CompactQuestion, ResolvedNotice};
use crate::protocol::{OptionStyle, Question};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WebAction {
    /// `qp.v.<value>`: what [`crate::answer::map_action`] reads back.
    pub action: String,
    pub title: String,
    pub style: OptionStyle,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WebNotification {
    /// The question id: a later notification with it replaces this one.
    pub tag: String,
    pub title: String,
    pub body: String,
    pub actions: Vec<WebAction>,
    /// Stay until acted on while the question is open.
    pub require_interaction: bool,
    /// The tap has more to offer than the buttons (a typed reply, options
    /// that do not fit): it opens the app at this question.
    pub opens_app: bool,
    /// Milliseconds since the epoch: when it was asked.
    pub timestamp: i64,
}

/// The notification for a pending question, for a browser that allows
/// `max_actions` buttons.
pub fn web_notification(q: &CompactQuestion, max_actions: u32, copy: &Copy) -> WebNotification {
    // A sign-in consent reads in the person's language.
    let q = &q.localized(copy);
    let n = q.options.len();
    let fits = n > 0 && n <= max_actions as usize;
    let actions = if fits {
        q.options
            .iter()
            .map(|o| WebAction {
                action: option_action_id(&o.value),
                title: o.label.clone(),
                style: o.style,
            })
            .collect()
    } else {
        Vec::new()
    };
    let body = match &q.context {
        Some(c) => format!("{}\n{}", q.prompt, c),
        None => q.prompt.clone(),
    };
    WebNotification {
        tag: q.id.clone(),
        title: copy.title(q.responder_scope, &q.asker),
        body,
        actions,
        require_interaction: true,
        opens_app: !fits || q.text_input.is_some(),
        timestamp: q.created_at.timestamp_millis(),
    }
}

/// The notification that replaces a question's once it is resolved
/// ("You answered: Approve"): same tag, no buttons. `shown` is the question
/// as its notification showed it (a browser with no notification for the
/// question has nothing to replace); `me` is this browser's user id.
pub fn web_resolved(
    notice: &ResolvedNotice,
    shown: &CompactQuestion,
    me: Option<&str>,
    copy: &Copy,
) -> WebNotification {
    let mut q: Question = shown.to_question();
    q.state = notice.state;
    q.answer = notice.answer.clone();
    WebNotification {
        tag: notice.id.clone(),
        title: copy.resolution(&q, me).unwrap_or_default(),
        body: shown.localized(copy).prompt,
        actions: Vec::new(),
        require_interaction: false,
        opens_app: true,
        timestamp: notice
            .resolved_at
            .map(|t| t.timestamp_millis())
            .unwrap_or_default(),
    }
}
