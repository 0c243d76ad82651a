//! A stand-in Web Push service on loopback (RFC 8030), as Chrome's, Firefox's
//! and Apple's speak it to an application server: `POST /push/<id>` with an
//! RFC 8291 `aes128gcm` body and an RFC 8292 VAPID `Authorization: vapid
//! t=<JWT>, k=<key>`. Each request is checked as those services do: the
//! headers (`TTL`, `Content-Encoding`), the body within 4096 bytes, the JWT's
//! ES256 signature verified with `k` (by jsonwebtoken, not the signer's
//! library), its `aud` the endpoint's origin, its `exp` within 24 hours and
//! a `sub`. The body is then decrypted with the subscription's private key
//! and auth secret, which the test made as a browser would have.
//!
//! `GET /messages` lists what was delivered (decrypted, for the browser
//! test to hand to a service worker); `POST /gone/<id>` makes a
//! subscription answer 410 from then on; [`PushState::outage`] makes the
//! whole service answer 503 (`Retry-After: 1`) for a while.

#![allow(dead_code)]

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{json, Value};
use web_push_native::p256::elliptic_curve::rand_core::{OsRng, RngCore};
use web_push_native::p256::elliptic_curve::sec1::ToEncodedPoint;
use web_push_native::p256::SecretKey;
use web_push_native::Auth;

/// A browser's side of one subscription: the keys it made.
pub struct Subscriber {
    pub secret: SecretKey,
    pub auth: [u8; 16],
}

impl Subscriber {
    pub fn new() -> Subscriber {
        let mut auth = [0u8; 16];
        OsRng.fill_bytes(&mut auth);
        Subscriber {
            secret: SecretKey::random(&mut OsRng),
            auth,
        }
    }

    /// `PushSubscription.toJSON()` for an endpoint.
    pub fn subscription(&self, endpoint: &str) -> String {
        let p256dh = self.secret.public_key().to_encoded_point(false);
        json!({
            "endpoint": endpoint,
            "expirationTime": null,
            "keys": {
                "p256dh": URL_SAFE_NO_PAD.encode(p256dh.as_bytes()),
                "auth": URL_SAFE_NO_PAD.encode(self.auth),
            }
        })
        .to_string()
    }
}

/// One push the service accepted.
#[derive(Debug, Clone)]
pub struct Delivered {
    pub subscription: String,
    pub plaintext: String,
    pub ciphertext_bytes: usize,
    pub ttl: u64,
    pub urgency: Option<String>,
    pub topic: Option<String>,
    /// The VAPID key the JWT was signed with (base64url).
    pub vapid_key: String,
    pub subject: String,
}

#[derive(Default)]
pub struct PushState {
    pub subscribers: Mutex<Vec<(String, Arc<Subscriber>)>>,
    pub delivered: Mutex<Vec<Delivered>>,
    /// Requests refused, with why.
    pub refused: Mutex<Vec<String>>,
    pub gone: Mutex<HashSet<String>>,
    pub origin: Mutex<String>,
    /// Every push answered 503 until then (an outage of the service).
    pub down_until: Mutex<Option<std::time::Instant>>,
    /// The 503s answered during it.
    pub down_answers: std::sync::atomic::AtomicUsize,
}

impl PushState {
    /// The service answers every push 503 for `length` from now.
    pub fn outage(&self, length: std::time::Duration) {
        *self.down_until.lock().unwrap() = Some(std::time::Instant::now() + length);
    }
}

pub struct PushStandIn {
    pub addr: std::net::SocketAddr,
    pub state: Arc<PushState>,
}

impl PushStandIn {
    /// The host:port to allow-list.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// A new subscription at this service: its endpoint and its JSON.
    pub fn subscribe(&self, id: &str) -> (Arc<Subscriber>, String) {
        let s = Arc::new(Subscriber::new());
        self.state
            .subscribers
            .lock()
            .unwrap()
            .push((id.to_string(), s.clone()));
        let json = s.subscription(&format!("http://{}/push/{id}", self.addr));
        (s, json)
    }

    pub fn delivered(&self) -> Vec<Delivered> {
        self.state.delivered.lock().unwrap().clone()
    }

    pub async fn wait_for(&self, n: usize) -> Vec<Delivered> {
        for _ in 0..400 {
            let d = self.delivered();
            if d.len() >= n {
                return d;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        panic!(
            "{n} pushes expected, got {:?}; refused {:?}",
            self.delivered(),
            self.state.refused.lock().unwrap()
        );
    }
}

fn refuse(state: &PushState, status: StatusCode, why: String) -> (StatusCode, Json<Value>) {
    state.refused.lock().unwrap().push(why.clone());
    (
        status,
        Json(json!({"code": status.as_u16(), "message": why})),
    )
}

/// Checks `Authorization: vapid t=…, k=…`; returns the key and the subject.
fn check_vapid(headers: &HeaderMap, origin: &str) -> Result<(String, String), String> {
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .ok_or("no Authorization header")?;
    let rest = auth
        .strip_prefix("vapid ")
        .ok_or("not a vapid authorization")?;
    let mut t = None;
    let mut k = None;
    for part in rest.split(',') {
        let part = part.trim();
        if let Some(v) = part.strip_prefix("t=") {
            t = Some(v.to_string());
        } else if let Some(v) = part.strip_prefix("k=") {
            k = Some(v.to_string());
        }
    }
    let (t, k) = (t.ok_or("no t=")?, k.ok_or("no k=")?);
    let point = URL_SAFE_NO_PAD
        .decode(&k)
        .map_err(|_| "k is not base64url")?;
    if point.len() != 65 || point[0] != 4 {
        return Err("k is not an uncompressed P-256 point".into());
    }
    let key = DecodingKey::from_ec_components(
        &URL_SAFE_NO_PAD.encode(&point[1..33]),
        &URL_SAFE_NO_PAD.encode(&point[33..]),
    )
    .map_err(|e| format!("k: {e}"))?;
    let mut v = Validation::new(Algorithm::ES256);
    // The origin of the endpoint, its port included (RFC 8292): the
    // stand-in listens on an ephemeral port, as a push service not on 443.
    v.set_audience(&[origin]);
    v.set_required_spec_claims(&["exp", "aud", "sub"]);
    let claims = jsonwebtoken::decode::<Value>(&t, &key, &v)
        .map_err(|e| format!("JWT refused: {e}"))?
        .claims;
    let exp = claims["exp"].as_i64().unwrap_or(0);
    if exp > chrono::Utc::now().timestamp() + 24 * 3600 {
        return Err("exp more than 24 hours ahead".into());
    }
    let sub = claims["sub"].as_str().unwrap_or_default().to_string();
    if !(sub.starts_with("mailto:") || sub.starts_with("https:") || sub.starts_with("http:")) {
        return Err(format!("sub is not a contact URL: {sub:?}"));
    }
    Ok((k, sub))
}

/// During an outage ([`PushState::outage`]) every push is answered 503
/// with `Retry-After: 1`, as a push service under maintenance does.
async fn push_or_down(
    state: State<Arc<PushState>>,
    id: Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let down = state
        .down_until
        .lock()
        .unwrap()
        .is_some_and(|u| std::time::Instant::now() < u);
    if down {
        state
            .down_answers
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [("retry-after", "1")],
            Json(json!({"error": "down"})),
        )
            .into_response();
    }
    push(state, id, headers, body).await.into_response()
}

async fn push(
    State(state): State<Arc<PushState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, Json<Value>) {
    let origin = state.origin.lock().unwrap().clone();
    if state.gone.lock().unwrap().contains(&id) {
        return refuse(&state, StatusCode::GONE, format!("{id}: unsubscribed"));
    }
    let sub = state
        .subscribers
        .lock()
        .unwrap()
        .iter()
        .find(|(i, _)| i == &id)
        .map(|(_, s)| s.clone());
    let Some(sub) = sub else {
        return refuse(
            &state,
            StatusCode::NOT_FOUND,
            format!("{id}: no such subscription"),
        );
    };
    let (vapid_key, subject) = match check_vapid(&headers, &origin) {
        Ok(k) => k,
        Err(e) => return refuse(&state, StatusCode::UNAUTHORIZED, e),
    };
    let header = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    if header("content-encoding").as_deref() != Some("aes128gcm") {
        return refuse(
            &state,
            StatusCode::BAD_REQUEST,
            "Content-Encoding is not aes128gcm".into(),
        );
    }
    let Some(ttl) = header("ttl").and_then(|t| t.parse::<u64>().ok()) else {
        return refuse(&state, StatusCode::BAD_REQUEST, "no TTL".into());
    };
    if body.len() > 4096 {
        return refuse(
            &state,
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("{} bytes", body.len()),
        );
    }
    let plain = match web_push_native::decrypt(
        body.to_vec(),
        &sub.secret,
        &Auth::clone_from_slice(&sub.auth),
    ) {
        Ok(p) => p,
        Err(e) => {
            return refuse(
                &state,
                StatusCode::BAD_REQUEST,
                format!("cannot decrypt: {e}"),
            )
        }
    };
    state.delivered.lock().unwrap().push(Delivered {
        subscription: id,
        plaintext: String::from_utf8_lossy(&plain).into_owned(),
        ciphertext_bytes: body.len(),
        ttl,
        urgency: header("urgency"),
        topic: header("topic"),
        vapid_key,
        subject,
    });
    (StatusCode::CREATED, Json(json!({})))
}

async fn messages(State(state): State<Arc<PushState>>) -> Json<Value> {
    let list: Vec<Value> = state
        .delivered
        .lock()
        .unwrap()
        .iter()
        .map(|d| json!({"subscription": d.subscription, "data": d.plaintext}))
        .collect();
    Json(json!({ "messages": list }))
}

async fn gone(State(state): State<Arc<PushState>>, Path(id): Path<String>) -> StatusCode {
    state.gone.lock().unwrap().insert(id);
    StatusCode::NO_CONTENT
}

pub async fn webpush() -> PushStandIn {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let state = Arc::new(PushState::default());
    *state.origin.lock().unwrap() = format!("http://{addr}");
    let app = Router::new()
        .route("/push/{id}", post(push_or_down))
        .route("/messages", get(messages))
        .route("/gone/{id}", post(gone))
        .with_state(state.clone());
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    PushStandIn { addr, state }
}
