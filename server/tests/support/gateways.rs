//! Stand-in APNs and FCM servers on loopback, for the push fan-out tests
//! and `scripts/bench-push` (included by path from both).
//!
//! **APNs** speaks HTTP/2 only (no HTTP/1.1, no upgrade: a client must
//! use prior knowledge on plain TCP, as it negotiates `h2` over TLS with
//! the real one). Each request is checked as APNs does: `POST
//! /3/device/<hex token>`, `apns-topic`, `apns-push-type`,
//! `apns-priority` (5 or 10), `apns-expiration`, a body of at most 4 KB
//! holding JSON with `aps`, and the provider token: an ES256 JWT with
//! `kid` and `iss`, its signature verified with the team key's public half
//! (each distinct token once, as the real one caches them), no older than
//! an hour, and on each connection a new one no sooner than 20 minutes
//! after the last new one it took there (`429 TooManyProviderTokenUpdates`,
//! as APNs refuses a token refreshed too often; the tokens it took before
//! still work for their hour). Per connection, as APNs keeps the token
//! with the connection: a restarted server, or another instance with the
//! same key, opens its own. Scripted answers ([`ApnsState::script`], [`ApnsState::storm`])
//! are given as they are, whatever the token. Answers carry `apns-id`, and errors the JSON `{"reason": …}`
//! with APNs's status codes and reason names.
//!
//! Stream limits are APNs's: each connection advertises
//! `SETTINGS_MAX_CONCURRENT_STREAMS` = `max_streams` (500 by default), drops
//! it to 1 right after it rejects a notification and raises it back after
//! the next success, by sending a new SETTINGS frame. A stream opened over
//! the limit the client has acknowledged is refused (`RST_STREAM
//! REFUSED_STREAM`) and counted in `violations`. `goaway_after(n)` makes
//! the connection that accepts the n-th notification send `GOAWAY`
//! (gracefully: the streams it took are answered, the later ones refused).
//!
//! How: each TCP connection is served by an `h2` server (the HTTP/2 of
//! hyper) on an in-memory pipe, behind a small frame relay that owns the
//! connection's SETTINGS_MAX_CONCURRENT_STREAMS (h2's server cannot change
//! it once the connection is up): it rewrites the server's SETTINGS, injects
//! its own when the limit changes, swallows the client's acknowledgements
//! of those, and counts open streams. Frames are relayed unchanged
//! otherwise (header blocks included, so HPACK state stays in step).
//!
//! **FCM** is `messages:send` of FCM HTTP v1 plus the OAuth token endpoint
//! (JWT-bearer grant, the RS256 assertion verified with the service
//! account's public key), served by hyper (HTTP/2 with prior knowledge, or
//! HTTP/1.1). Messages need the bearer token it issued, a `message` with a
//! `token` and a `data` map of strings; errors are Google's error bodies
//! (`UNREGISTERED` in `details`).

#![allow(dead_code)]

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Notify};

pub fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../server/tests/fixtures")
            .join(name),
    )
    .unwrap()
}

/// A scripted answer for one device token: status, APNs reason,
/// Retry-After seconds.
pub type ApnsReply = (u16, &'static str, Option<u64>);

/// One notification APNs accepted.
#[derive(Debug, Clone)]
pub struct Accepted {
    pub device_token: String,
    pub collapse_id: String,
    pub payload: Value,
    pub at: Instant,
    pub connection: usize,
}

#[derive(Default)]
pub struct ApnsState {
    pub accepted: Mutex<Vec<Accepted>>,
    /// Every request answered (any status), by device token, in order.
    pub answered: Mutex<Vec<(String, u16)>>,
    /// Replies by device token, in order; 200 once exhausted.
    pub script: Mutex<HashMap<String, VecDeque<ApnsReply>>>,
    /// Device tokens whose requests are never answered.
    pub hang: Mutex<HashSet<String>>,
    /// Device tokens whose next requests (how many) are read in full and
    /// then reset (RST_STREAM INTERNAL_ERROR): taken, never answered.
    reset: Mutex<HashMap<String, usize>>,
    /// The requests reset so far: device token and apns-collapse-id.
    pub reset_seen: Mutex<Vec<(String, String)>>,
    /// Streams opened over the acknowledged limit (refused).
    pub violations: AtomicUsize,
    pub connections: AtomicUsize,
    /// PING frames received from the client (acknowledgements aside).
    pub pings: AtomicUsize,
    /// The most streams open at once on one connection.
    pub peak_streams: AtomicUsize,
    /// The most streams open at once over all connections.
    pub peak_total: AtomicUsize,
    open_total: AtomicUsize,
    /// SETTINGS frames sent that lowered the limit to 1.
    pub limit_drops: AtomicUsize,
    pub bad_provider_tokens: AtomicUsize,
    /// New provider tokens refused as too soon after the last refresh:
    /// the requests, and the distinct tokens.
    pub token_updates_refused: AtomicUsize,
    pub tokens_refused_too_soon: Mutex<HashSet<String>>,
    /// Per connection: the provider tokens it took, and when it took the
    /// last new one.
    refreshed: Mutex<HashMap<usize, (HashSet<String>, Instant)>>,
    /// Send GOAWAY after this many accepted notifications (0: never).
    goaway_at: AtomicUsize,
    /// That GOAWAY carries INTERNAL_ERROR and closes the connection at once.
    goaway_error: std::sync::atomic::AtomicBool,
    /// The connection that accepts this many-th notification goes silent
    /// (0: never): it stops reading and writing and never closes, as a
    /// connection a NAT dropped without a word. When it did.
    freeze_at: AtomicUsize,
    pub frozen_at: Mutex<Option<Instant>>,
    /// The connection that went silent (its number, from 1), or sent the
    /// GOAWAY (0: none).
    pub frozen_connection: AtomicUsize,
    pub goaway_connection: AtomicUsize,
    pub goaways: AtomicUsize,
    verified: Mutex<HashSet<String>>,
    /// Until then every request gets these answers in turn (an outage of
    /// the whole gateway), whatever its device; its script is left alone.
    outage: Mutex<Option<(Instant, Vec<ApnsReply>)>>,
    outage_answers: AtomicUsize,
    delay_ms: AtomicU64,
    max_streams: AtomicUsize,
    taps: Mutex<Vec<mpsc::UnboundedSender<Accepted>>>,
}

pub struct ApnsStandIn {
    pub url: String,
    pub state: Arc<ApnsState>,
}

impl ApnsState {
    pub fn accepted_count(&self) -> usize {
        self.accepted.lock().unwrap().len()
    }
    pub fn goaway_after(&self, n: usize) {
        self.goaway_at.store(n, Ordering::SeqCst);
    }
    /// As [`ApnsState::goaway_after`], with an error code (INTERNAL_ERROR).
    pub fn goaway_with_error_after(&self, n: usize) {
        self.goaway_error.store(true, Ordering::SeqCst);
        self.goaway_at.store(n, Ordering::SeqCst);
    }
    /// The connection that accepts the n-th notification goes silent.
    pub fn freeze_after(&self, n: usize) {
        self.freeze_at.store(n, Ordering::SeqCst);
    }
    pub fn set_delay(&self, d: Duration) {
        self.delay_ms.store(d.as_millis() as u64, Ordering::SeqCst);
    }
    /// Every request answered `reply` for `lasting`, from now.
    pub fn outage(&self, lasting: Duration, reply: ApnsReply) {
        self.storm(lasting, vec![reply]);
    }
    /// Every request answered by `replies` in turn for `lasting`, from
    /// now: a storm of the whole gateway, as APNs's 503s and throttling
    /// come (about the service, not one device).
    pub fn storm(&self, lasting: Duration, replies: Vec<ApnsReply>) {
        *self.outage.lock().unwrap() = Some((Instant::now() + lasting, replies));
    }
    /// Streams open now, over all connections.
    pub fn open_streams(&self) -> usize {
        self.open_total.load(Ordering::SeqCst)
    }
    /// Every notification accepted from now on, as it is accepted.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<Accepted> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.taps.lock().unwrap().push(tx);
        rx
    }
    /// The next `n` requests for `token` are read and then reset.
    pub fn reset_next(&self, token: &str, n: usize) {
        self.reset.lock().unwrap().insert(token.to_string(), n);
    }
    /// The provider tokens it took, over all connections.
    pub fn tokens_taken(&self) -> usize {
        let refreshed = self.refreshed.lock().unwrap();
        let all: HashSet<&String> = refreshed.values().flat_map(|(t, _)| t).collect();
        all.len()
    }
    pub fn script(&self, token: &str, replies: Vec<ApnsReply>) {
        self.script
            .lock()
            .unwrap()
            .insert(token.to_string(), replies.into());
    }
}

/// Starts a stand-in APNs on 127.0.0.1 answering after `delay`, each
/// connection advertising `max_streams` streams.
pub async fn apns(delay: Duration, max_streams: usize) -> ApnsStandIn {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    apns_on(listener, delay, max_streams, None)
}

/// [`apns`] slow to accept connections: its listener's accept queue
/// (backlog 0) is kept full and nothing is accepted, so a client's TCP
/// connect hangs (its SYNs dropped, as by a gateway's overloaded
/// front end) until `release` is sent; then it serves as [`apns`].
pub async fn apns_slow_to_accept(
    delay: Duration,
    max_streams: usize,
) -> (ApnsStandIn, tokio::sync::oneshot::Sender<()>) {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(0).unwrap();
    // The one connection a backlog of 0 queues: every later SYN is dropped.
    let filler = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (release, released) = tokio::sync::oneshot::channel();
    let held = async move {
        let _ = released.await;
        drop(filler);
    };
    let standin = apns_on(listener, delay, max_streams, Some(Box::pin(held)));
    (standin, release)
}

type Gate = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

fn apns_on(
    listener: TcpListener,
    delay: Duration,
    max_streams: usize,
    gate: Option<Gate>,
) -> ApnsStandIn {
    let state = Arc::new(ApnsState::default());
    state.set_delay(delay);
    state.max_streams.store(max_streams, Ordering::SeqCst);
    let url = format!("http://{}", listener.local_addr().unwrap());
    let st = state.clone();
    tokio::spawn(async move {
        if let Some(gate) = gate {
            gate.await;
        }
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let _ = tcp.set_nodelay(true);
            let n = st.connections.fetch_add(1, Ordering::SeqCst) + 1;
            tokio::spawn(serve_apns_connection(tcp, st.clone(), n));
        }
    });
    ApnsStandIn { url, state }
}

// ---- the frame relay ----

const FRAME_DATA: u8 = 0x0;
const FRAME_HEADERS: u8 = 0x1;
const FRAME_RST_STREAM: u8 = 0x3;
const FRAME_SETTINGS: u8 = 0x4;
const FRAME_PING: u8 = 0x6;
const FRAME_WINDOW_UPDATE: u8 = 0x8;
const FLAG_END_STREAM: u8 = 0x1;
const FLAG_ACK: u8 = 0x1;
const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
const REFUSED_STREAM: u32 = 0x7;
const CANCEL: u32 = 0x8;
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

struct Frame {
    kind: u8,
    flags: u8,
    stream: u32,
    payload: Bytes,
}

impl Frame {
    fn encode(&self) -> Bytes {
        let mut b = BytesMut::with_capacity(9 + self.payload.len());
        let len = self.payload.len() as u32;
        b.put_u8((len >> 16) as u8);
        b.put_u16(len as u16);
        b.put_u8(self.kind);
        b.put_u8(self.flags);
        b.put_u32(self.stream & 0x7fff_ffff);
        b.put_slice(&self.payload);
        b.freeze()
    }
    fn settings_limit(limit: u32) -> Frame {
        let mut p = BytesMut::new();
        p.put_u16(SETTINGS_MAX_CONCURRENT_STREAMS);
        p.put_u32(limit);
        Frame {
            kind: FRAME_SETTINGS,
            flags: 0,
            stream: 0,
            payload: p.freeze(),
        }
    }
    fn rst(stream: u32, code: u32) -> Frame {
        Frame {
            kind: FRAME_RST_STREAM,
            flags: 0,
            stream,
            payload: Bytes::copy_from_slice(&code.to_be_bytes()),
        }
    }
    fn window_update(stream: u32, n: u32) -> Frame {
        Frame {
            kind: FRAME_WINDOW_UPDATE,
            flags: 0,
            stream,
            payload: Bytes::copy_from_slice(&n.to_be_bytes()),
        }
    }
}

async fn read_frame<R: tokio::io::AsyncRead + Unpin>(r: &mut R) -> Option<Frame> {
    let mut head = [0u8; 9];
    r.read_exact(&mut head).await.ok()?;
    let len = ((head[0] as usize) << 16) | ((head[1] as usize) << 8) | head[2] as usize;
    let mut payload = vec![0u8; len];
    r.read_exact(&mut payload).await.ok()?;
    Some(Frame {
        kind: head[3],
        flags: head[4],
        stream: u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff,
        payload: payload.into(),
    })
}

/// One connection's stream accounting.
struct Streams {
    /// Streams open (the client's HEADERS seen, no end from the server yet).
    open: HashSet<u32>,
    /// Streams refused by the relay: their frames go nowhere.
    refused: HashSet<u32>,
    /// The limit the client has acknowledged (before any: unlimited).
    acked: usize,
    /// The limit sent last.
    advertised: usize,
    /// SETTINGS sent to the client, oldest first, waiting for its ACK:
    /// `(from the h2 server, the limit it carried)`.
    unacked: VecDeque<(bool, Option<usize>)>,
}

/// What the relay's writer is told to send to the client.
enum Out {
    /// A frame from the h2 server.
    Server(Frame),
    /// A frame of the relay's own (RST_STREAM, WINDOW_UPDATE).
    Own(Frame),
    /// A new stream limit.
    Limit(usize),
    /// The h2 server ended (after a GOAWAY, say): close the connection, as
    /// a server does once it has gone away.
    Close,
}

/// The per-connection handle the request handlers use.
#[derive(Clone)]
struct ConnCtl {
    id: usize,
    out: mpsc::UnboundedSender<Out>,
    streams: Arc<Mutex<Streams>>,
    goaway: Arc<Notify>,
    /// Silent: nothing more is read or written, the socket stays open.
    frozen: Arc<std::sync::atomic::AtomicBool>,
}

impl ConnCtl {
    fn set_limit(&self, limit: usize) {
        let changed = {
            let s = self.streams.lock().unwrap();
            s.advertised != limit
        };
        if changed {
            let _ = self.out.send(Out::Limit(limit));
        }
    }
}

async fn serve_apns_connection(tcp: TcpStream, state: Arc<ApnsState>, id: usize) {
    let (mut client_rd, mut client_wr) = tcp.into_split();
    let mut preface = [0u8; 24];
    if client_rd.read_exact(&mut preface).await.is_err() || preface != PREFACE {
        // Not HTTP/2 with prior knowledge (an HTTP/1.1 request, say):
        // APNs speaks nothing else.
        return;
    }
    let (relay_side, server_side) = tokio::io::duplex(1 << 20);
    let (mut inner_rd, mut inner_wr) = tokio::io::split(relay_side);
    let initial = state.max_streams.load(Ordering::SeqCst);
    let streams = Arc::new(Mutex::new(Streams {
        open: HashSet::new(),
        refused: HashSet::new(),
        acked: usize::MAX,
        advertised: initial,
        unacked: VecDeque::new(),
    }));
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<Out>();
    let ctl = ConnCtl {
        id,
        out: out_tx.clone(),
        streams: streams.clone(),
        goaway: Arc::new(Notify::new()),
        frozen: Arc::new(std::sync::atomic::AtomicBool::new(false)),
    };

    // The h2 server.
    tokio::spawn(run_h2_server(server_side, state.clone(), ctl.clone()));

    // Writer: everything to the client goes through here, so SETTINGS are
    // recorded in the order the client sees them.
    let st = streams.clone();
    let state_w = state.clone();
    let frozen_w = ctl.frozen.clone();
    let writer = tokio::spawn(async move {
        let mut first_settings = true;
        while let Some(out) = out_rx.recv().await {
            if frozen_w.load(Ordering::SeqCst) {
                // Held open, never written to again (nor closed).
                let _keep = client_wr;
                std::future::pending::<()>().await;
                return;
            }
            let frame = match out {
                Out::Close => break,
                Out::Own(f) => f,
                Out::Limit(limit) => {
                    let mut s = st.lock().unwrap();
                    if s.advertised == limit {
                        continue;
                    }
                    s.advertised = limit;
                    s.unacked.push_back((false, Some(limit)));
                    if limit == 1 {
                        state_w.limit_drops.fetch_add(1, Ordering::SeqCst);
                    }
                    Frame::settings_limit(limit as u32)
                }
                Out::Server(mut f) => {
                    let mut s = st.lock().unwrap();
                    match f.kind {
                        FRAME_SETTINGS if f.flags & FLAG_ACK == 0 => {
                            // Take the h2 server's limit out; the relay's
                            // goes in the first SETTINGS.
                            let mut p = BytesMut::new();
                            let mut body = f.payload.clone();
                            while body.remaining() >= 6 {
                                let (k, v) = (body.get_u16(), body.get_u32());
                                if k != SETTINGS_MAX_CONCURRENT_STREAMS {
                                    p.put_u16(k);
                                    p.put_u32(v);
                                }
                            }
                            let limit = if first_settings {
                                first_settings = false;
                                p.put_u16(SETTINGS_MAX_CONCURRENT_STREAMS);
                                p.put_u32(s.advertised as u32);
                                Some(s.advertised)
                            } else {
                                None
                            };
                            s.unacked.push_back((true, limit));
                            f.payload = p.freeze();
                        }
                        FRAME_HEADERS | FRAME_DATA if s.refused.contains(&f.stream) => continue,
                        FRAME_HEADERS | FRAME_DATA
                            if f.flags & FLAG_END_STREAM != 0 && s.open.remove(&f.stream) =>
                        {
                            state_w.open_total.fetch_sub(1, Ordering::SeqCst);
                        }
                        FRAME_RST_STREAM => {
                            if s.refused.contains(&f.stream) {
                                continue;
                            }
                            if s.open.remove(&f.stream) {
                                state_w.open_total.fetch_sub(1, Ordering::SeqCst);
                            }
                        }
                        _ => {}
                    }
                    f
                }
            };
            if client_wr.write_all(&frame.encode()).await.is_err() {
                return;
            }
        }
        let _ = client_wr.shutdown().await;
    });

    // Server -> client.
    let out = out_tx.clone();
    let to_client = tokio::spawn(async move {
        while let Some(f) = read_frame(&mut inner_rd).await {
            if out.send(Out::Server(f)).is_err() {
                return;
            }
        }
        let _ = out.send(Out::Close);
    });

    // Client -> server.
    if inner_wr.write_all(PREFACE).await.is_err() {
        return;
    }
    while let Some(f) = read_frame(&mut client_rd).await {
        if ctl.frozen.load(Ordering::SeqCst) {
            // Silent: read no more (a PING goes unanswered), never close.
            std::future::pending::<()>().await;
        }
        let mut forward = vec![];
        {
            let mut s = streams.lock().unwrap();
            if f.kind == FRAME_PING && f.flags & FLAG_ACK == 0 {
                state.pings.fetch_add(1, Ordering::SeqCst);
            }
            match f.kind {
                FRAME_SETTINGS if f.flags & FLAG_ACK != 0 => match s.unacked.pop_front() {
                    Some((from_server, limit)) => {
                        if let Some(l) = limit {
                            s.acked = l;
                        }
                        if from_server {
                            forward.push(f);
                        }
                    }
                    None => forward.push(f),
                },
                FRAME_HEADERS if !s.open.contains(&f.stream) && !s.refused.contains(&f.stream) => {
                    if s.open.len() >= s.acked {
                        // Over the acknowledged limit: refused, as a
                        // server must (the header block still goes to the
                        // h2 server, cancelled at once, for HPACK's sake).
                        state.violations.fetch_add(1, Ordering::SeqCst);
                        s.refused.insert(f.stream);
                        let _ = out_tx.send(Out::Own(Frame::rst(f.stream, REFUSED_STREAM)));
                        let stream = f.stream;
                        forward.push(f);
                        forward.push(Frame::rst(stream, CANCEL));
                    } else {
                        s.open.insert(f.stream);
                        let now = s.open.len();
                        state.peak_streams.fetch_max(now, Ordering::SeqCst);
                        let total = state.open_total.fetch_add(1, Ordering::SeqCst) + 1;
                        state.peak_total.fetch_max(total, Ordering::SeqCst);
                        forward.push(f);
                    }
                }
                FRAME_DATA if s.refused.contains(&f.stream) => {
                    // Dropped: give the client its connection window back.
                    if !f.payload.is_empty() {
                        let _ =
                            out_tx.send(Out::Own(Frame::window_update(0, f.payload.len() as u32)));
                    }
                }
                FRAME_RST_STREAM => {
                    if s.open.remove(&f.stream) {
                        state.open_total.fetch_sub(1, Ordering::SeqCst);
                    }
                    if !s.refused.contains(&f.stream) {
                        forward.push(f);
                    }
                }
                _ => forward.push(f),
            }
        }
        for f in forward {
            if inner_wr.write_all(&f.encode()).await.is_err() {
                break;
            }
        }
    }
    let _ = inner_wr.shutdown().await;
    let _ = to_client.await;
    drop(out_tx);
    drop(ctl);
    let _ = writer.await;
}

async fn run_h2_server(io: tokio::io::DuplexStream, state: Arc<ApnsState>, ctl: ConnCtl) {
    let mut builder = h2::server::Builder::new();
    builder
        .max_concurrent_streams(1_000_000)
        .initial_window_size(1 << 20)
        .initial_connection_window_size(1 << 24);
    let Ok(mut conn) = builder.handshake::<_, Bytes>(io).await else {
        return;
    };
    let mut going_away = false;
    loop {
        tokio::select! {
            next = conn.accept() => match next {
                Some(Ok((req, respond))) => {
                    tokio::spawn(answer_apns(req, respond, state.clone(), ctl.clone()));
                }
                _ => break,
            },
            _ = ctl.goaway.notified(), if !going_away => {
                going_away = true;
                state.goaways.fetch_add(1, Ordering::SeqCst);
                state.goaway_connection.store(ctl.id, Ordering::SeqCst);
                if state.goaway_error.load(Ordering::SeqCst) {
                    conn.abrupt_shutdown(h2::Reason::INTERNAL_ERROR);
                } else {
                    conn.graceful_shutdown();
                }
            }
        }
    }
}

fn apns_error(status: u16, reason: &str) -> (u16, Value) {
    (status, json!({ "reason": reason }))
}

async fn answer_apns(
    req: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
    state: Arc<ApnsState>,
    ctl: ConnCtl,
) {
    let (parts, mut body) = req.into_parts();
    let mut bytes = Vec::new();
    while let Some(chunk) = body.data().await {
        let Ok(chunk) = chunk else { return };
        let _ = body.flow_control().release_capacity(chunk.len());
        bytes.extend_from_slice(&chunk);
    }
    let token = parts
        .uri
        .path()
        .strip_prefix("/3/device/")
        .unwrap_or("")
        .to_string();
    let h = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let checked = check_apns(&parts, &token, &bytes, &h, &state, ctl.id);
    let (status, body) = match checked {
        Err(e) => e,
        Ok(payload) => {
            let reset = match state.reset.lock().unwrap().get_mut(&token) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    true
                }
                _ => false,
            };
            if reset {
                state
                    .reset_seen
                    .lock()
                    .unwrap()
                    .push((token.clone(), h("apns-collapse-id")));
                respond.send_reset(h2::Reason::INTERNAL_ERROR);
                return;
            }
            if state.hang.lock().unwrap().contains(&token) {
                std::future::pending::<()>().await;
            }
            let delay = state.delay_ms.load(Ordering::SeqCst);
            if delay > 0 {
                tokio::time::sleep(Duration::from_millis(delay)).await;
            }
            let outage = state.outage.lock().unwrap().clone();
            let scripted = match outage {
                Some((until, replies)) if Instant::now() < until => {
                    let n = state.outage_answers.fetch_add(1, Ordering::SeqCst);
                    Some(replies[n % replies.len()])
                }
                _ => state
                    .script
                    .lock()
                    .unwrap()
                    .get_mut(&token)
                    .and_then(|s| s.pop_front()),
            };
            match scripted {
                Some((status, reason, retry)) if status != 200 => {
                    let mut resp = http::Response::builder()
                        .status(status)
                        .header("apns-id", apns_id())
                        .header("content-type", "application/json");
                    if let Some(s) = retry {
                        resp = resp.header("retry-after", s.to_string());
                    }
                    let body = json!({ "reason": reason }).to_string();
                    state.answered.lock().unwrap().push((token.clone(), status));
                    ctl.set_limit(1);
                    if let Ok(mut send) = respond.send_response(resp.body(()).unwrap(), false) {
                        let _ = send.send_data(body.into(), true);
                    }
                    return;
                }
                _ => {
                    let accepted = Accepted {
                        device_token: token.clone(),
                        collapse_id: h("apns-collapse-id"),
                        payload,
                        at: Instant::now(),
                        connection: ctl.id,
                    };
                    state
                        .taps
                        .lock()
                        .unwrap()
                        .retain(|t| t.send(accepted.clone()).is_ok());
                    let n = {
                        let mut acc = state.accepted.lock().unwrap();
                        acc.push(accepted);
                        acc.len()
                    };
                    if n == state.freeze_at.load(Ordering::SeqCst) {
                        // Accepted, but the answer never reaches the client.
                        ctl.frozen.store(true, Ordering::SeqCst);
                        state.frozen_connection.store(ctl.id, Ordering::SeqCst);
                        *state.frozen_at.lock().unwrap() = Some(Instant::now());
                    }
                    state.answered.lock().unwrap().push((token.clone(), 200));
                    ctl.set_limit(state.max_streams.load(Ordering::SeqCst));
                    let resp = http::Response::builder()
                        .status(200)
                        .header("apns-id", apns_id())
                        .body(())
                        .unwrap();
                    let _ = respond.send_response(resp, true);
                    if n == state.goaway_at.load(Ordering::SeqCst) {
                        ctl.goaway.notify_one();
                    }
                    return;
                }
            }
        }
    };
    state.answered.lock().unwrap().push((token.clone(), status));
    ctl.set_limit(1);
    let resp = http::Response::builder()
        .status(status)
        .header("apns-id", apns_id())
        .header("content-type", "application/json")
        .body(())
        .unwrap();
    if let Ok(mut send) = respond.send_response(resp, false) {
        let _ = send.send_data(body.to_string().into(), true);
    }
}

fn check_apns(
    parts: &http::request::Parts,
    token: &str,
    body: &[u8],
    h: &dyn Fn(&str) -> String,
    state: &ApnsState,
    connection: usize,
) -> Result<Value, (u16, Value)> {
    if parts.method != http::Method::POST {
        return Err(apns_error(405, "MethodNotAllowed"));
    }
    if !parts.uri.path().starts_with("/3/device/") {
        return Err(apns_error(404, "BadPath"));
    }
    if token.len() < 64 || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(apns_error(400, "BadDeviceToken"));
    }
    let auth = h("authorization");
    let Some(jwt) = auth.strip_prefix("bearer ") else {
        return Err(apns_error(403, "MissingProviderToken"));
    };
    if !state.verified.lock().unwrap().contains(jwt) {
        let key = DecodingKey::from_ec_pem(&fixture("apns-test-key.pub.pem")).unwrap();
        let mut v = Validation::new(Algorithm::ES256);
        v.required_spec_claims.clear();
        v.validate_exp = false;
        let Ok(t) = jsonwebtoken::decode::<Value>(jwt, &key, &v) else {
            state.bad_provider_tokens.fetch_add(1, Ordering::SeqCst);
            return Err(apns_error(403, "InvalidProviderToken"));
        };
        if t.header.kid.as_deref() != Some("KEY1234567") || t.claims["iss"] != "TEAM123456" {
            state.bad_provider_tokens.fetch_add(1, Ordering::SeqCst);
            return Err(apns_error(403, "InvalidProviderToken"));
        }
        if chrono::Utc::now().timestamp() - t.claims["iat"].as_i64().unwrap_or(0) > 3600 {
            return Err(apns_error(403, "ExpiredProviderToken"));
        }
        state.verified.lock().unwrap().insert(jwt.to_string());
    }
    let mut refreshed = state.refreshed.lock().unwrap();
    match refreshed.get_mut(&connection) {
        Some((taken, _)) if taken.contains(jwt) => {}
        Some((_, at)) if at.elapsed() < TOKEN_REFRESH_MIN => {
            state.token_updates_refused.fetch_add(1, Ordering::SeqCst);
            state
                .tokens_refused_too_soon
                .lock()
                .unwrap()
                .insert(jwt.to_string());
            return Err(apns_error(429, "TooManyProviderTokenUpdates"));
        }
        Some((taken, at)) => {
            taken.insert(jwt.to_string());
            *at = Instant::now();
        }
        None => {
            refreshed.insert(connection, ([jwt.to_string()].into(), Instant::now()));
        }
    }
    drop(refreshed);
    if h("apns-topic").is_empty() {
        return Err(apns_error(400, "MissingTopic"));
    }
    if !matches!(h("apns-push-type").as_str(), "alert" | "background") {
        return Err(apns_error(400, "InvalidPushType"));
    }
    if !matches!(h("apns-priority").as_str(), "5" | "10") {
        return Err(apns_error(400, "BadPriority"));
    }
    if h("apns-expiration").parse::<i64>().is_err() {
        return Err(apns_error(400, "BadExpirationDate"));
    }
    if body.len() > 4096 {
        return Err(apns_error(413, "PayloadTooLarge"));
    }
    let payload: Value = serde_json::from_slice(body).map_err(|_| apns_error(400, "BadPayload"))?;
    if !payload["aps"].is_object() {
        return Err(apns_error(400, "PayloadEmpty"));
    }
    Ok(payload)
}

/// The shortest time between two new provider tokens APNs takes.
pub const TOKEN_REFRESH_MIN: Duration = Duration::from_secs(20 * 60);

fn apns_id() -> String {
    static N: AtomicU64 = AtomicU64::new(1);
    let n = N.fetch_add(1, Ordering::Relaxed);
    format!("00000000-0000-4000-8000-{n:012X}")
}

// ---- FCM ----

/// One message FCM accepted: device token, the `data` map, when, and the
/// collapse key (the question id).
pub type FcmAccepted = (String, HashMap<String, String>, Instant, String);

/// A reply FCM's stand-in sends: status and Google's error body.
pub type FcmReply = (u16, Value);

#[derive(Default)]
pub struct FcmState {
    /// Access tokens issued.
    pub token_requests: AtomicUsize,
    /// Requests to the token endpoint, refused ones included.
    pub token_attempts: AtomicUsize,
    /// While set, the token endpoint answers this (a revoked key: `400
    /// {"error": "invalid_grant"}`).
    pub refuse_tokens: Mutex<Option<(u16, Value)>>,
    issued: Mutex<Vec<String>>,
    /// Each accepted message.
    pub accepted: Mutex<Vec<FcmAccepted>>,
    /// Replies by device token: status and Google's error body.
    pub script: Mutex<HashMap<String, VecDeque<(u16, Value)>>>,
    pub hang: Mutex<HashSet<String>>,
    /// Device tokens whose next requests (how many) are read and never
    /// answered.
    hang_next: Mutex<HashMap<String, usize>>,
    /// Every well-formed message request, in order: device token and
    /// `android.collapse_key`.
    pub seen: Mutex<Vec<(String, String)>>,
    delay_ms: AtomicU64,
    pub in_flight: AtomicUsize,
    pub peak_in_flight: AtomicUsize,
    /// Until then every message gets these replies in turn (the whole
    /// service throttled or down), whatever its device; scripts are left
    /// alone.
    storm: Mutex<Option<(Instant, Vec<FcmReply>)>>,
    storm_answers: AtomicUsize,
}

impl FcmState {
    pub fn accepted_count(&self) -> usize {
        self.accepted.lock().unwrap().len()
    }
    pub fn set_delay(&self, d: Duration) {
        self.delay_ms.store(d.as_millis() as u64, Ordering::SeqCst);
    }
    /// The next `n` requests for `token` are read and never answered.
    pub fn hang_next(&self, token: &str, n: usize) {
        self.hang_next.lock().unwrap().insert(token.to_string(), n);
    }
    /// Every message answered by `replies` in turn for `lasting`, from
    /// now (a reply's `retry_after_s` is sent as Retry-After).
    pub fn storm(&self, lasting: Duration, replies: Vec<FcmReply>) {
        *self.storm.lock().unwrap() = Some((Instant::now() + lasting, replies));
    }
}

pub struct FcmStandIn {
    pub url: String,
    pub state: Arc<FcmState>,
}

/// The error body FCM sends for a token that is no longer registered.
pub fn fcm_unregistered() -> (u16, Value) {
    (
        404,
        json!({"error": {"code": 404, "message": "Requested entity was not found.",
            "status": "NOT_FOUND", "details": [{
                "@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError",
                "errorCode": "UNREGISTERED"}]}}),
    )
}

pub async fn fcm(delay: Duration) -> FcmStandIn {
    let state = Arc::new(FcmState::default());
    state.set_delay(delay);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let st = state.clone();
    let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
        let st = st.clone();
        async move {
            let (parts, body) = req.into_parts();
            let body = axum::body::to_bytes(body, 1 << 20)
                .await
                .unwrap_or_default();
            let (status, mut value) = answer_fcm(&parts, &body, &st).await;
            let mut resp = http::Response::builder()
                .status(status)
                .header("content-type", "application/json; charset=UTF-8");
            // A scripted reply's `retry_after_s` is sent as Retry-After.
            if let Some(s) = value
                .as_object_mut()
                .and_then(|o| o.remove("retry_after_s"))
            {
                resp = resp.header("retry-after", s.to_string());
            }
            resp.body(axum::body::Body::from(value.to_string()))
                .unwrap()
        }
    });
    // hyper's HTTP/2 (prior knowledge) and HTTP/1.1, its limit of 200
    // streams per connection (FCM advertises 100).
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    FcmStandIn { url, state }
}

async fn answer_fcm(parts: &http::request::Parts, body: &[u8], st: &FcmState) -> (u16, Value) {
    let path = parts.uri.path();
    if path == "/token" {
        st.token_attempts.fetch_add(1, Ordering::SeqCst);
        if let Some(refusal) = st.refuse_tokens.lock().unwrap().clone() {
            return refusal;
        }
        let form: HashMap<String, String> = url_form(body);
        if form.get("grant_type").map(String::as_str)
            != Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
        {
            return (400, json!({"error": "unsupported_grant_type"}));
        }
        let key = DecodingKey::from_rsa_pem(&fixture("fcm-test-key.pub.pem")).unwrap();
        let mut v = Validation::new(Algorithm::RS256);
        v.validate_aud = false;
        let assertion = form.get("assertion").cloned().unwrap_or_default();
        let Ok(t) = jsonwebtoken::decode::<Value>(&assertion, &key, &v) else {
            return (400, json!({"error": "invalid_grant"}));
        };
        if t.claims["scope"] != "https://www.googleapis.com/auth/firebase.messaging" {
            return (400, json!({"error": "invalid_scope"}));
        }
        let n = st.token_requests.fetch_add(1, Ordering::SeqCst) + 1;
        let token = format!("ya29.standin-{n}");
        st.issued.lock().unwrap().push(token.clone());
        return (
            200,
            json!({"access_token": token, "expires_in": 3599, "token_type": "Bearer"}),
        );
    }
    if !(path.starts_with("/v1/projects/") && path.ends_with("/messages:send")) {
        return (404, json!({"error": {"code": 404, "status": "NOT_FOUND"}}));
    }
    if parts.version != http::Version::HTTP_2 {
        // FCM takes HTTP/1.1 too; the stand-in insists on HTTP/2, so the
        // tests prove the transport multiplexes.
        return (
            505,
            json!({"error": {"code": 505, "status": "HTTP/2 expected"}}),
        );
    }
    let bearer = parts
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("")
        .to_string();
    if !st.issued.lock().unwrap().contains(&bearer) {
        return (
            401,
            json!({"error": {"code": 401, "message": "Request had invalid authentication credentials.",
                "status": "UNAUTHENTICATED"}}),
        );
    }
    let msg: Value = serde_json::from_slice(body).unwrap_or_default();
    let token = msg["message"]["token"].as_str().unwrap_or("").to_string();
    let data: Option<HashMap<String, String>> =
        serde_json::from_value(msg["message"]["data"].clone()).ok();
    let (Some(data), false) = (data, token.is_empty()) else {
        return (
            400,
            json!({"error": {"code": 400, "message": "Invalid JSON payload received.",
                "status": "INVALID_ARGUMENT"}}),
        );
    };
    let now = st.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    st.peak_in_flight.fetch_max(now, Ordering::SeqCst);
    struct Dec<'a>(&'a AtomicUsize);
    impl Drop for Dec<'_> {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }
    let _dec = Dec(&st.in_flight);
    let collapse = msg["message"]["android"]["collapse_key"]
        .as_str()
        .unwrap_or("")
        .to_string();
    st.seen
        .lock()
        .unwrap()
        .push((token.clone(), collapse.clone()));
    let hang_once = match st.hang_next.lock().unwrap().get_mut(&token) {
        Some(n) if *n > 0 => {
            *n -= 1;
            true
        }
        _ => false,
    };
    if hang_once || st.hang.lock().unwrap().contains(&token) {
        std::future::pending::<()>().await;
    }
    let delay = st.delay_ms.load(Ordering::SeqCst);
    if delay > 0 {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    let storm = st.storm.lock().unwrap().clone();
    if let Some((_, replies)) = storm.filter(|(until, _)| Instant::now() < *until) {
        let n = st.storm_answers.fetch_add(1, Ordering::SeqCst);
        return replies[n % replies.len()].clone();
    }
    if let Some(reply) = st
        .script
        .lock()
        .unwrap()
        .get_mut(&token)
        .and_then(|s| s.pop_front())
    {
        return reply;
    }
    st.accepted
        .lock()
        .unwrap()
        .push((token, data, Instant::now(), collapse));
    let n = st.accepted_count();
    (
        200,
        json!({"name": format!("projects/qp-test/messages/{n}")}),
    )
}

fn url_form(body: &[u8]) -> HashMap<String, String> {
    let text = String::from_utf8_lossy(body);
    text.split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect()
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let h = std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("");
                out.push(u8::from_str_radix(h, 16).unwrap_or(b'?'));
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
