//! Suspend and resume: after `Phone::suspend` no file lock is held on any of
//! the store's files (iOS kills a suspended process that holds one in the
//! shared App Group container: `0xdead10cc`), also when suspend arrives in
//! the middle of a flush, and nothing committed is lost.
//!
//! The locks are probed from another process (POSIX record locks are
//! per process, as iOS sees them): a Python child asks for an exclusive
//! `fcntl` lock over the whole of the database, its WAL and its shared-memory
//! file, without waiting, and then a second SQLite connection takes an
//! exclusive lock. Before suspend the probe must find the lock SQLite holds
//! on the shared-memory file while a WAL connection is open, so the probe is
//! known to see what it looks for.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use qp_core::http::{HttpError, HttpRequest, HttpResponse, HttpTransport, ScriptedTransport};
use qp_core::payload::Push;
use qp_core::phone::{Phone, PhoneError};
use qp_core::store::{AnswerState, StoreError, StoreMode};
use qp_core::sync::TokenProvider;

struct Token;
impl TokenProvider for Token {
    fn token(&self) -> Option<String> {
        Some("qpu_test".into())
    }
}

const APNS: &str = r#"{"aps":{"alert":{"title":"Release Bot asks you","body":"Deploy?"}},
 "qp":{"v":1,"id":"q_1","room":{"code":"OPS123","name":"Ops"},"asker":"Release Bot","prompt":"Deploy?",
 "context":null,"options":[{"value":"approve","label":"Approve","style":"primary"},{"value":"deny","label":"Deny","style":"danger"}],
 "text_input":null,"responder_scope":"direct","target_user_id":"u_me",
 "expires_at":"2030-06-27T11:30:00Z","created_at":"2026-06-27T10:30:00Z"}}"#;

/// Each line of the probe's output: "<file> free" or "<file> locked", then
/// "sqlite exclusive ok" or "sqlite exclusive busy: ...".
const PROBE: &str = r#"
import fcntl, os, sqlite3, sys
db = sys.argv[1]
for path in (db, db + "-wal", db + "-shm"):
    if not os.path.exists(path):
        print(os.path.basename(path), "absent"); continue
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 0, 0)
        print(os.path.basename(path), "free")
        fcntl.lockf(fd, fcntl.LOCK_UN, 0, 0)
    except OSError:
        print(os.path.basename(path), "locked")
    finally:
        os.close(fd)
try:
    c = sqlite3.connect(db, timeout=0, isolation_level=None)
    c.execute("PRAGMA locking_mode=EXCLUSIVE")
    c.execute("BEGIN EXCLUSIVE")
    c.execute("SELECT count(*) FROM questions").fetchone()
    c.execute("ROLLBACK")
    c.close()
    print("sqlite exclusive ok")
except sqlite3.Error as e:
    print("sqlite exclusive busy:", e)
"#;

fn probe(db: &Path) -> Vec<String> {
    let out = Command::new("python3")
        .arg("-c")
        .arg(PROBE)
        .arg(db)
        .output()
        .expect("python3 runs (the lock probe)");
    assert!(
        out.status.success(),
        "probe failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

fn assert_no_lock(db: &Path) {
    let lines = probe(db);
    for line in &lines {
        assert!(
            line.ends_with(" free") || line.ends_with(" absent") || line == "sqlite exclusive ok",
            "a lock is still held after suspend: {lines:?}"
        );
    }
}

fn phone(db: &Path, http: Arc<dyn HttpTransport>) -> Phone {
    Phone::open(
        db,
        StoreMode::Extension,
        "http://127.0.0.1:9",
        "u_me",
        Arc::new(Token),
        &[],
        http,
    )
    .unwrap()
}

#[test]
fn after_suspend_no_lock_is_held_and_resume_carries_on() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shared.sqlite");
    let p = phone(&db, Arc::new(ScriptedTransport::offline()));
    p.receive_apns(APNS).unwrap();
    p.answer_action("q_1", "qp.v.approve", None).unwrap();

    // Open: SQLite holds its shared-memory lock, and the probe sees it.
    let before = probe(&db);
    assert!(
        before.contains(&"shared.sqlite-shm locked".to_string()),
        "the probe must see the open connection's lock: {before:?}"
    );

    p.suspend().unwrap();
    assert_no_lock(&db);
    p.suspend().unwrap(); // twice is harmless

    // Suspended: store calls say so; decoding still works (the extension
    // can still show a push).
    assert!(matches!(
        p.answer_status("q_1"),
        Err(PhoneError::Store(StoreError::Suspended))
    ));
    assert!(matches!(p.receive_apns(APNS), Ok(Push::Question(_))));

    p.resume().unwrap();
    let kept = p.store().answer_for("q_1").unwrap().unwrap();
    assert_eq!(
        kept.state,
        AnswerState::Queued,
        "the committed answer is kept"
    );
    p.resume().unwrap(); // twice is harmless
}

/// A server that takes the request and answers (503) only when told, so a
/// flush is in flight for as long as the test wants.
#[derive(Default)]
struct Stalled {
    go: AtomicBool,
}

#[async_trait::async_trait]
impl HttpTransport for Stalled {
    async fn send(&self, _request: HttpRequest) -> Result<HttpResponse, HttpError> {
        while !self.go.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(HttpResponse {
            status: 503,
            body: br#"{"error":{"code":"unavailable","message":"try later"}}"#.to_vec(),
        })
    }
}

#[test]
fn suspend_in_the_middle_of_a_flush_holds_no_lock_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shared.sqlite");
    let stalled = Arc::new(Stalled::default());
    let p = Arc::new(phone(&db, stalled.clone()));
    p.receive_apns(APNS).unwrap();
    p.answer_action("q_1", "qp.v.approve", None).unwrap();

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let flushing = {
        let p = p.clone();
        rt.spawn(async move { p.flush().await })
    };
    // Wait until the answer is claimed and its request is on the wire.
    for _ in 0..200 {
        if p.store().answer_for("q_1").unwrap().unwrap().state == AnswerState::Sending {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        p.store().answer_for("q_1").unwrap().unwrap().state,
        AnswerState::Sending
    );

    p.suspend().unwrap();
    assert_no_lock(&db);

    // The server answers now: the flush cannot record the outcome (the
    // store is closed), stops with the store's error, and takes no lock.
    stalled.go.store(true, Ordering::SeqCst);
    let result = rt.block_on(flushing).unwrap();
    assert!(
        matches!(result, Err(PhoneError::Store(StoreError::Suspended))),
        "{result:?}"
    );
    assert_no_lock(&db);

    // Resumed (the next launch): the answer is still there, and the app's
    // launch step queues it again for the next flush.
    p.resume().unwrap();
    assert_eq!(p.requeue_interrupted().unwrap(), 1);
    let e = p.store().answer_for("q_1").unwrap().unwrap();
    assert_eq!(e.state, AnswerState::Queued);
}

#[test]
fn suspend_waits_for_the_store_work_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shared.sqlite");
    let p = Arc::new(phone(&db, Arc::new(ScriptedTransport::offline())));
    p.receive_apns(APNS).unwrap();
    // A writer in another thread, committing as fast as it can while the
    // main thread suspends: every write either lands whole before suspend
    // or is refused as Suspended; none is torn, and no lock is left.
    let started = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let writer = {
        let (p, started) = (p.clone(), started.clone());
        std::thread::spawn(move || {
            let (mut landed, mut refused) = (0u32, 0u32);
            for i in 0..20_000 {
                match p.store().save_draft("q_1", &format!("draft {i}"), "test") {
                    Ok(()) => {
                        landed += 1;
                        started.store(landed, std::sync::atomic::Ordering::SeqCst);
                    }
                    Err(StoreError::Suspended) => refused += 1,
                    Err(e) => panic!("unexpected store error: {e}"),
                }
                // Let the suspending thread in (std's mutex is not fair).
                std::thread::sleep(Duration::from_micros(20));
            }
            (landed, refused)
        })
    };
    while started.load(std::sync::atomic::Ordering::SeqCst) < 10 {
        std::thread::sleep(Duration::from_millis(1));
    }
    p.suspend().unwrap();
    assert_no_lock(&db);
    let (landed, refused) = writer.join().unwrap();
    assert_eq!(landed + refused, 20_000);
    assert!(
        landed >= 10 && refused > 0,
        "suspend came mid-way: {landed} landed, {refused} refused"
    );
    p.resume().unwrap();
    assert!(p.store().is_intact().unwrap());
    let last = p.draft("q_1").unwrap().unwrap();
    assert_eq!(
        last,
        format!("draft {}", landed - 1),
        "the last landed write is the one kept"
    );
}

/// Holds the store's write lock from another process (the extension in the
/// middle of a transaction) until its stdin closes.
const WRITER: &str = r#"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], timeout=0, isolation_level=None)
c.execute("BEGIN IMMEDIATE")
print("held", flush=True)
sys.stdin.read()
c.execute("ROLLBACK")
c.close()
"#;

#[test]
fn suspend_returns_within_its_bound_while_another_process_holds_the_write_lock() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shared.sqlite");
    let p = phone(&db, Arc::new(ScriptedTransport::offline()));
    p.receive_apns(APNS).unwrap();
    p.answer_action("q_1", "qp.v.approve", None).unwrap();

    let mut writer = Command::new("python3")
        .arg("-c")
        .arg(WRITER)
        .arg(&db)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs (the other process)");
    let mut line = String::new();
    std::io::BufReader::new(writer.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "held");

    // The open connection would wait 5 s for the writer: suspend must not
    // (iOS runs it in a background task of a few seconds).
    let started = std::time::Instant::now();
    p.suspend().unwrap();
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(1),
        "suspend took {took:?} while another process held the write lock"
    );
    assert!(p.store().is_suspended());

    drop(writer.stdin.take()); // the other process rolls back and exits
    assert!(writer.wait().unwrap().success());
    assert_no_lock(&db);
    p.resume().unwrap();
    let kept = p.store().answer_for("q_1").unwrap().unwrap();
    assert_eq!(kept.state, AnswerState::Queued, "nothing committed is lost");
    assert!(p.store().is_intact().unwrap());
}
