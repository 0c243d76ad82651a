//! The retention sweep of `qp serve`: every [`every`] it deletes what the
//! retention settings say is old (`store::retention`), one small batch per
//! database job, so asks and answers queued meanwhile run between batches.
//! On PostgreSQL every instance sweeps; the deletes are idempotent, and
//! concurrent ones only find less to delete.

use std::sync::Arc;
use std::time::Duration;

use crate::app::App;
use crate::store::retention::{Plan, Purged};

/// How often the sweep runs: sixty expiry sweeps (a minute by default).
pub fn every(app: &App) -> Duration {
    app.settings.sweep_interval.saturating_mul(60)
}

pub async fn retention_loop(app: Arc<App>) {
    let mut tick = tokio::time::interval(every(&app));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match sweep(&app).await {
            Ok(purged) if purged.is_empty() => {}
            Ok(purged) => tracing::info!(?purged, "retention sweep deleted old rows"),
            Err(e) => tracing::warn!(error = %e, "retention sweep failed"),
        }
    }
}

/// One full sweep: batches until nothing old is left.
pub async fn sweep(app: &App) -> Result<Purged, crate::store::DbError> {
    let plan = Arc::new(Plan::of(
        &app.settings.retention,
        app.settings.idempotency_key_ttl,
        crate::store::now_ms(),
    ));
    let mut purged = Purged::new();
    loop {
        let p = plan.clone();
        let Some((table, n)) = app.db.run(move |conn| p.step(conn)).await? else {
            return Ok(purged);
        };
        *purged.entry(table).or_default() += n;
        tokio::task::yield_now().await;
    }
}
