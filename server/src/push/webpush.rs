//! Web Push to browsers (`web` devices, the web responder at `/app/`).
//!
//! A device's `push_token` is its `PushSubscription` (endpoint and keys,
//! checked by [`qp_core::protocol::web_push`]). Each push is encrypted for
//! the subscription's keys per RFC 8291 (aes128gcm) and carries a VAPID
//! authorization per RFC 8292, both through `web-push-native` (the
//! maintained RustCrypto implementation; no cryptography is written here).
//! The body is the APNs payload's `qp` part (the same encoder and 4 KB
//! budget as the phones'; the service worker decodes it with the phones'
//! decoder), so the encrypted record stays within the push services' 4 KB.
//!
//! Where pushes may go: https endpoints whose host is on the allow-list
//! ([`DEFAULT_ALLOWED_HOSTS`]: the services behind Chrome and Edge, Firefox
//! and Safari; `--web-push-allow` replaces it), never an IP literal that is
//! loopback, private, link-local or otherwise not global unless the
//! allow-list names exactly that address (tests, with their stand-in), and
//! plain http only for an allow-listed loopback address. Checked at
//! registration (a 422 naming `push_token`) and again before each send.
//!
//! The VAPID key pair is made once, kept in a file beside the server's
//! other secrets (0600). Rotating it is replacing the file (or deleting it:
//! a new one is made at start) and restarting; browsers subscribed with the
//! old key subscribe again when the app next opens (it compares the key).

use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use qp_core::protocol::web_push::{parse_subscription, WebSubscription};
use serde_json::Value;
use web_push_native::jwt_simple::algorithms::{ECDSAP256PublicKeyLike, ES256KeyPair};
use web_push_native::p256::PublicKey;
use web_push_native::{Auth, WebPushBuilder};

use super::gateway_errors::Action;
use super::{PushFuture, PushMessage, PushOutcome, PushTransport};
use crate::store::deliveries::PushKind;

/// Push services the server sends to unless configured otherwise:
/// Chrome (FCM), Edge (WNS), Firefox (Mozilla autopush), Safari (Apple).
/// `*.` matches any subdomain.
pub const DEFAULT_ALLOWED_HOSTS: &[&str] = &[
    "fcm.googleapis.com",
    "*.notify.windows.com",
    "updates.push.services.mozilla.com",
    "*.push.services.mozilla.com",
    "web.push.apple.com",
    "*.push.apple.com",
];

/// RFC 8291's overhead on a one-record message: the header (salt, record
/// size, key id length, the 65-byte key), the padding delimiter, the tag.
pub const ENCRYPTION_OVERHEAD: usize = 16 + 4 + 1 + 65 + 1 + 16;
/// What push services accept in a message body (RFC 8030 asks for 4096).
pub const MAX_MESSAGE_BYTES: usize = 4096;

/// The allow-list as configured (`--web-push-allow`), or the defaults.
pub fn allowed_hosts(configured: &[String]) -> Vec<String> {
    if configured.is_empty() {
        DEFAULT_ALLOWED_HOSTS
            .iter()
            .map(|s| s.to_string())
            .collect()
    } else {
        configured.to_vec()
    }
}

use crate::outbound::{host_matches, is_internal, is_local_name};

/// Checks a subscription's endpoint against the rules above; the error
/// says which rule, to follow "push_token: ".
pub fn check_endpoint(endpoint: &str, allow: &[String]) -> Result<reqwest::Url, String> {
    let url = reqwest::Url::parse(endpoint).map_err(|_| "endpoint must be a URL".to_string())?;
    let host = url
        .host_str()
        .ok_or_else(|| "endpoint must name a host".to_string())?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    // `url.port()` is None for the scheme's own (443 for https).
    let with_port = match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.clone(),
    };
    if !url.username().is_empty() || url.password().is_some() {
        return Err("endpoint must not carry credentials".into());
    }
    // Another port than 443 only where the allow-list names it with the host.
    let listed = match url.port() {
        None => allow
            .iter()
            .any(|p| host_matches(p, &host) || host_matches(p, &with_port)),
        Some(_) => allow.iter().any(|p| host_matches(p, &with_port)),
    };
    if let Ok(ip) = host.parse::<IpAddr>() {
        // An address is allowed only when the allow-list names it exactly.
        let exact = allow.iter().any(|p| p == &host || p == &with_port);
        if is_internal(ip) && !exact {
            return Err(format!(
                "endpoint must not be a loopback, private or link-local address ({host})"
            ));
        }
        if !exact {
            return Err("endpoint must be a push service's host name, not an address".into());
        }
    } else if is_local_name(&host) {
        // Names are looked up at each send and must reach global addresses
        // only (`GlobalOnly`); this one never can.
        return Err(format!("endpoint must not be this machine ({host})"));
    }
    if !listed {
        if let Some(port) = url.port() {
            if allow.iter().any(|p| host_matches(p, &host)) {
                return Err(format!(
                    "endpoint's port must be 443 (push services' port); {port} is not \
                     allowed for {host} (--web-push-allow names a host:port to allow another)"
                ));
            }
        }
        return Err(format!(
            "endpoint's host {host} is not a push service this server sends to (--web-push-allow)"
        ));
    }
    match url.scheme() {
        "https" => Ok(url),
        "http" if host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback()) => Ok(url),
        _ => Err("endpoint must be https".into()),
    }
}

/// Checks a `web` registration's subscription whole: its shape, then where
/// it points. The message follows "push_token: ".
pub fn check_registration(token: &str, allow: &[String]) -> Result<WebSubscription, String> {
    let sub = parse_subscription(token).map_err(|e| e.to_string())?;
    check_endpoint(&sub.endpoint, allow)?;
    Ok(sub)
}

/// The server's VAPID key pair (P-256), kept in one file: the private key
/// as unpadded URL-safe base64 of its 32 bytes.
pub struct VapidKey {
    pair: ES256KeyPair,
}

impl VapidKey {
    fn from_b64(text: &str) -> Result<VapidKey, String> {
        let bytes = URL_SAFE_NO_PAD
            .decode(text.trim())
            .map_err(|_| "the VAPID key file is not base64".to_string())?;
        let pair = ES256KeyPair::from_bytes(&bytes)
            .map_err(|e| format!("the VAPID key file holds no P-256 key: {e}"))?;
        Ok(VapidKey { pair })
    }

    /// Reads the key at `path`, or makes one there (0600) when absent.
    pub fn load_or_create(path: &Path) -> Result<VapidKey, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => VapidKey::from_b64(&text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => VapidKey::rotate(path),
            Err(e) => Err(format!("cannot read {}: {e}", path.display())),
        }
    }

    /// Makes a new key at `path`, replacing any (subscriptions made with the
    /// old one stop working until the browser subscribes again).
    pub fn rotate(path: &Path) -> Result<VapidKey, String> {
        let pair = ES256KeyPair::generate();
        let text = URL_SAFE_NO_PAD.encode(pair.to_bytes());
        if let Some(dir) = path.parent() {
            crate::secret_files::create_private_dir(dir)
                .map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        }
        write_private(path, text.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok(VapidKey { pair })
    }

    /// The public key as browsers take it (`applicationServerKey`): the
    /// uncompressed point, unpadded URL-safe base64.
    pub fn public_key(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.pair.public_key().public_key().to_bytes_uncompressed())
    }
}

/// Writes `data` to `path` owner-only (0600): a new file beside it first,
/// then renamed into place, so no reader sees half a key or wider modes.
fn write_private(path: &Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(crate::secret_files::FILE_MODE)
        .open(&tmp)?;
    f.write_all(data)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

pub use crate::config::push::vapid_key_path as key_path;

/// What a push service's answer other than 2xx starts with (an answer of
/// the service: it ends an outage, [`super::outage`]).
pub const ANSWERED: &str = "push service answered";

/// The push service a `web` device's pushes go to, as its origin
/// (`https://fcm.googleapis.com`): browsers use different services, so
/// each has its own outage circuit. None for a subscription that cannot
/// be read (its push fails before reaching any service).
pub fn service_origin(push_token: &str) -> Option<String> {
    let sub: Value = serde_json::from_str(push_token).ok()?;
    let url = reqwest::Url::parse(sub.get("endpoint")?.as_str()?).ok()?;
    Some(url.origin().ascii_serialization()).filter(|o| o != "null")
}

/// How long one push to a push service may take, connecting included.
/// The worker's lease must cover it (`push::budget`).
pub(crate) const SEND_TIMEOUT: Duration = Duration::from_secs(15);

/// The Web Push transport of `qp serve`, its VAPID key read or made now (a
/// bad key file stops the start, named). None without a place for the key
/// (PostgreSQL without `--vapid-key`): `web` devices' pushes then wait.
pub fn transport(
    s: &crate::config::Settings,
) -> Result<Option<std::sync::Arc<dyn PushTransport>>, String> {
    let Some(path) = key_path(s.vapid_key.as_deref(), &s.db) else {
        return Ok(None);
    };
    let key = VapidKey::load_or_create(&path)?;
    // Whoever reads it can sign pushes as this server to every browser
    // subscribed: a copy left readable by others is worth a warning.
    crate::secret_files::warn_if_open([(path.as_path(), "the VAPID private key (Web Push)")]);
    let t = WebPushTransport::new(key, s.public_url(), allowed_hosts(&s.web_push_allow))?;
    Ok(Some(std::sync::Arc::new(t)))
}

/// The message body of a push: the APNs payload without its `aps` alert
/// (the service worker draws its own notification from `qp`), checked to
/// fit one record of the services' 4 KB once encrypted.
pub fn web_payload(m: &PushMessage) -> Result<Vec<u8>, String> {
    let json = m.apns_payload()?;
    let mut v: Value = serde_json::from_str(&json).map_err(|e| format!("payload: {e}"))?;
    if let Some(obj) = v.as_object_mut() {
        obj.remove("aps");
    }
    let body = serde_json::to_vec(&v).map_err(|e| format!("payload: {e}"))?;
    if body.len() + ENCRYPTION_OVERHEAD > MAX_MESSAGE_BYTES {
        return Err(format!("payload of {} bytes", body.len()));
    }
    Ok(body)
}

/// Sends `web` devices' pushes to their push services.
pub struct WebPushTransport {
    key: VapidKey,
    /// The VAPID `sub` claim: how the push service reaches the operator.
    contact: String,
    allow: Vec<String>,
    client: reqwest::Client,
}

impl WebPushTransport {
    pub fn new(key: VapidKey, contact: String, allow: Vec<String>) -> Result<Self, String> {
        let client = reqwest::Client::builder()
            .timeout(SEND_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            // Every name sent to is looked up, checked and connected to
            // through one resolver: a push service's name that resolves to
            // an internal address is never connected to.
            .dns_resolver(std::sync::Arc::new(crate::outbound::GlobalOnly))
            // Directly: a proxy would look the names up where no check is.
            .no_proxy()
            .build()
            .map_err(|e| format!("web push client: {e}"))?;
        Ok(WebPushTransport {
            key,
            contact,
            allow,
            client,
        })
    }

    async fn push(&self, m: &PushMessage) -> PushOutcome {
        let sub = match check_registration(&m.device.push_token, &self.allow) {
            Ok(s) => s,
            Err(e) => return PushOutcome::Failed(format!("subscription refused: {e}")),
        };
        let body = match web_payload(m) {
            Ok(b) => b,
            Err(e) => return PushOutcome::Failed(e),
        };
        let request = match self.request(&sub, m, body) {
            Ok(r) => r,
            Err(e) => return PushOutcome::Failed(e),
        };
        let (parts, body) = request.into_parts();
        let mut req = self.client.post(sub.endpoint.as_str()).body(body);
        for (name, value) in parts.headers.iter() {
            req = req.header(name.as_str(), value.as_bytes());
        }
        // Questions are worth waking a phone for (RFC 8030 Urgency); the
        // topic lets a service holding an undelivered push replace it with
        // the question's resolution.
        req = req.header("Urgency", "high");
        if m.question.id.len() <= 32
            && m.question
                .id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            req = req.header("Topic", m.question.id.as_str());
        }
        match req.send().await {
            Ok(resp) => {
                let status = resp.status().as_u16();
                if (200..=299).contains(&status) {
                    return PushOutcome::Sent;
                }
                let reason = format!("{ANSWERED} {status}");
                match super::gateway_errors::web_push(status).1 {
                    Action::ForgetDevice => PushOutcome::DeviceGone,
                    // The service's fault, not this push's.
                    Action::Retry => PushOutcome::Unavailable {
                        reason,
                        after: super::retry_after(resp.headers()),
                    },
                    _ => PushOutcome::Failed(reason),
                }
            }
            // Timed out once connected: the request may have been
            // written, and the service may have it.
            Err(e) if e.is_timeout() && !e.is_connect() => PushOutcome::NoAnswer {
                reason: format!("push service sent no answer: {}", e.without_url()),
                cut_off: false,
            },
            Err(e) => PushOutcome::Unavailable {
                reason: format!("push service unreachable: {}", e.without_url()),
                after: None,
            },
        }
    }

    fn request(
        &self,
        sub: &WebSubscription,
        m: &PushMessage,
        body: Vec<u8>,
    ) -> Result<http::Request<Vec<u8>>, String> {
        let key = URL_SAFE_NO_PAD
            .decode(sub.p256dh.trim_end_matches('='))
            .ok()
            .and_then(|b| PublicKey::from_sec1_bytes(&b).ok())
            .ok_or("subscription refused: keys.p256dh is not a P-256 point")?;
        let auth = URL_SAFE_NO_PAD
            .decode(sub.auth.trim_end_matches('='))
            .ok()
            .filter(|b| b.len() == 16)
            .ok_or("subscription refused: keys.auth is not 16 bytes")?;
        let endpoint: http::Uri = sub
            .endpoint
            .parse()
            .map_err(|_| "subscription refused: endpoint is not a URI".to_string())?;
        // Kept by the service until the question's deadline at most; a
        // resolution for a day (it replaces a notification still shown).
        let ttl = match m.kind {
            PushKind::Question => (m.question.expires_at - chrono::Utc::now())
                .num_seconds()
                .clamp(60, 7 * 24 * 3600) as u64,
            PushKind::Resolved => 24 * 3600,
        };
        let valid = Duration::from_secs(ttl.min(12 * 3600));
        let vapid = vapid_header(&endpoint, valid, &self.contact, &self.key.pair)?;
        let mut request = WebPushBuilder::new(endpoint, key, Auth::clone_from_slice(&auth))
            .with_valid_duration(valid)
            .build(body)
            .map_err(|e| format!("cannot encrypt: {e}"))?;
        request.headers_mut().insert(
            http::header::AUTHORIZATION,
            http::HeaderValue::try_from(vapid).map_err(|e| format!("cannot sign: {e}"))?,
        );
        Ok(request)
    }
}

/// RFC 8292's `aud`: the push service's origin, with its port when it is
/// not the scheme's default (web-push-native's own leaves the port out, so
/// a service on another port would refuse the signature).
fn vapid_audience(endpoint: &http::Uri) -> Result<String, String> {
    let (Some(scheme), Some(host)) = (endpoint.scheme_str(), endpoint.host()) else {
        return Err("subscription refused: endpoint has no scheme or host".into());
    };
    Ok(match endpoint.port_u16() {
        Some(port) if !matches!((scheme, port), ("https", 443) | ("http", 80)) => {
            format!("{scheme}://{host}:{port}")
        }
        _ => format!("{scheme}://{host}"),
    })
}

/// The `Authorization: vapid t=JWT, k=KEY` header (RFC 8292), signed by
/// jwt-simple as web-push-native signs it, with [`vapid_audience`].
fn vapid_header(
    endpoint: &http::Uri,
    valid: Duration,
    contact: &str,
    key: &ES256KeyPair,
) -> Result<String, String> {
    use web_push_native::jwt_simple::prelude::{Claims, ECDSAP256KeyPairLike};
    let claims = Claims::create(valid.into())
        .with_audience(vapid_audience(endpoint)?)
        .with_subject(contact);
    let token = key.sign(claims).map_err(|e| format!("cannot sign: {e}"))?;
    let public = URL_SAFE_NO_PAD.encode(key.public_key().public_key().to_bytes_uncompressed());
    Ok(format!("vapid t={token}, k={public}"))
}

impl PushTransport for WebPushTransport {
    fn send<'a>(&'a self, m: &'a PushMessage) -> PushFuture<'a> {
        Box::pin(self.push(m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JWT's claims in a `vapid t=…, k=…` header, verified with its key.
    fn vapid_claims(
        header: &str,
        key: &ES256KeyPair,
    ) -> web_push_native::jwt_simple::prelude::JWTClaims<
        web_push_native::jwt_simple::prelude::NoCustomClaims,
    > {
        use web_push_native::jwt_simple::prelude::ECDSAP256PublicKeyLike;
        let token = header
            .strip_prefix("vapid t=")
            .unwrap()
            .split(',')
            .next()
            .unwrap();
        key.public_key().verify_token(token, None).unwrap()
    }

    #[test]
    fn each_push_service_is_its_own_origin() {
        let sub = |endpoint: &str| {
            serde_json::json!({"endpoint": endpoint, "keys": {"p256dh": "x", "auth": "y"}})
                .to_string()
        };
        assert_eq!(
            service_origin(&sub("https://fcm.googleapis.com/fcm/send/abc")).as_deref(),
            Some("https://fcm.googleapis.com")
        );
        assert_eq!(
            service_origin(&sub("http://127.0.0.1:4443/push/1")).as_deref(),
            Some("http://127.0.0.1:4443")
        );
        assert_eq!(service_origin("not json"), None);
    }

    #[test]
    fn vapid_audience_is_the_push_services_origin_with_its_port() {
        let key = ES256KeyPair::generate();
        for (endpoint, aud) in [
            ("https://127.0.0.1:8443/push/abc", "https://127.0.0.1:8443"),
            ("https://localhost/push/abc", "https://localhost"),
            ("https://localhost:443/push/abc", "https://localhost"),
        ] {
            let uri: http::Uri = endpoint.parse().unwrap();
            let header =
                vapid_header(&uri, Duration::from_secs(600), "mailto:ops@localhost", &key).unwrap();
            let claims = vapid_claims(&header, &key);
            let audiences = claims.audiences.unwrap().into_set();
            assert_eq!(
                audiences.into_iter().collect::<Vec<_>>(),
                vec![aud.to_string()],
                "{endpoint}"
            );
            assert_eq!(claims.subject.as_deref(), Some("mailto:ops@localhost"));
        }
    }

    fn allow(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn only_https_endpoints_of_allowed_push_services_are_sent_to() {
        let d = allowed_hosts(&[]);
        assert!(check_endpoint("https://fcm.googleapis.com/fcm/send/abc", &d).is_ok());
        assert!(check_endpoint("https://web.push.apple.com/QO", &d).is_ok());
        assert!(check_endpoint("https://wns2-db5p.notify.windows.com/w/?token=x", &d).is_ok());
        assert!(check_endpoint("https://updates.push.services.mozilla.com/wpush/v2/x", &d).is_ok());
        let refused = |u: &str, a: &[String]| check_endpoint(u, a).unwrap_err();
        assert!(refused("http://fcm.googleapis.com/x", &d).contains("https"));
        assert!(refused("https://evil.example/x", &d).contains("not a push service"));
        assert!(refused("https://fcm.googleapis.com.evil.example/x", &d).contains("not a push"));
        assert!(refused("https://127.0.0.1/x", &d).contains("loopback"));
        assert!(refused("https://[::1]:8443/x", &d).contains("loopback"));
        assert!(refused("https://169.254.169.254/x", &d).contains("link-local"));
        assert!(refused("https://10.0.0.8/x", &d).contains("private"));
        assert!(refused("https://u:p@fcm.googleapis.com/x", &d).contains("credentials"));
        // Even a wildcard never lets an address through: only its exact name.
        assert!(refused("https://127.0.0.1/x", &allow(&["*.0.0.1"])).contains("loopback"));
        // A test names its stand-in exactly; plain http only on loopback.
        let t = allow(&["127.0.0.1:4443"]);
        assert!(check_endpoint("http://127.0.0.1:4443/push/1", &t).is_ok());
        assert!(refused("http://127.0.0.1:9999/push/1", &t).contains("loopback"));
    }

    #[test]
    fn push_services_are_reached_on_443_and_never_on_this_machine() {
        let d = allowed_hosts(&[]);
        let refused = |u: &str, a: &[String]| check_endpoint(u, a).unwrap_err();
        assert!(check_endpoint("https://fcm.googleapis.com:443/x", &d).is_ok());
        for port in ["22", "80", "8443"] {
            let e = refused(&format!("https://fcm.googleapis.com:{port}/x"), &d);
            assert!(e.contains("port must be 443"), "{e}");
        }
        let e = refused("https://web.push.apple.com:25/x", &d);
        assert!(e.contains("port must be 443"), "{e}");
        // A host allow-listed without a port is 443 only; with one, that one.
        let a = allow(&["push.example.com", "other.example.com:8443"]);
        assert!(refused("https://push.example.com:8443/x", &a).contains("443"));
        assert!(check_endpoint("https://other.example.com:8443/x", &a).is_ok());
        // A name that means this machine, however listed.
        for list in [&["localhost"][..], &["localhost:8443"], &["*.localhost"]] {
            for u in [
                "https://localhost/x",
                "https://localhost:8443/x",
                "https://a.localhost/x",
            ] {
                let e = refused(u, &allow(list));
                assert!(
                    e.contains("this machine") || e.contains("not a push service"),
                    "{u} with {list:?}: {e}"
                );
            }
        }
        assert!(
            refused("https://localhost:8443/x", &allow(&["localhost:8443"]))
                .contains("this machine")
        );
    }

    #[test]
    fn a_key_is_made_once_kept_private_and_rotated() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys/vapid-key");
        let a = VapidKey::load_or_create(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(
            VapidKey::load_or_create(&path).unwrap().public_key(),
            a.public_key()
        );
        assert_eq!(URL_SAFE_NO_PAD.decode(a.public_key()).unwrap().len(), 65);
        let b = VapidKey::rotate(&path).unwrap();
        assert_ne!(b.public_key(), a.public_key());
        assert_eq!(
            VapidKey::load_or_create(&path).unwrap().public_key(),
            b.public_key()
        );
        std::fs::write(&path, "not a key").unwrap();
        assert!(VapidKey::load_or_create(&path).is_err());
    }
}
