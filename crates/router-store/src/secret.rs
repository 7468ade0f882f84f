//! Random secrets (API keys, session cookies, sign-in links).

use sha2::{Digest, Sha256};
use uuid::Uuid;

/// `bytes` (at most 32) random bytes as lowercase hex. Two v4 UUIDs supply
/// 244 random bits from the OS generator (uuid uses getrandom); hashing them
/// spreads those bits evenly, so the six fixed version/variant bits of each
/// UUID do not show up as a pattern in the secret.
pub(crate) fn random_hex(bytes: usize) -> String {
    let mut hasher = Sha256::new();
    hasher.update(Uuid::new_v4().as_bytes());
    hasher.update(Uuid::new_v4().as_bytes());
    let digest = hasher.finalize();
    hex::encode(&digest[..bytes.min(digest.len())])
}

/// SHA-256 of a presented secret, as stored: secrets carry enough
/// randomness that an unsalted, indexed hash cannot be reversed by guessing.
pub(crate) fn sha256(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_hex_of_the_asked_length_and_differ() {
        let a = random_hex(24);
        assert_eq!(a.len(), 48);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(a, random_hex(24));
        assert_eq!(random_hex(32).len(), 64);
    }
}
