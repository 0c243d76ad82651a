//! `qp login CODE`: an agent's machine exchanges a one-time code (from
//! `qp admin agent invite`) for its own agent token, stored owner-only in the
//! user's config directory (see `credentials`). `qp ask` and the other asker
//! verbs then need no `QP_TOKEN`.
//!
//! `qp login --url URL [--as USER] [--room CODE]` without a code: the
//! device authorization grant (RFC 8628): the server asks the person on
//! their phone, this polls until they tap Allow (or Deny), and the token
//! lands in the same place.

use clap::Args;
use qp_core::pairing::parse_pair_input;
use serde_json::{json, Value};

use super::credentials::{self, Credential};
use super::{DEFAULT_URL, EXIT_ERROR, EXIT_OK, EXIT_USAGE};

#[derive(Args)]
#[command(
    after_help = "The operator runs `qp admin agent invite AGENT` and hands you the code.\n\
    Without a code, the person named by --as (else the server's default owner,\n\
    `qp serve --default-owner`, else its only person) is asked on their phone;\n\
    tap Allow there and this signs in.\n\
    The token is stored in $QP_CONFIG_DIR, $XDG_CONFIG_HOME/qp or ~/.config/qp\n\
    (credentials.json, readable by you only); QP_TOKEN, when set, still wins."
)]
pub struct LoginArgs {
    /// The code (K7QD-8M3X-PA2F-9TRV), or a pairing link that carries the server;
    /// none: ask the person on their phone (device authorization).
    code: Option<String>,
    /// Without a code: the person to ask (user id or name) [default: the server's default owner, else its only person].
    #[arg(long = "as", value_name = "USER")]
    as_user: Option<String>,
    /// Without a code: the room the agent may ask in (its code, id or name) [default: the person's only room].
    #[arg(long)]
    room: Option<String>,
    /// Server URL (when the code alone was given).
    #[arg(long, env = "QP_URL", default_value = DEFAULT_URL)]
    url: String,
    /// A name for this token in `qp admin token list`; without a code, also the agent's name, shown on the phone (one line of at most 60 characters, no quotation marks).
    #[arg(long, default_value = "qp login")]
    label: String,
    /// A CA certificate (PEM) to trust besides the system's (a private CA).
    #[arg(long, env = "QP_CA_CERT")]
    ca_cert: Option<std::path::PathBuf>,
}

pub async fn run(args: LoginArgs) -> i32 {
    let Some(code) = args.code.clone() else {
        return super::login_device::run(
            args.url.trim_end_matches('/'),
            &args.label,
            args.as_user.as_deref(),
            args.room.as_deref(),
            args.ca_cert.as_deref(),
        )
        .await;
    };
    let link = match parse_pair_input(&code) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("qp login: {e}");
            return EXIT_USAGE;
        }
    };
    let url = link
        .server_url
        .clone()
        .unwrap_or_else(|| args.url.trim_end_matches('/').to_string());
    let http = match qp_client::ExtraCa::read(args.ca_cert.as_deref())
        .and_then(|ca| ca.client(std::time::Duration::from_secs(15)))
    {
        Ok(h) => h,
        Err(e) => {
            eprintln!("qp login: {e}");
            return EXIT_ERROR;
        }
    };
    let resp = http
        .post(format!("{url}/api/agent/login"))
        .json(&json!({ "code": link.code, "label": args.label }))
        .send()
        .await;
    let resp = match resp {
        Ok(r) => r,
        Err(e) => {
            eprintln!("qp login: cannot reach {url}: {}", e.without_url());
            return EXIT_ERROR;
        }
    };
    let status = resp.status();
    let body: Value = resp.json().await.unwrap_or_default();
    if !status.is_success() {
        eprintln!(
            "qp login: {}",
            body["message"].as_str().unwrap_or(status.as_str())
        );
        return EXIT_ERROR;
    }
    let credential = Credential {
        url: url.clone(),
        token: body["token"].as_str().unwrap_or_default().to_string(),
        agent_id: body["agent"]["id"].as_str().unwrap_or_default().to_string(),
        agent_name: body["agent"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    };
    match credentials::save(&credential) {
        Ok(path) => {
            println!(
                "signed in as {} ({}) on {url}; token stored in {}",
                credential.agent_name,
                credential.agent_id,
                path.display()
            );
            EXIT_OK
        }
        Err(e) => {
            eprintln!("qp login: cannot store the token: {e}");
            EXIT_ERROR
        }
    }
}
