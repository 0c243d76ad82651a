//! A small HTTP/2 client pool for the push gateways: few long-lived
//! connections, many streams on each.
//!
//! Why not reqwest (hyper-util's pool) here: it keeps exactly one HTTP/2
//! connection per origin and queues every request beyond the server's
//! `SETTINGS_MAX_CONCURRENT_STREAMS` on it (so when APNs drops a
//! connection's limit to 1 after a rejection, a whole fan-out waits behind
//! one stream, timeouts included), never opens a second connection, and
//! hands back the streams a `GOAWAY` refused as plain errors, so they could
//! only be retried after a backoff. This pool, on the `h2` crate hyper
//! itself uses:
//!
//! - puts a request on the first connection whose streams in flight are
//!   below the limit the server advertises *now* (`h2` tracks every
//!   `SETTINGS` frame), and opens another connection, up to
//!   `max_connections`, when all are full; past that, requests wait for a
//!   free stream (bounded by the caller's in-flight limit);
//! - after a `GOAWAY`, sends no new stream on that connection, lets the
//!   streams the server kept (id <= last-stream-id) finish, and sends the
//!   ones it refused (id > last-stream-id, or `RST_STREAM REFUSED_STREAM`:
//!   never processed, RFC 9113 §6.8 and §8.7) again at once on another
//!   connection: nothing the gateway accepted is sent twice, nothing it
//!   refused is lost;
//! - times out a response apart from the wait for a stream: one hanging
//!   device holds one stream, never the others.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use h2::client::SendRequest;
use h2::Reason;
use http::{HeaderMap, Request};
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// How long a TCP (+TLS, +HTTP/2) connection may take to set up.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Refused streams are sent again at most this many times.
const MAX_RESENDS: usize = 4;
/// How long a request may wait for a free stream, resends included: with
/// the response timeout after it, a push is done or given back well within
/// the worker's lease (60 s), so no other instance takes it meanwhile.
const STREAM_WAIT: Duration = Duration::from_secs(40);

/// A gateway's answer.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// Why a request has no answer. Each is worth a later retry: the request
/// may or may not have reached the gateway.
#[derive(Debug)]
pub enum SendError {
    Connect(String),
    Timeout,
    Stream(String),
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::Connect(e) => write!(f, "cannot connect: {e}"),
            SendError::Timeout => write!(f, "no response in time"),
            SendError::Stream(e) => write!(f, "{e}"),
        }
    }
}

struct Conn {
    send: SendRequest<Bytes>,
    in_flight: AtomicUsize,
    /// Set on GOAWAY, a connection error, or when the connection ends.
    closed: Arc<AtomicBool>,
}

impl Conn {
    fn has_room(&self) -> bool {
        !self.closed.load(Ordering::Acquire)
            && self.in_flight.load(Ordering::Acquire) < self.send.current_max_send_streams()
    }
}

#[derive(Default)]
struct State {
    conns: Vec<Arc<Conn>>,
    connecting: usize,
}

/// Counts what the pool did (for tests and the benchmark).
#[derive(Default, Debug)]
pub struct PoolStats {
    pub connections_opened: AtomicUsize,
    pub resent_after_refusal: AtomicUsize,
    pub peak_streams: AtomicUsize,
    streams: AtomicUsize,
}

pub struct H2Pool {
    scheme: &'static str,
    host: String,
    port: u16,
    authority: String,
    tls: Option<tokio_rustls::TlsConnector>,
    max_connections: usize,
    state: Mutex<State>,
    /// Signalled when a stream ends or a connection opens or closes.
    changed: Arc<Notify>,
    pub stats: PoolStats,
}

/// Decrements a connection's streams in flight when the request ends.
struct StreamGuard<'a> {
    conn: Arc<Conn>,
    pool: &'a H2Pool,
}

impl Drop for StreamGuard<'_> {
    fn drop(&mut self) {
        self.conn.in_flight.fetch_sub(1, Ordering::AcqRel);
        self.pool.stats.streams.fetch_sub(1, Ordering::AcqRel);
        self.pool.changed.notify_waiters();
    }
}

impl H2Pool {
    /// A pool for `base_url` (`https://host[:port]`, or `http://` for a
    /// local test server, spoken with HTTP/2 prior knowledge).
    pub fn new(base_url: &str, max_connections: usize) -> Result<Self, String> {
        let uri: http::Uri = base_url
            .parse()
            .map_err(|e| format!("{base_url}: not a URL: {e}"))?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => {
                return Err(format!(
                    "{base_url}: must be https:// (or http:// for a test)"
                ))
            }
        };
        let host = uri
            .host()
            .ok_or_else(|| format!("{base_url}: no host"))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let authority = uri
            .authority()
            .map(|a| a.as_str().to_string())
            .unwrap_or_else(|| host.clone());
        let tls = if https {
            let mut roots = rustls::RootCertStore::empty();
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
            config.alpn_protocols = vec![b"h2".to_vec()];
            Some(tokio_rustls::TlsConnector::from(Arc::new(config)))
        } else {
            None
        };
        Ok(H2Pool {
            scheme: if https { "https" } else { "http" },
            host,
            port,
            authority,
            tls,
            max_connections: max_connections.max(1),
            state: Mutex::new(State::default()),
            changed: Arc::new(Notify::new()),
            stats: PoolStats::default(),
        })
    }

    /// Connections open now (not closed by either side).
    pub fn open_connections(&self) -> usize {
        let st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        st.conns
            .iter()
            .filter(|c| !c.closed.load(Ordering::Acquire))
            .count()
    }

    /// The absolute URI of `path` on this origin (what `h2` needs for the
    /// `:scheme`, `:authority` and `:path` pseudo-headers).
    pub fn uri(&self, path: &str) -> String {
        format!("{}://{}{}", self.scheme, self.authority, path)
    }

    /// Sends `req` with `body` and reads the whole answer, within `timeout`
    /// once a stream is open. Streams the server refused unprocessed are
    /// sent again on another connection.
    pub async fn send(
        &self,
        req: Request<()>,
        body: Bytes,
        timeout: Duration,
    ) -> Result<Reply, SendError> {
        let mut resends = 0;
        let deadline = tokio::time::Instant::now() + STREAM_WAIT;
        loop {
            let guard = tokio::time::timeout_at(deadline, self.checkout())
                .await
                .map_err(|_| SendError::Timeout)??;
            match self
                .exchange(&guard.conn, clone_request(&req), body.clone(), timeout)
                .await
            {
                Ok(reply) => return Ok(reply),
                Err(Failure::Refused(why)) if resends < MAX_RESENDS => {
                    resends += 1;
                    self.stats
                        .resent_after_refusal
                        .fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(%why, "stream refused unprocessed: sending again");
                }
                Err(Failure::Refused(why)) => return Err(SendError::Stream(why)),
                Err(Failure::Timeout) => return Err(SendError::Timeout),
                Err(Failure::Other(why)) => return Err(SendError::Stream(why)),
            }
        }
    }

    async fn exchange(
        &self,
        conn: &Arc<Conn>,
        req: Request<()>,
        body: Bytes,
        timeout: Duration,
    ) -> Result<Reply, Failure> {
        let classify = |e: h2::Error, conn: &Conn| -> Failure {
            // GOAWAY: no new streams on this connection, whatever else.
            if e.is_go_away() || e.is_io() {
                conn.closed.store(true, Ordering::Release);
            }
            let refused = e.is_remote()
                && ((e.is_reset() && e.reason() == Some(Reason::REFUSED_STREAM))
                    || (e.is_go_away() && e.reason() == Some(Reason::NO_ERROR)));
            if refused {
                Failure::Refused(e.to_string())
            } else {
                Failure::Other(e.to_string())
            }
        };
        let send = conn
            .send
            .clone()
            .ready()
            .await
            .map_err(|e| classify(e, conn))?;
        let mut send = send;
        let (response, mut stream) = send
            .send_request(req, body.is_empty())
            .map_err(|e| classify(e, conn))?;
        if !body.is_empty() {
            stream
                .send_data(body, true)
                .map_err(|e| classify(e, conn))?;
        }
        let read = async {
            let resp = response.await.map_err(|e| classify(e, conn))?;
            let (parts, mut recv) = resp.into_parts();
            let mut buf = Vec::new();
            while let Some(chunk) = recv.data().await {
                let chunk = chunk.map_err(|e| classify(e, conn))?;
                let _ = recv.flow_control().release_capacity(chunk.len());
                buf.extend_from_slice(&chunk);
                if buf.len() > 64 * 1024 {
                    break;
                }
            }
            Ok(Reply {
                status: parts.status.as_u16(),
                headers: parts.headers,
                body: Bytes::from(buf),
            })
        };
        match tokio::time::timeout(timeout, read).await {
            Ok(r) => r,
            // Dropping the stream resets it (RST_STREAM CANCEL).
            Err(_) => Err(Failure::Timeout),
        }
    }

    /// A connection with a free stream: an open one below its limit, a new
    /// one while under `max_connections`, or the first to free a stream.
    async fn checkout(&self) -> Result<StreamGuard<'_>, SendError> {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let connect = {
                let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
                st.conns.retain(|c| !c.closed.load(Ordering::Acquire));
                if let Some(c) = st.conns.iter().find(|c| c.has_room()) {
                    c.in_flight.fetch_add(1, Ordering::AcqRel);
                    let now = self.stats.streams.fetch_add(1, Ordering::AcqRel) + 1;
                    self.stats.peak_streams.fetch_max(now, Ordering::Relaxed);
                    return Ok(StreamGuard {
                        conn: c.clone(),
                        pool: self,
                    });
                }
                if st.conns.len() + st.connecting < self.max_connections {
                    st.connecting += 1;
                    true
                } else {
                    false
                }
            };
            if connect {
                // Given back however the attempt ends: a caller dropped
                // mid-connect (its deadline, a cancelled task) must not
                // keep the slot, or `max_connections` such drops leave the
                // pool unable ever to connect again.
                let slot = Connecting { pool: self };
                let opened = self.connect().await;
                std::mem::forget(slot);
                let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
                st.connecting -= 1;
                match opened {
                    Ok(c) => {
                        st.conns.push(c);
                        drop(st);
                        self.changed.notify_waiters();
                        continue;
                    }
                    Err(e) => {
                        drop(st);
                        self.changed.notify_waiters();
                        return Err(SendError::Connect(e));
                    }
                }
            }
            notified.await;
        }
    }

    async fn connect(&self) -> Result<Arc<Conn>, String> {
        let setup = async {
            let tcp = TcpStream::connect((self.host.as_str(), self.port))
                .await
                .map_err(|e| format!("{}:{}: {e}", self.host, self.port))?;
            let _ = tcp.set_nodelay(true);
            let mut builder = h2::client::Builder::new();
            // Until the server's SETTINGS arrive, h2 assumes 100 streams
            // (RFC 9113's recommended minimum); then what it advertises.
            builder
                .initial_window_size(1 << 20)
                .initial_connection_window_size(1 << 24);
            let closed = Arc::new(AtomicBool::new(false));
            let send = match &self.tls {
                None => {
                    let (send, conn) = builder.handshake(tcp).await.map_err(|e| e.to_string())?;
                    self.drive(conn, closed.clone());
                    send
                }
                Some(tls) => {
                    let name = rustls_pki_types::ServerName::try_from(self.host.clone())
                        .map_err(|e| e.to_string())?;
                    let io = tls.connect(name, tcp).await.map_err(|e| e.to_string())?;
                    if io.get_ref().1.alpn_protocol() != Some(b"h2") {
                        return Err("the server did not negotiate HTTP/2".to_string());
                    }
                    let (send, conn) = builder.handshake(io).await.map_err(|e| e.to_string())?;
                    self.drive(conn, closed.clone());
                    send
                }
            };
            Ok::<_, String>(Arc::new(Conn {
                send,
                in_flight: AtomicUsize::new(0),
                closed,
            }))
        };
        let conn = tokio::time::timeout(CONNECT_TIMEOUT, setup)
            .await
            .map_err(|_| "connection timed out".to_string())??;
        self.stats
            .connections_opened
            .fetch_add(1, Ordering::Relaxed);
        Ok(conn)
    }

    /// Runs a connection's I/O; marks it closed when it ends.
    fn drive<T>(&self, conn: h2::client::Connection<T, Bytes>, closed: Arc<AtomicBool>)
    where
        T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let changed = self.changed.clone();
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "push gateway connection ended");
            }
            closed.store(true, Ordering::Release);
            changed.notify_waiters();
        });
    }
}

/// A connection attempt in progress: gives its `connecting` slot back if
/// the attempt is dropped before it ends.
struct Connecting<'a> {
    pool: &'a H2Pool,
}

impl Drop for Connecting<'_> {
    fn drop(&mut self) {
        let mut st = self.pool.state.lock().unwrap_or_else(|p| p.into_inner());
        st.connecting -= 1;
        drop(st);
        self.pool.changed.notify_waiters();
    }
}

enum Failure {
    /// The server did not process the stream: safe to send again.
    Refused(String),
    Timeout,
    Other(String),
}

fn clone_request(req: &Request<()>) -> Request<()> {
    let mut r = Request::new(());
    *r.method_mut() = req.method().clone();
    *r.uri_mut() = req.uri().clone();
    *r.headers_mut() = req.headers().clone();
    *r.version_mut() = req.version();
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request dropped while its connection is being set up (here a TLS
    /// handshake the server never answers) gives the attempt back: the
    /// next request connects again instead of waiting forever for a
    /// connection nobody is opening.
    #[tokio::test]
    async fn a_request_dropped_mid_connect_frees_its_connection_slot() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let seen = accepted.clone();
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((tcp, _)) = listener.accept().await {
                seen.fetch_add(1, Ordering::SeqCst);
                held.push(tcp); // open, silent
            }
        });
        let pool = H2Pool::new(&format!("https://127.0.0.1:{port}"), 1).unwrap();
        let send = || {
            let req = Request::post(pool.uri("/")).body(()).unwrap();
            tokio::time::timeout(
                Duration::from_millis(300),
                pool.send(req, Bytes::new(), Duration::from_secs(1)),
            )
        };
        assert!(send().await.is_err(), "the silent server answered");
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
        assert!(send().await.is_err(), "the silent server answered");
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            2,
            "the second request never tried to connect"
        );
    }
}
