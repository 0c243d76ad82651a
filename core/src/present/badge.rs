//! The app icon's badge: how many questions wait for this person here.
//! iOS sets it on each notification (`content.badge`), Android on each
//! notification and its room's summary (`setNumber`, the launcher's dot
//! count). One count for both, so the two platforms never disagree.

use crate::feed::FeedCell;

/// The questions the person can still answer on this phone: pending and
/// not answered (an answer queued offline counts as given).
pub fn pending_count(cells: &[FeedCell]) -> u32 {
    cells.iter().filter(|c| c.answerable).count() as u32
}
