//! The free local input-token estimate behind `POST /v1/messages/count_tokens`
//! and `POST /v1/responses/input_tokens`: the model checked as an inference
//! request's would be, then the request tokenized here. No supplier call,
//! no reservation, no charge and no request record (D-37..D-42, CF-04).

use crate::gateway::Gateway;
use crate::store::{ApiKeyRecord, Store};
use crate::supplier::Suppliers;
use router_canonical::{ApiError, ErrorCode, Request};

impl<S: Store, P: Suppliers> Gateway<S, P> {
    /// The estimate of `request`'s input tokens, for a model the key may
    /// use (404 for an unknown or hidden one, 403 for one the key may not
    /// use).
    pub async fn estimate_input_tokens(
        &self,
        key: &ApiKeyRecord,
        request: Request,
    ) -> Result<u64, ApiError> {
        let model = crate::routing::find_model(&self.catalog(), &request.model)?;
        key.policy.check_allowed(&model, &request.model)?;
        // Tokenizing up to 8 MiB is CPU work: keep it off the I/O threads.
        tokio::task::spawn_blocking(move || router_tokens::estimate_input_tokens(&request))
            .await
            .map_err(|_| ApiError::new(ErrorCode::InternalError, "Token counting failed."))
    }
}
