//! The install kit stays in step with the server's settings: the commented
//! sample config (deploy/qp.toml) lists every key the config file takes,
//! each at a value the server parses, and the operator's guide
//! (docs/operators.md) names every one. The keys come from the settings
//! type itself (the names serde's derive gives `PartialSettings`), so a new
//! setting fails this test until both are updated.

use std::path::Path;

use qp_server::config::PartialSettings;

/// Every key of the config file, as the server reads them.
fn config_keys() -> Vec<&'static str> {
    qp_server::config::config_keys().to_vec()
}

fn repo_file(path: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn the_sample_config_lists_every_key_at_a_value_the_server_takes() {
    let keys = config_keys();
    assert!(keys.len() > 30, "{keys:?}");
    let sample = repo_file("deploy/qp.toml");
    let mut seen = std::collections::BTreeSet::new();
    for line in sample.lines() {
        let Some(setting) = line.strip_prefix("# ") else {
            continue;
        };
        let Some((key, _)) = setting.split_once(" = ") else {
            continue;
        };
        if !key.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') {
            continue;
        }
        // Each line alone, uncommented, is a config file the server reads
        // (unknown keys and wrong types are refused).
        toml::from_str::<PartialSettings>(setting)
            .unwrap_or_else(|e| panic!("deploy/qp.toml: {setting:?}: {e}"));
        seen.insert(key.to_string());
    }
    let missing: Vec<_> = keys.iter().filter(|k| !seen.contains(**k)).collect();
    assert!(missing.is_empty(), "deploy/qp.toml lacks {missing:?}");
}

#[test]
fn the_operators_guide_names_every_setting() {
    let guide = repo_file("docs/operators.md");
    let missing: Vec<_> = config_keys()
        .into_iter()
        .filter(|k| !guide.contains(&format!("`{k}`")))
        .collect();
    assert!(missing.is_empty(), "docs/operators.md lacks {missing:?}");
}

/// `QP_DB_FILE` and `QP_METRICS_TOKEN_FILE` (a container's or systemd's
/// secret files) give the database and the scrape token: the built `qp
/// serve` started with only those serves /metrics to the token from the
/// file and refuses others.
#[tokio::test]
async fn secrets_are_read_from_their_file_variables() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("from-file.sqlite");
    let token = "scrape-secret-from-a-file-0123";
    std::fs::write(dir.path().join("db"), format!("{}\n", db.display())).unwrap();
    std::fs::write(dir.path().join("token"), format!("{token}\n")).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_qp"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env_remove("QP_DB")
        .env_remove("QP_METRICS_TOKEN")
        .env("QP_DB_FILE", dir.path().join("db"))
        .env("QP_METRICS_TOKEN_FILE", dir.path().join("token"))
        .env("QP_LOG", "warn")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let base = loop {
        let line = lines.next().expect("qp serve exited").unwrap();
        if let Some(rest) = line.split("listening on ").nth(1) {
            break rest.trim().to_string();
        }
    };
    let http = reqwest::Client::new();
    let metrics = |bearer: &'static str| {
        let req = http.get(format!("{base}/metrics")).bearer_auth(bearer);
        async move { req.send().await.unwrap().status().as_u16() }
    };
    let (with, without) = (
        metrics(token).await,
        metrics("not-the-token-0123456789").await,
    );
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!((with, without), (200, 401));
    assert!(db.exists(), "the database named in QP_DB_FILE was not used");
}

/// `qp serve` (the built binary) on a loopback port over a database in
/// `dir`: the process, its base URL and what it logged before listening.
fn serve_built_qp(dir: &Path) -> (std::process::Child, String, String) {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_qp"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("QP_DB", dir.join("app.sqlite"))
        .env("QP_LOG", "info")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut said = String::new();
    let base = loop {
        let line = lines.next().expect("qp serve exited").unwrap();
        if let Some(rest) = line.split("listening on ").nth(1) {
            break rest.trim().to_string();
        }
        said.push_str(&line);
        said.push('\n');
    };
    std::thread::spawn(move || for _ in lines {});
    (child, base, said)
}

/// The `qp` cargo builds with no preparation (the README's build, the
/// tests' binary) serves the web responder at `/app/`: its page as HTML
/// under the strict Content-Security-Policy, and the WebAssembly it loads,
/// not an error. Its start log says the app is in.
#[tokio::test]
async fn the_built_qp_serves_the_web_app() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, base, said) = serve_built_qp(dir.path());
    let http = reqwest::Client::new();
    let page = http.get(format!("{base}/app/")).send().await.unwrap();
    let (status, headers) = (page.status().as_u16(), page.headers().clone());
    let html = page.text().await.unwrap();
    let wasm = http
        .get(format!("{base}/app/pkg/qp_web_bg.wasm"))
        .send()
        .await
        .unwrap();
    let wasm_type = wasm.headers()[reqwest::header::CONTENT_TYPE].clone();
    let wasm_bytes = wasm.bytes().await.unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(status, 200, "/app/ answered {status}: {html}");
    assert_eq!(
        headers[reqwest::header::CONTENT_TYPE],
        "text/html; charset=utf-8"
    );
    assert!(
        headers[reqwest::header::CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap()
            .starts_with("default-src 'none'; script-src 'self' 'wasm-unsafe-eval'"),
        "{headers:?}"
    );
    assert!(
        html.starts_with("<!doctype html>") && html.contains("src=\"pkg/qp_web.js\""),
        "{html}"
    );
    assert_eq!(wasm_type, "application/wasm");
    assert!(wasm_bytes.starts_with(b"\0asm"), "not WebAssembly");
    assert!(said.contains("web_app=true"), "start log: {said}");
}

/// The web app is sent compressed as the browser accepts (Brotli, else
/// gzip, else as is), each with its own validator, and a browser that has
/// the bytes gets a bodiless 304: a reload downloads none of the app again.
/// The service worker carries the shell's version, stamped at build time.
#[tokio::test]
async fn the_web_app_is_sent_compressed_and_validated() {
    use reqwest::header::{ACCEPT_ENCODING, CONTENT_ENCODING, ETAG, IF_NONE_MATCH, VARY};
    let dir = tempfile::tempdir().unwrap();
    let (mut child, base, _) = serve_built_qp(dir.path());
    let http = reqwest::Client::new();
    let wasm = format!("{base}/app/pkg/qp_web_bg.wasm");
    let get = |coding: &'static str, etag: Option<String>| {
        let mut req = http.get(&wasm);
        if !coding.is_empty() {
            req = req.header(ACCEPT_ENCODING, coding);
        }
        if let Some(e) = etag {
            req = req.header(IF_NONE_MATCH, e);
        }
        req.send()
    };
    let raw = get("", None).await.unwrap();
    assert!(raw.headers().get(CONTENT_ENCODING).is_none());
    let raw_tag = raw.headers()[ETAG].to_str().unwrap().to_string();
    let raw_len = raw.bytes().await.unwrap().len();

    let br = get("gzip, deflate, br", None).await.unwrap();
    assert_eq!(br.status(), 200);
    assert_eq!(br.headers()[CONTENT_ENCODING], "br");
    assert_eq!(br.headers()[VARY], "accept-encoding");
    let br_tag = br.headers()[ETAG].to_str().unwrap().to_string();
    let br_len = br.bytes().await.unwrap().len();
    assert!(br_len * 3 < raw_len, "brotli {br_len} of {raw_len} bytes");

    let gz = get("gzip;q=1, br;q=0", None).await.unwrap();
    assert_eq!(gz.headers()[CONTENT_ENCODING], "gzip");
    let gz_tag = gz.headers()[ETAG].to_str().unwrap().to_string();
    let gz_bytes = gz.bytes().await.unwrap();
    assert!(gz_bytes.starts_with(&[0x1f, 0x8b]) && gz_bytes.len() < raw_len / 2);
    assert!(raw_tag != br_tag && br_tag != gz_tag && raw_tag != gz_tag);

    // Revalidation: the same bytes are not sent again; other bytes are.
    let again = get("gzip, br", Some(br_tag.clone())).await.unwrap();
    assert_eq!(again.status(), 304);
    assert_eq!(again.headers()[ETAG], br_tag.as_str());
    assert!(again.bytes().await.unwrap().is_empty());
    let other = get("gzip", Some(br_tag)).await.unwrap();
    assert_eq!(
        other.status(),
        200,
        "a gzip client holding the brotli bytes"
    );

    let sw = http
        .get(format!("{base}/app/sw.js"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let version = sw
        .split("'qp-shell-")
        .nth(1)
        .and_then(|r| r.split('\'').next())
        .unwrap_or("");
    assert!(
        version.len() == 16 && version.bytes().all(|b| b.is_ascii_hexdigit()),
        "shell version {version:?}"
    );
}

const TABLE_BEGIN: &str =
    "<!-- settings table: generated from `qp serve --help` by cli/tests/install_kit.rs -->";
const TABLE_END: &str = "<!-- end of settings table -->";

/// The guide's settings table is made from the flags' help (the one place
/// each setting is described and its default written): QP_WRITE_DOCS=1
/// writes it, and the test still fails so a write never passes unseen.
#[test]
fn the_operators_guide_settings_table_is_generated_from_the_flags() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/operators.md");
    let guide = std::fs::read_to_string(&path).unwrap();
    let (before, rest) = guide
        .split_once(TABLE_BEGIN)
        .expect("the table's begin marker");
    let (table, after) = rest.split_once(TABLE_END).expect("the table's end marker");
    let generated = format!("\n{}", qp_cli::serve::settings_reference());
    if std::env::var_os("QP_WRITE_DOCS").is_some() {
        std::fs::write(
            &path,
            format!("{before}{TABLE_BEGIN}{generated}{TABLE_END}{after}"),
        )
        .unwrap();
        panic!("docs/operators.md written; run again without QP_WRITE_DOCS");
    }
    assert_eq!(
        table, generated,
        "docs/operators.md's settings table is stale: QP_WRITE_DOCS=1 cargo test -p qp --test install_kit"
    );
}

/// Each default the help states is the server's: the key set to that value
/// resolves to exactly the settings of no key at all. (A default that is
/// a description, such as "http(s):// + --listen", is checked where its
/// first word is a value.)
#[test]
fn every_default_the_help_states_is_the_real_default() {
    let defaults = format!(
        "{:?}",
        PartialSettings::default()
            .resolve(PartialSettings::default())
            .unwrap()
    );
    let mut checked = Vec::new();
    for d in qp_cli::serve::settings_docs() {
        let Some(default) = d.default else { continue };
        let value = default.split(", ").next().unwrap();
        if value.contains(' ') || value.starts_with("--") {
            continue; // a description, not a value
        }
        let parsed = [
            value.to_string(),
            format!("{value:?}"),
            format!("[{value:?}]"),
        ]
        .into_iter()
        .find_map(|v| toml::from_str::<PartialSettings>(&format!("{} = {v}", d.key)).ok());
        let Some(set) = parsed else { continue };
        let resolved = set.resolve(PartialSettings::default());
        let Ok(resolved) = resolved else { continue };
        assert_eq!(
            format!("{resolved:?}"),
            defaults,
            "`{}` says [default: {default}], which is not the server's default",
            d.key
        );
        checked.push(d.key);
    }
    assert!(
        checked.len() >= 30,
        "only {} defaults checked: {checked:?}",
        checked.len()
    );
}

/// The limits the book quotes in prose are the constants the code uses
/// (the protocol's in qp-core, the server's own): a change to one fails
/// here until the docs say the same.
#[test]
fn the_docs_quote_the_real_limits() {
    use qp_core::protocol::limits as l;
    let ttl_max_days = l::TTL_MAX_SECS / 86_400;
    assert_eq!(
        ttl_max_days * 86_400,
        l::TTL_MAX_SECS,
        "ttl's maximum is quoted in days"
    );
    let checks: Vec<(&str, String)> = vec![
        (
            "docs/decisions/0001-lengths.md",
            format!(
                "`prompt` 1-{}, `context` ≤ {}, option `value` 1-{}, `label` 1-{}, `placeholder` ≤ {}, `correlation_id`/`reply_to` ≤ {}",
                l::PROMPT_MAX_CHARS,
                l::CONTEXT_MAX_CHARS,
                l::OPTION_VALUE_MAX_CHARS,
                l::OPTION_LABEL_MAX_CHARS,
                l::PLACEHOLDER_MAX_CHARS,
                l::CORRELATION_ID_MAX_CHARS
            ),
        ),
        (
            "docs/decisions/0009-text-input-max-length.md",
            format!(
                "default {0}, values above {0} capped to {0}",
                l::TEXT_MAX_LENGTH_CAP
            ),
        ),
        (
            "docs/decisions/0012-ttl.md",
            format!(
                "default {} s, clamped into [{} s, {ttl_max_days} days]",
                l::TTL_DEFAULT_SECS,
                l::TTL_MIN_SECS
            ),
        ),
        (
            "docs/decisions/0013-data.md",
            format!(
                "at most {} KiB (compact JSON) and {} levels",
                l::DATA_MAX_BYTES / 1024,
                l::DATA_MAX_DEPTH
            ),
        ),
        (
            "docs/decisions/0019-ids-and-names.md",
            format!(
                "are 1-{} of `A-Z a-z 0-9 _ -`",
                l::ID_MAX_CHARS
            ),
        ),
        (
            "docs/decisions/0019-ids-and-names.md",
            format!("1-{} characters on one line", l::NAME_MAX_CHARS),
        ),
        (
            "docs/agents/mcp.md",
            format!(
                "one line of at most {} characters without quotation marks",
                l::CLIENT_TEXT_MAX_CHARS
            ),
        ),
        (
            "docs/operators/security.md",
            format!(
                "one line of at most {} characters without quotation marks",
                l::CLIENT_TEXT_MAX_CHARS
            ),
        ),
        (
            "docs/introduction.md",
            format!("{} to {} options", l::OPTIONS_MIN, l::OPTIONS_MAX),
        ),
        (
            "README.md",
            format!("{} to {} options", l::OPTIONS_MIN, l::OPTIONS_MAX),
        ),
        (
            "docs/agents/mcp.md",
            format!("{} to {} `options`", l::OPTIONS_MIN, l::OPTIONS_MAX),
        ),
        (
            "docs/agents/wire-api.md",
            format!(
                "request target over {} KiB",
                qp_server::http::error::MAX_URI_BYTES / 1024
            ),
        ),
    ];
    for (file, quoted) in checks {
        let text = repo_file(file);
        // The book wraps lines: compare with runs of white space as one.
        let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat(&text).contains(&flat(&quoted)),
            "{file} does not quote {quoted:?} (the constant changed, or the text did)"
        );
    }
}

/// The platform budgets the app chapters quote are the core's.
#[test]
fn the_app_chapters_quote_the_phones_budgets() {
    use qp_core::phone::{ANSWER_DELIVERY_BUDGET, EXTENSION_NETWORK_BUDGET};
    let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let ios = flat(&repo_file("docs/apps/ios.md"));
    let android = flat(&repo_file("docs/apps/android.md"));
    let delivery = format!("within {} s", ANSWER_DELIVERY_BUDGET.as_secs());
    let network = format!("network budget, {} s", EXTENSION_NETWORK_BUDGET.as_secs());
    assert!(
        ios.contains(&delivery),
        "docs/apps/ios.md lacks {delivery:?}"
    );
    assert!(ios.contains(&network), "docs/apps/ios.md lacks {network:?}");
    let go_async = format!("goAsync, {} s", ANSWER_DELIVERY_BUDGET.as_secs());
    assert!(
        android.contains(&go_async),
        "docs/apps/android.md lacks {go_async:?}"
    );
}
