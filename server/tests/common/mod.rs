//! Test fixtures: a real server on an ephemeral loopback port over a
//! temporary SQLite file, or over a fresh PostgreSQL database when
//! `QP_TEST_POSTGRES` names a server (`scripts/test` starts one and runs the
//! API suites on both), identities made through the store, and HTTP helpers.
#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;

use qp_server::config::Settings;
use qp_server::serve::{start, RunningServer};
use qp_server::store::{self, identity, Database};
use serde_json::Value;

pub struct Fixture {
    pub dir: tempfile::TempDir,
    /// The SQLite file, or the PostgreSQL database, the server uses.
    pub database: Database,
    pub server: Option<RunningServer>,
    pub base: String,
    pub http: reqwest::Client,
    pub room_code: String,
    pub room_id: String,
    pub other_room_code: String,
    pub alice: String,
    pub alice_token: String,
    pub bob: String,
    pub bob_token: String,
    /// Carol is not a member of the room.
    pub carol: String,
    pub carol_token: String,
    pub agent_token: String,
    /// A second agent, allowed in the same room.
    pub agent2_token: String,
}

/// The PostgreSQL server the suites run against (`postgres://user@host:port`,
/// no database name), when one is given.
pub fn test_postgres() -> Option<String> {
    std::env::var("QP_TEST_POSTGRES")
        .ok()
        .filter(|s| !s.is_empty())
}

/// For the tests that only PostgreSQL can run (marked `#[ignore]`, run by
/// `scripts/test postgres` with `--include-ignored`): fails, saying why,
/// when no server is given, instead of passing having run nothing.
pub fn require_postgres() {
    assert!(
        test_postgres().is_some(),
        "this test needs PostgreSQL: set QP_TEST_POSTGRES=postgres://user@host:port (scripts/test postgres starts one)"
    );
}

/// A database for one test: a file in `dir`, or a new, empty PostgreSQL
/// database on the test server (left for the throwaway cluster to take).
pub fn test_database(dir: &std::path::Path) -> Database {
    match test_postgres() {
        None => Database::Sqlite(dir.join("qp.sqlite")),
        Some(server) => {
            let server = server.trim_end_matches('/');
            let name = format!(
                "qp_test_{}",
                qp_server::ids::new_id("db")
                    .replace('-', "_")
                    .to_lowercase()
            );
            let admin = format!("{server}/postgres");
            let create = format!("CREATE DATABASE {name}");
            std::thread::spawn(move || {
                postgres::Client::connect(&admin, postgres::NoTls)
                    .expect("QP_TEST_POSTGRES: cannot connect to the test PostgreSQL server")
                    .batch_execute(&create)
                    .unwrap()
            })
            .join()
            .unwrap();
            Database::Postgres(format!("{server}/{name}"))
        }
    }
}

pub fn test_settings(db: PathBuf) -> Settings {
    settings_for(Database::Sqlite(db))
}

pub fn settings_for(db: Database) -> Settings {
    Settings {
        listen: "127.0.0.1:0".parse().unwrap(),
        db,
        sweep_interval: Duration::from_millis(100),
        webhook_retry_base: Duration::from_millis(50),
        webhook_timeout: Duration::from_secs(2),
        ..Settings::default()
    }
}

impl Fixture {
    pub async fn new() -> Fixture {
        Self::with(|_| {}).await
    }

    pub async fn with(tweak: impl FnOnce(&mut Settings)) -> Fixture {
        Self::build(tweak, None).await
    }

    pub async fn build(
        tweak: impl FnOnce(&mut Settings),
        push: Option<std::sync::Arc<dyn qp_server::push::PushTransport>>,
    ) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let database = test_database(dir.path());
        let conn = connect(&database);
        let ops = seed_ops_room(&conn);
        let other = identity::create_room(&conn, "Elsewhere", Some("ELSE99")).unwrap();
        let carol = identity::create_user(&conn, "Carol", None).unwrap();
        identity::add_member(&conn, &other.id, &carol.id).unwrap();
        let (_, agent2_token) = identity::create_agent(
            &conn,
            "Other Bot",
            &ops.bob_id,
            &["ask".to_string()],
            std::slice::from_ref(&ops.room_id),
        )
        .unwrap();
        let carol_token = identity::create_user_token(&conn, &carol.id, "phone").unwrap();
        drop(conn);

        let mut settings = settings_for(database.clone());
        tweak(&mut settings);
        let server = start(settings, push).await.unwrap();
        let base = format!("http://{}", server.addr);
        Fixture {
            dir,
            database,
            server: Some(server),
            base,
            http: reqwest::Client::new(),
            room_code: ops.room_code,
            room_id: ops.room_id,
            other_room_code: other.code,
            alice: ops.alice_id,
            alice_token: ops.alice,
            bob: ops.bob_id,
            bob_token: ops.bob,
            carol: carol.id,
            carol_token,
            agent_token: ops.agent,
            agent2_token,
        }
    }

    /// A second connection to the server's database.
    pub fn db(&self) -> Box<store::Conn> {
        connect(&self.database)
    }

    pub fn on_postgres(&self) -> bool {
        matches!(self.database, Database::Postgres(_))
    }

    /// Waits until the server holds at least `n` parked long-polls (its
    /// metrics' count), failing after 10 s: a test that answers before its
    /// waiters park would see them read the answer, not be released by it.
    pub async fn until_parked(&self, n: i64) {
        let app = &self.server.as_ref().expect("a running server").app;
        let until = std::time::Instant::now() + Duration::from_secs(10);
        while app
            .metrics
            .parked
            .load(std::sync::atomic::Ordering::Relaxed)
            < n
        {
            assert!(
                std::time::Instant::now() < until,
                "the waiters never parked"
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// Stops the server and starts a new one on the same database file.
    pub async fn restart(&mut self, tweak: impl FnOnce(&mut Settings)) {
        if let Some(s) = self.server.take() {
            s.stop().await;
        }
        let mut settings = settings_for(self.database.clone());
        tweak(&mut settings);
        let server = start(settings, None).await.unwrap();
        self.base = format!("http://{}", server.addr);
        self.server = Some(server);
    }

    pub async fn stop(&mut self) {
        if let Some(s) = self.server.take() {
            s.stop().await;
        }
    }

    pub async fn call(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (u16, Value) {
        let url = format!("{}{}", self.base, path);
        let mut req = self.http.request(method.parse().unwrap(), url);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// Asks as the main agent; panics unless 201.
    pub async fn ask(&self, body: Value) -> Value {
        let (status, q) = self
            .call(
                "POST",
                &format!("/api/agent/rooms/{}/questions", self.room_code),
                Some(&self.agent_token),
                Some(body),
            )
            .await;
        assert_eq!(status, 201, "ask failed: {q}");
        q
    }

    /// Cancels as the main agent.
    pub async fn cancel(&self, id: &str) -> (u16, Value) {
        self.call(
            "POST",
            &format!("/api/agent/questions/{id}/cancel"),
            Some(&self.agent_token),
            None,
        )
        .await
    }

    pub async fn answer(&self, token: &str, id: &str, body: Value) -> (u16, Value) {
        self.call(
            "POST",
            &format!("/api/questions/{id}/answer"),
            Some(token),
            Some(body),
        )
        .await
    }

    /// Moves a question's deadline to `secs` from now (negative: overdue),
    /// since the protocol's minimum ttl is a minute.
    pub fn set_expiry(&self, id: &str, secs: i64) {
        let t = chrono::Utc::now().timestamp() + secs;
        let s = qp_core::protocol::time::format(&chrono::DateTime::from_timestamp(t, 0).unwrap());
        let db = self.db();
        let body: String = db
            .query_row(
                "SELECT body FROM questions WHERE id = ?1",
                qp_server::params![id],
                |r| r.get(0),
            )
            .unwrap();
        let mut body: Value = serde_json::from_str(&body).unwrap();
        body["expires_at"] = Value::String(s);
        db.execute(
            "UPDATE questions SET expires_at = ?2, body = ?3 WHERE id = ?1",
            qp_server::params![id, t, body.to_string()],
        )
        .unwrap();
    }
}

pub fn err_code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or("<none>")
}

pub fn err_field(body: &Value) -> &str {
    body["error"]["field"].as_str().unwrap_or("<none>")
}

/// The Python that runs the third-party clients in `tests/python` (the MCP
/// SDK, an OpenAPI validator): `scripts/ensure-test-python` makes its
/// virtualenv when missing. A failure to make it fails the test.
pub fn test_python() -> PathBuf {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let out = std::process::Command::new(format!("{root}/scripts/ensure-test-python"))
        .output()
        .expect("scripts/ensure-test-python runs");
    assert!(
        out.status.success(),
        "could not make the test Python's virtualenv:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rel = String::from_utf8(out.stdout).unwrap();
    std::path::Path::new(root).join(rel.trim())
}

/// The app's key storage for the device key (the Keychain, the Keystore),
/// in memory.
#[derive(Default)]
pub struct MemoryKeys(std::sync::Mutex<Option<Vec<u8>>>);

impl qp_core::phone::DeviceKeyStore for MemoryKeys {
    fn load_device_key(&self) -> Option<Vec<u8>> {
        self.0.lock().unwrap().clone()
    }
    fn save_device_key(&self, key: Vec<u8>) -> bool {
        *self.0.lock().unwrap() = Some(key);
        true
    }
}

/// Whether `needle` appears anywhere in the server's stored data: the raw
/// SQLite file (WAL included), or every text column of every PostgreSQL
/// table.
pub fn database_contains(f: &Fixture, needle: &str) -> bool {
    match &f.database {
        Database::Sqlite(path) => [path.clone(), path.with_extension("sqlite-wal")]
            .iter()
            .filter_map(|p| std::fs::read(p).ok())
            .any(|raw| raw.windows(needle.len()).any(|w| w == needle.as_bytes())),
        Database::Postgres(_) => {
            let db = f.db();
            let columns: Vec<(String, String)> = db
                .query_map(
                    "SELECT table_name::text, column_name::text FROM information_schema.columns
                     WHERE table_schema = 'public' AND data_type = 'text'",
                    &[],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .unwrap();
            columns.iter().any(|(table, column)| {
                db.query_row(
                    &format!("SELECT COUNT(*) FROM {table} WHERE strpos({column}, ?1) > 0"),
                    qp_server::params![needle],
                    |r| r.get::<i64>(0),
                )
                .unwrap()
                    > 0
            })
        }
    }
}

/// A connection the async tests can use: SQLite directly; PostgreSQL on a
/// thread of its own (the sync client runs its own runtime, which cannot
/// start inside the test's), each call sent there and awaited.
pub fn connect(database: &Database) -> Box<store::Conn> {
    match database {
        Database::Sqlite(_) => store::connect(database).unwrap(),
        Database::Postgres(_) => Box::new(ThreadConn::new(database.clone())),
    }
}

type Call = Box<dyn FnOnce(&store::Conn) + Send>;

pub struct ThreadConn {
    calls: std::sync::mpsc::Sender<Call>,
}

impl ThreadConn {
    fn new(database: Database) -> ThreadConn {
        let (calls, rx) = std::sync::mpsc::channel::<Call>();
        let (ready, ok) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let conn = store::connect(&database).unwrap();
            ready.send(()).unwrap();
            for call in rx {
                call(&*conn);
            }
        });
        ok.recv().expect("connecting to the test database");
        ThreadConn { calls }
    }

    fn call<T: Send + 'static>(&self, f: impl FnOnce(&store::Conn) -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        self.calls
            .send(Box::new(move |c| {
                let _ = tx.send(f(c));
            }))
            .unwrap();
        rx.recv().unwrap()
    }
}

fn owned(params: &[store::sql::Param]) -> Vec<store::sql::Value> {
    use store::sql::{Param, Value};
    params
        .iter()
        .map(|p| match p {
            Param::Null => Value::Null,
            Param::Int(i) => Value::Int(*i),
            Param::Text(t) => Value::Text(t.to_string()),
        })
        .collect()
}

fn borrowed(values: &[store::sql::Value]) -> Vec<store::sql::Param<'_>> {
    use store::sql::{Param, Value};
    values
        .iter()
        .map(|v| match v {
            Value::Null => Param::Null,
            Value::Int(i) => Param::Int(*i),
            Value::Text(t) => Param::Text(t),
        })
        .collect()
}

impl store::sql::Sql for ThreadConn {
    fn backend(&self) -> store::Backend {
        store::Backend::Postgres
    }
    fn execute(&self, sql: &str, params: &[store::sql::Param]) -> store::DbResult<usize> {
        let (sql, values) = (sql.to_string(), owned(params));
        self.call(move |c| c.execute(&sql, &borrowed(&values)))
    }
    fn query(
        &self,
        sql: &str,
        params: &[store::sql::Param],
    ) -> store::DbResult<Vec<store::sql::Row>> {
        let (sql, values) = (sql.to_string(), owned(params));
        self.call(move |c| c.query(&sql, &borrowed(&values)))
    }
    fn batch(&self, sql: &str) -> store::DbResult<()> {
        let sql = sql.to_string();
        self.call(move |c| c.batch(&sql))
    }
}

/// The room most tests use: "Ops" (OPS123) with Alice and Bob in it, the
/// agent "Release Bot" (Alice's, allowed in the room), and a phone token
/// for each person.
pub struct OpsRoom {
    pub room_id: String,
    pub room_code: String,
    pub alice_id: String,
    pub bob_id: String,
    /// Bearer tokens.
    pub alice: String,
    pub bob: String,
    pub agent: String,
}

pub fn seed_ops_room(conn: &store::Conn) -> OpsRoom {
    let room = identity::create_room(conn, "Ops", Some("OPS123")).unwrap();
    let alice = identity::create_user(conn, "Alice", None).unwrap();
    let bob = identity::create_user(conn, "Bob", None).unwrap();
    identity::add_member(conn, &room.id, &alice.id).unwrap();
    identity::add_member(conn, &room.id, &bob.id).unwrap();
    let (_, agent) = identity::create_agent(
        conn,
        "Release Bot",
        &alice.id,
        &["ask".to_string()],
        std::slice::from_ref(&room.id),
    )
    .unwrap();
    OpsRoom {
        alice: identity::create_user_token(conn, &alice.id, "phone").unwrap(),
        bob: identity::create_user_token(conn, &bob.id, "phone").unwrap(),
        agent,
        room_id: room.id,
        room_code: room.code,
        alice_id: alice.id,
        bob_id: bob.id,
    }
}

/// Asks in room OPS123 of the server at `base`: the status and the body.
pub async fn ask_at(http: &reqwest::Client, base: &str, agent: &str, body: &Value) -> (u16, Value) {
    let r = http
        .post(format!("{base}/api/agent/rooms/OPS123/questions"))
        .bearer_auth(agent)
        .json(body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

/// Answers `id` with the option `value` (and an Idempotency-Key when
/// given): the status and the body as sent. An error when the server cannot
/// be reached (tests that kill one).
pub async fn answer_at(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    id: &str,
    value: &str,
    key: Option<&str>,
) -> reqwest::Result<(u16, String)> {
    let mut request = http
        .post(format!("{base}/api/questions/{id}/answer"))
        .bearer_auth(token)
        .json(&serde_json::json!({ "value": value }));
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    let r = request.send().await?;
    Ok((r.status().as_u16(), r.text().await?))
}

/// A JSON request to a running `qp serve` from a test with no runtime of its
/// own (the tests that drive `qp` as a process).
pub fn http_blocking(
    base: &str,
    method: &str,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> Value {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut req = reqwest::Client::new()
            .request(method.parse().unwrap(), format!("{base}{path}"))
            .bearer_auth(token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        req.send().await.unwrap().json().await.unwrap()
    })
}

/// Waits (10 s at most) until the responder holding `token` has a pending
/// question, and returns its id.
pub fn pending_id_blocking(base: &str, token: &str) -> String {
    let t = std::time::Instant::now();
    loop {
        let p = http_blocking(base, "GET", "/api/questions/pending", token, None);
        if let Some(id) = p["questions"][0]["id"].as_str() {
            return id.to_string();
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "no pending question appeared"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Answers question `id` as the responder holding `token`; the answer must
/// be the one recorded.
pub fn answer_blocking(base: &str, token: &str, id: &str, body: Value) {
    let path = format!("/api/questions/{id}/answer");
    let a = http_blocking(base, "POST", &path, token, Some(body));
    assert_eq!(a["state"], "answered", "{a}");
}

/// The phone core's network for tests: reqwest (qp-client's transport),
/// trusting the web's roots, as `qp device` runs it.
pub fn phone_net() -> std::sync::Arc<dyn qp_core::http::HttpTransport> {
    std::sync::Arc::new(qp_client::ReqwestTransport::new(&qp_client::ExtraCa::none()).unwrap())
}
