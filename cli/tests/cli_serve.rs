//! `qp serve` and `qp admin` as an operator meets them: names the admin
//! refuses, stopping cleanly, memory after a burst, help texts, and the
//! database's password and file kept out of every output.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod common;

use common::cli::{finish, setup, QP};
use common::{admin, admin_json};

/// Names the phone cannot decode are refused where they are made (the admin
/// CLI), by the same rules the phone's decoder applies.
#[test]
fn the_admin_refuses_names_and_ids_a_phone_could_not_show() {
    let env = setup();
    for args in [
        vec!["user", "add", "Bob", "--id", "u_bob.smith"],
        vec!["user", "add", "José", "--id", "u_josé"],
        vec!["room", "add", "Ops\nTeam"],
        vec!["user", "add", "Bob\u{7}"],
    ] {
        let out = admin(&env.db, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?} was accepted");
        assert!(!String::from_utf8_lossy(&out.stderr).is_empty());
    }
    let out = admin(&env.db, &["agent", "add", "CI\tbot", "--owner", &env.uid]);
    assert_eq!(out.status.code(), Some(2));
}

/// A typed answer with terminal escape sequences is shown, not obeyed; and a
/// shell gate can tell a typed "approve" from the tapped option.
#[test]
fn typed_answers_are_terminal_safe_and_distinguishable_from_options() {
    let env = setup();
    let ask = |extra: &[&str]| {
        let mut args = vec![
            "ask", "OPS123", "Ship?", "--option", "approve", "--option", "deny", "--text", "why",
            "--wait",
        ];
        args.extend_from_slice(extra);
        env.qp(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let child = ask(&[]);
    let id = env.pending_id();
    env.answer(&id, json!({"text": "ok\u{1b}]0;pwned\u{7}\u{1b}[2J"}));
    let (code, out, _) = finish(child);
    assert_eq!(code, 0);
    assert_eq!(out, "ok\\x1b]0;pwned\\x07\\x1b[2J\n");
    assert!(!out.contains('\u{1b}'));

    // `--print value`: a typed "approve" prints nothing and exits 5 ...
    let child = ask(&["--print", "value"]);
    let id = env.pending_id();
    env.answer(&id, json!({"text": "approve"}));
    let (code, out, _) = finish(child);
    assert_eq!((code, out.as_str()), (5, ""));
    // ... and the tapped option prints its value and exits 0.
    let child = ask(&["--print", "value"]);
    let id = env.pending_id();
    env.answer(&id, json!({"value": "approve"}));
    let (code, out, _) = finish(child);
    assert_eq!((code, out.as_str()), (0, "approve\n"));
}

/// Stopping the server (SIGTERM) answers parked long-polls at once with the
/// question as it stands (pending, so clients re-poll) instead of dropping
/// them, and exits cleanly.
#[test]
fn stopping_answers_parked_long_polls_and_exits_cleanly() {
    let mut env = setup();
    let (_, id, _) = env.run(&["ask", "OPS123", "Hold?", "--yes-no"]);
    let id = id.trim().to_string();
    let url = format!("{}/api/agent/questions/{id}/wait?timeout=30", env.url);
    let token = env.agent_token.clone();
    let waiter = std::thread::spawn(move || {
        let started = Instant::now();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (status, body) = rt.block_on(async {
            let r = reqwest::Client::new()
                .get(url)
                .bearer_auth(token)
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        });
        (status, body, started.elapsed())
    });
    std::thread::sleep(Duration::from_millis(500)); // the long-poll is parked
    let killed = Command::new("kill")
        .args(["-TERM", &env.serve.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let (status, body, took) = waiter.join().unwrap();
    assert_eq!(
        (status, body["state"].as_str()),
        (200, Some("pending")),
        "{body}"
    );
    assert!(
        took < Duration::from_secs(5),
        "answered after {took:?}, not at once"
    );
    let t = Instant::now();
    loop {
        if let Some(exit) = env.serve.try_wait().unwrap() {
            assert!(exit.success(), "qp serve exited with {exit}");
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "qp serve did not stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap()
}

/// After a burst of long-polls ends, the server gives the memory back
/// (the report: 12,000 long-polls, seven times, left 291 MB resident for
/// good with 11 MB idle).
#[test]
fn memory_is_returned_after_a_burst_of_long_polls() {
    use std::io::{Read, Write};
    rlimit::increase_nofile_limit(u64::MAX).unwrap();
    let env = setup();
    let (_, id, _) = env.run(&["ask", "OPS123", "Burst?", "--yes-no"]);
    let id = id.trim().to_string();
    let pid = env.serve.id();
    let addr = env.url.trim_start_matches("http://").to_string();
    std::thread::sleep(Duration::from_millis(300));
    let idle = rss_kb(pid);
    let mut peak = 0;
    for _wave in 0..3 {
        let mut socks = Vec::new();
        for _ in 0..4_000 {
            let mut s = std::net::TcpStream::connect(&addr).unwrap();
            write!(
                s,
                "GET /api/agent/questions/{id}/wait?timeout=5 HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {}\r\nconnection: close\r\n\r\n",
                env.agent_token
            )
            .unwrap();
            socks.push(s);
        }
        // The peak is sampled while the waits are parked (they last 5 s):
        // on a loaded machine the server may still be accepting the last
        // connections after a fixed pause, so one sample can miss it.
        let parked = Instant::now();
        while parked.elapsed() < Duration::from_millis(3500) {
            peak = peak.max(rss_kb(pid));
            std::thread::sleep(Duration::from_millis(100));
        }
        for mut s in socks {
            let mut sink = Vec::new();
            let _ = s.read_to_end(&mut sink);
        }
    }
    // The server trims within a few seconds of the burst ending. The
    // bounds are relative to what the burst took: how much a burst of
    // long-polls grows the server depends on the build and the machine,
    // and a fixed figure either misses the burst or passes when nothing
    // is given back.
    let grown = peak.saturating_sub(idle);
    let kept_at_most = grown / 2;
    let t = Instant::now();
    let mut after = rss_kb(pid);
    while after.saturating_sub(idle) > kept_at_most && t.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(500));
        after = rss_kb(pid);
    }
    eprintln!("idle {idle} KB, peak {peak} KB, {after} KB after the burst");
    assert!(
        grown > 8_000,
        "the burst did not grow memory ({idle} -> {peak} KB)"
    );
    assert!(
        after.saturating_sub(idle) <= kept_at_most,
        "idle {idle} KB, peak {peak} KB, {after} KB after the burst: \
         more than half of what the burst took was kept"
    );
}

/// `qp admin device --help` says what a device is tied to and how one goes.
#[test]
fn device_help_explains_revoking_and_removing() {
    let help = |args: &[&str]| {
        let out = Command::new(QP).args(args).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let text = help(&["admin", "device", "--help"]);
    assert!(text.contains("list") && text.contains("remove"), "{text}");
    assert!(
        text.contains("revoking that\ntoken") || text.contains("revoking that token"),
        "{text}"
    );
    let text = help(&["admin", "device", "list", "--help"]);
    assert!(text.contains("--user") && text.contains("e2e or"), "{text}");
    let text = help(&["admin", "device", "remove", "--help"]);
    assert!(text.contains("registered by another user"), "{text}");
    let text = help(&["admin", "token", "revoke", "--help"]);
    assert!(text.contains("devices it"), "{text}");
}

/// One `qp` run of a table: its arguments and its environment.
type QpRun<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)]);

/// A PostgreSQL URL in QP_DB carries a password: `--help` names the
/// variable but never prints its value.
#[test]
fn help_never_prints_the_database_password() {
    for args in [
        &["serve", "--help"][..],
        &["admin", "--help"],
        &["admin", "user", "--help"],
    ] {
        let out = Command::new(QP)
            .args(args)
            .env("QP_DB", "postgres://qp:s3cret@db.internal/qp")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("QP_DB"), "{args:?}: {text}");
        assert!(!text.contains("s3cret"), "{args:?}: {text}");
    }
}

/// Runs the built `qp` with `args` (and `env`), without QP_DB from outside:
/// its exit code and everything it printed.
fn qp_output(args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let out = Command::new(QP)
        .args(args)
        .env_remove("QP_DB")
        .envs(env.iter().copied())
        .env("QP_LOG", "info")
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// A PostgreSQL password never shows in what `qp
/// admin` and `qp serve` print, however it was written: in the user info,
/// as `?password=`, with an unencoded `@`, in a URL that does not parse, in
/// QP_DB, in a config file. Every host is 127.0.0.1 port 1 (refused at once).
#[test]
fn no_error_prints_the_database_password() {
    let dir = tempfile::tempdir().unwrap();
    let urls = [
        "postgres://qp:Pw1Secret@127.0.0.1:1/qp",
        "postgres://qp@127.0.0.1:1/qp?password=Pw1Secret",
        "postgres://qp:Pw1@Tail9@127.0.0.1:1/qp",
        "postgres://qp:Pw1Secret@127.0.0.1:notaport/qp",
        "postgresql://qp:Pw1Secret@127.0.0.1:1/qp?sslmode=disable&password=Pw1Secret",
        // An unencoded & in `?password=`: the driver takes what follows for
        // an option it does not know, and its error quoted that name.
        "postgres://qp@127.0.0.1:1/qp?password=Pw1&Tail9=x",
    ];
    let sqlite = dir.path().join("qp.sqlite");
    let sqlite = sqlite.to_str().unwrap();
    for url in urls {
        let config = dir.path().join("qp.toml");
        std::fs::write(&config, format!("db = \"{url}\"\n")).unwrap();
        let config = config.to_str().unwrap();
        let runs: [QpRun; 5] = [
            (&["admin", "--db", url, "user", "list"], &[]),
            (&["admin", "user", "list"], &[("QP_DB", url)]),
            (&["admin", "--db", sqlite, "copy-to-postgres", url], &[]),
            (&["serve", "--listen", "127.0.0.1:0", "--db", url], &[]),
            (
                &["serve", "--listen", "127.0.0.1:0", "--config", config],
                &[],
            ),
        ];
        for (args, env) in runs {
            let (code, text) = qp_output(args, env);
            assert_ne!(code, 0, "{args:?}: {text}");
            for secret in ["Pw1", "Secret", "Tail9"] {
                assert!(
                    !text.contains(secret),
                    "{args:?} {env:?} printed {secret}: {text}"
                );
            }
        }
    }
    let (_, text) = qp_output(&["admin", "--db", urls[1], "user", "list"], &[]);
    assert!(
        text.contains("postgres://qp:***@127.0.0.1:1/qp?password=***"),
        "the rest of the URL is shown: {text}"
    );
    let (code, text) = qp_output(&["admin", "--db", urls[2], "user", "list"], &[]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("as %40"), "{text}");
}

/// Libpq's `host=… password=…` form and a
/// URL whose scheme is in capitals were taken for SQLite file names: `qp
/// admin` made a database (or folders) named after the password and
/// succeeded on it, and `qp serve` would have run on SQLite. Now the
/// keyword form is refused without being quoted, and `POSTGRES://` is read
/// as PostgreSQL (here: refused at 127.0.0.1 port 1, the URL redacted).
#[test]
fn a_libpq_keyword_string_or_a_capital_scheme_is_never_a_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "host=127.0.0.1 port=1 user=qp password=Pw1Secret",
            "key=value form is not read",
        ),
        (
            "POSTGRES://qp:Pw1Secret@127.0.0.1:1/qp",
            "postgres://qp:***@127.0.0.1:1/qp",
        ),
        (
            "PostgreSQL://qp@127.0.0.1:1/qp?password=Pw1Secret",
            "postgresql://qp:***@127.0.0.1:1/qp?password=***",
        ),
    ];
    for (url, says) in cases {
        let runs: [QpRun; 2] = [
            (&["admin", "--db", url, "user", "list"], &[]),
            (&["admin", "user", "list"], &[("QP_DB", url)]),
        ];
        for (args, env) in runs {
            let out = Command::new(QP)
                .args(args)
                .env_remove("QP_DB")
                .envs(env.iter().copied())
                .current_dir(dir.path())
                .output()
                .unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert_ne!(out.status.code(), Some(0), "{args:?} {env:?}: {text}");
            assert!(text.contains(says), "{args:?} {env:?}: {text}");
            for secret in ["Pw1", "Secret"] {
                assert!(!text.contains(secret), "{args:?} {env:?}: {text}");
            }
            let made: Vec<_> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert!(made.is_empty(), "{args:?} {env:?} made {made:?}");
        }
    }
}

/// A config file that TOML cannot read was
/// reported with toml's rendering, which quotes the line: a password with
/// a `"` or `\` in `db`, a misspelt `database =` key, an unterminated
/// `metrics_token`. Now the line and column, never the line.
#[test]
fn a_config_file_error_never_quotes_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        (
            "db = \"postgres://qp:Pw1\"Secret@127.0.0.1:1/qp\"\n",
            "line 1, column 25",
        ),
        (
            "db = \"postgres://qp:Pw1\\Secret@127.0.0.1:1/qp\"\n",
            "line 1, column 25",
        ),
        (
            "database = \"postgres://qp:Pw1Secret@127.0.0.1:1/qp\"\n",
            "unknown field `database`",
        ),
        (
            "listen = \"127.0.0.1:0\"\nmetrics_token = \"Pw1Secret-0123456789\n",
            "line 2",
        ),
        ("metrics_token = 1234567890123456789\n", "line 1"),
    ];
    for (text, says) in files {
        let config = dir.path().join("qp.toml");
        std::fs::write(&config, text).unwrap();
        let config = config.to_str().unwrap();
        let (code, out) = qp_output(
            &["serve", "--listen", "127.0.0.1:0", "--config", config],
            &[],
        );
        assert_ne!(code, 0, "{text}: {out}");
        assert!(out.contains(says), "{text}: {out}");
        for secret in ["Pw1", "Secret", "1234567890123456789"] {
            assert!(!out.contains(secret), "{text}: {out}");
        }
    }
}

/// The database (webhook secrets in clear) is made
/// owner-only, its folder too, and SQLite's -wal and -shm follow; a
/// database found open to others is named in a warning at start-up.
#[test]
fn the_database_is_owner_only_and_a_wider_one_is_warned_about() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path();
    let db = folder.join("qp.sqlite");
    admin_json(&db, &["user", "add", "Federica"]);
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&db), 0o600);
    // A folder qp makes for it is owner-only too.
    let nested = folder.join("state/qp.sqlite");
    admin_json(&nested, &["user", "add", "Federica"]);
    assert_eq!(mode(&nested), 0o600);
    assert_eq!(mode(nested.parent().unwrap()), 0o700);

    let start = |db: &std::path::Path| {
        let mut serve = Command::new(QP)
            .args(["serve", "--listen", "127.0.0.1:0", "--db"])
            .arg(db)
            .env("QP_LOG", "warn")
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut before = Vec::new();
        let mut lines = BufReader::new(serve.stderr.take().unwrap()).lines();
        loop {
            let line = lines.next().expect("qp serve exited").unwrap();
            if line.contains("listening on ") {
                break;
            }
            before.push(line);
        }
        std::thread::spawn(move || for _ in lines {});
        (serve, before.join("\n"))
    };
    let (mut serve, said) = start(&db);
    for suffix in ["-wal", "-shm"] {
        let side = folder.join(format!("qp.sqlite{suffix}"));
        assert_eq!(mode(&side), 0o600, "{}", side.display());
    }
    assert!(!said.contains("open to other users"), "{said}");
    let _ = serve.kill();
    let _ = serve.wait();

    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (mut serve, said) = start(&db);
    let _ = serve.kill();
    let _ = serve.wait();
    assert!(
        said.contains(&format!(
            "the database {} is open to other users (mode 644)",
            db.display()
        )) && said.contains("chmod 600"),
        "{said}"
    );
}

/// The VAPID private key (it signs Web Push as this server) is made 0600;
/// one found open to others is named in a warning at start-up, as the
/// database and the TLS key are.
#[test]
fn a_vapid_key_open_to_others_is_warned_about() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("qp.sqlite");
    admin_json(&db, &["user", "add", "Federica"]);
    let key = dir.path().join("qp.sqlite.vapid-key");
    let start = || {
        let mut serve = Command::new(QP)
            .args(["serve", "--listen", "127.0.0.1:0", "--db"])
            .arg(&db)
            .env("QP_LOG", "warn")
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut before = Vec::new();
        let mut lines = BufReader::new(serve.stderr.take().unwrap()).lines();
        loop {
            let line = lines.next().expect("qp serve exited").unwrap();
            if line.contains("listening on ") {
                break;
            }
            before.push(line);
        }
        let _ = serve.kill();
        let _ = serve.wait();
        before.join("\n")
    };
    let said = start();
    let mode = || std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(), 0o600);
    assert!(!said.contains("open to other users"), "{said}");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let said = start();
    assert!(
        said.contains(&format!(
            "the VAPID private key (Web Push) {} is open to other users (mode 644)",
            key.display()
        )) && said.contains("chmod 600"),
        "{said}"
    );
}
