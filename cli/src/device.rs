//! `qp device`: a phone in a terminal. It signs in with a user token,
//! registers a development device, receives over a long-poll the exact
//! payloads a phone would get (APNs or FCM shaped, per `--as`), and hands
//! them to qp-core's `Phone`, the very type the iOS and Android libraries
//! run: decode, present, feed store, outbox, drafts, flush, sync. This file
//! only draws and reads keys; every phone rule is the Phone's.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use qp_core::answer::ActionError;
use qp_core::http::HttpTransport;
use qp_core::payload::{CompactQuestion, Push};
use qp_core::phone::{DeviceKeyStore, DeviceRegistration, Phone, PhoneError, TokenStore};
use qp_core::present::android::{choice_labels, CHOOSE_ACTION_ID};
use qp_core::present::ios::{option_action_id, TEXT_ACTION_ID};
use qp_core::present::PresentOptions;
use qp_core::protocol::OptionStyle;
use qp_core::store::{AnswerState, StoreMode};
use qp_core::sync::TokenProvider;
use serde_json::Value;
use tokio::io::AsyncBufReadExt;

use super::terminal::safe;
use super::{EXIT_ERROR, EXIT_OK, EXIT_USAGE};

#[derive(Args)]
#[command(
    after_help = "Keys, then Enter: 1-4 answer with that option (array order), `t TEXT` sends a\n\
    typed reply, `offline` / `online` switch the network (answers queue while offline and\n\
    are sent when online), `sync` pulls from the server, `q` quits."
)]
pub struct DeviceArgs {
    /// Server URL.
    #[arg(long, env = "QP_URL", default_value = super::DEFAULT_URL)]
    url: String,
    /// The user's device token (qpu_…, from `qp admin token add`) [default:
    /// the one an earlier --pair kept next to the store].
    #[arg(long, env = "QP_DEVICE_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// First run: pair with a link or code from `qp admin user invite`, as a
    /// phone does (the token is kept next to the store, owner-only).
    #[arg(long, value_name = "LINK", conflicts_with = "token")]
    pair: Option<String>,
    /// Which phone to be: the APNs payload (ios) or the FCM data message (android).
    #[arg(long = "as", value_parser = ["ios", "android"], default_value = "ios")]
    platform: String,
    /// The phone's SQLite store (feed and outbox).
    #[arg(long, default_value = "qp-device.sqlite")]
    store: PathBuf,
    /// Start offline: answers are queued, not sent.
    #[arg(long)]
    offline: bool,
    /// Non-interactive: answer every question with this key (e.g. `1`, `t ship it`).
    #[arg(long, value_name = "KEY")]
    answer: Option<String>,
    /// With --offline: go online after this many seconds.
    #[arg(long, value_name = "SECS")]
    online_after: Option<u64>,
    /// The person's languages, most preferred first, comma-separated
    /// (`de,en`) [default: from LANG, else English].
    #[arg(long, value_name = "LANGS", env = "QP_LANG")]
    lang: Option<String>,
    /// Exit after this many questions were answered here or withdrawn.
    #[arg(long, value_name = "N")]
    exit_after: Option<u32>,
    /// A CA certificate (PEM) the terminal phone trusts besides the web's
    /// roots (a phone trusts what its platform's store holds: an MDM or
    /// user CA, the app's network security config).
    #[arg(long, env = "QP_CA_CERT")]
    ca_cert: Option<PathBuf>,
    /// Plain pushes: register no device key. By default the terminal makes
    /// a key pair (the secret kept next to the store, owner-only) and its
    /// pushes are end-to-end encrypted, as a phone's are.
    #[arg(long)]
    no_e2e: bool,
}

struct Token(String);
impl TokenProvider for Token {
    fn token(&self) -> Option<String> {
        Some(self.0.clone())
    }
}

/// The terminal around the phone: the inbox long-poll, the keys, the drawing.
struct Terminal {
    args: DeviceArgs,
    http: reqwest::Client,
    token: String,
    device_id: String,
    /// Registered with the device: its pushes are sealed to it.
    public_key: Option<String>,
    phone: Phone,
    online: bool,
    color: bool,
    /// Questions shown, newest last.
    shown: Vec<CompactQuestion>,
    done: u32,
}

fn style_mark(style: OptionStyle, color: bool, label: &str) -> String {
    match (style, color) {
        (OptionStyle::Primary, true) => format!("\x1b[1;34m{label}\x1b[0m"),
        (OptionStyle::Danger, true) => format!("\x1b[1;31m{label}\x1b[0m"),
        (OptionStyle::Primary, false) => format!("{label} (primary)"),
        (OptionStyle::Danger, false) => format!("{label} (danger)"),
        (OptionStyle::Default, _) => label.to_string(),
    }
}

/// Why a GET failed: `revoked` when the server refused the token (401),
/// which no retry mends.
struct FetchError {
    revoked: bool,
    message: String,
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// What `qp device` says, and then stops, when its token is refused.
const PAIR_AGAIN: &str = "this device's token was refused (401): it was revoked or the device removed. \
Pair again: get a new link (qp admin user invite USER, or from the web responder) and run qp device --pair LINK";

/// GET a JSON document with the device token.
async fn fetch(http: reqwest::Client, url: String, token: String) -> Result<Value, FetchError> {
    let r = http
        .get(&url)
        .bearer_auth(token)
        .send()
        .await
        .map_err(|e| FetchError {
            revoked: false,
            message: format!("cannot reach the server: {e}"),
        })?;
    let status = r.status();
    let v: Value = r.json().await.unwrap_or_default();
    if !status.is_success() {
        return Err(FetchError {
            revoked: status == reqwest::StatusCode::UNAUTHORIZED,
            message: format!("{status}: {}", v["error"]["message"].as_str().unwrap_or("")),
        });
    }
    Ok(v)
}

impl Terminal {
    /// Registers this terminal as a development device (push over the dev inbox).
    async fn register(&mut self) -> Result<(), i32> {
        let push_token = format!("dev-{}", qp_server::ids::new_id("t"));
        let registered = self
            .http
            .post(format!("{}/api/devices", self.args.url))
            .bearer_auth(&self.token)
            .json(&serde_json::json!({
                "platform": "dev", "push_token": push_token, "app_id": self.args.platform,
                "locale": self.phone.language(), "public_key": self.public_key,
            }))
            .send()
            .await;
        let device: Value = match registered {
            Ok(r) if r.status().is_success() => r.json().await.unwrap_or_default(),
            Ok(r) => {
                eprintln!("qp device: registration refused: {}", r.status());
                return Err(EXIT_ERROR);
            }
            Err(e) => {
                eprintln!("qp device: cannot register: {e}");
                return Err(EXIT_ERROR);
            }
        };
        self.device_id = device["id"].as_str().unwrap_or_default().to_string();
        self.phone.set_device_id(Some(self.device_id.clone()));
        Ok(())
    }

    fn draw(&self, q: &CompactQuestion) {
        let remaining = self.phone.time_remaining(q, chrono::Utc::now());
        println!();
        if self.args.platform == "android" {
            let n =
                self.phone
                    .android_notification(q, chrono::Utc::now(), &PresentOptions::default());
            println!(
                "┌─ [Android] {} · {} · {remaining}",
                safe(&n.title),
                safe(&q.room.name)
            );
            if let Some(s) = &n.sub_text {
                println!("│ {}", safe(s));
            }
            println!("│ {}", safe(&n.text));
            for (i, a) in n.actions.iter().enumerate() {
                match &a.remote_input {
                    Some(ri) if !ri.choices.is_empty() => {
                        println!("│ ({}) {} {}", i + 1, safe(&a.title), safe(&ri.label));
                        for (j, c) in ri.choices.iter().enumerate() {
                            println!("│     [{}] {}", j + 1, safe(c));
                        }
                    }
                    Some(ri) => println!(
                        "│ ({}) {} [t] \"{}\"",
                        i + 1,
                        safe(&a.title),
                        safe(&ri.label)
                    ),
                    None => println!(
                        "│ ({}) {}",
                        i + 1,
                        style_mark(a.style, self.color, &safe(&a.title))
                    ),
                }
            }
        } else {
            let n = self.phone.ios_notification(q, &PresentOptions::default());
            println!(
                "┌─ [iOS] {} · {} · {remaining}",
                safe(&n.title),
                safe(&q.room.name)
            );
            if let Some(s) = &n.subtitle {
                println!("│ {}", safe(s));
            }
            println!("│ {}", safe(&n.body));
            let buttons: Vec<String> = q
                .options
                .iter()
                .enumerate()
                .map(|(i, o)| {
                    format!(
                        "[{}] {}",
                        i + 1,
                        style_mark(o.style, self.color, &safe(&o.label))
                    )
                })
                .collect();
            if !buttons.is_empty() {
                println!("│ {}", buttons.join("   "));
            }
            if let Some(t) = &n.category.text_action {
                println!("│ [t] {} \"{}\"", safe(&t.title), safe(&t.placeholder));
            }
        }
        let max = q
            .text_input
            .as_ref()
            .map(|t| format!(", t TEXT (max {})", t.max_length))
            .unwrap_or_default();
        let keys = if q.options.is_empty() {
            String::new()
        } else {
            format!("1-{}", q.options.len())
        };
        println!(
            "└─ {}{max}",
            if keys.is_empty() {
                "t TEXT".to_string()
            } else {
                keys
            }
        );
    }

    /// A key for the newest pending question: an action id and its text.
    fn action_for(&self, q: &CompactQuestion, key: &str) -> Option<(String, Option<String>)> {
        if let Some(text) = key.strip_prefix("t ").or_else(|| key.strip_prefix("r ")) {
            return Some((TEXT_ACTION_ID.to_string(), Some(text.to_string())));
        }
        let i: usize = key.parse().ok()?;
        let option = q.options.get(i.checked_sub(1)?)?;
        let android =
            self.phone
                .android_notification(q, chrono::Utc::now(), &PresentOptions::default());
        if self.args.platform == "android"
            && android
                .actions
                .iter()
                .any(|a| a.action_id == CHOOSE_ACTION_ID)
        {
            let label = choice_labels(&q.options)[i - 1].clone();
            return Some((CHOOSE_ACTION_ID.to_string(), Some(label)));
        }
        Some((option_action_id(&option.value), None))
    }

    fn resolution(&self, id: &str) -> String {
        self.phone
            .resolution(id)
            .ok()
            .flatten()
            .unwrap_or_else(|| "resolved".into())
    }

    async fn answer(&mut self, key: &str) {
        let Some(q) = self
            .shown
            .iter()
            .rev()
            .find(|q| matches!(self.phone.resolution(&q.id), Ok(None)))
            .cloned()
        else {
            println!("no question to answer");
            return;
        };
        let Some((action, text)) = self.action_for(&q, key) else {
            let text = if q.text_input.is_some() {
                ", or t TEXT"
            } else {
                ""
            };
            println!("unknown key {key:?}: 1-{}{text}", q.options.len());
            return;
        };
        match self.phone.answer_action(&q.id, &action, text.as_deref()) {
            Ok(_) => {
                if self.online {
                    println!("answer saved; sending…");
                    self.flush().await;
                } else {
                    println!("answer saved (offline: queued)");
                }
            }
            // In the person's words, as the apps show them.
            Err(e @ PhoneError::Action(ActionError::TextTooLong { .. })) => {
                println!(
                    "not sent: {} (kept as a draft for the app)",
                    self.phone.describe(&e)
                )
            }
            Err(e @ PhoneError::Action(_)) => println!("not sent: {}", self.phone.describe(&e)),
            Err(e) => println!("could not save the answer: {e}"),
        }
    }

    async fn flush(&mut self) {
        match self.phone.flush().await {
            Ok(r) => {
                for id in &r.withdraw {
                    let line = self.resolution(id);
                    let mine = self.phone.answer_status(id).ok().flatten().map(|a| a.state);
                    if mine == Some(AnswerState::Answered) {
                        println!("delivered: {}", safe(&line));
                    } else {
                        println!("too late: {}", safe(&line));
                    }
                    self.shown.retain(|q| &q.id != id);
                    self.done += 1;
                }
                if r.rejected > 0 {
                    self.not_sent();
                }
                if r.will_retry > 0 {
                    self.still_queued();
                }
            }
            Err(e) => println!("flush failed: {e}"),
        }
    }

    /// Each answer still waiting to be sent, in the status line the phone
    /// shows for it (the core's copy, in the person's language: "Approve:
    /// not sent yet, you're offline; will retry").
    fn still_queued(&self) {
        for q in &self.shown {
            if let Ok(Some(a)) = self.phone.answer_status(&q.id) {
                if a.state.is_open() {
                    println!("{}", safe(&a.status));
                }
            }
        }
    }

    /// Answers not sent for good, in the person's words ("Approve: not
    /// sent, the question differs from what was shown; read it again"); a
    /// question the server showed otherwise than it was drawn (a plain push
    /// can be anyone's) is drawn again as the server has it, to be answered
    /// again.
    fn not_sent(&mut self) {
        for q in self.shown.clone() {
            let Ok(Some(a)) = self.phone.answer_status(&q.id) else {
                continue;
            };
            if a.state != AnswerState::Rejected {
                continue;
            }
            println!("not sent: {}", safe(&a.status));
            if let Ok(Some(held)) = self.phone.question(&q.id) {
                if held != q {
                    self.draw(&held);
                    for s in self.shown.iter_mut().filter(|s| s.id == held.id) {
                        *s = held.clone();
                    }
                }
            }
        }
    }

    async fn receive(&mut self, format: &str, payload: &str) {
        let push = if format == "fcm" {
            serde_json::from_str::<HashMap<String, String>>(payload)
                .map_err(|_| PhoneError::Payload(qp_core::payload::PayloadError::NotJson))
                .and_then(|m| self.phone.receive_fcm(&m))
        } else {
            self.phone.receive_apns(payload)
        };
        // What the gateway could read: say when it was sealed to this device.
        let sealed = payload.contains("\"qp_e2e\"");
        match push {
            Ok(Push::Question(q)) => {
                if sealed {
                    println!(
                        "(end-to-end encrypted push, {} bytes: opened with this device's key)",
                        payload.len()
                    );
                }
                self.show(q).await;
            }
            Ok(Push::Resolved(n)) => self.resolved_by_push(&n.id).await,
            Err(e) => {
                // The generic words, never the push's own (they may be an
                // injector's), then what the app does on a tap: sync.
                let f = self.phone.fallback_notification(None, None);
                println!(
                    "┌─ {}\n│ {}\n└─ (push not used: {e}; syncing with the server)",
                    safe(&f.title),
                    safe(&f.body)
                );
                self.catch_up().await;
            }
        }
    }

    /// Draws a question the phone holds and, with --answer, answers it.
    async fn show(&mut self, q: CompactQuestion) {
        self.draw(&q);
        self.shown.retain(|s| s.id != q.id);
        self.shown.push(q);
        if let Some(key) = self.args.answer.clone() {
            println!("> {key}");
            self.answer(&key).await;
        }
    }

    /// A resolution push is a claim: the question is withdrawn only when
    /// the server confirms it (else a forged push could hide it for good).
    async fn resolved_by_push(&mut self, id: &str) {
        if !self.shown.iter().any(|q| q.id == id) {
            return;
        }
        if !self.online {
            println!("(resolution push for {id}: not confirmed while offline; kept)");
            return;
        }
        match self.phone.confirm_resolution(id).await {
            Ok(true) => self.withdraw(id),
            Ok(false) => println!(
                "(resolution push for {id} not confirmed: the server says it is still pending; kept)"
            ),
            Err(e) => println!("(resolution push for {id} not confirmed: {e}; kept)"),
        }
    }

    fn withdraw(&mut self, id: &str) {
        if self.shown.iter().any(|q| q.id == id) {
            println!("withdrawn: {id} ({})", safe(&self.resolution(id)));
            self.shown.retain(|q| q.id != id);
            self.done += 1;
        }
    }

    /// What the app does after a push it could not use: pulls from the
    /// server, withdraws what resolved, and draws what was missed.
    async fn catch_up(&mut self) {
        if !self.online {
            return;
        }
        match self.phone.sync().await {
            Ok(r) => r.withdraw.iter().for_each(|id| self.withdraw(id)),
            Err(e) => {
                println!("sync failed: {e}");
                return;
            }
        }
        let on_screen: Vec<String> = self.shown.iter().map(|q| q.id.clone()).collect();
        match self.phone.reconcile(&on_screen, chrono::Utc::now()) {
            Ok(plan) => {
                for q in plan.post {
                    self.show(q).await;
                }
            }
            Err(e) => println!("reconcile failed: {e}"),
        }
        println!("synced");
    }
}

/// The terminal's key storage: the device's secret key in a file next to
/// the store, owner-only (a phone uses the Keychain or the Keystore).
struct KeyFile(PathBuf);

impl KeyFile {
    fn next_to(store: &std::path::Path) -> KeyFile {
        let mut name = store.as_os_str().to_owned();
        name.push(".device-key");
        KeyFile(PathBuf::from(name))
    }
}

impl DeviceKeyStore for KeyFile {
    fn load_device_key(&self) -> Option<Vec<u8>> {
        std::fs::read(&self.0).ok()
    }
    fn save_device_key(&self, key: Vec<u8>) -> bool {
        super::credentials::write_private(&self.0, &key).is_ok()
    }
}

/// The terminal's secure storage: a file next to the store, owner-only
/// (a phone uses the Keychain or the Keystore; never the SQLite store).
struct TokenFile(PathBuf);

impl TokenFile {
    fn next_to(store: &std::path::Path) -> TokenFile {
        let mut name = store.as_os_str().to_owned();
        name.push(".token");
        TokenFile(PathBuf::from(name))
    }

    fn read(&self) -> Option<String> {
        std::fs::read_to_string(&self.0)
            .ok()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
    }
}

impl TokenStore for TokenFile {
    fn save_token(&self, _user_id: &str, token: &str) -> Result<(), String> {
        super::credentials::write_private(&self.0, token.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", self.0.display()))
    }
}

/// The terminal's preferred languages: --lang / QP_LANG, else the POSIX
/// locale (`de_DE.UTF-8` -> `de-DE`), else none (English).
fn languages(args: &DeviceArgs) -> Vec<String> {
    if let Some(list) = &args.lang {
        return list
            .split(',')
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect();
    }
    ["LC_ALL", "LC_MESSAGES", "LANG"]
        .iter()
        .filter_map(|k| std::env::var(k).ok())
        .find(|v| !v.is_empty() && v != "C" && v != "POSIX" && !v.starts_with("C."))
        .map(|v| vec![v.split('.').next().unwrap_or_default().replace('_', "-")])
        .unwrap_or_default()
}

pub async fn run(mut args: DeviceArgs) -> i32 {
    let token_file = TokenFile::next_to(&args.store);
    let key_file = Arc::new(KeyFile::next_to(&args.store));
    let public_key = if args.no_e2e {
        None
    } else {
        match qp_core::phone::device_public_key(key_file.as_ref()) {
            Ok(k) => Some(k),
            Err(e) => {
                eprintln!("qp device: cannot make the device key: {e}");
                return EXIT_ERROR;
            }
        }
    };
    let languages = languages(&args);
    let mut paired_device = None;
    let ca = match qp_client::ExtraCa::read(args.ca_cert.as_deref()) {
        Ok(ca) => ca,
        Err(e) => {
            eprintln!("qp device: {e}");
            return EXIT_USAGE;
        }
    };
    // The phone's requests, executed as the platforms' stacks would: here
    // by reqwest, trusting the web's roots and --ca-cert.
    let transport: Arc<dyn HttpTransport> = match qp_client::ReqwestTransport::new(&ca) {
        Ok(t) => Arc::new(t),
        Err(e) => {
            eprintln!("qp device: {e}");
            return EXIT_USAGE;
        }
    };
    if let Some(link) = args.pair.clone() {
        let registration = DeviceRegistration {
            platform: qp_core::protocol::device::Platform::Dev,
            push_token: format!("dev-{}", qp_server::ids::new_id("t")),
            app_id: Some(args.platform.clone()),
            locale: languages.first().cloned(),
            public_key: public_key.clone(),
            apns_environment: None,
        };
        match Phone::pair(
            &link,
            Some(&args.url),
            "qp device",
            Some(&registration),
            &token_file,
            &*transport,
        )
        .await
        {
            Ok(account) => {
                println!(
                    "qp device: paired as {} ({})",
                    account.display_name, account.user_id
                );
                args.url = account.server_url;
                paired_device = account.device_id;
            }
            Err(e) => {
                eprintln!("qp device: pairing failed: {e}");
                return EXIT_ERROR;
            }
        }
    }
    let Some(token) = args
        .token
        .clone()
        .filter(|t| !t.is_empty())
        .or_else(|| token_file.read())
    else {
        eprintln!("qp device: no device token; pass --pair LINK (qp admin user invite USER), or --token / QP_DEVICE_TOKEN (qp admin token add USER)");
        return EXIT_USAGE;
    };
    let http = match ca.client(Duration::from_secs(40)) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("qp device: {e}");
            return EXIT_USAGE;
        }
    };
    // Who am I? The phone compares answers against this id.
    let me = match fetch(
        http.clone(),
        format!("{}/api/me", args.url.trim_end_matches('/')),
        token.clone(),
    )
    .await
    {
        Ok(v) => v,
        Err(e) if e.revoked => {
            eprintln!("qp device: {PAIR_AGAIN}");
            return EXIT_ERROR;
        }
        Err(e) => {
            eprintln!("qp device: cannot sign in: {e}");
            return EXIT_ERROR;
        }
    };
    let user_id = me["id"].as_str().unwrap_or_default().to_string();
    let phone = match Phone::open(
        &args.store,
        StoreMode::App,
        &args.url,
        &user_id,
        Arc::new(Token(token.clone())),
        &languages,
        transport,
    ) {
        // With a key, only sealed pushes are trusted; --no-e2e registers
        // none, so a key file left by an earlier run must not be used.
        Ok(p) if public_key.is_some() => p.with_device_keys(key_file, paired_device.clone()),
        Ok(p) => p,
        Err(e) => {
            eprintln!("qp device: cannot open {}: {e}", args.store.display());
            return EXIT_ERROR;
        }
    };
    let mut phone = Terminal {
        online: !args.offline,
        color: std::io::stdout().is_terminal(),
        http,
        token,
        device_id: String::new(),
        public_key,
        phone,
        shown: Vec::new(),
        done: 0,
        args,
    };
    if let Some(id) = paired_device {
        phone.device_id = id;
    } else if let Err(code) = phone.register().await {
        return code;
    }
    println!(
        "qp device: {} ({}) as {}, {}; waiting for questions",
        me["display_name"].as_str().unwrap_or(""),
        phone.phone.user_id(),
        phone.args.platform,
        if phone.online { "online" } else { "offline" }
    );

    let mut after = 0i64;
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let mut stdin_open = true;
    let online_at = phone
        .args
        .online_after
        .map(|s| tokio::time::Instant::now() + Duration::from_secs(s));
    loop {
        if phone.args.exit_after.is_some_and(|n| phone.done >= n) {
            return EXIT_OK;
        }
        // Owned, so the other branches may use `phone` mutably.
        let poll = fetch(
            phone.http.clone(),
            format!(
                "{}/api/dev/inbox?device={}&after={after}&timeout=20",
                phone.args.url, phone.device_id
            ),
            phone.token.clone(),
        );
        let offline = !phone.online;
        let go_online = async move {
            match online_at {
                Some(t) if offline => tokio::time::sleep_until(t).await,
                _ => std::future::pending().await,
            }
        };
        tokio::select! {
            inbox = poll => match inbox {
                Ok(v) => {
                    for p in v["pushes"].as_array().cloned().unwrap_or_default() {
                        after = after.max(p["seq"].as_i64().unwrap_or(after));
                        phone.receive(p["format"].as_str().unwrap_or(""), p["payload"].as_str().unwrap_or("")).await;
                    }
                }
                Err(e) if e.revoked => {
                    eprintln!("qp device: {PAIR_AGAIN}");
                    return EXIT_ERROR;
                }
                Err(e) => {
                    println!("(inbox: {e}; retrying)");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            },
            line = stdin.next_line(), if stdin_open => match line {
                Ok(Some(line)) => match line.trim() {
                    "" => {}
                    "q" | "quit" => return EXIT_OK,
                    "offline" | "f" => { phone.online = false; println!("offline: answers will queue"); }
                    "online" | "o" => { phone.online = true; println!("online"); phone.flush().await; }
                    "sync" | "s" => match phone.phone.sync().await {
                        Ok(r) => println!("synced: {} pending, {} withdrawn", r.pending, r.withdraw.len()),
                        Err(e) => println!("sync failed: {e}"),
                    },
                    key => phone.answer(key).await,
                },
                _ => stdin_open = false,
            },
            _ = go_online => { phone.online = true; println!("online"); phone.flush().await; }
        }
    }
}
