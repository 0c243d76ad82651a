//! The session's rules against a small stand-in of the server's phone API
//! (pairing, devices, revoking a token, one question to answer), reached
//! through the scripted transport, which can be taken offline. The same flows run against the real `qp serve` in
//! qp-server's phone_session suite and in the Swift and Kotlin suites.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::tests::{block_on, server_question, MemoryKeys, APNS};
use super::*;
use crate::actions::option_action_id;
use crate::http::Scripted;
use crate::protocol::device::Platform;

/// The app's Keychain, in memory.
#[derive(Default)]
pub(super) struct Vault {
    pub(super) slots: Mutex<HashMap<String, String>>,
    forgotten: Mutex<Vec<String>>,
}

impl TokenVault for Vault {
    fn save_token(&self, user_id: &str, token: &str) -> Result<(), String> {
        self.slots
            .lock()
            .unwrap()
            .insert(user_id.into(), token.into());
        Ok(())
    }
    fn token(&self, user_id: &str) -> Option<String> {
        self.slots.lock().unwrap().get(user_id).cloned()
    }
    fn forget_token(&self, user_id: &str) {
        self.slots.lock().unwrap().remove(user_id);
        self.forgotten.lock().unwrap().push(user_id.into());
    }
}

/// What the stand-in server holds.
#[derive(Default)]
pub(super) struct Server {
    tokens: HashSet<String>,
    /// id -> (push token, the token that registered it)
    devices: HashMap<String, (String, String)>,
    /// Every `POST /api/devices` and pairing with a device, in order.
    registrations: Vec<String>,
    /// The `public_key` of each `POST /api/devices`, in order.
    public_keys: Vec<Option<String>>,
    pub(super) answers: Vec<Value>,
    next: u32,
    /// Every request line with a live token, in order (`GET /api/questions/pending`).
    pub(super) requests: Vec<String>,
    /// q_1 was answered by another of the person's phones ("Deny", by Federica).
    pub(super) answered_elsewhere: bool,
}

pub(super) struct Fake {
    url: String,
    pub(super) state: Arc<Mutex<Server>>,
    offline: Arc<AtomicBool>,
    /// Accepts connections and never answers (a captive portal, a dead
    /// proxy): each request costs the client its full timeout.
    pub(super) hang: Arc<AtomicBool>,
    connections: Arc<std::sync::atomic::AtomicUsize>,
}

impl Fake {
    pub(super) fn start() -> Fake {
        let state = Arc::new(Mutex::new(Server::default()));
        let offline = Arc::new(AtomicBool::new(false));
        let hang = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (st, off, hung, count) = (
            state.clone(),
            offline.clone(),
            hang.clone(),
            connections.clone(),
        );
        let url = super::test_net::serve(move |request| {
            count.fetch_add(1, Ordering::SeqCst);
            if hung.load(Ordering::SeqCst) {
                return Scripted::Hang;
            }
            if off.load(Ordering::SeqCst) {
                // Offline: the connection dies without an answer.
                return Scripted::unreachable();
            }
            let line = format!("{} {} HTTP/1.1", request.method.as_str(), request.path());
            let auth = request
                .header("authorization")
                .and_then(|v| v.strip_prefix("Bearer "))
                .map(String::from);
            let body = serde_json::from_slice(request.body.as_deref().unwrap_or_default())
                .unwrap_or(Value::Null);
            let (status, reply) = handle(&mut st.lock().unwrap(), &line, auth, body);
            let status = status[..3].parse().unwrap();
            Scripted::json(status, &reply)
        });
        Fake {
            url,
            state,
            offline,
            hang,
            connections,
        }
    }

    fn devices(&self) -> Vec<String> {
        let mut d: Vec<String> = self
            .state
            .lock()
            .unwrap()
            .devices
            .values()
            .map(|(push, _)| push.clone())
            .collect();
        d.sort();
        d
    }

    fn registrations(&self) -> Vec<String> {
        self.state.lock().unwrap().registrations.clone()
    }

    fn token_live(&self, token: &str) -> bool {
        self.state.lock().unwrap().tokens.contains(token)
    }

    /// The operator revokes `token` (`qp admin token revoke`): its devices
    /// go with it, as on the real server.
    fn revoke(&self, token: &str) {
        let mut s = self.state.lock().unwrap();
        s.tokens.remove(token);
        s.devices.retain(|_, (_, by)| by != token);
    }

    pub(super) fn set_offline(&self, off: bool) {
        self.offline.store(off, Ordering::SeqCst);
    }
}

fn handle(s: &mut Server, line: &str, auth: Option<String>, body: Value) -> (&'static str, Value) {
    let mut parts = line.split(' ');
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let unauthorized = (
        "401 Unauthorized",
        json!({"error": {"code": "unauthorized", "message": "token revoked"}}),
    );
    let new_device = |s: &mut Server, push: &str, token: &str| {
        s.next += 1;
        let id = format!("dev_{}", s.next);
        // One device per push token, as the server keeps it.
        s.devices.retain(|_, (p, _)| p != push);
        s.devices
            .insert(id.clone(), (push.to_string(), token.to_string()));
        s.registrations.push(push.to_string());
        id
    };
    if (method, path) == ("POST", "/api/pair") {
        s.next += 1;
        let token = format!("qpu_session{}", s.next);
        s.tokens.insert(token.clone());
        let device = body["device"]["push_token"]
            .as_str()
            .map(|push| new_device(s, push, &token));
        return (
            "200 OK",
            json!({"token": token, "user": {"id": "u_me", "display_name": "Me"},
                   "device": device.map(|id| json!({"id": id}))}),
        );
    }
    let Some(token) = auth.filter(|t| s.tokens.contains(t)) else {
        return unauthorized;
    };
    s.requests.push(format!("{method} {path}"));
    // q_1 as the server holds it: pending, or answered (here or elsewhere).
    let q_1 = |s: &Server| {
        let mut q = server_question("Deploy?");
        let (value, id, name) = match (s.answered_elsewhere, s.answers.first()) {
            (true, _) => (Some("deny".to_string()), "u_fed", "Federica"),
            (false, Some(a)) => (a["value"].as_str().map(String::from), "u_me", "Me"),
            (false, None) => return q,
        };
        q.state = crate::protocol::QuestionState::Answered;
        // The label, as the server records it with the value.
        let label = value.as_deref().map(|v| {
            let mut c = v.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect())
                .unwrap_or_default()
        });
        q.answer = Some(crate::protocol::Answer {
            value,
            label,
            text: None,
            responder: crate::protocol::Responder {
                id: id.into(),
                display_name: name.into(),
            },
            answered_at: Utc::now(),
        });
        q.resolved_at = Some(Utc::now());
        q
    };
    match (method, path) {
        ("GET", "/api/questions/pending") => {
            let q = q_1(s);
            let pending: Vec<_> = (q.state == crate::protocol::QuestionState::Pending)
                .then_some(q)
                .into_iter()
                .collect();
            ("200 OK", json!({ "questions": pending }))
        }
        ("POST", "/api/devices") => {
            let push = body["push_token"].as_str().unwrap_or_default().to_string();
            s.public_keys
                .push(body["public_key"].as_str().map(str::to_string));
            let id = new_device(s, &push, &token);
            ("201 Created", json!({"id": id}))
        }
        ("DELETE", "/api/me/token") => {
            s.tokens.remove(&token);
            s.devices.retain(|_, (_, by)| *by != token);
            ("204 No Content", json!({}))
        }
        ("DELETE", p) if p.starts_with("/api/devices/") => {
            match s.devices.remove(&p["/api/devices/".len()..]) {
                Some(_) => ("204 No Content", json!({})),
                None => ("404 Not Found", json!({"error": {"message": "no device"}})),
            }
        }
        ("GET", "/api/questions/q_1") => ("200 OK", serde_json::to_value(q_1(s)).unwrap()),
        ("POST", "/api/questions/q_1/answer") => {
            s.answers.push(body.clone());
            ("200 OK", serde_json::to_value(q_1(s)).unwrap())
        }
        _ => (
            "404 Not Found",
            json!({"error": {"code": "not_found", "message": "no"}}),
        ),
    }
}

pub(super) fn session(path: &std::path::Path, mode: StoreMode, vault: &Arc<Vault>) -> Phone {
    Phone::open_session(path, mode, vault.clone(), &[], super::test_net::net()).unwrap()
}

fn ios_device(push_token: &str) -> DeviceRegistration {
    DeviceRegistration {
        platform: Platform::Ios,
        push_token: push_token.into(),
        app_id: Some("io.questionprotocol.test".into()),
        locale: None,
        public_key: None,
        apns_environment: None,
    }
}

fn apns(byte: char) -> String {
    std::iter::repeat_n(byte, 64).collect()
}

pub(super) fn link(fake: &Fake) -> String {
    format!("{}/pair#K7QD-8M3X-PA2F-9TRV", fake.url)
}

#[test]
fn a_push_token_handed_over_before_pairing_is_registered_once_at_sign_in() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start();
    let vault = Arc::new(Vault::default());
    let phone = session(&dir.path().join("s.sqlite"), StoreMode::App, &vault);
    block_on(async {
        // The OS hands the token over at launch, before the person pairs.
        assert_eq!(phone.update_push_token(&apns('a')).await, Ok(false));
        assert_eq!(phone.update_push_token(&apns('a')).await, Ok(false));
        assert!(
            fake.registrations().is_empty(),
            "nothing sent before pairing"
        );
        // Kept in the vault, never in the store.
        assert_eq!(vault.token(PUSH_TOKEN_SLOT), Some(apns('a')));
        assert!(!store_contains(dir.path(), &apns('a')));
        // Signing in with the registration's fields (no token in hand):
        // the kept token is registered in the pairing call, once.
        let account = phone
            .sign_in(&link(&fake), None, "iPhone", Some(&ios_device("")))
            .await
            .unwrap();
        assert!(account.device_id.is_some());
        assert_eq!(fake.registrations(), vec![apns('a')]);
        assert_eq!(fake.devices(), vec![apns('a')]);
        // The same token again at the next launch: nothing sent.
        assert_eq!(phone.update_push_token(&apns('a')).await, Ok(false));
        assert_eq!(fake.registrations().len(), 1, "registered exactly once");
        assert_eq!(phone.session_status().unwrap().device_id, account.device_id);

        // After unregister a token is kept, not sent (the person turned
        // pushes off); registering again takes the kept one.
        assert_eq!(phone.unregister().await, Ok(true));
        assert_eq!(phone.update_push_token(&apns('b')).await, Ok(false));
        assert!(fake.devices().is_empty());
        let id = phone.register_device(&ios_device("")).await.unwrap();
        assert_eq!(fake.devices(), vec![apns('b')]);
        assert_eq!(phone.session_status().unwrap().device_id, Some(id));

        // Bad input names the field.
        let e = phone.update_push_token("  ").await.unwrap_err();
        assert!(e.to_string().starts_with("push_token:"), "{e}");
    });
    // Before pairing, a token given and nothing kept: register_device says why.
    let other = session(
        &dir.path().join("t.sqlite"),
        StoreMode::App,
        &Arc::new(Vault::default()),
    );
    assert_eq!(
        block_on(other.register_device(&ios_device(""))),
        Err(PhoneError::NotSignedIn)
    );
}

#[test]
fn a_sign_in_without_a_token_yet_registers_when_the_os_hands_one_over() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start();
    let vault = Arc::new(Vault::default());
    let phone = session(&dir.path().join("s.sqlite"), StoreMode::App, &vault);
    block_on(async {
        phone
            .sign_in(&link(&fake), None, "iPhone", Some(&ios_device("")))
            .await
            .unwrap();
        assert!(fake.registrations().is_empty());
        assert_eq!(phone.session_status().unwrap().device_id, None);
        assert_eq!(phone.update_push_token(&apns('c')).await, Ok(true));
        assert_eq!(phone.update_push_token(&apns('c')).await, Ok(false));
        assert_eq!(fake.registrations(), vec![apns('c')]);
    });
}

// After a revoke on the server (the device deleted with its token), pairing
// again as the same person without a registration in hand registers again
// with the push token kept (keeping the dead device id instead would wait
// for the OS to hand a new token over, which may not happen).
#[test]
fn signing_in_again_after_a_revoke_registers_again_with_the_kept_push_token() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start();
    let vault = Arc::new(Vault::default());
    let phone = session(&dir.path().join("s.sqlite"), StoreMode::App, &vault);
    block_on(async {
        let first = phone
            .sign_in(&link(&fake), None, "iPhone", Some(&ios_device(&apns('r'))))
            .await
            .unwrap()
            .device_id
            .unwrap();
        let token = vault.token("u_me").unwrap();
        fake.revoke(&token);
        assert!(fake.devices().is_empty(), "the device went with its token");
        assert!(matches!(
            phone.sync().await,
            Err(PhoneError::Unauthorized(_))
        ));
        // Pairing again, nothing in hand (the app's "sign in again" button).
        phone
            .sign_in(&link(&fake), None, "iPhone", None)
            .await
            .unwrap();
        let second = phone.session_status().unwrap().device_id.unwrap();
        assert_ne!(second, first, "a new registration, not the dead id");
        assert_eq!(
            fake.devices(),
            vec![apns('r')],
            "registered with the kept token"
        );
        assert_eq!(fake.registrations(), vec![apns('r'), apns('r')]);
        // The same token handed over at the next launch: nothing more sent.
        assert_eq!(phone.update_push_token(&apns('r')).await, Ok(false));
        // Pairing again without a revoke: one device still (the old one
        // removed), not a second registration collecting the same pushes.
        phone
            .sign_in(&link(&fake), None, "iPhone", None)
            .await
            .unwrap();
        let third = phone.session_status().unwrap().device_id.unwrap();
        assert_ne!(third, second);
        assert_eq!(fake.devices(), vec![apns('r')]);
    });
}

// A pending sign-out is tried by every flush and
// sync, which must not pay the client's full timeouts for it each time: a
// server that does not answer costs one budget, then nothing until the
// backoff has passed; after the expiry it is dropped and reported.
#[test]
fn a_pending_sign_out_stays_off_the_send_paths_budget_backs_off_and_expires() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start();
    let vault = Arc::new(Vault::default());
    let phone = session(&dir.path().join("s.sqlite"), StoreMode::App, &vault);
    block_on(async {
        phone
            .sign_in(&link(&fake), None, "iPhone", Some(&ios_device(&apns('h'))))
            .await
            .unwrap();
        fake.set_offline(true);
        assert!(phone.sign_out().await.unwrap().server_pending);
        // The server takes connections and never answers.
        fake.set_offline(false);
        fake.hang.store(true, Ordering::SeqCst);
        let started = std::time::Instant::now();
        assert_eq!(phone.flush().await, Err(PhoneError::NotSignedIn));
        let first = started.elapsed();
        assert!(
            first < SIGN_OUT_BUDGET + std::time::Duration::from_secs(2),
            "the first try is held to the budget, not the client's timeouts: {first:?}"
        );
        // Tried and failed: nothing more until the backoff has passed.
        let tried = fake.connections.load(Ordering::SeqCst);
        let started = std::time::Instant::now();
        assert!(phone.sync().await.is_err());
        assert_eq!(phone.flush().await, Err(PhoneError::NotSignedIn));
        assert!(started.elapsed() < std::time::Duration::from_millis(500));
        assert_eq!(
            fake.connections.load(Ordering::SeqCst),
            tried,
            "no try within the backoff"
        );
        let pending = phone.pending_sign_outs().unwrap();
        assert_eq!(pending[0].failures, 1);
        let wait = pending[0].next_try_ms - crate::store::now_ms();
        assert!(
            (20_000..=61_000).contains(&wait),
            "30 s with jitter: {wait} ms"
        );
        assert!(phone.session_status().unwrap().sign_out_pending);

        // Older than the expiry but tried fewer than SIGN_OUT_MIN_TRIES
        // times (a phone left offline for a week): tried again, not dropped.
        let mut aged = pending.clone();
        aged[0].created_ms -= SIGN_OUT_EXPIRY.as_millis() as i64 + 1;
        aged[0].failures = SIGN_OUT_MIN_TRIES - 1;
        aged[0].next_try_ms = 0;
        phone.write_pending(&aged).unwrap();
        let slot = aged[0].slot.clone();
        assert!(vault.token(&slot).is_some());
        assert_eq!(phone.flush().await, Err(PhoneError::NotSignedIn));
        let tried = fake.connections.load(Ordering::SeqCst);
        let after = phone.pending_sign_outs().unwrap();
        assert_eq!(after.len(), 1, "dropped on age alone, before its tries");
        assert_eq!(after[0].failures, SIGN_OUT_MIN_TRIES);
        assert!(tried > 0);
        // Old and tried enough: dropped (its token forgotten) and
        // reported, tried no more.
        let mut due = after.clone();
        due[0].next_try_ms = 0;
        phone.write_pending(&due).unwrap();
        assert_eq!(phone.flush().await, Err(PhoneError::NotSignedIn));
        assert_eq!(fake.connections.load(Ordering::SeqCst), tried);
        let status = phone.session_status().unwrap();
        assert!(!status.sign_out_pending);
        assert_eq!(status.sign_outs_dropped, 1);
        assert_eq!(vault.token(&slot), None);
        // The next sign-in clears the report.
        fake.hang.store(false, Ordering::SeqCst);
        phone
            .sign_in(&link(&fake), None, "iPhone", None)
            .await
            .unwrap();
        assert_eq!(phone.session_status().unwrap().sign_outs_dropped, 0);
    });
}

fn store_contains(dir: &std::path::Path, needle: &str) -> bool {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path()).ok())
        .any(|raw| raw.windows(needle.len()).any(|w| w == needle.as_bytes()))
}

#[test]
fn signing_out_offline_reports_the_dropped_answers_and_tells_the_server_later() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start();
    let vault = Arc::new(Vault::default());
    let phone = session(&dir.path().join("s.sqlite"), StoreMode::App, &vault);
    block_on(async {
        phone
            .sign_in(&link(&fake), None, "iPhone", Some(&ios_device(&apns('a'))))
            .await
            .unwrap();
        let token = vault.token("u_me").unwrap();
        phone.receive_apns(APNS).unwrap();
        phone
            .answer_action("q_1", &option_action_id("approve"), None)
            .unwrap();
        assert_eq!(phone.unsent_answers(), Ok(1));

        // Offline: the last try cannot send; the phone is signed out anyway.
        fake.set_offline(true);
        let report = phone.sign_out().await.unwrap();
        assert_eq!(
            report,
            SignOutReport {
                device_removed: false,
                token_revoked: false,
                server_pending: true,
                unsent_answers_dropped: 1,
                answers_with_the_system: 0,
            }
        );
        let status = phone.session_status().unwrap();
        assert_eq!(status.state, SessionState::SignedOut);
        assert!(status.sign_out_pending);
        assert_eq!(vault.token("u_me"), None, "the account's slot is empty");
        assert!(phone.feed(Utc::now()).unwrap().is_empty());
        assert_eq!(phone.unsent_answers(), Ok(0));
        assert!(fake.token_live(&token));
        assert_eq!(fake.devices(), vec![apns('a')]);
        // The token to revoke waits in a vault slot of its own, never in the store.
        assert!(vault
            .slots
            .lock()
            .unwrap()
            .iter()
            .any(|(k, v)| k.starts_with("qp.sign-out.") && *v == token));
        assert!(!store_contains(dir.path(), &token));
        // Still offline: nothing changes, nothing is lost.
        assert_eq!(phone.finish_sign_out().await, Ok(false));

        // Online again: the next flush (signed out: NotSignedIn) tells the
        // server first: the device removed, the token revoked, forgotten.
        fake.set_offline(false);
        assert_eq!(phone.flush().await, Err(PhoneError::NotSignedIn));
        assert!(fake.devices().is_empty());
        assert!(!fake.token_live(&token));
        assert!(!phone.session_status().unwrap().sign_out_pending);
        assert!(vault
            .slots
            .lock()
            .unwrap()
            .keys()
            .all(|k| k == PUSH_TOKEN_SLOT));
        assert!(fake.state.lock().unwrap().answers.is_empty());
        // The push token stays with the app's install: the next sign-in
        // registers it.
        phone
            .sign_in(&link(&fake), None, "iPhone", Some(&ios_device("")))
            .await
            .unwrap();
        assert_eq!(fake.devices(), vec![apns('a')]);
    });
}

#[test]
fn signing_out_online_sends_the_unsent_answer_first_and_revokes_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start();
    let vault = Arc::new(Vault::default());
    let phone = session(&dir.path().join("s.sqlite"), StoreMode::App, &vault);
    block_on(async {
        phone
            .sign_in(&link(&fake), None, "iPhone", Some(&ios_device(&apns('a'))))
            .await
            .unwrap();
        let token = vault.token("u_me").unwrap();
        phone.receive_apns(APNS).unwrap();
        // Committed while offline: waiting in the outbox, in its backoff.
        fake.set_offline(true);
        phone
            .answer_action("q_1", &option_action_id("deny"), None)
            .unwrap();
        let _ = phone.flush().await;
        fake.set_offline(false);
        let report = phone.sign_out().await.unwrap();
        assert_eq!(
            report,
            SignOutReport {
                device_removed: true,
                token_revoked: true,
                server_pending: false,
                unsent_answers_dropped: 0,
                answers_with_the_system: 0,
            }
        );
        let answers = fake.state.lock().unwrap().answers.clone();
        assert_eq!(answers.len(), 1);
        assert_eq!(answers[0]["value"], "deny");
        assert!(fake.devices().is_empty());
        assert!(!fake.token_live(&token));
        assert_eq!(*vault.forgotten.lock().unwrap(), vec!["u_me".to_string()]);
        assert!(!phone.session_status().unwrap().sign_out_pending);
    });
}

/// An iPhone restored from a backup is still signed in (the token and the
/// store came along) but has a new device key (kept "this device only").
/// A registration carrying the old public key would make every sealed push
/// show the generic notification, so the launch's `update_push_token` sees
/// the key changed and registers the new one, even with the same push
/// token; once.
#[test]
fn a_restored_phone_with_a_new_device_key_registers_it_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.sqlite");
    let fake = Fake::start();
    let vault = Arc::new(Vault::default());
    let old_keys: Arc<dyn DeviceKeyStore> = Arc::new(MemoryKeys(Default::default()));
    let before = session(&path, StoreMode::App, &vault).with_device_keys(old_keys, None);
    let old_public = before.device_public_key().unwrap();
    let device = DeviceRegistration {
        public_key: Some(old_public.clone()),
        ..ios_device(&apns('r'))
    };
    block_on(async {
        before
            .sign_in(&link(&fake), None, "iPhone", Some(&device))
            .await
            .unwrap();
        assert_eq!(before.update_push_token(&apns('r')).await, Ok(false));
        drop(before);
        // Restored: the same store and vault, a new (empty) key store.
        let new_keys: Arc<dyn DeviceKeyStore> = Arc::new(MemoryKeys(Default::default()));
        let after = session(&path, StoreMode::App, &vault).with_device_keys(new_keys, None);
        let new_public = after.device_public_key().unwrap();
        assert_ne!(new_public, old_public);
        assert_eq!(after.update_push_token(&apns('r')).await, Ok(true));
        let keys = fake.state.lock().unwrap().public_keys.clone();
        assert_eq!(keys.last(), Some(&Some(new_public.clone())), "{keys:?}");
        assert_eq!(fake.devices(), vec![apns('r')]);
        // Registered: nothing more to send.
        assert_eq!(after.update_push_token(&apns('r')).await, Ok(false));
    });
}

#[test]
fn a_running_extension_follows_the_app_a_new_device_id_and_a_sign_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.sqlite");
    let fake = Fake::start();
    let vault = Arc::new(Vault::default());
    let keys: Arc<dyn DeviceKeyStore> = Arc::new(MemoryKeys(Default::default()));
    let app = session(&path, StoreMode::App, &vault).with_device_keys(keys.clone(), None);
    // The extension's process, started before the token changes and kept
    // running (iOS reuses it): it is given no device id.
    let ext = session(&path, StoreMode::Extension, &vault).with_device_keys(keys, None);
    let public = app.device_public_key().unwrap();
    let device = DeviceRegistration {
        public_key: Some(public.clone()),
        ..ios_device(&apns('a'))
    };
    block_on(async {
        let first = app
            .sign_in(&link(&fake), None, "iPhone", Some(&device))
            .await
            .unwrap()
            .device_id
            .unwrap();
        assert_eq!(ext.session_status().unwrap().device_id, Some(first.clone()));
        // The OS hands over a new token: a new device id on the server.
        assert_eq!(app.update_push_token(&apns('b')).await, Ok(true));
        let second = app.session_status().unwrap().device_id.unwrap();
        assert_ne!(first, second);
        assert_eq!(fake.devices(), vec![apns('b')]);
        // A push sealed to the new device, opened by the running extension.
        let key = crate::e2e::DevicePublicKey::parse(&public, "key").unwrap();
        let sealed_to = |id: &str| {
            payload::encode_apns_question_sealed(
                &server_question("Deploy?"),
                crate::copy::Copy::english(),
                &payload::Recipient {
                    device_id: id,
                    key: &key,
                },
            )
            .unwrap()
            .json
        };
        let Push::Question(q) = ext.receive_apns(&sealed_to(&second)).unwrap() else {
            panic!("a question")
        };
        assert_eq!(q.prompt, "Deploy?");
        // One sealed to the old id is not for this device any more.
        assert!(matches!(
            ext.receive_apns(&sealed_to(&first)),
            Err(PhoneError::Payload(PayloadError::CannotOpen(_)))
        ));

        // The app signs out: the extension acts on no push and no answer,
        // and shows the neutral words.
        app.sign_out().await.unwrap();
        assert_eq!(
            ext.receive_apns(&sealed_to(&second)),
            Err(PhoneError::NotSignedIn)
        );
        assert_eq!(ext.receive_apns(APNS), Err(PhoneError::NotSignedIn));
        assert_eq!(
            ext.answer_action("q_1", &option_action_id("approve"), None),
            Err(PhoneError::NotSignedIn)
        );
        let neutral = ext.fallback_notification(Some("Injected"), Some("words"));
        assert_eq!(neutral.title, "New question");
        assert!(ext.is_signed_out());
        assert_eq!(ext.session_status().unwrap().state, SessionState::SignedOut);
        assert!(ext.feed(Utc::now()).unwrap().is_empty());
    });
}
