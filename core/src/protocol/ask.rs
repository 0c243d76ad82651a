//! The ask request body (spec 7) and its validation and normalization.
//!
//! [`normalize_ask`] is the one place where an ask is judged. It returns the
//! first broken rule, checking fields in this order: `prompt`, `context`,
//! `text_input`, `options`, `responder_scope`/`target_user_id`,
//! `resolution_policy`, `ttl`, `correlation_id`, `reply_to`, `data`.
//!
//! Decisions where the spec leaves room (documented in the README too):
//! - `prompt`, `context`, labels and the placeholder are trimmed; option values
//!   are not (they round-trip exactly). A blank `context`/`placeholder` is `null`.
//! - A bare-string option is both value and label. An object option without a
//!   `label` uses its value as label.
//! - Legacy flags: `primary: true` means `style: "primary"`, `destructive: true`
//!   means `style: "danger"`; `false` expresses no opinion. Both flags true, or a
//!   flag that disagrees with an explicit `style`, is `conflicting_style`.
//! - More than one `primary` option is rejected (`multiple_primary`): the spec's
//!   "one strike" rule, enforced so every question looks the same everywhere.
//! - `options` omitted (or `null`) without `text_input`: approve/deny. Omitted,
//!   `null` or `[]` with `text_input`: a text-only question (`options: []`).
//! - `text_input.max_length` defaults to 60; above 60 it is capped to 60 (the
//!   spec's "hard-capped"); below 1 it is an error.
//! - `direct` without `target_user_id` targets the caller's bound user
//!   ([`AskContext::default_target_user_id`]); with no such user it is an error.
//! - `ttl` defaults to 3600 s and is clamped into [30 s, 7 days].
//! - Unknown fields are ignored; a known field with a wrong type is an error.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::error::{ErrorCode, ValidationError};
use super::identity::check_id;
use super::json::{
    char_len, check_len, check_readable, check_single_line, opt_bool, opt_int, opt_str, present,
    wrong_type,
};
use super::limits::*;
use super::model::{
    OptionStyle, Question, QuestionOption, QuestionState, ResolutionPolicy, ResponderScope,
    TextInput, KIND_QUESTION,
};
use super::time::rfc3339;

/// What the validator needs to know about the caller and the moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AskContext {
    /// The time of the ask (whole seconds); `expires_at = now + ttl`.
    pub now: DateTime<Utc>,
    /// The user a `direct` question goes to when the body names none: the
    /// asking agent's owning user.
    pub default_target_user_id: Option<String>,
}

/// A valid ask, normalized: everything the server stores except the id, the
/// state and the timestamps of resolution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NormalizedAsk {
    pub prompt: String,
    pub context: Option<String>,
    pub options: Vec<QuestionOption>,
    pub text_input: Option<TextInput>,
    pub responder_scope: ResponderScope,
    pub target_user_id: Option<String>,
    pub resolution_policy: ResolutionPolicy,
    /// The effective ttl in seconds, after clamping.
    pub ttl: i64,
    #[serde(with = "rfc3339")]
    pub expires_at: DateTime<Utc>,
    pub correlation_id: Option<String>,
    pub reply_to: Option<String>,
    pub data: Option<Map<String, Value>>,
}

impl NormalizedAsk {
    /// A new `pending` question with this id, created at `created_at`.
    pub fn into_question(self, id: String, created_at: DateTime<Utc>) -> Question {
        Question {
            id,
            kind: KIND_QUESTION.to_string(),
            prompt: self.prompt,
            context: self.context,
            options: self.options,
            text_input: self.text_input,
            responder_scope: self.responder_scope,
            target_user_id: self.target_user_id,
            resolution_policy: self.resolution_policy,
            state: QuestionState::Pending,
            answer: None,
            expires_at: self.expires_at,
            resolved_at: None,
            correlation_id: self.correlation_id,
            reply_to: self.reply_to,
            data: self.data,
            created_at,
            room: None,
            asker: None,
            consent: None,
        }
    }
}

/// The ask body as a client builds it (the CLI, the Rust asker client).
/// The server never trusts this type: it validates the raw JSON itself,
/// field by field.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AskRequest {
    pub prompt: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<AskOption>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_input: Option<AskTextInput>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responder_scope: Option<ResponderScope>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_user_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub data: Option<Map<String, Value>>,
}

impl AskRequest {
    /// The binary approve/deny question (options left out on purpose).
    pub fn yes_no(prompt: impl Into<String>) -> Self {
        AskRequest {
            prompt: prompt.into(),
            ..Default::default()
        }
    }
}

/// An option as an asker may write it: a bare string or an object.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AskOption {
    Bare(String),
    Full {
        value: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        style: Option<OptionStyle>,
    },
}

/// `text_input` as an asker may write it (`max_length` optional).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AskTextInput {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placeholder: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<i64>,
}

/// The approve/deny pair used when `options` and `text_input` are both left out.
pub fn default_options() -> Vec<QuestionOption> {
    vec![
        QuestionOption {
            value: "approve".into(),
            label: "Approve".into(),
            style: OptionStyle::Primary,
        },
        QuestionOption {
            value: "deny".into(),
            label: "Deny".into(),
            style: OptionStyle::Danger,
        },
    ]
}

/// Validates and normalizes an ask body. See the module docs for the rules.
pub fn normalize_ask(body: &Value, ctx: &AskContext) -> Result<NormalizedAsk, ValidationError> {
    let obj = body
        .as_object()
        .ok_or_else(|| wrong_type("body", "a JSON object", body))?;

    let prompt = match present(obj, "prompt") {
        None => {
            return Err(ValidationError::new(
                "prompt",
                ErrorCode::Required,
                "is required",
            ))
        }
        Some(Value::String(s)) => s.trim(),
        Some(other) => return Err(wrong_type("prompt", "a string", other)),
    };
    check_len("prompt", prompt, PROMPT_MAX_CHARS)?;
    check_readable("prompt", prompt)?;

    let context = trimmed_optional(obj, "context", CONTEXT_MAX_CHARS)?;
    if let Some(c) = &context {
        check_readable("context", c)?;
    }
    let text_input = parse_text_input(obj)?;
    let options = parse_options(obj, text_input.is_some())?;
    let (responder_scope, target_user_id) = parse_scope(obj, ctx)?;
    let resolution_policy = parse_policy(obj)?;

    let ttl = opt_int(obj, "ttl", "ttl")?
        .unwrap_or(TTL_DEFAULT_SECS)
        .clamp(TTL_MIN_SECS, TTL_MAX_SECS);
    let expires_at = ctx.now + Duration::seconds(ttl);

    let correlation_id = capped_optional(obj, "correlation_id", CORRELATION_ID_MAX_CHARS)?;
    let reply_to = capped_optional(obj, "reply_to", REPLY_TO_MAX_CHARS)?;
    let data = parse_data(obj)?;

    Ok(NormalizedAsk {
        prompt: prompt.to_string(),
        context,
        options,
        text_input,
        responder_scope,
        target_user_id,
        resolution_policy,
        ttl,
        expires_at,
        correlation_id,
        reply_to,
        data,
    })
}

/// A trimmed display string: blank reads as `null`, otherwise 1..=max chars.
fn trimmed_optional(
    obj: &Map<String, Value>,
    key: &str,
    max: usize,
) -> Result<Option<String>, ValidationError> {
    match opt_str(obj, key, key)?.map(str::trim) {
        None | Some("") => Ok(None),
        Some(s) => {
            check_len(key, s, max)?;
            Ok(Some(s.to_string()))
        }
    }
}

/// A caller's token echoed unchanged (not trimmed): at most `max` chars.
fn capped_optional(
    obj: &Map<String, Value>,
    key: &str,
    max: usize,
) -> Result<Option<String>, ValidationError> {
    match opt_str(obj, key, key)? {
        None => Ok(None),
        Some(s) => {
            let n = char_len(s);
            if n > max {
                return Err(ValidationError::new(
                    key,
                    ErrorCode::TooLong,
                    format!("must be at most {max} characters, got {n}"),
                ));
            }
            Ok(Some(s.to_string()))
        }
    }
}

fn parse_text_input(obj: &Map<String, Value>) -> Result<Option<TextInput>, ValidationError> {
    let m = match present(obj, "text_input") {
        None => return Ok(None),
        Some(Value::Object(m)) => m,
        Some(other) => return Err(wrong_type("text_input", "an object", other)),
    };
    let placeholder = match opt_str(m, "placeholder", "text_input.placeholder")?.map(str::trim) {
        None | Some("") => None,
        Some(p) => {
            check_len("text_input.placeholder", p, PLACEHOLDER_MAX_CHARS)?;
            check_single_line("text_input.placeholder", p)?;
            check_readable("text_input.placeholder", p)?;
            Some(p.to_string())
        }
    };
    let max_length = match opt_int(m, "max_length", "text_input.max_length")? {
        None => TEXT_MAX_LENGTH_CAP,
        Some(n) if n < 1 => {
            return Err(ValidationError::new(
                "text_input.max_length",
                ErrorCode::OutOfRange,
                format!("must be at least 1 (and is capped at {TEXT_MAX_LENGTH_CAP}), got {n}"),
            ))
        }
        Some(n) => n.min(TEXT_MAX_LENGTH_CAP as i64) as u32,
    };
    Ok(Some(TextInput {
        placeholder,
        max_length,
    }))
}

fn parse_options(
    obj: &Map<String, Value>,
    has_text_input: bool,
) -> Result<Vec<QuestionOption>, ValidationError> {
    let entries = match present(obj, "options") {
        None if has_text_input => return Ok(Vec::new()),
        None => return Ok(default_options()),
        Some(Value::Array(a)) if a.is_empty() && has_text_input => return Ok(Vec::new()),
        Some(Value::Array(a)) => a,
        Some(other) => return Err(wrong_type("options", "an array", other)),
    };
    if entries.len() < OPTIONS_MIN {
        return Err(ValidationError::new(
            "options",
            ErrorCode::TooFew,
            format!(
                "must have {OPTIONS_MIN} to {OPTIONS_MAX} entries, got {} (leave options out for approve/deny)",
                entries.len()
            ),
        ));
    }
    if entries.len() > OPTIONS_MAX {
        return Err(ValidationError::new(
            "options",
            ErrorCode::TooMany,
            format!(
                "must have {OPTIONS_MIN} to {OPTIONS_MAX} entries, got {}",
                entries.len()
            ),
        ));
    }

    let mut options: Vec<QuestionOption> = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let field = format!("options[{i}]");
        let option = parse_option(entry, &field)?;
        if options.iter().any(|o| o.value == option.value) {
            let value_field = if entry.is_string() {
                field
            } else {
                format!("{field}.value")
            };
            return Err(ValidationError::new(
                value_field,
                ErrorCode::DuplicateValue,
                format!(
                    "value {:?} is already used by another option; values must be unique",
                    option.value
                ),
            ));
        }
        if option.style == OptionStyle::Primary
            && options.iter().any(|o| o.style == OptionStyle::Primary)
        {
            return Err(ValidationError::new(
                format!("{field}.style"),
                ErrorCode::MultiplePrimary,
                "only one option may be primary (the one affirmative color per question)",
            ));
        }
        options.push(option);
    }
    Ok(options)
}

fn parse_option(entry: &Value, field: &str) -> Result<QuestionOption, ValidationError> {
    match entry {
        Value::String(s) => {
            check_len(field, s, OPTION_VALUE_MAX_CHARS)?;
            check_single_line(field, s)?;
            let label = s.trim();
            check_len(field, label, OPTION_LABEL_MAX_CHARS)?;
            check_readable(field, label)?;
            Ok(QuestionOption {
                value: s.clone(),
                label: label.to_string(),
                style: OptionStyle::Default,
            })
        }
        Value::Object(m) => {
            let value_field = format!("{field}.value");
            let value = match present(m, "value") {
                None => {
                    return Err(ValidationError::new(
                        value_field,
                        ErrorCode::Required,
                        "is required",
                    ))
                }
                Some(Value::String(s)) => s,
                Some(other) => return Err(wrong_type(&value_field, "a string", other)),
            };
            check_len(&value_field, value, OPTION_VALUE_MAX_CHARS)?;
            check_single_line(&value_field, value)?;

            let label_field = format!("{field}.label");
            let label = match opt_str(m, "label", &label_field)? {
                None => value.trim(),
                Some(l) => l.trim(),
            };
            check_len(&label_field, label, OPTION_LABEL_MAX_CHARS)?;
            check_single_line(&label_field, label)?;
            check_readable(&label_field, label)?;

            let style = parse_style(m, field)?;
            Ok(QuestionOption {
                value: value.clone(),
                label: label.to_string(),
                style,
            })
        }
        other => Err(wrong_type(field, "a string or an object", other)),
    }
}

/// `style`, reconciled with the legacy `primary` / `destructive` booleans.
fn parse_style(m: &Map<String, Value>, field: &str) -> Result<OptionStyle, ValidationError> {
    let style_field = format!("{field}.style");
    // `cancel` is the quiet role; a word from a later version is ignored
    // here (the legacy flags, written for older readers, or `default` decide).
    let word = opt_str(m, "style", &style_field)?;
    let explicit = word.and_then(OptionStyle::read);
    let primary = opt_bool(m, "primary", &format!("{field}.primary"))? == Some(true);
    let destructive = opt_bool(m, "destructive", &format!("{field}.destructive"))? == Some(true);
    let legacy = match (primary, destructive) {
        (true, true) => {
            return Err(ValidationError::new(
                field,
                ErrorCode::ConflictingStyle,
                "primary and destructive cannot both be true",
            ))
        }
        (true, false) => Some(OptionStyle::Primary),
        (false, true) => Some(OptionStyle::Danger),
        (false, false) => None,
    };
    match (explicit, legacy) {
        (Some(s), Some(l)) if s != l => Err(ValidationError::new(
            style_field,
            ErrorCode::ConflictingStyle,
            format!(
                "style {:?} contradicts the legacy flag meaning {:?}",
                s.as_str(),
                l.as_str()
            ),
        )),
        (Some(s), _) => Ok(s),
        (None, Some(l)) => Ok(l),
        (None, None) => Ok(OptionStyle::Default),
    }
}

fn parse_scope(
    obj: &Map<String, Value>,
    ctx: &AskContext,
) -> Result<(ResponderScope, Option<String>), ValidationError> {
    let scope = match opt_str(obj, "responder_scope", "responder_scope")? {
        None | Some("direct") => ResponderScope::Direct,
        Some("room") => ResponderScope::Room,
        Some(other) => {
            return Err(ValidationError::new(
                "responder_scope",
                ErrorCode::InvalidValue,
                format!("must be \"direct\" or \"room\", got {other:?}"),
            ))
        }
    };
    let target = opt_str(obj, "target_user_id", "target_user_id")?;
    match scope {
        ResponderScope::Room => match target {
            Some(_) => Err(ValidationError::new(
                "target_user_id",
                ErrorCode::NotAllowed,
                "must be left out for a room-scope question (anyone in the room may answer)",
            )),
            None => Ok((scope, None)),
        },
        ResponderScope::Direct => {
            let target = target
                .map(str::to_string)
                .or_else(|| ctx.default_target_user_id.clone())
                .ok_or_else(|| {
                    ValidationError::new(
                        "target_user_id",
                        ErrorCode::Required,
                        "is required for a direct question when the caller is bound to no user",
                    )
                })?;
            check_len("target_user_id", &target, USER_ID_MAX_CHARS)?;
            // The phone's rule for an id (it ends up in notification and
            // category identifiers): judged here, so an ask the server takes
            // is one every phone can show.
            check_id(&target).map_err(|e| {
                ValidationError::new(
                    "target_user_id",
                    ErrorCode::InvalidCharacters,
                    e.to_string(),
                )
            })?;
            Ok((scope, Some(target)))
        }
    }
}

fn parse_policy(obj: &Map<String, Value>) -> Result<ResolutionPolicy, ValidationError> {
    match opt_str(obj, "resolution_policy", "resolution_policy")? {
        None | Some("first") => Ok(ResolutionPolicy::First),
        Some(p @ ("quorum" | "all")) => Err(ValidationError::new(
            "resolution_policy",
            ErrorCode::UnsupportedInV1,
            format!("{p:?} is reserved and not supported in v1; use \"first\""),
        )),
        Some(other) => Err(ValidationError::new(
            "resolution_policy",
            ErrorCode::InvalidValue,
            format!("must be \"first\", got {other:?}"),
        )),
    }
}

/// How deeply a JSON value nests (a scalar is 0, `{}` is 1). Iterative, so a
/// hostile value cannot exhaust the stack here.
fn json_depth(v: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(v, 0usize)];
    while let Some((v, d)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Array(a) => Box::new(a.iter()),
            Value::Object(o) => Box::new(o.values()),
            _ => continue,
        };
        deepest = deepest.max(d + 1);
        stack.extend(children.map(|c| (c, d + 1)));
    }
    deepest
}

fn parse_data(obj: &Map<String, Value>) -> Result<Option<Map<String, Value>>, ValidationError> {
    match present(obj, "data") {
        None => Ok(None),
        Some(Value::Object(m)) => {
            // Depth first: readers add a few levels around `data` (a list of
            // questions, a webhook envelope), and JSON parsers stop at 128.
            let depth = json_depth(&Value::Object(m.clone()));
            if depth > DATA_MAX_DEPTH {
                return Err(ValidationError::new(
                    "data",
                    ErrorCode::TooDeep,
                    format!("must nest at most {DATA_MAX_DEPTH} levels, got {depth}"),
                ));
            }
            let size = serde_json::to_vec(m).map(|v| v.len()).unwrap_or(usize::MAX);
            if size > DATA_MAX_BYTES {
                return Err(ValidationError::new(
                    "data",
                    ErrorCode::TooLarge,
                    format!("must be at most {DATA_MAX_BYTES} bytes as compact JSON, got {size}"),
                ));
            }
            Ok(Some(m.clone()))
        }
        Some(other) => Err(wrong_type("data", "a JSON object", other)),
    }
}
