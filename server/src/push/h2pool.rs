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
//!   device holds one stream, never the others;
//! - keeps each connection honest with HTTP/2 PING (`h2`'s own
//!   `PingPong`, as hyper's keep-alive does), sparingly, because Google's
//!   front ends (FCM) answer pings they find too frequent with `GOAWAY
//!   ENHANCE_YOUR_CALM "too_many_pings"`: never while frames flow; once a
//!   connection with streams open has had no response frame for
//!   [`PING_SLOW_STREAM`] (a liveness probe for a slow stream); and every
//!   [`PING_IDLE_EVERY`] while idle. A PING unanswered within
//!   [`PING_TIMEOUT`] closes the connection and sends its streams again at
//!   once on a fresh one, without spending an attempt: a dead connection
//!   costs seconds, not the response timeout. (Such a stream may have
//!   reached the gateway: the resend carries the same collapse id, so the
//!   phone shows one notification.) A `too_many_pings` GOAWAY doubles both
//!   intervals, up to [`PING_MAX_SCALE`] times, and is not a gateway error
//!   (no reconnect backoff);
//! - on a `GOAWAY` with an error code, closes the connection and sends its
//!   failed streams again at once on a new one: those above the
//!   last-stream-id without counting (never processed), those at or below
//!   it counted as maybe delivered (the gateway may have processed them);
//!   connections ending with an error in a row (an error `GOAWAY`, whether
//!   or not it refused a stream, or a connection breaking under its
//!   streams) hold new connections back ([`GOAWAY_BACKOFF`]) until a
//!   response arrives.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use h2::client::SendRequest;
use h2::Reason;
use http::{HeaderMap, Request};
use tokio::net::TcpStream;
use tokio::sync::Notify;

use super::metrics::{GatewayResends, ResendCause};

/// How long a TCP (+TLS, +HTTP/2) connection may take to set up (within
/// [`STREAM_WAIT`]).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Refused streams are sent again at most this many times.
const MAX_RESENDS: usize = 4;
/// A connection without streams is pinged this often (after its last
/// frame or PING). At least 30 s: gRPC servers, Google's front ends among
/// them, refuse pings more often than that on a connection without data.
/// Under 60 s: the idle timeout of many firewalls, load balancers and
/// carrier NATs that drop a connection without a word is 60 s or more (an
/// idle ping resets it).
pub const PING_IDLE_EVERY: Duration = Duration::from_secs(45);
/// A connection with streams open and no response frame for this long is
/// probed with a PING (never sooner after the last PING either). While
/// responses flow, no PING is sent.
pub const PING_SLOW_STREAM: Duration = Duration::from_secs(2);
/// How often the keep-alive task looks at its connection (a local check,
/// nothing sent).
const PING_CHECK_EVERY: Duration = Duration::from_millis(250);
/// A `too_many_pings` GOAWAY doubles the intervals above, to at most this
/// many times their value.
pub const PING_MAX_SCALE: u32 = 8;
/// A PING unanswered this long means the connection is dead (a PING
/// crosses the path twice in well under a second; responses still
/// arriving extend it, see `keep_alive`).
pub const PING_TIMEOUT: Duration = Duration::from_millis(1_500);
/// After error `GOAWAY`s in a row, new connections wait 0.5 s, 1 s, 2 s…
/// up to 30 s, until a response arrives.
pub const GOAWAY_BACKOFF: qp_core::retry::RetryPolicy = qp_core::retry::RetryPolicy {
    min: Duration::from_millis(500),
    max: Duration::from_secs(30),
    factor: 2.0,
    jitter: false,
};
/// How long a request may wait for a free stream (connecting included).
/// With the caller's response timeout after it, that is the most one
/// [`H2Pool::send`] takes, resends included ([`H2Pool::worst_case`]): the
/// worker's lease is checked against it (`push::budget`).
const STREAM_WAIT: Duration = Duration::from_secs(15);

/// A gateway's answer.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// Why a request has no answer.
#[derive(Debug)]
pub enum SendError {
    /// Not written: no connection could be set up.
    Connect(String),
    /// Not written: no stream came free in time.
    Timeout,
    /// Not written: the stream could not be opened.
    Stream(String),
    /// Not written: the claim's cut-off (`push::SendScope`) came first.
    CutOff,
    /// Written, and no usable answer came: the gateway may have it (no
    /// response in time, the stream reset, the connection lost under it
    /// after the pool's own re-sends). `cut_off`: the time ran out at the
    /// claim's cut-off, not the gateway's response timeout.
    NoAnswer { why: String, cut_off: bool },
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::Connect(e) => write!(f, "cannot connect: {e}"),
            SendError::Timeout => write!(f, "no stream free in time"),
            SendError::Stream(e) => write!(f, "{e}"),
            SendError::CutOff => write!(
                f,
                "the claim's cut-off passed before the request was written"
            ),
            SendError::NoAnswer { why, .. } => write!(f, "sent, no answer: {why}"),
        }
    }
}

struct Conn {
    send: SendRequest<Bytes>,
    in_flight: AtomicUsize,
    /// Set on GOAWAY, a connection error, or when the connection ends.
    closed: Arc<AtomicBool>,
    /// Set when a PING went unanswered: the streams on it stop waiting.
    dead: tokio::sync::watch::Sender<bool>,
    /// An error GOAWAY was counted for this connection (once, however many
    /// streams it failed).
    goaway_counted: Arc<AtomicBool>,
    /// When the last response frame arrived on it (or it went from no
    /// streams to one): a connection still answering streams is alive
    /// even if a PING's answer is late (a loaded peer), and is not pinged.
    last_response: Mutex<std::time::Instant>,
}

impl Conn {
    fn heard(&self) {
        *self.last_response.lock().unwrap_or_else(|p| p.into_inner()) = std::time::Instant::now();
    }

    fn quiet_for(&self) -> Duration {
        self.last_response
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .elapsed()
    }
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
    /// Error `GOAWAY`s since the last response, and no new connection
    /// before `reconnect_at`.
    goaway_errors: u32,
    reconnect_at: Option<tokio::time::Instant>,
}

/// Counts what the pool did (for tests and the benchmark).
#[derive(Default, Debug)]
pub struct PoolStats {
    pub connections_opened: AtomicUsize,
    pub resent_after_refusal: AtomicUsize,
    /// Connections closed because a PING went unanswered.
    pub dead_connections: Arc<AtomicUsize>,
    /// Streams sent again because their connection died or went away
    /// with an error (the gateway may have taken them: counted apart).
    pub resent_after_dead_connection: AtomicUsize,
    pub goaway_errors: AtomicUsize,
    /// PINGs sent (keep-alive and probes).
    pub pings: Arc<AtomicUsize>,
    /// `GOAWAY ENHANCE_YOUR_CALM "too_many_pings"` received.
    pub too_many_pings: Arc<AtomicUsize>,
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
    /// The PING intervals' multiplier (1, 2, 4… up to [`PING_MAX_SCALE`]),
    /// doubled by each `too_many_pings` GOAWAY.
    ping_scale: Arc<std::sync::atomic::AtomicU32>,
    /// Where pushes sent again that the gateway may have accepted are
    /// counted (`/metrics`).
    resends: Mutex<GatewayResends>,
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
            ping_scale: Arc::new(std::sync::atomic::AtomicU32::new(1)),
            resends: Mutex::new(GatewayResends::default()),
        })
    }

    /// Counts this pool's possibly doubled pushes into `resends` (the
    /// server's metrics) from now on.
    pub fn report_resends_to(&self, resends: GatewayResends) {
        *self.resends.lock().unwrap_or_else(|p| p.into_inner()) = resends;
    }

    fn count_resend(&self, cause: ResendCause) {
        self.resends
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .count(cause);
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

    /// The most [`H2Pool::send`] with this response `timeout` takes: the
    /// wait for a stream, then the answer; resends share both.
    pub const fn worst_case(timeout: Duration) -> Duration {
        STREAM_WAIT.saturating_add(timeout)
    }

    /// Sends `req` with `body` and reads the whole answer, within `timeout`
    /// once a stream is open. Streams the server refused unprocessed are
    /// sent again on another connection, all within
    /// [`H2Pool::worst_case`].
    pub async fn send(
        &self,
        req: Request<()>,
        body: Bytes,
        timeout: Duration,
    ) -> Result<Reply, SendError> {
        let mut resends = 0;
        let start = tokio::time::Instant::now();
        // The worker's claim, when the send runs under one: nothing is
        // written past its cut-off, and what goes out unanswered counts
        // against the push's re-sends.
        let scope = super::SendScope::current();
        if let Some(s) = &scope {
            s.set_written(false);
        }
        let cut_off = scope.as_ref().map(|s| s.cut_off);
        let by = |t: tokio::time::Instant| cut_off.map_or(t, |c| t.min(c));
        let deadline = by(start + STREAM_WAIT);
        let give_up = by(start + Self::worst_case(timeout));
        let cut = |at: tokio::time::Instant| cut_off.is_some_and(|c| at >= c);
        let unanswered_once = || scope.as_ref().is_none_or(|s| s.unanswered_once());
        loop {
            let guard = match tokio::time::timeout_at(deadline, self.checkout()).await {
                Ok(g) => g?,
                Err(_) if cut(deadline) => return Err(SendError::CutOff),
                Err(_) => return Err(SendError::Timeout),
            };
            // A resend gets what is left of the budget, not a fresh one.
            let ends = give_up.min(tokio::time::Instant::now() + timeout);
            let left = ends.saturating_duration_since(tokio::time::Instant::now());
            match self
                .exchange(&guard.conn, clone_request(&req), body.clone(), left)
                .await
            {
                Ok(reply) => {
                    self.answered();
                    return Ok(reply);
                }
                Err(Failure::Refused(why)) if resends < MAX_RESENDS => {
                    resends += 1;
                    self.stats
                        .resent_after_refusal
                        .fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(%why, "stream refused unprocessed: sending again");
                }
                Err(Failure::Lost(why, cause)) if resends < MAX_RESENDS && unanswered_once() => {
                    resends += 1;
                    self.stats
                        .resent_after_dead_connection
                        .fetch_add(1, Ordering::Relaxed);
                    self.count_resend(cause);
                    tracing::debug!(%why, "connection lost under the stream: sending again");
                }
                Err(Failure::Refused(why)) => return Err(SendError::Stream(why)),
                // The queue decides whether it goes again (the gateway may
                // have it).
                Err(Failure::Lost(why, cause)) => {
                    self.count_resend(cause);
                    return Err(SendError::NoAnswer {
                        why,
                        cut_off: false,
                    });
                }
                Err(Failure::Timeout) => {
                    self.count_resend(ResendCause::Timeout);
                    unanswered_once();
                    return Err(SendError::NoAnswer {
                        why: format!("no response within {} ms", left.as_millis()),
                        cut_off: cut(ends),
                    });
                }
                Err(Failure::Reset(why)) => {
                    self.count_resend(ResendCause::StreamReset);
                    unanswered_once();
                    return Err(SendError::NoAnswer {
                        why,
                        cut_off: false,
                    });
                }
                Err(Failure::CutOff) => return Err(SendError::CutOff),
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
            if e.is_remote() && e.is_go_away() {
                // h2 fails a stream with the peer's GOAWAY itself only if
                // its id is above the last-stream-id (or it was never
                // sent): the gateway did not process it (RFC 9113 §6.8),
                // so it goes again without counting, whatever the code.
                // The streams at or below it, which it may have processed,
                // fail only when the connection ends, with an I/O error
                // (below). `goaway_frames_fail_...` pins this.
                if too_many_pings(&e) {
                    if !conn.goaway_counted.swap(true, Ordering::AcqRel) {
                        self.calm_pings();
                    }
                } else if e.reason() != Some(Reason::NO_ERROR)
                    && !conn.goaway_counted.swap(true, Ordering::AcqRel)
                {
                    self.goaway_error();
                }
                return Failure::Refused(e.to_string());
            }
            if e.is_remote() && e.is_reset() && e.reason() == Some(Reason::REFUSED_STREAM) {
                Failure::Refused(e.to_string())
            } else if *conn.dead.borrow() {
                // Closed for not answering PINGs under the stream.
                Failure::Lost(e.to_string(), ResendCause::DeadConnection)
            } else if e.is_io() {
                // The connection broke (or ended after a GOAWAY) under the
                // stream: the gateway may have taken it. A connection
                // failing counts toward the reconnect backoff once, as an
                // error GOAWAY does: one whose last-stream-id refused no
                // stream fails its streams this way only, and must back
                // off too.
                if !conn.goaway_counted.swap(true, Ordering::AcqRel) {
                    self.goaway_error();
                }
                Failure::Lost(e.to_string(), ResendCause::ConnectionLost)
            } else {
                Failure::Other(e.to_string())
            }
        };
        let mut dead = conn.dead.subscribe();
        let lost = async move {
            let _ = dead.wait_for(|d| *d).await;
        };
        tokio::pin!(lost);
        let send = tokio::select! {
            biased;
            // Not yet sent: nothing the gateway could have taken.
            _ = &mut lost => return Err(Failure::Refused("the connection stopped answering PINGs".into())),
            r = conn.send.clone().ready() => r.map_err(|e| classify(e, conn))?,
        };
        let mut send = send;
        let scope = super::SendScope::current();
        if scope.as_ref().is_some_and(|s| s.cut_off_passed()) {
            return Err(Failure::CutOff);
        }
        let (response, mut stream) = send
            .send_request(req, body.is_empty())
            .map_err(|e| classify(e, conn))?;
        if !body.is_empty() {
            stream
                .send_data(body, true)
                .map_err(|e| classify(e, conn))?;
        }
        // From here the gateway may have the request: a caller that drops
        // this send before it ends (the worker's cut-off under the lease)
        // leaves a push that may be delivered, counted as a timeout. One
        // dropped before it was written is not.
        let mut written = Written {
            pool: self,
            armed: true,
        };
        if let Some(s) = &scope {
            s.set_written(true);
        }
        // Once written, a failure that is not a refusal or a lost
        // connection (a RST_STREAM with another code) leaves the gateway
        // maybe holding it.
        let classify = |e: h2::Error, conn: &Conn| match classify(e, conn) {
            Failure::Other(why) => Failure::Reset(why),
            f => f,
        };
        let read = async {
            let resp = response.await.map_err(|e| classify(e, conn))?;
            conn.heard();
            let (parts, mut recv) = resp.into_parts();
            let mut buf = Vec::new();
            while let Some(chunk) = recv.data().await {
                let chunk = chunk.map_err(|e| classify(e, conn))?;
                conn.heard();
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
        let ended = tokio::select! {
            biased;
            _ = &mut lost => Err(Failure::Lost(
                "the connection stopped answering PINGs".into(),
                ResendCause::DeadConnection,
            )),
            r = tokio::time::timeout(timeout, read) => match r {
                Ok(r) => r,
                // Dropping the stream resets it (RST_STREAM CANCEL).
                Err(_) => Err(Failure::Timeout),
            },
        };
        // Ended here: `send` counts what needs counting.
        written.armed = false;
        if let Some(s) = &scope {
            s.set_written(false);
        }
        ended
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
                    if c.in_flight.fetch_add(1, Ordering::AcqRel) == 0 {
                        // Quiet since now, not since its last response:
                        // an idle connection taking a stream is not slow.
                        c.heard();
                    }
                    let now = self.stats.streams.fetch_add(1, Ordering::AcqRel) + 1;
                    self.stats.peak_streams.fetch_max(now, Ordering::Relaxed);
                    return Ok(StreamGuard {
                        conn: c.clone(),
                        pool: self,
                    });
                }
                // Error GOAWAYs in a row: no new connection before then.
                let held = st
                    .reconnect_at
                    .filter(|at| *at > tokio::time::Instant::now());
                if held.is_none() && st.conns.len() + st.connecting < self.max_connections {
                    st.connecting += 1;
                    Ok(())
                } else {
                    Err(held)
                }
            };
            let connect = match connect {
                Ok(()) => true,
                Err(Some(at)) => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(at) => {}
                        _ = notified.as_mut() => {}
                    }
                    continue;
                }
                Err(None) => false,
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
            let goaway_counted = Arc::new(AtomicBool::new(false));
            let (send, ping, task) = match &self.tls {
                None => {
                    let (send, mut conn) =
                        builder.handshake(tcp).await.map_err(|e| e.to_string())?;
                    let ping = conn.ping_pong();
                    (
                        send,
                        ping,
                        self.drive(conn, closed.clone(), goaway_counted.clone()),
                    )
                }
                Some(tls) => {
                    let name = rustls_pki_types::ServerName::try_from(self.host.clone())
                        .map_err(|e| e.to_string())?;
                    let io = tls.connect(name, tcp).await.map_err(|e| e.to_string())?;
                    if io.get_ref().1.alpn_protocol() != Some(b"h2") {
                        return Err("the server did not negotiate HTTP/2".to_string());
                    }
                    let (send, mut conn) =
                        builder.handshake(io).await.map_err(|e| e.to_string())?;
                    let ping = conn.ping_pong();
                    (
                        send,
                        ping,
                        self.drive(conn, closed.clone(), goaway_counted.clone()),
                    )
                }
            };
            let conn = Arc::new(Conn {
                send,
                in_flight: AtomicUsize::new(0),
                closed,
                dead: tokio::sync::watch::channel(false).0,
                goaway_counted,
                last_response: Mutex::new(std::time::Instant::now()),
            });
            if let Some(ping) = ping {
                self.keep_alive(&conn, ping, task);
            }
            Ok::<_, String>(conn)
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
    fn drive<T>(
        &self,
        conn: h2::client::Connection<T, Bytes>,
        closed: Arc<AtomicBool>,
        goaway_counted: Arc<AtomicBool>,
    ) -> tokio::task::AbortHandle
    where
        T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let changed = self.changed.clone();
        let done = closed.clone();
        let changed_after = changed.clone();
        let scale = self.ping_scale.clone();
        let calmed = self.stats.too_many_pings.clone();
        let task = tokio::spawn(async move {
            if let Err(e) = conn.await {
                // Told to ping less (an idle connection has no stream to
                // see it): not a gateway error, no reconnect backoff.
                if too_many_pings(&e) && !goaway_counted.swap(true, Ordering::AcqRel) {
                    calm(&scale, &calmed);
                }
                tracing::debug!(error = %e, "push gateway connection ended");
            }
            done.store(true, Ordering::Release);
            changed.notify_waiters();
        });
        let abort = task.abort_handle();
        // Aborted (a dead connection), the task above never marks it.
        tokio::spawn(async move {
            let _ = task.await;
            closed.store(true, Ordering::Release);
            changed_after.notify_waiters();
        });
        abort
    }

    /// Pings `conn` while it lives (see the module's notes): when a
    /// stream is slow or the connection idle, never while frames flow;
    /// one PING left unanswered closes it and releases its streams to go
    /// again.
    fn keep_alive(&self, conn: &Arc<Conn>, ping: h2::PingPong, io: tokio::task::AbortHandle) {
        type Pinging = std::pin::Pin<
            Box<
                dyn std::future::Future<Output = (h2::PingPong, Result<h2::Pong, h2::Error>)>
                    + Send,
            >,
        >;
        let weak = Arc::downgrade(conn);
        let changed = self.changed.clone();
        let stats_dead = self.dead_counter();
        let pings = self.stats.pings.clone();
        let scale = self.ping_scale.clone();
        tokio::spawn(async move {
            let mut ping = Some(ping);
            let mut last_ping = tokio::time::Instant::now();
            loop {
                // Looked at often (a local check, nothing sent), so a
                // stream that goes quiet is probed soon after
                // PING_SLOW_STREAM, not at the end of an idle interval.
                tokio::time::sleep(PING_CHECK_EVERY).await;
                let (busy, quiet) = match weak.upgrade() {
                    Some(c) if !c.closed.load(Ordering::Acquire) => {
                        (c.in_flight.load(Ordering::Acquire) > 0, c.quiet_for())
                    }
                    _ => return,
                };
                let times = scale.load(Ordering::Relaxed).max(1);
                let every = if busy {
                    PING_SLOW_STREAM * times
                } else {
                    PING_IDLE_EVERY * times
                };
                if quiet < every || last_ping.elapsed() < every {
                    continue;
                }
                last_ping = tokio::time::Instant::now();
                pings.fetch_add(1, Ordering::Relaxed);
                let Some(mut pp) = ping.take() else { return };
                let mut pinging: Pinging = Box::pin(async move {
                    let pong = pp.ping(h2::Ping::opaque()).await;
                    (pp, pong)
                });
                // Dead once neither the PING's answer nor any response
                // came for PING_TIMEOUT: a late PING on a connection still
                // answering streams is a loaded peer, and is waited for
                // only until PING_TIMEOUT after the last response (not
                // another round of the loop: that made a dead connection
                // cost up to 5 s instead of 3).
                let mut wait = PING_TIMEOUT;
                let alive = loop {
                    match tokio::time::timeout(wait, &mut pinging).await {
                        Ok((pp, Ok(_))) => {
                            ping = Some(pp);
                            break true;
                        }
                        // The connection ended on its own: nothing to do.
                        Ok((_, Err(_))) => return,
                        Err(_) => {
                            let since = weak.upgrade().map(|c| {
                                c.last_response
                                    .lock()
                                    .unwrap_or_else(|p| p.into_inner())
                                    .elapsed()
                            });
                            match since {
                                Some(s) if s < PING_TIMEOUT => wait = PING_TIMEOUT - s,
                                _ => break false,
                            }
                        }
                    }
                };
                if alive {
                    continue;
                }
                if let Some(c) = weak.upgrade() {
                    c.closed.store(true, Ordering::Release);
                    let _ = c.dead.send(true);
                }
                stats_dead.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(
                    timeout_ms = PING_TIMEOUT.as_millis() as u64,
                    "push gateway connection stopped answering PINGs: closed, its pushes go again on a new one"
                );
                io.abort();
                changed.notify_waiters();
                return;
            }
        });
    }

    /// The counter of dead connections, shared with the keep-alive tasks.
    fn dead_counter(&self) -> Arc<AtomicUsize> {
        self.stats.dead_connections.clone()
    }

    /// A `GOAWAY ENHANCE_YOUR_CALM "too_many_pings"`: ping less.
    fn calm_pings(&self) {
        calm(&self.ping_scale, &self.stats.too_many_pings);
    }

    /// The PING intervals' multiplier now (1 until told to ping less).
    pub fn ping_scale(&self) -> u32 {
        self.ping_scale.load(Ordering::Relaxed)
    }

    /// A response arrived: error `GOAWAY`s no longer hold connections back.
    fn answered(&self) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if st.goaway_errors > 0 {
            st.goaway_errors = 0;
            st.reconnect_at = None;
        }
    }

    /// A `GOAWAY` with an error code: each in a row holds new connections
    /// back one step longer.
    fn goaway_error(&self) {
        self.stats.goaway_errors.fetch_add(1, Ordering::Relaxed);
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        st.goaway_errors += 1;
        let step = GOAWAY_BACKOFF.delay(st.goaway_errors);
        // The first only closes; the pool backs off from the second on.
        if st.goaway_errors > 1 {
            st.reconnect_at = Some(tokio::time::Instant::now() + step);
        }
    }
}

/// Whether `e` is the peer's `GOAWAY ENHANCE_YOUR_CALM` with debug data
/// `too_many_pings` (gRPC's and Google's front ends' way to say "ping
/// less"). `h2` shows the debug data only in the error's text.
fn too_many_pings(e: &h2::Error) -> bool {
    e.is_go_away()
        && e.is_remote()
        && e.reason() == Some(Reason::ENHANCE_YOUR_CALM)
        && e.to_string().contains("too_many_pings")
}

/// Doubles the PING intervals' multiplier `scale` (up to
/// [`PING_MAX_SCALE`]) and counts it.
fn calm(scale: &std::sync::atomic::AtomicU32, counter: &AtomicUsize) {
    counter.fetch_add(1, Ordering::Relaxed);
    let was = scale
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
            Some((s * 2).min(PING_MAX_SCALE))
        })
        .unwrap_or(PING_MAX_SCALE);
    tracing::warn!(
        scale = (was * 2).min(PING_MAX_SCALE),
        "push gateway said too_many_pings (GOAWAY ENHANCE_YOUR_CALM): pinging less often"
    );
}

/// A request written to a connection and not yet ended: dropped while
/// armed (its caller gave up on it), it counts as maybe delivered.
struct Written<'a> {
    pool: &'a H2Pool,
    armed: bool,
}

impl Drop for Written<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.pool.count_resend(ResendCause::Timeout);
        }
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
    /// The connection died (no PING answer) or went away with an error
    /// under the stream: sent again at once; the gateway may have taken it.
    Lost(String, ResendCause),
    /// Written, no response within the time.
    Timeout,
    /// Written, then reset by the peer with a code other than
    /// REFUSED_STREAM: it may have been processed.
    Reset(String),
    /// Not written: the claim's cut-off passed.
    CutOff,
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

    /// One raw HTTP/2 frame (9-byte header, then `payload`), for the
    /// hand-written gateways below that misbehave in ways h2's server will not.
    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut f = (payload.len() as u32).to_be_bytes()[1..].to_vec();
        f.extend([kind, flags]);
        f.extend(stream.to_be_bytes());
        f.extend(payload);
        f
    }

    /// A request written and never answered is a push the gateway may
    /// have taken: the timeout counts it in the pool's resend metric (the
    /// queue sends it again).
    #[tokio::test]
    async fn an_unanswered_request_is_counted_as_maybe_delivered() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            let mut conn = h2::server::handshake(tcp).await.unwrap();
            let mut held: Vec<(_, h2::server::SendResponse<Bytes>)> = Vec::new();
            while let Some(Ok(request)) = conn.accept().await {
                held.push(request); // taken, never answered
            }
        });
        let resends = crate::push::metrics::Resends::default();
        let pool = H2Pool::new(&format!("http://127.0.0.1:{port}"), 1).unwrap();
        pool.report_resends_to(resends.for_gateway("apns"));
        let req = Request::post(pool.uri("/3/device/x")).body(()).unwrap();
        let sent = pool
            .send(req, Bytes::from_static(b"{}"), Duration::from_millis(300))
            .await;
        assert!(
            matches!(sent, Err(SendError::NoAnswer { cut_off: false, .. })),
            "{sent:?}"
        );
        assert_eq!(resends.get("apns", ResendCause::Timeout), 1);
        assert_eq!(resends.get("apns", ResendCause::ConnectionLost), 0);
    }

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

    /// Pins what the classification relies on in `h2`: after a GOAWAY
    /// with an error code (INTERNAL_ERROR, last-stream-id 3, then the
    /// connection closes), the streams above 3 fail with the GOAWAY's own
    /// error and go again without counting (never processed), the two at
    /// or below it fail with an I/O error and are counted as maybe
    /// delivered; all six are answered on a new connection.
    #[tokio::test]
    async fn goaway_frames_fail_only_the_streams_at_or_below_the_last_stream_id_as_maybe_delivered()
    {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            // The first connection, frame by frame: six requests taken,
            // then GOAWAY(last-stream-id = the second, INTERNAL_ERROR).
            let (mut tcp, _) = listener.accept().await.unwrap();
            let mut preface = [0u8; 24];
            tcp.read_exact(&mut preface).await.unwrap();
            tcp.write_all(&frame(0x4, 0, 0, &[])).await.unwrap();
            let mut streams = Vec::new();
            while streams.len() < 6 {
                let mut head = [0u8; 9];
                tcp.read_exact(&mut head).await.unwrap();
                let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
                let mut payload = vec![0u8; len];
                tcp.read_exact(&mut payload).await.unwrap();
                let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
                match head[3] {
                    0x4 if head[4] & 1 == 0 => tcp.write_all(&frame(0x4, 1, 0, &[])).await.unwrap(),
                    0x1 => streams.push(stream),
                    _ => {}
                }
            }
            let mut goaway = streams[1].to_be_bytes().to_vec();
            goaway.extend(2u32.to_be_bytes()); // INTERNAL_ERROR
            tcp.write_all(&frame(0x7, 0, 0, &goaway)).await.unwrap();
            let _ = tcp.shutdown().await;
            let mut sink = Vec::new();
            let _ = tcp.read_to_end(&mut sink).await;
            drop(tcp);
            // Then an h2 server answering 200 to everything.
            while let Ok((tcp, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut conn = h2::server::handshake(tcp).await.unwrap();
                    while let Some(Ok((_, mut respond))) = conn.accept().await {
                        let _ = respond.send_response(http::Response::new(()), true);
                    }
                });
            }
        });
        let resends = crate::push::metrics::Resends::default();
        let pool = H2Pool::new(&format!("http://127.0.0.1:{port}"), 1).unwrap();
        pool.report_resends_to(resends.for_gateway("apns"));
        let send = || {
            let req = Request::post(pool.uri("/3/device/x")).body(()).unwrap();
            pool.send(req, Bytes::new(), Duration::from_secs(5))
        };
        let (a, b, c, d, e, f) = tokio::join!(send(), send(), send(), send(), send(), send());
        for r in [a, b, c, d, e, f].iter() {
            assert_eq!(r.as_ref().map(|r| r.status).ok(), Some(200), "{r:?}");
        }
        assert_eq!(resends.get("apns", ResendCause::ConnectionLost), 2);
        assert_eq!(pool.stats.resent_after_refusal.load(Ordering::SeqCst), 4);
        assert_eq!(pool.stats.goaway_errors.load(Ordering::SeqCst), 1);
    }

    /// An error GOAWAY whose last-stream-id keeps every stream refuses
    /// none: its streams fail only as the connection ends. Two such
    /// connections in a row still hold the next one back (before, only a
    /// GOAWAY that refused a stream counted, and these reconnected at once
    /// forever).
    #[tokio::test]
    async fn error_goaways_that_refuse_no_stream_still_back_off() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(Mutex::new(Vec::new()));
        let at = accepted.clone();
        tokio::spawn(async move {
            // Two connections take the request, then GOAWAY(last-stream-id
            // = that request, INTERNAL_ERROR) and close.
            for _ in 0..2 {
                let (mut tcp, _) = listener.accept().await.unwrap();
                at.lock().unwrap().push(tokio::time::Instant::now());
                let mut preface = [0u8; 24];
                tcp.read_exact(&mut preface).await.unwrap();
                tcp.write_all(&frame(0x4, 0, 0, &[])).await.unwrap();
                let stream = loop {
                    let mut head = [0u8; 9];
                    tcp.read_exact(&mut head).await.unwrap();
                    let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
                    let mut payload = vec![0u8; len];
                    tcp.read_exact(&mut payload).await.unwrap();
                    let stream =
                        u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
                    match head[3] {
                        0x4 if head[4] & 1 == 0 => {
                            tcp.write_all(&frame(0x4, 1, 0, &[])).await.unwrap()
                        }
                        0x1 => break stream,
                        _ => {}
                    }
                };
                let mut goaway = stream.to_be_bytes().to_vec();
                goaway.extend(2u32.to_be_bytes()); // INTERNAL_ERROR
                tcp.write_all(&frame(0x7, 0, 0, &goaway)).await.unwrap();
                let _ = tcp.shutdown().await;
                drop(tcp);
            }
            while let Ok((tcp, _)) = listener.accept().await {
                at.lock().unwrap().push(tokio::time::Instant::now());
                tokio::spawn(async move {
                    let mut conn = h2::server::handshake(tcp).await.unwrap();
                    while let Some(Ok((_, mut respond))) = conn.accept().await {
                        let _ = respond.send_response(http::Response::new(()), true);
                    }
                });
            }
        });
        let pool = H2Pool::new(&format!("http://127.0.0.1:{port}"), 1).unwrap();
        let req = Request::post(pool.uri("/3/device/x")).body(()).unwrap();
        let reply = pool.send(req, Bytes::new(), Duration::from_secs(5)).await;
        assert_eq!(reply.map(|r| r.status).ok(), Some(200));
        assert_eq!(pool.stats.goaway_errors.load(Ordering::SeqCst), 2);
        let at = accepted.lock().unwrap().clone();
        assert_eq!(at.len(), 3, "{at:?}");
        // The second failure in a row holds the third connection back.
        assert!(
            at[2] - at[1] >= GOAWAY_BACKOFF.delay(2) - Duration::from_millis(50),
            "reconnected after {:?}",
            at[2] - at[1]
        );
    }

    /// An h2 server answering every request after `delay` (PINGs are
    /// answered by `h2` itself).
    async fn answering_after(delay: Duration) -> u16 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut conn = h2::server::handshake(tcp).await.unwrap();
                    while let Some(Ok((_, mut respond))) = conn.accept().await {
                        tokio::spawn(async move {
                            tokio::time::sleep(delay).await;
                            let _ = respond.send_response(http::Response::new(()), true);
                        });
                    }
                });
            }
        });
        port
    }

    /// A busy connection whose responses keep coming is never pinged
    /// (Google's front ends refuse pings sent while frames flow): well
    /// past the slow-stream probe's interval, no PING went out.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_busy_connection_with_frames_flowing_sends_no_ping() {
        let port = answering_after(Duration::from_millis(50)).await;
        let pool = Arc::new(H2Pool::new(&format!("http://127.0.0.1:{port}"), 1).unwrap());
        let until = tokio::time::Instant::now() + PING_SLOW_STREAM * 2 + Duration::from_millis(500);
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let pool = pool.clone();
            tasks.push(tokio::spawn(async move {
                while tokio::time::Instant::now() < until {
                    let req = Request::post(pool.uri("/3/device/x")).body(()).unwrap();
                    let reply = pool.send(req, Bytes::new(), Duration::from_secs(5)).await;
                    assert_eq!(reply.map(|r| r.status).ok(), Some(200));
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(pool.stats.connections_opened.load(Ordering::SeqCst), 1);
        assert_eq!(pool.stats.pings.load(Ordering::SeqCst), 0);
    }

    /// A stream left without a response for longer than
    /// [`PING_SLOW_STREAM`] is probed with a PING; answered, the
    /// connection stays and the slow response arrives on it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_slow_stream_is_probed_with_a_ping() {
        let port = answering_after(PING_SLOW_STREAM + Duration::from_secs(1)).await;
        let pool = H2Pool::new(&format!("http://127.0.0.1:{port}"), 1).unwrap();
        let req = Request::post(pool.uri("/3/device/x")).body(()).unwrap();
        let reply = pool.send(req, Bytes::new(), Duration::from_secs(10)).await;
        assert_eq!(reply.map(|r| r.status).ok(), Some(200));
        assert_eq!(pool.stats.pings.load(Ordering::SeqCst), 1);
        assert_eq!(pool.stats.dead_connections.load(Ordering::SeqCst), 0);
        assert_eq!(pool.stats.connections_opened.load(Ordering::SeqCst), 1);
    }

    /// `GOAWAY ENHANCE_YOUR_CALM "too_many_pings"` doubles the PING
    /// intervals (up to the cap) and is not a gateway error: no reconnect
    /// backoff, the refused request goes again at once.
    #[tokio::test]
    async fn too_many_pings_doubles_the_ping_interval_without_backing_off() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            // Four connections refuse the request with GOAWAY(last-stream-id
            // 0, ENHANCE_YOUR_CALM, "too_many_pings") and close.
            for _ in 0..4 {
                let (mut tcp, _) = listener.accept().await.unwrap();
                let mut preface = [0u8; 24];
                tcp.read_exact(&mut preface).await.unwrap();
                tcp.write_all(&frame(0x4, 0, 0, &[])).await.unwrap();
                loop {
                    let mut head = [0u8; 9];
                    tcp.read_exact(&mut head).await.unwrap();
                    let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
                    let mut payload = vec![0u8; len];
                    tcp.read_exact(&mut payload).await.unwrap();
                    match head[3] {
                        0x4 if head[4] & 1 == 0 => {
                            tcp.write_all(&frame(0x4, 1, 0, &[])).await.unwrap()
                        }
                        0x1 => break,
                        _ => {}
                    }
                }
                let mut goaway = 0u32.to_be_bytes().to_vec();
                goaway.extend(0xbu32.to_be_bytes()); // ENHANCE_YOUR_CALM
                goaway.extend(b"too_many_pings");
                tcp.write_all(&frame(0x7, 0, 0, &goaway)).await.unwrap();
                let _ = tcp.shutdown().await;
            }
            while let Ok((tcp, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut conn = h2::server::handshake(tcp).await.unwrap();
                    while let Some(Ok((_, mut respond))) = conn.accept().await {
                        let _ = respond.send_response(http::Response::new(()), true);
                    }
                });
            }
        });
        let pool = H2Pool::new(&format!("http://127.0.0.1:{port}"), 1).unwrap();
        let t0 = tokio::time::Instant::now();
        let req = Request::post(pool.uri("/3/device/x")).body(()).unwrap();
        let reply = pool.send(req, Bytes::new(), Duration::from_secs(5)).await;
        assert_eq!(reply.map(|r| r.status).ok(), Some(200));
        assert!(t0.elapsed() < GOAWAY_BACKOFF.delay(2), "{:?}", t0.elapsed());
        assert_eq!(pool.stats.goaway_errors.load(Ordering::SeqCst), 0);
        assert_eq!(pool.stats.too_many_pings.load(Ordering::SeqCst), 4);
        assert_eq!(pool.ping_scale(), PING_MAX_SCALE);
    }

    /// A send dropped after its request was written counts as maybe
    /// delivered; one dropped while waiting for a stream does not.
    #[tokio::test]
    async fn only_a_written_request_given_up_counts_as_maybe_delivered() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            // Takes requests, never answers.
            while let Ok((tcp, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut conn = h2::server::handshake(tcp).await.unwrap();
                    let mut held = Vec::new();
                    while let Some(Ok(r)) = conn.accept().await {
                        held.push(r);
                    }
                });
            }
        });
        let resends = crate::push::metrics::Resends::default();
        let pool = H2Pool::new(&format!("http://127.0.0.1:{port}"), 1).unwrap();
        pool.report_resends_to(resends.for_gateway("apns"));
        let req = Request::post(pool.uri("/3/device/x")).body(()).unwrap();
        let cut = tokio::time::timeout(
            Duration::from_millis(300),
            pool.send(req, Bytes::new(), Duration::from_secs(5)),
        )
        .await;
        assert!(cut.is_err());
        assert_eq!(resends.get("apns", ResendCause::Timeout), 1);
        // Never written: a pool that cannot connect.
        let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let nowhere = closed.local_addr().unwrap().port();
        drop(closed);
        let pool = H2Pool::new(&format!("http://127.0.0.1:{nowhere}"), 1).unwrap();
        let resends = crate::push::metrics::Resends::default();
        pool.report_resends_to(resends.for_gateway("apns"));
        let req = Request::post(pool.uri("/3/device/x")).body(()).unwrap();
        let _ = tokio::time::timeout(
            Duration::from_millis(300),
            pool.send(req, Bytes::new(), Duration::from_secs(5)),
        )
        .await;
        assert_eq!(resends.get("apns", ResendCause::Timeout), 0);
    }
}
