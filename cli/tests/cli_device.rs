//! The terminal device (`qp device`) and `qp login`: answering by key,
//! offline queueing, pairing by link, and where a stored token may go.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod common;

use common::cli::{finish, setup, Env, QP};
use common::{admin, admin_json};

// ---- the terminal device ----

/// A running `qp device` with its stdin and a line reader over its stdout.
struct DeviceProc {
    child: Child,
    lines: std::sync::mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl DeviceProc {
    fn start(env: &Env, token: &str, args: &[&str]) -> DeviceProc {
        let store = env
            .db
            .with_file_name(format!("device-{}.sqlite", &token[4..12]));
        let mut child = Command::new(QP)
            .arg("device")
            .args(args)
            .arg("--store")
            .arg(store)
            .env("QP_URL", &env.url)
            .env("QP_DEVICE_TOKEN", token)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for l in out.lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        });
        let mut d = DeviceProc {
            child,
            lines,
            seen: Vec::new(),
        };
        d.wait_for("waiting for questions");
        d
    }

    fn wait_for(&mut self, needle: &str) -> String {
        let t = Instant::now();
        loop {
            if let Some(l) = self.seen.iter().find(|l| l.contains(needle)) {
                return l.clone();
            }
            let left = Duration::from_secs(15).saturating_sub(t.elapsed());
            match self.lines.recv_timeout(left) {
                Ok(l) => self.seen.push(l),
                Err(_) => panic!(
                    "device never printed {needle:?}; it printed:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }

    fn key(&mut self, k: &str) {
        use std::io::Write;
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{k}").unwrap();
        stdin.flush().unwrap();
    }
}

impl Drop for DeviceProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_terminal_device_answers_by_key_and_the_asker_gets_it() {
    let env = setup();
    let mut phone = DeviceProc::start(&env, &env.user_token, &[]);
    let asker = env
        .qp(&[
            "ask",
            "OPS123",
            "Deploy v1.4?",
            "--context",
            "Build 7",
            "--yes-no",
            "--wait",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    phone.wait_for("CI asks you");
    phone.wait_for("Build 7");
    let buttons = phone.wait_for("[1] Approve");
    assert!(buttons.contains("[2] Deny"), "{buttons}");
    phone.key("1");
    phone.wait_for("delivered: You answered: Approve");
    let (code, out, _) = finish(asker);
    assert_eq!((code, out.as_str()), (0, "approve\n"));
}

#[test]
fn an_offline_device_queues_the_answer_and_delivers_it_when_back_online() {
    let env = setup();
    let mut phone = DeviceProc::start(&env, &env.user_token, &["--offline", "--as", "android"]);
    let mut asker = env
        .qp(&["ask", "OPS123", "Hold the release?", "--yes-no", "--wait"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    phone.wait_for("[Android] CI asks you");
    phone.key("2");
    phone.wait_for("offline: queued");
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        asker.try_wait().unwrap().is_none(),
        "nothing reached the asker while offline"
    );
    phone.key("online");
    phone.wait_for("delivered: You answered: Deny");
    let (code, out, _) = finish(asker);
    assert_eq!((code, out.as_str()), (0, "deny\n"));
}

#[test]
fn a_question_answered_on_one_device_is_withdrawn_from_another() {
    let env = setup();
    let bob = admin_json(&env.db, &["user", "add", "Bob"]);
    let bob_id = bob["id"].as_str().unwrap();
    assert!(admin(&env.db, &["room", "add-member", "OPS123", bob_id])
        .status
        .success());
    let bob_token = admin_json(&env.db, &["token", "add", bob_id])["token"]
        .as_str()
        .unwrap()
        .to_string();
    let mut federica = DeviceProc::start(&env, &env.user_token, &[]);
    let mut bobs = DeviceProc::start(&env, &bob_token, &["--as", "android"]);
    let asker = env
        .qp(&[
            "ask",
            "OPS123",
            "Which region?",
            "--scope",
            "room",
            "--option",
            "eu:Europe",
            "--option",
            "us:America",
            "--wait",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    federica.wait_for("CI asks the room");
    bobs.wait_for("[Android] CI asks the room");
    federica.key("1");
    federica.wait_for("delivered: You answered: Europe");
    let line = bobs.wait_for("withdrawn:");
    assert!(line.contains("Federica answered: Europe"), "{line}");
    let (code, out, _) = finish(asker);
    assert_eq!((code, out.as_str()), (0, "eu\n"));
}

/// `qp device` runs the phone code apps ship (`qp_core::phone::Phone`): a
/// typed reply over the question's limit is not sent, and the Phone keeps it
/// whole as a draft in the device's store, exactly as the FFI object does
/// (bindings/ffi/tests/ffi_facade.rs). Read back through a second `Phone`
/// over the same file, as the app would after the extension kept it.
#[test]
fn the_terminal_device_keeps_a_too_long_reply_as_a_draft_like_the_apps() {
    let env = setup();
    let mut phone = DeviceProc::start(&env, &env.user_token, &[]);
    let asker = env
        .qp(&[
            "ask",
            "OPS123",
            "Why hold?",
            "--text",
            "a reason",
            "--text-max",
            "10",
            "--ttl",
            "60",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (code, id, _) = finish(asker);
    assert_eq!(code, 0);
    phone.wait_for("CI asks you");
    phone.key("t this reason is far too long");
    let line = phone.wait_for("not sent:");
    assert!(line.contains("kept as a draft"), "{line}");
    let store = env
        .db
        .with_file_name(format!("device-{}.sqlite", &env.user_token[4..12]));
    struct NoToken;
    impl qp_core::sync::TokenProvider for NoToken {
        fn token(&self) -> Option<String> {
            None
        }
    }
    let app = qp_core::phone::Phone::open(
        &store,
        qp_core::store::StoreMode::App,
        &env.url,
        "u_fed",
        std::sync::Arc::new(NoToken),
        &[],
        common::phone_net(),
    )
    .unwrap();
    let id = id.trim();
    assert_eq!(
        app.draft(id).unwrap().as_deref(),
        Some("this reason is far too long")
    );
    // A reply that fits is sent, and the draft it replaces is gone.
    phone.key("t short one");
    phone.wait_for("delivered: You answered: “short one”");
    assert_eq!(app.draft(id).unwrap(), None);
}

/// The first run of a phone, in a terminal: the operator's invite (with its
/// QR code), `qp device --pair LINK`, and an answer that reaches the asker.
/// The minted token is kept owner-only next to the device store and appears
/// in no output: not the admin's listing, not the server's log.
#[test]
fn a_terminal_device_pairs_with_an_invite_link_and_answers() {
    let env = setup();
    let out = admin(&env.db, &["user", "invite", &env.uid, "--url", &env.url]);
    assert!(out.status.success());
    let shown = String::from_utf8(out.stdout).unwrap();
    assert!(shown.contains('█'), "a QR code is drawn: {shown}");
    let link = shown
        .split_whitespace()
        .find(|w| w.contains("/pair#"))
        .unwrap()
        .to_string();
    let store = env.db.with_file_name("paired-device.sqlite");
    let mut child = Command::new(QP)
        .args([
            "device",
            "--pair",
            &link,
            "--answer",
            "1",
            "--exit-after",
            "1",
            "--store",
        ])
        .arg(&store)
        .env("QP_URL", "http://127.0.0.1:9") // the link says where the server is
        .env_remove("QP_DEVICE_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let (code, out, _) = env.run(&["ask", "OPS123", "Ship it?", "--yes-no", "--wait"]);
    assert_eq!((code, out.as_str()), (0, "approve\n"));
    let status = child.wait().unwrap();
    let mut printed = String::new();
    use std::io::Read;
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut printed)
        .unwrap();
    assert!(status.success(), "{printed}");
    assert!(printed.contains("paired as Federica"), "{printed}");

    let token_file = env.db.with_file_name("paired-device.sqlite.token");
    let token = std::fs::read_to_string(&token_file).unwrap();
    assert!(token.starts_with("qpu_"));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&token_file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let listing = admin(&env.db, &["token", "list"]);
    let listing = String::from_utf8(listing.stdout).unwrap();
    assert!(listing.contains("qp device"), "{listing}");
    assert!(!listing.contains(&token));
    assert!(!printed.contains(&token));
    let phone_db = std::fs::read(&store).unwrap();
    assert!(!phone_db.windows(token.len()).any(|w| w == token.as_bytes()));
    assert!(!env.log.lock().unwrap().iter().any(|l| l.contains(&token)));

    // The same link does not work twice.
    let again = Command::new(QP)
        .args(["device", "--pair", &link, "--store"])
        .arg(env.db.with_file_name("second.sqlite"))
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already used"));
}

/// An agent's machine: `qp admin agent invite`, `qp login CODE`, then
/// `qp ask` with no token in the environment.
#[test]
fn qp_login_stores_an_agent_token_owner_only_and_the_asker_verbs_use_it() {
    let env = setup();
    let (code, config) = login(&env);
    use std::os::unix::fs::PermissionsExt;
    let file = config.join("credentials.json");
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(
        std::fs::metadata(&config).unwrap().permissions().mode() & 0o777,
        0o700
    );

    let ask = Command::new(QP)
        .args(["ask", "OPS123", "Logged in?", "--yes-no"])
        .env("QP_CONFIG_DIR", &config)
        .env_remove("QP_TOKEN")
        .env_remove("QP_URL")
        .output()
        .unwrap();
    assert!(
        ask.status.success(),
        "{}",
        String::from_utf8_lossy(&ask.stderr)
    );
    assert!(String::from_utf8_lossy(&ask.stdout).starts_with("q_"));

    // Used once; a second login with it fails clearly.
    let again = Command::new(QP)
        .args(["login", &code, "--url", &env.url])
        .env("QP_CONFIG_DIR", env.db.with_file_name("other-config"))
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already used"));
}

/// `qp admin agent invite` then `qp login CODE --url` the server, into a
/// config folder of its own: the code (spent) and that folder.
fn login(env: &Env) -> (String, PathBuf) {
    let agents = String::from_utf8(admin(&env.db, &["agent", "list"]).stdout).unwrap();
    let agent_id = agents.split('\t').next().unwrap().to_string();
    let out = admin(&env.db, &["agent", "invite", &agent_id, "--url", &env.url]);
    let shown = String::from_utf8(out.stdout).unwrap();
    let code = shown
        .split_whitespace()
        .skip_while(|w| *w != "login")
        .nth(1)
        .unwrap()
        .to_string();
    let config = env.db.with_file_name("agent-config");
    let login = Command::new(QP)
        .args(["login", &code, "--url", &env.url])
        .env("QP_CONFIG_DIR", &config)
        .output()
        .unwrap();
    assert!(
        login.status.success(),
        "{}",
        String::from_utf8_lossy(&login.stderr)
    );
    (code, config)
}

/// A listener on loopback that keeps whatever the first connections send
/// (a stand-in for a server the token must never reach).
fn eavesdropper() -> (String, std::sync::Arc<std::sync::Mutex<Vec<u8>>>) {
    use std::io::Read;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let heard = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = heard.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().take(8) {
            let Ok(mut conn) = conn else { return };
            let _ = conn.set_read_timeout(Some(Duration::from_millis(500)));
            let mut buf = [0u8; 4096];
            if let Ok(n) = conn.read(&mut buf) {
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        }
    });
    (url, heard)
}

/// The token `qp login` stored goes only to the server
/// it came from; QP_URL pointing elsewhere is refused before any request.
#[test]
fn a_stored_token_is_never_sent_to_another_server() {
    let env = setup();
    let (_, config) = login(&env);
    let stored = std::fs::read_to_string(config.join("credentials.json")).unwrap();
    let token: Value = serde_json::from_str(&stored).unwrap();
    let token = token["token"].as_str().unwrap().to_string();
    let (elsewhere, heard) = eavesdropper();
    for args in [
        &["ask", "OPS123", "Where does my token go?", "--yes-no"][..],
        &["list"],
    ] {
        let out = Command::new(QP)
            .args(args)
            .env("QP_CONFIG_DIR", &config)
            .env("QP_URL", &elsewhere)
            .env_remove("QP_TOKEN")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&elsewhere) && stderr.contains("--token"),
            "{stderr}"
        );
    }
    std::thread::sleep(Duration::from_millis(200));
    let heard = String::from_utf8_lossy(&heard.lock().unwrap()).into_owned();
    assert!(
        !heard.contains(&token),
        "the token reached {elsewhere}: {heard}"
    );
    assert!(heard.is_empty(), "nothing is sent there at all: {heard}");
    // Its own server, named explicitly (another spelling of the origin), works.
    let same = format!("{}/", env.url);
    let out = Command::new(QP)
        .args(["list"])
        .env("QP_CONFIG_DIR", &config)
        .env("QP_URL", &same)
        .env_remove("QP_TOKEN")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The stored token's own server answering
/// with a redirect elsewhere (another port here) does not carry the token
/// there: the client drops Authorization on a redirect to another host or
/// port.
#[test]
fn a_redirect_from_the_stored_server_does_not_carry_the_token() {
    use std::io::{Read, Write};
    let (elsewhere, heard) = eavesdropper();
    let redirector = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}", redirector.local_addr().unwrap());
    let location = elsewhere.clone();
    std::thread::spawn(move || {
        for conn in redirector.incoming().take(4) {
            let Ok(mut conn) = conn else { return };
            let _ = conn.set_read_timeout(Some(Duration::from_millis(500)));
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            let _ = write!(
                conn,
                "HTTP/1.1 307 Temporary Redirect\r\nLocation: {location}/api/agent/questions\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
        }
    });
    let config = tempfile::tempdir().unwrap();
    let token = "qpa_redirected0123456789abcdef";
    std::fs::write(
        config.path().join("credentials.json"),
        json!({"url": origin, "token": token, "agent_id": "a_1", "agent_name": "CI"}).to_string(),
    )
    .unwrap();
    let out = Command::new(QP)
        .args(["list"])
        .env("QP_CONFIG_DIR", config.path())
        .env_remove("QP_URL")
        .env_remove("QP_TOKEN")
        .output()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let heard = String::from_utf8_lossy(&heard.lock().unwrap()).into_owned();
    assert!(
        heard.contains("GET /api/agent/questions"),
        "followed: {heard} {out:?}"
    );
    assert!(
        !heard.contains(token),
        "the token went to {elsewhere}: {heard}"
    );
    assert!(
        !heard.to_ascii_lowercase().contains("authorization"),
        "{heard}"
    );
}

/// A terminal device whose token is revoked stops at its next
/// inbox poll with how to pair again (exit 1), instead of printing
/// `401 … retrying` forever.
#[test]
fn a_revoked_device_stops_and_says_how_to_pair_again() {
    let env = setup();
    let tok = admin_json(&env.db, &["token", "add", &env.uid, "--label", "laptop"]);
    let token = tok["token"].as_str().unwrap().to_string();
    let store = env.db.with_file_name("device-revoked.sqlite");
    let mut child = Command::new(QP)
        .arg("device")
        .arg("--store")
        .arg(&store)
        .env("QP_URL", &env.url)
        .env("QP_DEVICE_TOKEN", &token)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    loop {
        let line = out.next().expect("qp device exited").unwrap();
        if line.contains("waiting for questions") {
            break;
        }
    }
    std::thread::spawn(move || for _ in out.by_ref() {});
    let prefix = qp_server::ids::token_hash(&token)[..12].to_string();
    assert!(admin(&env.db, &["token", "revoke", &prefix])
        .status
        .success());
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > Duration::from_secs(40) {
            let _ = child.kill();
            panic!("qp device kept running after its token was revoked");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut err = String::new();
    use std::io::Read;
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains("Pair again") && err.contains("--pair"),
        "{err}"
    );
}
