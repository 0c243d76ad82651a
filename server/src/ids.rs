//! Random identifiers and secrets, and how secrets are kept (hashed).

use rand::RngCore;
use sha2::{Digest, Sha256};

pub(crate) fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    rand::thread_rng().fill_bytes(&mut buf);
    hex::encode(buf)
}

/// A new id with a type prefix: `q_…` questions, `u_…` users, `a_…` agents,
/// `r_…` rooms, `d_…` webhook deliveries, `dev_…` devices.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", random_hex(12))
}

/// Prefix of agent bearer tokens.
pub const AGENT_TOKEN_PREFIX: &str = "qpa_";
/// Prefix of user (device) tokens.
pub const USER_TOKEN_PREFIX: &str = "qpu_";
/// Prefix of operator (admin endpoint) tokens.
pub const ADMIN_TOKEN_PREFIX: &str = "qpx_";

/// A new bearer token (256 random bits). Shown once, stored only as its hash.
pub fn new_token(prefix: &str) -> String {
    format!("{prefix}{}", random_hex(32))
}

/// What the database keeps of a token: its SHA-256, hex. Tokens are long
/// random strings, so a plain (unsalted) hash cannot be reversed by guessing.
pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// A short room invite code such as `OPS7K2`: six characters from an
/// alphabet without look-alikes (no 0/O, 1/I).
pub fn new_room_code() -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    let mut buf = [0u8; 6];
    rand::thread_rng().fill_bytes(&mut buf);
    buf.iter()
        .map(|b| ALPHABET[(*b as usize) % ALPHABET.len()] as char)
        .collect()
}
