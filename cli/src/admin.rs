//! `qp admin`: users, rooms, memberships, agents, tokens and webhooks, on the
//! server's database directly (like the server, it migrates the file on
//! open), found through the server's own settings (`--config`, the
//! environment, `--db`), while the server runs or not. Created objects are
//! printed as one JSON object; tokens are shown once. Users, rooms and
//! agents are named as a person types them (`identity::find_user`…).

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::json;

use super::{EXIT_ERROR, EXIT_OK, EXIT_USAGE};
use qp_server::app::admin::{self as ops, Step};
use qp_server::app::AppError;
use qp_server::config::{DbArg, PartialSettings, Settings};
use qp_server::pairing;
use qp_server::store::identity::{self, Webhook};
use qp_server::store::invites::{self, InviteKind};
use qp_server::store::offboard::Subject;
use qp_server::store::{self, deliveries, now_secs, StoreError};

#[derive(Args)]
#[command(
    after_help = "Admin commands work on a running server: they read the settings `qp serve` reads \
    (--config, then the QP_* variables, --db over both), so they open the server's database and \
    make links with its public_url. Users, rooms and agents are named by id or name (a room by its \
    code too); a name several match is refused with the matches listed. Exit codes: 0 done, 2 refused \
    for what was typed (a rule broken, a limit reached, a name several match), 1 any other failure."
)]
pub struct AdminArgs {
    #[command(flatten)]
    server: ServerArgs,
    #[command(subcommand)]
    what: What,
}

/// Which server a command works on: its config file and database, read as
/// `qp serve` reads them.
#[derive(Args)]
pub struct ServerArgs {
    /// The server's config file (TOML), the one `qp serve --config` reads:
    /// its db, public_url, listen and TLS settings.
    #[arg(long, env = "QP_CONFIG", global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The server's database: its SQLite file, or its PostgreSQL URL
    /// [default: the config file's db, else qp.sqlite].
    // hide_env_values: --help must not print a password set in QP_DB.
    #[arg(
        long,
        visible_alias = "database",
        env = "QP_DB",
        hide_env_values = true,
        global = true,
        value_name = "FILE|URL",
        value_parser = DbArg
    )]
    db: Option<store::Database>,
}

impl ServerArgs {
    /// The server's settings: `--db` over the environment over the config
    /// file over the defaults, through `qp serve`'s own reading.
    pub fn settings(&self) -> Result<Settings, qp_server::config::ConfigError> {
        let mut flags = super::serve::settings_from_env()?;
        if let Some(db) = &self.db {
            flags.db = Some(db.clone());
        }
        super::serve::given_settings(self.config.as_deref(), flags)?
            .resolve(PartialSettings::default())
    }
}

#[derive(Subcommand)]
enum What {
    /// People who answer questions.
    #[command(subcommand)]
    User(UserCmd),
    /// Rooms, their members and their outgoing webhook.
    #[command(subcommand)]
    Room(RoomCmd),
    /// Agents: askers with a bearer token, bound to an owner and to rooms.
    #[command(subcommand)]
    Agent(AgentCmd),
    /// User tokens for devices.
    #[command(subcommand)]
    Token(TokenCmd),
    /// Phones and terminal devices registered for pushes.
    ///
    /// Each device is tied to the token that registered it: revoking that
    /// token (`token revoke`) removes the device, so it gets no more pushes.
    #[command(subcommand)]
    Device(DeviceCmd),
    /// TLS helpers (no database needed).
    #[command(subcommand)]
    Tls(TlsCmd),
    /// Copy everything from the SQLite file (--db) into an empty PostgreSQL
    /// database, in one transaction, to move a server to PostgreSQL. Stop
    /// `qp serve` first; then start it with `--db postgres://…`.
    CopyToPostgres {
        /// The PostgreSQL database to fill (postgres://user:password@host/db);
        /// its schema is made if missing; it must hold no data.
        url: String,
    },
    /// An online, consistent copy of the SQLite database into FILE while
    /// `qp serve` runs, and of its Web Push key into FILE.vapid-key
    /// (restore: stop the server, put FILE in place of the database and
    /// FILE.vapid-key beside it as DB.vapid-key, start it). On PostgreSQL:
    /// use pg_dump (the message says how).
    Backup {
        /// The copy to write; must not exist.
        file: PathBuf,
    },
    /// Delete finished rows older than AGE now, in small batches, while the
    /// server runs: answered/expired/cancelled questions (with their
    /// answers), sent/failed push jobs, delivered/failed webhook deliveries,
    /// dev-inbox entries, Idempotency-Keys. Pending questions and queued
    /// work are never touched. `qp serve` does the same by its retention
    /// settings (--retention-*-days).
    Purge {
        /// How old, as a number and a unit: 90d, 12h, 2w.
        #[arg(long, value_parser = qp_server::store::retention::parse_age)]
        older_than: std::time::Duration,
        /// Rows per delete statement.
        #[arg(long, default_value_t = 500)]
        batch_size: usize,
    },
    /// Questions, for records: `questions export`.
    #[command(subcommand)]
    Questions(QuestionsCmd),
    /// The audit log: admin actions, pairings, token creation and revocation, with who did them.
    Audit {
        /// Only entries from this long ago (90d, 12h) on [default: all].
        #[arg(long, value_parser = qp_server::store::retention::parse_age)]
        since: Option<std::time::Duration>,
    },
}

#[derive(Subcommand)]
enum QuestionsCmd {
    /// One JSON object per line per question asked since then: room, agent,
    /// state, answer, responder and the responder's devices it was pushed to.
    Export {
        /// How far back: 30d, 12h (questions asked since then).
        #[arg(long, value_parser = qp_server::store::retention::parse_age)]
        since: std::time::Duration,
    },
}

#[derive(Subcommand)]
enum TlsCmd {
    /// Write a throwaway local CA (ca.pem) and a server certificate signed by
    /// it (cert.pem, key.pem) into DIR, for HTTPS on one machine:
    /// `qp serve --tls-cert DIR/cert.pem --tls-key DIR/key.pem`, clients with
    /// `--ca-cert DIR/ca.pem`. Not for production (use ACME or your CA).
    DevCert {
        /// Where to write ca.pem, cert.pem and key.pem (created if missing).
        dir: PathBuf,
        /// Names the certificate is for (DNS names or IP addresses).
        #[arg(long = "name", default_values_t = ["localhost".to_string(), "127.0.0.1".to_string(), "::1".to_string()])]
        names: Vec<String>,
    },
}

#[derive(Subcommand)]
enum UserCmd {
    /// Create a user; prints {"id", "display_name"}.
    Add {
        /// Display name shown with answers ("Approve, by Federica").
        name: String,
        /// A chosen id (u_…); random by default.
        #[arg(long)]
        id: Option<String>,
    },
    /// List users.
    List,
    /// Disable a user (someone leaving, a lost phone): their tokens stop
    /// working at once and their phones get no pushes; `user enable` undoes it.
    Disable {
        /// The user: id or name.
        user: String,
    },
    /// Enable a disabled user again: the tokens they had work again.
    Enable {
        /// The user: id or name.
        user: String,
    },
    /// Remove a user for good: tokens, devices, memberships and open
    /// invites deleted; the user stays listed as disabled, so the questions
    /// they answered keep their name.
    Remove {
        /// The user: id or name.
        user: String,
    },
    /// Create a one-time pairing code for a user's phone; prints the link,
    /// the code and the link as a QR code to scan with the app.
    ///
    /// The link carries --url, else the server's public_url, else its
    /// listen address (https with TLS). A link no phone could follow is
    /// refused: to a wildcard address (0.0.0.0, ::), or to loopback while
    /// the server has a public_url.
    Invite {
        /// The user: id or name.
        user: String,
        /// The URL phones reach the server at (goes into the link)
        /// [default: the server's public_url, else http(s):// + its listen address].
        #[arg(long)]
        url: Option<String>,
        /// How long the code works, in seconds.
        #[arg(long, default_value_t = invites::DEFAULT_TTL_SECS)]
        ttl: i64,
        /// Print {"code", "link", "expires_at"} as JSON, without the QR code.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum RoomCmd {
    /// Create a room; prints {"id", "code", "name"}.
    Add {
        name: String,
        /// Invite code, 3 to 16 letters/digits (random 6 by default).
        #[arg(long)]
        code: Option<String>,
    },
    /// List rooms.
    List,
    /// Add a user to a room (again, to change their role).
    AddMember {
        /// The room: code, id or name.
        room: String,
        /// The user: id or name.
        user: String,
        /// A room admin: may approve agent sign-ins when the server's agent_sign_in is admins. Without it, an ordinary member.
        #[arg(long)]
        admin: bool,
    },
    /// List a room's members.
    Members {
        /// The room: code, id or name.
        room: String,
    },
    /// Take a user out of a room: they no longer see or may answer its questions.
    RemoveMember {
        /// The room: code, id or name.
        room: String,
        /// The user: id or name.
        user: String,
    },
    /// Set (or --clear) the room's outgoing webhook.
    Webhook {
        /// The room: code, id or name.
        room: String,
        /// Receiver URL (http:// or https://).
        #[arg(long, required_unless_present = "clear")]
        url: Option<String>,
        /// HMAC-SHA256 signing secret, at least 16 characters.
        #[arg(
            long,
            required_unless_present = "clear",
            env = "QP_WEBHOOK_SECRET",
            hide_env_values = true
        )]
        secret: Option<String>,
        /// Comma-separated event names to forward (empty: all), e.g. question.answered,question.expired.
        #[arg(long, default_value = "")]
        events: String,
        /// Remove the webhook.
        #[arg(long, conflicts_with_all = ["url", "secret"])]
        clear: bool,
    },
    /// Show the room's webhook deliveries and their state.
    Deliveries {
        /// The room: code, id or name.
        room: String,
    },
}

#[derive(Subcommand)]
enum AgentCmd {
    /// Create an agent; prints {"id", "token", ...}. The token is shown only now.
    Add {
        name: String,
        /// The owning user (id or name); direct questions go to them by default.
        #[arg(long)]
        owner: String,
        /// A room the agent may ask in (code, id or name); repeatable.
        #[arg(long = "room")]
        rooms: Vec<String>,
        /// Comma-separated scopes: ask (create, cancel, read) and/or read.
        #[arg(long, default_value = "ask")]
        scopes: String,
    },
    /// Allow an agent to ask in one more room.
    Allow {
        /// The agent: id or name.
        agent: String,
        /// The room: code, id or name.
        room: String,
    },
    /// Create a one-time code that `qp login CODE` exchanges for a token of
    /// this agent (stored in the user's config directory).
    ///
    /// The URL to log in at is chosen and checked as for `user invite`.
    Invite {
        /// The agent: id or name.
        agent: String,
        /// The server URL `qp login` should use
        /// [default: the server's public_url, else http(s):// + its listen address].
        #[arg(long)]
        url: Option<String>,
        /// How long the code works, in seconds.
        #[arg(long, default_value_t = invites::DEFAULT_TTL_SECS)]
        ttl: i64,
    },
    /// List agents and their rooms.
    List,
    /// Disable an agent: its tokens stop working at once; `agent enable` undoes it.
    Disable {
        /// The agent: id or name.
        agent: String,
    },
    /// Enable a disabled agent again: the tokens it had work again.
    Enable {
        /// The agent: id or name.
        agent: String,
    },
    /// Remove an agent for good: tokens, room grants and open invites
    /// deleted; it stays listed as disabled, so its questions keep their asker.
    Remove {
        /// The agent: id or name.
        agent: String,
    },
}

#[derive(Subcommand)]
enum TokenCmd {
    /// Create a device token for a user; prints {"token", ...}, shown only now.
    Add {
        /// The user: id or name.
        user: String,
        #[arg(long, default_value = "")]
        label: String,
    },
    /// Create an operator token for the admin HTTP endpoints (invites);
    /// prints {"token", ...}, shown only now.
    AddAdmin {
        #[arg(long, default_value = "")]
        label: String,
    },
    /// List tokens: hash prefix, kind, subject, label, created, last used
    /// (tokens themselves are never stored).
    List,
    /// Revoke a token by the hash prefix `token list` shows. The devices it
    /// registered are removed with it: they get no more pushes.
    Revoke { hash_prefix: String },
}

#[derive(Subcommand)]
enum DeviceCmd {
    /// List devices and the token that registered each.
    ///
    /// Columns: id, user, platform, app id, push token (shortened), e2e or
    /// plain (whether pushes to it are end-to-end encrypted), the token that
    /// registered it (the hash prefix `token list` shows; "-" for one
    /// registered before devices were tied to tokens) and when.
    #[command(
        after_help = "Revoking a device's token (`qp admin token revoke PREFIX`) removes it too;\n\
        `qp admin device remove ID` removes one device and leaves its token working."
    )]
    List {
        /// Only this user's devices (id or name).
        #[arg(long)]
        user: Option<String>,
        /// One JSON object per line instead of columns.
        #[arg(long)]
        json: bool,
    },
    /// Remove a device: a lost phone, or one that changed hands.
    ///
    /// Its queued pushes and delivery history go with it, and its push token
    /// may then be registered by another user (until then that is refused).
    /// The user's token keeps working: revoke it too (`token revoke`) to
    /// sign the phone out.
    Remove {
        /// The device id, as `device list` shows it (dev_…).
        id: String,
    },
}

pub fn run(args: AdminArgs) -> i32 {
    if let What::Tls(TlsCmd::DevCert { dir, names }) = &args.what {
        return match dev_cert(dir, names) {
            Ok(()) => EXIT_OK,
            Err(e) => {
                eprintln!("qp admin tls dev-cert: {e}");
                EXIT_ERROR
            }
        };
    }
    let settings = match args.server.settings() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("qp admin: the server's settings: {e}");
            return EXIT_USAGE;
        }
    };
    if let What::CopyToPostgres { url } = &args.what {
        return match copy_to_postgres(&settings.db, url) {
            Ok(out) => {
                println!("{out}");
                EXIT_OK
            }
            Err(e) => {
                eprintln!("qp admin copy-to-postgres: {e}");
                EXIT_ERROR
            }
        };
    }
    if let What::Backup { file } = &args.what {
        return match store::backup::backup(&settings.db, file) {
            Ok(b) => {
                println!("{}", json!(b));
                EXIT_OK
            }
            Err(e) => {
                eprintln!("qp admin backup: {e}");
                EXIT_ERROR
            }
        };
    }
    let conn = match store::connect(&settings.db) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("qp admin: cannot open database {}: {e}", settings.db);
            return EXIT_ERROR;
        }
    };
    if let What::Questions(QuestionsCmd::Export { since }) = &args.what {
        return match export(&*conn, *since) {
            Ok(()) => EXIT_OK,
            Err(e) => {
                eprintln!("qp admin questions export: {e}");
                EXIT_ERROR
            }
        };
    }
    let what = match named(&*conn, args.what) {
        Ok(w) => w,
        Err(e) => return failed(e),
    };
    let what = match what {
        What::User(UserCmd::Invite {
            user,
            url,
            ttl,
            json,
        }) => return invite(&*conn, &settings, InviteKind::User, &user, url, ttl, json),
        What::Agent(AgentCmd::Invite { agent, url, ttl }) => {
            return invite(
                &*conn,
                &settings,
                InviteKind::Agent,
                &agent,
                url,
                ttl,
                false,
            )
        }
        What::Token(TokenCmd::Add { user, label }) => return token_add(&*conn, &user, &label),
        other => other,
    };
    match execute(&*conn, what) {
        Ok(out) => {
            if !out.is_empty() {
                println!("{out}");
            }
            EXIT_OK
        }
        Err(e) => app_failed(e),
    }
}

/// A refused or failed command: its message, and its exit code
/// ([`store_exit_code`]).
fn failed(e: StoreError) -> i32 {
    eprintln!("qp admin: {e}");
    store_exit_code(&e)
}

/// Exit code 2 for what the person typed (a rule broken, a limit reached,
/// a name several match), else 1: the same as the server's rules give
/// through [`app_exit_code`].
fn store_exit_code(e: &StoreError) -> i32 {
    match e {
        StoreError::Invalid(_) | StoreError::Limit { .. } => EXIT_USAGE,
        _ => EXIT_ERROR,
    }
}

/// A command the server's rules refused or that failed there: its message,
/// and its exit code ([`app_exit_code`]).
fn app_failed(e: qp_server::app::AppError) -> i32 {
    eprintln!("qp admin: {e}");
    app_exit_code(&e)
}

/// Exit code 2 for what the person typed (a rule broken, a limit reached:
/// the store's limits arrive as `Invalid`), else 1.
fn app_exit_code(e: &qp_server::app::AppError) -> i32 {
    match e {
        qp_server::app::AppError::Invalid { .. } => EXIT_USAGE,
        _ => EXIT_ERROR,
    }
}

/// `qp admin token add USER`: by the server's rules
/// ([`pairing::create_user_token`]: the user exists, is not disabled, and
/// the audit log records it).
fn token_add(conn: &store::Conn, user: &str, label: &str) -> i32 {
    match pairing::create_user_token(conn, user, label, &store::audit::cli_actor()) {
        Ok(token) => {
            println!(
                "{}",
                json!({ "user_id": user, "label": label, "token": token })
            );
            EXIT_OK
        }
        Err(e) => app_failed(e),
    }
}

/// `what` with every user, room and agent a person named by id (a room by
/// its code, as rooms are listed and audited), through the one lookup rule
/// ([`identity::find_user`]…).
fn named(conn: &store::Conn, what: What) -> Result<What, StoreError> {
    let user = |typed: String| identity::find_user(conn, &typed).map(|u| u.id);
    let room = |typed: String| identity::find_room(conn, &typed).map(|r| r.code);
    let agent = |typed: String| identity::find_agent(conn, &typed).map(|a| a.id);
    Ok(match what {
        What::User(cmd) => What::User(match cmd {
            UserCmd::Disable { user: u } => UserCmd::Disable { user: user(u)? },
            UserCmd::Enable { user: u } => UserCmd::Enable { user: user(u)? },
            UserCmd::Remove { user: u } => UserCmd::Remove { user: user(u)? },
            UserCmd::Invite {
                user: u,
                url,
                ttl,
                json,
            } => UserCmd::Invite {
                user: user(u)?,
                url,
                ttl,
                json,
            },
            other @ (UserCmd::Add { .. } | UserCmd::List) => other,
        }),
        What::Room(cmd) => What::Room(match cmd {
            RoomCmd::AddMember {
                room: r,
                user: u,
                admin,
            } => RoomCmd::AddMember {
                room: room(r)?,
                user: user(u)?,
                admin,
            },
            RoomCmd::Members { room: r } => RoomCmd::Members { room: room(r)? },
            RoomCmd::RemoveMember { room: r, user: u } => RoomCmd::RemoveMember {
                room: room(r)?,
                user: user(u)?,
            },
            RoomCmd::Webhook {
                room: r,
                url,
                secret,
                events,
                clear,
            } => RoomCmd::Webhook {
                room: room(r)?,
                url,
                secret,
                events,
                clear,
            },
            RoomCmd::Deliveries { room: r } => RoomCmd::Deliveries { room: room(r)? },
            other @ (RoomCmd::Add { .. } | RoomCmd::List) => other,
        }),
        What::Agent(cmd) => What::Agent(match cmd {
            AgentCmd::Add {
                name,
                owner,
                rooms,
                scopes,
            } => AgentCmd::Add {
                name,
                owner: user(owner)?,
                rooms: rooms.into_iter().map(room).collect::<Result<_, _>>()?,
                scopes,
            },
            AgentCmd::Allow { agent: a, room: r } => AgentCmd::Allow {
                agent: agent(a)?,
                room: room(r)?,
            },
            AgentCmd::Invite { agent: a, url, ttl } => AgentCmd::Invite {
                agent: agent(a)?,
                url,
                ttl,
            },
            AgentCmd::Disable { agent: a } => AgentCmd::Disable { agent: agent(a)? },
            AgentCmd::Enable { agent: a } => AgentCmd::Enable { agent: agent(a)? },
            AgentCmd::Remove { agent: a } => AgentCmd::Remove { agent: agent(a)? },
            AgentCmd::List => AgentCmd::List,
        }),
        What::Token(TokenCmd::Add { user: u, label }) => What::Token(TokenCmd::Add {
            user: user(u)?,
            label,
        }),
        What::Device(DeviceCmd::List { user: u, json }) => What::Device(DeviceCmd::List {
            user: u.map(user).transpose()?,
            json,
        }),
        other => other,
    })
}

/// `qp admin user invite` and `agent invite`: the link (or `qp login`'s
/// URL) is chosen and checked first, so no code is made that no phone
/// could use; the invite then follows the server's rules
/// ([`pairing::create_invite`]).
fn invite(
    conn: &store::Conn,
    settings: &Settings,
    kind: InviteKind,
    subject_id: &str,
    url: Option<String>,
    ttl: i64,
    as_json: bool,
) -> i32 {
    let base = match pairing::link_base(settings, url.as_deref()) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("qp admin: {e}");
            return EXIT_USAGE;
        }
    };
    let actor = store::audit::cli_actor();
    let inv = match pairing::create_invite(conn, kind, subject_id, ttl, &actor) {
        Ok(inv) => inv,
        Err(e) => return app_failed(e),
    };
    let expires_at = time_of(inv.expires_at);
    let out = match kind {
        InviteKind::User => {
            let link = qp_core::pairing::pair_link(&base, &inv.code);
            if as_json {
                json!({ "code": inv.code, "link": link, "expires_at": expires_at }).to_string()
            } else {
                format!(
                    "Scan with the app, or open on the phone:\n\n{}\n{link}\n\ncode {} (works once, until {expires_at})",
                    qr(&link),
                    inv.code
                )
            }
        }
        InviteKind::Agent => format!(
            "On the agent's machine:\n\n  qp login {} --url {base}\n\n(works once, until {expires_at})",
            inv.code
        ),
    };
    println!("{out}");
    EXIT_OK
}

/// `qp admin --db FILE copy-to-postgres URL`: prints the rows copied per table.
fn copy_to_postgres(from: &store::Database, url: &str) -> Result<String, String> {
    let store::Database::Sqlite(path) = from else {
        return Err("--db must be the SQLite file to copy from".into());
    };
    if !path.exists() {
        return Err(format!("{}: no such file", path.display()));
    }
    let to: store::Database = url.parse().map_err(|e: store::UrlError| e.to_string())?;
    if !matches!(to, store::Database::Postgres(_)) {
        return Err("the target must be a postgres:// URL".into());
    }
    let source = store::connect(from).map_err(|e| format!("{}: {e}", path.display()))?;
    let target = store::connect(&to).map_err(|e| format!("{to}: {e}"))?;
    let copied = store::copy::sqlite_to_postgres(&*source, &*target).map_err(|e| e.to_string())?;
    let tables: serde_json::Map<String, serde_json::Value> = copied
        .into_iter()
        .map(|(table, n)| (table.to_string(), json!(n)))
        .collect();
    Ok(json!({ "from": path, "to": to.to_string(), "copied": tables }).to_string())
}

fn dev_cert(dir: &std::path::Path, names: &[String]) -> Result<(), String> {
    let ca = qp_server::tls::devcert::DevCa::new("qp local development CA")
        .map_err(|e| e.to_string())?;
    let server = ca.server_cert(names).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let write = |name: &str, text: &str, private: bool| -> Result<(), String> {
        let path = dir.join(name);
        let done = if private {
            super::credentials::write_private(&path, text.as_bytes())
        } else {
            std::fs::write(&path, text)
        };
        done.map_err(|e| format!("{}: {e}", path.display()))
    };
    write("ca.pem", &ca.ca_pem, false)?;
    write("cert.pem", &server.cert_pem, false)?;
    write("key.pem", &server.key_pem, true)?;
    println!(
        "{}",
        json!({ "ca": dir.join("ca.pem"), "cert": dir.join("cert.pem"), "key": dir.join("key.pem"), "names": names })
    );
    Ok(())
}

/// `qp admin questions export --since`: JSON lines on stdout, in pages.
fn export(conn: &store::Conn, since: std::time::Duration) -> Result<(), StoreError> {
    use std::io::Write;
    let since = now_secs() - since.as_secs() as i64;
    let mut out = std::io::stdout().lock();
    let mut after = 0;
    loop {
        let page = store::backup::export_questions(conn, since, after, 1000)?;
        for (seq, q) in &page {
            let _ = writeln!(out, "{q}");
            after = *seq;
        }
        if page.len() < 1000 {
            return Ok(());
        }
    }
}

/// A disable/enable/remove result, printed as JSON.
fn changed(
    who: store::offboard::Subject,
    id: &str,
    state: &str,
    c: store::offboard::Changed,
) -> String {
    json!({ who.name(): id, "state": state, "changed": c }).to_string()
}

fn room_id(conn: &store::Conn, code: &str) -> Result<String, StoreError> {
    Ok(identity::require_room(conn, code)?.id)
}

/// A command that needs only the database: each kind to its function.
fn execute(conn: &store::Conn, what: What) -> Result<String, AppError> {
    let actor = &store::audit::cli_actor();
    match what {
        What::User(cmd) => user(actor, conn, cmd),
        What::Room(cmd) => room(actor, conn, cmd),
        What::Agent(cmd) => agent(actor, conn, cmd),
        What::Token(cmd) => token(actor, conn, cmd),
        What::Device(cmd) => device(actor, conn, cmd),
        What::Purge {
            older_than,
            batch_size,
        } => purge(actor, conn, older_than, batch_size),
        What::Audit { since } => Ok(audit(conn, since)?),
        // Handled in `run`.
        What::Tls(_) | What::CopyToPostgres { .. } | What::Backup { .. } | What::Questions(_) => {
            Ok(String::new())
        }
    }
}

/// `qp admin user …`: add, list, disable, enable, remove.
fn user(actor: &str, conn: &store::Conn, cmd: UserCmd) -> Result<String, AppError> {
    Ok(match cmd {
        UserCmd::Add { name, id } => {
            let u = ops::add_user(conn, actor, &name, id.as_deref())?;
            json!({ "id": u.id, "display_name": u.display_name }).to_string()
        }
        UserCmd::List => identity::list_users(conn)?
            .iter()
            .map(|u| format!("{}\t{}", u.id, u.display_name))
            .collect::<Vec<_>>()
            .join("\n"),
        UserCmd::Disable { user } => {
            let c = ops::offboard(conn, actor, Step::Disable, Subject::User, &user)?;
            changed(Subject::User, &user, "disabled", c)
        }
        UserCmd::Enable { user } => {
            let c = ops::offboard(conn, actor, Step::Enable, Subject::User, &user)?;
            changed(Subject::User, &user, "enabled", c)
        }
        UserCmd::Remove { user } => {
            let c = ops::offboard(conn, actor, Step::Remove, Subject::User, &user)?;
            changed(Subject::User, &user, "removed", c)
        }
        // `run` handles invites (app::pairing::create_invite).
        UserCmd::Invite { .. } => String::new(),
    })
}

/// `qp admin room …`: add, list, members, webhook, deliveries.
fn room(actor: &str, conn: &store::Conn, cmd: RoomCmd) -> Result<String, AppError> {
    Ok(match cmd {
        RoomCmd::Add { name, code } => {
            let r = ops::add_room(conn, actor, &name, code.as_deref())?;
            json!({ "id": r.id, "code": r.code, "name": r.name }).to_string()
        }
        RoomCmd::List => identity::list_rooms(conn)?
            .iter()
            .map(|r| {
                let hook = r.webhook.as_ref().map(|w| w.url.as_str()).unwrap_or("-");
                format!("{}\t{}\twebhook: {hook}", r.code, r.name)
            })
            .collect::<Vec<_>>()
            .join("\n"),
        RoomCmd::AddMember { room, user, admin } => {
            ops::add_member(conn, actor, &room, &user, admin)?;
            String::new()
        }
        RoomCmd::Members { room } => {
            let room_id = room_id(conn, &room)?;
            let mut lines = Vec::new();
            for u in identity::members(conn, &room_id)? {
                let admin = identity::is_room_admin(conn, &room_id, &u.id)?;
                lines.push(format!(
                    "{}\t{}{}",
                    u.id,
                    u.display_name,
                    if admin { "\tadmin" } else { "" }
                ));
            }
            lines.join("\n")
        }
        RoomCmd::Webhook {
            room,
            url,
            secret,
            events,
            clear,
        } => {
            let hook = if clear {
                None
            } else {
                Some(Webhook {
                    url: url.unwrap_or_default(),
                    secret: secret.unwrap_or_default(),
                    events: events
                        .split(',')
                        .map(str::trim)
                        .filter(|e| !e.is_empty())
                        .map(String::from)
                        .collect(),
                })
            };
            ops::set_webhook(conn, actor, &room, hook.as_ref())?;
            String::new()
        }
        RoomCmd::Deliveries { room } => {
            let rows = deliveries::webhook_deliveries_of_room(conn, &room_id(conn, &room)?)?;
            rows.iter()
                .map(|d| {
                    format!(
                        "{}\t{}\t{}\tattempts={}\t{}",
                        d.id,
                        d.event,
                        d.state,
                        d.attempts,
                        d.last_error.as_deref().unwrap_or("")
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        }
        RoomCmd::RemoveMember { room, user } => {
            ops::remove_member(conn, actor, &room, &user)?;
            String::new()
        }
    })
}

/// `qp admin agent …`: add, allow, list, disable, enable, remove.
fn agent(actor: &str, conn: &store::Conn, cmd: AgentCmd) -> Result<String, AppError> {
    Ok(match cmd {
        AgentCmd::Add {
            name,
            owner,
            rooms,
            scopes,
        } => {
            let scopes: Vec<String> = scopes
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
            let (agent, token) = ops::add_agent(conn, actor, &name, &owner, &scopes, &rooms)?;
            json!({
                "id": agent.id, "name": agent.name, "owner_user_id": agent.owner_user_id,
                "scopes": agent.scopes, "rooms": rooms, "token": token,
            })
            .to_string()
        }
        AgentCmd::Allow { agent, room } => {
            ops::allow_agent_room(conn, actor, &agent, &room)?;
            String::new()
        }
        AgentCmd::List => identity::list_agents(conn)?
            .iter()
            .map(|(a, rooms)| {
                format!(
                    "{}\t{}\towner={}\tscopes={}\trooms={}",
                    a.id,
                    a.name,
                    a.owner_user_id,
                    a.scopes.join(","),
                    rooms.join(",")
                )
            })
            .collect::<Vec<_>>()
            .join("\n"),
        AgentCmd::Disable { agent } => {
            let c = ops::offboard(conn, actor, Step::Disable, Subject::Agent, &agent)?;
            changed(Subject::Agent, &agent, "disabled", c)
        }
        AgentCmd::Enable { agent } => {
            let c = ops::offboard(conn, actor, Step::Enable, Subject::Agent, &agent)?;
            changed(Subject::Agent, &agent, "enabled", c)
        }
        AgentCmd::Remove { agent } => {
            let c = ops::offboard(conn, actor, Step::Remove, Subject::Agent, &agent)?;
            changed(Subject::Agent, &agent, "removed", c)
        }
        // `run` handles invites (app::pairing::create_invite).
        AgentCmd::Invite { .. } => String::new(),
    })
}

/// `qp admin token …`: add-admin, list, revoke.
fn token(actor: &str, conn: &store::Conn, cmd: TokenCmd) -> Result<String, AppError> {
    Ok(match cmd {
        TokenCmd::AddAdmin { label } => {
            let token = ops::add_admin_token(conn, actor, &label)?;
            json!({ "kind": "admin", "label": label, "token": token }).to_string()
        }
        TokenCmd::List => identity::list_tokens(conn)?
            .iter()
            .map(|t| {
                format!(
                    "{}\t{}\t{}\t{}\tcreated {}\tlast used {}",
                    t.hash_prefix,
                    t.kind,
                    t.subject_id,
                    if t.label.is_empty() { "-" } else { &t.label },
                    time_of(t.created_at),
                    t.last_used_at
                        .map(time_of)
                        .unwrap_or_else(|| "never".into())
                )
            })
            .collect::<Vec<_>>()
            .join("\n"),
        TokenCmd::Revoke { hash_prefix } => {
            let untied = ops::revoke_token(conn, actor, &hash_prefix)?;
            if !untied.is_empty() {
                // Devices from before they were tied to tokens: one of them
                // may be the revoked token's phone, which would keep getting
                // pushes, so the operator is told which.
                eprintln!(
                    "qp admin: this user still has {} device(s) registered before devices were \
                     tied to tokens: {}. They keep getting pushes while the user has another \
                     token; if one was this token's phone, remove it: qp admin device remove ID",
                    untied.len(),
                    untied.join(", ")
                );
            }
            String::new()
        }
        // `run` handles it (app::pairing::create_user_token).
        TokenCmd::Add { .. } => String::new(),
    })
}

/// `qp admin device …`: list, remove.
fn device(actor: &str, conn: &store::Conn, cmd: DeviceCmd) -> Result<String, AppError> {
    Ok(match cmd {
        DeviceCmd::List { user, json } => {
            list_devices(&identity::list_devices(conn, user.as_deref())?, json)
        }
        DeviceCmd::Remove { id } => {
            ops::remove_device(conn, actor, &id)?;
            String::new()
        }
    })
}

/// `qp admin purge --older-than AGE`: the retention sweep, run to its end.
fn purge(
    actor: &str,
    conn: &store::Conn,
    older_than: std::time::Duration,
    batch_size: usize,
) -> Result<String, AppError> {
    let deleted = ops::purge(conn, actor, older_than, batch_size)?;
    Ok(json!({ "deleted": deleted }).to_string())
}

/// `qp admin audit [--since AGE]`: the audit log as JSON lines.
fn audit(conn: &store::Conn, since: Option<std::time::Duration>) -> Result<String, StoreError> {
    let since = since.map_or(0, |s| now_secs() - s.as_secs() as i64);
    Ok(store::audit::since(conn, since, usize::MAX >> 1)?
        .iter()
        .map(|e| {
            json!({
                "at": time_of(e.at), "actor": e.actor, "action": e.action,
                "subject": e.subject, "detail": e.detail,
            })
            .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n"))
}

/// `qp migrate`: the server's database (as `qp admin` finds it) brought
/// up to this qp's schema.
pub fn migrate(server: &ServerArgs) -> i32 {
    let db = match server.settings() {
        Ok(s) => s.db,
        Err(e) => {
            eprintln!("qp migrate: the server's settings: {e}");
            return EXIT_USAGE;
        }
    };
    match store::versions::migrate(&db) {
        Ok(m) => {
            println!("{}", json!(m));
            EXIT_OK
        }
        Err(e) => {
            eprintln!("qp migrate: {db}: {e}");
            EXIT_ERROR
        }
    }
}

/// `qp admin device list`: columns, or JSON lines; never a whole push token.
fn list_devices(devices: &[identity::DeviceInfo], as_json: bool) -> String {
    devices
        .iter()
        .map(|d| {
            let push_token = shortened(&d.device.push_token);
            let token = d.token_prefix.as_deref().unwrap_or("-");
            if as_json {
                json!({
                    "id": d.device.id, "user_id": d.device.user_id,
                    "platform": d.device.platform, "app_id": d.device.app_id,
                    "push_token": push_token, "encrypted": d.device.public_key.is_some(),
                    "token": d.token_prefix, "created_at": time_of(d.created_at),
                })
                .to_string()
            } else {
                format!(
                    "{}\t{}\t{}\t{}\t{push_token}\t{}\ttoken {token}\tcreated {}",
                    d.device.id,
                    d.device.user_id,
                    d.device.platform,
                    d.device.app_id,
                    if d.device.public_key.is_some() {
                        "e2e"
                    } else {
                        "plain"
                    },
                    time_of(d.created_at)
                )
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first and last 6 characters of a push token: enough to recognize a
/// phone, not to send to it.
fn shortened(token: &str) -> String {
    let chars: Vec<char> = token.chars().collect();
    if chars.len() <= 16 {
        return token.to_string();
    }
    let head: String = chars[..6].iter().collect();
    let tail: String = chars[chars.len() - 6..].iter().collect();
    format!("{head}…{tail}")
}

fn time_of(secs: i64) -> String {
    chrono::DateTime::from_timestamp(secs, 0)
        .map(|t| qp_core::protocol::time::format(&t))
        .unwrap_or_default()
}

/// `text` as a QR code in the terminal: two rows of modules per line of
/// half-block characters, dark on light, with the quiet zone.
pub fn qr(text: &str) -> String {
    match qrcode::QrCode::new(text.as_bytes()) {
        Ok(code) => code
            .render::<qrcode::render::unicode::Dense1x2>()
            .dark_color(qrcode::render::unicode::Dense1x2::Light)
            .light_color(qrcode::render::unicode::Dense1x2::Dark)
            .build(),
        Err(e) => format!("(no QR code: {e})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A limit reached is refused for what was typed (exit 2), whether it
    /// comes straight from the store or through the server's rules (where
    /// it arrives as `Invalid`); a database failure is not (exit 1).
    #[test]
    fn a_limit_reached_exits_2_and_a_database_failure_1() {
        let limit = || StoreError::Limit {
            field: "push_token",
            message: "push_token: you have 20 devices registered".into(),
        };
        assert_eq!(store_exit_code(&limit()), EXIT_USAGE);
        assert_eq!(app_exit_code(&AppError::from(limit())), EXIT_USAGE);
        assert_eq!(
            store_exit_code(&StoreError::Invalid("name: empty".into())),
            EXIT_USAGE
        );
        let db = || StoreError::Db(store::DbError::NoRow);
        assert_eq!(store_exit_code(&db()), EXIT_ERROR);
        assert_eq!(app_exit_code(&AppError::from(db())), EXIT_ERROR);
        assert_eq!(EXIT_USAGE, 2);
    }
}
