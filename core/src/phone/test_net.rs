//! The network of the phone's unit tests: stand-in servers registered under
//! a base URL of their own (a loopback address nothing listens on, never
//! connected to), reached through one scripted transport. A URL no server
//! is registered under fails as unreachable.

use std::sync::{Arc, Mutex};

use crate::http::{HttpRequest, HttpTransport, Scripted, ScriptedTransport};

type Handler = Arc<dyn Fn(&HttpRequest) -> Scripted + Send + Sync>;

static SERVERS: Mutex<Vec<(String, Handler)>> = Mutex::new(Vec::new());

/// Registers a stand-in server; returns its base URL.
pub(super) fn serve(handler: impl Fn(&HttpRequest) -> Scripted + Send + Sync + 'static) -> String {
    let mut servers = SERVERS.lock().unwrap_or_else(|p| p.into_inner());
    let url = format!("http://127.0.0.1:{}", 20_000 + servers.len());
    servers.push((url.clone(), Arc::new(handler)));
    url
}

/// The transport every test phone uses.
pub(super) fn net() -> Arc<dyn HttpTransport> {
    Arc::new(ScriptedTransport::new(|request| {
        let handler = SERVERS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|(url, _)| {
                request.url.starts_with(url.as_str()) && request.url[url.len()..].starts_with('/')
            })
            .map(|(_, h)| h.clone());
        match handler {
            Some(h) => h(request),
            None => Scripted::unreachable(),
        }
    }))
}
