//! When the APNs transport signs a new provider token, and when it must
//! not: Apple refuses a token older than an hour (`403
//! ExpiredProviderToken`) and one refreshed more often than every 20
//! minutes (`429 TooManyProviderTokenUpdates`). Time is a parameter here,
//! so the rules are tested over hours in an instant.
//!
//! - A token is reused for `ttl` (50 minutes), then a new one is signed.
//! - `TooManyProviderTokenUpdates` answers a token APNs would not take
//!   (signed too soon after the last one it took): the token before it,
//!   still valid, is used again, and no new token is signed for
//!   [`TOKEN_REFRESH_HOLD`]; the same answer again during that hold (every
//!   push in flight carries it) does not extend it, and the hold ends
//!   before the token in use is [`MAX_TOKEN_AGE`] old, so it never reaches
//!   the hour APNs allows.

use std::time::{Duration, Instant};

use super::gateway_errors::TOKEN_REFRESH_HOLD;

/// The oldest a provider token is used, holds included: five minutes
/// short of the hour after which APNs refuses it.
pub const MAX_TOKEN_AGE: Duration = Duration::from_secs(55 * 60);

/// The current provider token, the one before it, and the refresh hold.
#[derive(Debug)]
pub struct ProviderTokens {
    ttl: Duration,
    current: Option<(String, Instant)>,
    /// The token `current` replaced: APNs may still take it (for an hour
    /// from its signing) when it refuses the new one as too soon.
    previous: Option<(String, Instant)>,
    hold_until: Option<Instant>,
}

/// What a `TooManyProviderTokenUpdates` answer leaves to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterThrottle {
    /// Another token than the one refused is in use now (the one before
    /// it, or one another push already went back to): send again with it.
    OtherToken,
    /// The refused token is the only one there is: it is kept (signing
    /// again is what APNs refused), and APNs takes it once its 20 minutes
    /// since the last refresh are over.
    SameToken,
}

impl ProviderTokens {
    /// Tokens reused for `ttl` (at most [`MAX_TOKEN_AGE`]).
    pub fn new(ttl: Duration) -> Self {
        ProviderTokens {
            ttl: ttl.min(MAX_TOKEN_AGE),
            current: None,
            previous: None,
            hold_until: None,
        }
    }

    /// The token to send at `now`: the current one while it is younger
    /// than `ttl`, or while refreshes are held. None: sign a new one.
    pub fn current(&self, now: Instant) -> Option<String> {
        let (token, at) = self.current.as_ref()?;
        let age = now.saturating_duration_since(*at);
        (age < self.ttl || self.held(now)).then(|| token.clone())
    }

    /// A new token signed at `now`; the one it replaces (or the one
    /// refused before it) is kept as the previous one.
    pub fn signed(&mut self, token: String, now: Instant) {
        if let Some(replaced) = self.current.replace((token, now)) {
            self.previous = Some(replaced);
        }
    }

    /// Whether signing a new token is on hold at `now`.
    pub fn held(&self, now: Instant) -> bool {
        self.hold_until.is_some_and(|until| now < until)
    }

    /// APNs answered `TooManyProviderTokenUpdates` at `now`: no new token
    /// for [`TOKEN_REFRESH_HOLD`], nor past the current token's
    /// [`MAX_TOKEN_AGE`]. A hold already running is kept as it is (the
    /// pushes in flight all carry the same answer). True when a hold
    /// starts (worth a log line).
    pub fn hold(&mut self, now: Instant) -> bool {
        if self.held(now) {
            return false;
        }
        let mut until = now + TOKEN_REFRESH_HOLD;
        if let Some((_, at)) = &self.current {
            until = until.min(*at + MAX_TOKEN_AGE);
        }
        self.hold_until = Some(until);
        true
    }

    /// APNs answered `TooManyProviderTokenUpdates` to `token` at `now`:
    /// refreshes are held ([`ProviderTokens::hold`]) and, when `token` is
    /// the current one, the previous token (if younger than
    /// [`MAX_TOKEN_AGE`]) is in use again.
    pub fn too_soon(&mut self, token: &str, now: Instant) -> AfterThrottle {
        let is_current = self.current.as_ref().is_some_and(|(t, _)| t == token);
        let previous_valid = self
            .previous
            .as_ref()
            .is_some_and(|(_, at)| now.saturating_duration_since(*at) < MAX_TOKEN_AGE);
        if is_current && previous_valid {
            self.current = self.previous.take();
        }
        // The hold is bounded by the age of the token in use now.
        self.hold(now);
        match &self.current {
            Some((t, _)) if t != token => AfterThrottle::OtherToken,
            _ => AfterThrottle::SameToken,
        }
    }

    /// APNs refused `token`: dropped, so the next push signs a new one,
    /// unless another push replaced it already or refreshes are held. It
    /// stays the previous token: should APNs refuse the new one as too
    /// soon, the refusal was not about its age after all.
    pub fn refused(&mut self, token: &str, now: Instant) {
        if self.held(now) {
            return;
        }
        if self.current.as_ref().is_some_and(|(t, _)| t == token) {
            self.previous = self.current.take();
        }
    }

    /// The signing key changed: the tokens signed with the old one go.
    pub fn clear(&mut self) {
        self.current = None;
        self.previous = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);

    /// APNs saying `TooManyProviderTokenUpdates` to every push for three
    /// hours (a push a minute): the hold is not extended by the repeats,
    /// so the token is still refreshed, and never used at 55 minutes or
    /// older (APNs would answer `ExpiredProviderToken` from 60).
    #[test]
    fn repeated_token_update_throttling_never_lets_the_token_expire() {
        let mut tokens = ProviderTokens::new(Duration::from_secs(50 * 60));
        let t0 = Instant::now();
        let (mut oldest, mut signed) = (Duration::ZERO, Vec::new());
        for minute in 0..180u32 {
            let now = t0 + MINUTE * minute;
            if tokens.current(now).is_none() {
                tokens.signed(format!("t{minute}"), now);
                signed.push(minute);
            }
            let (_, at) = tokens.current.as_ref().unwrap();
            oldest = oldest.max(now - *at);
            tokens.hold(now);
        }
        assert!(oldest < MAX_TOKEN_AGE, "a token used at {oldest:?}");
        // Held past the 50-minute refresh, as APNs asked.
        assert!(oldest >= Duration::from_secs(50 * 60), "{oldest:?}");
        // Refreshed no more often than every 20 minutes.
        assert!(signed.windows(2).all(|w| w[1] - w[0] >= 20), "{signed:?}");
        assert!(signed.len() >= 3, "{signed:?}");
    }

    #[test]
    fn a_repeated_answer_does_not_extend_the_hold() {
        let mut tokens = ProviderTokens::new(Duration::from_secs(50 * 60));
        let t0 = Instant::now();
        tokens.signed("a".into(), t0);
        assert!(tokens.hold(t0));
        assert!(!tokens.hold(t0 + MINUTE * 10));
        assert!(tokens.held(t0 + MINUTE * 19));
        assert!(!tokens.held(t0 + MINUTE * 20));
        // While held, a refusal keeps the token (signing again is what
        // APNs refused); after, it drops it.
        tokens.refused("a", t0 + MINUTE * 5);
        assert_eq!(tokens.current(t0 + MINUTE * 5).as_deref(), Some("a"));
        tokens.refused("a", t0 + MINUTE * 21);
        assert_eq!(tokens.current(t0 + MINUTE * 21), None);
    }

    /// A token refused as too soon after the last refresh: the one before
    /// it (still within its hour) goes again, the refused one is never
    /// sent again, and nothing new is signed for the hold.
    #[test]
    fn a_token_refused_as_too_soon_gives_way_to_the_one_before_it() {
        let mut tokens = ProviderTokens::new(Duration::from_secs(50 * 60));
        let t0 = Instant::now();
        tokens.signed("a".into(), t0);
        tokens.signed("b".into(), t0 + MINUTE * 10);
        let now = t0 + MINUTE * 10;
        assert_eq!(tokens.too_soon("b", now), AfterThrottle::OtherToken);
        assert_eq!(tokens.current(now).as_deref(), Some("a"));
        // The other pushes in flight with "b" hear the same: "a" it is.
        assert_eq!(tokens.too_soon("b", now), AfterThrottle::OtherToken);
        assert_eq!(tokens.current(now + MINUTE * 19).as_deref(), Some("a"));
        assert!(tokens.held(now + MINUTE * 19));
        // After the hold, "a" is refreshed at its 50 minutes as usual.
        assert_eq!(tokens.current(t0 + MINUTE * 49).as_deref(), Some("a"));
        assert_eq!(tokens.current(t0 + MINUTE * 50), None);
    }

    /// With no token before it (a restart, another instance signing with
    /// the same key), the refused token is kept for the hold: signing
    /// again is what APNs refused.
    #[test]
    fn a_token_refused_as_too_soon_with_none_before_it_is_kept() {
        let mut tokens = ProviderTokens::new(Duration::from_secs(50 * 60));
        let t0 = Instant::now();
        tokens.signed("a".into(), t0);
        assert_eq!(tokens.too_soon("a", t0), AfterThrottle::SameToken);
        assert_eq!(tokens.current(t0 + MINUTE * 19).as_deref(), Some("a"));
        // A previous token past its age is no way out either.
        let mut tokens = ProviderTokens::new(Duration::from_secs(50 * 60));
        tokens.signed("old".into(), t0);
        tokens.signed("new".into(), t0 + MINUTE * 56);
        let now = t0 + MINUTE * 56;
        assert_eq!(tokens.too_soon("new", now), AfterThrottle::SameToken);
        assert_eq!(tokens.current(now).as_deref(), Some("new"));
    }

    #[test]
    fn a_hold_ends_before_the_token_is_55_minutes_old() {
        let mut tokens = ProviderTokens::new(Duration::from_secs(50 * 60));
        let t0 = Instant::now();
        tokens.signed("a".into(), t0);
        assert!(tokens.hold(t0 + MINUTE * 45));
        assert_eq!(tokens.current(t0 + MINUTE * 54).as_deref(), Some("a"));
        assert_eq!(tokens.current(t0 + MINUTE * 55), None);
    }
}
