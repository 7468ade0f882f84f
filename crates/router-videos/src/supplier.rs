//! The OpenAI videos supplier dialect.

use router_canonical::openai_error::{bearer_auth, supplier_failure};
use router_canonical::{ApiError, SupplierError, UpstreamVideo, VideoRequest, VideoSupplierCodec};

/// The OpenAI videos supplier codec.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAiVideosSupplier;

impl VideoSupplierCodec for OpenAiVideosSupplier {
    fn create_path(&self) -> &'static str {
        "/videos"
    }

    fn poll_path(&self, task_id: &str) -> String {
        format!("/videos/{task_id}")
    }

    fn content_path(&self, task_id: &str) -> String {
        format!("/videos/{task_id}/content")
    }

    fn headers(&self, api_key: Option<&str>) -> Vec<(&'static str, String)> {
        bearer_auth(api_key)
    }

    fn encode_create(
        &self,
        request: &VideoRequest,
        upstream_model: &str,
    ) -> Result<Vec<u8>, ApiError> {
        let _ = (request, upstream_model);
        todo!()
    }

    fn decode_task(&self, body: &[u8]) -> Result<UpstreamVideo, SupplierError> {
        let _ = body;
        todo!()
    }

    fn decode_error(&self, status: u16, body: &[u8]) -> SupplierError {
        SupplierError::Reported(supplier_failure(status, body))
    }
}
