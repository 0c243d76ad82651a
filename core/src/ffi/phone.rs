//! The phone object of the bindings: one per process (app or extension),
//! wrapping the shared store and the server client.

use std::collections::HashMap;
use std::sync::Arc;

use super::{DecodedPush, KnownCategoryQuestion, PushQuestion, QpError};
use crate::answer::map_action;
use crate::feed::{feed, FeedCell};
use crate::payload::{self, CompactQuestion, Push};
use crate::present::copy::Copy;
use crate::protocol::{validate_answer, AnswerSubmission};
use crate::store::{AnswerState, Store, StoreError, StoreMode};
use crate::sync::{self, FlushReport, PhoneClient, SyncError, SyncReport, TokenProvider};

impl From<StoreError> for QpError {
    fn from(e: StoreError) -> Self {
        let code = match e {
            StoreError::Locked(_) => "locked",
            StoreError::Corrupt(_) => "corrupt",
            StoreError::CannotOpen(_) => "cannot_open",
            StoreError::Other(_) => "other",
        };
        QpError::Storage {
            code: code.into(),
            detail: e.to_string(),
        }
    }
}

impl From<SyncError> for QpError {
    fn from(e: SyncError) -> Self {
        match e {
            SyncError::Store(s) => s.into(),
            SyncError::NotSignedIn => QpError::NotSignedIn,
            other => QpError::Network {
                detail: other.to_string(),
            },
        }
    }
}

/// An answer committed on this device.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct CommittedAnswer {
    pub question_id: String,
    pub state: AnswerState,
    /// False when an earlier answer of this device was kept instead.
    pub is_new: bool,
}

#[derive(uniffi::Object)]
pub struct PhoneCore {
    store: Store,
    client: PhoneClient,
    user_id: String,
}

impl PhoneCore {
    fn record(&self, push: Push) -> DecodedPush {
        // A store that cannot be written right now (locked) must not stop the
        // notification: the question is shown, and the next sync brings it.
        let recorded = match &push {
            Push::Question(q) => self.store.record_push(q).map(|_| ()),
            Push::Resolved(n) => self.store.record_resolved(n).map(|_| ()),
        };
        if let Err(e) = recorded {
            log::warn!("push not recorded: {e}");
        }
        super::decoded(push)
    }

    fn commit(
        &self,
        question_id: &str,
        body: AnswerSubmission,
    ) -> Result<CommittedAnswer, QpError> {
        let before = self.store.answer_for(question_id)?;
        let entry = self.store.commit_answer(question_id, &body)?;
        let is_new = before.is_none_or(|b| b.id != entry.id);
        Ok(CommittedAnswer {
            question_id: question_id.into(),
            state: entry.state,
            is_new,
        })
    }

    fn held(&self, question_id: &str) -> Result<CompactQuestion, QpError> {
        self.store
            .question(question_id)?
            .map(|s| s.question)
            .ok_or_else(|| QpError::InvalidInput {
                detail: format!("question {question_id} is not on this device"),
            })
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl PhoneCore {
    /// Opens the store shared by the app and its extension. `mode` is
    /// `Extension` inside the notification extension.
    #[uniffi::constructor]
    pub fn new(
        store_path: String,
        mode: StoreMode,
        server_url: String,
        user_id: String,
        tokens: Arc<dyn TokenProvider>,
    ) -> Result<Arc<Self>, QpError> {
        let store = Store::open(std::path::Path::new(&store_path), mode)?;
        let client = PhoneClient::new(&server_url, &user_id, tokens)?;
        Ok(Arc::new(PhoneCore {
            store,
            client,
            user_id,
        }))
    }

    /// Notification extension: decode an APNs payload and record it.
    pub fn receive_apns(&self, json: String) -> Result<DecodedPush, QpError> {
        Ok(self.record(payload::decode_apns(&json)?))
    }

    /// FCM handler: decode a data message and record it.
    pub fn receive_fcm(&self, data: HashMap<String, String>) -> Result<DecodedPush, QpError> {
        Ok(self.record(payload::decode_fcm(&data)?))
    }

    /// A notification action (with typed text or a chosen label): validated
    /// and committed durably before this returns. Too-long text is kept as a
    /// draft for the app, and the error says so.
    pub fn answer_action(
        &self,
        question_id: String,
        action_id: String,
        text: Option<String>,
    ) -> Result<CommittedAnswer, QpError> {
        let q = self.held(&question_id)?;
        match map_action(&q, &action_id, text.as_deref()) {
            Ok(body) => self.commit(&question_id, body),
            Err(e) => {
                if let crate::answer::ActionError::TextTooLong { text, .. } = &e {
                    self.store.save_draft(&question_id, text, "too long")?;
                }
                Err(e.into())
            }
        }
    }

    /// An answer given in the app's feed: exactly one of `value` or `text`.
    pub fn answer_in_app(
        &self,
        question_id: String,
        value: Option<String>,
        text: Option<String>,
    ) -> Result<CommittedAnswer, QpError> {
        let q = self.held(&question_id)?;
        let body = match (value, text) {
            (Some(v), None) => AnswerSubmission::Value(v),
            (None, Some(t)) => AnswerSubmission::Text(t),
            _ => {
                return Err(QpError::InvalidInput {
                    detail: "give exactly one of value or text".into(),
                })
            }
        };
        validate_answer(&q.to_question(), &body)?;
        let body = match body {
            AnswerSubmission::Text(t) => AnswerSubmission::Text(t.trim().to_string()),
            other => other,
        };
        self.commit(&question_id, body)
    }

    /// Sends every due answer (safe to call from several places).
    pub async fn flush(&self) -> Result<FlushReport, QpError> {
        Ok(sync::flush(&self.store, &self.client).await?)
    }

    /// Pulls pending questions and refreshes held ones; returns what to withdraw.
    pub async fn sync(&self) -> Result<SyncReport, QpError> {
        Ok(sync::sync(&self.store, &self.client).await?)
    }

    /// The feed, newest first.
    pub fn feed(&self) -> Result<Vec<FeedCell>, QpError> {
        Ok(feed(
            &self.store,
            &self.user_id,
            chrono::Utc::now(),
            &Copy::EN,
        )?)
    }

    /// The person tapped "retry" on a waiting answer.
    pub fn retry(&self, question_id: String) -> Result<bool, QpError> {
        Ok(self.store.retry_now(&question_id)?)
    }

    /// At app launch: sends cut short by a crash are queued again.
    pub fn requeue_interrupted(&self) -> Result<u32, QpError> {
        Ok(self.store.requeue_interrupted()? as u32)
    }

    /// What the device knows of its questions, for the category registry.
    pub fn known_questions(&self) -> Result<Vec<KnownCategoryQuestion>, QpError> {
        Ok(self
            .store
            .known_questions(crate::present::registry::DEFAULT_MAX_CATEGORIES * 4)?
            .into_iter()
            .map(|k| KnownCategoryQuestion {
                question_id: k.question_id,
                state: k.state,
                expires_at: k.expires_at.into(),
                created_at: k.created_at.into(),
            })
            .collect())
    }

    /// A held question (for the answer sheet).
    pub fn question(&self, question_id: String) -> Result<Option<PushQuestion>, QpError> {
        Ok(self
            .store
            .question(&question_id)?
            .map(|s| s.question.into()))
    }

    /// Before suspension: write the WAL back so no lock is held.
    pub fn checkpoint(&self) -> Result<(), QpError> {
        Ok(self.store.checkpoint()?)
    }
}
