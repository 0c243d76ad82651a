//! `qp ask`, `qp watch`, `qp list`, `qp cancel`: the asker side, over HTTP.

use clap::Args;
use qp_core::protocol::ask::AskTextInput;
use qp_core::protocol::{
    AskOption, AskRequest, OptionStyle, Question, QuestionState, ResponderScope,
};
use serde_json::{Map, Value};

use super::terminal::safe;
use super::{
    EXIT_CANCELLED, EXIT_ERROR, EXIT_EXPIRED, EXIT_INTERRUPTED, EXIT_OK, EXIT_TYPED, EXIT_USAGE,
};
use crate::client::{AskerClient, ClientError, ExtraCa};

#[derive(Args, Clone)]
pub struct Connection {
    /// Server URL [default: the one `qp login` stored, else http://127.0.0.1:8750].
    #[arg(long, env = "QP_URL")]
    url: Option<String>,
    /// Agent token (qpa_…) [default: the one `qp login` stored].
    #[arg(long, env = "QP_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// A CA certificate (PEM) to trust besides the system's, for an https:// server with a private CA.
    #[arg(long, env = "QP_CA_CERT")]
    ca_cert: Option<std::path::PathBuf>,
}

impl Connection {
    /// The client, or a sentence saying what is missing.
    pub(super) fn resolve(&self) -> Result<AskerClient, (i32, String)> {
        let stored = super::credentials::load();
        let token = self
            .token
            .clone()
            .filter(|t| !t.is_empty())
            .or_else(|| stored.as_ref().map(|c| c.token.clone()));
        let Some(token) = token else {
            return Err((
                EXIT_USAGE,
                "no agent token; pass --token, set QP_TOKEN, or run `qp login CODE`".into(),
            ));
        };
        let url = self
            .url
            .clone()
            .filter(|u| !u.is_empty())
            .or_else(|| stored.map(|c| c.url))
            .unwrap_or_else(|| super::DEFAULT_URL.to_string());
        let ca = ExtraCa::read(self.ca_cert.as_deref()).map_err(|e| (EXIT_USAGE, e))?;
        AskerClient::with_ca(&url, &token, &ca).map_err(|e| (EXIT_ERROR, e.to_string()))
    }

    fn client(&self) -> Result<AskerClient, i32> {
        self.resolve().map_err(|(code, message)| {
            eprintln!("qp: {message}");
            code
        })
    }
}

#[derive(Args)]
#[command(after_help = "Examples:\n  \
    qp ask OPS123 'Deploy v1.4 to prod?' --yes-no --wait\n  \
    qp ask OPS123 'Which environment?' --scope room --option staging --option prod:Production:primary\n  \
    qp ask OPS123 'Why hold the release?' --text 'Type a reason' --wait\n\n\
    With --wait: prints the chosen value (or the typed text) and exits 0 when answered,\n\
    3 when expired, 4 when cancelled, 1 on error, 2 on usage error; with --print value,\n\
    a typed answer prints nothing and exits 5 (a gate never mistakes typed text for an option).")]
pub struct AskArgs {
    /// [ROOM] PROMPT: the room's invite code (or --room / QP_ROOM) and the question.
    #[arg(required = true, num_args = 1..=2, value_name = "ROOM PROMPT")]
    args: Vec<String>,
    /// Room invite code when only PROMPT is given.
    #[arg(long, env = "QP_ROOM")]
    room: Option<String>,
    /// An option as value[:label[:style]], style primary|danger|default; repeat 2 to 4 times, in button order.
    #[arg(
        long = "option",
        value_name = "VALUE[:LABEL[:STYLE]]",
        conflicts_with = "yes_no"
    )]
    options: Vec<String>,
    /// The approve/deny question (the default when no --option and no --text).
    #[arg(long)]
    yes_no: bool,
    /// Invite a typed answer, with an optional placeholder.
    #[arg(long, value_name = "PLACEHOLDER", num_args = 0..=1, default_missing_value = "")]
    text: Option<String>,
    /// Longest typed answer, 1 to 60 (default 60).
    #[arg(long, value_name = "N", requires = "text")]
    text_max: Option<i64>,
    /// Who may answer: direct (one person, default) or room (anyone in the room).
    #[arg(long, value_parser = ["direct", "room"])]
    scope: Option<String>,
    /// The user a direct question goes to (default: the agent's owner).
    #[arg(long, value_name = "USER_ID")]
    to: Option<String>,
    /// Seconds until the question expires (server clamps to 60..604800; default 3600).
    #[arg(long, value_name = "SECONDS")]
    ttl: Option<i64>,
    /// A short secondary line (at most 40 characters).
    #[arg(long)]
    context: Option<String>,
    /// Your id for this question, echoed on every result and webhook.
    #[arg(long)]
    correlation_id: Option<String>,
    /// A routing pointer, echoed back.
    #[arg(long)]
    reply_to: Option<String>,
    /// A JSON object echoed back to you (never shown to the person).
    #[arg(long, value_name = "JSON")]
    data: Option<String>,
    /// Print the whole question as JSON instead of the id / the answer.
    #[arg(long)]
    json: bool,
    /// Block until the question resolves; print the answer.
    #[arg(long)]
    wait: bool,
    /// With --wait, what to print when answered: auto (the value, or the typed
    /// text), value (a typed answer exits 5), text (a tapped option exits 5), json.
    #[arg(long, value_enum, default_value = "auto", requires = "wait")]
    print: PrintMode,
    #[command(flatten)]
    conn: Connection,
}

/// `value[:label[:style]]` -> an ask option.
fn parse_option(spec: &str) -> Result<AskOption, String> {
    let mut parts = spec.splitn(3, ':');
    let value = parts.next().unwrap_or_default().to_string();
    let label = parts.next().map(str::to_string).filter(|l| !l.is_empty());
    let style = match parts.next() {
        None | Some("") => None,
        Some(s) => Some(OptionStyle::parse(s).ok_or_else(|| {
            format!("--option {spec:?}: style must be primary, danger or default, got {s:?}")
        })?),
    };
    if label.is_none() && style.is_none() {
        Ok(AskOption::Bare(value))
    } else {
        Ok(AskOption::Full {
            value,
            label,
            style,
        })
    }
}

fn build_request(a: &AskArgs, prompt: &str) -> Result<AskRequest, String> {
    let options = if a.options.is_empty() {
        None
    } else {
        Some(
            a.options
                .iter()
                .map(|o| parse_option(o))
                .collect::<Result<Vec<_>, _>>()?,
        )
    };
    let data = match &a.data {
        None => None,
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => Some(m),
            Ok(_) => return Err("--data must be a JSON object, like '{\"commit\":\"abc\"}'".into()),
            Err(e) => return Err(format!("--data is not valid JSON: {e}")),
        },
    };
    Ok(AskRequest {
        prompt: prompt.to_string(),
        context: a.context.clone(),
        options,
        text_input: a.text.as_ref().map(|p| AskTextInput {
            placeholder: Some(p.clone()).filter(|p| !p.is_empty()),
            max_length: a.text_max,
        }),
        responder_scope: a.scope.as_deref().map(|s| {
            if s == "room" {
                ResponderScope::Room
            } else {
                ResponderScope::Direct
            }
        }),
        target_user_id: a.to.clone(),
        ttl: a.ttl,
        correlation_id: a.correlation_id.clone(),
        reply_to: a.reply_to.clone(),
        data: data.map(|m: Map<String, Value>| m),
    })
}

fn report(e: &ClientError) -> i32 {
    eprintln!("qp: {e}");
    EXIT_ERROR
}

pub async fn ask(a: AskArgs) -> i32 {
    let (room, prompt) = match (a.args.as_slice(), &a.room) {
        ([room, prompt], _) => (room.clone(), prompt.clone()),
        ([prompt], Some(room)) => (room.clone(), prompt.clone()),
        _ => {
            eprintln!("qp ask: give ROOM PROMPT, or set --room / QP_ROOM and give PROMPT");
            return EXIT_USAGE;
        }
    };
    let req = match build_request(&a, &prompt) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("qp ask: {e}");
            return EXIT_USAGE;
        }
    };
    let client = match a.conn.client() {
        Ok(c) => c,
        Err(code) => return code,
    };
    let q = match client.ask(&room, &req).await {
        Ok(q) => q,
        Err(e) => return report(&e),
    };
    if !a.wait {
        if a.json {
            println!("{}", serde_json::to_string_pretty(&q).unwrap_or_default());
        } else {
            println!("{}", q.id);
        }
        return EXIT_OK;
    }
    let mode = if a.json { PrintMode::Json } else { a.print };
    await_and_print(&client, &q.id, mode).await
}

/// Waits (Ctrl-C leaves the question alone) and prints the outcome.
async fn await_and_print(client: &AskerClient, id: &str, mode: PrintMode) -> i32 {
    let result = tokio::select! {
        r = client.await_resolution(id) => r,
        _ = tokio::signal::ctrl_c() => {
            eprintln!("qp: stopped waiting; question {id} is still pending. Resume with: qp watch {id}");
            return EXIT_INTERRUPTED;
        }
    };
    match result {
        Ok(q) => print_outcome(&q, mode),
        Err(e) => report(&e),
    }
}

/// stdout: the value or typed text (or the JSON), terminal-safe; exit
/// code: the state.
fn print_outcome(q: &Question, mode: PrintMode) -> i32 {
    if mode == PrintMode::Json {
        println!("{}", serde_json::to_string_pretty(q).unwrap_or_default());
    }
    match q.state {
        QuestionState::Answered => {
            let Some(a) = &q.answer else {
                return EXIT_ERROR;
            };
            let printed = match mode {
                PrintMode::Json => None,
                PrintMode::Auto => a.value.as_deref().or(a.text.as_deref()),
                PrintMode::Value => a.value.as_deref(),
                PrintMode::Text => a.text.as_deref(),
            };
            if let Some(p) = printed {
                println!("{}", safe(p));
            }
            eprintln!(
                "answered by {} ({}) at {}{}",
                safe(&a.responder.display_name),
                a.responder.id,
                qp_core::protocol::time::format(&a.answered_at),
                if a.text.is_some() { ", typed" } else { "" }
            );
            if printed.is_none() && mode != PrintMode::Json {
                EXIT_TYPED
            } else {
                EXIT_OK
            }
        }
        QuestionState::Expired => {
            eprintln!("expired: no answer");
            EXIT_EXPIRED
        }
        QuestionState::Cancelled => {
            eprintln!("cancelled");
            EXIT_CANCELLED
        }
        QuestionState::Pending => EXIT_ERROR,
    }
}

/// What `--wait` / `watch` print on stdout when the question is answered.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PrintMode {
    /// The chosen value, or the typed text (the spec's shell gate).
    Auto,
    /// The chosen value only; a typed answer prints nothing and exits 5, so a
    /// gate never mistakes a typed "approve" for the tapped option.
    Value,
    /// The typed text only; a tapped option prints nothing and exits 5.
    Text,
    /// The whole question as JSON (as --json).
    Json,
}

#[derive(Args)]
pub struct WatchArgs {
    /// The question id (q_…).
    id: String,
    /// Print the whole question as JSON.
    #[arg(long)]
    json: bool,
    /// What to print when answered: auto (value or typed text), value, text, json.
    #[arg(long, value_enum, default_value = "auto")]
    print: PrintMode,
    #[command(flatten)]
    conn: Connection,
}

pub async fn watch(a: WatchArgs) -> i32 {
    let mode = if a.json { PrintMode::Json } else { a.print };
    match a.conn.client() {
        Ok(client) => await_and_print(&client, &a.id, mode).await,
        Err(code) => code,
    }
}

#[derive(Args)]
pub struct ListArgs {
    /// pending, answered, expired, cancelled or all (default: the last 24 hours).
    #[arg(long, value_parser = ["pending", "answered", "expired", "cancelled", "all"])]
    state: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    conn: Connection,
}

pub async fn list(a: ListArgs) -> i32 {
    let client = match a.conn.client() {
        Ok(c) => c,
        Err(code) => return code,
    };
    match client.list(a.state.as_deref()).await {
        Ok(qs) if a.json => {
            println!(
                "{}",
                serde_json::to_string_pretty(&serde_json::json!({ "questions": qs }))
                    .unwrap_or_default()
            );
            EXIT_OK
        }
        Ok(qs) => {
            for q in qs {
                let answer = q
                    .answer
                    .as_ref()
                    .and_then(|a| a.value.clone().or(a.text.clone()))
                    .unwrap_or_default();
                println!(
                    "{}\t{}\t{}\t{}",
                    q.id,
                    q.state.as_str(),
                    safe(&answer),
                    safe(&q.prompt)
                );
            }
            EXIT_OK
        }
        Err(e) => report(&e),
    }
}

#[derive(Args)]
pub struct CancelArgs {
    /// The question id (q_…).
    id: String,
    #[command(flatten)]
    conn: Connection,
}

pub async fn cancel(a: CancelArgs) -> i32 {
    let client = match a.conn.client() {
        Ok(c) => c,
        Err(code) => return code,
    };
    match client.cancel(&a.id).await {
        Ok(q) => {
            println!("{} cancelled", q.id);
            EXIT_OK
        }
        Err(e) => report(&e),
    }
}
