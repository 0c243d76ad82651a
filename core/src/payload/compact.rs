//! The compact question and the resolved notice: the push-sized views of a
//! question, and their conversion from and to the protocol's Question.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::copy::Copy;
use crate::protocol::time::rfc3339;
use crate::protocol::{
    Answer, Asker, ConsentRequest, OptionStyle, Question, QuestionOption, QuestionState,
    ResolutionPolicy, ResponderScope, RoomRef, TextInput,
};

/// The version of the compact format. It changes only for a change old phones
/// cannot read; new fields are added without changing it (old phones ignore them).
pub const PAYLOAD_VERSION: i64 = 1;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactRoom {
    pub code: String,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactOption {
    pub value: String,
    pub label: String,
    pub style: OptionStyle,
}

impl From<QuestionOption> for CompactOption {
    fn from(o: QuestionOption) -> Self {
        CompactOption {
            value: o.value,
            label: o.label,
            style: o.style,
        }
    }
}

/// Everything a phone needs to show and answer a question offline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactQuestion {
    pub v: i64,
    pub id: String,
    pub room: CompactRoom,
    /// The asker's display name.
    pub asker: String,
    pub prompt: String,
    pub context: Option<String>,
    pub options: Vec<CompactOption>,
    pub text_input: Option<TextInput>,
    pub responder_scope: ResponderScope,
    pub target_user_id: Option<String>,
    #[serde(with = "rfc3339")]
    pub expires_at: DateTime<Utc>,
    #[serde(with = "rfc3339")]
    pub created_at: DateTime<Utc>,
    /// The server's sign-in consent, in parts (additive: older phones read
    /// the English prompt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consent: Option<ConsentRequest>,
}

impl CompactQuestion {
    /// The compact view of a server-side question. Room and asker come from
    /// the question's additive fields (the server always sets them).
    pub fn from_question(q: &Question) -> CompactQuestion {
        let room = q.room.clone().unwrap_or(RoomRef {
            code: String::new(),
            name: String::new(),
        });
        CompactQuestion {
            v: PAYLOAD_VERSION,
            id: q.id.clone(),
            room: CompactRoom {
                code: room.code,
                name: room.name,
            },
            asker: q
                .asker
                .as_ref()
                .map(|a| a.display_name.clone())
                .unwrap_or_default(),
            prompt: q.prompt.clone(),
            context: q.context.clone(),
            options: q.options.iter().cloned().map(Into::into).collect(),
            text_input: q.text_input.clone(),
            responder_scope: q.responder_scope,
            target_user_id: q.target_user_id.clone(),
            expires_at: q.expires_at,
            created_at: q.created_at,
            consent: q.consent.clone(),
        }
    }

    /// A pending Question built from the compact view (for answer validation
    /// and the feed). `data`, `correlation_id` and `reply_to` are not known.
    pub fn to_question(&self) -> Question {
        Question {
            id: self.id.clone(),
            kind: crate::protocol::model::KIND_QUESTION.to_string(),
            prompt: self.prompt.clone(),
            context: self.context.clone(),
            options: self
                .options
                .iter()
                .map(|o| QuestionOption {
                    value: o.value.clone(),
                    label: o.label.clone(),
                    style: o.style,
                })
                .collect(),
            text_input: self.text_input.clone(),
            responder_scope: self.responder_scope,
            target_user_id: self.target_user_id.clone(),
            resolution_policy: ResolutionPolicy::First,
            state: QuestionState::Pending,
            answer: None,
            expires_at: self.expires_at,
            resolved_at: None,
            correlation_id: None,
            reply_to: None,
            data: None,
            created_at: self.created_at,
            room: Some(RoomRef {
                code: self.room.code.clone(),
                name: self.room.name.clone(),
            }),
            asker: Some(Asker {
                handle: None,
                kind: "agent".into(),
                id: String::new(),
                display_name: self.asker.clone(),
            }),
            consent: self.consent.clone(),
        }
    }

    /// The question as its person reads it: a consent question worded in
    /// `copy`'s language (asker, prompt, context, Allow/Deny) from its parts;
    /// any other question as it is (the asker's words are never translated).
    pub fn localized(&self, copy: &Copy) -> CompactQuestion {
        let Some(c) = &self.consent else {
            return self.clone();
        };
        let words = copy.consent(c, &self.room.name);
        let mut q = self.clone();
        q.asker = words.asker;
        q.prompt = words.prompt;
        q.context = Some(words.context);
        for o in &mut q.options {
            if let Some(label) = copy.consent_label(&o.value) {
                o.label = label;
            }
        }
        q
    }
}

/// A question left `pending`: sent so phones replace (iOS) or withdraw its
/// notification (Android) and update the feed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResolvedNotice {
    pub v: i64,
    pub id: String,
    pub state: QuestionState,
    pub answer: Option<Answer>,
    #[serde(with = "crate::protocol::time::rfc3339_opt", default)]
    pub resolved_at: Option<DateTime<Utc>>,
}

impl ResolvedNotice {
    pub fn from_question(q: &Question) -> ResolvedNotice {
        ResolvedNotice {
            v: PAYLOAD_VERSION,
            id: q.id.clone(),
            state: q.state,
            answer: q.answer.clone(),
            resolved_at: q.resolved_at,
        }
    }
}
