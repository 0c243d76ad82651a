//! End-to-end encryption of pushes: only the device can read the question.
//!
//! Each device has an X25519 key pair made by the phone on first use; the
//! public key goes to the server with the device registration. The server
//! seals each device's payload to that key with HPKE (RFC 9180), base mode,
//! DHKEM(X25519, HKDF-SHA256) + HKDF-SHA256 + ChaCha20-Poly1305, info
//! [`INFO`]. The associated data binds the payload kind, the question id and
//! the device id ([`aad`]), so a sealed payload cannot be replayed to another
//! question or shown as another kind, and the phone checks the device id
//! against its own. Opening never panics: any failure is an [`E2eError`],
//! and the extension then shows the generic notification the push carries.

mod open;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use hpke::aead::ChaCha20Poly1305;
use hpke::kdf::HkdfSha256;
use hpke::kem::X25519HkdfSha256;
use hpke::{Deserializable, Kem as KemTrait, OpModeS, Serializable};

type Kem = X25519HkdfSha256;

/// HPKE's `info`: names the protocol and the version of the sealed format.
pub const INFO: &[u8] = b"question-protocol push v1";
/// The version of the sealed envelope (`qp_e2e.v`).
pub const SEALED_VERSION: i64 = 1;
/// Length of an X25519 key and of HPKE's encapsulated key, in bytes.
pub const KEY_BYTES: usize = 32;
/// ChaCha20-Poly1305's tag, added to every ciphertext.
pub const TAG_BYTES: usize = 16;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum E2eError {
    #[error("{field}: {message}")]
    BadKey { field: String, message: String },
    /// Wrong key (a reinstall made a new one), tampered bytes, or a payload
    /// moved to another question, kind or device.
    #[error("the payload cannot be opened with this device's key")]
    CannotOpen,
    #[error("the payload could not be sealed: {0}")]
    CannotSeal(String),
    #[error("no random bytes from the system: {0}")]
    NoRandomness(String),
}

/// The associated data of a sealed payload.
pub fn aad(kind: &str, question_id: &str, device_id: &str) -> Vec<u8> {
    // NUL-separated: none of the three can contain NUL (ids are ASCII
    // letters, digits, '_' and '-'; kinds are ours).
    format!("qp-e2e/1\0{kind}\0{question_id}\0{device_id}").into_bytes()
}

/// A device's secret key (the 32 bytes the platform's key storage keeps),
/// with its public key, computed once when the key is made or loaded: every
/// open needs it (it is part of HPKE's KEM context), and computing it is a
/// scalar multiplication the extension should not pay per push.
#[derive(Clone)]
pub struct DeviceSecret {
    secret: zeroize::Zeroizing<[u8; KEY_BYTES]>,
    public: DevicePublicKey,
}

impl std::fmt::Debug for DeviceSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeviceSecret(..)") // never the bytes
    }
}

impl DeviceSecret {
    /// A new random key.
    pub fn generate() -> Result<DeviceSecret, E2eError> {
        let mut ikm = zeroize::Zeroizing::new([0u8; KEY_BYTES]);
        getrandom::getrandom(ikm.as_mut()).map_err(|e| E2eError::NoRandomness(e.to_string()))?;
        Ok(DeviceSecret::from_key(Kem::derive_keypair(ikm.as_ref()).0))
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<DeviceSecret, E2eError> {
        <Kem as KemTrait>::PrivateKey::from_bytes(bytes)
            .map(DeviceSecret::from_key)
            .map_err(|e| E2eError::BadKey {
                field: "device_key".into(),
                message: format!("must be a {KEY_BYTES}-byte X25519 secret key ({e})"),
            })
    }

    fn from_key(key: <Kem as KemTrait>::PrivateKey) -> DeviceSecret {
        let mut secret = zeroize::Zeroizing::new([0u8; KEY_BYTES]);
        secret.copy_from_slice(&key.to_bytes());
        DeviceSecret {
            secret,
            public: DevicePublicKey(Kem::sk_to_pk(&key)),
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        self.secret.to_vec()
    }

    pub fn public(&self) -> DevicePublicKey {
        self.public.clone()
    }

    /// Opens a sealed payload (`enc` and `ct` as base64) bound to `aad`.
    pub fn open(&self, enc_b64: &str, ct_b64: &str, aad: &[u8]) -> Result<Vec<u8>, E2eError> {
        let enc: [u8; KEY_BYTES] = B64
            .decode(enc_b64)
            .ok()
            .and_then(|e| e.try_into().ok())
            .ok_or(E2eError::CannotOpen)?;
        let ct = B64.decode(ct_b64).map_err(|_| E2eError::CannotOpen)?;
        let mut public = [0u8; KEY_BYTES];
        public.copy_from_slice(&self.public.0.to_bytes());
        open::open(&self.secret, &public, &enc, INFO, &ct, aad).map_err(|_| E2eError::CannotOpen)
    }
}

/// A device's public key, as registered with the server (base64 of 32 bytes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DevicePublicKey(<Kem as KemTrait>::PublicKey);

impl DevicePublicKey {
    /// Reads the registered form; the error names `field` and the rule.
    pub fn parse(b64: &str, field: &str) -> Result<DevicePublicKey, E2eError> {
        let bad = |message: String| E2eError::BadKey {
            field: field.to_string(),
            message,
        };
        let bytes = B64
            .decode(b64.trim())
            .map_err(|_| bad("must be base64".into()))?;
        if bytes.len() != KEY_BYTES {
            return Err(bad(format!(
                "must be a {KEY_BYTES}-byte X25519 public key, not {} bytes",
                bytes.len()
            )));
        }
        let key = <Kem as KemTrait>::PublicKey::from_bytes(&bytes)
            .map_err(|e| bad(format!("is not an X25519 public key ({e})")))?;
        Ok(DevicePublicKey(key))
    }

    pub fn to_base64(&self) -> String {
        B64.encode(self.0.to_bytes())
    }

    /// Seals `plaintext` to this key: `(enc, ct)` as base64.
    pub fn seal(&self, plaintext: &[u8], aad: &[u8]) -> Result<(String, String), E2eError> {
        let (enc, ct) = hpke::single_shot_seal::<ChaCha20Poly1305, HkdfSha256, Kem>(
            &OpModeS::Base,
            &self.0,
            INFO,
            plaintext,
            aad,
        )
        .map_err(|e| E2eError::CannotSeal(e.to_string()))?;
        Ok((B64.encode(enc.to_bytes()), B64.encode(ct)))
    }
}

/// The base64 length of the ciphertext of `plaintext_len` bytes: the sealed
/// size is known before sealing, so the encoder can fit the budget first.
pub fn sealed_b64_len(plaintext_len: usize) -> usize {
    (plaintext_len + TAG_BYTES).div_ceil(3) * 4
}

/// The base64 length of the encapsulated key.
pub const ENC_B64_LEN: usize = KEY_BYTES.div_ceil(3) * 4;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_payload_opens_only_with_its_key_and_its_binding() {
        let a = DeviceSecret::generate().unwrap();
        let b = DeviceSecret::generate().unwrap();
        let binding = aad("question", "q_1", "d_a");
        let (enc, ct) = a.public().seal(b"hello", &binding).unwrap();
        assert_eq!(enc.len(), ENC_B64_LEN);
        assert_eq!(ct.len(), sealed_b64_len(5));
        assert_eq!(a.open(&enc, &ct, &binding).unwrap(), b"hello");
        assert_eq!(b.open(&enc, &ct, &binding), Err(E2eError::CannotOpen));
        assert_eq!(
            a.open(&enc, &ct, &aad("question", "q_2", "d_a")),
            Err(E2eError::CannotOpen)
        );
        assert_eq!(
            a.open(&enc, &ct, &aad("resolved", "q_1", "d_a")),
            Err(E2eError::CannotOpen)
        );
        let mut tampered = B64.decode(&ct).unwrap();
        tampered[0] ^= 1;
        assert_eq!(
            a.open(&enc, &B64.encode(tampered), &binding),
            Err(E2eError::CannotOpen)
        );
        assert_eq!(a.open("%%", &ct, &binding), Err(E2eError::CannotOpen));
    }

    /// The phone's open (ours, `open.rs`) and rust-hpke's agree on what
    /// rust-hpke seals: the same plaintext, and the same refusals.
    #[test]
    fn this_open_agrees_with_rust_hpke() {
        use hpke::OpModeR;
        for len in [0usize, 1, 63, 64, 65, 1000, 3000] {
            let device = DeviceSecret::generate().unwrap();
            let binding = aad("question", &format!("q_{len}"), "d_1");
            let plaintext: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
            let (enc, ct) = device.public().seal(&plaintext, &binding).unwrap();
            let theirs = |ct: &[u8], aad: &[u8]| {
                let key = <Kem as KemTrait>::PrivateKey::from_bytes(&device.to_bytes()).unwrap();
                let enc =
                    <Kem as KemTrait>::EncappedKey::from_bytes(&B64.decode(&enc).unwrap()).unwrap();
                hpke::single_shot_open::<ChaCha20Poly1305, HkdfSha256, Kem>(
                    &OpModeR::Base,
                    &key,
                    &enc,
                    INFO,
                    ct,
                    aad,
                )
                .ok()
            };
            let ct_bytes = B64.decode(&ct).unwrap();
            assert_eq!(device.open(&enc, &ct, &binding).unwrap(), plaintext);
            assert_eq!(theirs(&ct_bytes, &binding), Some(plaintext.clone()));
            let mut tampered = ct_bytes.clone();
            tampered[len / 2] ^= 0x80;
            assert_eq!(theirs(&tampered, &binding), None);
            assert_eq!(
                device.open(&enc, &B64.encode(&tampered), &binding),
                Err(E2eError::CannotOpen)
            );
            let other = aad("resolved", &format!("q_{len}"), "d_1");
            assert_eq!(theirs(&ct_bytes, &other), None);
            assert_eq!(device.open(&enc, &ct, &other), Err(E2eError::CannotOpen));
        }
    }

    #[test]
    fn keys_round_trip_and_bad_keys_name_the_field() {
        let a = DeviceSecret::generate().unwrap();
        let again = DeviceSecret::from_bytes(&a.to_bytes()).unwrap();
        assert_eq!(again.public(), a.public());
        let public = DevicePublicKey::parse(&a.public().to_base64(), "public_key").unwrap();
        assert_eq!(public, a.public());
        let e = DevicePublicKey::parse("AAAA", "public_key").unwrap_err();
        assert_eq!(
            e.to_string(),
            "public_key: must be a 32-byte X25519 public key, not 3 bytes"
        );
        assert!(DevicePublicKey::parse("not base64!", "public_key").is_err());
        assert!(format!("{a:?}").ends_with("(..)"));
    }
}
