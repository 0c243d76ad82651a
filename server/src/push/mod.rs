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
}

/// The push routes this server's settings configure, by name: `apns`,
/// `fcm`, `web_push` (the terminal device, `qp device`, is always there and
/// not counted: it reaches no phone). The start log and `/readyz` say them.
pub fn routes(settings: &crate::config::Settings) -> Vec<&'static str> {
    let web = webpush::key_path(settings.vapid_key.as_deref(), &settings.db).is_some();
    [
        ("apns", settings.apns.is_some()),
        ("fcm", settings.fcm.is_some()),
        ("web_push", web),
    ]
    .into_iter()
    .filter_map(|(name, on)| on.then_some(name))
    .collect()
}

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

/// A `Retry-After` header in seconds, if any.
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse::<u64>()
        .ok()
        .map(Duration::from_secs)
}

/// Attempts per job before it is marked failed.
pub const PUSH_MAX_ATTEMPTS: u32 = 8;

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

/// Outcomes recorded per transaction at most.
const WRITE_BATCH: usize = 1024;

/// One push answered, waiting to be recorded.
struct Finished {
    job: deliveries::DuePush,
    gateway: &'static str,
    outcome: PushOutcome,
    /// See [`deadline_ms`].
    deadline_ms: i64,
    /// The push's in-flight slot, given back only once its outcome is
    /// written: so answered-but-unrecorded outcomes count against the
    /// bound too (a slow database cannot pile them up, nor let their
    /// leases run out unbounded), and what a crash can repeat stays within
    /// `max_in_flight`.
    slot: Option<tokio::sync::OwnedSemaphorePermit>,
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
    let max = limits.max_in_flight.max(1);
    let slots = Arc::new(tokio::sync::Semaphore::new(max));
    let (done_tx, done_rx) = tokio::sync::mpsc::unbounded_channel::<Finished>();
    let recorded = Arc::new(tokio::sync::Notify::new());
    tokio::spawn(record_outcomes(app.clone(), done_rx, recorded.clone()));
    loop {
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
        let batch = app
            .db
            .run(
                move |conn| -> crate::store::DbResult<
                    Vec<(deliveries::DuePush, Option<PushMessage>)>,
                > {
                    let now = now_ms();
                    let due = deliveries::claim_pushes(conn, now, now + lease_ms, free)?;
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
            let next = app
                .db
                .run(deliveries::next_push_due_ms)
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
            tokio::spawn(async move {
                let gateway = msg
                    .as_ref()
                    .map_or("none", |m| metrics::gateway_of(&m.device.platform));
                let _flight = metrics.metrics.push.in_flight(gateway);
                let outages = &metrics.metrics.push.outages;
                let deadline_ms = msg.as_ref().map_or(i64::MAX, |m| deadline_ms(&job, m));
                if job.after_lapsed_claim && msg.is_some() {
                    // The claim before ended without an outcome: it may
                    // have sent this push (the instance was killed or
                    // stalled mid-send), so sending it now may double it.
                    let resends = &metrics.metrics.push.resends;
                    resends.count(gateway, metrics::ResendCause::LeaseRanOut);
                }
                // The gateway is in an outage: held without sending.
                let circuit = msg
                    .as_ref()
                    .map_or_else(|| gateway.to_string(), |m| outage::circuit_of(gateway, m));
                let held = msg.as_ref().and_then(|_| outages.held(&circuit));
                let outcome = match (&msg, held) {
                    // Resolved or expired since it was queued (a take-over
                    // of an expired lease, a retry): a question push would
                    // only show a question no one can answer any more.
                    (Some(m), _) if !worth_sending(&job, m) => PushOutcome::Failed(format!(
                        "question no longer pending ({}): not sent",
                        match m.question.state {
                            qp_core::protocol::QuestionState::Pending => "expired",
                            s => s.as_str(),
                        }
                    )),
                    (Some(_), Some(held)) => held,
                    (Some(m), None) => match within_lease(cut_off, cap, transport.send(m)).await {
                        Ok(outcome) => outcome,
                        // Cut off mid-send: the gateway may have it. APNs
                        // and FCM's pool counts it itself, only if the
                        // request was written (`h2pool::Written`).
                        Err(cut) => {
                            if !matches!(gateway, "apns" | "fcm") {
                                let resends = &metrics.metrics.push.resends;
                                resends.count(gateway, metrics::ResendCause::Timeout);
                            }
                            cut
                        }
                    },
                    (None, _) => PushOutcome::Failed("device or question no longer exists".into()),
                };
                metrics.metrics.push.answered(gateway, &outcome);
                let outcome = outages.judge(gateway, &circuit, outcome);
                let _ = done.send(Finished {
                    job,
                    gateway,
                    outcome,
                    deadline_ms,
                    slot: Some(permit),
                });
            });
        }
    }
}

/// A send cut off at `cut_off` (the claim's time plus `cap`: what the
/// lease leaves once the outcome is recorded) comes back as a retry, so the
/// job is given back before its lease ends, never claimed by another
/// instance while still in flight (`Err`: cut off).
async fn within_lease(
    cut_off: tokio::time::Instant,
    cap: Duration,
    send: PushFuture<'_>,
) -> Result<PushOutcome, PushOutcome> {
    tokio::time::timeout_at(cut_off, send)
        .await
        .map_err(|_| PushOutcome::Unavailable {
            reason: format!(
                "no answer within {} ms of the claim (the lease's budget)",
                cap.as_millis()
            ),
            after: None,
        })
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
                }),
                _ => None,
            };
            (job, msg)
        })
        .collect())
}

/// A failed outcome batch is written again this many times (0.5 s, 1 s,
/// 2 s apart: within `budget::RECORD_MARGIN`) before its outcomes are
/// counted as unrecorded.
const WRITE_RETRIES: u32 = 3;

/// How long one outcome write waits for another writer's lock: SQLite's
/// busy timeout for it (the server's is 5 s), PostgreSQL's `lock_timeout`
/// in its transaction (unbounded by default). With the retries and their
/// pauses, the record margin holds it ([`budget::RECORD_MARGIN`]).
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
    batch: &[(deliveries::DuePush, PushOutcome, i64)],
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
        for (job, outcome, deadline_ms) in batch {
            out.push(record_one(&*tx, job, outcome, *deadline_ms)?);
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
            answers.push((f.job.clone(), f.outcome.clone(), f.deadline_ms));
        }
        let written = write_outcomes(&app, answers).await;
        let push = &app.metrics.push;
        let now = now_ms();
        for (i, f) in batch.iter().enumerate() {
            let queued_for = now - f.job.created_ms;
            match written.as_ref().map(|w| w[i]) {
                Some(Written::Recorded) => push.recorded(f.gateway, &f.outcome, queued_for),
                Some(Written::ClaimLost { already_sent }) => {
                    push.unrecorded(f.gateway, &f.outcome, metrics::Unrecorded::ClaimLost);
                    if already_sent && f.outcome == PushOutcome::Sent {
                        // Accepted here and by the claim that recorded it.
                        push.resends
                            .count(f.gateway, metrics::ResendCause::TakenOver);
                    }
                }
                None => {
                    push.unrecorded(f.gateway, &f.outcome, metrics::Unrecorded::WriteFailed);
                    if f.outcome == PushOutcome::Sent {
                        // Still queued: it goes again when the lease ends.
                        push.resends
                            .count(f.gateway, metrics::ResendCause::Unrecorded);
                    }
                }
            }
        }
        drop(slots);
        recorded.notify_one();
    }
}

/// Writes a batch of outcomes in one transaction, again after a pause if
/// the database refused it (a lost connection, a lock): what each became,
/// or None when every try failed (the jobs stay claimed until their lease
/// ends, then go again).
async fn write_outcomes(
    app: &App,
    answers: Vec<(deliveries::DuePush, PushOutcome, i64)>,
) -> Option<Vec<Written>> {
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

/// What writing one outcome did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Written {
    Recorded,
    /// The job had moved on (this instance stalled past its lease, and
    /// another claimed it); `already_sent`: it is recorded sent.
    ClaimLost {
        already_sent: bool,
    },
}

/// The job's next state for an outcome: state, attempts spent, when it is
/// due next, the error to keep. A deferred push spends no attempt, but is
/// never held past its `deadline_ms`: then it fails, with the reason.
fn next_state(
    attempts_before: u32,
    outcome: &PushOutcome,
    now: i64,
    deadline_ms: i64,
) -> (PushJobState, u32, i64, Option<&str>) {
    let attempts = attempts_before + 1;
    match outcome {
        PushOutcome::Deferred { reason, after }
            if now.saturating_add(after.as_millis() as i64) >= deadline_ms =>
        {
            (
                PushJobState::Failed,
                attempts_before,
                now,
                Some(reason.as_str()),
            )
        }
        PushOutcome::Sent => (PushJobState::Sent, attempts, now, None),
        PushOutcome::DeviceGone => (
            PushJobState::Failed,
            attempts,
            now,
            Some("device unregistered"),
        ),
        PushOutcome::Deferred { reason, after } => (
            PushJobState::Queued,
            attempts_before,
            now + after.as_millis() as i64,
            Some(reason.as_str()),
        ),
        // Judged by the worker's `Outages` before it gets here; a retry if not.
        PushOutcome::Retry { reason, after } | PushOutcome::Unavailable { reason, after }
            if attempts < PUSH_MAX_ATTEMPTS =>
        {
            let delay = after.unwrap_or_else(|| RetryPolicy::PUSH.delay(attempts));
            (
                PushJobState::Queued,
                attempts,
                now + delay.as_millis() as i64,
                Some(reason.as_str()),
            )
        }
        // Failed for good, or out of attempts.
        PushOutcome::Failed(reason)
        | PushOutcome::Retry { reason, .. }
        | PushOutcome::Unavailable { reason, .. } => {
            (PushJobState::Failed, attempts, now, Some(reason.as_str()))
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
) -> crate::store::DbResult<Written> {
    let now = now_ms();
    let (state, attempts, next_ms, error) = next_state(job.attempts, outcome, now, deadline_ms);
    let held = if *outcome == PushOutcome::Sent {
        deliveries::mark_push_sent(conn, job.id, attempts, now)?
    } else {
        deliveries::mark_push(
            conn,
            job.id,
            job.claimed_until_ms,
            state,
            attempts,
            next_ms,
            error,
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
    Ok(Written::Recorded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Settings;
    use crate::store::Database;

    /// Writing a refused outcome batch again must end inside the margin the
    /// lease keeps for recording: raising the retries or the pauses without
    /// the margin fails here.
    /// Each try waits for a lock at most `WRITE_TRY_WAIT` (not SQLite's
    /// 5 s busy timeout, nor PostgreSQL's unbounded lock wait), so every
    /// try's wait, the pauses between them and the writing itself fit
    /// the margin.
    #[test]
    fn the_outcome_write_retries_fit_the_record_margin() {
        let pauses: Duration = (1..=WRITE_RETRIES)
            .map(|t| RetryPolicy::OUTCOME_WRITE.delay(t))
            .sum();
        assert_eq!(pauses, Duration::from_millis(3_500));
        let waits = WRITE_TRY_WAIT * (1 + WRITE_RETRIES);
        assert!(
            waits + pauses + budget::RECORD_WORK <= budget::RECORD_MARGIN,
            "{waits:?} waiting + {pauses:?} pauses + {:?} writing > {:?}",
            budget::RECORD_WORK,
            budget::RECORD_MARGIN
        );
        // The server's own busy timeout would not fit even once per try.
        assert!(crate::store::BUSY_TIMEOUT * (1 + WRITE_RETRIES) + pauses > budget::RECORD_MARGIN);
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

    /// A send that never answers is given back as a retry at the cap,
    /// counted from the claim: a send that started late (a slow load of
    /// the batch, a busy runtime) gets only what is left, so the job is
    /// back inside its lease however late it started.
    #[tokio::test]
    async fn a_send_that_never_answers_is_given_back_at_the_cap_from_the_claim() {
        assert!(budget::send_cap(budget::LEASE) < budget::LEASE);
        let cap = Duration::from_millis(600);
        let claimed = tokio::time::Instant::now();
        // The send starts 400 ms after the claim.
        tokio::time::sleep(Duration::from_millis(400)).await;
        let started = tokio::time::Instant::now();
        let outcome = within_lease(claimed + cap, cap, Box::pin(std::future::pending()))
            .await
            .unwrap_err();
        assert!(
            matches!(outcome, PushOutcome::Unavailable { .. }),
            "{outcome:?}"
        );
        assert!(claimed.elapsed() >= cap);
        assert!(
            started.elapsed() < cap - Duration::from_millis(100),
            "cut off {:?} after the send started: timed from the send, not the claim",
            started.elapsed()
        );
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
            next_state(PUSH_MAX_ATTEMPTS - 1, &deferred, 1000, i64::MAX);
        assert_eq!(state, PushJobState::Queued);
        assert_eq!(attempts, PUSH_MAX_ATTEMPTS - 1);
        assert_eq!(next, 1000 + 300_000);
        // Not past the question's expiry: held that long, it fails.
        let (state, attempts, _, _) = next_state(0, &deferred, 1000, 200_000);
        assert_eq!((state, attempts), (PushJobState::Failed, 0));
        let retry = PushOutcome::Retry {
            reason: "APNs 503 ServiceUnavailable".into(),
            after: None,
        };
        let (state, attempts, _, _) = next_state(PUSH_MAX_ATTEMPTS - 1, &retry, 1000, i64::MAX);
        assert_eq!((state, attempts), (PushJobState::Failed, PUSH_MAX_ATTEMPTS));
    }
}
