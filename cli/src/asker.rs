//! `qp ask`, `qp watch`, `qp list`, `qp cancel`: the asker side, over HTTP.

use clap::Args;
use qp_client::{AskerClient, ClientError, ExtraCa};
use qp_core::protocol::ask::AskTextInput;
use qp_core::protocol::{
    AskOption, AskRequest, OptionStyle, Question, QuestionState, ResponderScope,
};
use serde_json::{Map, Value};

use super::terminal::safe;
use super::{
    EXIT_CANCELLED, EXIT_ERROR, EXIT_EXPIRED, EXIT_INTERRUPTED, EXIT_OK, EXIT_TYPED, EXIT_USAGE,
};

#[derive(Args, Clone)]
pub struct Connection {
    /// Server URL [default: the one `qp login` stored, else http://127.0.0.1:8750].
    #[arg(long, env = "QP_URL")]
    url: Option<String>,
    /// Agent token (qpa_…) [default: the one `qp login` stored, sent only to the server it came from].
    #[arg(long, env = "QP_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// A CA certificate (PEM) to trust besides the system's, for an https:// server with a private CA.
    #[arg(long, env = "QP_CA_CERT")]
    ca_cert: Option<std::path::PathBuf>,
}

impl Connection {
    /// The client, or a sentence saying what is missing.
    pub(super) fn resolve(&self) -> Result<AskerClient, (i32, String)> {
        let given = |v: &Option<String>| v.clone().filter(|s| !s.is_empty());
        let (url, token) = credential_for(
            given(&self.url),
            given(&self.token),
            super::credentials::load(),
        )?;
        let ca = ExtraCa::read(self.ca_cert.as_deref()).map_err(|e| (EXIT_USAGE, e.to_string()))?;
        AskerClient::with_ca(&url, &token, &ca).map_err(|e| (EXIT_ERROR, e.to_string()))
    }

    fn client(&self) -> Result<AskerClient, i32> {
        self.resolve().map_err(|(code, message)| {
            eprintln!("qp: {message}");
            code
        })
    }
}

/// The server URL and token to use: the given ones, else what `qp login`
/// stored. A stored token is sent only to the origin it was issued for: a
/// URL from `--url`/`QP_URL` elsewhere (a typo, a hostile environment)
/// needs its own token, or the token would go to whoever listens there.
fn credential_for(
    url: Option<String>,
    token: Option<String>,
    stored: Option<super::credentials::Credential>,
) -> Result<(String, String), (i32, String)> {
    if let Some(token) = token {
        let url = url
            .or_else(|| stored.map(|c| c.url))
            .unwrap_or_else(|| super::DEFAULT_URL.to_string());
        return Ok((url, token));
    }
    let Some(stored) = stored else {
        return Err((
            EXIT_USAGE,
            "no agent token; pass --token, set QP_TOKEN, or run `qp login CODE`".into(),
        ));
    };
    match url {
        Some(url) if !same_origin(&url, &stored.url) => Err((
            EXIT_USAGE,
            format!(
                "the token `qp login` stored is for {}, not {}: it is never sent elsewhere; \
                 pass --token or set QP_TOKEN for that server, or run `qp login CODE --url {}`",
                origin_of(&stored.url),
                origin_of(&url),
                origin_of(&url),
            ),
        )),
        _ => Ok((stored.url, stored.token)),
    }
}

/// Scheme, host and port equal (default ports filled in); a URL that does
/// not parse matches nothing.
fn same_origin(a: &str, b: &str) -> bool {
    match (reqwest::Url::parse(a), reqwest::Url::parse(b)) {
        (Ok(a), Ok(b)) => a.origin() == b.origin() && a.origin().is_tuple(),
        _ => false,
    }
}

/// `https://host:port` of a URL, for messages (never its path or query).
fn origin_of(url: &str) -> String {
    reqwest::Url::parse(url)
        .map(|u| u.origin().ascii_serialization())
        .unwrap_or_else(|_| "an unreadable URL".into())
}

#[derive(Args)]
#[command(after_help = "Examples:\n  \
    qp ask OPS123 'Deploy v1.4 to prod?' --yes-no --wait\n  \
    qp ask OPS123 'Which environment?' --scope room --option staging --option prod:Production:primary\n  \
    qp ask OPS123 'Why hold the release?' --text 'Type a reason' --wait\n\n\
    With --wait: prints the chosen value (or the typed text) and exits 0 when answered,\n\
    3 when expired, 4 when cancelled, 1 on error, 2 on usage error; with --print value,\n\
    a typed answer prints nothing and exits 5 (a gate never mistakes typed text for an option).")]
#[allow(rustdoc::broken_intra_doc_links)]
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
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(
        ResponderScope::ALL.map(ResponderScope::as_str)))]
    scope: Option<String>,
    /// The user a direct question goes to (default: the agent's owner).
    #[arg(long, value_name = "USER_ID")]
    to: Option<String>,
    /// Seconds until the question expires (server clamps to 30..604800; default 3600).
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
    github: GithubArgs,
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
    let asked = match client.ask_counted(&room, &req).await {
        Ok(a) => a,
        Err(e) => return report(&e),
    };
    if asked.pushed_to_devices == Some(0) {
        // On stderr: stdout stays the id (or the answer) scripts read.
        eprintln!("qp ask: warning: {}", qp_server::app::NO_DEVICE_WARNING);
    }
    let q = &asked.question;
    if !a.wait {
        if a.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&asked).unwrap_or_default()
            );
        } else {
            println!("{}", q.id);
        }
        return match a.github.write(q) {
            Ok(()) => EXIT_OK,
            Err(e) => {
                eprintln!("qp: {e}");
                EXIT_ERROR
            }
        };
    }
    let mode = if a.json { PrintMode::Json } else { a.print };
    await_and_print(&client, &q.id, mode, &a.github).await
}

/// Waits (Ctrl-C leaves the question alone) and prints the outcome.
async fn await_and_print(
    client: &AskerClient,
    id: &str,
    mode: PrintMode,
    github: &GithubArgs,
) -> i32 {
    let result = tokio::select! {
        r = client.await_resolution(id) => r,
        _ = tokio::signal::ctrl_c() => {
            eprintln!("qp: stopped waiting; question {id} is still pending. Resume with: qp watch {id}");
            return EXIT_INTERRUPTED;
        }
    };
    match result {
        Ok(q) => {
            let code = print_outcome(&q, mode);
            match github.write(&q) {
                Ok(()) => code,
                Err(e) => {
                    eprintln!("qp: {e}");
                    EXIT_ERROR
                }
            }
        }
        Err(e) => report(&e),
    }
}

/// GitHub Actions: the outcome as step outputs and a summary line.
#[derive(Args, Clone)]
pub struct GithubArgs {
    /// Append id, state, value, label, text, responder and responder_id as step outputs to FILE
    /// [default: $GITHUB_OUTPUT, set by GitHub Actions].
    #[arg(long, value_name = "FILE")]
    github_output: Option<std::path::PathBuf>,
    /// Append a one-line Markdown summary of the outcome to FILE [default: $GITHUB_STEP_SUMMARY].
    #[arg(long, value_name = "FILE")]
    github_summary: Option<std::path::PathBuf>,
}

impl GithubArgs {
    /// Appends the outputs and the summary, when their files are given
    /// (an empty variable, as outside Actions, writes nothing).
    fn write(&self, q: &Question) -> Result<(), String> {
        // The flag, else the runner's variable; empty (as outside Actions) is none.
        let given = |p: &Option<std::path::PathBuf>, var: &str| {
            p.clone()
                .or_else(|| std::env::var_os(var).map(std::path::PathBuf::from))
                .filter(|p| !p.as_os_str().is_empty())
        };
        if let Some(path) = given(&self.github_output, "GITHUB_OUTPUT") {
            append(&path, github_outputs(q).as_bytes())
                .map_err(|e| format!("cannot write --github-output {}: {e}", path.display()))?;
        }
        if let Some(path) = given(&self.github_summary, "GITHUB_STEP_SUMMARY") {
            append(&path, format!("{}\n", github_summary(q)).as_bytes())
                .map_err(|e| format!("cannot write --github-summary {}: {e}", path.display()))?;
        }
        Ok(())
    }
}

fn append(path: &std::path::Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.write_all(data)
}

/// The step outputs in `$GITHUB_OUTPUT`'s syntax. Every value is written as
/// `name<<DELIMITER` … `DELIMITER` with a delimiter that occurs in none of
/// them, so a typed answer can never end its value early and set another
/// output (`approve\nvalue=approve`).
fn github_outputs(q: &Question) -> String {
    let a = q.answer.as_ref();
    let fields: [(&str, &str); 7] = [
        ("id", &q.id),
        ("state", q.state.as_str()),
        ("value", a.and_then(|a| a.value.as_deref()).unwrap_or("")),
        ("label", a.and_then(|a| a.label.as_deref()).unwrap_or("")),
        ("text", a.and_then(|a| a.text.as_deref()).unwrap_or("")),
        (
            "responder",
            a.map(|a| a.responder.display_name.as_str()).unwrap_or(""),
        ),
        (
            "responder_id",
            a.map(|a| a.responder.id.as_str()).unwrap_or(""),
        ),
    ];
    let mut delimiter = format!("QP_EOF_{}", q.id);
    while fields.iter().any(|(_, v)| v.contains(&delimiter)) {
        delimiter.push('_');
    }
    fields
        .iter()
        .map(|(name, value)| format!("{name}<<{delimiter}\n{value}\n{delimiter}\n"))
        .collect()
}

/// One Markdown line for `$GITHUB_STEP_SUMMARY`. What others wrote (the
/// prompt, the answer, the name) is escaped, so it shows as text and never
/// as Markdown or HTML.
fn github_summary(q: &Question) -> String {
    let prompt = markdown_text(&q.prompt);
    match (&q.state, &q.answer) {
        (QuestionState::Answered, Some(a)) => {
            let what = match (&a.label, &a.text) {
                (Some(label), _) => format!("**{}**", markdown_text(label)),
                (None, Some(text)) => format!("typed \"{}\"", markdown_text(text)),
                _ => String::new(),
            };
            // 💬, not ✅: "Deny" is an answer too, and the step's success
            // is the workflow's to decide from the `value` output.
            format!(
                "💬 {prompt}: {what} by {} at {} (`{}`)",
                markdown_text(&a.responder.display_name),
                qp_core::protocol::time::format(&a.answered_at),
                q.id
            )
        }
        (QuestionState::Expired, _) => format!("⏰ {prompt}: expired with no answer (`{}`)", q.id),
        (QuestionState::Cancelled, _) => format!("🚫 {prompt}: cancelled (`{}`)", q.id),
        _ => format!("⏳ {prompt}: pending (`{}`)", q.id),
    }
}

/// Text made inert for Markdown: one line, control characters as spaces,
/// Markdown's punctuation escaped and `<`, `>`, `&` as entities.
fn markdown_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '*' | '_' | '{' | '}' | '[' | ']' | '(' | ')' | '#' | '+' | '-' | '.'
            | '!' | '|' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
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
    github: GithubArgs,
    #[command(flatten)]
    conn: Connection,
}

pub async fn watch(a: WatchArgs) -> i32 {
    let mode = if a.json { PrintMode::Json } else { a.print };
    match a.conn.client() {
        Ok(client) => await_and_print(&client, &a.id, mode, &a.github).await,
        Err(code) => code,
    }
}

#[derive(Args)]
pub struct ListArgs {
    /// pending, answered, expired, cancelled or all (default: the last 24 hours).
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(
        QuestionState::ALL.map(QuestionState::as_str).into_iter().chain(["all"])))]
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

#[cfg(test)]
mod tests {
    use super::super::credentials::Credential;
    use super::*;

    /// The limits `qp ask --help` quotes are the protocol's (they drifted
    /// once: the help said ttl clamps to 60, the rule is 30).
    #[test]
    fn the_help_quotes_the_protocols_limits() {
        use clap::{Args as _, Command};
        use qp_core::protocol::limits as l;
        let mut cmd = AskArgs::augment_args(Command::new("ask"));
        let help = cmd.render_long_help().to_string();
        for quoted in [
            format!(
                "clamps to {}..{}; default {}",
                l::TTL_MIN_SECS,
                l::TTL_MAX_SECS,
                l::TTL_DEFAULT_SECS
            ),
            format!(
                "Longest typed answer, 1 to {} (default {})",
                l::TEXT_MAX_LENGTH_CAP,
                l::TEXT_MAX_LENGTH_CAP
            ),
            format!("at most {} characters", l::CONTEXT_MAX_CHARS),
            format!("else {}]", l::DEFAULT_URL),
        ] {
            assert!(
                help.contains(&quoted),
                "qp ask --help lacks {quoted:?}:\n{help}"
            );
        }
    }

    fn stored(url: &str) -> Option<Credential> {
        Some(Credential {
            url: url.into(),
            token: "qpa_stored".into(),
            agent_id: "a_1".into(),
            agent_name: "CI".into(),
        })
    }

    #[test]
    fn a_stored_token_goes_only_to_its_own_origin() {
        let s = |u: &str| Some(u.to_string());
        let ok = |url: &str| Ok((url.to_string(), "qpa_stored".to_string()));
        let refused = |url: Option<String>, login: &str| {
            credential_for(url, None, stored(login)).map_err(|(code, _)| code)
        };
        let cases = [
            // Same origin, however written: the stored token.
            (
                s("https://qp.example.com"),
                "https://qp.example.com",
                ok("https://qp.example.com"),
            ),
            (
                s("https://qp.example.com:443/"),
                "https://qp.example.com",
                ok("https://qp.example.com"),
            ),
            (
                s("HTTPS://QP.example.com"),
                "https://qp.example.com",
                ok("https://qp.example.com"),
            ),
            (None, "http://127.0.0.1:8750", ok("http://127.0.0.1:8750")),
        ];
        for (url, login, want) in cases {
            assert_eq!(
                credential_for(url.clone(), None, stored(login)),
                want,
                "{url:?}"
            );
        }
        for (url, login) in [
            ("http://127.0.0.1:9999", "http://127.0.0.1:8750"), // another port
            ("http://qp.example.com", "https://qp.example.com"), // another scheme
            ("https://qp.example.com.evil.net", "https://qp.example.com"),
            ("https://evil.net#@qp.example.com", "https://qp.example.com"),
            ("not a url", "https://qp.example.com"),
        ] {
            assert_eq!(refused(s(url), login), Err(EXIT_USAGE), "{url}");
        }
        let (_, message) = credential_for(
            s("http://127.0.0.1:9999/x?y"),
            None,
            stored("http://127.0.0.1:8750"),
        )
        .unwrap_err();
        assert!(
            message.contains("http://127.0.0.1:8750") && message.contains("http://127.0.0.1:9999"),
            "{message}"
        );
        assert!(!message.contains("qpa_stored"), "{message}");
        // A token given explicitly goes where it is told.
        assert_eq!(
            credential_for(
                s("http://127.0.0.1:9999"),
                s("qpa_given"),
                stored("http://127.0.0.1:8750")
            ),
            Ok(("http://127.0.0.1:9999".into(), "qpa_given".into()))
        );
    }
}
