//! The server's behaviour, independent of HTTP: ask, wait, fetch, list,
//! cancel (`ask`), pending and answer (`respond`), expiry (`resolution`).
//! Operations fail with [`AppError`]; `http` and `mcp` only translate.
//!
//! Every change of a question's state goes through `resolution::record_resolution` in
//! the same transaction that writes it, so the webhook delivery and the push
//! jobs it causes are durable together with it; right after the commit, the
//! database job itself wakes the long-pollers and the workers (`committed.rs`).

use std::num::NonZeroU32;
use std::sync::Arc;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use tokio::sync::Notify;

pub mod admin;
mod ask;
mod committed;
mod devices;
pub mod error;
pub mod pairing;
mod resolution;
mod respond;

use committed::{Committed, Wakers};

use crate::config::Settings;
use crate::store::round_trips::Op;
use crate::store::{Conn, Db, DbError};
use crate::waiters::{LongPollSlot, LongPolls, Waiters};
pub use ask::{Asking, Placement};
pub use error::{AppError, AppResult, ErrorBody};
pub use resolution::purge_answer_keys_loop;

/// What an asker is told when its question's push reached no device
/// (`pushed_to_devices` 0): `qp ask` prints it, the MCP tool returns it.
pub const NO_DEVICE_WARNING: &str = "no device can receive this question: nobody who may answer it has a device registered for pushes (a device revoked or removed, or none paired yet), or there is no push route for this device's platform on this server (APNs for an iPhone, FCM for Android, Web Push for a browser). It stays pending until someone answers it in the web responder or the app; pair a device (qp invite, then qp pair or the app) and ask again.";
/// At most this many questions in a user's pending list.
pub const PENDING_LIMIT: usize = 200;
/// Page sizes of a user's history.
pub const HISTORY_DEFAULT_LIMIT: usize = 50;
pub const HISTORY_MAX_LIMIT: usize = 200;

pub struct App {
    pub db: Db,
    pub settings: Settings,
    pub waiters: Arc<Waiters>,
    /// Wakes the webhook worker when a delivery is queued.
    pub webhook_wake: Arc<Notify>,
    /// Wakes the push worker when a push job is queued.
    pub push_wake: Arc<Notify>,
    /// Wakes terminal devices long-polling their dev inbox.
    pub dev_wake: Notify,
    /// Wakes the feed long-polls of the people a question asked or changed
    /// concerns.
    pub feed_wake: Arc<crate::feed_wake::FeedWake>,
    limiter: DefaultKeyedRateLimiter<String>,
    /// Answers per user: each one may store an Idempotency-Key row and
    /// takes the database's one writer.
    answer_limiter: DefaultKeyedRateLimiter<String>,
    /// Long-polls held now, per agent or user (`max_long_polls_per_token`).
    pub long_polls: LongPolls,
    /// The `/mcp` sessions and the agents that own them.
    pub mcp_sessions: Arc<crate::session_owners::SessionOwners>,
    /// Failed pairing attempts per client address.
    pub pair_failures: pairing::PairFailures,
    /// Becomes true when the server stops: parked long-polls answer at once
    /// (with the question as it stands, so clients re-poll elsewhere).
    pub stopping: tokio::sync::watch::Sender<bool>,
    /// What /metrics shows.
    pub metrics: crate::metrics::Metrics,
    /// What /readyz reports that requests discover (storage full…).
    pub health: crate::health::Health,
    /// Who recent bearer tokens belong to (`token_cache`).
    pub tokens: crate::token_cache::TokenCache,
    /// The OAuth consent flow's rate limits.
    pub oauth_limits: crate::sign_in_policy::Limits,
    /// The VAPID public key browsers subscribe with, read (or made) once
    /// when `qp serve` starts; unset when Web Push is not configured.
    pub web_push_key: std::sync::OnceLock<String>,
}

/// The response of an answer, kept verbatim under its Idempotency-Key and
/// replayed as it is on a retry.
pub struct AnswerResponse {
    /// The protocol refused the answer (an unknown option, a reply too
    /// long…): `body` is the error's body, which a front end gives the
    /// shape of [`AppError::Invalid`]. Otherwise `body` is the question.
    pub refused: bool,
    pub body: String,
}

impl AnswerResponse {
    fn question(json: String) -> Self {
        AnswerResponse {
            refused: false,
            body: json,
        }
    }

    fn refused(e: AppError) -> Self {
        AnswerResponse {
            refused: true,
            body: serde_json::to_string(&e.body()).unwrap_or_default(),
        }
    }
}

impl App {
    pub fn new(db: Db, settings: Settings) -> Arc<App> {
        let asks = quota(settings.ask_rate_per_minute, settings.ask_burst);
        let answers = quota(settings.answer_rate_per_minute, settings.answer_burst);
        Arc::new(App {
            db,
            limiter: RateLimiter::keyed(asks),
            answer_limiter: RateLimiter::keyed(answers),
            long_polls: LongPolls::new(settings.max_long_polls_per_token),
            mcp_sessions: crate::session_owners::SessionOwners::new(
                settings.mcp_max_sessions_per_agent,
                settings.mcp_session_idle,
            ),
            settings,
            waiters: Default::default(),
            webhook_wake: Default::default(),
            push_wake: Default::default(),
            dev_wake: Notify::new(),
            feed_wake: Default::default(),
            pair_failures: Default::default(),
            stopping: tokio::sync::watch::channel(false).0,
            metrics: Default::default(),
            health: Default::default(),
            tokens: Default::default(),
            oauth_limits: Default::default(),
            web_push_key: Default::default(),
        })
    }

    /// Runs `f` as a database job counted under `op`. What `f` records in
    /// [`Committed`] as its commits succeed, the job announces itself right
    /// after `f`, on an error too (`committed.rs` says why there); not
    /// after a panic in `f`, which the request sees as one.
    async fn run_announcing<T, E, F>(&self, op: Op, f: F) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<DbError> + Send + 'static,
        F: FnOnce(&Conn, &mut Committed) -> Result<T, E> + Send + 'static,
    {
        let wakers = self.wakers();
        self.db
            .run_as(op, move |conn| {
                let mut done = Committed::default();
                let out = f(conn, &mut done);
                wakers.wake(done);
                out
            })
            .await
    }

    /// What wakes after a commit, to hand to a database job (see [`Wakers`]).
    fn wakers(&self) -> Wakers {
        Wakers {
            waiters: self.waiters.clone(),
            webhook: self.webhook_wake.clone(),
            push: self.push_wake.clone(),
            feed: self.feed_wake.clone(),
        }
    }

    /// A 401 from an operation's token check: the remembered token is
    /// forgotten too.
    fn forget_if_revoked(&self, e: AppError, hash: Option<&str>) -> AppError {
        if let (Some(h), AppError::Revoked) = (hash, &e) {
            self.tokens.forget(h);
        }
        e
    }

    fn check_answer_rate(&self, user_id: &str) -> Result<(), AppError> {
        self.answer_limiter
            .check_key(&user_id.to_string())
            .map_err(|not_until| {
                let wait = not_until.wait_time_from(DefaultClock::default().now());
                AppError::rate_limited(
                    "rate_limited",
                    format!(
                        "too many answers from this user; at most {} per minute (burst {}, answer_rate_per_minute)",
                        self.settings.answer_rate_per_minute, self.settings.answer_burst
                    ),
                    wait.as_secs_f64().ceil() as u64,
                )
            })
    }

    /// Counts a long-poll in for `holder` (`agent:…`, `user:…`), or the 429
    /// that says the holder has as many as it may.
    pub fn enter_long_poll(&self, holder: String) -> Result<LongPollSlot, AppError> {
        let who = match holder.starts_with("user:") {
            true => "this person",
            false => "this agent",
        };
        self.long_polls.enter(holder).ok_or_else(|| {
            AppError::rate_limited(
                "too_many_long_polls",
                format!(
                    "{} already holds {} long-polls at once (max_long_polls_per_token, counted per agent or person across their tokens); let some return first",
                    who,
                    self.long_polls.max()
                ),
                1,
            )
        })
    }

    fn check_ask_rate(&self, agent_id: &str) -> Result<(), AppError> {
        match self.limiter.check_key(&agent_id.to_string()) {
            Ok(()) => Ok(()),
            Err(not_until) => {
                let wait = not_until.wait_time_from(DefaultClock::default().now());
                Err(AppError::rate_limited(
                    "rate_limited",
                    format!(
                        "too many questions from this agent; at most {} per minute (burst {})",
                        self.settings.ask_rate_per_minute, self.settings.ask_burst
                    ),
                    wait.as_secs_f64().ceil() as u64,
                ))
            }
        }
    }
}

/// `per_minute` sustained with bursts of `burst` (0 counts as 1; the
/// settings refuse 0 already).
fn quota(per_minute: u32, burst: u32) -> Quota {
    let per_minute = NonZeroU32::new(per_minute).unwrap_or(NonZeroU32::MIN);
    Quota::per_minute(per_minute).allow_burst(NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN))
}

/// Writes the tokens' remembered uses every
/// [`crate::token_cache::FLUSH_EVERY`], one transaction each time.
pub async fn flush_token_uses_loop(app: std::sync::Arc<App>) {
    let mut tick = tokio::time::interval(crate::token_cache::FLUSH_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        crate::token_cache::flush(&app.tokens, &app.db).await;
    }
}
