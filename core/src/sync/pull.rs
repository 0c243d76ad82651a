//! Pulling from the server: the pending list, then a refresh of every
//! question held here that is no longer pending there (to learn who answered,
//! or that it expired or was cancelled). Pushes are merged the same way:
//! terminal states never revert; the server is the truth.

use std::collections::HashSet;

use super::{server_message, PhoneClient, Reply, SyncError};
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
    let listed = match client
        .send(reqwest::Method::GET, "/api/questions/pending", None, None)
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
        match client
            .send(
                reqwest::Method::GET,
                &format!("/api/questions/{id}"),
                None,
                None,
            )
            .await?
        {
            Reply::Status(200, bytes) => {
                if let Ok(q) = serde_json::from_slice::<Question>(&bytes) {
                    if store.record_server(&q)? {
                        report.withdraw.push(id);
                    }
                }
            }
            Reply::Status(403 | 404, _) => {
                // Not ours to see any more (left the room, deleted).
                store.forget_question(&id)?;
                report.withdraw.push(id);
            }
            Reply::Status(..) | Reply::Unreachable(_) => {} // next sync
        }
    }
    Ok(report)
}
