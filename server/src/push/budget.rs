//! The worker's lease and the transports' timeouts, derived from each
//! other, all counted from the claim (where the lease starts): loading the
//! claimed batch, the worst case of one push (a credential fetch, the wait
//! for a stream, the answer), then recording its outcome fit in the lease,
//! so no other instance claims a job (and sends it again) while the first
//! is still trying. The worker also cuts any send off at [`send_cap`] after
//! the claim, a net under transports to come and slow loads.

use std::time::Duration;

/// The time a batch of outcomes may take to be written after the last
/// answer: up to four tries (three again, 0.5 s, 1 s and 2 s apart), each
/// waiting for a lock at most `push::WRITE_TRY_WAIT`, and the writing
/// itself ([`RECORD_WORK`]); the push worker's test checks the sum.
pub const RECORD_MARGIN: Duration = Duration::from_secs(10);

/// What [`RECORD_MARGIN`] keeps for writing, once the lock waits and the
/// pauses are counted: one transaction of up to 1,024 outcomes on a
/// loaded database.
pub const RECORD_WORK: Duration = Duration::from_secs(4);

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
        let lease = Duration::from_millis(super::super::WorkerLimits::default().lease_ms as u64);
        assert_eq!(lease, LEASE);
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
}
