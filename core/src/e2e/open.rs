//! HPKE's receiving side (RFC 9180 §5.1 base mode, single-shot open) for our
//! one suite, DHKEM(X25519, HKDF-SHA256) + HKDF-SHA256 + ChaCha20-Poly1305,
//! written over the same RustCrypto primitives rust-hpke uses (x25519-dalek,
//! hkdf, sha2, chacha20poly1305).
//!
//! Why not rust-hpke's `single_shot_open`: its decapsulation recomputes the
//! recipient's public key from the secret key on every open (a scalar
//! multiplication, ~12 µs with curve25519-dalek's table, ~40 µs without),
//! which alone put the extension's open + decode + present over its 50 µs
//! budget. The device's public key never changes between opens, so
//! [`super::DeviceSecret`] computes it once, and this open takes it. Sealing
//! (the server) stays with rust-hpke, and the tests hold the two together:
//! RFC 9180's own vector (appendix A.2.1) and rust-hpke's seal opened here.

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::ChaCha20Poly1305;
use hkdf::{Hkdf, HkdfExtract};
use sha2::Sha256;

/// `"KEM" || I2OSP(kem_id = 0x0020, 2)`
const KEM_SUITE: &[u8] = b"KEM\x00\x20";
/// `"HPKE" || kem_id (0x0020) || kdf_id (0x0001) || aead_id (0x0003)`
const HPKE_SUITE: &[u8] = b"HPKE\x00\x20\x00\x01\x00\x03";
const VERSION: &[u8] = b"HPKE-v1";
const MODE_BASE: u8 = 0x00;

/// Why an open failed; callers turn every case into "cannot open".
#[derive(Debug, PartialEq, Eq)]
pub(super) enum OpenError {
    /// The sender's key gave the all-zero shared secret (a low-order point).
    NonContributory,
    /// Wrong key, or any byte of the ciphertext, aad or info changed.
    Aead,
}

/// LabeledExtract(salt, label, ikm), with the labeled input fed in parts:
/// the pseudorandom key's bytes, and the same key ready to expand.
fn labeled_extract(
    suite: &[u8],
    salt: &[u8],
    label: &[u8],
    ikm: &[u8],
) -> ([u8; 32], Hkdf<Sha256>) {
    let mut extract = HkdfExtract::<Sha256>::new(Some(salt));
    for part in [VERSION, suite, label, ikm] {
        extract.input_ikm(part);
    }
    let (prk, hkdf) = extract.finalize();
    (prk.into(), hkdf)
}

/// LabeledExpand(prk, label, info, L) into `out` (L = out.len() ≤ 255 here).
fn labeled_expand(prk: &Hkdf<Sha256>, suite: &[u8], label: &[u8], info: &[u8], out: &mut [u8]) {
    let length = (out.len() as u16).to_be_bytes();
    prk.expand_multi_info(&[&length, VERSION, suite, label, info], out)
        .expect("HKDF-SHA256 expands up to 8160 bytes; we ask for at most 32");
}

/// The receiver's shared secret (DHKEM Decap, §4.1), with its public key given.
fn decap(sk: &[u8; 32], pk: &[u8; 32], enc: &[u8; 32]) -> Result<[u8; 32], OpenError> {
    let dh = x25519_dalek::x25519(*sk, *enc);
    // §7.1.4: the all-zero DH output MUST be rejected (the check
    // x25519-dalek's `was_contributory` makes; the OR-fold runs in constant
    // time).
    if dh.iter().fold(0u8, |acc, b| acc | b) == 0 {
        return Err(OpenError::NonContributory);
    }
    let (_, eae_prk) = labeled_extract(KEM_SUITE, b"", b"eae_prk", &dh);
    let mut kem_context = [0u8; 64];
    kem_context[..32].copy_from_slice(enc);
    kem_context[32..].copy_from_slice(pk);
    let mut shared_secret = [0u8; 32];
    labeled_expand(
        &eae_prk,
        KEM_SUITE,
        b"shared_secret",
        &kem_context,
        &mut shared_secret,
    );
    Ok(shared_secret)
}

/// The AEAD key and base nonce of the base-mode key schedule (§5.1).
fn key_schedule(shared_secret: &[u8; 32], info: &[u8]) -> ([u8; 32], [u8; 12]) {
    let mut context = [0u8; 65];
    context[0] = MODE_BASE;
    let (psk_id_hash, _) = labeled_extract(HPKE_SUITE, b"", b"psk_id_hash", b"");
    let (info_hash, _) = labeled_extract(HPKE_SUITE, b"", b"info_hash", info);
    context[1..33].copy_from_slice(&psk_id_hash);
    context[33..].copy_from_slice(&info_hash);
    let (_, secret) = labeled_extract(HPKE_SUITE, shared_secret, b"secret", b"");
    let mut key = [0u8; 32];
    let mut base_nonce = [0u8; 12];
    labeled_expand(&secret, HPKE_SUITE, b"key", &context, &mut key);
    labeled_expand(
        &secret,
        HPKE_SUITE,
        b"base_nonce",
        &context,
        &mut base_nonce,
    );
    (key, base_nonce)
}

/// Single-shot open of the first (and only) message of a base-mode context:
/// the sequence number is 0, so the nonce is the base nonce itself.
pub(super) fn open(
    sk: &[u8; 32],
    pk: &[u8; 32],
    enc: &[u8; 32],
    info: &[u8],
    ciphertext: &[u8],
    aad: &[u8],
) -> Result<Vec<u8>, OpenError> {
    let shared_secret = decap(sk, pk, enc)?;
    let (key, nonce) = key_schedule(&shared_secret, info);
    ChaCha20Poly1305::new(&key.into())
        .decrypt(
            &nonce.into(),
            Payload {
                msg: ciphertext,
                aad,
            },
        )
        .map_err(|_| OpenError::Aead)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex<const N: usize>(s: &str) -> [u8; N] {
        hex_vec(s).try_into().unwrap()
    }

    fn hex_vec(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    // RFC 9180, appendix A.2.1 (this suite, base mode), as printed there.
    const SK_RM: &str = "8057991eef8f1f1af18f4a9491d16a1ce333f695d4db8e38da75975c4478e0fb";
    const PK_RM: &str = "4310ee97d88cc1f088a5576c77ab0cf5c3ac797f3d95139c6c84b5429c59662a";
    const ENC: &str = "1afa08d3dec047a643885163f1180476fa7ddb54c6a8029ea33f95796bf2ac4a";
    const INFO: &str = "4f6465206f6e2061204772656369616e2055726e";
    const SHARED_SECRET: &str = "0bbe78490412b4bbea4812666f7916932b828bba79942424abb65244930d69a7";
    const KEY: &str = "ad2744de8e17f4ebba575b3f5f5a8fa1f69c2a07f6e7500bc60ca6e3e3ec1c91";
    const BASE_NONCE: &str = "5c4d98150661b848853b547f";
    const AAD_0: &str = "436f756e742d30";
    const PT: &str = "4265617574792069732074727574682c20747275746820626561757479";
    const CT_0: &str =
        "1c5250d8034ec2b784ba2cfd69dbdb8af406cfe3ff938e131f0def8c8b60b4db21993c62ce81883d2dd1b51a28";

    #[test]
    fn rfc_9180_a_2_1_step_by_step() {
        let ss = decap(&hex(SK_RM), &hex(PK_RM), &hex(ENC)).unwrap();
        assert_eq!(ss, hex::<32>(SHARED_SECRET));
        let (key, nonce) = key_schedule(&ss, &hex_vec(INFO));
        assert_eq!(key, hex::<32>(KEY));
        assert_eq!(nonce, hex::<12>(BASE_NONCE));
        let pt = open(
            &hex(SK_RM),
            &hex(PK_RM),
            &hex(ENC),
            &hex_vec(INFO),
            &hex_vec(CT_0),
            &hex_vec(AAD_0),
        )
        .unwrap();
        assert_eq!(pt, hex_vec(PT));
    }

    #[test]
    fn the_rfc_vector_fails_when_any_input_changes() {
        let (sk, pk, enc) = (hex::<32>(SK_RM), hex::<32>(PK_RM), hex::<32>(ENC));
        let (info, ct, aad) = (hex_vec(INFO), hex_vec(CT_0), hex_vec(AAD_0));
        assert!(open(&sk, &pk, &enc, &info, &ct, &aad).is_ok());
        let flip = |v: &[u8], i: usize| {
            let mut v = v.to_vec();
            v[i] ^= 0x01;
            v
        };
        let flip32 = |v: &[u8; 32], i| -> [u8; 32] { flip(v, i).try_into().unwrap() };
        assert_eq!(
            open(&flip32(&sk, 1), &pk, &enc, &info, &ct, &aad),
            Err(OpenError::Aead)
        );
        // The public key is part of the KEM context: a wrong one fails too,
        // so a stale cached key cannot open anything by accident.
        assert_eq!(
            open(&sk, &flip32(&pk, 0), &enc, &info, &ct, &aad),
            Err(OpenError::Aead)
        );
        assert_eq!(
            open(&sk, &pk, &flip32(&enc, 5), &info, &ct, &aad),
            Err(OpenError::Aead)
        );
        assert_eq!(
            open(&sk, &pk, &enc, &flip(&info, 0), &ct, &aad),
            Err(OpenError::Aead)
        );
        assert_eq!(
            open(&sk, &pk, &enc, &info, &flip(&ct, 40), &aad),
            Err(OpenError::Aead)
        );
        assert_eq!(
            open(&sk, &pk, &enc, &info, &ct, &flip(&aad, 6)),
            Err(OpenError::Aead)
        );
        assert_eq!(
            open(&sk, &pk, &enc, &info, &ct[..15], &aad),
            Err(OpenError::Aead)
        );
    }

    #[test]
    fn a_low_order_sender_key_is_refused() {
        // u = 0 and u = 1 are points of small order: the DH output is all zero.
        for u in [[0u8; 32], {
            let mut one = [0u8; 32];
            one[0] = 1;
            one
        }] {
            assert_eq!(
                open(&hex(SK_RM), &hex(PK_RM), &u, b"", b"0123456789abcdef", b""),
                Err(OpenError::NonContributory)
            );
        }
    }
}
