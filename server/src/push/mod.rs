//! The push delivery queue and the transports.
//!
//! Each ask queues a `question` job per device of every eligible user, and
//! each resolution a `resolved` job per device that got the question (both in
//! the same transaction as the change). A worker drains due jobs through a
//! [`PushTransport`]: [`router::PlatformRouter`] sends `ios` devices through
//! [`apns`], `android` through [`fcm`], and `dev` devices (the terminal
//! device, `qp device`) through [`dev`]. Without a transport for a platform,
//! its jobs stay queued in the database.
//!
//! The worker is concurrent and bounded: it claims (with a lease) only as
//! many due jobs as it has free slots ([`WorkerLimits::max_in_flight`]),
//! loads their devices and questions in a few queries, sends each in its
//! own task (a slow or hanging gateway answer holds one slot, never the
//! others; APNs and FCM multiplex them over few HTTP/2 connections, see
//! [`h2pool`]), and records outcomes in batches, one transaction each.
//! Order per device comes from the claim: a resolution is not claimable
//! while that device's question push is still queued or in flight
//! ([`deliveries::claim_pushes`]).

pub mod apns;
pub mod budget;
pub mod credentials;
pub mod dev;
pub mod fcm;
pub mod gateway_errors;
pub mod h2pool;
pub mod key_file;
pub mod metrics;
pub mod outage;
pub mod provider_token;
pub mod router;
pub mod webpush;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use qp_core::e2e::DevicePublicKey;
use qp_core::payload::{
    encode_apns_question, encode_apns_question_sealed, encode_apns_resolved,
    encode_apns_resolved_sealed, encode_fcm_question, encode_fcm_question_sealed,
    encode_fcm_resolved, encode_fcm_resolved_sealed, Recipient, MAX_PAYLOAD_BYTES,
};
use qp_core::present::copy::Copy;
use qp_core::protocol::Question;

use crate::app::App;
use crate::store::deliveries::{self, PushJobState, PushKind};
use crate::store::identity::Device;
use crate::store::{now_ms, questions};
use qp_core::retry::RetryPolicy;

/// One push to one device.
#[derive(Debug, Clone)]
pub struct PushMessage {
    pub device: Device,
    pub kind: PushKind,
    pub question: Question,
    /// Seal it to the device's public key, if it registered one (the
    /// server's `push_encryption` setting).
    pub encrypt: bool,
    /// Attempts this push spent before this send (0 on its first): paces
    /// a gateway's backoff when it gives no `Retry-After`
    /// ([`fcm::retry_wait`]).
    pub attempts: u32,
}

impl PushMessage {
    fn copy(&self) -> Copy {
        Copy::for_languages(&[&self.device.locale])
    }

    /// The key to seal to, when this push is end-to-end encrypted. A key
    /// that no longer parses (checked at registration, so only a damaged
    /// database) fails the push: a device that asked for encryption never
    /// gets its question in clear.
    fn sealed_to(&self) -> Result<Option<DevicePublicKey>, String> {
        match self.device.public_key.as_deref().filter(|_| self.encrypt) {
            None => Ok(None),
            Some(key) => DevicePublicKey::parse(key, "public_key")
                .map(Some)
                .map_err(|e| format!("unusable device key: {e}")),
        }
    }

    /// What APNs carries for this push (the dev transport too, for an
    /// iOS-shaped terminal device): sealed or plain, within 4 KB.
    pub fn apns_payload(&self) -> Result<String, String> {
        let (q, copy, me) = (
            &self.question,
            self.copy(),
            Some(self.device.user_id.as_str()),
        );
        let encoded = match (self.kind, self.sealed_to()?) {
            (PushKind::Question, None) => encode_apns_question(q, &copy),
            (PushKind::Resolved, None) => Ok(encode_apns_resolved(q, &copy, me)),
            (kind, Some(key)) => {
                let to = Recipient {
                    device_id: &self.device.id,
                    key: &key,
                };
                match kind {
                    PushKind::Question => encode_apns_question_sealed(q, &copy, &to),
                    PushKind::Resolved => encode_apns_resolved_sealed(q, &copy, me, &to),
                }
            }
        };
        let e = encoded.map_err(|e| format!("cannot encode: {e}"))?;
        within_budget(e.report.bytes)?;
        Ok(e.json)
    }

    /// What FCM carries for this push (the data map): sealed or plain.
    pub fn fcm_data(&self) -> Result<BTreeMap<String, String>, String> {
        let (q, copy, me) = (
            &self.question,
            self.copy(),
            Some(self.device.user_id.as_str()),
        );
        let encoded = match (self.kind, self.sealed_to()?) {
            (PushKind::Question, None) => encode_fcm_question(q, &copy),
            (PushKind::Resolved, None) => Ok(encode_fcm_resolved(q)),
            (kind, Some(key)) => {
                let to = Recipient {
                    device_id: &self.device.id,
                    key: &key,
                };
                match kind {
                    PushKind::Question => encode_fcm_question_sealed(q, &copy, &to),
                    PushKind::Resolved => encode_fcm_resolved_sealed(q, &copy, me, &to),
                }
            }
        };
        let e = encoded.map_err(|e| format!("cannot encode: {e}"))?;
        within_budget(e.report.bytes)?;
        Ok(e.data)
    }
}

/// The encoders guarantee the gateways' limit; a payload over it would be
/// refused by the gateway anyway, so it is failed here with its size.
fn within_budget(bytes: usize) -> Result<(), String> {
    if bytes > MAX_PAYLOAD_BYTES {
        return Err(format!("payload of {bytes} bytes"));
    }
    Ok(())
}

/// What a transport reports for one push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushOutcome {
    Sent,
    /// Try again later (429, 5xx, network): after `after` if the gateway said.
    Retry {
        reason: String,
        after: Option<Duration>,
    },
    /// The gateway failed, not this push (5xx, throttling, unreachable,
    /// no answer in time): the worker's [`outage::Outages`] makes it a
    /// [`PushOutcome::Retry`] when isolated, a [`PushOutcome::Deferred`]
    /// (no attempt spent) during an outage. Never recorded as such.
    Unavailable {
        reason: String,
        after: Option<Duration>,
    },
    /// Not tried, or tried while its gateway could not take it: held back
    /// (the gateway's credential is backing off,
    /// [`credentials::CredentialGate`], or the gateway is in an outage,
    /// [`outage::Outages`]): queued again after `after` without spending an
    /// attempt, so an outage longer than the push backoff fails no push
    /// for good; never past the push's deadline (its question's expiry).
    Deferred {
        reason: String,
        after: Duration,
    },
    /// The request was written to the gateway and no usable answer came
    /// (no response in time, the stream reset, the connection lost under
    /// it after the pool's own re-sends, the claim's cut-off reached
    /// mid-request): the gateway may have it. It spends an attempt, is
    /// counted as maybe delivered, and is sent again (with the same
    /// collapse id / key) at most [`NO_ANSWER_RESENDS`] times in all.
    /// `cut_off`: ended by the claim's cut-off, which says nothing about
    /// the gateway (this instance may have stalled), so it never feeds
    /// the outage circuit.
    NoAnswer {
        reason: String,
        cut_off: bool,
    },
    /// Not sent: its question was resolved or expired by the time its turn
    /// came. Recorded as failed with the reason, spending no attempt, and
    /// counted as `outcome="skipped"`.
    Skipped(String),
    /// The gateway says the token is dead (APNs 410, FCM UNREGISTERED): the
    /// device is removed.
    DeviceGone,
    /// A permanent error for this push; recorded, not retried.
    Failed(String),
}

pub type PushFuture<'a> = Pin<Box<dyn Future<Output = PushOutcome> + Send + 'a>>;

/// A push gateway (APNs, FCM, or a local development transport).
pub trait PushTransport: Send + Sync + 'static {
    fn send<'a>(&'a self, message: &'a PushMessage) -> PushFuture<'a>;

    /// The device platforms this transport delivers to (`None`: any). On
    /// PostgreSQL the worker claims only these platforms' jobs, leaving
    /// the rest to an instance that has their gateway.
    fn platforms(&self) -> Option<Vec<&'static str>> {
        None
    }
}

pub use crate::config::push::{platform_has_route, routes};

/// Says at start which push routes there are, loudly when no phone can be
/// reached: questions would otherwise sit pending without a word.
pub fn log_routes(settings: &crate::config::Settings) {
    let routes = routes(settings);
    if routes.is_empty() {
        tracing::warn!(
            "no push route configured (APNs, FCM or Web Push): no phone or browser will be notified of a question; \
             set apns_key (with apns_key_id, apns_team_id) or fcm_service_account, or vapid_key for Web Push"
        );
    } else if !routes.iter().any(|r| *r == "apns" || *r == "fcm") {
        tracing::warn!(
            routes = ?routes,
            "no APNs or FCM configured: iPhone and Android apps get no push (their questions stay queued); \
             only browsers (Web Push) are notified"
        );
    } else {
        tracing::info!(routes = ?routes, "push routes");
    }
}

/// Says at start which device platforms this instance delivers pushes
/// for, and which it leaves to another instance sharing the database.
pub fn log_platforms(delivered: &[&'static str]) {
    let shown: Vec<&str> = delivered.iter().copied().filter(|p| *p != "dev").collect();
    let missing: Vec<String> = [("ios", "APNs"), ("android", "FCM"), ("web", "Web Push")]
        .into_iter()
        .filter(|(p, _)| !delivered.contains(p))
        .map(|(p, gateway)| format!("not {p} (no {gateway} configured)"))
        .collect();
    let mut line = format!("delivers pushes for: {}", shown.join(", "));
    if missing.is_empty() {
        tracing::info!("{line}");
    } else {
        line.push_str(&format!("; {}: another instance must", missing.join(", ")));
        tracing::warn!("{line}");
    }
}

/// What a request the HTTP/2 pool could not get answered becomes: not
/// written, a fault of the gateway (or, past the claim's cut-off, given
/// back unsent); written, [`PushOutcome::NoAnswer`].
pub(crate) fn unanswered(gateway: &str, e: h2pool::SendError) -> PushOutcome {
    use h2pool::SendError;
    match e {
        SendError::CutOff => not_sent_past_cut_off(),
        SendError::NoAnswer { why, cut_off } => PushOutcome::NoAnswer {
            reason: format!("{gateway} sent no answer: {why}"),
            cut_off,
        },
        e @ (SendError::Connect(_) | SendError::Timeout | SendError::Stream(_)) => {
            PushOutcome::Unavailable {
                reason: format!("{gateway} unreachable: {e}"),
                after: None,
            }
        }
    }
}

/// The longest a push waits between two tries, whoever set the wait: a
/// gateway's `Retry-After` (a gateway saying a day would otherwise park a
/// push past its question's expiry, which, besides, no retry is ever held
/// past), or the backoff without one (FCM's [`fcm::retry_wait`], the push
/// backoff): a guess never waits longer than the gateway's own word is
/// honoured for. `next_state` holds every retry to it.
pub const RETRY_AFTER_MAX: Duration = Duration::from_secs(10 * 60);

/// A `Retry-After` header in seconds, if any, at most [`RETRY_AFTER_MAX`].
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse::<u64>()
        .ok()
        .map(|s| Duration::from_secs(s).min(RETRY_AFTER_MAX))
}

/// Attempts per job before it is marked failed.
pub const PUSH_MAX_ATTEMPTS: u32 = 8;

/// A push whose request reached the gateway without a usable answer is
/// sent again at most this many times in all (the pool's own re-sends
/// after a lost connection included): a gateway that takes requests and
/// never answers must not get the same push dozens of times.
pub const NO_ANSWER_RESENDS: u32 = 3;

/// What the worker's claim allows one send, set around it as a task-local
/// ([`SendScope::current`]): the HTTP/2 pool writes no request past the
/// cut-off, tells the worker whether a request is out unanswered, and
/// counts the sends that went out without an answer against
/// [`NO_ANSWER_RESENDS`].
pub struct SendScope {
    /// The claim's cut-off: nothing is written after it.
    pub cut_off: tokio::time::Instant,
    /// Sends of this push that went out without an answer before this
    /// claim (recorded on the job).
    unanswered_before: u32,
    /// Those of this claim.
    unanswered: std::sync::atomic::AtomicU32,
    /// Whether a request is out: [`UNTRACKED`] until the HTTP/2 pool
    /// says (Web Push's client never does: it may have written),
    /// [`NOT_WRITTEN`] or [`WRITTEN`] (written and not yet ended).
    written: std::sync::atomic::AtomicU8,
}

const UNTRACKED: u8 = 0;
const NOT_WRITTEN: u8 = 1;
const WRITTEN: u8 = 2;

tokio::task_local! {
    static SEND_SCOPE: Arc<SendScope>;
}

impl SendScope {
    pub fn new(cut_off: tokio::time::Instant, unanswered_before: u32) -> Arc<SendScope> {
        Arc::new(SendScope {
            cut_off,
            unanswered_before,
            unanswered: Default::default(),
            written: std::sync::atomic::AtomicU8::new(UNTRACKED),
        })
    }

    /// Runs `send` within this scope.
    pub async fn run<T>(self: &Arc<Self>, send: impl Future<Output = T>) -> T {
        SEND_SCOPE.scope(self.clone(), send).await
    }

    /// The scope of the send running in this task, if the worker set one.
    pub fn current() -> Option<Arc<SendScope>> {
        SEND_SCOPE.try_with(|s| s.clone()).ok()
    }

    /// Whether the cut-off has passed: then nothing may be written.
    pub fn cut_off_passed(&self) -> bool {
        tokio::time::Instant::now() >= self.cut_off
    }

    /// A request was written (true), or none is out now (false).
    pub fn set_written(&self, written: bool) {
        let state = if written { WRITTEN } else { NOT_WRITTEN };
        self.written
            .store(state, std::sync::atomic::Ordering::Release);
    }

    /// Whether the gateway may have a request of this send unanswered.
    pub fn may_have_written(&self) -> bool {
        self.written.load(std::sync::atomic::Ordering::Acquire) != NOT_WRITTEN
    }

    /// One send went out without an answer: whether this push may still
    /// be sent again.
    pub fn unanswered_once(&self) -> bool {
        let n = self
            .unanswered
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel)
            + 1;
        self.unanswered_before + n <= NO_ANSWER_RESENDS
    }

    /// Sends of this push without an answer, this claim's included.
    pub fn unanswered(&self) -> u32 {
        self.unanswered_before + self.unanswered.load(std::sync::atomic::Ordering::Acquire)
    }
}

/// How much the worker takes on at once.
#[derive(Debug, Clone)]
pub struct WorkerLimits {
    /// Pushes in flight at most (claimed and not yet answered): memory
    /// stays flat however large the room; a fan-out beyond it is claimed
    /// as slots free.
    pub max_in_flight: usize,
    /// How long claimed jobs stay this worker's: past the worst case of
    /// every transport plus the time to record it ([`budget`]). If the
    /// instance dies, its claimed jobs (at most `max_in_flight`) are due
    /// again when the lease ends.
    pub lease_ms: i64,
}

impl Default for WorkerLimits {
    fn default() -> Self {
        WorkerLimits {
            max_in_flight: 2048,
            lease_ms: budget::LEASE.as_millis() as i64,
        }
    }
}

/// Outcomes recorded per transaction at most: as many as can be in
/// flight ([`WorkerLimits::max_in_flight`]), so every outcome waiting is in
/// the next write and one answered push waits for two writes at most (the
/// one under way, then its own: [`budget::outcome_writes`]).
const WRITE_BATCH: usize = 2048;

/// One push answered, waiting to be recorded.
struct Finished {
    job: deliveries::DuePush,
    gateway: &'static str,
    outcome: PushOutcome,
    /// See [`deadline_ms`].
    deadline_ms: i64,
    /// Sends of this push that went out without an answer, this claim's
    /// included ([`SendScope::unanswered`]).
    unanswered: u32,
    /// The push's in-flight slot, given back only once its outcome is
    /// written: so answered-but-unrecorded outcomes count against the
    /// bound too (a slow database cannot pile them up, nor let their
    /// leases run out unbounded), and what a crash can repeat stays within
    /// `max_in_flight`.
    slot: Option<tokio::sync::OwnedSemaphorePermit>,
}

/// What one worker keeps between its sends: its gateways' circuits, its
/// failure log's pace, and where re-sends are counted.
struct WorkerState {
    outages: outage::Outages,
    failures: metrics::FailureLog,
    resends: metrics::Resends,
}

/// Drains due push jobs forever through `transport`.
pub async fn run_worker(app: Arc<App>, transport: Arc<dyn PushTransport>) {
    let limits = WorkerLimits {
        lease_ms: app.settings.push_lease.as_millis() as i64,
        ..WorkerLimits::default()
    };
    run_worker_with(app, transport, limits).await
}

/// [`run_worker`] with explicit limits (tests, the benchmark).
pub async fn run_worker_with(
    app: Arc<App>,
    transport: Arc<dyn PushTransport>,
    limits: WorkerLimits,
) {
    let encrypt = app.settings.push_encryption;
    let lease = Duration::from_millis(limits.lease_ms.max(0) as u64);
    let cap = budget::send_cap(lease);
    if lease < budget::LEASE {
        // Chosen by the operator (a faster take-over after a crash): said,
        // since it trades away slow sends.
        tracing::warn!(
            lease_ms = lease.as_millis() as u64,
            cut_off_ms = cap.as_millis() as u64,
            budget_ms = budget::LEASE.as_millis() as u64,
            "push_lease_ms is below the push budget: a send still running at the cut-off is \
             given back and sent again later (counted as maybe delivered)"
        );
    }
    // Idle, a worker looks for due jobs this often (and at once when this
    // instance queues some); on PostgreSQL other instances queue too.
    let idle_ms = match app.settings.db {
        crate::store::Database::Postgres(_) => 1000,
        _ => 5000,
    };
    let routes: Option<Arc<[&'static str]>> = match app.settings.db {
        // One instance on SQLite: a job no gateway here takes is tried
        // (and retried) here, there is no other instance to leave it to.
        crate::store::Database::Sqlite(_) => None,
        _ => transport.platforms().map(Into::into),
    };
    let max = limits.max_in_flight.max(1);
    let slots = Arc::new(tokio::sync::Semaphore::new(max));
    let (done_tx, done_rx) = tokio::sync::mpsc::unbounded_channel::<Finished>();
    let recorded = Arc::new(tokio::sync::Notify::new());
    let state = Arc::new(WorkerState {
        outages: outage::Outages::new(app.metrics.push.outages.clone())
            .reporting_to(app.health.push_outages.clone()),
        failures: metrics::FailureLog::default(),
        resends: metrics::Resends::new(app.metrics.push.resends.clone()),
    });
    tokio::spawn(record_outcomes(
        app.clone(),
        state.clone(),
        done_rx,
        recorded.clone(),
    ));
    loop {
        state.outages.end_quiet();
        // At least one free slot, then as many as are free.
        let Ok(first) = slots.clone().acquire_owned().await else {
            return;
        };
        let free = slots.available_permits() + 1;
        let lease_ms = limits.lease_ms;
        // The lease runs from the claim, so the cut-off does too: however
        // long loading the batch or starting a send takes, the job is
        // given back (or recorded) before another instance may claim it.
        let cut_off = tokio::time::Instant::now() + cap;
        let claim_routes = routes.clone();
        let batch = app
            .db
            .run(
                move |conn| -> crate::store::DbResult<
                    Vec<(deliveries::DuePush, Option<PushMessage>)>,
                > {
                    let now = now_ms();
                    let due = deliveries::claim_pushes(
                        conn,
                        now,
                        now + lease_ms,
                        free,
                        claim_routes.as_deref(),
                    )?;
                    load_messages(conn, due, encrypt)
                },
            )
            .await;
        let batch = match batch {
            Ok(b) => b,
            Err(e) => {
                drop(first);
                tracing::error!(error = %e, "reading push jobs");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if batch.is_empty() {
            drop(first);
            let due_routes = routes.clone();
            let next = app
                .db
                .run(move |conn| {
                    deliveries::next_push_due_ms(conn, now_ms(), due_routes.as_deref())
                })
                .await
                .ok()
                .flatten();
            let wait_ms = next
                .map(|n| (n - now_ms()).clamp(5, idle_ms))
                .unwrap_or(idle_ms);
            tokio::select! {
                _ = app.push_wake.notified() => {}
                _ = recorded.notified() => {}
                _ = tokio::time::sleep(Duration::from_millis(wait_ms as u64)) => {}
            }
            continue;
        }
        let mut first = Some(first);
        for (job, msg) in batch {
            let permit = match first.take() {
                Some(p) => p,
                // Free: this loop is the only one taking slots.
                None => match slots.clone().try_acquire_owned() {
                    Ok(p) => p,
                    Err(_) => slots.clone().acquire_owned().await.expect("never closed"),
                },
            };
            let transport = transport.clone();
            let done = done_tx.clone();
            let metrics = app.clone();
            let state = state.clone();
            tokio::spawn(async move {
                let gateway = msg
                    .as_ref()
                    .map_or("none", |m| metrics::gateway_of(&m.device.platform));
                let _flight = metrics.metrics.push.in_flight(gateway);
                let outages = &state.outages;
                let deadline_ms = msg.as_ref().map_or(i64::MAX, |m| deadline_ms(&job, m));
                if job.after_lapsed_claim && msg.is_some() {
                    // The claim before ended without an outcome: it may
                    // have sent this push (the instance was killed or
                    // stalled mid-send), so sending it now may double it.
                    let resends = &state.resends;
                    resends.count(gateway, metrics::ResendCause::LeaseRanOut);
                }
                // The gateway is in an outage: held without sending.
                let circuit = msg
                    .as_ref()
                    .map_or_else(|| gateway.to_string(), |m| outage::circuit_of(gateway, m));
                let scope = SendScope::new(cut_off, job.unanswered);
                let outcome = match &msg {
                    // Resolved or expired since it was queued (a take-over
                    // of an expired lease, a retry): a question push would
                    // only show a question no one can answer any more.
                    Some(m) if !worth_sending(&job, m) => {
                        let why = format!(
                            "question no longer pending ({}): not sent",
                            match m.question.state {
                                qp_core::protocol::QuestionState::Pending => "expired",
                                s => s.as_str(),
                            }
                        );
                        tracing::info!(job = job.id, question = %job.question_id, device = %job.device_id, reason = %why, "push skipped");
                        PushOutcome::Skipped(why)
                    }
                    // Past the claim's cut-off (this instance was slow to
                    // get here): nothing goes out; given back at once.
                    Some(_) if scope.cut_off_passed() => not_sent_past_cut_off(),
                    Some(m) => match outages.held(&circuit) {
                        Some(held) => held,
                        None => match within_lease(&scope, cap, transport.send(m)).await {
                            Ok(outcome) => {
                                let resends = &state.resends;
                                unanswered_by_its_transport(gateway, &outcome, &scope, resends);
                                outcome
                            }
                            // Cut off mid-send: the gateway may have it.
                            // APNs and FCM's pool counts it itself, only if
                            // the request was written (`h2pool::Written`).
                            Err(cut) => {
                                let no_answer = matches!(cut, PushOutcome::NoAnswer { .. });
                                if no_answer && !matches!(gateway, "apns" | "fcm") {
                                    let resends = &state.resends;
                                    resends.count(gateway, metrics::ResendCause::Timeout);
                                }
                                cut
                            }
                        },
                    },
                    None => PushOutcome::Failed("device or question no longer exists".into()),
                };
                state.failures.answered(gateway, &outcome);
                let outcome = outages.judge(gateway, &circuit, outcome);
                // Beside the outcome, not before it: the lease's budget
                // for recording starts when the send ends.
                for circuit in outages.take_ended() {
                    tokio::spawn(release_held(metrics.clone(), circuit));
                }
                let _ = done.send(Finished {
                    job,
                    gateway,
                    outcome,
                    deadline_ms,
                    unanswered: scope.unanswered(),
                    slot: Some(permit),
                });
            });
        }
    }
}

/// A send cut off at the claim's cut-off (the claim's time plus `cap`:
/// what the lease leaves once the outcome is recorded) comes back before
/// the lease ends, never claimed by another instance while still in
/// flight (`Err`: cut off): as [`PushOutcome::NoAnswer`] if a request was
/// written (or, for a transport that cannot say, may have been), else as
/// not sent.
async fn within_lease(
    scope: &Arc<SendScope>,
    cap: Duration,
    send: PushFuture<'_>,
) -> Result<PushOutcome, PushOutcome> {
    match tokio::time::timeout_at(scope.cut_off, scope.run(send)).await {
        Ok(outcome) => Ok(outcome),
        Err(_) if scope.may_have_written() => {
            scope.unanswered_once();
            Err(PushOutcome::NoAnswer {
                reason: format!(
                    "no answer within {} ms of the claim (the lease's budget)",
                    cap.as_millis()
                ),
                cut_off: true,
            })
        }
        Err(_) => Err(not_sent_past_cut_off()),
    }
}

/// A send a transport without the HTTP/2 pool (Web Push's client) says
/// went out unanswered (a timeout once connected): counted as maybe
/// delivered and against the push's re-sends, as the pool counts its own
/// (APNs and FCM's, which this leaves alone).
fn unanswered_by_its_transport(
    gateway: &'static str,
    outcome: &PushOutcome,
    scope: &SendScope,
    resends: &metrics::Resends,
) {
    if matches!(outcome, PushOutcome::NoAnswer { .. }) && !matches!(gateway, "apns" | "fcm") {
        scope.unanswered_once();
        resends.count(gateway, metrics::ResendCause::Timeout);
    }
}

/// A push not written before the claim's cut-off: given back at once,
/// spending no attempt (nothing reached the gateway).
fn not_sent_past_cut_off() -> PushOutcome {
    PushOutcome::Deferred {
        reason: CUT_OFF_NOT_SENT.into(),
        after: Duration::ZERO,
    }
}

/// The reason of a push given back unsent at the claim's cut-off.
pub const CUT_OFF_NOT_SENT: &str =
    "not sent: the claim's cut-off passed before the request was written";

/// The gateway answered again after an outage: the pushes held for its
/// circuit go now, not at the end of their step.
async fn release_held(app: Arc<App>, circuit: String) {
    let prefix = outage::held_prefix(&circuit);
    let released = app
        .db
        .run(move |conn| deliveries::release_held_pushes(conn, &prefix, now_ms()))
        .await;
    match released {
        Ok(n) => {
            tracing::info!(
                circuit,
                pushes = n,
                "push gateway answering again: held pushes released"
            );
            app.push_wake.notify_one();
        }
        // They go at the end of their step.
        Err(e) => tracing::warn!(circuit, error = %e, "releasing held pushes"),
    }
}

/// A question push is worth sending only while its question is pending,
/// as loaded with the claim (a resolution push always is).
fn worth_sending(job: &deliveries::DuePush, m: &PushMessage) -> bool {
    job.kind == PushKind::Resolved
        || (m.question.state == qp_core::protocol::QuestionState::Pending
            && chrono::Utc::now() < m.question.expires_at)
}

/// The last moment a push is worth sending: its question's expiry (a
/// question push), or a day after the resolution was queued (what APNs is
/// asked to keep it for). A push held by an outage or a credential backoff
/// fails once it would be held past it.
fn deadline_ms(job: &deliveries::DuePush, m: &PushMessage) -> i64 {
    match job.kind {
        PushKind::Question => m.question.expires_at.timestamp_millis(),
        PushKind::Resolved => job.created_ms + apns::RESOLVED_KEPT_SECS * 1000,
    }
}

/// The devices and questions of a claimed batch: one query per 500
/// devices and one per distinct question (a fan-out has one).
fn load_messages(
    conn: &crate::store::Conn,
    due: Vec<deliveries::DuePush>,
    encrypt: bool,
) -> crate::store::DbResult<Vec<(deliveries::DuePush, Option<PushMessage>)>> {
    let mut device_ids: Vec<&str> = due.iter().map(|j| j.device_id.as_str()).collect();
    device_ids.sort_unstable();
    device_ids.dedup();
    let devices = deliveries::devices_by_ids(conn, &device_ids)?;
    let mut questions: std::collections::HashMap<String, Option<Question>> = Default::default();
    for job in &due {
        if !questions.contains_key(&job.question_id) {
            let q = questions::get(conn, &job.question_id)?.map(|s| s.question);
            questions.insert(job.question_id.clone(), q);
        }
    }
    Ok(due
        .into_iter()
        .map(|job| {
            let device = devices.get(&job.device_id).cloned();
            let question = questions.get(&job.question_id).cloned().flatten();
            let msg = match (device, question) {
                (Some(device), Some(question)) => Some(PushMessage {
                    device,
                    kind: job.kind,
                    question,
                    encrypt,
                    attempts: job.attempts,
                }),
                _ => None,
            };
            (job, msg)
        })
        .collect())
}

/// A failed outcome batch is written again this many times (0.5 s and
/// 1 s apart: within `budget::OUTCOME_WRITE`) before its outcomes are
/// counted as unrecorded.
const WRITE_RETRIES: u32 = 2;

/// How long one outcome write waits for another writer's lock: SQLite's
/// busy timeout for it (the server's is 5 s), PostgreSQL's `lock_timeout`
/// in its transaction (unbounded by default). With the retries and their
/// pauses, one write's budget holds it ([`budget::OUTCOME_WRITE`]).
pub use crate::config::push::WRITE_TRY_WAIT;

/// The longest one statement of an outcome write may run on PostgreSQL
/// (`statement_timeout`): a write that is slow, not blocked, fails and is
/// tried again instead of holding the batch past the lease.
pub const WRITE_STATEMENT_LIMIT: Duration = Duration::from_secs(2);

/// Writes one batch of outcomes in one transaction whose lock waits are
/// bounded by [`WRITE_TRY_WAIT`] (and, on PostgreSQL, each statement by
/// [`WRITE_STATEMENT_LIMIT`]).
fn write_batch(
    conn: &crate::store::Conn,
    batch: &[Answer],
) -> crate::store::DbResult<Vec<Written>> {
    use crate::store::Backend;
    let write = || -> crate::store::DbResult<Vec<Written>> {
        let tx = conn.transaction()?;
        if tx.backend() == Backend::Postgres {
            tx.batch(&format!(
                "SET LOCAL lock_timeout = '{}ms'; SET LOCAL statement_timeout = '{}ms'",
                WRITE_TRY_WAIT.as_millis(),
                WRITE_STATEMENT_LIMIT.as_millis()
            ))?;
        }
        let mut out = Vec::with_capacity(batch.len());
        for a in batch {
            out.push(record_one(
                &*tx,
                &a.job,
                &a.outcome,
                a.deadline_ms,
                a.unanswered,
            )?);
        }
        tx.commit()?;
        Ok(out)
    };
    if conn.backend() != Backend::Sqlite {
        return write();
    }
    // SQLite waits for the write lock at BEGIN IMMEDIATE (held to the
    // commit): the busy timeout is the whole wait.
    let busy = |t: Duration| crate::store::set_busy_timeout(conn, t);
    busy(WRITE_TRY_WAIT)?;
    let written = write();
    busy(crate::store::BUSY_TIMEOUT)?;
    written
}

/// Records answered pushes, as many per transaction as have arrived (up
/// to [`WRITE_BATCH`]), then tells the claimer (a recorded question push
/// may have made its device's resolution claimable). Each outcome is
/// counted once: recorded (`qp_push_outcomes_total`) or not
/// (`qp_push_outcomes_unrecorded_total`).
async fn record_outcomes(
    app: Arc<App>,
    state: Arc<WorkerState>,
    mut done: tokio::sync::mpsc::UnboundedReceiver<Finished>,
    recorded: Arc<tokio::sync::Notify>,
) {
    while let Some(first) = done.recv().await {
        let mut batch = vec![first];
        while batch.len() < WRITE_BATCH {
            match done.try_recv() {
                Ok(f) => batch.push(f),
                Err(_) => break,
            }
        }
        let mut slots = Vec::with_capacity(batch.len());
        let mut answers = Vec::with_capacity(batch.len());
        for f in &mut batch {
            slots.extend(f.slot.take());
            answers.push(Answer {
                job: f.job.clone(),
                outcome: f.outcome.clone(),
                deadline_ms: f.deadline_ms,
                unanswered: f.unanswered,
            });
        }
        let written = write_outcomes(&app, answers).await;
        let push = &app.metrics.push;
        let now = now_ms();
        for (i, f) in batch.iter().enumerate() {
            let queued_for = now - f.job.created_ms;
            match written.as_ref().map(|w| w[i]) {
                Some(Written::Recorded { failed }) => {
                    metrics::recorded(push, f.gateway, &f.outcome, failed, queued_for);
                    if failed {
                        state.failures.ended_failed(f.gateway, &f.outcome);
                    }
                }
                Some(Written::ClaimLost { already_sent }) => {
                    let why = metrics::Unrecorded::ClaimLost;
                    metrics::unrecorded(push, f.gateway, &f.outcome, why);
                    if already_sent && f.outcome == PushOutcome::Sent {
                        // Accepted here and by the claim that recorded it.
                        state
                            .resends
                            .count(f.gateway, metrics::ResendCause::TakenOver);
                    }
                }
                None => {
                    let why = metrics::Unrecorded::WriteFailed;
                    metrics::unrecorded(push, f.gateway, &f.outcome, why);
                    if f.outcome == PushOutcome::Sent {
                        // Still queued: it goes again when the lease ends.
                        state
                            .resends
                            .count(f.gateway, metrics::ResendCause::Unrecorded);
                    }
                }
            }
        }
        // Held for an outage that ended (its probe answered) while they
        // were being recorded: the release may have run before they were
        // written, so they are released again now they are.
        let mut ended: Vec<&str> = Vec::new();
        for f in &batch {
            if let PushOutcome::Deferred { reason, .. } = &f.outcome {
                if let Some(circuit) = outage::held_circuit(reason) {
                    if !ended.contains(&circuit) && !state.outages.in_outage(circuit) {
                        ended.push(circuit);
                    }
                }
            }
        }
        // Beside the next write, which must not wait for it (the lease).
        for circuit in ended {
            tokio::spawn(release_held(app.clone(), circuit.to_string()));
        }
        drop(slots);
        recorded.notify_one();
    }
}

/// Writes a batch of outcomes in one transaction, again after a pause if
/// the database refused it (a lost connection, a lock): what each became,
/// or None when every try failed (the jobs stay claimed until their lease
/// ends, then go again).
async fn write_outcomes(app: &App, answers: Vec<Answer>) -> Option<Vec<Written>> {
    let answers = Arc::new(answers);
    let mut tries = 0;
    loop {
        let batch = answers.clone();
        let written = app.db.run(move |conn| write_batch(conn, &batch)).await;
        match written {
            Ok(w) => return Some(w),
            Err(e) if tries < WRITE_RETRIES => {
                tries += 1;
                tracing::warn!(error = %e, try_ = tries, "recording push outcomes: trying again");
                tokio::time::sleep(RetryPolicy::OUTCOME_WRITE.delay(tries)).await;
            }
            Err(e) => {
                tracing::error!(
                    error = %e,
                    outcomes = answers.len(),
                    "recording push outcomes failed: these jobs go again when their lease ends"
                );
                return None;
            }
        }
    }
}

/// One outcome to write.
struct Answer {
    job: deliveries::DuePush,
    outcome: PushOutcome,
    deadline_ms: i64,
    unanswered: u32,
}

/// What writing one outcome did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Written {
    /// `failed`: the state written is failed (a retry past the deadline,
    /// attempts run out, a deferral past the deadline, or a failure).
    Recorded { failed: bool },
    /// The job had moved on (this instance stalled past its lease, and
    /// another claimed it); `already_sent`: it is recorded sent.
    ClaimLost { already_sent: bool },
}

/// The job's next state for an outcome: state, attempts spent, when it is
/// due next, the error to keep. A deferred push spends no attempt, but is
/// never held past its `deadline_ms`: then it fails, with the reason; nor
/// is a retry queued past it. `unanswered`: the sends of this push that
/// went out without an answer, this one's included; past
/// [`NO_ANSWER_RESENDS`], one more gets it no re-send.
fn next_state(
    attempts_before: u32,
    outcome: &PushOutcome,
    now: i64,
    deadline_ms: i64,
    unanswered: u32,
) -> (PushJobState, u32, i64, Option<String>) {
    let attempts = attempts_before + 1;
    let retry = |reason: &str, after: &Option<Duration>| {
        let delay = after
            .unwrap_or_else(|| RetryPolicy::PUSH.delay(attempts))
            .min(RETRY_AFTER_MAX);
        let next = now.saturating_add(delay.as_millis() as i64);
        if next >= deadline_ms {
            (
                PushJobState::Failed,
                attempts,
                now,
                Some(format!(
                    "{reason} (not tried again: past the push's deadline)"
                )),
            )
        } else {
            (
                PushJobState::Queued,
                attempts,
                next,
                Some(reason.to_string()),
            )
        }
    };
    match outcome {
        PushOutcome::Deferred { reason, after }
            if now.saturating_add(after.as_millis() as i64) >= deadline_ms =>
        {
            (
                PushJobState::Failed,
                attempts_before,
                now,
                Some(reason.clone()),
            )
        }
        PushOutcome::Sent => (PushJobState::Sent, attempts, now, None),
        PushOutcome::DeviceGone => (
            PushJobState::Failed,
            attempts,
            now,
            Some("device unregistered".into()),
        ),
        PushOutcome::Deferred { reason, after } => (
            PushJobState::Queued,
            attempts_before,
            now + after.as_millis() as i64,
            Some(reason.clone()),
        ),
        PushOutcome::Skipped(reason) => {
            (PushJobState::Failed, attempts_before, now, Some(reason.clone()))
        }
        PushOutcome::NoAnswer { reason, .. } if unanswered > NO_ANSWER_RESENDS => (
            PushJobState::Failed,
            attempts,
            now,
            Some(format!(
                "{reason}: sent {unanswered} times without an answer, not sent again (the gateway may have it)"
            )),
        ),
        // Judged by the worker's `Outages` before it gets here; a retry if not.
        PushOutcome::Retry { reason, after } | PushOutcome::Unavailable { reason, after }
            if attempts < PUSH_MAX_ATTEMPTS =>
        {
            retry(reason, after)
        }
        PushOutcome::NoAnswer { reason, .. } if attempts < PUSH_MAX_ATTEMPTS => {
            retry(reason, &None)
        }
        // Failed for good, or out of attempts.
        PushOutcome::Failed(reason)
        | PushOutcome::Retry { reason, .. }
        | PushOutcome::Unavailable { reason, .. }
        | PushOutcome::NoAnswer { reason, .. } => {
            (PushJobState::Failed, attempts, now, Some(reason.clone()))
        }
    }
}

/// Writes one outcome. A push the gateway accepted is recorded sent
/// whenever its job is still queued, whoever holds the claim now: the
/// gateway has it, so sending it again (the other claim's send, or the
/// next one's) would only double it. Any other outcome only while this
/// claim still holds the job: an instance that stalled past its lease
/// must not undo what the claim after it recorded.
fn record_one(
    conn: &crate::store::Conn,
    job: &deliveries::DuePush,
    outcome: &PushOutcome,
    deadline_ms: i64,
    unanswered: u32,
) -> crate::store::DbResult<Written> {
    let now = now_ms();
    let (state, attempts, next_ms, error) =
        next_state(job.attempts, outcome, now, deadline_ms, unanswered);
    let held = if *outcome == PushOutcome::Sent {
        deliveries::mark_push_sent(conn, job.id, attempts, now)?
    } else {
        deliveries::mark_push(
            conn,
            job.id,
            job.claimed_until_ms,
            deliveries::PushMark {
                state,
                attempts,
                next_ms,
                error: error.as_deref(),
                unanswered,
            },
        )?
    };
    if !held {
        let already_sent = deliveries::push_state(conn, job.id)?.as_deref() == Some("sent");
        tracing::debug!(
            job = job.id,
            already_sent,
            "push outcome of a lost claim: not recorded"
        );
        return Ok(Written::ClaimLost { already_sent });
    }
    if *outcome == PushOutcome::DeviceGone {
        crate::store::identity::forget_device(conn, &job.device_id)?;
    }
    Ok(Written::Recorded {
        failed: state == PushJobState::Failed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Settings;
    use crate::store::Database;

    /// Writing a refused outcome batch again must end inside one write's
    /// budget (the lease keeps room for two): raising the retries or the
    /// pauses without it fails here.
    /// Each try waits for a lock at most `WRITE_TRY_WAIT` (not SQLite's
    /// 5 s busy timeout, nor PostgreSQL's unbounded lock wait), so every
    /// try's wait, the pauses between them and the writing itself fit
    /// the margin.
    #[test]
    fn the_outcome_write_retries_fit_the_record_margin() {
        let pauses: Duration = (1..=WRITE_RETRIES)
            .map(|t| RetryPolicy::OUTCOME_WRITE.delay(t))
            .sum();
        assert_eq!(pauses, Duration::from_millis(1_500));
        let waits = WRITE_TRY_WAIT * (1 + WRITE_RETRIES);
        assert!(
            waits + pauses + budget::RECORD_WORK <= budget::OUTCOME_WRITE,
            "{waits:?} waiting + {pauses:?} pauses + {:?} writing > {:?}",
            budget::RECORD_WORK,
            budget::OUTCOME_WRITE
        );
        // The server's own busy timeout would not fit even once per try.
        assert!(crate::store::BUSY_TIMEOUT * (1 + WRITE_RETRIES) + pauses > budget::OUTCOME_WRITE);
    }

    /// The bound is set on the connection for the write and given back
    /// after it: an outcome write behind a lock held longer fails at
    /// `WRITE_TRY_WAIT`, and the connection's other users keep the 5 s.
    #[test]
    fn an_outcome_write_waits_for_a_lock_no_longer_than_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("qp.sqlite");
        let conn = crate::store::open(&path).unwrap();
        let lock = rusqlite::Connection::open(&path).unwrap();
        lock.execute_batch("BEGIN EXCLUSIVE").unwrap();
        let t = std::time::Instant::now();
        assert!(write_batch(&conn, &[]).is_err(), "written under the lock");
        let waited = t.elapsed();
        assert!(
            waited >= WRITE_TRY_WAIT && waited < crate::store::BUSY_TIMEOUT / 2,
            "{waited:?}"
        );
        let busy: i64 = conn
            .query_row("PRAGMA busy_timeout", [], |r| r.get(0))
            .unwrap();
        assert_eq!(busy, crate::store::BUSY_TIMEOUT.as_millis() as i64);
        lock.execute_batch("COMMIT").unwrap();
        assert!(write_batch(&conn, &[]).unwrap().is_empty());
    }

    /// Which push routes there are, as the start log and `/readyz` say
    /// them: Web Push needs a place for its key (beside a SQLite database,
    /// or `vapid_key`); PostgreSQL alone has none.
    #[test]
    fn the_push_routes_are_the_configured_ones() {
        let pg = Settings {
            db: Database::Postgres("postgres://qp@127.0.0.1/qp".into()),
            ..Settings::default()
        };
        assert!(routes(&pg).is_empty());
        let sqlite = Settings {
            db: Database::Sqlite("/tmp/qp.sqlite".into()),
            ..Settings::default()
        };
        assert_eq!(routes(&sqlite), ["web_push"]);
        let with_key = Settings {
            vapid_key: Some("/tmp/vapid".into()),
            ..pg
        };
        assert_eq!(routes(&with_key), ["web_push"]);
    }

    /// A send that never answers is given back at the cap, counted from
    /// the claim: a send that started late (a slow load of the batch, a
    /// busy runtime) gets only what is left, so the job is back inside its
    /// lease however late it started. A transport that cannot say whether
    /// it wrote (Web Push's client) may have: no answer, counted against
    /// the re-sends, and never a fault of the gateway.
    #[tokio::test]
    async fn a_send_that_never_answers_is_given_back_at_the_cap_from_the_claim() {
        assert!(budget::send_cap(budget::LEASE) < budget::LEASE);
        let cap = Duration::from_millis(600);
        let claimed = tokio::time::Instant::now();
        // The send starts 400 ms after the claim.
        tokio::time::sleep(Duration::from_millis(400)).await;
        let started = tokio::time::Instant::now();
        let scope = SendScope::new(claimed + cap, 1);
        let outcome = within_lease(&scope, cap, Box::pin(std::future::pending()))
            .await
            .unwrap_err();
        assert!(
            matches!(outcome, PushOutcome::NoAnswer { cut_off: true, .. }),
            "{outcome:?}"
        );
        assert_eq!(scope.unanswered(), 2);
        assert!(claimed.elapsed() >= cap);
        assert!(
            started.elapsed() < cap - Duration::from_millis(100),
            "cut off {:?} after the send started: timed from the send, not the claim",
            started.elapsed()
        );
    }

    /// Cut off before the pool wrote the request: nothing reached the
    /// gateway, so it goes back unsent, spending no attempt.
    #[tokio::test]
    async fn a_send_cut_off_before_its_request_was_written_is_given_back_unsent() {
        let cap = Duration::from_millis(200);
        let scope = SendScope::new(tokio::time::Instant::now() + cap, 0);
        let waiting = Box::pin(async {
            // What the pool does while it waits for a stream.
            SendScope::current().unwrap().set_written(false);
            std::future::pending::<PushOutcome>().await
        });
        let outcome = within_lease(&scope, cap, waiting).await.unwrap_err();
        assert_eq!(outcome, not_sent_past_cut_off());
        assert_eq!(scope.unanswered(), 0);
        let (state, attempts, _, _) = next_state(3, &outcome, 1000, i64::MAX, 0);
        assert_eq!((state, attempts), (PushJobState::Queued, 3));
    }

    /// A push the gateway took without answering spends an attempt and
    /// goes again, but only `NO_ANSWER_RESENDS` times in all: the next
    /// one without an answer fails it, saying the gateway may have it.
    #[test]
    fn sends_without_an_answer_are_resent_at_most_three_times() {
        let no_answer = PushOutcome::NoAnswer {
            reason: "APNs sent no answer: no response within 15000 ms".into(),
            cut_off: false,
        };
        let mut attempts = 0;
        let mut sends = 0;
        loop {
            sends += 1;
            let (state, spent, _, error) = next_state(attempts, &no_answer, 1000, i64::MAX, sends);
            assert_eq!(spent, attempts + 1, "an attempt each");
            attempts = spent;
            if state == PushJobState::Failed {
                assert!(error.unwrap().contains("may have it"));
                break;
            }
            assert_eq!(state, PushJobState::Queued);
        }
        assert_eq!(
            sends,
            NO_ANSWER_RESENDS + 1,
            "sent once, then re-sent 3 times"
        );
    }

    /// A gateway's Retry-After is honoured up to `RETRY_AFTER_MAX`, and no
    /// retry is queued past the push's deadline (its question's expiry).
    #[test]
    fn retry_after_is_capped_and_never_parks_a_push_past_its_deadline() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(reqwest::header::RETRY_AFTER, "86400".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(RETRY_AFTER_MAX));
        headers.insert(reqwest::header::RETRY_AFTER, "3".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(3)));
        let throttled = PushOutcome::Retry {
            reason: "APNs 429 TooManyRequests".into(),
            after: Some(RETRY_AFTER_MAX),
        };
        let now = 1_000;
        let (state, _, next, _) = next_state(0, &throttled, now, i64::MAX, 0);
        assert_eq!(state, PushJobState::Queued);
        assert_eq!(next, now + RETRY_AFTER_MAX.as_millis() as i64);
        // The question expires in a minute: failed now, not parked past it.
        let (state, _, _, error) = next_state(0, &throttled, now, now + 60_000, 0);
        assert_eq!(state, PushJobState::Failed);
        assert!(error.unwrap().contains("past the push's deadline"));
    }

    /// One cap for every wait between tries: a Retry-After, FCM's backoff
    /// without one (any attempt, reason, jitter) and the push backoff
    /// all end at `RETRY_AFTER_MAX`; a retry is never queued later.
    #[test]
    fn every_wait_between_tries_is_capped_by_one_rule() {
        for reason in ["FCM 503 UNAVAILABLE", "FCM 429 QUOTA_EXCEEDED"] {
            for attempt in 1..=PUSH_MAX_ATTEMPTS + 20 {
                let w = fcm::retry_wait(reason, attempt);
                assert!(w <= RETRY_AFTER_MAX, "{reason} {attempt}: {w:?}");
            }
        }
        // FCM's backoff reaches the cap (less its jitter) within the
        // attempts a push has.
        assert!(
            fcm::retry_wait("FCM 429 QUOTA_EXCEEDED", PUSH_MAX_ATTEMPTS) >= RETRY_AFTER_MAX * 3 / 4
        );
        let now = 1_000;
        for after in [
            Some(Duration::from_secs(3600)),
            Some(Duration::from_secs(86_400)),
            None,
        ] {
            let retry = PushOutcome::Retry {
                reason: "FCM 429 QUOTA_EXCEEDED".into(),
                after,
            };
            for attempts in 0..PUSH_MAX_ATTEMPTS - 1 {
                let (state, _, next, _) = next_state(attempts, &retry, now, i64::MAX, 0);
                assert_eq!(state, PushJobState::Queued);
                assert!(
                    next - now <= RETRY_AFTER_MAX.as_millis() as i64,
                    "{after:?} {attempts}"
                );
            }
        }
        let (_, _, next, _) = next_state(
            0,
            &PushOutcome::Retry {
                reason: "FCM 429 QUOTA_EXCEEDED".into(),
                after: Some(Duration::from_secs(3600)),
            },
            now,
            i64::MAX,
            0,
        );
        assert_eq!(
            next,
            now + RETRY_AFTER_MAX.as_millis() as i64,
            "held to the cap"
        );
    }

    /// A Web Push timeout once connected (no pool to count it) counts
    /// against the push's re-sends and as maybe delivered, so its re-sends
    /// are capped as APNs and FCM's are; the pool's own are left alone.
    #[test]
    fn a_web_push_sent_without_an_answer_counts_against_its_resends() {
        let no_answer = PushOutcome::NoAnswer {
            reason: "push service sent no answer: operation timed out".into(),
            cut_off: false,
        };
        let resends = metrics::Resends::default();
        let scope = SendScope::new(tokio::time::Instant::now(), NO_ANSWER_RESENDS);
        unanswered_by_its_transport("web_push", &no_answer, &scope, &resends);
        assert_eq!(scope.unanswered(), NO_ANSWER_RESENDS + 1);
        assert_eq!(resends.get("web_push", metrics::ResendCause::Timeout), 1);
        let (state, _, _, error) = next_state(3, &no_answer, 1000, i64::MAX, scope.unanswered());
        assert_eq!(state, PushJobState::Failed, "{error:?}");
        // APNs's pool counted it already; Sent is nothing to count.
        let scope = SendScope::new(tokio::time::Instant::now(), 0);
        unanswered_by_its_transport("apns", &no_answer, &scope, &resends);
        unanswered_by_its_transport("web_push", &PushOutcome::Sent, &scope, &resends);
        assert_eq!(scope.unanswered(), 0);
        assert_eq!(resends.get("apns", metrics::ResendCause::Timeout), 0);
        assert_eq!(resends.get("web_push", metrics::ResendCause::Timeout), 1);
    }

    /// A push whose question was resolved before its turn is not sent,
    /// and spends no attempt.
    #[test]
    fn a_skipped_push_spends_no_attempt() {
        let skipped =
            PushOutcome::Skipped("question no longer pending (answered): not sent".into());
        let (state, attempts, _, error) = next_state(2, &skipped, 1000, i64::MAX, 0);
        assert_eq!((state, attempts), (PushJobState::Failed, 2));
        assert!(error.unwrap().contains("not sent"));
        assert_eq!(metrics::labels_of(&skipped), ("skipped", "gone"));
    }

    /// Devices whose platform this server has no push route for are not
    /// counted as pushed to; the terminal device always is.
    #[test]
    fn only_devices_with_a_push_route_count() {
        let pg = Settings {
            db: Database::Postgres("postgres://qp@127.0.0.1/qp".into()),
            ..Settings::default()
        };
        assert!(!platform_has_route(&pg, "ios"));
        assert!(!platform_has_route(&pg, "android"));
        assert!(!platform_has_route(&pg, "web"));
        assert!(platform_has_route(&pg, "dev"));
        assert!(!platform_has_route(&pg, "symbian"));
        let sqlite = Settings {
            db: Database::Sqlite("/tmp/qp.sqlite".into()),
            ..Settings::default()
        };
        assert!(platform_has_route(&sqlite, "web"));
        assert!(!platform_has_route(&sqlite, "ios"));
    }

    /// A push held back by a credential backoff spends no attempt; a
    /// retry does, and the last one fails the job.
    #[test]
    fn a_deferred_push_spends_no_attempt() {
        let deferred = PushOutcome::Deferred {
            reason: "apns credential refused".into(),
            after: Duration::from_secs(300),
        };
        let (state, attempts, next, _) =
            next_state(PUSH_MAX_ATTEMPTS - 1, &deferred, 1000, i64::MAX, 0);
        assert_eq!(state, PushJobState::Queued);
        assert_eq!(attempts, PUSH_MAX_ATTEMPTS - 1);
        assert_eq!(next, 1000 + 300_000);
        // Not past the question's expiry: held that long, it fails.
        let (state, attempts, _, _) = next_state(0, &deferred, 1000, 200_000, 0);
        assert_eq!((state, attempts), (PushJobState::Failed, 0));
        let retry = PushOutcome::Retry {
            reason: "APNs 503 ServiceUnavailable".into(),
            after: None,
        };
        let (state, attempts, _, _) = next_state(PUSH_MAX_ATTEMPTS - 1, &retry, 1000, i64::MAX, 0);
        assert_eq!((state, attempts), (PushJobState::Failed, PUSH_MAX_ATTEMPTS));
    }
}
