//! `qp admin` as an operator runs it on a server's machine: it reads the
//! server's own settings (`--config`, `QP_CONFIG`, the `QP_*` variables,
//! `--db` over them), its invite links carry the URL phones reach (and a
//! link no phone could follow is refused), and users, rooms and agents are
//! named by id or name by one rule, `qp login --as` included.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

mod common;

use common::cli::{setup, QP};
use common::{admin, admin_json};

/// A server's config directory: its `qp.toml` (`db` naming
/// `server.sqlite` in the same directory, then `extra`).
struct Site {
    dir: tempfile::TempDir,
    config: PathBuf,
    db: PathBuf,
}

fn site(extra: &str) -> Site {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("server.sqlite");
    let config = dir.path().join("qp.toml");
    std::fs::write(&config, format!("db = {:?}\n{extra}", db.to_str().unwrap())).unwrap();
    Site { dir, config, db }
}

/// `qp admin ARGS` with nothing from the caller's environment that names a
/// server, in a directory of its own (so a default `qp.sqlite` is not
/// somebody's): its exit code, stdout and stderr.
fn qp_admin(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = Command::new(QP);
    cmd.arg("admin").args(args).current_dir(cwd);
    for var in [
        "QP_DB",
        "QP_CONFIG",
        "QP_PUBLIC_URL",
        "QP_LISTEN",
        "QP_TLS_CERT",
        "QP_TLS_KEY",
        "QP_ACME_DOMAIN",
        "QP_BEHIND_PROXY",
    ] {
        cmd.env_remove(var);
    }
    let out = cmd.envs(env.iter().copied()).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

impl Site {
    /// `qp admin --config qp.toml ARGS`.
    fn admin(&self, args: &[&str]) -> (i32, String, String) {
        let mut all = vec!["--config", self.config.to_str().unwrap()];
        all.extend_from_slice(args);
        qp_admin(self.dir.path(), &all, &[])
    }

    /// As [`Site::admin`], and it must succeed and print JSON.
    fn json(&self, args: &[&str]) -> Value {
        let (code, out, err) = self.admin(args);
        assert_eq!(code, 0, "qp admin {args:?}: {err}");
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
    }

    fn audited_invites(&self) -> usize {
        let (code, out, err) = self.admin(&["audit"]);
        assert_eq!(code, 0, "{err}");
        out.lines().filter(|l| l.contains("invite.create")).count()
    }
}

#[test]
fn invite_links_carry_the_public_url_from_the_servers_config() {
    let s = site("public_url = \"https://qp.example.com/\"\n");
    s.json(&["user", "add", "Dana Dev"]);
    let inv = s.json(&["user", "invite", "Dana Dev", "--json"]);
    let link = inv["link"].as_str().unwrap();
    assert_eq!(
        link,
        format!(
            "https://qp.example.com/pair#{}",
            inv["code"].as_str().unwrap()
        )
    );

    // QP_CONFIG alone names the same file.
    let (code, out, err) = qp_admin(
        s.dir.path(),
        &["user", "invite", "dana dev", "--json"],
        &[("QP_CONFIG", s.config.to_str().unwrap())],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("https://qp.example.com/pair#"), "{out}");

    // The QR code's text is the same link, and --url wins over the file.
    let (code, out, err) = s.admin(&[
        "user",
        "invite",
        "Dana Dev",
        "--url",
        "https://phones.example.net",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\nhttps://phones.example.net/pair#"), "{out}");
    assert!(!out.contains("127.0.0.1"), "{out}");

    // An agent's `qp login` line names the same server.
    s.json(&["room", "add", "Ops", "--code", "OPS123"]);
    s.json(&[
        "agent",
        "add",
        "Release Bot",
        "--owner",
        "Dana Dev",
        "--room",
        "Ops",
    ]);
    let (code, out, err) = s.admin(&["agent", "invite", "release bot"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("--url https://qp.example.com\n"), "{out}");
    assert_eq!(s.audited_invites(), 4, "each invite is audited once");
}

#[test]
fn without_public_url_the_link_names_the_listener_with_its_scheme_and_port() {
    // TLS from files: https, on the configured port (the files are not
    // read to make a link).
    let s = site("listen = \"127.0.0.1:8443\"\ntls_cert = \"cert.pem\"\ntls_key = \"key.pem\"\n");
    let uid = s.json(&["user", "add", "Federica"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    let inv = s.json(&["user", "invite", &uid, "--json"]);
    assert!(
        inv["link"]
            .as_str()
            .unwrap()
            .starts_with("https://127.0.0.1:8443/pair#"),
        "{inv}"
    );
    // The server's variables are read as `qp serve` reads them.
    let out = invite_under(&s, &uid, ("QP_LISTEN", "127.0.0.1:9001"));
    assert!(
        out.contains("\"link\":\"http://127.0.0.1:9001/pair#"),
        "{out}"
    );
    let out = invite_under(&s, &uid, ("QP_PUBLIC_URL", "https://qp.example.com"));
    assert!(
        out.contains("\"link\":\"https://qp.example.com/pair#"),
        "{out}"
    );
}

/// `qp admin user invite UID --json` on the site's database with one
/// server variable set; its output.
fn invite_under(s: &Site, uid: &str, var: (&str, &str)) -> String {
    let db = s.db.to_str().unwrap();
    let args = ["--db", db, "user", "invite", uid, "--json"];
    let (code, out, err) = qp_admin(s.dir.path(), &args, &[var]);
    assert_eq!(code, 0, "{err}");
    out
}

#[test]
fn a_link_to_loopback_is_refused_while_the_server_has_a_public_url() {
    let s = site("public_url = \"https://qp.example.com\"\n");
    s.json(&["user", "add", "Dana Dev"]);
    for url in [
        "http://127.0.0.1:8750",
        "http://localhost:8750/",
        "https://[::1]:8443",
    ] {
        let (code, out, err) = s.admin(&["user", "invite", "Dana Dev", "--url", url]);
        assert_eq!(code, 2, "{url}: {out}{err}");
        assert!(out.is_empty(), "no code, no QR: {out}");
        assert!(
            err.contains("loopback") && err.contains("public_url is https://qp.example.com"),
            "{url}: the sentence says why: {err}"
        );
        assert!(err.contains("leave out --url"), "and how to fix it: {err}");
    }
    assert_eq!(s.audited_invites(), 0, "no invite was made");

    // Without a public URL, loopback is this machine's server: allowed.
    let local = site("");
    local.json(&["user", "add", "Dana Dev"]);
    let inv = local.json(&["user", "invite", "Dana Dev", "--json"]);
    assert!(
        inv["link"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:8750/pair#"),
        "{inv}"
    );
}

#[test]
fn a_wildcard_listener_without_public_url_gives_no_link() {
    for listen in ["0.0.0.0:8750", "[::]:8750"] {
        let s = site(&format!("listen = \"{listen}\"\nbehind_proxy = true\n"));
        s.json(&["user", "add", "Dana Dev"]);
        s.json(&["agent", "add", "CI", "--owner", "Dana Dev"]);
        for args in [
            &["user", "invite", "Dana Dev"][..],
            &["user", "invite", "Dana Dev", "--json"],
            &["agent", "invite", "CI"],
        ] {
            let (code, out, err) = s.admin(args);
            assert_eq!(code, 2, "{listen} {args:?}: {out}{err}");
            assert!(out.is_empty(), "no link, no QR code: {out}");
            assert!(
                err.contains("not one a phone can connect to")
                    && err.contains("--url")
                    && err.contains("public_url"),
                "{listen}: the sentence asks for --url or public_url: {err}"
            );
        }
        assert_eq!(s.audited_invites(), 0);
        // Given the URL, the link is made.
        let (code, out, err) = s.admin(&[
            "user",
            "invite",
            "Dana Dev",
            "--url",
            "https://qp.example.com",
            "--json",
        ]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("https://qp.example.com/pair#"), "{out}");
    }
}

#[test]
fn the_config_file_names_the_database_and_db_wins_over_it() {
    let s = site("");
    let uid = s.json(&["user", "add", "Federica"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    // The file's db is the one written: the same rows through --db.
    let listed = admin(&s.db, &["user", "list"]);
    assert!(String::from_utf8_lossy(&listed.stdout).contains(&uid));
    assert!(
        !s.dir.path().join("qp.sqlite").exists(),
        "not the default database in the working directory"
    );
    // --db over the file.
    let other = s.dir.path().join("other.sqlite");
    let (code, out, err) = s.admin(&["--db", other.to_str().unwrap(), "user", "list"]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains(&uid), "{out}");
    // `qp migrate` finds the same database.
    let out = Command::new(QP)
        .args(["migrate", "--config", s.config.to_str().unwrap()])
        .env_remove("QP_DB")
        .current_dir(s.dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A file serve would refuse is refused here too, naming the file.
    let bad = s.dir.path().join("bad.toml");
    std::fs::write(&bad, "ask_burst = \"many\"\n").unwrap();
    let (code, _, err) = qp_admin(
        s.dir.path(),
        &["--config", bad.to_str().unwrap(), "user", "list"],
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("bad.toml") && err.contains("ask_burst"),
        "{err}"
    );
}

#[test]
fn users_rooms_and_agents_are_named_by_id_or_name_by_one_rule() {
    let s = site("");
    let dana = s.json(&["user", "add", "Dana Dev"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    let smith = s.json(&["user", "add", "Dana Smith"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    let sam = s.json(&["user", "add", "Sam"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    let sam2 = s.json(&["user", "add", "sam"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    s.json(&["room", "add", "Ops Team", "--code", "OPS123"]);

    // Exact, then any case, then whole words: each unique.
    for (typed, who) in [
        ("Dana Dev", &dana),
        ("dana dev", &dana),
        ("smith", &smith),
        ("Sam", &sam),
        ("sam", &sam2),
        (dana.as_str(), &dana),
    ] {
        let (code, _, err) = s.admin(&["room", "add-member", "ops team", typed]);
        assert_eq!(code, 0, "{typed}: {err}");
        let (_, members, _) = s.admin(&["room", "members", "OPS123"]);
        assert!(
            members.contains(who.as_str()),
            "{typed} is {who}: {members}"
        );
    }

    // Several match: listed, exit 2, nothing done.
    let (code, out, err) = s.admin(&["user", "disable", "dana"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains(&format!("{dana} (Dana Dev)"))
            && err.contains(&format!("{smith} (Dana Smith)")),
        "the matches are listed: {err}"
    );
    let (code, _, err) = s.admin(&["token", "add", "SAM"]);
    assert_eq!(code, 2, "Sam and sam differ only in case: {err}");
    assert!(err.contains(&sam) && err.contains(&sam2), "{err}");

    // Nobody: an error naming what was typed.
    let (code, _, err) = s.admin(&["room", "add-member", "OPS123", "Zed"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no user \"Zed\""), "{err}");
    let (code, _, err) = s.admin(&["room", "members", "Kitchen"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no room \"Kitchen\""), "{err}");

    // Agents by name, the result and the audit by id.
    let agent = s.json(&[
        "agent",
        "add",
        "Release Bot",
        "--owner",
        "dana dev",
        "--room",
        "ops team",
    ]);
    assert_eq!(agent["owner_user_id"], dana.as_str());
    let id = agent["id"].as_str().unwrap();
    let out = s.json(&["agent", "disable", "release bot"]);
    assert_eq!(out["agent"], id);
    let out = s.json(&["user", "disable", "Dana Dev"]);
    assert_eq!(out["user"], dana.as_str());
    let (_, audit, _) = s.admin(&["audit"]);
    assert!(
        audit.contains(&format!("\"subject\":\"{dana}\"")) && audit.contains("user.disable"),
        "{audit}"
    );
    let (_, help, _) = s.admin(&["room", "add-member", "--help"]);
    assert!(help.contains("id or name"), "{help}");
}

/// `qp login --as NAME` asks the person that name picks by the same rule;
/// a name several people match is refused without naming them.
#[test]
fn qp_login_as_takes_a_name_by_the_same_rule() {
    let env = setup();
    admin_json(&env.db, &["user", "add", "Dana Dev"]);
    admin_json(&env.db, &["user", "add", "Sam Jones"]);
    admin_json(&env.db, &["user", "add", "Sam Smith"]);
    for who in ["dana dev", "sam jones", "sam smith"] {
        let out = admin(&env.db, &["room", "add-member", "ops", who]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let mut login = env
        .qp(&[
            "login", "--url", &env.url, "--as", "dana", "--room", "OPS123",
        ])
        .env("QP_CONFIG_DIR", env._dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let first = BufReader::new(login.stderr.take().unwrap())
        .lines()
        .next()
        .unwrap()
        .unwrap();
    let _ = login.kill();
    let _ = login.wait();
    assert!(
        first.starts_with("Asked Dana Dev on their phone"),
        "{first}"
    );

    let out = env
        .qp(&[
            "login", "--url", &env.url, "--as", "sam", "--room", "OPS123",
        ])
        .env("QP_CONFIG_DIR", env._dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("nobody of that id or name") && !err.contains("Sam"),
        "refused without naming anyone: {err}"
    );
}

/// `qp admin --help` says which refusals exit 2 (a rule broken, a limit
/// reached, a name several match) and that other failures exit 1, and the
/// commands do as it says.
#[test]
fn the_help_says_which_refusals_exit_2_and_the_commands_do_so() {
    let s = site("");
    let (code, help, err) = qp_admin(s.dir.path(), &["--help"], &[]);
    assert_eq!(code, 0, "{err}");
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        help.contains(
            "2 refused for what was typed (a rule broken, a limit reached, a name several match), \
             1 any other failure"
        ),
        "{help}"
    );
    // A rule broken: 2, with a sentence naming the field.
    let (code, out, err) = s.admin(&["user", "add", " "]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("name"), "{err}");
    // A database that cannot be opened (under a file, not a directory): 1.
    let unopenable = s.config.join("qp.sqlite");
    let (code, out, err) = qp_admin(
        s.dir.path(),
        &["--db", unopenable.to_str().unwrap(), "user", "list"],
        &[],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("cannot open database"), "{err}");
}
