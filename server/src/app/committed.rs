//! What a database job committed that others wait to hear of, and the
//! waking of them, which the job does itself, right after its commits.
//!
//! Why in the job, on the database's thread, rather than in the request's
//! task once the job's result is back: the commit is done either way (an
//! asker is never told of an answer that could still be lost), but the
//! request's task may never see the result. A client that goes away
//! mid-request drops it, and what it committed (an answer, a cancel, a new
//! question's pushes) would wake nobody: the long-pollers would be held to
//! the end of their long-poll, the push and webhook workers to their next
//! poll.

use std::sync::Arc;

use qp_core::protocol::Question;
use tokio::sync::Notify;

use crate::feed_wake::FeedWake;
use crate::store::questions::Resolved;
use crate::waiters::Waiters;

/// What a job's commits changed, gathered as each commit succeeds. Push
/// here only after the commit that wrote it: whatever is here is
/// announced, even when the job fails after it.
#[derive(Default)]
pub(super) struct Committed {
    questions: Vec<(Question, Option<Resolved>)>,
    pushes: bool,
    asked: Vec<Question>,
}

impl Committed {
    /// `q` changed state (an expiry): its long-pollers are
    /// released, and both workers look for work.
    pub fn changed(&mut self, q: Question) {
        self.questions.push((q, None));
    }

    /// `q` was resolved, and its resolution queued `r`'s work: its
    /// long-pollers are released, and only the workers with work wake.
    pub fn resolved(&mut self, q: Question, r: Resolved) {
        self.questions.push((q, Some(r)));
    }

    /// Push jobs were queued (a new question's).
    pub fn pushes_queued(&mut self) {
        self.pushes = true;
    }

    /// `q` was asked: the feed long-polls of its people look again.
    pub fn asked(&mut self, q: &Question) {
        self.asked.push(q.clone());
    }
}

/// Whom a commit wakes: a question's long-pollers, the webhook worker and
/// the push worker. Cheap to clone into a job; safe to use from any thread.
#[derive(Clone)]
pub(super) struct Wakers {
    pub waiters: Arc<Waiters>,
    pub webhook: Arc<Notify>,
    pub push: Arc<Notify>,
    /// Wakes the feed long-polls (`App::pending_wait`) of the people a
    /// question concerns; each reads its own person's list again, so what
    /// it shows is decided by the same query that decides visibility.
    pub feed: Arc<FeedWake>,
}

impl Wakers {
    pub fn wake(&self, done: Committed) {
        let (mut webhook, mut push) = (false, done.pushes);
        for q in done
            .asked
            .iter()
            .chain(done.questions.iter().map(|(q, _)| q))
        {
            self.feed.wake_for(q);
        }
        for (q, resolved) in done.questions {
            self.waiters.release(Arc::new(q));
            match resolved {
                Some(r) => {
                    webhook |= r.webhook;
                    push |= r.pushes > 0;
                }
                None => (webhook, push) = (true, true),
            }
        }
        if webhook {
            self.webhook.notify_one();
        }
        if push {
            self.push.notify_one();
        }
    }
}
