//! `qp mcp`: the MCP tools over stdio (see [`qp_server::mcp`]). Stdout carries
//! the protocol only; anything for a person goes to stderr.

use clap::Args;

use super::asker::Connection;
use super::{EXIT_ERROR, EXIT_OK};

#[derive(Args)]
#[command(
    after_help = "An MCP client starts it as a command, for example (Claude Code):\n  \
    claude mcp add qp --env QP_URL=https://qp.example.com --env QP_TOKEN=qpa_… -- qp mcp\n\
    or in a client's JSON settings:\n  \
    {\"mcpServers\": {\"qp\": {\"command\": \"qp\", \"args\": [\"mcp\"],\n   \
    \"env\": {\"QP_URL\": \"https://qp.example.com\", \"QP_TOKEN\": \"qpa_…\"}}}}\n\
    Clients that speak HTTP can use the server's own endpoint instead: <QP_URL>/mcp\n\
    with the header Authorization: Bearer <agent token>."
)]
pub struct McpArgs {
    #[command(flatten)]
    conn: Connection,
}

pub async fn run(a: McpArgs) -> i32 {
    let client = match a.conn.resolve() {
        Ok(c) => c,
        Err((code, why)) => {
            eprintln!("qp mcp: {why}");
            return code;
        }
    };
    match qp_server::mcp::serve_stdio(client).await {
        Ok(()) => EXIT_OK,
        Err(why) => {
            eprintln!("qp mcp: {why}");
            EXIT_ERROR
        }
    }
}
