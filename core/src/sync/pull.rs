//! Pulling from the server: on a device that holds no question yet, the
//! newest page of the person's history (so a new phone's feed shows what
//! was answered, by whom, what expired); then the pending list, then a
//! refresh of every question held here that is no longer pending there (to
//! learn who answered, or that it expired or was cancelled). Pushes are
//! merged the same way: terminal states never revert; the server is the
//! truth.

use std::collections::HashSet;

use super::{server_message, PhoneClient, Reply, SyncError};
use crate::http::HttpMethod;
use crate::protocol::Question;
use crate::store::Store;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncReport {
    /// Questions pending on the server for this user.
    pub pending: u32,
    /// Questions that resolved (or vanished) since: withdraw their notifications.
    pub withdraw: Vec<String>,
}

pub async fn sync(store: &Store, client: &PhoneClient) -> Result<SyncReport, SyncError> {
    // Once per empty store: a person with nothing asked yet keeps an empty
    // store, and would otherwise have the history read on every sync.
    if !store.holds_questions()?
        && store.state(HISTORY_READ)?.is_none()
        && history(store, client).await?
    {
        store.set_state(HISTORY_READ, "true")?;
    }
    let listed = match client
        .send(HttpMethod::Get, "/api/questions/pending", None, None)
        .await?
    {
        Reply::Status(200, bytes) => {
            #[derive(serde::Deserialize)]
            struct Pending {
                questions: Vec<Question>,
            }
            serde_json::from_slice::<Pending>(&bytes)
                .map_err(|e| SyncError::Network(format!("unreadable pending list: {e}")))?
                .questions
        }
        Reply::Status(401, bytes) => return Err(SyncError::Unauthorized(server_message(&bytes))),
        Reply::Status(status, bytes) => {
            return Err(SyncError::Server {
                status,
                message: server_message(&bytes),
            })
        }
        Reply::Unreachable(e) => return Err(SyncError::Network(e)),
    };
    let mut report = SyncReport {
        pending: listed.len() as u32,
        withdraw: Vec::new(),
    };
    let on_server: HashSet<String> = listed.iter().map(|q| q.id.clone()).collect();
    for q in &listed {
        store.record_server(q)?;
    }
    for id in store.pending_ids()? {
        if on_server.contains(&id) {
            continue;
        }
        match refresh(store, client, &id).await? {
            Refreshed::Resolved { newly: true } | Refreshed::Gone => report.withdraw.push(id),
            _ => {} // still pending, or the next sync
        }
    }
    Ok(report)
}

/// The store's record that its first history read is done (kept with the
/// session's records, so signing out, which erases them, reads it again).
const HISTORY_READ: &str = "history_read";

/// The newest page of the person's history (`GET /api/questions/history`),
/// recorded as the server has it: resolved cells with the answer and who
/// gave it. Best effort: a server without the endpoint (older) or failing
/// now leaves the feed to the pending list; only a revoked
/// token stops the sync. True when the server answered for good (the page,
/// or no such endpoint): it need not be read again.
async fn history(store: &Store, client: &PhoneClient) -> Result<bool, SyncError> {
    #[derive(serde::Deserialize)]
    struct Page {
        questions: Vec<Question>,
    }
    match client
        .send(HttpMethod::Get, "/api/questions/history", None, None)
        .await?
    {
        Reply::Status(200, bytes) => {
            // Only a page that could be read counts as read: an unreadable
            // body (a proxy's error page, a cut-off read) is tried again.
            let Ok(page) = serde_json::from_slice::<Page>(&bytes) else {
                return Ok(false);
            };
            for q in &page.questions {
                store.record_server(q)?;
            }
            Ok(true)
        }
        Reply::Status(401, bytes) => Err(SyncError::Unauthorized(server_message(&bytes))),
        Reply::Status(404, _) => Ok(true),
        _ => Ok(false),
    }
}

/// What the server said of one question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refreshed {
    /// Resolved there, and so here now; `newly` when this call made it so.
    Resolved { newly: bool },
    /// Still pending there.
    Pending,
    /// Not this user's to see any more (left the room, deleted): forgotten.
    Gone,
    /// The server could not say now (unreachable, an error): why.
    Unavailable(String),
}

/// Reads one question from the server and records what it says: the only
/// way a held question becomes terminal (a push's resolution is a claim).
pub async fn refresh(
    store: &Store,
    client: &PhoneClient,
    id: &str,
) -> Result<Refreshed, SyncError> {
    let reply = client
        .send(HttpMethod::Get, &format!("/api/questions/{id}"), None, None)
        .await?;
    Ok(match reply {
        Reply::Status(200, bytes) => match serde_json::from_slice::<Question>(&bytes) {
            // The server answered for another question: believe nothing.
            Ok(q) if q.id != id => {
                Refreshed::Unavailable("the server sent another question".into())
            }
            Ok(q) => {
                let newly = store.record_server(&q)?;
                if q.state.is_terminal() {
                    Refreshed::Resolved { newly }
                } else {
                    Refreshed::Pending
                }
            }
            Err(e) => Refreshed::Unavailable(format!("unreadable question: {e}")),
        },
        Reply::Status(403 | 404, _) => {
            store.forget_question(id)?;
            Refreshed::Gone
        }
        Reply::Status(401, bytes) => return Err(SyncError::Unauthorized(server_message(&bytes))),
        Reply::Status(status, bytes) => Refreshed::Unavailable(format!(
            "the server answered {status}: {}",
            server_message(&bytes)
        )),
        Reply::Unreachable(e) => Refreshed::Unavailable(e),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::http::{HttpResponse, Scripted, ScriptedTransport};
    use crate::store::StoreMode;
    use crate::sync::TokenProvider;

    struct Token;
    impl TokenProvider for Token {
        fn token(&self) -> Option<String> {
            Some("qpu_test".into())
        }
    }

    /// A 200 whose body is not a page (a proxy's error page, a cut-off
    /// read) does not count as the history read: the next sync reads it
    /// again. Before, it was marked read and the new phone's feed never
    /// showed the person's history.
    #[test]
    fn an_unreadable_history_page_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.sqlite"), StoreMode::App).unwrap();
        let http = Arc::new(ScriptedTransport::new(|r| {
            if r.path().starts_with("/api/questions/history") {
                Scripted::Reply(HttpResponse {
                    status: 200,
                    body: b"<html>gateway</html>".to_vec(),
                })
            } else {
                Scripted::json(200, &serde_json::json!({"questions": []}))
            }
        }));
        let client = PhoneClient::new(
            "http://127.0.0.1:9",
            "u_me",
            Arc::new(Token),
            http.clone(),
            Duration::from_secs(5),
        );
        let run = |f| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(f)
        };
        run(sync(&store, &client)).unwrap();
        run(sync(&store, &client)).unwrap();
        assert_eq!(store.state(HISTORY_READ).unwrap(), None);
        assert_eq!(
            http.count(HttpMethod::Get, "/api/questions/history"),
            2,
            "an unreadable page was taken as the history read"
        );
    }
}
