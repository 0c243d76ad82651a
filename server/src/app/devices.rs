//! A person's devices and agents, from their side (a user token): register
//! a device for pushes (tied to the token registering it), remove one, read
//! a terminal device's inbox (a long-poll), and list or remove the agents
//! they own.

use std::time::Duration;

use super::pairing::DeviceFields;
use super::{App, AppError};
use crate::store::dev_inbox::{self, DevPush};
use crate::store::identity::{self, Agent, Device, User};
use crate::store::offboard::{self, Subject};

impl App {
    /// Registers (or updates, for a known push token) `user`'s device,
    /// tied to the token with hash `token_hash`: revoking that token
    /// removes the device and its pushes.
    pub async fn register_device(
        &self,
        user: &User,
        token_hash: Option<String>,
        fields: DeviceFields,
    ) -> Result<Device, AppError> {
        let user_id = user.id.clone();
        let device = self
            .db
            .run(move |conn| -> Result<_, AppError> {
                Ok(identity::register_device(
                    conn,
                    &user_id,
                    token_hash.as_deref(),
                    &fields.registration(),
                )?)
            })
            .await?;
        tracing::info!(user = %user.id, device = %device.id, platform = %device.platform, "device registered");
        Ok(device)
    }

    /// Removes one of `user`'s devices (404 for anyone else's).
    pub async fn remove_device(&self, user: &User, id: String) -> Result<(), AppError> {
        let (user_id, device) = (user.id.clone(), id.clone());
        let deleted = self
            .db
            .run(move |conn| identity::delete_device(conn, &user_id, &device))
            .await?;
        if !deleted {
            return Err(AppError::not_found("no such device of yours"));
        }
        tracing::info!(user = %user.id, device = id, "device removed");
        Ok(())
    }

    /// The pushes the dev transport delivered to `device` (one of `user`'s
    /// `dev` devices) after `after`, waiting up to `timeout` for one
    /// (counted against the user's long-polls); empty at the deadline or
    /// when the server stops.
    pub async fn dev_inbox(
        &self,
        user: &User,
        device: String,
        after: i64,
        timeout: Duration,
    ) -> Result<Vec<DevPush>, AppError> {
        let (user_id, dev) = (user.id.clone(), device.clone());
        let owned = self
            .db
            .run(move |conn| {
                identity::device_by_id(conn, &dev)
                    .map(|d| d.is_some_and(|d| d.user_id == user_id && d.platform == "dev"))
            })
            .await?;
        if !owned {
            return Err(AppError::not_found("no such dev device of yours"));
        }
        let _slot = match timeout.is_zero() {
            true => None,
            false => Some(self.enter_long_poll(format!("user:{}", user.id))?),
        };
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // Listen before reading, so a push in between is not missed.
            let woke = self.dev_wake.notified();
            let dev = device.clone();
            let pushes = self
                .db
                .run(move |conn| dev_inbox::after(conn, &dev, after))
                .await?;
            if !pushes.is_empty() || tokio::time::Instant::now() >= deadline {
                return Ok(pushes);
            }
            let mut stopping = self.stopping.subscribe();
            let _parked = crate::metrics::Counted::new(&self.metrics.parked);
            tokio::select! {
                _ = tokio::time::timeout_at(deadline, woke) => {}
                _ = async { let _ = stopping.wait_for(|s| *s).await; } => return Ok(Vec::new()),
            }
        }
    }

    /// The agents `user` owns, with their rooms (those their sign-in
    /// approvals made among them; not the consent asker).
    pub async fn owned_agents(&self, user: &User) -> Result<Vec<(Agent, Vec<String>)>, AppError> {
        let owner = user.id.clone();
        Ok(self
            .db
            .run(move |c| crate::store::oauth::agents_owned_by(c, &owner))
            .await?)
    }

    /// Removes one of `user`'s agents for good: every token it holds,
    /// OAuth's included, stops at once (404 for anyone else's). Audited,
    /// with the person as its actor.
    pub async fn remove_owned_agent(&self, user: &User, id: String) -> Result<(), AppError> {
        let (owner, agent) = (user.id.clone(), id.clone());
        let removed = self
            .db
            .run(move |c| -> Result<_, AppError> {
                let tx = c.transaction()?;
                let Some((mine, _)) = crate::store::oauth::agents_owned_by(&*tx, &owner)?
                    .into_iter()
                    .find(|(a, _)| a.id == agent)
                else {
                    return Ok(false);
                };
                offboard::remove_in(&*tx, Subject::Agent, &agent)?;
                crate::store::oauth::forget_agent(&*tx, &agent)?;
                crate::store::audit::record(
                    &*tx,
                    &format!("user:{owner}"),
                    "agent.remove",
                    &agent,
                    &format!("{} (by its owner)", mine.name),
                )?;
                tx.commit()?;
                Ok(true)
            })
            .await?;
        if !removed {
            return Err(AppError::not_found(format!("no agent {id} of yours")));
        }
        tracing::info!(user = %user.id, agent = %id, "agent removed by its owner");
        Ok(())
    }
}
