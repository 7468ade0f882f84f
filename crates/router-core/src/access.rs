//! Who may call: a presented API key found through [`Store::find_api_key`],
//! then the route's scope and the key's IP allowlist,
//! in that order, for every API-key endpoint. The server reads the
//! credential out of the headers (`router-server/src/auth.rs`); the rules
//! are here.

use crate::gateway::Gateway;
use crate::product_codes;
use crate::store::{ApiKeyRecord, Scope, Store, StoreError};
use crate::supplier::Suppliers;
use router_canonical::{ApiError, ErrorCode};
use sha2::{Digest, Sha256};
use std::net::IpAddr;

/// The SHA-256 of a presented secret, as stored in `api_keys.key_hash`:
/// keys carry enough randomness that an unsalted, indexed hash cannot be
/// reversed by guessing. Issuing (`router-store`) and looking up (here)
/// hash with this one function.
pub fn hash_api_key(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

/// The one answer to a missing, malformed or unknown key (A-01..A-05).
pub fn invalid_key() -> ApiError {
    ApiError::new(ErrorCode::InvalidApiKey, "Invalid or missing API key.")
}

impl<S: Store, P: Suppliers> Gateway<S, P> {
    /// The active key `presented`, checked for `scope` when the route names
    /// one (`None`: any valid key, A-12), then against its IP allowlist;
    /// `client` is asked only when the key has an allowlist.
    pub async fn authenticate(
        &self,
        presented: &str,
        scope: Option<Scope>,
        client: impl FnOnce() -> Option<IpAddr>,
    ) -> Result<ApiKeyRecord, ApiError> {
        let record = self
            .store()
            .find_api_key(hash_api_key(presented))
            .await
            .map_err(|e| e.api_error())?
            .ok_or_else(invalid_key)?;
        if let Some(scope) = scope
            && !record.has_scope(scope)
        {
            return Err(ApiError::new(
                product_codes::INSUFFICIENT_SCOPE,
                format!("This API key lacks the `{}` scope.", scope.as_str()),
            ));
        }
        if record.policy.ip_allowlist.is_some() && !record.policy.allows_ip(client()) {
            return Err(ApiError::new(
                product_codes::IP_NOT_ALLOWED,
                "This API key may not be used from this IP address.",
            ));
        }
        Ok(record)
    }

    /// Whether the store answers now (`/readyz`).
    pub async fn store_ready(&self) -> Result<(), StoreError> {
        self.store().ping().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_hash_is_the_sha256_of_the_secret() {
        assert_eq!(
            hash_api_key("abc")
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
