//! The `qp` command line: `serve`, the asker verbs (`ask`, `watch`, `list`,
//! `cancel`) and `admin`.
//!
//! Exit codes: 0 answered (or success), 1 error, 2 usage error, 3 expired,
//! 4 cancelled, 130 interrupted while waiting (the question is left alone).

mod admin;
mod asker;
mod credentials;
mod device;
mod hook;
mod login;
mod login_device;
mod mcp;
pub mod serve;
mod terminal;

use clap::{Parser, Subcommand};

pub const EXIT_OK: i32 = 0;
pub const EXIT_ERROR: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_EXPIRED: i32 = 3;
pub const EXIT_CANCELLED: i32 = 4;
pub const EXIT_INTERRUPTED: i32 = 130;
/// `--print value` only: answered, but with typed text instead of an option.
pub const EXIT_TYPED: i32 = 5;

/// Where the server listens by default, and so where clients look.
pub use qp_core::protocol::limits::DEFAULT_URL;

#[derive(Parser)]
#[command(
    name = "qp",
    version = qp_server::build_info::long_version(),
    about = "Ask a person a question they answer from their phone's lock screen (Question Protocol v1.1)",
    long_about = "qp is both the companion server and its command-line client.\n\n\
        Turn a human decision into a shell gate:\n  \
        if [ \"$(qp ask OPS123 'Deploy to prod?' --yes-no --wait)\" = approve ]; then ./deploy.sh; fi\n\n\
        Exit codes: 0 answered (or success), 1 error, 2 usage error, 3 expired, 4 cancelled,\n\
        5 answered the other way than --print value|text asked for,\n\
        130 interrupted while waiting (the question stays pending; resume with `qp watch ID`)."
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the companion server (HTTP API, expiry sweep, webhooks).
    Serve(Box<serve::ServeArgs>),
    /// Ask a question; prints its id, or with --wait the answer.
    Ask(asker::AskArgs),
    /// Wait for a question to resolve and print the answer (exit code as for ask --wait).
    Watch(asker::WatchArgs),
    /// List this agent's questions, newest first.
    List(asker::ListArgs),
    /// Withdraw a pending question.
    Cancel(asker::CancelArgs),
    /// Manage users, rooms, agents, tokens and webhooks (on the server's database, found by its --config; works while it runs).
    Admin(admin::AdminArgs),
    /// Bring the database's schema up to this qp's (then `qp serve --no-migrate` may start on it).
    Migrate(MigrateArgs),
    /// A phone in the terminal: receive questions as a phone would and answer by key.
    Device(device::DeviceArgs),
    /// Exchange a one-time code (qp admin agent invite) for an agent token, stored for the asker verbs.
    Login(login::LoginArgs),
    /// Serve the MCP tools (ask_question, wait_for_answer, …) on stdin/stdout for an MCP client.
    Mcp(mcp::McpArgs),
    /// A coding agent's PreToolUse hook: the tool call becomes an Allow/Deny question on the phone.
    Hook(hook::HookArgs),
}

#[derive(clap::Args)]
struct MigrateArgs {
    #[command(flatten)]
    server: admin::ServerArgs,
}

/// Parses the arguments, runs the command, and returns the exit code.
pub fn run() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USAGE } else { EXIT_OK };
            let _ = e.print();
            return code;
        }
    };
    match cli.command {
        Command::Admin(args) => admin::run(args),
        Command::Migrate(args) => admin::migrate(&args.server),
        Command::Serve(args) => block_on(serve::run(*args)),
        Command::Ask(args) => block_on(asker::ask(args)),
        Command::Watch(args) => block_on(asker::watch(args)),
        Command::List(args) => block_on(asker::list(args)),
        Command::Cancel(args) => block_on(asker::cancel(args)),
        Command::Device(args) => block_on_reading_stdin(device::run(args)),
        Command::Login(args) => block_on(login::run(args)),
        Command::Mcp(args) => block_on(mcp::run(args)),
        Command::Hook(args) => block_on(hook::run(args)),
    }
}

/// [`block_on`] for a command that reads stdin: a read still waiting on an
/// open stdin (a blocking thread) would hold the runtime's shutdown, and so
/// the exit, until the next line came; the process is exiting, so it is
/// left behind.
fn block_on_reading_stdin(fut: impl std::future::Future<Output = i32>) -> i32 {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => {
            let code = rt.block_on(fut);
            rt.shutdown_background();
            code
        }
        Err(e) => {
            eprintln!("qp: cannot start the async runtime: {e}");
            EXIT_ERROR
        }
    }
}

fn block_on(fut: impl std::future::Future<Output = i32>) -> i32 {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(fut),
        Err(e) => {
            eprintln!("qp: cannot start the async runtime: {e}");
            EXIT_ERROR
        }
    }
}
