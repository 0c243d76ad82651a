//! Database round trips counted by the operation that made them, so the
//! cost of each request kind is a number (`/metrics`:
//! `qp_db_round_trips_total{operation}`, and the test that pins the cycle's
//! figure, `tests/round_trips.rs`) rather than a guess.
//!
//! A round trip is one statement sent and answered: on PostgreSQL one wait
//! on the network and a backend process (BEGIN and COMMIT included); on
//! SQLite one statement run in-process. Preparing a statement the first
//! time a connection sees it is not counted (once per connection). Each
//! backend counts the statements its thread sends; [`super::Db::run_as`]
//! reads the count around a job.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// What a database job does, as `/metrics` labels it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Ask,
    Wait,
    Answer,
    Cancel,
    Auth,
    PushClaim,
    Other,
}

impl Op {
    pub const ALL: [Op; 7] = [
        Op::Ask,
        Op::Wait,
        Op::Answer,
        Op::Cancel,
        Op::Auth,
        Op::PushClaim,
        Op::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Op::Ask => "ask",
            Op::Wait => "wait",
            Op::Answer => "answer",
            Op::Cancel => "cancel",
            Op::Auth => "auth",
            Op::PushClaim => "push_claim",
            Op::Other => "other",
        }
    }
}

/// Round trips so far, per operation (one instance's).
#[derive(Default)]
pub struct RoundTrips([AtomicU64; Op::ALL.len()]);

impl RoundTrips {
    pub fn get(&self, op: Op) -> u64 {
        self.0[op as usize].load(Ordering::Relaxed)
    }

    pub(super) fn add(&self, op: Op, n: u64) {
        if n > 0 {
            self.0[op as usize].fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Every operation's count, in [`Op::ALL`]'s order.
    pub fn snapshot(&self) -> [(Op, u64); Op::ALL.len()] {
        Op::ALL.map(|op| (op, self.get(op)))
    }
}

thread_local! {
    /// Statements sent by this thread (a database thread) so far.
    static SENT: Cell<u64> = const { Cell::new(0) };
}

/// Counts one statement sent by this thread (the backends call it).
pub(crate) fn sent_one() {
    SENT.with(|n| n.set(n.get() + 1));
}

/// Statements sent by this thread so far.
pub(crate) fn sent() -> u64 {
    SENT.with(Cell::get)
}
