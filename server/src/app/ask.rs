//! The asker's side: ask, read, wait (the long-poll), list and cancel, as
//! an agent with its scopes.

use std::time::Duration;

use chrono::{DateTime, Utc};
use qp_core::protocol::client_text::signed_in_display_name;
use qp_core::protocol::limits::LIST_RECENT_WINDOW_SECS;
use qp_core::protocol::{
    normalize_ask, time, AskContext, AskedQuestion, Asker, ConsentRequest, NormalizedAsk, Question,
    QuestionState, RoomRef,
};
use serde_json::Value;

use super::committed::Committed;
use super::resolution::{load_fresh, load_fresh_checked, not_found, record_resolution};
use super::{App, AppError};
use crate::ids;
use crate::store::identity::{Agent, SCOPE_ASK, SCOPE_READ};
use crate::store::questions;
use crate::store::round_trips::Op;
use crate::store::{now_ms, Conn, DbError, DbResult};

impl App {
    /// Asks, and says how many devices the push was queued for: 0 is
    /// logged at warn too (no one can receive it; it will sit pending).
    pub async fn ask(
        &self,
        agent: Agent,
        room_code: String,
        body: Value,
    ) -> Result<AskedQuestion, AppError> {
        require_scope(&agent, SCOPE_ASK)?;
        self.check_ask_rate(&agent.id)?;
        let max_pending = self.settings.max_pending_per_agent as i64;
        let sign_in_audience = self.settings.sign_in_agents_ask;
        let check = agent.check_token.clone();
        let agent_check = check.clone();
        let (q, platforms) = self
            .run_announcing(Op::Ask, move |conn, done| -> Result<(Question, Vec<(String, usize)>), AppError> {
                let now = time::now();
                let ctx = AskContext {
                    now,
                    default_target_user_id: Some(agent.owner_user_id.clone()),
                };
                // Judged now, reported after the room's checks.
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
                if place.signed_in_by.is_some() {
                    if let Some((field, message)) = crate::sign_in_policy::ask_refusal(
                        sign_in_audience,
                        &agent.owner_user_id,
                        ask.target_user_id.as_deref(),
                    ) {
                        return Err(AppError::Forbidden { code: "signed_in_agent", message, field: Some(field) });
                    }
                }
                if let Some(target) = &ask.target_user_id {
                    if !place.target_is_member {
                        return Err(AppError::invalid(
                            "target_user_id",
                            "not_a_member",
                            format!("target_user_id: user {target} is not a member of room {}", room.code),
                        ));
                    }
                }
                let at = Placement {
                    room_id: room.id.clone(),
                    room: RoomRef { code: room.code.clone(), name: room.name.clone() },
                    asker: Asker {
                        handle: Some(agent.handle.clone()),
                        kind: "agent".into(),
                        id: agent.id.clone(),
                        display_name: match &place.signed_in_by {
                            Some(person) => signed_in_display_name(&agent.name, person),
                            None => agent.name.clone(),
                        },
                    },
                    max_pending,
                    consent: None,
                };
                match store_asked(conn, done, ask, now, at)? {
                    None => Err(AppError::rate_limited(
                        "quota_exceeded",
                        format!("this agent already has {max_pending} pending questions; wait for some to resolve or cancel them"),
                        60,
                    )),
                    Some((q, pushes)) => {
                        let platforms = if pushes > 0 {
                            crate::store::deliveries::question_pushes_by_platform(conn, &q.id)?
                        } else {
                            Vec::new()
                        };
                        Ok((q, platforms))
                    }
                }
            })
            .await
            .map_err(|e| self.forget_if_revoked(e, agent_check.as_deref()))?;
        let agent_id = q.asker.as_ref().map(|a| a.id.as_str()).unwrap_or("");
        // A device whose platform has no push route here (an iPhone on a
        // server without APNs) has its job queued, but is not reached from
        // here: on SQLite the worker gives it up; on PostgreSQL it is left
        // to an instance with a route, which this one cannot see, so it is
        // not counted either way.
        let (routed, unrouted): (Vec<_>, Vec<_>) = platforms.iter().partition(|(platform, _)| {
            crate::config::push::platform_has_route(&self.settings, platform)
        });
        let pushes: usize = routed.iter().map(|(_, n)| n).sum();
        let unrouted: Vec<String> = unrouted
            .iter()
            .map(|(platform, n)| format!("{n} {platform}"))
            .collect();
        let shared_queue = matches!(self.settings.db, crate::store::Database::Postgres(_));
        if !unrouted.is_empty() && shared_queue {
            tracing::warn!(
                question = %q.id,
                agent = %agent_id,
                devices = %unrouted.join(", "),
                given_up_after_s = crate::store::deliveries::UNROUTED_AFTER.as_secs(),
                "no push route here for these devices' platform: left to another instance \
                 with one (given up if none takes them in time)"
            );
        } else if !unrouted.is_empty() {
            tracing::warn!(
                question = %q.id,
                agent = %agent_id,
                devices = %unrouted.join(", "),
                "no push route for this device's platform: these devices are not notified \
                 (configure APNs for ios, FCM for android, Web Push for web)"
            );
        }
        if pushes == 0 && !platforms.is_empty() {
            // (No device at all was already said when it was stored.)
            tracing::warn!(question = %q.id, agent = %agent_id, "asked, but no device can receive it: no push route for their devices' platform");
        } else {
            tracing::info!(question = %q.id, agent = %agent_id, pushed_to_devices = pushes, "asked");
        }
        Ok(AskedQuestion {
            question: q,
            pushed_to_devices: Some(pushes as u64),
        })
    }

    /// Runs `f` as the database job of a question the server asks itself
    /// (an OAuth consent): `f` checks what it must and stores the question
    /// through [`Asking::ask`], the path of every question, and the job
    /// announces it as it does an agent's.
    pub async fn asking<T, E, F>(&self, f: F) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<DbError> + Send + 'static,
        F: FnOnce(&Conn, &mut Asking<'_>) -> Result<T, E> + Send + 'static,
    {
        self.run_announcing(Op::Ask, move |conn, done| f(conn, &mut Asking { done }))
            .await
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
        self.run_announcing(op, move |conn, done| -> Result<_, AppError> {
            let Some((stored, expired_now)) =
                load_fresh_checked(conn, &id, time::now(), check.as_deref())?
            else {
                return Ok(Err(not_found(&id)));
            };
            if expired_now {
                done.changed(stored.question.clone());
            }
            Ok(if stored.agent_id == agent_id {
                Ok(stored.question)
            } else {
                Err(not_found(&id))
            })
        })
        .await
        .map_err(|e| self.forget_if_revoked(e, agent.check_token.as_deref()))?
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
        self.run_announcing(Op::Cancel, move |conn, done| -> Result<_, AppError> {
            let now = time::now();
            let Some((stored, expired_now)) = load_fresh(conn, &id, now)? else {
                return Ok(Err(not_found(&id)));
            };
            if expired_now {
                done.changed(stored.question.clone());
            }
            if stored.agent_id != agent_id {
                return Ok(Err(not_found(&id)));
            }
            let mut q = stored.question;
            if q.cancel(now).is_err() {
                return Ok(Err(AppError::already_resolved(q)));
            }
            let tx = conn.transaction()?;
            let resolved = record_resolution(&*tx, &stored.room_id, &q)?;
            tx.commit()?;
            match resolved {
                Some(r) => {
                    done.resolved(q.clone(), r);
                    Ok(Ok(q))
                }
                None => {
                    let current = questions::get(conn, &id)?.map(|s| s.question);
                    Ok(Err(AppError::already_resolved(current.unwrap_or(q))))
                }
            }
        })
        .await?
    }
}

/// Where a question is asked and who asks it, its ask's checks passed.
pub struct Placement {
    pub room_id: String,
    pub room: RoomRef,
    /// The asker as the question shows it; its `id` is the agent whose
    /// pending quota and list the question counts in.
    pub asker: Asker,
    /// That agent's pending quota (`max_pending_per_agent`).
    pub max_pending: i64,
    /// What a consent question asks, for responders that word it themselves.
    pub consent: Option<ConsentRequest>,
}

/// A database job's way to ask (see [`App::asking`]): what it stores is
/// announced when the job ends.
pub struct Asking<'a> {
    done: &'a mut Committed,
}

impl Asking<'_> {
    /// Stores `ask` as a question asked at `place` (see `store_asked`);
    /// none: over the asker's pending quota, nothing stored.
    pub fn ask(
        &mut self,
        conn: &Conn,
        ask: NormalizedAsk,
        now: DateTime<Utc>,
        place: Placement,
    ) -> DbResult<Option<(Question, usize)>> {
        store_asked(conn, self.done, ask, now, place)
    }
}

/// The one place a question is stored as asked, whoever asks it: the ask
/// becomes a question at `place`, written with its push jobs in one
/// transaction within the asker's pending quota (none: over it, nothing
/// written), and recorded in `done`, so the job that stored it wakes the
/// feeds of its people and the push worker right after the commit, even if
/// its request is gone by then. Returns it with the devices its push was
/// queued for; 0 is logged at warn (nobody can receive it; it will sit
/// pending).
fn store_asked(
    conn: &Conn,
    done: &mut Committed,
    ask: NormalizedAsk,
    now: DateTime<Utc>,
    place: Placement,
) -> DbResult<Option<(Question, usize)>> {
    let mut q = ask.into_question(ids::new_id("q"), now);
    q.room = Some(place.room);
    q.consent = place.consent;
    let agent_id = place.asker.id.clone();
    q.asker = Some(place.asker);
    let stored = questions::insert_asked(
        conn,
        &q,
        &place.room_id,
        &agent_id,
        place.max_pending,
        now_ms(),
    )?;
    let questions::Asked::Queued { pushes } = stored else {
        return Ok(None);
    };
    if pushes > 0 {
        done.pushes_queued();
        tracing::debug!(question = %q.id, agent = %agent_id, queued_pushes = pushes, "stored");
    } else {
        tracing::warn!(question = %q.id, agent = %agent_id, "asked, but no device can receive it: nobody eligible has a device registered for pushes");
    }
    done.asked(&q);
    Ok(Some((q, pushes)))
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
