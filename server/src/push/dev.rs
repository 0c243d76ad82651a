//! The local development transport, for the terminal device (`qp device`):
//! it encodes exactly what a phone would get (the APNs payload for a dev
//! device registered as `ios`, the FCM data map for `android`), keeps it in
//! the database's dev inbox, and wakes the device's long-poll
//! (`GET /api/dev/inbox`).

use std::sync::Arc;

use super::{PushFuture, PushMessage, PushOutcome, PushTransport};
use crate::app::App;
use crate::store::now_ms;

pub struct DevTransport {
    app: Arc<App>,
}

impl DevTransport {
    pub fn new(app: Arc<App>) -> Self {
        DevTransport { app }
    }

    async fn deliver(&self, m: &PushMessage) -> PushOutcome {
        let encoded = if m.device.app_id == "android" {
            m.fcm_data()
                .map(|data| ("fcm", serde_json::to_string(&data).unwrap_or_default()))
        } else {
            m.apns_payload().map(|json| ("apns", json))
        };
        let (format, payload) = match encoded {
            Ok(e) => e,
            Err(e) => return PushOutcome::Failed(e),
        };
        let device_id = m.device.id.clone();
        let stored = self
            .app
            .db
            .run(move |conn| {
                crate::store::dev_inbox::put(conn, &device_id, format, &payload, now_ms())?;
                crate::store::events::notify_dev_inbox(conn)
            })
            .await;
        match stored {
            Ok(_) => {
                self.app.dev_wake.notify_waiters();
                PushOutcome::Sent
            }
            Err(e) => PushOutcome::Retry {
                reason: e.to_string(),
                after: None,
            },
        }
    }
}

impl PushTransport for DevTransport {
    fn send<'a>(&'a self, message: &'a PushMessage) -> PushFuture<'a> {
        Box::pin(self.deliver(message))
    }
}
