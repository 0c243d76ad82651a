//! One transport per platform: a device's `platform` picks it.

use std::sync::Arc;

use super::{PushFuture, PushMessage, PushOutcome, PushTransport};

#[derive(Default, Clone)]
pub struct PlatformRouter {
    pub ios: Option<Arc<dyn PushTransport>>,
    pub android: Option<Arc<dyn PushTransport>>,
    pub dev: Option<Arc<dyn PushTransport>>,
    /// Browsers (Web Push).
    pub web: Option<Arc<dyn PushTransport>>,
}

impl PushTransport for PlatformRouter {
    fn platforms(&self) -> Option<Vec<&'static str>> {
        Some(
            [
                ("ios", &self.ios),
                ("android", &self.android),
                ("dev", &self.dev),
                ("web", &self.web),
            ]
            .into_iter()
            .filter_map(|(p, t)| t.is_some().then_some(p))
            .collect(),
        )
    }

    fn send<'a>(&'a self, m: &'a PushMessage) -> PushFuture<'a> {
        let t = match m.device.platform.as_str() {
            "ios" => self.ios.as_ref(),
            "android" => self.android.as_ref(),
            "dev" => self.dev.as_ref(),
            "web" => self.web.as_ref(),
            _ => None,
        };
        match t {
            Some(t) => t.send(m),
            None => {
                let platform = m.device.platform.clone();
                Box::pin(async move {
                    PushOutcome::Retry {
                        reason: format!("no {platform} transport configured"),
                        // The longest wait between tries: a gateway
                        // configured meanwhile (and a restart) still
                        // delivers it, until its attempts or deadline end.
                        after: Some(super::RETRY_AFTER_MAX),
                    }
                })
            }
        }
    }
}
