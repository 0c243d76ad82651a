//! The MCP tools: their argument schemas (the descriptions are written for a
//! model to read), and the shaping of results and errors. Every call goes
//! through [`Backend`], so the HTTP and stdio servers behave the same.

use std::time::Duration;

use qp_core::protocol::ask::AskTextInput;
use qp_core::protocol::limits as l;
use qp_core::protocol::{AskOption, AskRequest, OptionStyle, Question, ResponderScope};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_handler, tool_router, ErrorData, RoleServer, ServerHandler};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::backend::{Backend, Failure};
use crate::store::identity::Agent;

/// How long `ask_question` and `wait_for_answer` wait by default.
pub const TOOL_WAIT_DEFAULT_SECS: u64 = qp_client::PERSON_WAIT_DEFAULT_SECS;
/// The longest wait one tool call may ask for; longer is a loop of calls.
pub const TOOL_WAIT_MAX_SECS: u64 = 900;
/// `list_questions` without a limit (fewer than the HTTP API's
/// `limits::LIST_DEFAULT_LIMIT`: each question costs a model's context).
pub const TOOL_LIST_DEFAULT_LIMIT: usize = 50;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StyleArg {
    /// The recommended choice.
    Primary,
    /// A destructive choice (shown in red).
    Danger,
    /// A neutral choice.
    Default,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct OptionArg {
    /// What you get back when this button is tapped (1 to 40 characters, unique).
    pub value: String,
    /// The button's text (1 to 40 characters); defaults to the value.
    #[serde(default)]
    pub label: Option<String>,
    /// How the button looks; at most one option may be primary.
    #[serde(default)]
    pub style: Option<StyleArg>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct TextInputArg {
    /// Hint shown in the empty reply field (at most 60 characters).
    #[serde(default)]
    pub placeholder: Option<String>,
    /// Longest reply in characters, 1 to 60 (default 60).
    #[serde(default)]
    pub max_length: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ScopeArg {
    /// One person answers: target_user_id, or by default the agent's owner.
    Direct,
    /// Anyone in the room may answer; the first answer wins.
    Room,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct AskQuestionArgs {
    /// The room's invite code (for example "OPS123"): the people who can receive the question.
    pub room: String,
    /// The question as the person reads it on the lock screen, 1 to 500 characters. Put the decision first.
    pub prompt: String,
    /// 2 to 4 buttons, in order. Leave out options and text_input for an Approve/Deny question.
    #[serde(default)]
    pub options: Option<Vec<OptionArg>>,
    /// true asks Approve/Deny (answer values "approve" and "deny"); not together with options.
    #[serde(default)]
    pub yes_no: Option<bool>,
    /// Invites a short typed reply, alone or next to the options.
    #[serde(default)]
    pub text_input: Option<TextInputArg>,
    /// A short second line, at most 40 characters (a version, a branch, a host).
    #[serde(default)]
    pub context: Option<String>,
    /// Who may answer; default direct.
    #[serde(default)]
    pub scope: Option<ScopeArg>,
    /// For scope direct: the user who answers (default: the agent's owner).
    #[serde(default)]
    pub target_user_id: Option<String>,
    /// Seconds until the question expires unanswered, 30 to 604800 (default 3600).
    #[serde(default)]
    pub ttl: Option<i64>,
    /// Your own id for this question (at most 255 characters), echoed back in every result.
    #[serde(default)]
    pub correlation_id: Option<String>,
    /// A JSON object echoed back with the answer and never shown to the person (at most 8 KiB).
    #[serde(default)]
    pub data: Option<Map<String, Value>>,
    /// Seconds to wait for the answer before returning, 0 to 900 (default 300). When the wait ends first, the result says still_pending and wait_for_answer resumes.
    #[serde(default)]
    pub wait: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WaitArgs {
    /// The question's id (q_…), from ask_question.
    pub question_id: String,
    /// Seconds to wait, 0 to 900 (default 300). 0 returns the current state at once.
    #[serde(default)]
    pub wait: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct QuestionIdArgs {
    /// The question's id (q_…).
    pub question_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StateArg {
    Pending,
    Answered,
    Expired,
    Cancelled,
    /// Every state, any age.
    All,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListArgs {
    /// Only questions in this state; left out: every question of the last 24 hours.
    #[serde(default)]
    pub state: Option<StateArg>,
    /// At most this many, newest first, 1 to 500 (default 50).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// The MCP server of one connection (stdio) or of the HTTP endpoint.
#[derive(Clone)]
pub struct QpTools {
    backend: Backend,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl QpTools {
    pub fn new(backend: Backend) -> Self {
        QpTools {
            backend,
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        description = "Ask a person a question they answer from their phone's lock screen, and wait for the answer. \
        Use it when you need a human decision or a short fact: approval before a risky action, a choice between 2 to 4 options, or a typed reply. \
        Returns the state (answered, expired, cancelled, or still_pending when the wait ran out), the chosen value and label or the typed text, who answered and when. \
        Never treat an expired, cancelled or pending question as approval."
    )]
    async fn ask_question(
        &self,
        Parameters(args): Parameters<AskQuestionArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let wait = match wait_secs(args.wait) {
            Ok(w) => w,
            Err(f) => return Ok(failure(&f)),
        };
        let (room, req) = match ask_request(args) {
            Ok(r) => r,
            Err(f) => return Ok(failure(&f)),
        };
        let agent = agent(&ctx);
        let asked = match self.backend.ask(agent.as_ref(), &room, &req).await {
            Ok(q) => q,
            Err(f) => return Ok(failure(&f)),
        };
        // Nobody may get a push, yet a person with the web responder open
        // still sees it: wait as asked, and say so in the result.
        let undeliverable = asked.pushed_to_devices == Some(0);
        self.wait_and_report(agent.as_ref(), asked.question, wait, undeliverable, &ctx)
            .await
    }

    #[tool(
        description = "Wait for the answer to a question asked earlier (by ask_question with a short wait). \
        Returns as soon as it is answered, expires or is cancelled, or when the wait ends (still_pending: call again)."
    )]
    async fn wait_for_answer(
        &self,
        Parameters(args): Parameters<WaitArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let wait = match wait_secs(args.wait) {
            Ok(w) => w,
            Err(f) => return Ok(failure(&f)),
        };
        let agent = agent(&ctx);
        let q = match self.backend.get(agent.as_ref(), &args.question_id).await {
            Ok(q) => q,
            Err(f) => return Ok(failure(&f)),
        };
        self.wait_and_report(agent.as_ref(), q, wait, false, &ctx)
            .await
    }

    #[tool(description = "Get one of your questions as it stands now, without waiting.")]
    async fn get_question(
        &self,
        Parameters(args): Parameters<QuestionIdArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(
            match self
                .backend
                .get(agent(&ctx).as_ref(), &args.question_id)
                .await
            {
                Ok(q) => CallToolResult::structured(summary(&q)),
                Err(f) => failure(&f),
            },
        )
    }

    #[tool(
        description = "List your questions, newest first: by default those of the last 24 hours."
    )]
    async fn list_questions(
        &self,
        Parameters(args): Parameters<ListArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let limit = args.limit.unwrap_or(TOOL_LIST_DEFAULT_LIMIT);
        if !(1..=l::LIST_MAX_LIMIT).contains(&limit) {
            return Ok(failure(&invalid(
                "limit",
                format!("limit: must be 1 to {}, got {limit}", l::LIST_MAX_LIMIT),
            )));
        }
        let state = args.state.map(|s| match s {
            StateArg::Pending => "pending",
            StateArg::Answered => "answered",
            StateArg::Expired => "expired",
            StateArg::Cancelled => "cancelled",
            StateArg::All => "all",
        });
        Ok(
            match self.backend.list(agent(&ctx).as_ref(), state, limit).await {
                Ok(qs) => CallToolResult::structured(json!({
                    "questions": qs.iter().map(summary).collect::<Vec<_>>()
                })),
                Err(f) => failure(&f),
            },
        )
    }

    #[tool(
        description = "Withdraw a pending question: the phone stops offering it. \
        A question already answered, expired or cancelled is left as it is (the error includes its state)."
    )]
    async fn cancel_question(
        &self,
        Parameters(args): Parameters<QuestionIdArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(
            match self
                .backend
                .cancel(agent(&ctx).as_ref(), &args.question_id)
                .await
            {
                Ok(q) => CallToolResult::structured(summary(&q)),
                Err(f) => failure(&f),
            },
        )
    }
}

impl QpTools {
    /// Waits (unless the question is already resolved or `wait` is 0) and
    /// reports. A cancelled MCP request stops waiting; the question stays.
    async fn wait_and_report(
        &self,
        agent: Option<&Agent>,
        q: Question,
        wait: Duration,
        undeliverable: bool,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let report = |q: &Question| {
            CallToolResult::structured(if undeliverable {
                with_no_device_warning(q)
            } else {
                summary(q)
            })
        };
        if q.state.is_terminal() || wait.is_zero() {
            return Ok(report(&q));
        }
        tokio::select! {
            r = self.backend.wait(agent, &q.id, wait) => Ok(match r {
                Ok(q) => report(&q),
                Err(f) => failure(&f),
            }),
            _ = ctx.ct.cancelled() => Ok(failure(&Failure {
                code: "wait_cancelled".into(),
                field: None,
                message: format!("the wait was cancelled; question {} is still pending (wait_for_answer resumes)", q.id),
                question: None,
            })),
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for QpTools {
    /// Arguments that do not fit a tool's schema (a number for `prompt`, an
    /// option without `value`) come back as our tool error naming the
    /// argument, like every other rule, before the call is routed.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.clone().unwrap_or_default();
        if let Some((field, message)) = argument_error(&request.name, arguments) {
            return Ok(failure(&Failure {
                code: "invalid_arguments".into(),
                field,
                message,
                question: None,
            })
            .into());
        }
        self.tool_router
            .call(ToolCallContext::new(self, request, context))
            .await
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("qp", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Ask people questions they answer from their phone's lock screen (the Question Protocol). \
                 ask_question asks and waits; wait_for_answer resumes a wait; get_question, list_questions \
                 and cancel_question manage your questions. Only an answered question carries a decision.",
            )
    }
}

/// The agent the `/mcp` route authenticated (absent on stdio: the remote
/// server authenticates the token itself).
fn agent(ctx: &RequestContext<RoleServer>) -> Option<Agent> {
    ctx.extensions
        .get::<http::request::Parts>()
        .and_then(|p| p.extensions.get::<Agent>())
        .cloned()
}

/// The argument at fault and the rule, read again with the path kept.
fn argument_error(tool: &str, arguments: Map<String, Value>) -> Option<(Option<String>, String)> {
    fn check<T: DeserializeOwned>(args: Map<String, Value>) -> Option<(Option<String>, String)> {
        let err = serde_path_to_error::deserialize::<_, T>(Value::Object(args)).err()?;
        let path = err.path().to_string();
        let field = (path != ".").then_some(path);
        let message = match &field {
            Some(f) => format!("{f}: {}", err.inner()),
            None => err.inner().to_string(),
        };
        Some((field, message))
    }
    match tool {
        "ask_question" => check::<AskQuestionArgs>(arguments),
        "wait_for_answer" => check::<WaitArgs>(arguments),
        "get_question" | "cancel_question" => check::<QuestionIdArgs>(arguments),
        "list_questions" => check::<ListArgs>(arguments),
        _ => None,
    }
}

fn wait_secs(wait: Option<u64>) -> Result<Duration, Failure> {
    match wait.unwrap_or(TOOL_WAIT_DEFAULT_SECS) {
        w if w <= TOOL_WAIT_MAX_SECS => Ok(Duration::from_secs(w)),
        w => Err(invalid(
            "wait",
            format!("wait: must be 0 to {TOOL_WAIT_MAX_SECS} seconds, got {w}; call wait_for_answer again to wait longer"),
        )),
    }
}

/// The tool's arguments as the protocol's ask body. The protocol rules
/// themselves (lengths, option counts, ttl) are the server's, applied to it.
fn ask_request(a: AskQuestionArgs) -> Result<(String, AskRequest), Failure> {
    if a.yes_no == Some(true) && a.options.is_some() {
        return Err(invalid(
            "yes_no",
            "yes_no: cannot be combined with options (yes_no asks Approve/Deny)",
        ));
    }
    let options = a.options.map(|opts| {
        opts.into_iter()
            .map(|o| AskOption::Full {
                value: o.value,
                label: o.label,
                style: o.style.map(|s| match s {
                    StyleArg::Primary => OptionStyle::Primary,
                    StyleArg::Danger => OptionStyle::Danger,
                    StyleArg::Default => OptionStyle::Default,
                }),
            })
            .collect()
    });
    let req = AskRequest {
        prompt: a.prompt,
        context: a.context,
        options,
        text_input: a.text_input.map(|t| AskTextInput {
            placeholder: t.placeholder,
            max_length: t.max_length,
        }),
        responder_scope: a.scope.map(|s| match s {
            ScopeArg::Direct => ResponderScope::Direct,
            ScopeArg::Room => ResponderScope::Room,
        }),
        target_user_id: a.target_user_id,
        ttl: a.ttl,
        correlation_id: a.correlation_id,
        reply_to: None,
        data: a.data,
    };
    Ok((a.room, req))
}

/// What a model needs of a question, flat.
fn summary(q: &Question) -> Value {
    let answer = q.answer.as_ref();
    json!({
        "question_id": q.id,
        "prompt": q.prompt,
        "state": q.state.as_str(),
        "still_pending": !q.state.is_terminal(),
        "value": answer.and_then(|a| a.value.clone()),
        "label": answer.and_then(|a| a.label.clone()),
        "text": answer.and_then(|a| a.text.clone()),
        "responder": answer.map(|a| json!({"id": a.responder.id, "display_name": a.responder.display_name})),
        "answered_at": answer.map(|a| a.answered_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        "resolved_at": q.resolved_at.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        "expires_at": q.expires_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "correlation_id": q.correlation_id,
        "data": q.data,
    })
}

/// A question asked when no device could receive a push: its summary, with
/// the warning a model should pass on to the person it works for.
fn with_no_device_warning(q: &Question) -> Value {
    let mut v = summary(q);
    v["pushed_to_devices"] = json!(0);
    v["warning"] = json!(crate::app::NO_DEVICE_WARNING);
    v
}

fn invalid(field: &str, message: impl Into<String>) -> Failure {
    Failure {
        code: "invalid_value".into(),
        field: Some(field.into()),
        message: message.into(),
        question: None,
    }
}

/// A tool error (not a protocol error): the model reads the code, the field
/// and the rule, and can correct its call.
fn failure(f: &Failure) -> CallToolResult {
    let mut body = json!({ "error": { "code": f.code, "field": f.field, "message": f.message } });
    if let Some(q) = &f.question {
        body["question"] = summary(q);
    }
    CallToolResult::error(vec![ContentBlock::text(body.to_string())])
}

#[cfg(test)]
mod schema_tests {
    use super::*;
    use qp_core::protocol::{OptionStyle, QuestionState, ResponderScope};

    /// Every description a model reads of the tools (each tool's and each
    /// argument's), in the order the tools are listed.
    fn descriptions() -> Vec<(String, String)> {
        fn walk(v: &Value, at: &str, out: &mut Vec<(String, String)>) {
            match v {
                Value::Object(m) => {
                    for (k, x) in m {
                        match (k.as_str(), x) {
                            ("description", Value::String(d)) => {
                                out.push((at.to_string(), d.clone()))
                            }
                            _ => walk(x, &format!("{at}.{k}"), out),
                        }
                    }
                }
                Value::Array(a) => a.iter().for_each(|x| walk(x, at, out)),
                _ => {}
            }
        }
        let mut out = Vec::new();
        for tool in QpTools::tool_router().list_all() {
            if let Some(d) = &tool.description {
                out.push((tool.name.to_string(), d.to_string()));
            }
            walk(
                &Value::Object((*tool.input_schema).clone()),
                &tool.name,
                &mut out,
            );
        }
        out
    }

    /// The numbers the tools' descriptions quote to a model are the
    /// protocol's and the tools' own constants: each phrase below is
    /// written from them and must be quoted, and a description holding any
    /// other digit fails (a limit typed into the prose drifts when the
    /// constant changes).
    #[test]
    fn every_number_in_a_tool_description_is_a_constant() {
        let phrases = [
            format!("between {} to {} options", l::OPTIONS_MIN, l::OPTIONS_MAX),
            format!("1 to {} characters. Put", l::PROMPT_MAX_CHARS),
            format!("{} to {} buttons", l::OPTIONS_MIN, l::OPTIONS_MAX),
            format!("at most {} characters (a version", l::CONTEXT_MAX_CHARS),
            format!(
                "{} to {} (default {})",
                l::TTL_MIN_SECS,
                l::TTL_MAX_SECS,
                l::TTL_DEFAULT_SECS
            ),
            format!(
                "at most {} characters), echoed",
                l::CORRELATION_ID_MAX_CHARS
            ),
            format!("at most {} KiB", l::DATA_MAX_BYTES / 1024),
            format!("0 to {TOOL_WAIT_MAX_SECS} (default {TOOL_WAIT_DEFAULT_SECS})"),
            format!("1 to {} characters, unique", l::OPTION_VALUE_MAX_CHARS),
            format!(
                "The button's text (1 to {} characters)",
                l::OPTION_LABEL_MAX_CHARS
            ),
            format!("at most {} characters)", l::PLACEHOLDER_MAX_CHARS),
            format!(
                "1 to {} (default {})",
                l::TEXT_MAX_LENGTH_CAP,
                l::TEXT_MAX_LENGTH_CAP
            ),
            format!(
                "1 to {} (default {TOOL_LIST_DEFAULT_LIMIT})",
                l::LIST_MAX_LIMIT
            ),
            format!("the last {} hours", l::LIST_RECENT_WINDOW_SECS / 3600),
            // Not limits: an example room code, and a wait of zero.
            "\"OPS123\"".to_string(),
            "0 returns the current state".to_string(),
        ];
        let all = descriptions();
        assert!(all.len() > 20, "only {} descriptions: {all:?}", all.len());
        let mut unexplained = Vec::new();
        for (at, d) in &all {
            let left = phrases
                .iter()
                .fold(d.clone(), |d, p| d.replace(p.as_str(), "…"));
            if left.chars().any(|c| c.is_ascii_digit()) {
                unexplained.push(format!("{at}: {d:?}"));
            }
        }
        assert!(
            unexplained.is_empty(),
            "numbers not written from a constant (add the phrase, formatted from its constant):\n{}",
            unexplained.join("\n")
        );
        for p in &phrases {
            assert!(
                all.iter().any(|(_, d)| d.contains(p.as_str())),
                "no tool description quotes {p:?}"
            );
        }
    }

    /// The tools' enums take exactly the protocol's words.
    #[test]
    fn the_tool_enums_are_the_protocols() {
        fn names<T: JsonSchema>() -> Vec<String> {
            let v = serde_json::to_value(schemars::schema_for!(T)).unwrap();
            let mut out: Vec<String> = v["oneOf"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|o| o["enum"].as_array().cloned().unwrap_or_default())
                .chain(v["enum"].as_array().cloned().unwrap_or_default())
                .chain(
                    v["oneOf"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|o| o.get("const").cloned()),
                )
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect();
            out.sort();
            out
        }
        let sorted = |mut v: Vec<&str>| {
            v.sort();
            v.into_iter().map(str::to_string).collect::<Vec<_>>()
        };
        assert_eq!(
            names::<StyleArg>(),
            sorted(OptionStyle::ALL.map(OptionStyle::as_str).to_vec())
        );
        assert_eq!(
            names::<ScopeArg>(),
            sorted(ResponderScope::ALL.map(ResponderScope::as_str).to_vec())
        );
        let mut states = QuestionState::ALL.map(QuestionState::as_str).to_vec();
        states.push("all");
        assert_eq!(names::<StateArg>(), sorted(states));
    }
}
