//! Which requests the exact-response cache answers, and under what key
//! (issue 16; G-20, H-10, J-09).
//!
//! Only for a key that opted in (`response_cache_ttl_seconds`), a
//! non-streaming request without image input, and never under zero data
//! retention. The key is the [`Fingerprint`] of the whole canonical
//! request: model, body (experiment variant applied), and the gateway's
//! routing options and prompt-cache mode beside it;
//! the account is the other half of it. The answers live behind
//! [`ResponseCacheStore`](crate::store::ResponseCacheStore); a hit is
//! answered without a reservation or a charge.

use crate::fingerprint::Fingerprint;
use crate::gateway_request::GatewayRequest;
use crate::store::ApiKeyRecord;
use uuid::Uuid;

/// Says whether the exact-response cache answered (`hit`) or was asked
/// and did not (`miss`, then stored the fresh answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheStatus {
    Hit,
    Miss,
}

impl CacheStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CacheStatus::Hit => "hit",
            CacheStatus::Miss => "miss",
        }
    }
}

/// Where one request's answer is looked up and stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CacheKey {
    pub(crate) account_id: Uuid,
    pub(crate) api_key_id: Uuid,
    pub(crate) ttl_seconds: i32,
    pub(crate) fingerprint: [u8; 32],
}

impl CacheKey {
    /// The request's cache key, `None` when the cache does not apply; `zdr`
    /// is the request's own option or the account's switch.
    pub(crate) fn for_request(
        key: &ApiKeyRecord,
        request: &GatewayRequest,
        zdr: bool,
    ) -> Option<CacheKey> {
        let ttl_seconds = key.policy.response_cache_ttl_seconds?;
        let GatewayRequest {
            request,
            routing,
            prompt_cache,
        } = request;
        if zdr || request.stream || request.has_images() {
            return None;
        }
        let mut fingerprint = Fingerprint::default();
        fingerprint.value(request).ok()?;
        fingerprint.value(routing).ok()?;
        fingerprint.value(prompt_cache).ok()?;
        Some(CacheKey {
            account_id: key.account_id,
            api_key_id: key.key_id,
            ttl_seconds,
            fingerprint: fingerprint.finish(),
        })
    }
}
