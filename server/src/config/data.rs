//! The data's lifecycle: whether start-up migrates the database, and how
//! long each kind of finished row is kept (the defaults are the store's,
//! [`crate::store::retention::Retention::default`]).

use std::time::Duration;

use crate::store::retention::Retention;
use crate::store::Migration;

use super::{ConfigError, PartialSettings};

/// The largest `retention_batch_size` (rows deleted per statement).
pub const MAX_RETENTION_BATCH_SIZE: usize = 100_000;

/// `no_migrate`: refuse a database that lacks migrations, else apply them.
pub(super) fn migration(m: &PartialSettings) -> Migration {
    if m.no_migrate {
        Migration::Require
    } else {
        Migration::Apply
    }
}

/// The retention settings: days (0 keeps forever) and the batch size.
pub(super) fn retention(m: &PartialSettings) -> Result<Retention, ConfigError> {
    let d = Retention::default();
    let days = |v: Option<u64>, def: Option<Duration>| match v {
        None => def,
        Some(0) => None,
        Some(n) => Some(Duration::from_secs(n.saturating_mul(86_400))),
    };
    let batch_size = m.retention_batch_size.unwrap_or(d.batch_size);
    if !(1..=MAX_RETENTION_BATCH_SIZE).contains(&batch_size) {
        return Err(ConfigError::OutOfRange {
            keys: &["retention_batch_size"],
            rule: format!("1 to {MAX_RETENTION_BATCH_SIZE}"),
        });
    }
    Ok(Retention {
        questions: days(m.retention_questions_days, d.questions),
        push_jobs: days(m.retention_push_jobs_days, d.push_jobs),
        webhook_deliveries: days(m.retention_webhook_deliveries_days, d.webhook_deliveries),
        dev_inbox: days(m.retention_dev_inbox_days, d.dev_inbox),
        batch_size,
    })
}
