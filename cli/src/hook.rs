//! `qp hook`: a coding agent's permission prompt answered on the phone.
//! Reads the hook event on stdin, asks, waits, prints the decision; exits 0
//! whatever happens, and on any problem prints `ask` so the agent's own
//! prompt decides (the hook never approves by itself). The rules are in
//! [`crate::hook`].

use std::io::Read;
use std::time::Duration;

use clap::Args;
use qp_core::protocol::limits::TTL_MIN_SECS;

use super::asker::Connection;
use super::EXIT_OK;
use qp_client::hook::{settings_block, Decision, HookEvent};

use qp_client::PERSON_WAIT_DEFAULT_SECS;
/// The agent kills a hook after its own timeout; ours stays inside it.
const AGENT_TIMEOUT_MARGIN_SECS: u64 = 15;
/// Stdin larger than this is not a hook event (an edit's content is big,
/// but not this big).
const STDIN_MAX_BYTES: u64 = 16 * 1024 * 1024;

#[derive(Args)]
#[command(
    after_help = "Set-up (Claude Code): add the block `qp hook --room OPS123 --print-config`\n\
    prints to .claude/settings.json. Then every matching tool call becomes an Allow/Deny\n\
    question on your phone; a typed reply denies and is passed to the agent as the reason.\n\
    The phone shows every argument that acts (a Write's content too). A call it cannot show\n\
    whole (a secret-looking value masked as •••, a character that shows nothing, or too long)\n\
    says so and offers Deny or \"Decide at the computer\" (the agent's own prompt), never Allow.\n\n\
    The hook prints {\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\",\n\
    \"permissionDecision\": \"allow\"|\"deny\"|\"ask\", …}} and exits 0. It never allows on\n\
    its own: no server, no token, no room, expiry or timeout give \"ask\" (the agent's\n\
    own prompt). Events other than PreToolUse are ignored (nothing printed)."
)]
pub struct HookArgs {
    /// The room's invite code the questions go to.
    #[arg(long, env = "QP_ROOM")]
    room: Option<String>,
    /// Seconds to wait for the answer; the question expires then too.
    #[arg(long, value_name = "SECONDS", default_value_t = PERSON_WAIT_DEFAULT_SECS,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    wait: u64,
    /// Print a settings block for the agent instead of handling an event.
    #[arg(long)]
    print_config: bool,
    #[command(flatten)]
    conn: Connection,
}

pub async fn run(a: HookArgs) -> i32 {
    if a.print_config {
        let mut command = String::from("qp hook");
        if let Some(room) = a.room.as_deref().filter(|r| !r.is_empty()) {
            command.push_str(&format!(" --room {room}"));
        }
        if a.wait != PERSON_WAIT_DEFAULT_SECS {
            command.push_str(&format!(" --wait {}", a.wait));
        }
        let block = settings_block(&command, a.wait + AGENT_TIMEOUT_MARGIN_SECS);
        println!(
            "{}",
            serde_json::to_string_pretty(&block).unwrap_or_default()
        );
        return EXIT_OK;
    }
    let mut stdin = Vec::new();
    if let Err(e) = std::io::stdin()
        .take(STDIN_MAX_BYTES)
        .read_to_end(&mut stdin)
    {
        return emit(Decision::ask(format!("qp hook could not read stdin: {e}")));
    }
    let event = match HookEvent::parse(&stdin) {
        Ok(e) => e,
        Err(why) => return emit(Decision::ask(format!("qp hook: {why}"))),
    };
    if !event.is_decided() {
        return EXIT_OK;
    }
    emit(decide(&a, &event).await)
}

async fn decide(a: &HookArgs, event: &HookEvent) -> Decision {
    let Some(room) = a.room.as_deref().filter(|r| !r.trim().is_empty()) else {
        return Decision::ask("qp hook: no room; pass --room or set QP_ROOM");
    };
    let client = match a.conn.resolve() {
        Ok(c) => c,
        Err((_, why)) => return Decision::ask(format!("qp hook: {why}")),
    };
    let ttl = (a.wait as i64).max(TTL_MIN_SECS);
    let asked = event.question(ttl);
    let q = match client.ask(room, &asked.ask).await {
        Ok(q) => q,
        Err(e) => return Decision::ask(format!("qp hook could not ask: {e}")),
    };
    let q = match client
        .await_within(&q.id, Duration::from_secs(a.wait))
        .await
    {
        Ok(q) => q,
        Err(e) => return Decision::ask(format!("qp hook lost the question {}: {e}", q.id)),
    };
    if !q.state.is_terminal() {
        // Withdraw it, so the phone stops offering a choice nobody reads.
        let _ = client.cancel(&q.id).await;
    }
    Decision::from_question(&q, asked.allow_offered)
}

fn emit(d: Decision) -> i32 {
    if d.permission == "ask" {
        eprintln!("{}", d.reason);
    }
    println!("{}", d.to_json());
    EXIT_OK
}
