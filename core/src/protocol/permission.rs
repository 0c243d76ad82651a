//! The answer values of a permission question: one that asks whether
//! something may happen (a sign-in, a coding agent's tool call, a
//! function's call), answered Allow or Deny. The server's consent question,
//! `qp hook` and the Python SDK's `@require_approval` answer with these
//! words, whatever language the buttons are in.

/// The person allows it.
pub const ALLOW: &str = "allow";
/// The person refuses it.
pub const DENY: &str = "deny";
/// Offered instead of [`ALLOW`] when the phone cannot show the whole of
/// what would be allowed (a value hidden, the text cut): the person hands
/// the decision to the computer, which shows all of it. Never an approval.
pub const DECIDE_AT_COMPUTER: &str = "ask";
