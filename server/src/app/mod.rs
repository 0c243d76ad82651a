//! The server's behaviour, independent of HTTP: ask, wait, fetch, list,
//! cancel, pending, answer, expiry. Handlers in `http` only translate.
//!
//! Every change of a question's state goes through [`record_resolution`] in
//! the same transaction that writes it, so the webhook delivery and the push
//! jobs it causes are durable together with it; after the commit,
//! [`App::announce`] wakes the long-pollers and the workers.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use qp_core::protocol::{
    normalize_ask, time, AnswerOutcome, AnswerSubmission, AskContext, Asker, Question,
    QuestionState, Responder, RoomRef, WebhookEvent,
};
use serde_json::Value;
use tokio::sync::Notify;

pub mod error;

use crate::config::Settings;
use crate::ids;
use crate::store::identity::{self, Agent, User, SCOPE_ASK, SCOPE_READ};
use crate::store::questions::{self, KeyedResult, StoredQuestion};
use crate::store::round_trips::Op;
use crate::store::{now_ms, Conn, Db, DbResult};
use crate::waiters::{LongPollSlot, LongPolls, Waiters};
pub use error::{AppError, AppResult, ErrorBody};

/// Long-poll bounds of the wait endpoint, in seconds.
pub const LONG_POLL_DEFAULT_SECS: u64 = 20;
pub const LONG_POLL_MAX_SECS: u64 = 30;
/// List bounds.
pub const LIST_DEFAULT_LIMIT: usize = 100;
pub const LIST_MAX_LIMIT: usize = 500;
/// `GET /api/agent/questions` without `state`: questions created in this window.
pub const LIST_RECENT_WINDOW_SECS: i64 = 24 * 3600;
/// At most this many questions in a user's pending list.
pub const PENDING_LIMIT: usize = 200;

pub struct App {
    pub db: Db,
    pub settings: Settings,
    pub waiters: Waiters,
    /// Wakes the webhook worker when a delivery is queued.
    pub webhook_wake: Notify,
    /// Wakes the push worker when a push job is queued.
    pub push_wake: Notify,
    /// Wakes terminal devices long-polling their dev inbox.
    pub dev_wake: Notify,
    limiter: DefaultKeyedRateLimiter<String>,
    /// Answers per user: each one may store an Idempotency-Key row and
    /// takes the database's one writer.
    answer_limiter: DefaultKeyedRateLimiter<String>,
    /// Long-polls held now, per agent or user (`max_long_polls_per_token`).
    pub long_polls: LongPolls,
    /// The `/mcp` sessions and the agents that own them.
    pub mcp_sessions: Arc<crate::mcp::sessions::SessionOwners>,
    /// Failed pairing attempts per client address.
    pub pair_failures: crate::pairing::PairFailures,
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
    pub oauth_limits: crate::oauth::Limits,
}

/// The response of an answer, kept verbatim under its Idempotency-Key.
pub struct AnswerResponse {
    pub status: u16,
    pub body: String,
}

impl AnswerResponse {
    /// What an answer the protocol refuses is recorded as: the status the
    /// HTTP API gives [`AppError::Invalid`] (a test in `http::error` holds
    /// the two equal) and the error body, replayed as they are on a retry.
    pub const REFUSED_STATUS: u16 = 422;

    fn refused(e: AppError) -> Self {
        AnswerResponse {
            status: Self::REFUSED_STATUS,
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
            mcp_sessions: crate::mcp::sessions::SessionOwners::new(
                settings.mcp_max_sessions_per_agent,
                settings.mcp_session_idle,
            ),
            settings,
            waiters: Waiters::default(),
            webhook_wake: Notify::new(),
            push_wake: Notify::new(),
            dev_wake: Notify::new(),
            pair_failures: Default::default(),
            stopping: tokio::sync::watch::channel(false).0,
            metrics: Default::default(),
            health: Default::default(),
            tokens: Default::default(),
            oauth_limits: Default::default(),
        })
    }

    /// After a commit that resolved `q`: release its long-pollers, wake the
    /// webhook and push workers.
    pub fn announce(&self, q: Question) {
        self.waiters.release(Arc::new(q));
        self.webhook_wake.notify_one();
        self.push_wake.notify_one();
    }

    fn announce_all(&self, qs: Vec<Question>) {
        for q in qs {
            self.announce(q);
        }
    }

    /// [`App::announce`], waking only the workers that got work.
    fn announce_resolved(&self, q: Question, r: &questions::Resolved) {
        self.waiters.release(Arc::new(q));
        if r.webhook {
            self.webhook_wake.notify_one();
        }
        if r.pushes > 0 {
            self.push_wake.notify_one();
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
        self.long_polls.enter(holder).ok_or_else(|| {
            AppError::rate_limited(
                "too_many_long_polls",
                format!(
                    "this token already holds {} long-polls at once (max_long_polls_per_token); let some return first",
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

    // ---- asker side ----

    pub async fn ask(
        &self,
        agent: Agent,
        room_code: String,
        body: Value,
    ) -> Result<Question, AppError> {
        require_scope(&agent, SCOPE_ASK)?;
        self.check_ask_rate(&agent.id)?;
        let max_pending = self.settings.max_pending_per_agent as i64;
        let check = agent.check_token.clone();
        let agent_check = check.clone();
        let (q, pushes) = self
            .db
            .run_as(Op::Ask, move |conn| -> Result<(Question, usize), AppError> {
                let now = time::now();
                let ctx = AskContext {
                    now,
                    default_target_user_id: Some(agent.owner_user_id.clone()),
                };
                // Judged now, reported after the room's checks (as before).
                let ask = normalize_ask(&body, &ctx);
                let target = ask.as_ref().ok().and_then(|a| a.target_user_id.clone());
                let place = questions::ask_place(
                    conn,
                    &room_code,
                    &agent.id,
                    target.as_deref(),
                    check.as_deref(),
                )?;
                if !place.token_live {
                    return Err(AppError::Revoked);
                }
                let room = place.room.ok_or_else(|| {
                    AppError::NotFound { message: format!("room: no room with code {room_code}"), field: Some("room") }
                })?;
                if !place.agent_may_use {
                    return Err(AppError::Forbidden {
                        code: "room_not_allowed",
                        message: format!("room: this agent may not ask in room {}", room.code),
                        field: Some("room"),
                    });
                }
                let ask = ask?;
                if let Some(target) = &ask.target_user_id {
                    if !place.target_is_member {
                        return Err(AppError::invalid(
                            "target_user_id",
                            "not_a_member",
                            format!("target_user_id: user {target} is not a member of room {}", room.code),
                        ));
                    }
                }
                let mut q = ask.into_question(ids::new_id("q"), now);
                q.room = Some(RoomRef {
                    code: room.code.clone(),
                    name: room.name.clone(),
                });
                q.asker = Some(Asker {
                    handle: Some(agent.handle.clone()),
                    kind: "agent".into(),
                    id: agent.id.clone(),
                    display_name: agent.name.clone(),
                });
                match questions::insert_asked(conn, &q, &room.id, &agent.id, max_pending, now_ms())? {
                    questions::Asked::OverQuota => Err(AppError::rate_limited(
                        "quota_exceeded",
                        format!("this agent already has {max_pending} pending questions; wait for some to resolve or cancel them"),
                        60,
                    )),
                    questions::Asked::Queued { pushes } => Ok((q, pushes)),
                }
            })
            .await
            .map_err(|e| self.forget_if_revoked(e, agent_check.as_deref()))?;
        tracing::info!(question = %q.id, agent = %q.asker.as_ref().map(|a| a.id.as_str()).unwrap_or(""), "asked");
        if pushes > 0 {
            self.push_wake.notify_one();
        }
        Ok(q)
    }

    /// A question as its asking agent sees it; other agents get 404.
    pub async fn agent_question(&self, agent: &Agent, id: String) -> Result<Question, AppError> {
        self.agent_question_as(Op::Other, agent, id).await
    }

    async fn agent_question_as(
        &self,
        op: Op,
        agent: &Agent,
        id: String,
    ) -> Result<Question, AppError> {
        require_read(agent)?;
        let agent_id = agent.id.clone();
        let check = agent.check_token.clone();
        let (result, fresh) = self
            .db
            .run_as(op, move |conn| -> Result<_, AppError> {
                let now = time::now();
                Ok(
                    match load_fresh_checked(conn, &id, now, check.as_deref())? {
                        Some((stored, fresh)) if stored.agent_id == agent_id => (
                            Ok(stored.question.clone()),
                            fresh.then_some(stored.question),
                        ),
                        Some((stored, fresh)) => {
                            (Err(not_found(&id)), fresh.then_some(stored.question))
                        }
                        None => (Err(not_found(&id)), None),
                    },
                )
            })
            .await
            .map_err(|e| self.forget_if_revoked(e, agent.check_token.as_deref()))?;
        self.announce_all(fresh.into_iter().collect());
        result
    }

    /// Long-poll: returns at once if the question is terminal, else when it
    /// resolves, or after `timeout` with the still-pending question.
    pub async fn wait(
        &self,
        agent: &Agent,
        id: String,
        timeout: Duration,
    ) -> Result<Question, AppError> {
        let holder = format!("agent:{}", agent.id);
        self.wait_held_by(agent, id, timeout, holder).await
    }

    /// [`App::wait`], its long-poll counted against `holder` (the agent's
    /// own budget, or another the caller stands for: a sign-in page waits
    /// on its consent question under its own key, so one page cannot use up
    /// the budget of every other consent of that person).
    pub async fn wait_held_by(
        &self,
        agent: &Agent,
        id: String,
        timeout: Duration,
        holder: String,
    ) -> Result<Question, AppError> {
        let mut rx = self.waiters.subscribe(&id);
        // Only the deadline is kept while parked: the question read here
        // lives in this block, and the reads' states are boxed, so neither
        // is carried by every parked long-poll.
        let until_expiry = {
            let current = Box::pin(self.agent_question_as(Op::Wait, agent, id.clone())).await;
            match current {
                Ok(q) if q.state == QuestionState::Pending && !timeout.is_zero() => {
                    // Wake at the deadline too, so expiry releases the waiter on
                    // time; and at once when the server stops (the client re-polls).
                    (q.expires_at - Utc::now()).to_std().unwrap_or_default()
                }
                other => {
                    drop(rx);
                    self.waiters.forget_if_unused(&id);
                    return other;
                }
            }
        };
        let _slot = match self.enter_long_poll(holder) {
            Ok(slot) => slot,
            Err(e) => {
                drop(rx);
                self.waiters.forget_if_unused(&id);
                return Err(e);
            }
        };
        let mut stopping = self.stopping.subscribe();
        let _parked = crate::metrics::Counted::new(&self.metrics.parked);
        let resolved = tokio::select! {
            w = tokio::time::timeout(timeout.min(until_expiry), rx.changed()) => matches!(w, Ok(Ok(()))),
            _ = async { let _ = stopping.wait_for(|s| *s).await; } => false,
        };
        let released = if resolved { rx.borrow().clone() } else { None };
        drop(rx);
        self.waiters.forget_if_unused(&id);
        match released {
            Some(q) => Ok((*q).clone()),
            None => Box::pin(self.agent_question_as(Op::Wait, agent, id)).await,
        }
    }

    /// An agent's own questions, newest first. `state: None` with `all:
    /// false` is the recent window.
    pub async fn list(
        &self,
        agent: &Agent,
        state: Option<QuestionState>,
        all: bool,
        limit: usize,
    ) -> Result<Vec<Question>, AppError> {
        require_read(agent)?;
        self.expire_overdue().await?;
        let agent_id = agent.id.clone();
        self.db
            .run(move |conn| -> Result<_, AppError> {
                let since = (state.is_none() && !all)
                    .then(|| Utc::now().timestamp() - LIST_RECENT_WINDOW_SECS);
                Ok(questions::list_for_agent(
                    conn, &agent_id, state, since, limit,
                )?)
            })
            .await
    }

    /// Withdraws a pending question; a resolved one gets 409 with the
    /// question unchanged.
    pub async fn cancel(&self, agent: &Agent, id: String) -> Result<Question, AppError> {
        require_scope(agent, SCOPE_ASK)?;
        let agent_id = agent.id.clone();
        let (result, fresh) = self
            .db
            .run_as(Op::Cancel, move |conn| -> Result<_, AppError> {
                let now = time::now();
                let Some((stored, expired_now)) = load_fresh(conn, &id, now)? else {
                    return Ok((Err(not_found(&id)), None));
                };
                let expired = expired_now.then(|| stored.question.clone());
                if stored.agent_id != agent_id {
                    return Ok((Err(not_found(&id)), expired));
                }
                let mut q = stored.question;
                if q.cancel(now).is_err() {
                    return Ok((Err(AppError::already_resolved(q)), expired));
                }
                let tx = conn.transaction()?;
                let changed = record_resolution(&*tx, &stored.room_id, &q)?.is_some();
                tx.commit()?;
                if !changed {
                    let current = questions::get(conn, &id)?.map(|s| s.question);
                    return Ok((
                        Err(AppError::already_resolved(current.unwrap_or(q))),
                        expired,
                    ));
                }
                Ok((Ok(q.clone()), Some(q)))
            })
            .await?;
        self.announce_all(fresh.into_iter().collect());
        result
    }

    // ---- responder side ----

    pub async fn pending(&self, user: &User) -> Result<Vec<Question>, AppError> {
        self.expire_overdue().await?;
        let user_id = user.id.clone();
        self.db
            .run(move |conn| -> Result<_, AppError> {
                Ok(questions::pending_for_user(
                    conn,
                    &user_id,
                    Utc::now().timestamp(),
                    PENDING_LIMIT,
                )?)
            })
            .await
    }

    /// A question for an eligible responder (403 otherwise).
    pub async fn user_question(&self, user: &User, id: String) -> Result<Question, AppError> {
        let user_id = user.id.clone();
        let (result, fresh) = self
            .db
            .run(move |conn| -> Result<_, AppError> {
                let now = time::now();
                let Some((stored, expired_now)) = load_fresh(conn, &id, now)? else {
                    return Ok((Err(not_found(&id)), None));
                };
                let fresh = expired_now.then(|| stored.question.clone());
                if !may_respond(conn, &stored, &user_id)? {
                    return Ok((Err(not_eligible()), fresh));
                }
                Ok((Ok(stored.question), fresh))
            })
            .await?;
        self.announce_all(fresh.into_iter().collect());
        result
    }

    /// Answers as the authenticated `user`. The first valid answer wins; a
    /// late, duplicate or expired answer returns the resolved question with
    /// 200. With an Idempotency-Key, a retry returns the stored response.
    pub async fn answer(
        &self,
        user: User,
        id: String,
        body: Value,
        key: Option<String>,
    ) -> Result<AnswerResponse, AppError> {
        let user_check = user.check_token.clone();
        self.check_answer_rate(&user.id)?;
        let key_ttl = self.settings.idempotency_key_ttl.as_secs() as i64;
        let check = user.check_token.clone();
        let (result, fresh, woke) = self
            .db
            .run_as(Op::Answer, move |conn| -> Result<_, AppError> {
                // One statement: the question, the user's membership, the
                // room (webhook included) and the token's check.
                let place = questions::answer_place(conn, &id, &user.id, check.as_deref())?;
                if !place.token_live {
                    return Err(AppError::Revoked);
                }
                let keys_since = time::now().timestamp() - key_ttl;
                if let Some(key) = &key {
                    if let Some(prev) = questions::keyed_answer(conn, &user.id, key, keys_since)? {
                        if prev.question_id != id {
                            return Ok((
                                Err(AppError::invalid(
                                    "Idempotency-Key",
                                    "idempotency_key_reused",
                                    "Idempotency-Key: this key was already used for another question",
                                )),
                                None,
                                None,
                            ));
                        }
                        return Ok((Ok(AnswerResponse { status: prev.status, body: prev.response }), None, None));
                    }
                }
                let submission = match AnswerSubmission::from_json(&body) {
                    Ok(s) => s,
                    Err(e) => return Ok((Err(e.into()), None, None)),
                };
                let now = time::now();
                let Some(stored) = place.stored else {
                    return Ok((Err(not_found(&id)), None, None));
                };
                let room = place.room.as_ref();
                let Some((stored, expired_now)) = expire_loaded(conn, stored, now, room)? else {
                    return Ok((Err(not_found(&id)), None, None));
                };
                let mut fresh = expired_now.then(|| stored.question.clone());
                if !(place.member && stored.question.is_eligible(&user.id, place.member)) {
                    return Ok((Err(not_eligible()), fresh, None));
                }
                let mut q = stored.question;
                let responder = Responder {
                    id: user.id.clone(),
                    display_name: user.display_name.clone(),
                };
                let outcome = q.apply_answer(&submission, responder, now);
                let accepted = matches!(outcome, Ok(AnswerOutcome::Accepted));
                // PostgreSQL writes a resolution in one statement; a
                // transaction only when an Idempotency-Key is stored with
                // it (or on SQLite, whose resolution is several).
                let tx = if key.is_some() || (accepted && conn.backend() == crate::store::Backend::Sqlite) {
                    Some(conn.transaction()?)
                } else {
                    None
                };
                let c: &Conn = match &tx {
                    Some(t) => &**t,
                    None => conn,
                };
                let mut woke = None;
                let response = match outcome {
                    Err(e) => AnswerResponse::refused(e.into()),
                    Ok(AnswerOutcome::Accepted) => {
                        // Serialized once: stored, carried to the other
                        // instances, and answered.
                        let json = serde_json::to_string(&q).unwrap_or_default();
                        match record_resolution_in(c, &stored.room_id, room, &q, &json)? {
                            Some(r) => {
                                woke = Some(r);
                                fresh = Some(q);
                                AnswerResponse { status: 200, body: json }
                            }
                            None => {
                                if let Some(current) = questions::get(c, &id)? {
                                    q = current.question; // someone else won in between
                                }
                                AnswerResponse { status: 200, body: serde_json::to_string(&q).unwrap_or_default() }
                            }
                        }
                    }
                    Ok(AnswerOutcome::AlreadyResolved) => {
                        AnswerResponse { status: 200, body: serde_json::to_string(&q).unwrap_or_default() }
                    }
                };
                if let Some(key) = &key {
                    let keyed = KeyedResult {
                        question_id: id.clone(),
                        status: response.status,
                        response: response.body.clone(),
                    };
                    questions::save_keyed_answer(c, &user.id, key, &keyed, now.timestamp(), keys_since)?;
                }
                if let Some(tx) = tx {
                    tx.commit()?;
                }
                Ok((Ok(response), fresh, woke))
            })
            .await
            .map_err(|e| self.forget_if_revoked(e, user_check.as_deref()))?;
        if let Some(q) = fresh {
            match woke {
                Some(r) => self.announce_resolved(q, &r),
                None => self.announce(q),
            }
        }
        result
    }

    // ---- expiry ----

    /// Expires every overdue pending question (in batches), releasing its
    /// waiters and queuing its webhook. Returns how many it expired.
    pub async fn expire_overdue(&self) -> Result<usize, AppError> {
        let mut total = 0;
        loop {
            let expired = self
                .db
                .run(move |conn| -> Result<Vec<Question>, AppError> {
                    let now = time::now();
                    let mut out = Vec::new();
                    for id in questions::overdue_ids(conn, now.timestamp(), 200)? {
                        if let Some((stored, true)) = load_fresh(conn, &id, now)? {
                            out.push(stored.question);
                        }
                    }
                    Ok(out)
                })
                .await?;
            let n = expired.len();
            total += n;
            self.announce_all(expired);
            if n < 200 {
                return Ok(total);
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

impl App {
    /// Deletes the Idempotency-Keys older than `idempotency_key_ttl` (a
    /// lookup ignores them already); returns how many.
    pub async fn purge_answer_keys(&self) -> Result<usize, AppError> {
        let before = time::now().timestamp() - self.settings.idempotency_key_ttl.as_secs() as i64;
        self.db
            .run(move |conn| -> Result<_, AppError> {
                Ok(questions::purge_answer_keys(conn, before)?)
            })
            .await
    }
}

/// Purges expired Idempotency-Keys, ten times per key lifetime (between
/// every 100 ms and every 10 minutes), so the table holds about one
/// lifetime of answers.
pub async fn purge_answer_keys_loop(app: Arc<App>) {
    let every = (app.settings.idempotency_key_ttl / 10)
        .clamp(Duration::from_millis(100), Duration::from_secs(600));
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match app.purge_answer_keys().await {
            Ok(0) => {}
            Ok(n) => tracing::debug!(purged = n, "expired Idempotency-Keys purged"),
            Err(e) => tracing::warn!(error = %e, "purging Idempotency-Keys failed"),
        }
    }
}

fn require_scope(agent: &Agent, scope: &str) -> Result<(), AppError> {
    if agent.has_scope(scope) {
        Ok(())
    } else {
        Err(AppError::forbidden(
            "missing_scope",
            format!("this agent token lacks the {scope:?} scope"),
        ))
    }
}

/// Reading needs `read`; an agent that may ask may also read its questions.
fn require_read(agent: &Agent) -> Result<(), AppError> {
    if agent.has_scope(SCOPE_ASK) {
        return Ok(());
    }
    require_scope(agent, SCOPE_READ)
}

fn not_found(id: &str) -> AppError {
    AppError::not_found(format!("no question {id}"))
}

/// Whether `user_id` may read and answer: a member of the question's room,
/// and its target when it is direct (the protocol's rule, with the server's
/// membership).
fn may_respond(conn: &Conn, stored: &StoredQuestion, user_id: &str) -> DbResult<bool> {
    let member = identity::is_member(conn, &stored.room_id, user_id)?;
    Ok(member && stored.question.is_eligible(user_id, member))
}

fn not_eligible() -> AppError {
    AppError::forbidden(
        "not_eligible",
        "you may not answer or read this question (not its target, or not a member of its room)",
    )
}

/// Reads a question, first expiring it (durably) if its deadline passed, so
/// no read ever shows an overdue question as pending. The flag says whether
/// this call expired it (the caller then announces it).
fn load_fresh(
    conn: &Conn,
    id: &str,
    now: DateTime<Utc>,
) -> DbResult<Option<(StoredQuestion, bool)>> {
    match questions::get(conn, id)? {
        Some(stored) => expire_loaded(conn, stored, now, None),
        None => Ok(None),
    }
}

/// [`load_fresh`] in the statement that checks a remembered token (401
/// when it was revoked).
fn load_fresh_checked(
    conn: &Conn,
    id: &str,
    now: DateTime<Utc>,
    token: Option<&str>,
) -> Result<Option<(StoredQuestion, bool)>, AppError> {
    let (live, stored) = questions::get_checked(conn, id, token)?;
    if !live {
        return Err(AppError::Revoked);
    }
    match stored {
        Some(stored) => Ok(expire_loaded(conn, stored, now, None)?),
        None => Ok(None),
    }
}

/// A question just read, expired first (durably) if its deadline passed.
/// `room`: its room, when the caller read it already.
fn expire_loaded(
    conn: &Conn,
    mut stored: StoredQuestion,
    now: DateTime<Utc>,
    room: Option<&identity::Room>,
) -> DbResult<Option<(StoredQuestion, bool)>> {
    if !stored.question.expire_if_due(now) {
        return Ok(Some((stored, false)));
    }
    let tx = conn.transaction()?;
    let json = serde_json::to_string(&stored.question).unwrap_or_default();
    let changed = match room {
        Some(room) => {
            record_resolution_in(&*tx, &stored.room_id, Some(room), &stored.question, &json)?
        }
        None => record_resolution(&*tx, &stored.room_id, &stored.question)?,
    };
    tx.commit()?;
    if changed.is_some() {
        Ok(Some((stored, true)))
    } else {
        Ok(questions::get(conn, &stored.question.id)?.map(|s| (s, false)))
    }
}

/// Writes a resolution (first one wins) and queues what it causes: the
/// room's webhook event (if its filter wants it) and a resolution push to every
/// device that got the question. Returns `None` if the question was already
/// terminal in the database (nothing written).
fn record_resolution(
    conn: &Conn,
    room_id: &str,
    q: &Question,
) -> DbResult<Option<questions::Resolved>> {
    let room = identity::room_by_id(conn, room_id)?;
    let json = serde_json::to_string(q).unwrap_or_default();
    record_resolution_in(conn, room_id, room.as_ref(), q, &json)
}

/// [`record_resolution`] with the room read already and `q` serialized
/// (`json`): on PostgreSQL one statement, which also wakes the other
/// instances' waiters when it commits.
fn record_resolution_in(
    conn: &Conn,
    room_id: &str,
    room: Option<&identity::Room>,
    q: &Question,
    json: &str,
) -> DbResult<Option<questions::Resolved>> {
    let event = room.and_then(|room| {
        let hook = room.webhook.as_ref()?;
        let room_ref = RoomRef {
            code: room.code.clone(),
            name: room.name.clone(),
        };
        let event = WebhookEvent::for_question(q, room_ref)?;
        hook.wants(&event.event).then(|| {
            let body = serde_json::to_string(&event).unwrap_or_default();
            (ids::new_id("d"), event.event, body)
        })
    });
    let queued = event
        .as_ref()
        .map(|(id, name, body)| questions::QueuedEvent {
            id,
            event: name,
            body,
        });
    let resolved = questions::resolve(conn, q, json, room_id, queued, now_ms())?;
    if resolved.is_some() {
        tracing::info!(question = %q.id, state = q.state.as_str(), "resolved");
    }
    Ok(resolved)
}
