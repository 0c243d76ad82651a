//! Reconciling the notifications on screen with what the store knows.
//!
//! Pushes are lossy: while a phone is off, APNs keeps only the newest
//! notification per app (a resolution can evict an unseen question), and
//! FCM delivers nothing to a force-stopped Android app. So the app at launch
//! and on foreground (after a sync), and the extension within its budget,
//! compare the notifications on screen with the store and fix the
//! difference. The rules, for both platforms:
//! - on screen and resolved (or past its deadline): replace it with the
//!   resolved copy (iOS) or withdraw it (Android);
//! - on screen but not a question this device holds (forgotten after the
//!   server stopped showing it): remove it;
//! - pending, not past its deadline, not answered on this device, and never
//!   shown here: post it, as its push would have;
//! - a question shown once and dismissed is not posted again.

use chrono::{DateTime, Utc};

use crate::copy::Copy;
use crate::payload::CompactQuestion;
use crate::present::ios::{ios_resolved_notification, IosResolvedNotification};
use crate::protocol::QuestionState;
use crate::store::StoredQuestion;

/// What the platform does to its notifications.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReconcilePlan {
    /// Resolved: replace with this content (iOS, same identifier) or withdraw
    /// by identifier (Android).
    pub resolved: Vec<IosResolvedNotification>,
    /// Identifiers to remove: not a question this device holds.
    pub remove: Vec<String>,
    /// Questions to post, oldest first.
    pub post: Vec<CompactQuestion>,
}

/// One notification on screen, as the store knows its question.
pub struct OnScreen<'a> {
    pub identifier: &'a str,
    pub stored: Option<&'a StoredQuestion>,
}

/// The plan. `unshown` are the store's pending questions never presented
/// here and not answered here (`Store::never_presented`).
pub fn plan(
    on_screen: &[OnScreen<'_>],
    unshown: &[StoredQuestion],
    me: &str,
    now: DateTime<Utc>,
    copy: &Copy,
) -> ReconcilePlan {
    let mut out = ReconcilePlan::default();
    for n in on_screen {
        let Some(stored) = n.stored else {
            out.remove.push(n.identifier.to_string());
            continue;
        };
        let mut q = stored.to_question();
        if q.state == QuestionState::Pending && q.expires_at <= now {
            // Past its deadline: expired, whether or not the server said so yet.
            q.state = QuestionState::Expired;
        }
        if let Some(resolved) = ios_resolved_notification(&q, Some(me), copy) {
            out.resolved.push(resolved);
        }
    }
    let shown: std::collections::HashSet<&str> = on_screen.iter().map(|n| n.identifier).collect();
    out.post = unshown
        .iter()
        .filter(|s| s.state == QuestionState::Pending && s.question.expires_at > now)
        .filter(|s| !shown.contains(s.question.id.as_str()))
        .map(|s| s.question.clone())
        .collect();
    out
}
