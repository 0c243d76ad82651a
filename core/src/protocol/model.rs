//! The wire objects of the protocol (spec sections 3 and 4), under their exact
//! field names. Every field is always written (`null` when empty) so that
//! clients can rely on the keys being present.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::time::{rfc3339, rfc3339_opt};

/// The value of `kind` on every question.
pub const KIND_QUESTION: &str = "question";

/// How an option's button looks. Three roles only, on purpose (spec 3).
///
/// Read leniently: `"cancel"` (the spec's own example of a quiet option) is
/// the `default` role, and a style word from a later protocol version
/// degrades to `default` rather than failing the question (additive-only).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OptionStyle {
    /// The recommended or affirmative choice: the brand strike color.
    Primary,
    /// A genuinely destructive choice: danger red.
    Danger,
    /// A quiet, neutral choice; the default when `style` is left out.
    #[default]
    Default,
}

impl OptionStyle {
    pub const ALL: [OptionStyle; 3] = [
        OptionStyle::Primary,
        OptionStyle::Danger,
        OptionStyle::Default,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            OptionStyle::Primary => "primary",
            OptionStyle::Danger => "danger",
            OptionStyle::Default => "default",
        }
    }

    /// One of the three role words; `None` for any other word.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "primary" => Some(OptionStyle::Primary),
            "danger" => Some(OptionStyle::Danger),
            "default" => Some(OptionStyle::Default),
            _ => None,
        }
    }

    /// A style word as written by any client: the three roles, `cancel` as
    /// the quiet role, and `None` for a word this version does not know
    /// (the caller then falls back to the legacy flags, or `default`).
    pub fn read(s: &str) -> Option<Self> {
        match s {
            "cancel" => Some(OptionStyle::Default),
            other => Self::parse(other),
        }
    }
}

impl<'de> Deserialize<'de> for OptionStyle {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let word = String::deserialize(d)?;
        Ok(Self::read(&word).unwrap_or_default())
    }
}

/// One predefined answer: a machine `value`, a human `label`, a `style`.
///
/// On the wire it is written as `{value, label, style, primary, destructive}`:
/// the legacy booleans are derived from `style` so that clients written before
/// protocol 1.1 keep working (additive-only). On input either form is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuestionOption {
    pub value: String,
    pub label: String,
    pub style: OptionStyle,
}

/// The schema of an option as the server writes it (every key present).
#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for QuestionOption {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        ObjectBuilder::new()
            .description(Some("One predefined answer. `primary` and `destructive` are derived from `style` for clients older than protocol 1.1."))
            .property("value", ObjectBuilder::new().schema_type(Type::String).description(Some("What the asker gets back (1 to 40 characters).")))
            .property("label", ObjectBuilder::new().schema_type(Type::String).description(Some("The button's text (1 to 40 characters).")))
            .property("style", OptionStyle::schema())
            .property("primary", ObjectBuilder::new().schema_type(Type::Boolean))
            .property("destructive", ObjectBuilder::new().schema_type(Type::Boolean))
            .required("value")
            .required("label")
            .required("style")
            .required("primary")
            .required("destructive")
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for QuestionOption {
    fn schemas(
        schemas: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    ) {
        schemas.push((
            <OptionStyle as utoipa::ToSchema>::name().into_owned(),
            <OptionStyle as utoipa::PartialSchema>::schema(),
        ));
    }
}

#[derive(Serialize, Deserialize)]
struct OptionWire {
    value: String,
    #[serde(default)]
    label: Option<String>,
    #[serde(default)]
    style: Option<OptionStyle>,
    #[serde(default)]
    primary: Option<bool>,
    #[serde(default)]
    destructive: Option<bool>,
}

impl Serialize for QuestionOption {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        OptionWire {
            value: self.value.clone(),
            label: Some(self.label.clone()),
            style: Some(self.style),
            primary: Some(self.style == OptionStyle::Primary),
            destructive: Some(self.style == OptionStyle::Danger),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for QuestionOption {
    /// Reads a stored or received option leniently (this is for questions that
    /// were already validated by a server): `style` wins, then the legacy flags.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = OptionWire::deserialize(d)?;
        let style = match (w.style, w.primary, w.destructive) {
            (Some(style), _, _) => style,
            (None, Some(true), _) => OptionStyle::Primary,
            (None, _, Some(true)) => OptionStyle::Danger,
            _ => OptionStyle::Default,
        };
        Ok(QuestionOption {
            label: w.label.unwrap_or_else(|| w.value.clone()),
            value: w.value,
            style,
        })
    }
}

/// The opt-in typed answer (spec 3, "Inviting a typed answer").
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextInput {
    pub placeholder: Option<String>,
    pub max_length: u32,
}

/// Who may answer.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResponderScope {
    /// One named person (`target_user_id`); the UI reads "asks you".
    #[default]
    Direct,
    /// Any member of the room; the UI reads "asks the room".
    Room,
}

impl ResponderScope {
    pub const ALL: [ResponderScope; 2] = [ResponderScope::Direct, ResponderScope::Room];

    pub fn as_str(self) -> &'static str {
        match self {
            ResponderScope::Direct => "direct",
            ResponderScope::Room => "room",
        }
    }
}

/// How a question resolves. Only `first` exists in v1; `quorum` and `all` are
/// reserved names, refused when a question is asked.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResolutionPolicy {
    #[default]
    First,
}

/// The whole state machine: `pending` and three terminal states.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QuestionState {
    Pending,
    Answered,
    Expired,
    Cancelled,
}

impl QuestionState {
    pub const ALL: [QuestionState; 4] = [
        QuestionState::Pending,
        QuestionState::Answered,
        QuestionState::Expired,
        QuestionState::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            QuestionState::Pending => "pending",
            QuestionState::Answered => "answered",
            QuestionState::Expired => "expired",
            QuestionState::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        QuestionState::ALL.into_iter().find(|st| st.as_str() == s)
    }

    pub fn is_terminal(self) -> bool {
        self != QuestionState::Pending
    }
}

/// The person who answered: always the authenticated user.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Responder {
    pub id: String,
    pub display_name: String,
}

/// The answer envelope (spec 4): exactly one of `value`+`label` or `text`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    pub value: Option<String>,
    pub label: Option<String>,
    pub text: Option<String>,
    pub responder: Responder,
    #[serde(with = "rfc3339")]
    pub answered_at: DateTime<Utc>,
}

/// The room a question was asked in (additive; from the data model, seed 001).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoomRef {
    pub code: String,
    pub name: String,
}

/// A sign-in consent the server itself asks (additive; never an asker's:
/// no ask body can set it). It says, in parts, what the question's prompt,
/// context and Allow/Deny labels say in the server's English, so a
/// responder words the question in its person's language; one that does
/// not still reads the English sentence. The answer values stay `allow`
/// and `deny`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsentRequest {
    /// Who wants to sign in: `verified` (a client whose metadata document
    /// was fetched from `host`), `unverified` (a client that registered
    /// itself) or `terminal` (`qp login --url`). Unknown values read as
    /// `unverified`.
    pub client: String,
    /// What the client calls itself: its claim, shown quoted and isolated.
    pub name: String,
    /// The verified host (`verified` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Where the sign-in goes back to: the redirect's host, or `localhost`
    /// for the computer the client runs on; none when not told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub returns_to: Option<String>,
    /// The code to compare with the one where the sign-in started.
    pub code: String,
}

/// Who asked (additive, as the protocol's data model has it).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Asker {
    /// `agent` or `user`.
    #[serde(rename = "type")]
    pub kind: String,
    pub id: String,
    /// A stable, URL-safe name derived at creation (`release-bot`); `null`
    /// where it is not known (a question rebuilt from a push).
    #[serde(default)]
    pub handle: Option<String>,
    pub display_name: String,
}

/// The Question object (spec 3). Field order follows the spec.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    pub id: String,
    #[serde(default = "kind_question")]
    pub kind: String,
    pub prompt: String,
    #[serde(default)]
    pub context: Option<String>,
    #[serde(default)]
    pub options: Vec<QuestionOption>,
    #[serde(default)]
    pub text_input: Option<TextInput>,
    #[serde(default)]
    pub responder_scope: ResponderScope,
    #[serde(default)]
    pub target_user_id: Option<String>,
    #[serde(default)]
    pub resolution_policy: ResolutionPolicy,
    pub state: QuestionState,
    #[serde(default)]
    pub answer: Option<Answer>,
    #[serde(with = "rfc3339")]
    pub expires_at: DateTime<Utc>,
    #[serde(default, with = "rfc3339_opt")]
    pub resolved_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub correlation_id: Option<String>,
    #[serde(default)]
    pub reply_to: Option<String>,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub data: Option<Map<String, Value>>,
    #[serde(with = "rfc3339")]
    pub created_at: DateTime<Utc>,
    /// Additive: the room, so a phone can show and group it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub room: Option<RoomRef>,
    /// Additive: who asked, so a phone can write "Release Bot asks you".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asker: Option<Asker>,
    /// Additive: set on the server's own sign-in consent question only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consent: Option<ConsentRequest>,
}

fn kind_question() -> String {
    KIND_QUESTION.to_string()
}

impl Question {
    /// The option with this value, if any.
    pub fn option(&self, value: &str) -> Option<&QuestionOption> {
        self.options.iter().find(|o| o.value == value)
    }
}

/// The ask's response: the question as created, and (additive) how many
/// devices its push was queued for. 0 says no one can receive it now (no
/// eligible person has a device that may receive pushes): the asker should
/// say so rather than wait in silence. Absent from servers that predate it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AskedQuestion {
    #[serde(flatten)]
    pub question: Question,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pushed_to_devices: Option<u64>,
}

/// The outgoing-webhook event (spec 7): a compact envelope fired when a
/// question resolves. `event` is `question.answered`, `question.expired` or
/// `question.cancelled`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebhookEvent {
    pub event: String,
    pub question_id: String,
    pub room: RoomRef,
    pub state: QuestionState,
    pub answer: Option<Answer>,
    pub correlation_id: Option<String>,
    pub reply_to: Option<String>,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub data: Option<Map<String, Value>>,
    #[serde(with = "rfc3339")]
    pub timestamp: DateTime<Utc>,
}

impl WebhookEvent {
    /// The event name for a terminal state (`None` for `pending`).
    pub fn name_for(state: QuestionState) -> Option<&'static str> {
        match state {
            QuestionState::Pending => None,
            QuestionState::Answered => Some("question.answered"),
            QuestionState::Expired => Some("question.expired"),
            QuestionState::Cancelled => Some("question.cancelled"),
        }
    }

    /// The event for a resolved question; `None` while it is pending.
    /// `timestamp` is when it resolved.
    pub fn for_question(q: &Question, room: RoomRef) -> Option<WebhookEvent> {
        let event = Self::name_for(q.state)?;
        Some(WebhookEvent {
            event: event.to_string(),
            question_id: q.id.clone(),
            room,
            state: q.state,
            answer: q.answer.clone(),
            correlation_id: q.correlation_id.clone(),
            reply_to: q.reply_to.clone(),
            data: q.data.clone(),
            timestamp: q.resolved_at.unwrap_or(q.created_at),
        })
    }
}
