//! The worker's lease and the transports' timeouts, derived from each
//! other, all counted from the claim (where the lease starts): loading the
//! claimed batch, the worst case of one push (a credential fetch, the wait
//! for a stream, the answer), then recording its outcome fit in the lease,
//! so no other instance claims a job (and sends it again) while the first
//! is still trying. The worker also cuts any send off at [`send_cap`] after
//! the claim, a net under transports to come and slow loads.

use std::time::Duration;

/// The most one outcome write takes: up to three tries (twice again,
/// 0.5 s and 1 s apart), each waiting for a lock at most
/// `push::WRITE_TRY_WAIT`, and the writing itself ([`RECORD_WORK`]); the
/// push worker's test checks the sum.
pub const OUTCOME_WRITE: Duration = Duration::from_secs(5);

/// What [`OUTCOME_WRITE`] keeps for writing, once the lock waits and the
/// pauses are counted: one transaction of up to [`RECORD_WORK_OUTCOMES`]
/// outcomes on a loaded database.
pub const RECORD_WORK: Duration = Duration::from_secs(2);

/// The most outcomes one write is budgeted for ([`RECORD_WORK`]).
pub const RECORD_WORK_OUTCOMES: usize = 2048;

/// The outcome writes one answered push may wait for, its own included:
/// outcomes are written one batch (at most `batch`) at a time, in the
/// order they come; when a push's outcome comes, a write may be under way
/// (it waits for it), and the outcomes written or waiting before it are
/// at most `in_flight - 1` (each holds its in-flight slot until written):
/// the write under way, then enough batches to reach it.
pub const fn outcome_writes(in_flight: usize, batch: usize) -> u32 {
    let ahead = in_flight.saturating_sub(1);
    1 + ahead.div_ceil(if batch == 0 { 1 } else { batch }) as u32
}

/// The time from a send's end (at the latest the claim's cut-off) to its
/// outcome written: the worst case of [`outcome_writes`] writes of
/// [`OUTCOME_WRITE`] each, under the worker's limits (checked by the test
/// below).
pub const RECORD_MARGIN: Duration = Duration::from_secs(10);

/// The time from the claim to a push's send starting: the claim itself
/// and loading the batch's devices and question.
pub const CLAIM_MARGIN: Duration = Duration::from_secs(5);

/// How long claimed jobs stay this worker's (`push_lease_ms`'s default).
pub use crate::config::push::DEFAULT_PUSH_LEASE as LEASE;

/// The shortest lease `push_lease_ms` accepts. The lease drives the
/// budget: under a lease shorter than [`LEASE`] a send is cut off sooner
/// ([`send_cap`]; the server warns at start), but the cut-off leaves a
/// quarter of such a lease for recording the outcome, which must hold at
/// least one outcome write's lock wait (`push::WRITE_TRY_WAIT`).
pub use crate::config::push::MIN_PUSH_LEASE as MIN_LEASE;

/// The longest one push may take through each transport.
pub fn transports_worst_case() -> [(&'static str, Duration); 3] {
    [
        ("apns", super::apns::WORST_CASE),
        ("fcm", super::fcm::WORST_CASE),
        ("web_push", super::webpush::SEND_TIMEOUT),
    ]
}

/// How long after the claim the worker lets one send run under `lease`
/// before giving the job back as a retry: what is left once its outcome is
/// recorded (a quarter of a lease shorter than 40 s: `push_lease_ms` set
/// low, for a faster take-over after a crash, or in tests).
pub fn send_cap(lease: Duration) -> Duration {
    lease.saturating_sub(RECORD_MARGIN.min(lease / 4))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Raising a transport's timeout (or the pool's wait) without the
    /// lease fails here: the claim could outlive its lease, and another
    /// instance would send the push again meanwhile. Counted from the
    /// claim, as the lease is: loading the batch, the send, recording.
    #[test]
    fn one_claim_finishes_or_gives_its_job_back_inside_its_lease() {
        let limits = super::super::WorkerLimits::default();
        let lease = Duration::from_millis(limits.lease_ms as u64);
        assert_eq!(lease, LEASE);
        // Recording: every write an outcome may queue behind, its own
        // included, each at its worst.
        let batch = super::super::WRITE_BATCH;
        let writes = outcome_writes(limits.max_in_flight, batch);
        assert!(
            OUTCOME_WRITE * writes <= RECORD_MARGIN,
            "{} in flight written {batch} at a time: an outcome may wait for {writes} writes of \
             {OUTCOME_WRITE:?}, more than the {RECORD_MARGIN:?} the lease keeps for recording",
            limits.max_in_flight
        );
        assert!(
            batch <= RECORD_WORK_OUTCOMES,
            "a write of {batch} outcomes is budgeted for {RECORD_WORK_OUTCOMES}"
        );
        for (transport, worst) in transports_worst_case() {
            let from_claim = CLAIM_MARGIN + worst + RECORD_MARGIN;
            assert!(
                from_claim <= lease,
                "{transport}: loading {CLAIM_MARGIN:?} + worst case {worst:?} + recording {RECORD_MARGIN:?} exceeds the lease {lease:?}"
            );
            // The worker's own cut-off (from the claim) never cuts a send
            // its transport would still finish in time, and leaves the
            // recording its time.
            assert!(send_cap(lease) >= CLAIM_MARGIN + worst, "{transport}");
            assert!(send_cap(lease) + RECORD_MARGIN <= lease, "{transport}");
        }
        // The shortest lease still leaves one outcome write's wait.
        assert_eq!(send_cap(MIN_LEASE), Duration::from_millis(1500));
        assert!(MIN_LEASE - send_cap(MIN_LEASE) >= super::super::WRITE_TRY_WAIT);
    }

    /// The count of writes an outcome may wait for: the one under way,
    /// then as many batches as the outcomes before it fill.
    #[test]
    fn an_outcome_waits_for_the_write_under_way_and_the_batches_before_it() {
        assert_eq!(outcome_writes(1, 1024), 1, "no other outcome to wait for");
        assert_eq!(outcome_writes(2, 1024), 2);
        assert_eq!(outcome_writes(1024, 1024), 2);
        assert_eq!(outcome_writes(1025, 1024), 2);
        assert_eq!(outcome_writes(1026, 1024), 3);
        assert_eq!(outcome_writes(2048, 1024), 3);
        assert_eq!(outcome_writes(2048, 2048), 2);
    }
}
